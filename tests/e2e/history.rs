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

/// `retain`: snapshot and ref expiry by properties, refs and flags (no data file goes);
/// `expire_files`: expiry that deletes data files, deletion vectors, an equality delete file,
/// manifests and manifest lists.
#[test]
fn retention_matches_java_expire_snapshots() {
    for table_name in ["retain", "expire_files"] {
        retention_matches_java_expire_snapshots_on(table_name);
    }
}

fn retention_matches_java_expire_snapshots_on(table_name: &str) {
    let e = load(&format!("expected/{table_name}/expire.json"));
    let loc = format!("{}/", e["recorded_location"].as_str().unwrap());
    let table = dir().join("warehouse/db").join(table_name);
    for (name, run) in e["runs"].as_object().unwrap() {
        let name = &format!("{table_name}/{name}");
        let mut args = vec![
            "retention".to_string(),
            table.to_str().unwrap().to_string(),
            "--now".into(),
            run["now_ms"].to_string(),
            "--format".into(),
            "json".into(),
        ];
        if run.get("max_snapshot_age_ms").is_some() {
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
            if table_name == "expire_files" && k != "deleted_statistics_files_count" {
                assert!(n.as_u64().unwrap() > 0, "{name}: the fixture deletes {k}");
            }
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

/// `icefloe retention` says how many rows deleted or overwritten on main stay readable
/// through older snapshots the expiry keeps, and until when: against Spark's reads of every
/// snapshot of `feed` (the row versions a kept ancestor of the current snapshot reads and the
/// current one does not), each until the last kept snapshot reading it expires; at three
/// instants (everything kept, the oldest snapshots expired, only the current one kept).
#[test]
fn retention_counts_the_removed_rows_older_snapshots_still_read() {
    use std::collections::{BTreeMap, HashMap, HashSet};
    let cases = load("expected/feed/cases.json");
    let reads = load("expected/feed/snapshot_rows.json");
    let table = dir().join(cases["table_dir"].as_str().unwrap());
    let main: Vec<i64> = cases["main"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let current = *main.last().unwrap();
    let ts: HashMap<i64, i64> = cases["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["snapshot_id"].as_i64().unwrap(),
                s["timestamp_ms"].as_i64().unwrap(),
            )
        })
        .collect();
    let five_days = 5 * 24 * 3600 * 1000;
    let version = |r: &Value| {
        (
            r["_row_id"].as_i64().unwrap(),
            r["_last_updated_sequence_number"].as_i64().unwrap(),
        )
    };
    let live_now: HashSet<(i64, i64)> = reads[current.to_string()]
        .as_array()
        .unwrap()
        .iter()
        .map(version)
        .collect();
    let mut seen = Vec::new();
    for now in [
        ts[&current] + 3_600_000,
        ts[&main[3]] + five_days + 1,
        ts[&current] + 10 * five_days,
    ] {
        let got = icefloe_json(&[
            "retention".into(),
            table.to_str().unwrap().into(),
            "--now".into(),
            now.to_string(),
            "--format".into(),
            "json".into(),
        ]);
        let kept: HashMap<i64, Option<i64>> = got["kept_snapshots"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| {
                (
                    k["snapshot_id"].as_i64().unwrap(),
                    k["expires_at_ms"].as_i64(),
                )
            })
            .collect();
        // Each removed version: the latest expiry of the kept main snapshots reading it.
        let mut until: HashMap<(i64, i64), Option<i64>> = HashMap::new();
        for s in main.iter().filter(|s| kept.contains_key(s)) {
            for r in reads[s.to_string()].as_array().unwrap() {
                let v = version(r);
                if live_now.contains(&v) {
                    continue;
                }
                let at = kept[s];
                let e = until.entry(v).or_insert(at);
                *e = match (*e, at) {
                    (None, _) | (_, None) => None,
                    (Some(a), Some(b)) => Some(a.max(b)),
                };
            }
        }
        let mut want: BTreeMap<(bool, i64), u64> = BTreeMap::new();
        for at in until.values() {
            *want
                .entry((at.is_none(), at.unwrap_or(i64::MAX)))
                .or_default() += 1;
        }
        let want: Vec<(u64, Option<i64>)> = want
            .into_iter()
            .map(|((never, at), n)| (n, (!never).then_some(at)))
            .collect();
        let got: Vec<(u64, Option<i64>)> = got["readable_removed_rows"]
            .as_array()
            .unwrap_or_else(|| panic!("readable_removed_rows at {now}: {got}"))
            .iter()
            .map(|g| (g["rows"].as_u64().unwrap(), g["until_ms"].as_i64()))
            .collect();
        assert_eq!(got, want, "at {now}");
        seen.push(got.iter().map(|(n, _)| n).sum::<u64>());
    }
    assert!(seen[0] > seen[1] && seen[1] > 0 && seen[2] == 0, "{seen:?}");
}
