//! `icefloe mount` end to end: the fixture tables mounted through FUSE by the real binary, read
//! with ordinary tools and compared with the rows the writing engine reads back.
//!
//! These tests need `/dev/fuse` and `fusermount3` (Debian package `fuse3`); without them they
//! fail, never pass silently.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use arrow::record_batch::RecordBatch;
use icefloe_core::encode::jsonl::JsonLinesWriter;
use icefloe_core::{Scan, Table};
use icefloe_fuse::mounts::is_mounted;
use icefloe_testkit::{all_snapshots, copy_table, csv_to_rows, diff_rows, fixtures_dir, parse_csv};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

const ICEFLOE: &str = env!("CARGO_BIN_EXE_icefloe");

#[path = "support/mount.rs"]
mod mount;
use mount::{check_fuse_available, Mount};

fn warehouse() -> PathBuf {
    fixtures_dir().join("warehouse")
}

fn table_dir(name: &str) -> PathBuf {
    warehouse().join("db").join(name)
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `icefloe cat --format csv --lineage` of one snapshot.
fn cat_csv(table: &Path, snapshot: i64) -> Vec<u8> {
    run(Command::new(ICEFLOE).arg("cat").arg(table).args([
        "--lineage",
        "--format",
        "csv",
        "--snapshot",
        &snapshot.to_string(),
    ]))
    .stdout
}

fn jsonl(batches: &[RecordBatch]) -> Vec<Value> {
    let mut w = JsonLinesWriter::new(Vec::new());
    for b in batches {
        w.write_batch(b).expect("jsonl");
    }
    let out = String::from_utf8(w.finish().expect("jsonl")).expect("utf-8");
    out.lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

fn parquet_rows(bytes: Vec<u8>) -> Vec<Value> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))
        .expect("a valid Parquet file")
        .build()
        .expect("reader");
    let batches: Vec<RecordBatch> = reader.collect::<Result<_, _>>().expect("batches");
    jsonl(&batches)
}

fn errno(r: std::io::Result<impl Sized>) -> Option<i32> {
    r.err().and_then(|e| e.raw_os_error())
}

#[test]
fn every_snapshot_of_the_warehouse_reads_as_the_engine_does() {
    let m = Mount::new(&warehouse(), &[]);
    let mut names: Vec<String> = std::fs::read_dir(m.path().join("db"))
        .expect("ls db")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .collect();
    names.sort();
    assert!(
        names.contains(&"v3_basic".to_string()) && names.len() >= 14,
        "{names:?}"
    );
    let mut failures = Vec::new();
    let snaps = all_snapshots();
    for s in &snaps {
        let dir = m
            .path()
            .join("db")
            .join(&s.table)
            .join("snapshots")
            .join(s.snapshot_id.to_string());
        let want = s.expected_rows();
        // data.csv: header, then every live row.
        let text = std::fs::read_to_string(dir.join("data.csv")).expect("read data.csv");
        let meta = std::fs::metadata(dir.join("data.csv")).expect("stat");
        assert_eq!(
            meta.len(),
            text.len() as u64,
            "{}@{}: stat size",
            s.table,
            s.snapshot_id
        );
        let records = parse_csv(&text);
        let header: Vec<&str> = records[0].iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(header, s.expected_columns, "{}@{}", s.table, s.snapshot_id);
        if let Some(d) = diff_rows(&csv_to_rows(&records, &want), &want) {
            failures.push(format!("{}@{} data.csv: {d}", s.table, s.snapshot_id));
        }
        // data.parquet, read back with the parquet crate.
        let bytes = std::fs::read(dir.join("data.parquet")).expect("read data.parquet");
        assert_eq!(
            std::fs::metadata(dir.join("data.parquet"))
                .expect("stat")
                .len(),
            bytes.len() as u64
        );
        if let Some(d) = diff_rows(&parquet_rows(bytes), &want) {
            failures.push(format!("{}@{} data.parquet: {d}", s.table, s.snapshot_id));
        }
        // mtime is the snapshot's time.
        let json: Value = serde_json::from_slice(
            &std::fs::read(dir.join("snapshot.json")).expect("snapshot.json"),
        )
        .expect("json");
        assert_eq!(json["snapshot-id"], s.snapshot_id);
        let ms = json["timestamp-ms"].as_i64().expect("timestamp-ms");
        assert_eq!(
            meta.mtime() * 1000 + meta.mtime_nsec() / 1_000_000,
            ms,
            "{}@{}",
            s.table,
            s.snapshot_id
        );
        // The per-file views hold the same rows as data.csv, split by data file.
        let mut from_files: Vec<String> = Vec::new();
        let mut files = 0;
        for e in std::fs::read_dir(dir.join("files")).expect("ls files") {
            let p = e.expect("entry").path();
            if p.extension().is_some_and(|x| x == "csv") {
                files += 1;
                let t = std::fs::read_to_string(&p).expect("read file view");
                let mut lines = t.lines();
                assert_eq!(lines.next(), text.lines().next(), "{}: header", p.display());
                from_files.extend(lines.map(str::to_string));
            }
        }
        let mut all: Vec<String> = text.lines().skip(1).map(str::to_string).collect();
        all.sort();
        from_files.sort();
        assert_eq!(
            from_files, all,
            "{}@{}: files/*.csv vs data.csv ({files} files)",
            s.table, s.snapshot_id
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {} snapshots differ:\n{}",
        failures.len(),
        snaps.len(),
        failures.join("\n")
    );
}

#[test]
fn table_root_has_current_refs_and_the_snapshot_list() {
    let table = table_dir("v3_basic");
    let m = Mount::new(&table, &[]);
    let snaps: Vec<_> = all_snapshots()
        .into_iter()
        .filter(|s| s.table == "v3_basic")
        .collect();
    // snapshots.csv is what `icefloe snapshots --format csv` prints.
    let want = run(Command::new(ICEFLOE)
        .arg("snapshots")
        .arg(&table)
        .args(["--format", "csv"]))
    .stdout;
    assert_eq!(
        std::fs::read(m.path().join("snapshots.csv")).expect("snapshots.csv"),
        want
    );
    // Every snapshot has a directory; every ref is a symlink to its snapshot.
    let mut listed: Vec<i64> = std::fs::read_dir(m.path().join("snapshots"))
        .expect("ls snapshots")
        .map(|e| {
            e.expect("entry")
                .file_name()
                .to_str()
                .expect("utf-8")
                .parse()
                .expect("an id")
        })
        .collect();
    listed.sort();
    let mut ids: Vec<i64> = snaps.iter().map(|s| s.snapshot_id).collect();
    ids.sort();
    assert_eq!(listed, ids);
    let mut refs_checked = 0;
    for s in &snaps {
        for r in &s.refs {
            // The manifest writes refs as `branch:main`, `tag:after_update`.
            let r = r.split_once(':').map(|(_, name)| name).unwrap_or(r);
            let target = std::fs::read_link(m.path().join("refs").join(r)).expect("ref symlink");
            assert_eq!(
                target,
                PathBuf::from(format!("../snapshots/{}", s.snapshot_id))
            );
            let via_link = std::fs::read(m.path().join("refs").join(r).join("data.csv"))
                .expect("read through ref");
            assert_eq!(via_link, cat_csv(&table, s.snapshot_id), "refs/{r}");
            refs_checked += 1;
            if r == "main" {
                let current = std::fs::read_link(m.path().join("current")).expect("current");
                assert_eq!(
                    current,
                    PathBuf::from(format!("snapshots/{}", s.snapshot_id))
                );
            }
        }
    }
    assert!(refs_checked >= 3, "main, a tag and a branch");
}

#[test]
fn shell_tools_read_the_largest_table_at_any_offset() {
    let table = table_dir("v3_dv_large");
    let m = Mount::new(&table, &[]);
    let current = m.path().join("current");
    let id: i64 = std::fs::read_link(&current)
        .expect("current")
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.parse().ok())
        .expect("current -> snapshots/<id>");
    let want = cat_csv(&table, id);
    let view = current.join("data.csv");
    let size = std::fs::metadata(&view).expect("stat").len();
    assert_eq!(size, want.len() as u64, "ls -l size");
    assert!(
        size > 512 << 10,
        "the largest fixture renders to more than 512 KiB ({size})"
    );
    // cat, head, tail, wc, grep, dd skip=, cp, diff.
    assert_eq!(run(Command::new("cat").arg(&view)).stdout, want);
    let head = run(Command::new("head").args(["-n", "3"]).arg(&view)).stdout;
    assert_eq!(
        head,
        want.split_inclusive(|b| *b == b'\n')
            .take(3)
            .collect::<Vec<_>>()
            .concat()
    );
    let tail = run(Command::new("tail").args(["-n", "5"]).arg(&view)).stdout;
    let lines: Vec<&[u8]> = want.split_inclusive(|b| *b == b'\n').collect();
    assert_eq!(tail, lines[lines.len() - 5..].concat());
    let wc = String::from_utf8(run(Command::new("wc").args(["-l", "-c"]).arg(&view)).stdout)
        .expect("utf-8");
    let counts: Vec<u64> = wc
        .split_whitespace()
        .take(2)
        .map(|n| n.parse().expect("count"))
        .collect();
    assert_eq!(counts, [lines.len() as u64, size]);
    let dd = run(Command::new("dd")
        .arg(format!("if={}", view.display()))
        .args(["bs=4096", "skip=97", "count=5", "status=none"]))
    .stdout;
    assert_eq!(dd, want[97 * 4096..102 * 4096]);
    let second_line = String::from_utf8_lossy(lines[1]).trim_end().to_string();
    let grep = run(Command::new("grep")
        .arg("-c")
        .arg("-F")
        .arg("-x")
        .arg(&second_line)
        .arg(&view))
    .stdout;
    assert_eq!(String::from_utf8_lossy(&grep).trim(), "1");
    let tmp = tempfile::tempdir().expect("tmp");
    run(Command::new("cp")
        .arg(&view)
        .arg(tmp.path().join("copy.csv")));
    assert_eq!(
        std::fs::read(tmp.path().join("copy.csv")).expect("copy"),
        want
    );
    std::fs::write(tmp.path().join("want.csv"), &want).expect("write");
    run(Command::new("diff")
        .arg(&view)
        .arg(tmp.path().join("want.csv")));
    // Reads at arbitrary offsets and sizes, backwards, on one open file.
    let f = File::open(&view).expect("open");
    let mut offset = size;
    let mut step = 7919u64;
    while offset > 0 {
        offset = offset.saturating_sub(step);
        step = step * 3 % 200_003 + 1;
        let mut buf = vec![0; (step % 70_000 + 1) as usize];
        let n = f.read_at(&mut buf, offset).expect("pread");
        let end = (offset as usize + n).min(want.len());
        assert_eq!(&buf[..n], &want[offset as usize..end], "read at {offset}");
    }
    // Past the end: nothing.
    assert_eq!(
        f.read_at(&mut [0; 16], size + 10).expect("pread past end"),
        0
    );
    // The per-file Parquet view reads back with the parquet crate.
    for e in std::fs::read_dir(current.join("files")).expect("ls files") {
        let p = e.expect("entry").path();
        if p.extension().is_some_and(|x| x == "parquet") {
            let rows = parquet_rows(std::fs::read(&p).expect("read"));
            assert!(!rows.is_empty(), "{}", p.display());
        }
    }
}

