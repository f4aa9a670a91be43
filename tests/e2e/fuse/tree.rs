//! The tree of the mount and how it lists: a table's root (`current`, `refs/`, `snapshots/`,
//! `snapshots.csv`), `statfs`, mounts of a path with commas, of a warehouse on S3 and of a REST
//! catalog, and the partition directories.

use std::path::{Path, PathBuf};
use std::process::Command;

use icefloe_testkit::{all_snapshots, copy_table, csv_to_rows, diff_rows, parse_csv};

use crate::common::{cat_csv, parquet_rows, run, table_dir, ICEFLOE};
use crate::mount::Mount;

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
