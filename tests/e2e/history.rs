//! `icefloe retention`, `orphans` and `history` on the Spark tables of tests/gen/changes.py:
//! against what Iceberg Java's ExpireSnapshots (Spark's expire_snapshots procedure) removed
//! from a copy at the same instant, what remove_orphan_files(dry_run => true) listed, and
//! Spark's reads of every snapshot.

use std::path::PathBuf;
use std::process::Command;

use icefloe_testkit::fixtures_dir;
use serde_json::Value;

fn dir() -> PathBuf {
    fixtures_dir().join("changes")
}

fn load(rel: &str) -> Value {
    let p = dir().join(rel);
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

fn icefloe_json(args: &[String]) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_icefloe"))
        .args(args)
        .output()
        .expect("run icefloe");
    assert!(
        o.status.success(),
        "icefloe {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

fn sorted<T: Ord + Clone>(v: &[T]) -> Vec<T> {
    let mut v = v.to_vec();
    v.sort();
    v
}

fn ints(v: &Value) -> Vec<i64> {
    sorted(
        &v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_i64().unwrap())
            .collect::<Vec<_>>(),
    )
}

fn strs(v: &Value) -> Vec<String> {
    sorted(
        &v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect::<Vec<_>>(),
    )
}

#[test]
fn retention_matches_java_expire_snapshots() {
    let e = load("expected/retain/expire.json");
    let loc = format!("{}/", e["recorded_location"].as_str().unwrap());
    let table = dir().join("warehouse/db/retain");
    for (name, run) in e["runs"].as_object().unwrap() {
        let mut args = vec![
            "retention".to_string(),
            table.to_str().unwrap().to_string(),
            "--now".into(),
            run["now_ms"].to_string(),
            "--format".into(),
            "json".into(),
        ];
        if name == "flags" {
            args.extend([
                "--max-snapshot-age".into(),
                run["max_snapshot_age_ms"].to_string(),
                "--min-snapshots".into(),
                run["min_snapshots"].to_string(),
            ]);
        }
        let got = icefloe_json(&args);
        let before = ints(&run["snapshots_before"]);
        let after = ints(&run["snapshots_after"]);
        let expired: Vec<i64> = before
            .iter()
            .filter(|s| !after.contains(s))
            .copied()
            .collect();
        assert!(!expired.is_empty(), "{name}: the fixture expires something");
        assert_eq!(ints(&got["expired_snapshots"]), expired, "{name}");
        let refs_gone: Vec<String> = strs(&run["refs_before"])
            .into_iter()
            .filter(|r| !strs(&run["refs_after"]).contains(r))
            .collect();
        assert_eq!(strs(&got["expired_refs"]), refs_gone, "{name}");
        for (k, n) in run["metrics"].as_object().unwrap() {
            assert_eq!(got["metrics"][k], *n, "{name}: {k}");
        }
        let files: Vec<String> = got["deleted_files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let p = f["path"].as_str().unwrap();
                p.strip_prefix(&loc).unwrap_or(p).to_string()
            })
            .collect();
        assert_eq!(sorted(&files), strs(&run["removed_files"]), "{name}");
    }
}

