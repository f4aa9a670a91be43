//! The CLI's table-opening flags on scripted edits of copies of
//! v3_basic: `--metadata-file`, `--table-uuid`, `--latest-by-last-updated-ms`, metadata files
//! named without a version, and the repeatable `--path-map`.

use icefloe_testkit::run;

use std::path::Path;

use icefloe_testkit::rewrite::rewrite_paths;
use icefloe_testkit::rows::snapshots_of;
use icefloe_testkit::{copy_table, diff_rows, fixtures_dir};

fn table_dir(name: &str) -> std::path::PathBuf {
    fixtures_dir().join("warehouse/db").join(name)
}

fn edit_json(p: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(p, serde_json::to_vec(&v).unwrap()).unwrap();
}

/// `--path-map` (repeatable, first match wins): v3_basic's data files recorded on HDFS, read
/// from the local copy; a malformed entry is refused.
#[test]
fn cli_path_map() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let rec = "/tmp/iceberg-fixtures-warehouse/db/v3_basic/data/";
    rewrite_paths(tmp.path(), &|p| match p.strip_prefix(rec) {
        Some(name) => format!("hdfs://namenode:8020/warehouse/hive/v3_basic/{name}"),
        None => p.to_string(),
    });
    let root = tmp.path().to_str().unwrap().to_string();
    let v12: serde_json::Value = serde_json::from_slice(
        &std::fs::read(tmp.path().join("metadata/v12.metadata.json")).unwrap(),
    )
    .unwrap();
    let id = v12["current-snapshot-id"].as_i64().unwrap();
    let s = snapshots_of("v3_basic")
        .into_iter()
        .find(|s| s.snapshot_id == id)
        .unwrap();
    let out = run::stdout(&run::icefloe(&[
        "cat",
        &root,
        "--format",
        "jsonl",
        "--lineage",
        "--path-map",
        "s3://unused/prefix=/nowhere",
        "--path-map",
        &format!("hdfs://namenode:8020/warehouse/hive/v3_basic={root}/data"),
    ]));
    let got: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(diff_rows(&got, &s.expected_rows()), None);
    let o = run::icefloe(&["cat", &root, "--path-map", "no-equals-sign"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("OLD=NEW"));
}

/// The rows `icefloe cat DIR --format jsonl --lineage ARGS…` prints.
fn cli_rows(dir: &Path, args: &[&str]) -> Vec<serde_json::Value> {
    let d = dir.to_str().unwrap();
    let mut all = vec!["cat", d, "--format", "jsonl", "--lineage"];
    all.extend_from_slice(args);
    run::stdout(&run::icefloe(&all))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The expected rows of the snapshot current in metadata file `file` of a v3_basic copy.
fn rows_of_metadata_file(file: &Path) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let id = v["current-snapshot-id"].as_i64().unwrap();
    snapshots_of("v3_basic")
        .into_iter()
        .find(|s| s.snapshot_id == id)
        .unwrap()
        .expected_rows()
}

/// Item 12 through the CLI: `--metadata-file`, `--table-uuid`, `--latest-by-last-updated-ms`
/// and metadata files named without a version, on the same edits of v3_basic as above. Each
/// choice is told apart by its rows: the metadata files have different current snapshots.
#[test]
fn cli_metadata_file_flags() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let meta = tmp.path().join("metadata");
    let v12 = meta.join("v12.metadata.json");
    let orig: serde_json::Value = serde_json::from_slice(&std::fs::read(&v12).unwrap()).unwrap();
    let uuid = orig["table-uuid"].as_str().unwrap().to_string();
    let last = orig["last-updated-ms"].as_i64().unwrap();
    let v3 = rows_of_metadata_file(&meta.join("v3.metadata.json"));
    let v5 = rows_of_metadata_file(&meta.join("v5.metadata.json"));
    let latest = rows_of_metadata_file(&v12);
    assert_ne!(diff_rows(&v3, &latest), None, "v3 and v12 must differ");
    assert_ne!(diff_rows(&v5, &latest), None, "v5 and v12 must differ");

    let got = cli_rows(tmp.path(), &["--metadata-file", "v3.metadata.json"]);
    assert_eq!(diff_rows(&got, &v3), None);
    let abs = meta.join("v3.metadata.json");
    let got = cli_rows(tmp.path(), &["--metadata-file", abs.to_str().unwrap()]);
    assert_eq!(diff_rows(&got, &v3), None);

    // Another table's newest file beside ours; our v5 touched last.
    std::fs::remove_file(meta.join("version-hint.text")).unwrap();
    let other = meta.join("v13.metadata.json");
    std::fs::copy(meta.join("v3.metadata.json"), &other).unwrap();
    edit_json(&other, |v| {
        v["table-uuid"] = "0f0f0f0f-1111-2222-3333-444444444444".into();
        v["last-updated-ms"] = (last + 10_000).into();
    });
    edit_json(&meta.join("v5.metadata.json"), |v| {
        v["last-updated-ms"] = (last + 5_000).into();
    });
    // Default: the highest version (the other table's copy of v3).
    assert_eq!(diff_rows(&cli_rows(tmp.path(), &[]), &v3), None);
    let got = cli_rows(tmp.path(), &["--table-uuid", &uuid.to_uppercase()]);
    assert_eq!(diff_rows(&got, &latest), None);
    let got = cli_rows(
        tmp.path(),
        &["--table-uuid", &uuid, "--latest-by-last-updated-ms"],
    );
    assert_eq!(diff_rows(&got, &v5), None);
    let o = run::icefloe(&[
        "cat",
        tmp.path().to_str().unwrap(),
        "--table-uuid",
        "12345678-0000-0000-0000-000000000000",
    ]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("no metadata file has table-uuid"), "{e}");

    // Versionless names: the file with the greatest last-updated-ms.
    let plain = copy_table(&table_dir("v3_basic"));
    let meta = plain.path().join("metadata");
    std::fs::remove_file(meta.join("version-hint.text")).unwrap();
    std::fs::rename(
        meta.join("v12.metadata.json"),
        meta.join("vfinal.metadata.json"),
    )
    .unwrap();
    std::fs::rename(
        meta.join("v3.metadata.json"),
        meta.join("vold.metadata.json"),
    )
    .unwrap();
    assert_eq!(diff_rows(&cli_rows(plain.path(), &[]), &latest), None);
    let got = cli_rows(plain.path(), &["--metadata-file", "vold.metadata.json"]);
    assert_eq!(diff_rows(&got, &v3), None);
}
