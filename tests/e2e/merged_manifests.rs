//! Planning a table whose manifests hold many entries each, as Iceberg Java's default append
//! (MergeAppend) merges them: the plan lists the same files, in the same order (manifest list
//! order, then entry order), as the entries of the whole decoded manifests, with and without
//! a filter; and a selective filter keeps about the entries it matches while planning, not
//! the manifests decoded whole. A test binary of its own, since it counts every allocation
//! of the process.

use std::collections::BTreeMap;

use apache_avro::types::Value as Avro;
use futures::TryStreamExt;
use icefloe_core::cache::Caches;
use icefloe_core::expr::parse;
use icefloe_core::scan::plan::load_manifest;
use icefloe_core::spec::{EntryStatus, Literal, ManifestContent};
use icefloe_core::{Scan, Table};
use icefloe_testkit::alloc::{self, Counting};
use icefloe_testkit::rewrite::expand_avro_records;
use icefloe_testkit::{copy_table, fixtures_dir};

#[global_allocator]
static GLOBAL: Counting = Counting::new(usize::MAX);

/// How many times each entry of a data manifest is listed in the merged copy.
const COPIES: usize = 200;

/// One test at a time: the allocation counts are the whole process's.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Caches small enough that no manifest of the merged table fits (what a table of merged
/// 8 MB manifests is to the default caches); the same in every test of this binary.
fn small_caches() {
    Caches::init_global(8 << 20);
}

fn field<'a>(r: &'a mut [(String, Avro)], name: &str) -> Option<&'a mut Avro> {
    r.iter_mut().find(|(n, _)| n == name).map(|(_, v)| v)
}

fn record(v: &mut Avro) -> &mut Vec<(String, Avro)> {
    match v {
        Avro::Record(r) => r,
        Avro::Union(_, inner) => record(inner),
        other => panic!("not a record: {other:?}"),
    }
}

/// Multiplies a count (an `int` or `long`, through a union) by `k`.
fn scale(v: &mut Avro, k: i64) {
    match v {
        Avro::Int(n) => *n = (*n as i64 * k) as i32,
        Avro::Long(n) => *n *= k,
        Avro::Union(_, inner) => scale(inner, k),
        _ => {}
    }
}

/// A copy of the `partitioned` fixture whose current snapshot's data manifests each list
/// every entry [`COPIES`] times, the copies after the first under paths of their own, and
/// whose manifest list records the counts and lengths that go with them. Row ids are dropped
/// (the copies would otherwise share them; the list's warnings about it do not change the
/// plan).
async fn merged_table() -> tempfile::TempDir {
    let tmp = copy_table(&fixtures_dir().join("warehouse/db/partitioned"));
    let (list_path, data) = {
        let table = Table::open(tmp.path().to_str().unwrap()).await.unwrap();
        let s = table.metadata().current_snapshot().unwrap().clone();
        let list = table.manifest_list(&s).await.unwrap();
        let data: Vec<String> = list
            .iter()
            .filter(|mf| mf.content == ManifestContent::Data)
            .map(|mf| file_name(&mf.manifest_path))
            .collect();
        (file_name(s.manifest_list.as_deref().unwrap()), data)
    };
    let meta = tmp.path().join("metadata");
    for name in &data {
        expand_avro_records(&meta.join(name), |mut entry| {
            let df = record(field(record(&mut entry), "data_file").unwrap());
            if let Some(id) = field(df, "first_row_id") {
                *id = Avro::Union(0, Box::new(Avro::Null));
            }
            (0..COPIES)
                .map(|k| {
                    let mut e = entry.clone();
                    if k > 0 {
                        let df = record(field(record(&mut e), "data_file").unwrap());
                        if let Some(Avro::String(p)) = field(df, "file_path") {
                            *p = p.replace(".parquet", &format!("-copy{k}.parquet"));
                        }
                    }
                    e
                })
                .collect()
        });
    }
    expand_avro_records(&meta.join(&list_path), |mut mf| {
        let r = record(&mut mf);
        let Some(Avro::String(path)) = field(r, "manifest_path") else {
            panic!("manifest_path")
        };
        let name = file_name(path);
        if data.contains(&name) {
            for count in [
                "added_files_count",
                "existing_files_count",
                "deleted_files_count",
                "added_rows_count",
                "existing_rows_count",
                "deleted_rows_count",
            ] {
                scale(field(r, count).unwrap(), COPIES as i64);
            }
            let len = std::fs::metadata(meta.join(&name)).unwrap().len() as i64;
            *field(r, "manifest_length").unwrap() = Avro::Long(len);
            *field(r, "first_row_id").unwrap() = Avro::Union(0, Box::new(Avro::Null));
        }
        vec![mf]
    });
    // The list was read (and cached) before it was rewritten.
    Caches::global().manifest_lists.invalidate_all();
    tmp
}