#[test]
fn orphans_match_remove_orphan_files_dry_run() {
    let e = load("expected/orphans/orphans.json");
    let copy = icefloe_testkit::copy_table(&dir().join("warehouse/db/orphans"));
    // Git keeps no mtimes: give every file the one it had when Spark listed it.
    for (rel, ms) in e["mtimes_ms"].as_object().unwrap() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.as_u64().unwrap());
        std::fs::File::options()
            .write(true)
            .open(copy.path().join(rel))
            .unwrap()
            .set_modified(t)
            .unwrap();
    }
    let got = icefloe_json(&[
        "orphans".into(),
        copy.path().to_str().unwrap().into(),
        "--older-than".into(),
        e["older_than_ms"].to_string(),
        "--format".into(),
        "json".into(),
    ]);
    let prefix = format!("file:{}/", e["recorded_location"].as_str().unwrap());
    let want: Vec<String> = strs(&e["spark_orphans"])
        .iter()
        .map(|p| p.strip_prefix(&prefix).unwrap().to_string())
        .collect();
    assert!(want.len() >= 3, "{want:?}");
    let listed: Vec<String> = got["orphans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["relative_path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(sorted(&listed), want);
    // The recent planted file is no orphan yet; with a later cutoff it is.
    assert!(!listed.iter().any(|p| p == "data/orphan-new.parquet"));
    let later = icefloe_json(&[
        "orphans".into(),
        copy.path().to_str().unwrap().into(),
        "--older-than".into(),
        "9999999999999".into(),
        "--format".into(),
        "json".into(),
    ]);
    let all: Vec<&str> = later["orphans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["relative_path"].as_str().unwrap())
        .collect();
    assert!(all.contains(&"data/orphan-new.parquet"), "{all:?}");
    assert_eq!(all.len(), want.len() + 1, "{all:?}");
}

fn jsonl_of(args: &[String]) -> Vec<Value> {
    let o = Command::new(env!("CARGO_BIN_EXE_icefloe"))
        .args(args)
        .output()
        .expect("run icefloe");
    assert!(
        o.status.success(),
        "icefloe {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every version of every row of `feed` (MoR and CoW updates, MERGE, deletes, a branch),
/// against Spark's reads of every snapshot: the snapshots each version is read in, the
/// snapshot that made it, its values; and its retention against `icefloe retention`.
#[test]
fn row_history_matches_spark_reads_of_every_snapshot() {
    let cases = load("expected/feed/cases.json");
    let rows = load("expected/feed/snapshot_rows.json");
    let seq_of: std::collections::HashMap<i64, i64> = cases["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["snapshot_id"].as_i64().unwrap(),
                s["seq"].as_i64().unwrap(),
            )
        })
        .collect();
    // (row id, version) -> (values, snapshots).
    let mut want: std::collections::BTreeMap<(i64, i64), (Value, Vec<i64>)> = Default::default();
    for (snap, rs) in rows.as_object().unwrap() {
        for r in rs.as_array().unwrap() {
            let k = (
                r["_row_id"].as_i64().unwrap(),
                r["_last_updated_sequence_number"].as_i64().unwrap(),
            );
            let e = want.entry(k).or_insert((r.clone(), Vec::new()));
            e.1.push(snap.parse().unwrap());
        }
    }
    let table = dir().join("warehouse/db/feed");
    let now = "2026-12-01T15:00:00Z";
    let retention = icefloe_json(&[
        "retention".into(),
        table.to_str().unwrap().into(),
        "--now".into(),
        now.into(),
        "--format".into(),
        "json".into(),
    ]);
    let forever: Vec<i64> = retention["kept_snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["expires_at_ms"].is_null())
        .map(|k| k["snapshot_id"].as_i64().unwrap())
        .collect();
    let ids: Vec<i64> = want.keys().map(|k| k.0).collect();
    let mut args = vec![
        "history".to_string(),
        table.to_str().unwrap().into(),
        "--now".into(),
        now.into(),
        "--format".into(),
        "jsonl".into(),
    ];
    let mut distinct = ids.clone();
    distinct.dedup();
    for id in &distinct {
        args.extend(["--row-id".into(), id.to_string()]);
    }
    let got = jsonl_of(&args);
    assert_eq!(got.len(), want.len(), "{got:?}");
    for g in &got {
        let k = (
            g["_row_id"].as_i64().unwrap(),
            g["_last_updated_sequence_number"].as_i64().unwrap(),
        );
        let (values, snaps) = &want[&k];
        for c in ["id", "val", "cat"] {
            assert_eq!(g[c], values[c], "{k:?} {c}");
        }
        assert_eq!(
            g["readable_snapshots"].as_i64().unwrap(),
            snaps.len() as i64,
            "{k:?}"
        );
        let mut by_seq = snaps.clone();
        by_seq.sort_by_key(|s| seq_of[s]);
        assert_eq!(g["first_snapshot_id"], by_seq[0], "{k:?}");
        assert_eq!(g["last_snapshot_id"], *by_seq.last().unwrap(), "{k:?}");
        let maker = seq_of.iter().find(|(_, s)| **s == k.1).map(|(id, _)| *id);
        assert_eq!(g["made_by_snapshot_id"].as_i64(), maker, "{k:?}");
        let never = snaps.iter().any(|s| forever.contains(s));
        assert_eq!(g["readable_until"] == "never", never, "{k:?}: {g}");
    }
    // Oldest version first within a row.
    for w in got.windows(2) {
        if w[0]["_row_id"] == w[1]["_row_id"] {
            assert!(
                w[0]["_last_updated_sequence_number"].as_i64()
                    < w[1]["_last_updated_sequence_number"].as_i64()
            );
        }
    }
    // --where finds the row by a value of any version: id 5 was deleted by the MERGE.
    let deleted = jsonl_of(&[
        "history".into(),
        table.to_str().unwrap().into(),
        "--where".into(),
        "val=e".into(),
        "--now".into(),
        now.into(),
        "--format".into(),
        "jsonl".into(),
    ]);
    assert_eq!(deleted.len(), 1, "{deleted:?}");
    assert_eq!(deleted[0]["id"], 5);
}
