//! Reference-model test of `icefloe mount`, as mountpoint-s3's reference tests do:
//! a seeded random sequence of lookups, `readdir`, `stat`, opens, reads at random offsets and
//! lengths (past the end too), seeks forward and backward in open files, several files open at
//! once and read in parallel, page cache drops, and new commits, run against a mount of copies
//! of fixture tables (several snapshots, deletion vectors, equality deletes, schema evolution)
//! and checked against a model built from the `icefloe` CLI's output (`cat`, `files`,
//! `snapshots`) and the tables' metadata files.
//!
//! A commit makes the next metadata version of a table visible (the copies start at an earlier
//! version, the later ones parked aside); the model moves on once the mount shows it (the
//! table directory's mtime is the new metadata's `last-updated-ms`) and the kernel's caches of
//! what can change have expired. Open files keep the bytes they had at open.
//!
//! `cargo test` runs a few hundred operations (seconds); `scripts/fuse-model` runs more.
//! `ICEFLOE_FUSE_MODEL_SEED` and `ICEFLOE_FUSE_MODEL_OPS` set the seed and the number of
//! operations; a failure prints both and the operations that led to it.
//!
//! Needs `/dev/fuse` and `fusermount3`, like the tests in tests/e2e/fuse/.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{Array, StringArray};
use arrow::datatypes::DataType;
use icefloe_core::encode::jsonl::JsonLinesWriter;
use icefloe_testkit::rng::Rng;
use icefloe_testkit::{copy_dir, fixtures_dir, parse_csv};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

use icefloe_testkit::mount;
use mount::Mount;

const ICEFLOE: &str = env!("CARGO_BIN_EXE_icefloe");

/// The fixture tables mounted: deletion vectors, a tag and a branch (v3_basic); many
/// batches per data file (v3_dv_large); added, dropped, renamed and promoted columns
/// (schema_evolution); equality deletes (equality_deletes_v3); v2 position deletes and an
/// upgrade to v3 (v2_upgraded).
const TABLES: [&str; 5] = [
    "v3_basic",
    "v3_dv_large",
    "schema_evolution",
    "equality_deletes_v3",
    "v2_upgraded",
];

/// Operations `cargo test` runs without `ICEFLOE_FUSE_MODEL_OPS`.
const DEFAULT_OPS: usize = 200;
/// At most this many files open at once.
const MAX_OPEN: usize = 6;
/// How long the mount may take to show a commit (it polls every second).
const COMMIT_WAIT: Duration = Duration::from_secs(30);
/// The kernel caches the attributes and entries of what can change for one second
/// (`MUTABLE_TTL` in fuse/src/fs/attr.rs): the model waits this long after the mount shows a commit.
const MUTABLE_TTL: Duration = Duration::from_millis(1100);

/// The shapes of the model's reads, drawn from the seeded generator.
trait ReadShapes {
    fn offset(&mut self, len: u64) -> u64;
    fn length(&mut self) -> usize;
}

impl ReadShapes for Rng {
    /// An offset in a file of `len` bytes: anywhere, near a 4 KiB or 128 KiB boundary, at
    /// the end, or past it.
    fn offset(&mut self, len: u64) -> u64 {
        let span = len.max(1);
        match self.below(6) {
            0 => len.saturating_sub(self.below(64) as u64),
            1 => len + self.below(5000) as u64,
            2 => {
                let unit = if self.chance(2) { 4096 } else { 128 << 10 };
                let k = self.next() % (span / unit + 1);
                (k * unit).saturating_sub(self.below(3) as u64) + self.below(3) as u64
            }
            _ => self.next() % span,
        }
    }
    /// A read length: a few bytes, a page or so, a kernel-sized read, or a large one.
    fn length(&mut self) -> usize {
        match self.below(5) {
            0 => 1 + self.below(16),
            1 => 1 + self.below(8192),
            2 => 128 << 10,
            3 => 1 + self.below(300_000),
            _ => 1 + self.below(1 << 21),
        }
    }
}

