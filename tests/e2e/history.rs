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