#[test]
fn sixteen_parallel_readers_get_the_right_bytes() {
    let m = Mount::new(&warehouse(), &["--cache-size", "8MiB"]);
    // 16 different views across tables, none read before: counting passes and rendering race.
    let snaps: Vec<_> = all_snapshots().into_iter().step_by(4).take(16).collect();
    assert_eq!(snaps.len(), 16);
    let wants: HashMap<i64, Vec<u8>> = snaps
        .iter()
        .map(|s| (s.snapshot_id, cat_csv(&s.table_dir, s.snapshot_id)))
        .collect();
    let readers: Vec<_> = snaps
        .iter()
        .map(|s| {
            let view = m
                .path()
                .join("db")
                .join(&s.table)
                .join("snapshots")
                .join(s.snapshot_id.to_string())
                .join("data.csv");
            let id = s.snapshot_id;
            std::thread::spawn(move || {
                let mut got = Vec::new();
                File::open(&view)
                    .and_then(|mut f| f.read_to_end(&mut got))
                    .map(|_| (id, got))
            })
        })
        .collect();
    for r in readers {
        let (id, got) = r.join().expect("reader thread").expect("read");
        assert!(
            got == wants[&id],
            "snapshot {id}: {} bytes, want {}",
            got.len(),
            wants[&id].len()
        );
    }
}

/// A source path with commas does not inject mount options; the mount's source in
/// /proc/self/mountinfo is the percent-encoded path, and the views read. (A backslash is
/// encoded too, see `fsname`'s unit test; the catalog does not open such a path yet.)
#[test]
fn a_comma_in_the_source_path_is_not_a_mount_option() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = tmp.path().join("t,allow_other,dev");
    icefloe_testkit::copy_dir(&table_dir("v3_basic"), &table);
    let m = Mount::new(&table, &[]);
    // The same rows as a mount of the fixture itself.
    let original = Mount::new(&table_dir("v3_basic"), &[]);
    let csv = |m: &Mount| std::fs::read(m.path().join("current/data.csv")).expect("read");
    assert_eq!(csv(&m), csv(&original));
    let point = m.path().to_str().unwrap().to_string();
    let info = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    let line = info
        .lines()
        .find(|l| l.split(' ').nth(4) == Some(point.as_str()))
        .expect("the mount in mountinfo");
    let (mount_opts, rest) = line.split_once(" - ").expect("separator");
    let fields: Vec<&str> = rest.split(' ').collect();
    let want = icefloe_fuse::fsname(table.to_str().unwrap());
    assert!(!want.contains(','), "{want}");
    assert_eq!(fields[1], want, "{line}");
    for opts in [mount_opts.split(' ').nth(5).unwrap(), fields[2]] {
        for o in opts.split(',') {
            assert!(
                o != "allow_other" && o != "dev",
                "injected option {o}: {line}"
            );
        }
    }
}

/// The `read_ahead_kb` of the FUSE mount on `point`, from sysfs.
fn read_ahead_kb(point: &Path) -> u64 {
    let info = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    let device =
        icefloe_fuse::readahead::fuse_device(&info, point).expect("the mount in mountinfo");
    let file = format!("/sys/class/bdi/{device}/read_ahead_kb");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    text.trim().parse().expect("a number of KiB")
}

/// `--read-ahead` sets the kernel's read-ahead window of the mount (as root; the
/// tests run as root, the suite's FUSE mounts need it), `0` keeps the kernel's, and reads
/// through either window are the same bytes.
#[test]
fn read_ahead_sets_the_mounts_window() {
    // /proc/self belongs to the effective user.
    let uid = std::fs::metadata("/proc/self").expect("/proc/self").uid();
    assert_eq!(uid, 0, "this test sets sysfs values: run the suite as root");
    let table = table_dir("v3_dv_large");
    let wide = Mount::new(&table, &["--read-ahead", "3MiB"]);
    let kept = Mount::new(&table, &["--read-ahead", "0"]);
    let default = Mount::new(&table, &[]);
    assert_eq!(read_ahead_kb(wide.path()), 3072);
    assert_eq!(read_ahead_kb(default.path()), 1024);
    assert!(
        ![3072, 1024].contains(&read_ahead_kb(kept.path())),
        "--read-ahead 0 must leave the kernel's window"
    );
    let csv = |m: &Mount| std::fs::read(m.path().join("current/data.csv")).expect("read");
    let cli =
        run(Command::new(ICEFLOE)
            .arg("cat")
            .arg(&table)
            .args(["--lineage", "--format", "csv"]))
        .stdout;
    assert_eq!(csv(&wide), cli);
    assert_eq!(csv(&kept), cli);
}