fn file_name(p: &str) -> String {
    p.rsplit('/').next().unwrap().to_string()
}

/// The live data files of the current snapshot's data manifests, decoded whole, in manifest
/// list order then entry order, that `admit` admits.
async fn reference(
    table: &Table,
    admit: impl Fn(&icefloe_core::spec::DataFile) -> bool,
) -> Vec<String> {
    let s = table.metadata().current_snapshot().unwrap().clone();
    let list = table.manifest_list(&s).await.unwrap();
    let mut out = Vec::new();
    for mf in list.iter().filter(|mf| mf.content == ManifestContent::Data) {
        for e in load_manifest(table, mf).await.unwrap().iter() {
            if e.status != EntryStatus::Deleted && admit(&e.data_file) {
                out.push(e.data_file.file_path.clone());
            }
        }
    }
    out
}

fn paths(tasks: &[icefloe_core::FileScanTask]) -> Vec<String> {
    tasks
        .iter()
        .map(|t| t.data_file.file_path.clone())
        .collect()
}

/// The `cat` value (identity partition) of every live data file, counted.
async fn cats(table: &Table) -> BTreeMap<String, usize> {
    let s = table.metadata().current_snapshot().unwrap().clone();
    let mut out = BTreeMap::new();
    for t in Scan::builder()
        .build(table)
        .unwrap()
        .plan_files()
        .await
        .unwrap()
    {
        let spec = table
            .metadata()
            .partition_spec(t.data_file.spec_id)
            .unwrap();
        let k = spec.fields.iter().position(|f| f.name == "cat").unwrap();
        if let Some(Literal::String(c)) = &t.data_file.partition[k] {
            *out.entry(c.clone()).or_default() += 1;
        }
    }
    assert!(!out.is_empty(), "snapshot {}", s.snapshot_id);
    out
}

#[tokio::test]
async fn a_merged_manifest_plans_the_same_files_in_the_same_order() {
    let _serial = SERIAL.lock().await;
    small_caches();
    let started = std::time::Instant::now();
    let tmp = merged_table().await;
    eprintln!("merged table written in {:?}", started.elapsed());
    let table = Table::open(tmp.path().to_str().unwrap()).await.unwrap();
    let all = Scan::builder().build(&table).unwrap();
    let want = reference(&table, |_| true).await;
    assert!(want.len() >= 10 * COPIES, "{} files", want.len());
    assert_eq!(paths(&all.plan_files().await.unwrap()), want);
    let streamed: Vec<_> = all.plan_stream().try_collect().await.unwrap();
    assert_eq!(paths(&streamed), want);
    for cat in cats(&table).await.keys() {
        let scan = Scan::builder()
            .filter(parse(&format!("cat = '{cat}'")).unwrap())
            .build(&table)
            .unwrap();
        let pruner = scan.pruner().unwrap();
        let want = reference(&table, |f| pruner.may_match(f)).await;
        assert!(!want.is_empty(), "cat = {cat}");
        let (tasks, stats) = scan.plan_with_stats().await.unwrap();
        assert_eq!(paths(&tasks), want, "cat = {cat}");
        let streamed: Vec<_> = scan.plan_stream().try_collect().await.unwrap();
        assert_eq!(paths(&streamed), want, "cat = {cat}");
        eprintln!("cat = {cat}: {} files, {stats:?}", want.len());
    }
}