fn run(args: &[&str]) -> Vec<u8> {
    let out = Command::new(ICEFLOE)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("icefloe {args:?}: {e}"));
    assert!(
        out.status.success(),
        "icefloe {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// CSV records with their line ends, split where a newline is outside quotes.
fn csv_records(text: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, &b) in text.iter().enumerate() {
        match b {
            b'"' => quoted = !quoted,
            b'\n' if !quoted => {
                out.push(&text[start..=i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    assert_eq!(start, text.len(), "CSV ends with a newline");
    out
}

/// The rows of a Parquet file as JSON Lines (the core's encoder), and, if it has a `_file`
/// column, each row's `_file` (the column left out of the lines).
fn parquet_lines(bytes: Vec<u8>) -> Result<(Vec<String>, Vec<String>), String> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))
        .and_then(|b| b.build())
        .map_err(|e| format!("not a valid Parquet file: {e}"))?;
    let (mut lines, mut files) = (Vec::new(), Vec::new());
    for batch in reader {
        let mut batch = batch.map_err(|e| format!("Parquet batch: {e}"))?;
        if let Ok(i) = batch.schema().index_of("_file") {
            let col = arrow::compute::cast(batch.column(i), &DataType::Utf8).expect("cast");
            let col = col.as_any().downcast_ref::<StringArray>().expect("strings");
            files.extend((0..col.len()).map(|r| col.value(r).to_string()));
            let keep: Vec<usize> = (0..batch.num_columns()).filter(|&c| c != i).collect();
            batch = batch.project(&keep).expect("project");
        }
        let mut w = JsonLinesWriter::new(Vec::new());
        w.write_batch(&batch).expect("jsonl");
        let text = String::from_utf8(w.finish().expect("jsonl")).expect("UTF-8");
        lines.extend(text.lines().map(str::to_string));
    }
    Ok((lines, files))
}

/// A snapshot read with a table schema, and a CLI selector that reads it so.
#[derive(Debug, Clone)]
struct SnapRead {
    table: usize,
    snapshot: i64,
    schema: i32,
    selector: Vec<String>,
}

impl SnapRead {
    fn key(&self) -> (usize, i64, i32) {
        (self.table, self.snapshot, self.schema)
    }
}

/// What the CLI prints for one read, computed on first use.
#[derive(Default)]
struct Content {
    data_csv: Option<Arc<Vec<u8>>>,
    /// Per data file (in `icefloe files` order): its view stem, CSV and Parquet rows.
    files: Option<FileViews>,
    /// `data.parquet`'s rows as JSON Lines.
    parquet_rows: Option<Vec<String>>,
}

/// Per data file: its view stem, CSV view, Parquet rows (JSON Lines) and JSON Lines view.
type FileViews = Vec<(String, Arc<Vec<u8>>, Vec<String>, Arc<Vec<u8>>)>;

/// Which view of a read.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Scope {
    All,
    File(String),
}

/// What a path of the mount is, by the model.
#[derive(Debug, Clone)]
enum Entry {
    Missing,
    /// A directory; `None`: its listing is not modelled (partitions, changes).
    Dir(Option<BTreeSet<String>>),
    Link(String),
    Csv(SnapRead, Scope),
    Jsonl(SnapRead, Scope),
    Parquet(SnapRead, Scope),
    SnapshotJson(SnapRead),
    SnapshotsCsv(usize),
    /// A file whose bytes are not modelled (retention.csv changes with the clock).
    Opaque,
    /// Below a file: `ENOTDIR`.
    NotDir,
    /// Not modelled (below `changes/`, `partitions/`, `schemas/<id>/<snapshot>/`).
    Unknown,
}

/// One mounted table copy and the metadata versions not committed yet.
struct TableCopy {
    name: String,
    dir: PathBuf,
    parked: tempfile::TempDir,
    version: u32,
    last: u32,
    meta: Value,
}

impl TableCopy {
    fn metadata_file(&self, v: u32) -> PathBuf {
        self.dir.join(format!("metadata/v{v}.metadata.json"))
    }

    /// Copies `from` to `dir`, rewound to a metadata version `pick` chooses (the later ones
    /// parked).
    fn new(name: &str, from: &Path, dir: PathBuf, pick: u64) -> TableCopy {
        copy_dir(from, &dir);
        let last: u32 = std::fs::read_to_string(dir.join("metadata/version-hint.text"))
            .expect("hint")
            .trim()
            .parse()
            .expect("version");
        let parked = tempfile::tempdir().expect("parked");
        let start = 1 + (pick % u64::from(last)) as u32;
        for v in start + 1..=last {
            let f = dir.join(format!("metadata/v{v}.metadata.json"));
            std::fs::rename(&f, parked.path().join(format!("v{v}.json"))).expect("park");
        }
        std::fs::write(dir.join("metadata/version-hint.text"), format!("{start}\n")).expect("hint");
        let mut t = TableCopy {
            name: name.to_string(),
            dir,
            parked,
            version: start,
            last,
            meta: Value::Null,
        };
        t.meta = t.read_meta();
        t
    }

    fn read_meta(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.metadata_file(self.version)).expect("meta"))
            .expect("metadata JSON")
    }

    /// Makes the next metadata version the table's (the file, then the hint).
    fn commit(&mut self) {
        let v = self.version + 1;
        std::fs::copy(
            self.parked.path().join(format!("v{v}.json")),
            self.metadata_file(v),
        )
        .expect("commit metadata");
        std::fs::write(
            self.dir.join("metadata/version-hint.text"),
            format!("{v}\n"),
        )
        .expect("hint");
        self.version = v;
        self.meta = self.read_meta();
    }

    fn snapshots(&self) -> Vec<&Value> {
        self.meta["snapshots"]
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default()
    }

    fn snapshot(&self, id: i64) -> Option<&Value> {
        self.snapshots()
            .into_iter()
            .find(|s| s["snapshot-id"].as_i64() == Some(id))
    }

    fn current_schema(&self) -> i32 {
        self.meta["current-schema-id"].as_i64().expect("schema id") as i32
    }

    fn own_schema(&self, id: i64) -> i32 {
        self.snapshot(id)
            .and_then(|s| s["schema-id"].as_i64())
            .map_or(self.current_schema(), |s| s as i32)
    }

    /// Refs: name -> (snapshot, is a branch). A metadata file without `refs` has `main` at the
    /// current snapshot.
    fn refs(&self) -> Vec<(String, i64, bool)> {
        let mut refs: Vec<(String, i64, bool)> = self.meta["refs"]
            .as_object()
            .map(|o| {
                o.iter()
                    .map(|(k, r)| {
                        (
                            k.clone(),
                            r["snapshot-id"].as_i64().expect("ref snapshot"),
                            r["type"] == "branch",
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        if !refs.iter().any(|r| r.0 == "main") {
            if let Some(id) = self.meta["current-snapshot-id"]
                .as_i64()
                .filter(|&i| i != -1)
            {
                refs.push(("main".into(), id, true));
            }
        }
        refs
    }

    /// The snapshot ids of the parked versions, not visible yet.
    fn future_ids(&self) -> Vec<i64> {
        let Ok(text) = std::fs::read(self.parked.path().join(format!("v{}.json", self.last)))
        else {
            return Vec::new();
        };
        let last: Value = serde_json::from_slice(&text).expect("json");
        last["snapshots"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["snapshot-id"].as_i64())
            .filter(|id| self.snapshot(*id).is_none())
            .collect()
    }
}

/// `refs/<name>`'s file name (fuse/src/tree.rs's `ref_file_name`).
fn ref_file_name(name: &str) -> String {
    name.replace('%', "%25").replace('/', "%2F")
}

/// An open file and the bytes it must read.
struct Handle {
    path: String,
    file: File,
    want: Arc<Vec<u8>>,
}

struct Model {
    root: PathBuf,
    tables: Vec<TableCopy>,
    content: HashMap<(usize, i64, i32), Content>,
    /// Bytes the mount served for files whose bytes the CLI does not give (Parquet views,
    /// snapshot.json), checked once (rows, fields) and then held to.
    served: HashMap<String, Arc<Vec<u8>>>,
    handles: Vec<Handle>,
    log: Vec<String>,
}

impl Model {
    fn table(&self, name: &str) -> Option<usize> {
        self.tables.iter().position(|t| t.name == name)
    }

    /// A read of snapshot `id` of table `t` by the link `target` leads to (`snapshots/<id>`
    /// or `schemas/<schema>/<id>`), with the CLI selector.
    fn link_read(&self, t: usize, ref_name: Option<&str>) -> Option<(String, SnapRead)> {
        let table = &self.tables[t];
        let (name, id, branch) = table
            .refs()
            .into_iter()
            .find(|r| r.0 == ref_name.unwrap_or("main"))?;
        // Current and branches read with the current schema, tags with the snapshot's own.
        let schema = if branch {
            table.current_schema()
        } else {
            table.own_schema(id)
        };
        let target = if schema == table.own_schema(id) {
            format!("snapshots/{id}")
        } else {
            format!("schemas/{schema}/{id}")
        };
        let selector = vec!["--ref".to_string(), name];
        let read = SnapRead {
            table: t,
            snapshot: id,
            schema,
            selector,
        };
        Some((target, read))
    }

    /// What `path` (relative to the mount root, `/`-separated) is, with what lies below a
    /// file or an unmodelled directory.
    fn entry(&self, path: &str) -> Entry {
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        for n in 1..parts.len() {
            match self.entry_of(&parts[..n].join("/")) {
                Entry::Unknown => return Entry::Unknown,
                Entry::Missing => return Entry::Missing,
                Entry::Dir(_) | Entry::Link(_) => {}
                _ => return Entry::NotDir,
            }
        }
        self.entry_of(path)
    }

    /// What `path` is, given that its parent is a directory.
    fn entry_of(&self, path: &str) -> Entry {
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        match parts.as_slice() {
            [] => Entry::Dir(Some(["db".to_string()].into())),
            ["db"] => Entry::Dir(Some(self.tables.iter().map(|t| t.name.clone()).collect())),
            ["db", name, rest @ ..] => match self.table(name) {
                Some(t) => self.table_entry(t, rest),
                None => Entry::Missing,
            },
            _ => Entry::Missing,
        }
    }

    fn table_entry(&self, t: usize, rest: &[&str]) -> Entry {
        let table = &self.tables[t];
        let ids: BTreeSet<String> = table
            .snapshots()
            .iter()
            .map(|s| s["snapshot-id"].to_string())
            .collect();
        let snapshot_read = |name: &str| -> Option<SnapRead> {
            let id: i64 = name.parse().ok()?;
            table.snapshot(id)?;
            (id.to_string() == name).then(|| SnapRead {
                table: t,
                snapshot: id,
                schema: table.own_schema(id),
                selector: vec!["--snapshot".to_string(), id.to_string()],
            })
        };
        match rest {
            [] => {
                let mut names: BTreeSet<String> = [
                    "refs",
                    "snapshots",
                    "schemas",
                    "snapshots.csv",
                    "changes",
                    "retention.csv",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect();
                if self.link_read(t, None).is_some() {
                    names.insert("current".into());
                }
                Entry::Dir(Some(names))
            }
            ["current", more @ ..] => match self.link_read(t, None) {
                None => Entry::Missing,
                Some((target, _)) if more.is_empty() => Entry::Link(target),
                Some((_, read)) => self.snapshot_entry(read, more),
            },
            ["refs"] => Entry::Dir(Some(
                table.refs().iter().map(|r| ref_file_name(&r.0)).collect(),
            )),
            ["refs", file, more @ ..] => {
                let Some(r) = table
                    .refs()
                    .into_iter()
                    .find(|r| ref_file_name(&r.0) == *file)
                else {
                    return Entry::Missing;
                };
                let (target, read) = self.link_read(t, Some(&r.0)).expect("a ref");
                if more.is_empty() {
                    Entry::Link(format!("../{target}"))
                } else {
                    self.snapshot_entry(read, more)
                }
            }
            ["snapshots"] => Entry::Dir(Some(ids)),
            ["snapshots", id, more @ ..] => match snapshot_read(id) {
                Some(read) => self.snapshot_entry(read, more),
                None => Entry::Missing,
            },
            ["schemas"] => Entry::Dir(Some(
                table.meta["schemas"]
                    .as_array()
                    .expect("schemas")
                    .iter()
                    .map(|s| s["schema-id"].to_string())
                    .collect(),
            )),
            ["schemas", schema] => match table.meta["schemas"]
                .as_array()
                .expect("schemas")
                .iter()
                .any(|s| schema.parse::<i64>().ok() == s["schema-id"].as_i64())
            {
                true => Entry::Dir(Some(ids)),
                false => Entry::Missing,
            },
            ["schemas", ..] => Entry::Unknown,
            ["snapshots.csv"] => Entry::SnapshotsCsv(t),
            ["changes"] => Entry::Dir(None),
            ["changes", ..] => Entry::Unknown,
            ["retention.csv"] => Entry::Opaque,
            _ => Entry::Missing,
        }
    }

    fn snapshot_entry(&self, read: SnapRead, rest: &[&str]) -> Entry {
        match rest {
            [] => Entry::Dir(Some(
                [
                    "data.csv",
                    "data.jsonl",
                    "data.parquet",
                    "files",
                    "partitions",
                    "snapshot.json",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            )),
            ["data.csv"] => Entry::Csv(read, Scope::All),
            ["data.parquet"] => Entry::Parquet(read, Scope::All),
            ["data.jsonl"] => Entry::Jsonl(read, Scope::All),
            ["snapshot.json"] => Entry::SnapshotJson(read),
            ["partitions", ..] => Entry::Unknown,
            ["files"] => Entry::Dir(None),
            ["files", name] => {
                if let Some(stem) = name.strip_suffix(".csv") {
                    Entry::Csv(read, Scope::File(stem.to_string()))
                } else if let Some(stem) = name.strip_suffix(".parquet") {
                    Entry::Parquet(read, Scope::File(stem.to_string()))
                } else if let Some(stem) = name.strip_suffix(".jsonl") {
                    Entry::Jsonl(read, Scope::File(stem.to_string()))
                } else {
                    Entry::Missing
                }
            }
            _ => Entry::Missing,
        }
    }

    /// Resolves what `entry` leaves to the CLI: a `files/` listing, whether a per-file view
    /// exists.
    fn settle(&mut self, entry: Entry) -> Entry {
        match entry {
            Entry::Dir(None) => Entry::Dir(None),
            Entry::Csv(read, Scope::File(stem))
            | Entry::Parquet(read, Scope::File(stem))
            | Entry::Jsonl(read, Scope::File(stem))
                if !self.files(&read).iter().any(|f| f.0 == stem) =>
            {
                Entry::Missing
            }
            e => e,
        }
    }

    fn table_dir(&self, read: &SnapRead) -> String {
        self.tables[read.table].dir.display().to_string()
    }

    fn cli(&self, read: &SnapRead, args: &[&str]) -> Vec<u8> {
        let dir = self.table_dir(read);
        let mut all: Vec<&str> = vec![args[0], &dir];
        all.extend(read.selector.iter().map(String::as_str));
        all.extend(&args[1..]);
        run(&all)
    }

    fn data_csv(&mut self, read: &SnapRead) -> Arc<Vec<u8>> {
        if let Some(b) = self
            .content
            .get(&read.key())
            .and_then(|c| c.data_csv.clone())
        {
            return b;
        }
        let b = Arc::new(self.cli(read, &["cat", "--lineage", "--format", "csv"]));
        self.content.entry(read.key()).or_default().data_csv = Some(b.clone());
        b
    }

    /// The data columns (no lineage) `read` has, from the CSV header.
    fn columns(&mut self, read: &SnapRead) -> Vec<String> {
        let csv = self.data_csv(read);
        let header = csv_records(&csv)[0];
        let header = parse_csv(std::str::from_utf8(header).expect("UTF-8"));
        let cols: Vec<String> = header[0].iter().skip(2).map(|(c, _)| c.clone()).collect();
        assert!(
            cols.iter().all(|c| !c.contains(',') && c != "_file"),
            "{cols:?}"
        );
        cols
    }

    /// Each data file of `read`: its view stem, CSV view and Parquet rows, from `icefloe files`
    /// and `icefloe cat --columns …,_file`.
    fn files(&mut self, read: &SnapRead) -> FileViews {
        if let Some(f) = self.content.get(&read.key()).and_then(|c| c.files.clone()) {
            return f;
        }
        let listing =
            String::from_utf8(self.cli(read, &["files", "--format", "csv"])).expect("UTF-8");
        let records = parse_csv(&listing);
        let col = records[0]
            .iter()
            .position(|(c, _)| c == "data_file")
            .expect("data_file column");
        let paths: Vec<String> = records[1..].iter().map(|r| r[col].0.clone()).collect();
        let stems = icefloe_fuse::plan::view_names(paths.iter().map(String::as_str));
        let csv = self.data_csv(read);
        let header = csv_records(&csv)[0].to_vec();
        // Stem, CSV, Parquet rows, JSON Lines.
        #[allow(clippy::type_complexity)]
        let mut views: Vec<(String, Vec<u8>, Vec<String>, Vec<u8>)> = stems
            .into_iter()
            .map(|s| (s, header.clone(), Vec::new(), Vec::new()))
            .collect();
        if !paths.is_empty() {
            let mut cols = self.columns(read).join(",");
            cols.push_str(",_file");
            let file_of = |f: &str| -> usize {
                let hits: Vec<usize> = (0..paths.len())
                    .filter(|&i| {
                        let (f, p) = (
                            f.trim_start_matches("file:"),
                            paths[i].trim_start_matches("file:"),
                        );
                        f == p || f.ends_with(&format!("/{p}"))
                    })
                    .collect();
                assert_eq!(hits.len(), 1, "{f} among {paths:?}");
                hits[0]
            };
            let with_file = self.cli(
                read,
                &["cat", "--lineage", "--format", "csv", "--columns", &cols],
            );
            let mut body = Vec::new();
            for rec in &csv_records(&with_file)[1..] {
                let comma = rec.iter().rposition(|b| *b == b',').expect("_file column");
                let file = std::str::from_utf8(&rec[comma + 1..rec.len() - 1]).expect("UTF-8");
                assert!(!file.starts_with('"'), "{file}");
                let v = &mut views[file_of(file)].1;
                v.extend_from_slice(&rec[..comma]);
                v.push(b'\n');
                body.extend_from_slice(&rec[..comma]);
                body.push(b'\n');
            }
            assert!(
                body == csv[header.len()..],
                "the CLI's rows with _file are its rows"
            );
            // JSON Lines: `_file` is each line's last key.
            let jsonl = self.cli(
                read,
                &["cat", "--lineage", "--format", "jsonl", "--columns", &cols],
            );
            for line in jsonl.split_inclusive(|b| *b == b'\n') {
                let text = std::str::from_utf8(line).expect("UTF-8");
                let at = text.rfind(",\"_file\":\"").expect("_file key");
                let file = text[at + 10..].trim_end_matches("\"}\n");
                let v = &mut views[file_of(file)].3;
                v.extend_from_slice(&text.as_bytes()[..at]);
                v.extend_from_slice(b"}\n");
            }
            let pq = self.cli(
                read,
                &[
                    "cat",
                    "--lineage",
                    "--format",
                    "parquet",
                    "--columns",
                    &cols,
                ],
            );
            let (lines, files) = parquet_lines(pq).expect("the CLI's Parquet");
            for (line, f) in lines.into_iter().zip(files) {
                views[file_of(&f)].2.push(line);
            }
        }
        let files: FileViews = views
            .into_iter()
            .map(|(s, c, p, j)| (s, Arc::new(c), p, Arc::new(j)))
            .collect();
        self.content.entry(read.key()).or_default().files = Some(files.clone());
        files
    }

    fn parquet_rows(&mut self, read: &SnapRead, scope: &Scope) -> Vec<String> {
        match scope {
            Scope::File(stem) => self
                .files(read)
                .into_iter()
                .find(|f| f.0 == *stem)
                .map(|f| f.2)
                .expect("a file"),
            Scope::All => {
                if let Some(r) = self
                    .content
                    .get(&read.key())
                    .and_then(|c| c.parquet_rows.clone())
                {
                    return r;
                }
                let pq = self.cli(read, &["cat", "--lineage", "--format", "parquet"]);
                let rows = parquet_lines(pq).expect("the CLI's Parquet").0;
                self.content.entry(read.key()).or_default().parquet_rows = Some(rows.clone());
                rows
            }
        }
    }

    /// The bytes `path` must read (`entry` is what it is), or why the mount's differ.
    fn bytes(&mut self, path: &str, entry: &Entry) -> Result<Arc<Vec<u8>>, String> {
        match entry {
            Entry::Csv(read, Scope::All) => Ok(self.data_csv(read)),
            Entry::Jsonl(read, Scope::All) => Ok(Arc::new(
                self.cli(read, &["cat", "--lineage", "--format", "jsonl"]),
            )),
            Entry::Jsonl(read, Scope::File(stem)) => Ok(self
                .files(read)
                .into_iter()
                .find(|f| f.0 == *stem)
                .expect("settled")
                .3),
            Entry::Csv(read, Scope::File(stem)) => Ok(self
                .files(read)
                .into_iter()
                .find(|f| f.0 == *stem)
                .expect("settled")
                .1),
            Entry::SnapshotsCsv(t) => Ok(Arc::new(run(&[
                "snapshots",
                &self.tables[*t].dir.display().to_string(),
                "--format",
                "csv",
            ]))),
            Entry::Parquet(read, scope) => {
                let key = format!("{}|{}|{}|{scope:?}", read.table, read.snapshot, read.schema);
                if let Some(b) = self.served.get(&key) {
                    return Ok(b.clone());
                }
                let bytes = self.read_whole(path)?;
                let want = self.parquet_rows(read, scope);
                let got = parquet_lines(bytes.clone())
                    .map_err(|e| format!("{path}: {e}"))?
                    .0;
                if got != want {
                    let i = got.iter().zip(&want).take_while(|(a, b)| a == b).count();
                    return Err(format!(
                        "{path}: {} rows, the CLI's Parquet {}; first difference at row {i}: {:?} vs {:?}",
                        got.len(),
                        want.len(),
                        got.get(i),
                        want.get(i)
                    ));
                }
                let b = Arc::new(bytes);
                self.served.insert(key, b.clone());
                Ok(b)
            }
            Entry::SnapshotJson(read) => {
                let key = format!("{}|{}|{}|json", read.table, read.snapshot, read.schema);
                if let Some(b) = self.served.get(&key) {
                    return Ok(b.clone());
                }
                let bytes = self.read_whole(path)?;
                let j: Value =
                    serde_json::from_slice(&bytes).map_err(|e| format!("{path}: {e}"))?;
                let table = &self.tables[read.table];
                let snap = table.snapshot(read.snapshot).expect("snapshot");
                let ok = j["snapshot-id"] == read.snapshot
                    && j["schema"]["schema-id"] == read.schema
                    && j["sequence-number"] == snap["sequence-number"]
                    && j["timestamp-ms"] == snap["timestamp-ms"]
                    && j["parent-snapshot-id"]
                        == snap
                            .get("parent-snapshot-id")
                            .cloned()
                            .unwrap_or(Value::Null);
                if !ok {
                    return Err(format!(
                        "{path}: {j} vs metadata {snap} schema {}",
                        read.schema
                    ));
                }
                let b = Arc::new(bytes);
                self.served.insert(key, b.clone());
                Ok(b)
            }
            e => Err(format!("{path}: no bytes for {e:?}")),
        }
    }

    /// The whole file read from the mount (then dropped from the page cache, so that later
    /// reads go to the mount again).
    fn read_whole(&self, path: &str) -> Result<Vec<u8>, String> {
        let mut f = File::open(self.root.join(path)).map_err(|e| format!("open {path}: {e}"))?;
        let mut b = Vec::new();
        f.read_to_end(&mut b)
            .map_err(|e| format!("read {path}: {e}"))?;
        drop_cache(&f);
        Ok(b)
    }
}

fn drop_cache(f: &File) {
    // SAFETY: an advice on an open descriptor.
    unsafe {
        libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
    }
}

/// Reads up to `len` bytes at `offset` (looping over short reads until the end).
fn pread(f: &File, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let mut n = 0;
    while n < len {
        let k = f.read_at(&mut buf[n..], offset + n as u64)?;
        if k == 0 {
            break;
        }
        n += k;
    }
    buf.truncate(n);
    Ok(buf)
}

fn expect_slice(want: &[u8], offset: u64, len: usize) -> &[u8] {
    let start = (offset as usize).min(want.len());
    &want[start..(start + len).min(want.len())]
}

fn compare(what: &str, got: &[u8], want: &[u8]) -> Result<(), String> {
    if got == want {
        return Ok(());
    }
    let i = got.iter().zip(want).take_while(|(a, b)| a == b).count();
    let show = |b: &[u8]| String::from_utf8_lossy(&b[i..(i + 60).min(b.len())]).into_owned();
    Err(format!(
        "{what}: {} bytes, want {}; first difference at {i}: {:?} vs {:?}",
        got.len(),
        want.len(),
        show(got),
        show(want)
    ))
}

fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(-1)
}

impl Model {
    /// A random path: a walk down the model's tree, sometimes ending in a name that is not
    /// there (or not yet: a snapshot of a parked version).
    fn random_path(&mut self, rng: &mut Rng) -> String {
        let mut path = String::new();
        for depth in 0..8 {
            if depth > 0 && rng.chance(12) {
                let t = rng.below(self.tables.len());
                let bogus = match rng.below(4) {
                    0 => self
                        .tables
                        .get(t)
                        .and_then(|t| rng.pick(&t.future_ids()).map(i64::to_string))
                        .unwrap_or_else(|| "0".into()),
                    1 => "DATA.CSV".into(),
                    2 => "data.csv~".into(),
                    _ => "missing".into(),
                };
                return format!("{path}/{bogus}");
            }
            let names: Vec<String> = match self.settle(self.entry(&path)) {
                Entry::Dir(Some(n)) => n.into_iter().collect(),
                Entry::Dir(None) => match std::fs::read_dir(self.root.join(&path)) {
                    Ok(rd) => rd
                        .filter_map(|e| e.ok()?.file_name().into_string().ok())
                        .collect(),
                    Err(_) => Vec::new(),
                },
                Entry::Link(_) => [
                    "data.csv",
                    "data.jsonl",
                    "data.parquet",
                    "files",
                    "snapshot.json",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect(),
                _ => return path,
            };
            if (depth >= 2 && rng.chance(5)) || names.is_empty() {
                return path;
            }
            // Toward the views: favour snapshots, current and files.
            let name = rng.pick(&names).expect("names").clone();
            path = if path.is_empty() {
                name
            } else {
                format!("{path}/{name}")
            };
        }
        path
    }

    fn stat(&mut self, path: &str) -> Result<(), String> {
        let entry = self.settle(self.entry(path));
        let md = std::fs::symlink_metadata(self.root.join(path));
        match (&entry, md) {
            (Entry::Missing, Err(e)) if errno(&e) == libc::ENOENT => Ok(()),
            (Entry::Missing, r) => Err(format!("stat {path}: {r:?}, want ENOENT")),
            (Entry::NotDir, Err(e)) if errno(&e) == libc::ENOTDIR => Ok(()),
            (Entry::NotDir, r) => Err(format!("stat {path}: {r:?}, want ENOTDIR")),
            (Entry::Unknown, _) => Ok(()),
            (_, Err(e)) => Err(format!("stat {path}: {e}, want {entry:?}")),
            (Entry::Dir(_), Ok(md)) if md.is_dir() => Ok(()),
            (Entry::Link(target), Ok(md)) if md.file_type().is_symlink() => {
                let got = std::fs::read_link(self.root.join(path))
                    .map_err(|e| format!("readlink {path}: {e}"))?;
                if got != Path::new(target) || md.len() != target.len() as u64 {
                    return Err(format!(
                        "readlink {path}: {} ({} bytes), want {target}",
                        got.display(),
                        md.len()
                    ));
                }
                Ok(())
            }
            (Entry::Opaque, Ok(_)) => Ok(()),
            (Entry::Dir(_) | Entry::Link(_), Ok(md)) => {
                Err(format!("stat {path}: {:?}, want {entry:?}", md.file_type()))
            }
            (_, Ok(md)) => {
                if !md.is_file() {
                    return Err(format!("stat {path}: {:?}, want a file", md.file_type()));
                }
                let want = self.bytes(path, &entry)?.len() as u64;
                if md.len() != want {
                    return Err(format!("stat {path}: size {}, want {want}", md.len()));
                }
                if md.mode() & 0o777 != 0o444 {
                    return Err(format!("stat {path}: mode {:o}", md.mode()));
                }
                Ok(())
            }
        }
    }

    fn readdir(&mut self, path: &str) -> Result<(), String> {
        let entry = self.settle(self.entry(path));
        let listed = std::fs::read_dir(self.root.join(path)).map(|rd| {
            rd.map(|e| e.expect("entry").file_name().into_string().expect("UTF-8"))
                .collect::<BTreeSet<String>>()
        });
        let want = match (&entry, listed) {
            (Entry::Missing, Err(e)) if errno(&e) == libc::ENOENT => return Ok(()),
            (Entry::NotDir, Err(e)) if errno(&e) == libc::ENOTDIR => return Ok(()),
            (Entry::Unknown, _) => return Ok(()),
            (
                Entry::Csv(..) | Entry::Jsonl(..) | Entry::Parquet(..) | Entry::SnapshotJson(_),
                Err(e),
            ) if errno(&e) == libc::ENOTDIR => return Ok(()),
            (Entry::SnapshotsCsv(_) | Entry::Opaque, _) => return Ok(()),
            (Entry::Dir(None), Ok(got)) => {
                // files/: the model's data files, each as CSV and Parquet.
                if path.ends_with("/files") {
                    let Entry::Dir(_) = entry else { unreachable!() };
                    let parent = path.trim_end_matches("/files");
                    let read = match self.entry(&format!("{parent}/data.csv")) {
                        Entry::Csv(read, _) => read,
                        e => return Err(format!("{path}: parent is {e:?}")),
                    };
                    let want: BTreeSet<String> = self
                        .files(&read)
                        .iter()
                        .flat_map(|f| {
                            [
                                format!("{}.csv", f.0),
                                format!("{}.jsonl", f.0),
                                format!("{}.parquet", f.0),
                            ]
                        })
                        .collect();
                    if got != want {
                        return Err(format!("ls {path}: {got:?}, want {want:?}"));
                    }
                }
                return Ok(());
            }
            (Entry::Dir(Some(want)), Ok(got)) => (want.clone(), got),
            (Entry::Link(_), Ok(got)) => {
                let want = [
                    "data.csv",
                    "data.jsonl",
                    "data.parquet",
                    "files",
                    "partitions",
                    "snapshot.json",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect();
                (want, got)
            }
            (e, r) => return Err(format!("ls {path}: {r:?}, want {e:?}")),
        };
        if want.0 != want.1 {
            return Err(format!("ls {path}: {:?}, want {:?}", want.1, want.0));
        }
        Ok(())
    }

    fn open(&mut self, path: &str) -> Result<(), String> {
        let entry = self.settle(self.entry(path));
        let f = File::open(self.root.join(path));
        match (&entry, f) {
            (Entry::Missing, Err(e)) if errno(&e) == libc::ENOENT => Ok(()),
            (Entry::Missing, r) => Err(format!("open {path}: {r:?}, want ENOENT")),
            (Entry::NotDir, Err(e)) if errno(&e) == libc::ENOTDIR => Ok(()),
            (Entry::NotDir, r) => Err(format!("open {path}: {r:?}, want ENOTDIR")),
            (Entry::Dir(_) | Entry::Link(_) | Entry::Opaque | Entry::Unknown, _) => Ok(()),
            (_, Err(e)) => Err(format!("open {path}: {e}")),
            (_, Ok(file)) => {
                let want = self.bytes(path, &entry)?;
                self.handles.push(Handle {
                    path: path.to_string(),
                    file,
                    want,
                });
                Ok(())
            }
        }
    }
}

fn read_at(h: &Handle, offset: u64, len: usize) -> Result<(), String> {
    let got = pread(&h.file, offset, len).map_err(|e| format!("pread {}: {e}", h.path))?;
    compare(
        &format!("pread {} at {offset} of {len}", h.path),
        &got,
        expect_slice(&h.want, offset, len),
    )
}

fn seek_read(h: &mut Handle, to: SeekFrom, len: usize) -> Result<(), String> {
    let pos = h
        .file
        .seek(to)
        .map_err(|e| format!("seek {} {to:?}: {e}", h.path))?;
    let mut got = vec![0u8; len];
    let mut n = 0;
    while n < len {
        let k = h
            .file
            .read(&mut got[n..])
            .map_err(|e| format!("read {} at {pos}: {e}", h.path))?;
        if k == 0 {
            break;
        }
        n += k;
    }
    got.truncate(n);
    compare(
        &format!("seek {to:?} to {pos}, read {len} of {}", h.path),
        &got,
        expect_slice(&h.want, pos, len),
    )
}

/// Waits until the mount shows table `t`'s latest metadata (its directory's mtime), then
/// for the kernel's caches of what can change to expire.
fn wait_for_commit(m: &Model, t: usize) -> Result<(), String> {
    let table = &m.tables[t];
    let want = table.meta["last-updated-ms"]
        .as_i64()
        .expect("last-updated-ms");
    let dir = m.root.join("db").join(&table.name);
    let start = Instant::now();
    loop {
        let md = std::fs::metadata(&dir).map_err(|e| format!("stat {}: {e}", dir.display()))?;
        if md.mtime() * 1000 + md.mtime_nsec() / 1_000_000 == want {
            break;
        }
        if start.elapsed() > COMMIT_WAIT {
            return Err(format!(
                "{}: version {} not shown after {COMMIT_WAIT:?}",
                table.name, table.version
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(MUTABLE_TTL);
    Ok(())
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}={v}: not a number"))
        })
        .unwrap_or(default)
}

#[test]
fn random_operations_match_the_model() {
    let seed = env_or(
        "ICEFLOE_FUSE_MODEL_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs(),
    );
    let ops = env_or("ICEFLOE_FUSE_MODEL_OPS", DEFAULT_OPS);
    eprintln!("fuse model: seed {seed}, {ops} operations (ICEFLOE_FUSE_MODEL_SEED, ICEFLOE_FUSE_MODEL_OPS)");
    let mut rng = Rng(seed);
    let wh = tempfile::tempdir().expect("warehouse");
    let fixtures = fixtures_dir().join("warehouse/db");
    let tables: Vec<TableCopy> = TABLES
        .iter()
        .map(|name| {
            let pick = rng.next();
            TableCopy::new(
                name,
                &fixtures.join(name),
                wh.path().join("db").join(name),
                pick,
            )
        })
        .collect();
    // A chunk cache smaller than one view (chunks rendered again through cursors), or the
    // default; a small inode table (entries forgotten and looked up again), or the default.
    let mut extra: Vec<&str> = Vec::new();
    if rng.chance(2) {
        extra.extend(["--cache-size", "1MiB"]);
    }
    if rng.chance(2) {
        extra.extend(["--max-inodes", "64"]);
    }
    let mount = Mount::new(wh.path(), &extra);
    let mut m = Model {
        root: mount.path().to_path_buf(),
        tables,
        content: HashMap::new(),
        served: HashMap::new(),
        handles: Vec::new(),
        log: vec![format!("mount {extra:?}")],
    };
    for t in &m.tables {
        m.log
            .push(format!("{} at version {} of {}", t.name, t.version, t.last));
    }
    for i in 0..ops {
        let r = step(&mut m, &mut rng);
        if let Err(e) = r {
            let from = m.log.len().saturating_sub(40);
            panic!(
                "operation {i} of seed {seed} (ICEFLOE_FUSE_MODEL_SEED={seed} ICEFLOE_FUSE_MODEL_OPS={ops}): {e}\nlast operations:\n  {}\nmount log:\n{}",
                m.log[from..].join("\n  "),
                mount.log_text()
            );
        }
    }
    let mut kinds: std::collections::BTreeMap<&str, usize> = Default::default();
    for l in &m.log {
        *kinds.entry(l.split(' ').next().unwrap_or("")).or_default() += 1;
    }
    eprintln!(
        "fuse model: {ops} operations match (seed {seed}): {kinds:?}, {} views checked against the CLI",
        m.content.len() + m.served.len()
    );
}

/// One random operation, checked.
fn step(m: &mut Model, rng: &mut Rng) -> Result<(), String> {
    match rng.below(20) {
        0..=2 => {
            let p = m.random_path(rng);
            m.log.push(format!("stat {p}"));
            m.stat(&p)
        }
        3..=4 => {
            let p = m.random_path(rng);
            m.log.push(format!("ls {p}"));
            m.readdir(&p)
        }
        5..=7 if m.handles.len() < MAX_OPEN => {
            let p = m.random_path(rng);
            m.log.push(format!("open {p}"));
            m.open(&p)
        }
        8..=11 if !m.handles.is_empty() => {
            let h = &m.handles[rng.below(m.handles.len())];
            let (off, len) = (rng.offset(h.want.len() as u64), rng.length());
            m.log.push(format!("pread {} at {off} of {len}", h.path));
            read_at(h, off, len)
        }
        12..=14 if !m.handles.is_empty() => {
            let i = rng.below(m.handles.len());
            let size = m.handles[i].want.len() as u64;
            let at = m.handles[i]
                .file
                .stream_position()
                .map_err(|e| e.to_string())?;
            let to = match rng.below(3) {
                0 => SeekFrom::Start(rng.offset(size)),
                // Backward from where the last read ended.
                1 => SeekFrom::Current(-(rng.below(at as usize + 1) as i64)),
                _ => SeekFrom::End(-(rng.below(size as usize + 1) as i64)),
            };
            let len = rng.length();
            let h = &mut m.handles[i];
            m.log.push(format!("seek {} {to:?}, read {len}", h.path));
            seek_read(h, to, len)
        }
        15 if m.handles.len() >= 2 => {
            // Every open file read at once, from a thread each.
            let plans: Vec<Vec<(u64, usize)>> = m
                .handles
                .iter()
                .map(|h| {
                    (0..3)
                        .map(|_| (rng.offset(h.want.len() as u64), rng.length()))
                        .collect()
                })
                .collect();
            m.log.push(format!("parallel reads {plans:?}"));
            std::thread::scope(|s| {
                let joins: Vec<_> = m
                    .handles
                    .iter()
                    .zip(&plans)
                    .map(|(h, p)| {
                        s.spawn(move || p.iter().try_for_each(|&(o, l)| read_at(h, o, l)))
                    })
                    .collect();
                joins
                    .into_iter()
                    .try_for_each(|j| j.join().expect("reader thread"))
            })
        }
        16 if !m.handles.is_empty() => {
            let h = &m.handles[rng.below(m.handles.len())];
            m.log.push(format!("drop the page cache of {}", h.path));
            drop_cache(&h.file);
            Ok(())
        }
        17 if !m.handles.is_empty() => {
            let h = m.handles.swap_remove(rng.below(m.handles.len()));
            m.log.push(format!("close {}", h.path));
            Ok(())
        }
        18 if rng.chance(2) => {
            let pending: Vec<usize> = (0..m.tables.len())
                .filter(|&t| m.tables[t].version < m.tables[t].last)
                .collect();
            let Some(&t) = rng.pick(&pending) else {
                return Ok(());
            };
            m.tables[t].commit();
            m.log.push(format!(
                "commit {} version {}",
                m.tables[t].name, m.tables[t].version
            ));
            wait_for_commit(m, t)
        }
        _ => {
            let p = m.random_path(rng);
            m.log.push(format!("stat {p}"));
            m.stat(&p)
        }
    }
}
