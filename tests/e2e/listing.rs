//! The listing commands (`snapshots`, `schema`, `files`): `--format json` of each, parsed
//! back and checked against the fixtures' manifests; the terminal table fitting its width.

use icefloe_testkit::run;

use std::collections::HashMap;

use icefloe_testkit::fixtures_dir;
use run::{icefloe_with, json, path_str, stdout};
use serde_json::Value;

/// Every fixture table: its directory and its manifest (`expected/<table>/manifest.json`).
fn manifests() -> Vec<(String, Value)> {
    let root = fixtures_dir();
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("index.json")).unwrap()).unwrap();
    index["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let m: Value = serde_json::from_str(
                &std::fs::read_to_string(root.join(t["manifest"].as_str().unwrap())).unwrap(),
            )
            .unwrap();
            assert_eq!(
                m["snapshots"].as_array().unwrap().len() as u64,
                t["snapshots"]
            );
            (path_str(&root.join(m["table_dir"].as_str().unwrap())), m)
        })
        .collect()
}

#[test]
fn snapshots_json_matches_the_manifests() {
    let mut tables = 0;
    for (dir, m) in manifests() {
        let doc = json(&["snapshots", &dir, "--format", "json"]);
        assert_eq!(doc["table"], dir.as_str());
        assert_eq!(doc["format_version"], m["format_version"], "{dir}");
        assert_eq!(
            doc["current_snapshot_id"], m["current_snapshot_id"],
            "{dir}"
        );
        let want = m["snapshots"].as_array().unwrap();
        let got = doc["snapshots"].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "{dir}");
        let by_id: HashMap<i64, &Value> = got
            .iter()
            .map(|s| (s["snapshot_id"].as_i64().unwrap(), s))
            .collect();
        for w in want {
            let g = by_id[&w["snapshot_id"].as_i64().unwrap()];
            assert_eq!(g["parent_id"], w["parent_snapshot_id"], "{dir}");
            assert_eq!(g["sequence_number"], w["sequence_number"], "{dir}");
            assert_eq!(g["timestamp_ms"], w["timestamp_ms"], "{dir}");
            assert_eq!(g["operation"], w["operation"], "{dir}");
            assert_eq!(g["summary"], w["summary"], "{dir}");
            if !w["schema_id"].is_null() {
                assert_eq!(g["schema_id"], w["schema_id"], "{dir}");
            }
            // The manifest names refs "tag:after_update"; the listing by name.
            let mut want_refs: Vec<&str> = w["refs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_str().unwrap().split_once(':').unwrap().1)
                .collect();
            want_refs.sort_unstable();
            let got_refs: Vec<&str> = g["refs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_str().unwrap())
                .collect();
            assert_eq!(got_refs, want_refs, "{dir}");
        }
        // Oldest first.
        let seqs: Vec<i64> = got
            .iter()
            .map(|s| s["sequence_number"].as_i64().unwrap())
            .collect();
        assert!(seqs.windows(2).all(|w| w[0] <= w[1]), "{dir}: {seqs:?}");
        for (name, r) in m["refs"].as_object().unwrap() {
            assert_eq!(
                doc["refs"][name]["snapshot_id"], r["snapshot-id"],
                "{dir} {name}"
            );
            assert_eq!(doc["refs"][name]["type"], r["type"], "{dir} {name}");
        }
        tables += 1;
    }
    assert_eq!(tables, 14);
}

#[test]
fn files_and_schema_json_match_every_snapshot() {
    let mut checked = 0;
    for (dir, m) in manifests() {
        for s in m["snapshots"].as_array().unwrap() {
            let id = s["snapshot_id"].to_string();
            let files = json(&["files", &dir, "--snapshot", &id, "--format", "json"]);
            assert_eq!(files["snapshot_id"], s["snapshot_id"]);
            let list = files["files"].as_array().unwrap();
            let sum = |k: &str| s["summary"][k].as_str().map(|v| v.parse::<u64>().unwrap());
            // The summary's totals count every live data file and its records.
            assert_eq!(
                Some(list.len() as u64),
                sum("total-data-files"),
                "{dir}@{id}"
            );
            let records: u64 = list
                .iter()
                .map(|f| f["record_count"].as_u64().unwrap())
                .sum();
            assert_eq!(Some(records), sum("total-records"), "{dir}@{id}");
            // Live rows: records less deleted positions, where only DVs and position deletes
            // apply (equality deletes are counted only when read).
            if list
                .iter()
                .all(|f| f["equality_deletes"].as_array().unwrap().is_empty())
            {
                let deleted: u64 = list
                    .iter()
                    .map(|f| f["deleted_positions"].as_u64().unwrap())
                    .sum();
                assert_eq!(records - deleted, s["rows"].as_u64().unwrap(), "{dir}@{id}");
            }
            for f in list {
                if let Some(dv) = f["deletion_vector"].as_object() {
                    assert_eq!(dv["cardinality"], f["deleted_positions"], "{dir}@{id}");
                    assert!(dv["path"].as_str().unwrap().ends_with(".puffin"));
                }
                assert!(
                    f["sequence_number"].as_i64().unwrap()
                        <= s["sequence_number"].as_i64().unwrap()
                );
            }
            let schema = json(&["schema", &dir, "--snapshot", &id, "--format", "json"]);
            let names: Vec<&str> = schema["fields"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["name"].as_str().unwrap())
                .collect();
            let want: Vec<&str> = s["expected_columns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap())
                .filter(|c| !c.starts_with('_'))
                .collect();
            assert_eq!(names, want, "{dir}@{id}");
            if !s["schema_id"].is_null() {
                assert_eq!(schema["schema_id"], s["schema_id"], "{dir}@{id}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 78, "{checked} snapshots");
}

#[test]
fn csv_and_json_say_the_same() {
    let dir = run::table("v3_basic");
    let csv = stdout(&icefloe_with(&["files", &dir, "--format", "csv"], &[]));
    let doc = json(&["files", &dir, "--format", "json"]);
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), doc["files"].as_array().unwrap().len());
    for (row, f) in rows.iter().zip(doc["files"].as_array().unwrap()) {
        let path = f["data_file"].as_str().unwrap();
        let short = row.split(',').next().unwrap();
        assert!(path.ends_with(short), "{short} vs {path}");
        assert!(
            row.contains(&format!(
                ",{},{},",
                f["record_count"], f["deleted_positions"]
            )),
            "{row}"
        );
    }
}

#[test]
fn the_table_fits_the_terminal_width() {
    let dir = run::table("v3_basic");
    for cmd in ["snapshots", "files", "schema"] {
        let out = stdout(&icefloe_with(&[cmd, &dir], &[("COLUMNS", "72")]));
        for line in out.lines() {
            assert!(
                line.chars().count() <= 72,
                "{cmd}: {line:?} is wider than 72"
            );
        }
        let wide = stdout(&icefloe_with(&[cmd, &dir], &[]));
        if wide.lines().any(|l| l.chars().count() > 72) {
            assert!(
                out.contains('…') || out.contains("(not shown for want of width: "),
                "{cmd}: cut cells end with an ellipsis, left out columns are named:\n{out}"
            );
        }
        // One line per row, whatever the width.
        let rows = |t: &str| t.lines().filter(|l| l.starts_with(' ')).count();
        assert_eq!(rows(&out), rows(&wide), "{cmd}");
    }
    // Without a terminal or COLUMNS, nothing is cut.
    let wide = stdout(&icefloe_with(&["files", &dir], &[]));
    assert!(!wide.contains('…'));
    assert!(
        wide.contains("dv data/") && wide.contains("rows)"),
        "{wide}"
    );
}