#[tokio::test]
async fn a_selective_filter_keeps_about_the_entries_it_matches() {
    let _serial = SERIAL.lock().await;
    small_caches();
    let tmp = merged_table().await;
    let table = Table::open(tmp.path().to_str().unwrap()).await.unwrap();
    let manifest_bytes: u64 = std::fs::read_dir(tmp.path().join("metadata"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let (cat, matching) = cats(&table)
        .await
        .into_iter()
        .min_by_key(|(_, n)| *n)
        .unwrap();

    let all = Scan::builder().build(&table).unwrap();
    let before = alloc::reset_peak();
    let tasks = all.plan_files().await.unwrap();
    let (peak_all, kept_all) = (alloc::peak() - before, alloc::live() - before);
    let files = tasks.len();
    drop(tasks);

    let scan = Scan::builder()
        .filter(parse(&format!("cat = '{cat}'")).unwrap())
        .build(&table)
        .unwrap();
    let before = alloc::reset_peak();
    let tasks = scan.plan_files().await.unwrap();
    let (peak, kept) = (alloc::peak() - before, alloc::live() - before);
    assert_eq!(tasks.len(), matching);
    drop(tasks);

    let per_file = kept_all / files;
    eprintln!(
        "{files} files ({manifest_bytes} bytes of metadata): the whole plan peaks at {peak_all} bytes and keeps {kept_all} ({per_file} a file); cat = {cat} matches {matching} files, peaks at {peak} bytes and keeps {kept}"
    );
    // What the plan keeps is its tasks: about the matching files.
    assert!(
        kept < 2 * matching * per_file + (1 << 20),
        "kept {kept} bytes for {matching} files of {per_file} bytes"
    );
    // While planning: the manifests' bytes in flight, a few chunks of entries per manifest
    // and a fingerprint per live file; never the decoded manifests (about the whole plan).
    assert!(
        (peak as u64) < manifest_bytes + kept_all as u64 / 4,
        "a plan keeping {matching} of {files} files peaked at {peak} bytes ({manifest_bytes} bytes of manifests, {kept_all} bytes of decoded entries)"
    );
}

/// Sets the first count of an entry's `value_counts` (through unions) to -1; false when it
/// has none.
fn negate_a_value_count(entry: &mut Avro) -> bool {
    fn first_count(v: &mut Avro) -> Option<&mut Avro> {
        match v {
            Avro::Union(_, inner) => first_count(inner),
            Avro::Array(items) => items.first_mut().and_then(|kv| field(record(kv), "value")),
            _ => None,
        }
    }
    let df = record(field(record(entry), "data_file").unwrap());
    match field(df, "value_counts").and_then(first_count) {
        Some(v) => {
            *v = Avro::Long(-1);
            true
        }
        None => false,
    }
}

#[tokio::test]
async fn an_entry_a_filter_rules_out_is_still_checked() {
    let _serial = SERIAL.lock().await;
    small_caches();
    // A negative value count in the first entry of a data manifest of the merged table (too
    // large for the cache, so planning decodes it as a stream): a filter on another `cat`
    // rules that entry out by its partition before its metrics are decoded, and the manifest
    // is refused all the same.
    let tmp = merged_table().await;
    let table = Table::open(tmp.path().to_str().unwrap()).await.unwrap();
    let (mf, other) = two_cat_manifest(&table, false).await;
    let mut edited = false;
    expand_avro_records(
        &tmp.path()
            .join("metadata")
            .join(file_name(&mf.manifest_path)),
        |mut e| {
            if !edited {
                edited = negate_a_value_count(&mut e);
                assert!(edited, "the first entry has value counts");
            }
            vec![e]
        },
    );
    Caches::global().manifests.invalidate_all();
    let scan = Scan::builder()
        .filter(parse(&format!("cat = '{other}'")).unwrap())
        .build(&table)
        .unwrap();
    let err = scan.plan_files().await.unwrap_err().to_string();
    assert!(
        err.contains("value_counts") && err.contains(&file_name(&mf.manifest_path)),
        "{err}"
    );
}

/// A data manifest holding files of two `cat` values (so that its partition summary cannot
/// skip it for either) whose first entry (first live entry if `live`) has a `cat`, and a
/// `cat` of another of its entries.
async fn two_cat_manifest(table: &Table, live: bool) -> (icefloe_core::spec::ManifestFile, String) {
    let s = table.metadata().current_snapshot().unwrap().clone();
    let list = table.manifest_list(&s).await.unwrap();
    for mf in list.iter().filter(|mf| mf.content == ManifestContent::Data) {
        let spec = table
            .metadata()
            .partition_spec(mf.partition_spec_id)
            .unwrap();
        let k = spec.fields.iter().position(|f| f.name == "cat").unwrap();
        let entries = load_manifest(table, mf).await.unwrap();
        let cat = |e: &icefloe_core::spec::ManifestEntry| match &e.data_file.partition[k] {
            Some(Literal::String(c)) => Some(c.clone()),
            _ => None,
        };
        let first = entries
            .iter()
            .find(|e| !live || e.status != EntryStatus::Deleted)
            .and_then(cat);
        let Some(first) = first else {
            continue;
        };
        if let Some(other) = entries.iter().filter_map(cat).find(|c| *c != first) {
            return (mf.clone(), other);
        }
    }
    panic!("no data manifest of two cat values");
}

/// The error of planning `table` with `filter` (none: every file), which must fail.
async fn plan_error(table: &Table, filter: Option<&str>) -> String {
    let mut scan = Scan::builder();
    if let Some(f) = filter {
        scan = scan.filter(parse(f).unwrap());
    }
    let scan = scan.build(table).unwrap();
    match scan.plan_files().await {
        Ok(tasks) => panic!("{filter:?}: planned {} files, should fail", tasks.len()),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn files_a_filter_rules_out_are_still_checked_against_every_other() {
    let _serial = SERIAL.lock().await;
    small_caches();
    // The first two live entries of a data manifest of the merged table (the first live file
    // and its first copy, one `cat`) given one path, then one row id range: a filter on
    // another `cat` rules both out (their entries go no further than the task decoding the
    // manifest), and the snapshot is refused all the same, naming the file.
    for edit in ["path", "row ids"] {
        let tmp = merged_table().await;
        let table = Table::open(tmp.path().to_str().unwrap()).await.unwrap();
        let (mf, other) = two_cat_manifest(&table, true).await;
        let mut seen = 0;
        let mut first_path = String::new();
        expand_avro_records(
            &tmp.path()
                .join("metadata")
                .join(file_name(&mf.manifest_path)),
            |mut e| {
                if field(record(&mut e), "status") == Some(&mut Avro::Int(2)) {
                    return vec![e]; // deleted
                }
                seen += 1;
                let df = record(field(record(&mut e), "data_file").unwrap());
                match (edit, seen) {
                    ("path", 1) => {
                        if let Some(Avro::String(p)) = field(df, "file_path") {
                            first_path = p.clone();
                        }
                    }
                    ("path", 2) => {
                        *field(df, "file_path").unwrap() = Avro::String(first_path.clone())
                    }
                    ("row ids", 1 | 2) => {
                        if let Some(Avro::String(p)) = field(df, "file_path") {
                            first_path = p.clone();
                        }
                        *field(df, "first_row_id").unwrap() =
                            Avro::Union(1, Box::new(Avro::Long(0)));
                    }
                    _ => {}
                }
                vec![e]
            },
        );
        Caches::global().manifests.invalidate_all();
        let want = match edit {
            "path" => "is live twice",
            _ => "share row ids",
        };
        let shown = file_name(&first_path);
        for filter in [None, Some(format!("cat = '{other}'"))] {
            let err = plan_error(&table, filter.as_deref()).await;
            assert!(
                err.contains(want) && err.contains(&shown),
                "{edit}, filter {filter:?}: {err}"
            );
        }
    }
}