/// `statfs` (`df`, `stat -f`) reports the views sized so far as used blocks and the
/// inodes held as files, not zeros.
#[test]
fn statfs_counts_the_views_sized() {
    let m = Mount::new(&table_dir("v3_basic"), &[]);
    let statfs = || -> (u64, u64, u64) {
        let out = Command::new("stat")
            .args(["-f", "-c", "%b %S %c"])
            .arg(m.path())
            .output()
            .expect("stat -f");
        let text = String::from_utf8(out.stdout).unwrap();
        let v: Vec<u64> = text
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        (v[0], v[1], v[2])
    };
    let (blocks, bsize, _) = statfs();
    assert_eq!((blocks, bsize), (0, 4096), "nothing sized yet");
    let csv = std::fs::metadata(m.path().join("current/data.csv"))
        .expect("stat")
        .len();
    let pq = std::fs::metadata(m.path().join("current/data.parquet"))
        .expect("stat")
        .len();
    let (blocks, bsize, files) = statfs();
    assert!(csv > 0 && pq > 0);
    assert_eq!(blocks, (csv + pq).div_ceil(4096), "{csv} + {pq} bytes");
    assert_eq!(bsize, 4096);
    assert!(files >= 3, "root, current's target, data.csv: {files}");
}

#[test]
fn writes_fail_with_erofs() {
    let m = Mount::new(&table_dir("v3_basic"), &[]);
    let view = m.path().join("current/data.csv");
    assert!(view.exists());
    const EROFS: i32 = 30;
    assert_eq!(
        errno(File::options().write(true).open(&view)),
        Some(EROFS),
        "open for writing"
    );
    assert_eq!(
        errno(File::options().append(true).open(&view)),
        Some(EROFS),
        "append"
    );
    assert_eq!(
        errno(File::create(m.path().join("new.csv"))),
        Some(EROFS),
        "create"
    );
    assert_eq!(errno(std::fs::remove_file(&view)), Some(EROFS), "unlink");
    assert_eq!(
        errno(std::fs::rename(&view, m.path().join("moved.csv"))),
        Some(EROFS),
        "rename"
    );
    assert_eq!(
        errno(std::fs::create_dir(m.path().join("d"))),
        Some(EROFS),
        "mkdir"
    );
    assert_eq!(
        errno(std::fs::remove_dir(m.path().join("refs"))),
        Some(EROFS),
        "rmdir"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        errno(std::fs::set_permissions(
            &view,
            std::fs::Permissions::from_mode(0o666)
        )),
        Some(EROFS),
        "chmod"
    );
    assert_eq!(
        errno(std::os::unix::fs::symlink("x", m.path().join("l"))),
        Some(EROFS),
        "symlink"
    );
    // Still readable.
    assert!(std::fs::read(&view).expect("read").starts_with(b"_row_id,"));
}

#[test]
fn corrupt_deletion_vector_is_eio_and_the_mount_survives() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (puffin, offset, size, victim, healthy) = rt.block_on(async {
        let table = Table::open(tmp.path().to_str().expect("utf-8"))
            .await
            .expect("open");
        let tasks = Scan::builder()
            .build(&table)
            .expect("scan")
            .plan_files()
            .await
            .expect("plan");
        let with_dv = tasks
            .iter()
            .find(|t| t.deletion_vector.is_some())
            .expect("a DV applies");
        let without = tasks
            .iter()
            .find(|t| !t.has_deletes())
            .expect("a file without deletes");
        let dv = with_dv.deletion_vector.clone().expect("dv");
        let rel = dv
            .file
            .file_path
            .strip_prefix(&table.metadata().location)
            .expect("in table")
            .to_string();
        let stem = |p: &str| {
            p.rsplit('/')
                .next()
                .and_then(|n| n.strip_suffix(".parquet"))
                .expect("stem")
                .to_string()
        };
        (
            tmp.path().join(rel.trim_start_matches('/')),
            dv.file.content_offset.expect("offset") as usize,
            dv.file.content_size_in_bytes.expect("size") as usize,
            stem(&with_dv.data_file.file_path),
            stem(&without.data_file.file_path),
        )
    });
    // Flip a bit of the blob's CRC (its last byte).
    let mut bytes = std::fs::read(&puffin).expect("read puffin");
    bytes[offset + size - 1] ^= 0x01;
    std::fs::write(&puffin, bytes).expect("write puffin");
    let m = Mount::new(tmp.path(), &[]);
    const EIO: i32 = 5;
    let files = m.path().join("current/files");
    assert_eq!(
        errno(std::fs::read(files.join(format!("{victim}.csv")))),
        Some(EIO)
    );
    assert_eq!(
        errno(std::fs::read(m.path().join("current/data.csv"))),
        Some(EIO)
    );
    assert_eq!(
        errno(std::fs::read(files.join(format!("{victim}.parquet")))),
        Some(EIO)
    );
    // The log names the damaged file.
    let puffin_name = puffin
        .file_name()
        .and_then(|n| n.to_str())
        .expect("name")
        .to_string();
    let log = m.log_text();
    assert!(
        log.contains(&puffin_name) && log.contains("CRC"),
        "log does not name {puffin_name}:\n{log}"
    );
    // The mount is still up: listing works and another file still reads.
    assert!(is_mounted(m.path()));
    let text =
        std::fs::read_to_string(files.join(format!("{healthy}.csv"))).expect("healthy file reads");
    assert!(
        text.starts_with("_row_id,") && text.lines().count() > 1,
        "{text}"
    );
    assert!(
        std::fs::read_dir(m.path().join("snapshots"))
            .expect("ls")
            .count()
            >= 9
    );
}

#[test]
fn a_snapshot_committed_while_mounted_appears() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let meta = tmp.path().join("metadata");
    let hint: u32 = std::fs::read_to_string(meta.join("version-hint.text"))
        .expect("hint")
        .trim()
        .parse()
        .expect("n");
    let newest = meta.join(format!("v{hint}.metadata.json"));
    let parked = tempfile::tempdir().expect("tmp");
    std::fs::rename(&newest, parked.path().join("newest.json")).expect("park newest metadata");
    std::fs::write(meta.join("version-hint.text"), format!("{}\n", hint - 1)).expect("hint");
    let new_meta: Value =
        serde_json::from_slice(&std::fs::read(parked.path().join("newest.json")).expect("read"))
            .expect("json");
    let new_id = new_meta["current-snapshot-id"]
        .as_i64()
        .expect("current snapshot");

    let m = Mount::new(tmp.path(), &[]);
    let new_dir = m.path().join("snapshots").join(new_id.to_string());
    assert!(!new_dir.exists(), "not yet committed");
    let old_current = std::fs::read_link(m.path().join("current")).expect("current");
    let old_id: i64 = old_current
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.parse().ok())
        .expect("id");
    // A file opened now keeps reading this snapshot.
    let mut open_before = File::open(m.path().join("current/data.csv")).expect("open");

    // Commit: the new metadata version, then the hint.
    std::fs::copy(parked.path().join("newest.json"), &newest).expect("copy metadata");
    std::fs::write(meta.join("version-hint.text"), format!("{hint}\n")).expect("hint");
    let start = Instant::now();
    while !new_dir.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "snapshot {new_id} did not appear within 10 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let appeared = start.elapsed();
    assert!(
        appeared < Duration::from_secs(5),
        "refresh is every second; took {appeared:?}"
    );
    // `current` follows main; the new snapshot reads as `icefloe cat` prints it.
    let start = Instant::now();
    while std::fs::read_link(m.path().join("current")).expect("current")
        != Path::new(&format!("snapshots/{new_id}"))
    {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "current did not move to {new_id}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        std::fs::read(new_dir.join("data.csv")).expect("read new"),
        cat_csv(tmp.path(), new_id)
    );
    let mut before = Vec::new();
    open_before.read_to_end(&mut before).expect("read old");
    assert_eq!(
        before,
        cat_csv(tmp.path(), old_id),
        "an open file keeps its snapshot"
    );
    assert!(
        String::from_utf8_lossy(&std::fs::read(m.path().join("snapshots.csv")).expect("list"))
            .contains(&new_id.to_string())
    );
}

