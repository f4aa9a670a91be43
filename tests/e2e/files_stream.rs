//! `icefloe files` prints its rows as planning streams them. The listing is the
//! core's plan, in order, at every fixture snapshot and in every format; and an error found
//! after rows were printed (a corrupt later manifest, a whole-snapshot check that fails at the
//! end) still fails the command, naming the file.

use icefloe_testkit::run;

use std::path::{Path, PathBuf};

use icefloe_core::spec::ManifestContent;
use icefloe_core::{Scan, SnapshotSelector, Table};
use icefloe_testkit::{all_snapshots, copy_table, fixtures_dir, parse_csv};
use run::{icefloe, json, path_str, stdout};
use serde_json::Value;

fn plan(dir: &str, snapshot: i64) -> Vec<icefloe_core::FileScanTask> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let table = Table::open(dir).await.unwrap();
        let scan = Scan::builder()
            .snapshot(SnapshotSelector::Id(snapshot))
            .build(&table)
            .unwrap();
        scan.plan_files().await.unwrap()
    })
}

#[test]
fn files_lists_the_plan_of_every_snapshot_in_every_format() {
    let mut listed = 0;
    for s in all_snapshots() {
        let dir = path_str(&s.table_dir);
        let id = s.snapshot_id.to_string();
        let tasks = plan(&dir, s.snapshot_id);
        let doc = json(&["files", &dir, "--snapshot", &id, "--format", "json"]);
        assert_eq!(doc["snapshot_id"], Value::from(s.snapshot_id));
        let files = doc["files"].as_array().unwrap();
        let csv = parse_csv(&stdout(&icefloe(&[
            "files",
            &dir,
            "--snapshot",
            &id,
            "--format",
            "csv",
        ])));
        assert_eq!(files.len(), tasks.len(), "{} {id}", s.table);
        assert_eq!(
            csv.len(),
            tasks.len() + 1,
            "{} {id}: CSV header + rows",
            s.table
        );
        for ((f, row), t) in files.iter().zip(&csv[1..]).zip(&tasks) {
            let d = &t.data_file;
            assert_eq!(f["data_file"], Value::from(d.file_path.as_str()));
            assert_eq!(f["record_count"], Value::from(d.record_count));
            assert_eq!(f["sequence_number"], Value::from(t.sequence_number));
            assert_eq!(f["first_row_id"], serde_json::json!(t.first_row_id));
            assert!(
                d.file_path.ends_with(&row[0].0),
                "{} vs {}",
                d.file_path,
                row[0].0
            );
            assert_eq!(row[1].0, d.record_count.to_string());
            assert_eq!(row[2].0, f["deleted_positions"].to_string());
            assert_eq!(row[4].0, t.sequence_number.to_string());
        }
        listed += tasks.len();
    }
    assert!(listed > 100, "{listed}");
}

/// The data manifests of a table's current snapshot, in manifest-list order, as local paths.
fn data_manifests(dir: &Path) -> Vec<PathBuf> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let table = Table::open(dir.to_str().unwrap()).await.unwrap();
        let s = table.metadata().current_snapshot().unwrap().clone();
        let list = table.manifest_list(&s).await.unwrap();
        list.iter()
            .filter(|m| m.content == ManifestContent::Data)
            .map(|m| {
                let name = m.manifest_path.rsplit('/').next().unwrap();
                dir.join("metadata").join(name)
            })
            .collect()
    })
}

#[test]
fn a_corrupt_later_manifest_fails_files_naming_it() {
    let tmp = copy_table(&fixtures_dir().join("warehouse/db/v3_basic"));
    let manifests = data_manifests(tmp.path());
    assert!(manifests.len() > 1, "{manifests:?}");
    let last = manifests.last().unwrap();
    let bytes = std::fs::read(last).unwrap();
    std::fs::write(last, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let name = last.file_name().unwrap().to_str().unwrap();
    let dir = path_str(tmp.path());
    for format in ["csv", "json", "text"] {
        let r = icefloe(&["files", &dir, "--format", format]);
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success(), "{format}: exit 0 with {err}");
        assert!(err.contains(name), "{format}: {err}");
    }
}

#[test]
fn a_check_at_the_end_of_the_stream_fails_files_after_its_rows() {
    // The summary's total-records is checked once every data file is planned: the rows are
    // printed by then, and a strict command must still fail.
    let tmp = copy_table(&fixtures_dir().join("warehouse/db/v3_basic"));
    let dir = path_str(tmp.path());
    let full = parse_csv(&stdout(&icefloe(&["files", &dir, "--format", "csv"])));
    let hint = std::fs::read_to_string(tmp.path().join("metadata/version-hint.text")).unwrap();
    let meta = tmp
        .path()
        .join(format!("metadata/v{}.metadata.json", hint.trim()));
    let mut v: Value = serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    let current = v["current-snapshot-id"].clone();
    for s in v["snapshots"].as_array_mut().unwrap() {
        if s["snapshot-id"] == current {
            let n: i64 = s["summary"]["total-records"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            s["summary"]["total-records"] = Value::from((n + 1).to_string());
        }
    }
    std::fs::write(&meta, serde_json::to_vec(&v).unwrap()).unwrap();
    // A summary that disagrees does not change the files: a warning, and an error when strict.
    let r = icefloe(&["files", &dir, "--format", "csv"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    assert!(
        err.contains("warning")
            && err.contains("total-records")
            && err.contains("[summary-totals]"),
        "{err}"
    );
    assert_eq!(parse_csv(&String::from_utf8_lossy(&r.stdout)), full);
    let r = icefloe(&["files", &dir, "--format", "csv", "--strict"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(!r.status.success(), "exit 0 with {err}");
    assert!(
        err.contains("total-records") && err.contains("snap-"),
        "{err}"
    );
    let printed = parse_csv(&String::from_utf8_lossy(&r.stdout));
    assert_eq!(printed, full, "the rows were printed before the error");
}