#[test]
fn sigterm_unmounts_cleanly_and_removes_spill_files() {
    let spill = tempfile::tempdir().expect("spill parent");
    let mut m = Mount::new(
        &table_dir("v3_basic"),
        &["--spill-dir", spill.path().to_str().expect("utf-8")],
    );
    let parquet = std::fs::read(m.path().join("current/data.parquet")).expect("read parquet");
    assert!(parquet.starts_with(b"PAR1") && parquet.ends_with(b"PAR1"));
    let spilled = || -> usize {
        std::fs::read_dir(spill.path())
            .map(|d| {
                d.flatten()
                    .map(|e| std::fs::read_dir(e.path()).map(|f| f.count()).unwrap_or(0))
                    .sum()
            })
            .unwrap_or(0)
    };
    // The Parquet view's fresh parts: a lineage part or a re-encoded part per row group.
    assert!(spilled() >= 1, "spill files while mounted");
    run(Command::new("kill").args(["-TERM", &m.child.id().to_string()]));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = m.child.try_wait().expect("wait") {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "still running 10 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "exit status {status}:\n{}", m.log_text());
    assert!(!is_mounted(m.path()), "unmounted");
    assert_eq!(
        std::fs::read_dir(spill.path()).expect("ls").count(),
        0,
        "spill directory removed"
    );
}

#[test]
fn daemon_mode_returns_once_mounted() {
    check_fuse_available();
    let dir = tempfile::tempdir().expect("mount point");
    let log_dir = tempfile::tempdir().expect("log dir");
    let log = log_dir.path().join("daemon.log");
    let out = run(Command::new(ICEFLOE)
        .env("ICEFLOE_LOG", "icefloe_fuse=info")
        .arg("mount")
        .arg(table_dir("v3_basic"))
        .arg(dir.path())
        .arg("--daemon")
        .arg("--log-file")
        .arg(&log));
    assert!(
        is_mounted(dir.path()),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ok = std::fs::read_link(dir.path().join("current")).is_ok();
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    run(Command::new("fusermount3").arg("-u").arg(dir.path()));
    assert!(ok, "current is listed");
    assert!(
        logged.contains("mounted"),
        "the daemon logs to --log-file: {logged:?}"
    );
    let start = Instant::now();
    while is_mounted(dir.path()) {
        assert!(start.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `--storage-option k=v` arguments.
fn storage_args(opts: &[(String, String)]) -> Vec<String> {
    opts.iter()
        .flat_map(|(k, v)| ["--storage-option".to_string(), format!("{k}={v}")])
        .collect()
}

#[test]
fn a_warehouse_on_s3_mounts_as_namespace_and_table_directories() {
    use icefloe_testkit::servers;
    let s3 = servers::moto();
    servers::create_s3_bucket(&s3, "lake");
    let opts = servers::s3_options(&s3);
    servers::upload_warehouse("s3://lake/", "wh", &opts);
    // A nested namespace: deep.er.v3_basic.
    servers::upload_dir(
        &table_dir("v3_basic"),
        "s3://lake/",
        "wh/deep/er/v3_basic",
        &opts,
    );
    let args = storage_args(&opts);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let m = Mount::new(Path::new("s3://lake/wh"), &args);
    let mut top: Vec<String> = std::fs::read_dir(m.path())
        .expect("ls root")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .collect();
    top.sort();
    assert_eq!(top, ["db", "deep"]);
    every_fixture_snapshot_under_db(&m);
    // The nested copy reads the same rows as the original's current snapshot.
    let nested = std::fs::read_to_string(m.path().join("deep/er/v3_basic/current/data.csv"))
        .expect("nested table");
    let original = std::fs::read_to_string(m.path().join("db/v3_basic/current/data.csv"))
        .expect("original table");
    assert_eq!(nested, original);
}

/// `<mount>/db/` lists every fixture table, and every snapshot's `data.csv` holds its expected
/// rows.
fn every_fixture_snapshot_under_db(m: &Mount) {
    let mut failures = Vec::new();
    let snaps = all_snapshots();
    let mut tables: Vec<String> = snaps.iter().map(|s| s.table.clone()).collect();
    tables.dedup();
    let mut listed: Vec<String> = std::fs::read_dir(m.path().join("db"))
        .expect("ls db")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .collect();
    listed.sort();
    tables.sort();
    assert_eq!(listed, tables);
    for s in &snaps {
        let csv = m
            .path()
            .join("db")
            .join(&s.table)
            .join("snapshots")
            .join(s.snapshot_id.to_string())
            .join("data.csv");
        let text = std::fs::read_to_string(&csv).expect("read data.csv");
        let records = parse_csv(&text);
        let want = s.expected_rows();
        if let Some(d) = diff_rows(&csv_to_rows(&records, &want), &want) {
            failures.push(format!("{}@{}: {d}", s.table, s.snapshot_id));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `icefloe mount --catalog NAME MNT` over the test REST catalog (Iceberg Java's handlers,
/// `scripts/rest-catalog start`), configured by PyIceberg environment variables: its namespaces
/// and tables as `<namespace>/<table>/`, nested namespaces as nested directories, every
/// snapshot's rows as expected.
#[test]
fn a_rest_catalog_mounts_as_namespace_and_table_directories() {
    let Some(s) = icefloe_testkit::servers::rest_catalog_env() else {
        return;
    };
    let home = tempfile::tempdir().expect("home");
    let env = [
        ("HOME", home.path().to_str().expect("UTF-8")),
        ("PYICEBERG_CATALOG__FIXTURES__URI", &s["ICEFLOE_REST_URI"]),
        (
            "PYICEBERG_CATALOG__FIXTURES__WAREHOUSE",
            &s["ICEFLOE_REST_WAREHOUSE"],
        ),
        (
            "PYICEBERG_CATALOG__FIXTURES__TOKEN",
            &s["ICEFLOE_REST_TOKEN"],
        ),
    ];
    let m = Mount::spawn(None, &["--catalog", "fixtures"], &env);
    let mut top: Vec<String> = std::fs::read_dir(m.path())
        .expect("ls root")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .collect();
    top.sort();
    assert_eq!(top, ["db", "nested"]);
    every_fixture_snapshot_under_db(&m);
    let nested = std::fs::read_to_string(m.path().join("nested/deep/v3_basic/current/data.csv"))
        .expect("nested table");
    let original = std::fs::read_to_string(m.path().join("db/v3_basic/current/data.csv"))
        .expect("original table");
    assert_eq!(nested, original);
}

/// Every `data.csv` below `dir`, as (path relative to `root`, data lines without header).
fn partition_leaves(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<String>)>) {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("ls partition dir")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .collect();
    names.sort();
    for n in names {
        let p = dir.join(&n);
        if n == "data.csv" {
            let text = std::fs::read_to_string(&p).expect("read data.csv");
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().to_string();
            out.push((rel, text.lines().skip(1).map(str::to_string).collect()));
        } else if n != "data.parquet" && n != "data.jsonl" {
            assert!(n.contains('='), "{n} is not field=value");
            partition_leaves(root, &p, out);
        }
    }
}

/// A Hive path value with its `%XX` escapes decoded.
fn hive_unescape(s: &str) -> String {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).expect("hex escape"));
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).expect("utf-8")
}

/// The names below `dir`, recursively (readdir only: no file is opened or sized).
fn tree_names(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("ls")
        .map(|e| e.expect("entry"))
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = format!("{prefix}/{}", e.file_name().to_string_lossy());
        if e.file_type().expect("type").is_dir() {
            tree_names(&e.path(), &name, out);
        }
        out.push(name);
    }
}

/// `snapshots/<id>/partitions/<field>=<value>/…/data.{csv,parquet}` hold the rows of
/// the data files of each partition tuple; under `cat=<v>` they are exactly `icefloe cat
/// --where "cat = '<v>'"` (`IS NULL` for Hive's null directory) at every snapshot; listing
/// them reads no data file (they list alike in a copy whose data and delete files are gone).
#[test]
fn partition_directories_hold_the_rows_of_their_partition() {
    let table = table_dir("partitioned");
    let m = Mount::new(&table, &[]);
    let snaps: Vec<_> = all_snapshots()
        .into_iter()
        .filter(|s| s.table == "partitioned")
        .collect();
    let mut compared = 0;
    let mut listings = Vec::new();
    for s in &snaps {
        let root = m
            .path()
            .join("snapshots")
            .join(s.snapshot_id.to_string())
            .join("partitions");
        let mut leaves = Vec::new();
        partition_leaves(&root, &root, &mut leaves);
        let mut tops: Vec<String> = std::fs::read_dir(&root)
            .expect("ls partitions")
            .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
            .collect();
        tops.sort();
        assert!(!tops.is_empty(), "snapshot {}", s.snapshot_id);
        for top in &tops {
            let value = top.strip_prefix("cat=").expect("cat is the first field");
            let filter = if value == "__HIVE_DEFAULT_PARTITION__" {
                "cat IS NULL".to_string()
            } else {
                format!("cat = '{}'", hive_unescape(value).replace('\'', "''"))
            };
            let want = run(Command::new(ICEFLOE).arg("cat").arg(&table).args([
                "--lineage",
                "--format",
                "csv",
                "--snapshot",
                &s.snapshot_id.to_string(),
                "--where",
                &filter,
            ]))
            .stdout;
            let mut want: Vec<String> = String::from_utf8(want)
                .unwrap()
                .lines()
                .skip(1)
                .map(str::to_string)
                .collect();
            let mut got: Vec<String> = leaves
                .iter()
                .filter(|(p, _)| p.starts_with(&format!("{top}/")))
                .flat_map(|(_, rows)| rows.clone())
                .collect();
            want.sort();
            got.sort();
            assert_eq!(got, want, "snapshot {} {top}", s.snapshot_id);
            compared += 1;
        }
        // Every leaf's Parquet view holds its CSV view's rows.
        let (leaf, rows) = leaves.last().expect("a leaf");
        let parquet = std::fs::read(root.join(leaf).with_file_name("data.parquet")).unwrap();
        assert_eq!(parquet_rows(parquet).len(), rows.len(), "{leaf}");
        let mut names = Vec::new();
        tree_names(&root, "", &mut names);
        listings.push(names);
    }
    assert!(compared >= 8, "{compared} partition directories compared");
    drop(m);
    // Listing reads manifests only: a copy without data files lists the same tree.
    let copy = copy_table(&table);
    for e in std::fs::read_dir(copy.path().join("data")).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            std::fs::remove_dir_all(&p).unwrap();
        } else {
            std::fs::remove_file(&p).unwrap();
        }
    }
    let m = Mount::new(copy.path(), &[]);
    for (s, want) in snaps.iter().zip(&listings) {
        let root = m
            .path()
            .join("snapshots")
            .join(s.snapshot_id.to_string())
            .join("partitions");
        let mut names = Vec::new();
        tree_names(&root, "", &mut names);
        assert_eq!(&names, want, "snapshot {}", s.snapshot_id);
    }
}

/// In the mount: `current` and a branch read with the table's current schema
/// (schema_rule: a column added and one renamed after the last snapshot, no new snapshot), a
/// tag and `snapshots/<id>` with the snapshot's schema. Each view equals Spark's rows and
/// columns for that read (tests/fixtures/exact, tests/gen/exact_sem.py).
#[test]
fn current_and_branches_read_with_the_current_schema() {
    let exact = fixtures_dir().join("exact");
    let table = exact.join("warehouse/db/schema_rule");
    let expected = |name: &str| -> Vec<Value> {
        std::fs::read_to_string(exact.join(format!("expected/schema_rule/{name}.jsonl")))
            .expect("expected rows")
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON"))
            .collect()
    };
    let m = Mount::new(&table, &[]);
    let check = |rel: &str, name: &str| {
        let want = expected(name);
        let csv = std::fs::read(m.path().join(rel).join("data.csv")).expect(rel);
        let records = parse_csv(std::str::from_utf8(&csv).expect("UTF-8"));
        let header: Vec<&str> = records[0].iter().map(|(c, _)| c.as_str()).collect();
        let want_cols: Vec<&str> = want[0]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(header, want_cols, "{rel}: columns");
        let got = csv_to_rows(&records, &want);
        assert_eq!(diff_rows(&got, &want), None, "{rel}");
    };
    check("current", "current");
    check("refs/main", "current");
    check("refs/dev", "branch-dev");
    check("refs/before_b", "tag-before_b");
    // The links say which schema: the current one for current and branches.
    let t = std::fs::read_link(m.path().join("current")).expect("current");
    let t = t.to_str().unwrap();
    assert!(t.starts_with("schemas/"), "{t}");
    let tag = std::fs::read_link(m.path().join("refs/before_b")).expect("tag");
    assert!(tag.starts_with("../snapshots/"), "{}", tag.display());
    // A snapshot id reads with its own schema, as Spark's VERSION AS OF does.
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(exact.join("expected/schema_rule/manifest.json")).expect("manifest"),
    )
    .expect("JSON");
    let mut ids = 0;
    for r in manifest["reads"].as_array().unwrap() {
        if let Some(id) = r["selector"]["snapshot"].as_i64() {
            check(&format!("snapshots/{id}"), r["name"].as_str().unwrap());
            ids += 1;
        }
    }
    assert!(ids >= 3);
    // snapshot.json of the current view names the schema it is read with.
    let j: Value = serde_json::from_slice(
        &std::fs::read(m.path().join("current/snapshot.json")).expect("snapshot.json"),
    )
    .expect("JSON");
    let names: Vec<&str> = j["schema"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["id", "a_renamed", "c"]);
}

/// `icefloe mount` takes the table-opening flags: `--metadata-file` mounts an older version
/// of the table (v3_basic's v3.metadata.json), whose current snapshot is another one.
#[test]
fn mount_takes_the_metadata_file_flags() {
    let table = table_dir("v3_basic");
    let v3: Value = serde_json::from_slice(
        &std::fs::read(table.join("metadata/v3.metadata.json")).expect("v3"),
    )
    .expect("JSON");
    let old = v3["current-snapshot-id"].as_i64().expect("current");
    let m = Mount::new(&table, &["--metadata-file", "v3.metadata.json"]);
    let link = std::fs::read_link(m.path().join("current")).expect("current");
    assert_eq!(link, PathBuf::from(format!("snapshots/{old}")));
    let listed = std::fs::read_dir(m.path().join("snapshots"))
        .expect("ls")
        .count();
    assert_eq!(listed, v3["snapshots"].as_array().unwrap().len());
    assert_eq!(
        std::fs::read(m.path().join("current/data.csv")).expect("read"),
        cat_csv(&table, old)
    );
}

/// The cases of `tests/fixtures/changes/expected/<table>/cases.json`.
fn change_cases(table: &str) -> Value {
    let p = fixtures_dir().join(format!("changes/expected/{table}/cases.json"));
    serde_json::from_str(&std::fs::read_to_string(p).expect("cases.json")).expect("json")
}

fn jsonl_file(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

/// `changes/<A>..<B>/` holds the change feed: every recorded range of the Spark table (MoR
/// and CoW updates, MERGE, a delete, a no-op update, a branch) reads as the rows Spark's
/// `VERSION AS OF` reads give, in every format, byte for byte what `icefloe changes` writes;
/// consecutive pairs are listed, any ancestor pair is there on lookup, and a pair that is not
/// (main's head after the branch's) is ENOENT with a log line. `retention.csv` is what
/// `icefloe retention --format csv` prints.
#[test]
fn change_ranges_hold_the_change_feed_and_retention_csv_the_dry_run() {
    const ENOENT: i32 = 2;
    let cases = change_cases("feed");
    let table = fixtures_dir()
        .join("changes")
        .join(cases["table_dir"].as_str().expect("table_dir"));
    let m = Mount::new(&table, &[]);
    let changes = m.path().join("changes");
    let mut listed: Vec<String> = std::fs::read_dir(&changes)
        .expect("ls changes")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .collect();
    listed.sort();
    let mut want: Vec<String> = cases["snapshots"]
        .as_array()
        .expect("snapshots")
        .iter()
        .filter(|s| !s["parent"].is_null())
        .map(|s| format!("{}..{}", s["parent"], s["snapshot_id"]))
        .collect();
    want.sort();
    assert_eq!(listed, want, "one directory per snapshot and its parent");
    assert_eq!(want.len(), 8, "nine snapshots, one without a parent");

    let cli = |c: &Value, format: &str, net: bool| {
        let mut cmd = Command::new(ICEFLOE);
        cmd.arg("changes")
            .arg(&table)
            .args(["--from", &c["from_snapshot"].to_string()])
            .args(["--to", &c["to_snapshot"].to_string()])
            .args(["--format", format]);
        if net {
            cmd.arg("--net");
        }
        run(&mut cmd).stdout
    };
    let mut checked = 0;
    for c in cases["cases"].as_array().expect("cases") {
        let name = c["name"].as_str().expect("name");
        if !c["key"].is_null() {
            continue; // matched by key: no directory of the mount reads that way
        }
        let dir = changes.join(format!("{}..{}", c["from_snapshot"], c["to_snapshot"]));
        if c["error"].as_str() == Some("not_ancestor") {
            assert_eq!(errno(std::fs::metadata(&dir)), Some(ENOENT), "{name}");
            assert!(
                m.log_text().contains("is not an ancestor of"),
                "the refused pair is logged:\n{}",
                m.log_text()
            );
            checked += 1;
            continue;
        }
        let want = jsonl_file(&fixtures_dir().join(format!("changes/expected/feed/{name}.jsonl")));
        let net = c["net"].as_bool() == Some(true);
        let csv = std::fs::read(dir.join(if net { "net.csv" } else { "data.csv" }))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            String::from_utf8_lossy(&csv),
            String::from_utf8_lossy(&cli(c, "csv", net)),
            "{name}: the CSV is what icefloe changes writes"
        );
        let got = csv_to_rows(&parse_csv(std::str::from_utf8(&csv).expect("utf-8")), &want);
        if let Some(d) = diff_rows(&got, &want) {
            panic!("{name} (csv): {d}");
        }
        if !net {
            let got = jsonl_file(&dir.join("data.jsonl"));
            assert_eq!(
                got.len(),
                c["rows"].as_u64().expect("rows") as usize,
                "{name}"
            );
            if let Some(d) = diff_rows(&got, &want) {
                panic!("{name} (jsonl): {d}");
            }
            let got = parquet_rows(std::fs::read(dir.join("data.parquet")).expect("parquet"));
            if let Some(d) = diff_rows(&got, &want) {
                panic!("{name} (parquet): {d}");
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 13, "every case but the keyed one");

    let retention = std::fs::read(m.path().join("retention.csv")).expect("retention.csv");
    let want = run(Command::new(ICEFLOE)
        .arg("retention")
        .arg(&table)
        .args(["--format", "csv"]))
    .stdout;
    assert_eq!(
        String::from_utf8_lossy(&retention),
        String::from_utf8_lossy(&want)
    );
    let text = String::from_utf8_lossy(&retention);
    assert!(
        text.lines().filter(|l| l.starts_with("snapshot,")).count() == 9,
        "one line per snapshot:\n{text}"
    );
}

/// The files of the Parquet views' part stores under a spill directory.
fn parts_on_disk(spill: &Path) -> usize {
    std::fs::read_dir(spill)
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with("icefloe-parts-")
                })
                .map(|e| std::fs::read_dir(e.path()).map(|f| f.count()).unwrap_or(0))
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn a_parquet_cache_smaller_than_one_view_still_serves_its_bytes() {
    let table = table_dir("v3_dv_large");
    let spill = tempfile::tempdir().expect("spill parent");
    let small = Mount::spawn(
        Some(&table),
        &[
            "--max-cache-size",
            "1",
            "--spill-dir",
            spill.path().to_str().expect("utf-8"),
        ],
        &[("ICEFLOE_LOG", "icefloe_fuse=debug")],
    );
    let roomy = Mount::new(&table, &[]);
    let want = std::fs::read(roomy.path().join("current/data.parquet")).expect("read");
    let f = File::open(small.path().join("current/data.parquet")).expect("open");
    assert_eq!(f.metadata().expect("stat").len(), want.len() as u64);
    // Sizing the views of the other snapshots evicts the parts of this one.
    for e in std::fs::read_dir(small.path().join("snapshots")).expect("ls") {
        let other = e.expect("entry").path().join("data.parquet");
        assert!(std::fs::metadata(&other).expect("stat").len() > 0);
    }
    // Backwards, in odd steps: every part read was evicted since it was sized, and is encoded
    // again; at most one part (and one being made) is on disk at a time.
    let mut got = vec![0u8; want.len()];
    let mut end = want.len();
    while end > 0 {
        let start = end.saturating_sub(100_003);
        f.read_exact_at(&mut got[start..end], start as u64)
            .expect("read");
        assert!(
            parts_on_disk(spill.path()) <= 2,
            "parts held beyond the bound"
        );
        end = start;
    }
    assert!(got == want, "bytes differ from a mount with a large cache");
    assert!(
        small.log_text().contains("encoded again after eviction"),
        "no part was encoded again:\n{}",
        small.log_text()
    );
    assert_eq!(parquet_rows(got), parquet_rows(want));
}

/// The mount's counters: the `user.icefloe.stats` extended attribute of its root (JSON).
fn stats(m: &Mount) -> Value {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(m.path().as_os_str().as_bytes()).expect("path");
    let name = c"user.icefloe.stats";
    let mut buf = vec![0u8; 4096];
    // SAFETY: both strings are NUL-terminated and `buf` is writable for its length.
    let n = unsafe {
        libc::getxattr(
            path.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    assert!(n >= 0, "getxattr: {}", std::io::Error::last_os_error());
    buf.truncate(n as usize);
    serde_json::from_slice(&buf).expect("stats JSON")
}

/// The `data.csv` view of every fixture snapshot, with the snapshot.
fn every_data_csv(m: &Mount) -> Vec<(PathBuf, i64)> {
    all_snapshots()
        .iter()
        .map(|s| {
            let dir = m.path().join("db").join(&s.table).join("snapshots");
            (
                dir.join(s.snapshot_id.to_string()).join("data.csv"),
                s.snapshot_id,
            )
        })
        .collect()
}

#[test]
fn forgotten_entries_let_go_of_their_views_and_read_the_same_again() {
    let m = Mount::new(&warehouse(), &["--max-inodes", "64"]);
    let views = every_data_csv(&m);
    // Every snapshot visited: each view sized, planned and read once.
    let mut first = Vec::new();
    for (p, _) in &views {
        let ino = std::fs::metadata(p).expect("stat").ino();
        first.push((ino, std::fs::read(p).expect("read")));
    }
    // The mount asked the kernel to forget the least recently used entries; once it has, the
    // inode table, plans and offset indexes are back within the bound.
    let start = Instant::now();
    let s = loop {
        let s = stats(&m);
        if s["inodes"].as_u64().expect("inodes") <= 64 || start.elapsed() > Duration::from_secs(20)
        {
            break s;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let n = views.len() as u64;
    assert!(
        s["inodes"].as_u64().unwrap() <= 64,
        "{s} after {n} snapshots"
    );
    assert!(
        s["plans"].as_u64().unwrap() < n / 2,
        "{s} after {n} snapshots"
    );
    assert!(
        s["csv_views"].as_u64().unwrap() < n / 2,
        "{s} after {n} snapshots"
    );
    // Looked up again (new inode numbers: the old ones were dropped), the views read the same
    // bytes, which are the CLI's.
    let mut renumbered = 0;
    for ((p, id), (ino, bytes)) in views.iter().zip(&first) {
        let again = std::fs::metadata(p).expect("stat").ino();
        renumbered += usize::from(again != *ino);
        let got = std::fs::read(p).expect("read");
        assert!(got == *bytes, "{} differs after forget", p.display());
        if again != *ino && renumbered <= 3 {
            let table = p
                .ancestors()
                .nth(3)
                .expect("table")
                .file_name()
                .expect("name");
            assert!(
                got == cat_csv(&table_dir(table.to_str().unwrap()), *id),
                "{}",
                p.display()
            );
        }
    }
    assert!(
        renumbered > views.len() / 2,
        "{renumbered} of {} views forgotten",
        views.len()
    );
}

#[test]
fn a_table_removed_from_the_warehouse_vanishes_and_its_open_files_fail_with_estale() {
    let wh = tempfile::tempdir().expect("warehouse");
    for t in ["v3_dv_large", "v3_basic"] {
        icefloe_testkit::copy_dir(&table_dir(t), &wh.path().join("db").join(t));
    }
    let m = Mount::new(wh.path(), &[]);
    let listed = |m: &Mount| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(m.path().join("db"))
            .expect("ls db")
            .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
            .collect();
        v.sort();
        v
    };
    assert_eq!(listed(&m), ["v3_basic", "v3_dv_large"]);
    let view = m.path().join("db/v3_dv_large/current/data.csv");
    // Not read whole: the kernel caches only the head read below.
    let want = run(Command::new(ICEFLOE)
        .arg("cat")
        .arg(wh.path().join("db/v3_dv_large"))
        .args(["--lineage", "--format", "csv"]))
    .stdout;
    let open = File::open(&view).expect("open");
    let mut head = vec![0u8; 16];
    open.read_exact_at(&mut head, 0).expect("read open file");
    assert_eq!(head, want[..16]);

    std::fs::remove_dir_all(wh.path().join("db/v3_dv_large")).expect("drop the table");
    let start = Instant::now();
    while listed(&m) != ["v3_basic"] {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "still listed: {:?}",
            listed(&m)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(errno(std::fs::metadata(&view)), Some(libc::ENOENT));
    // A read of the open file the kernel has not cached (its end) fails: never stale bytes.
    assert!(want.len() > 512 << 10, "{} bytes", want.len());
    let mut buf = vec![0u8; 16];
    let at = want.len() as u64 - 16;
    assert_eq!(errno(open.read_exact_at(&mut buf, at)), Some(libc::ESTALE));
    assert!(m.log_text().contains("gone"), "{}", m.log_text());
    // The other table still reads.
    let other =
        std::fs::read(m.path().join("db/v3_basic/current/data.csv")).expect("read v3_basic");
    assert!(!other.is_empty());
}

#[test]
fn ls_stat_and_small_reads_answer_while_renders_hold_the_render_pool() {
    let gate_dir = tempfile::tempdir().expect("gate dir");
    let gate = gate_dir.path().join("gate");
    let m = Mount::spawn(
        Some(&warehouse()),
        &[],
        &[("ICEFLOE_FUSE_TEST_GATE", gate.to_str().expect("utf-8"))],
    );
    // Four first sizings (`stat data.csv`), held by the test hook on the render threads.
    let tables = ["v3_basic", "v3_types", "v3_lineage", "v3_dv_large"];
    let sizers: Vec<_> = tables
        .iter()
        .map(|t| {
            let p = m.path().join("db").join(t).join("current/data.csv");
            std::thread::spawn(move || std::fs::metadata(&p).map(|md| md.len()))
        })
        .collect();
    let started = || {
        std::fs::read_dir(gate_dir.path())
            .expect("gate dir")
            .filter(|e| {
                let name = e.as_ref().expect("entry").file_name();
                name.to_string_lossy().starts_with("gate.started-")
            })
            .count()
    };
    let start = Instant::now();
    while started() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no sizing started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Meanwhile `ls`, `stat` and a read of another table answer.
    let (tx, rx) = std::sync::mpsc::channel();
    let root = m.path().to_path_buf();
    std::thread::spawn(move || {
        let r = (|| -> std::io::Result<(usize, u64, Vec<u8>)> {
            let n = std::fs::read_dir(root.join("db/v3_geo/snapshots"))?.count();
            let len = std::fs::metadata(root.join("db/v3_geo/current/snapshot.json"))?.len();
            let csv = std::fs::read(root.join("db/v3_geo/snapshots.csv"))?;
            Ok((n, len, csv))
        })();
        let _ = tx.send(r);
    });
    let (n, len, csv) = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("ls, stat and cat answered while renders held every render thread")
        .expect("ls, stat and cat");
    assert!(
        n >= 1 && len > 0,
        "{n} snapshots, snapshot.json {len} bytes"
    );
    let snapshots = run(Command::new(ICEFLOE)
        .arg("snapshots")
        .arg(table_dir("v3_geo"))
        .args(["--format", "csv"]))
    .stdout;
    assert_eq!(csv, snapshots);
    assert!(
        sizers.iter().all(|h| !h.is_finished()),
        "a sizing went past the gate"
    );
    // Released, the sizings finish with the CLI's sizes.
    std::fs::write(&gate, b"").expect("open the gate");
    for (t, h) in tables.iter().zip(sizers) {
        let got = h.join().expect("sizer").expect("stat data.csv");
        let want = run(Command::new(ICEFLOE).arg("cat").arg(table_dir(t)).args([
            "--lineage",
            "--format",
            "csv",
        ]))
        .stdout
        .len() as u64;
        assert_eq!(got, want, "{t}");
    }
}

/// Tables with deletes (positional, equality, deletion vectors) and an evolved schema, whose
/// views the index tests size and read.
const INDEXED: [&str; 3] = ["schema_evolution", "equality_deletes_v3", "v3_dv_large"];

/// Every view (`data.csv`, `data.parquet`, `files/*`) of every snapshot of the [`INDEXED`]
/// tables, relative to the mount, with its table and snapshot.
fn indexed_views(m: &Mount) -> Vec<(PathBuf, &'static str, i64)> {
    let mut out = Vec::new();
    for t in INDEXED {
        for s in all_snapshots().iter().filter(|s| s.table == t) {
            let dir = PathBuf::from(format!("db/{t}/snapshots/{}", s.snapshot_id));
            out.push((dir.join("data.csv"), t, s.snapshot_id));
            out.push((dir.join("data.parquet"), t, s.snapshot_id));
            let files = std::fs::read_dir(m.path().join(&dir).join("files")).expect("ls files");
            let mut names: Vec<PathBuf> = files
                .map(|e| dir.join("files").join(e.expect("entry").file_name()))
                .collect();
            names.sort();
            out.extend(names.into_iter().map(|p| (p, t, s.snapshot_id)));
        }
    }
    out
}

/// Mounts the warehouse with the on-disk index in `cache`.
fn indexed_mount(cache: &Path) -> Mount {
    Mount::new(
        &warehouse(),
        &["--cache-dir", cache.to_str().expect("utf-8")],
    )
}

/// Stats every view (sizes only: `ls -l`), then reads each whole; `data.csv` must be what
/// `icefloe cat` prints.
fn size_then_read(m: &Mount, views: &[(PathBuf, &str, i64)]) -> Vec<(u64, Vec<u8>)> {
    let sizes: Vec<u64> = views
        .iter()
        .map(|(p, _, _)| std::fs::metadata(m.path().join(p)).expect("stat").len())
        .collect();
    let mut out = Vec::new();
    for ((p, t, s), size) in views.iter().zip(sizes) {
        let bytes = std::fs::read(m.path().join(p))
            .unwrap_or_else(|e| panic!("read {}: {e}\n{}", p.display(), m.log_text()));
        assert_eq!(bytes.len() as u64, size, "{}", p.display());
        if p.ends_with("data.csv") {
            assert!(
                bytes == cat_csv(&table_dir(t), *s),
                "{} differs from cat",
                p.display()
            );
        }
        out.push((size, bytes));
    }
    out
}

/// The entry files of an index directory.
fn index_entries(cache: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> =
        std::fs::read_dir(cache.join(format!("index-v{}", icefloe_fuse::index::FORMAT_VERSION)))
            .expect("index directory")
            .map(|e| e.expect("entry").path())
            .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
            .collect();
    out.sort();
    out
}

/// The key an entry names (its text after the magic, checksum and key length).
fn entry_key(entry: &[u8]) -> String {
    let n = u32::from_le_bytes(entry[12..16].try_into().unwrap()) as usize;
    String::from_utf8(entry[16..16 + n].to_vec()).expect("key text")
}

/// A remount with the same `--cache-dir` sizes every view from the on-disk index
/// (no counting pass, no encoding: nothing written), and serves the same bytes.
#[test]
fn a_remount_sizes_from_the_index_and_serves_the_same_bytes() {
    let cache = tempfile::tempdir().expect("cache dir");
    let first = indexed_mount(cache.path());
    let views = indexed_views(&first);
    let want = size_then_read(&first, &views);
    let s = stats(&first);
    assert_eq!(s["index"], true);
    assert_eq!(s["index_hits"], 0, "{s}");
    let written = s["index_written"].as_u64().expect("written");
    assert!(written >= views.len() as u64 / 2, "{s}");
    drop(first);
    assert_eq!(index_entries(cache.path()).len() as u64, written);
    let again = indexed_mount(cache.path());
    let sizes: Vec<u64> = views
        .iter()
        .map(|(p, _, _)| std::fs::metadata(again.path().join(p)).expect("stat").len())
        .collect();
    let s = stats(&again);
    assert_eq!(s["index_hits"].as_u64(), Some(written), "{s}");
    assert_eq!(
        s["index_written"], 0,
        "sized again instead of from the index: {s}"
    );
    assert_eq!(s["index_rejected"], 0, "{s}");
    assert_eq!(sizes, want.iter().map(|(n, _)| *n).collect::<Vec<_>>());
    // The parts of the Parquet views are encoded on first read, checked against the index.
    let got = size_then_read(&again, &views);
    for (((p, _, _), g), w) in views.iter().zip(&got).zip(&want) {
        assert!(g.1 == w.1, "{} differs after the remount", p.display());
    }
}

/// Entries that are corrupt (a flipped byte, truncated, garbage) or of another key
/// (an entry of one snapshot copied over another's) are ignored with a warning and sized
/// again; the bytes are still those of `icefloe cat`, and the entries are rewritten sound.
#[test]
fn corrupt_index_entries_are_ignored_and_the_views_sized_again() {
    let cache = tempfile::tempdir().expect("cache dir");
    let first = indexed_mount(cache.path());
    let views = indexed_views(&first);
    let want = size_then_read(&first, &views);
    drop(first);
    let entries = index_entries(cache.path());
    // A CSV layout entry of another snapshot than each CSV entry's own.
    let keys: Vec<String> = entries
        .iter()
        .map(|e| entry_key(&std::fs::read(e).expect("read entry")))
        .collect();
    let snapshot_of = |k: &str| {
        k.lines()
            .find_map(|l| l.strip_prefix("snapshot "))
            .map(str::to_string)
    };
    let mut corrupted = 0;
    for (i, e) in entries.iter().enumerate() {
        let mut bytes = std::fs::read(e).expect("read entry");
        match i % 5 {
            0 => {
                let at = (bytes.len() / 2 + i % 7).min(bytes.len() - 1);
                bytes[at] ^= 0x01;
            }
            1 => bytes.truncate(bytes.len() * 2 / 3),
            2 => bytes = b"\x00garbage, not an entry at all".repeat(i + 1),
            3 => {
                let kind = e.extension().expect("kind");
                let other = entries.iter().zip(&keys).find(|(o, k)| {
                    o.extension() == Some(kind) && snapshot_of(k) != snapshot_of(&keys[i])
                });
                let Some((o, _)) = other else { continue };
                bytes = std::fs::read(o).expect("read entry");
            }
            _ => continue,
        }
        std::fs::write(e, bytes).expect("corrupt entry");
        corrupted += 1;
    }
    assert!(corrupted >= 4, "{corrupted} of {} entries", entries.len());
    let again = indexed_mount(cache.path());
    let got = size_then_read(&again, &views);
    for (((p, _, _), g), w) in views.iter().zip(&got).zip(&want) {
        assert!(g.1 == w.1, "{} differs after corruption", p.display());
    }
    let s = stats(&again);
    assert_eq!(s["index_rejected"].as_u64(), Some(corrupted), "{s}");
    assert_eq!(s["index_written"].as_u64(), Some(corrupted), "{s}");
    assert!(
        again.log_text().contains("ignored, sized again"),
        "{}",
        again.log_text()
    );
    drop(again);
    // Rewritten: a third mount takes every entry.
    let third = indexed_mount(cache.path());
    for (p, _, _) in &views {
        std::fs::metadata(third.path().join(p)).expect("stat");
    }
    let s = stats(&third);
    assert_eq!(
        (s["index_rejected"].as_u64(), s["index_written"].as_u64()),
        (Some(0), Some(0)),
        "{s}"
    );
}

/// A cache directory that cannot be created or written (on a read-only file
/// system, below a regular file) leaves the mount without an index, with a warning; a missing
/// one is created.
#[test]
fn an_unusable_cache_dir_still_mounts_without_an_index() {
    let scratch = tempfile::tempdir().expect("scratch");
    let file = scratch.path().join("a-file");
    std::fs::write(&file, b"").expect("file");
    let table = table_dir("v3_dv_large");
    for dir in [PathBuf::from("/proc/icefloe-index"), file.join("index")] {
        let m = Mount::new(&table, &["--cache-dir", dir.to_str().expect("utf-8")]);
        let id: i64 = std::fs::read_link(m.path().join("current"))
            .expect("current")
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse().ok())
            .expect("current -> snapshots/<id>");
        let csv = std::fs::read(m.path().join("current/data.csv")).expect("read");
        assert!(csv == cat_csv(&table, id), "{}", dir.display());
        let s = stats(&m);
        assert_eq!(
            (s["index"].as_bool(), s["index_written"].as_u64()),
            (Some(false), Some(0)),
            "{s}"
        );
        assert!(
            m.log_text().contains("sized without an index"),
            "{}",
            m.log_text()
        );
    }
    let missing = scratch.path().join("not/yet/there");
    let m = Mount::new(&table, &["--cache-dir", missing.to_str().expect("utf-8")]);
    std::fs::metadata(m.path().join("current/data.csv")).expect("stat");
    let s = stats(&m);
    assert_eq!(s["index"], true, "{s}");
    assert!(s["index_written"].as_u64() > Some(0), "{s}");
    assert!(!index_entries(&missing).is_empty());
}

/// `icefloe cat --format jsonl --lineage` of one snapshot.
fn cat_jsonl(table: &Path, snapshot: i64) -> Vec<u8> {
    run(Command::new(ICEFLOE).arg("cat").arg(table).args([
        "--lineage",
        "--format",
        "jsonl",
        "--snapshot",
        &snapshot.to_string(),
    ]))
    .stdout
}

/// `data.jsonl` (and `files/*.jsonl`) beside `data.csv` are the bytes of
/// `icefloe cat --format jsonl --lineage` of the snapshot, on tables with deletes and evolved
/// schemas, read whole and at random offsets; every line is one JSON object.
#[test]
fn data_jsonl_is_what_cat_prints_as_json_lines() {
    let m = Mount::new(&warehouse(), &[]);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n.max(1)
    };
    let mut files_seen = 0;
    for t in INDEXED {
        for s in all_snapshots().iter().filter(|s| s.table == t) {
            let dir = m.path().join(format!("db/{t}/snapshots/{}", s.snapshot_id));
            let want = cat_jsonl(&table_dir(t), s.snapshot_id);
            let view = dir.join("data.jsonl");
            assert_eq!(
                std::fs::metadata(&view).expect("stat").len(),
                want.len() as u64,
                "{}",
                view.display()
            );
            let f = File::open(&view).expect("open");
            for _ in 0..20 {
                let at = next(want.len() as u64 + 1);
                let n = next(200_000) as usize + 1;
                let end = (at as usize + n).min(want.len());
                let mut buf = vec![0u8; end - at as usize];
                f.read_exact_at(&mut buf, at).expect("read");
                assert!(buf == want[at as usize..end], "{} at {at}", view.display());
            }
            let got = std::fs::read(&view).expect("read");
            assert!(got == want, "{} differs from cat", view.display());
            let rows: Vec<Value> = String::from_utf8(got)
                .expect("utf-8")
                .lines()
                .map(|l| serde_json::from_str(l).expect("a JSON line"))
                .collect();
            assert!(rows
                .iter()
                .all(|r| r.is_object() && r.get("_row_id").is_some()));
            // The per-file views hold the same lines.
            let mut from_files = 0;
            for e in std::fs::read_dir(dir.join("files")).expect("ls files") {
                let p = e.expect("entry").path();
                if p.extension().is_some_and(|x| x == "jsonl") {
                    let text = std::fs::read_to_string(&p).expect("read file view");
                    from_files += text.lines().count();
                    files_seen += 1;
                }
            }
            assert_eq!(from_files, rows.len(), "{}", dir.display());
        }
    }
    assert!(files_seen > 0);
}
