//! `icefloe changes` on the Spark tables of tests/gen/changes.py: every recorded case against
//! the difference of Spark's `VERSION AS OF` reads, and against Spark's changelog view where
//! it answers.

use std::path::PathBuf;
use std::process::{Command, Output};

use icefloe_testkit::{copy_table, diff_rows, fixtures_dir};
use serde_json::Value;

fn dir() -> PathBuf {
    fixtures_dir().join("changes")
}

fn cases(table: &str) -> Value {
    let p = dir().join(format!("expected/{table}/cases.json"));
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn jsonl(p: PathBuf) -> Vec<Value> {
    std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn run(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_icefloe"))
        .arg("changes")
        .args(args)
        .output()
        .expect("run icefloe")
}

fn rows(o: &Output, args: &[String]) -> Vec<Value> {
    assert!(
        o.status.success(),
        "icefloe changes {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The arguments of a case: a null `from_snapshot` is a range from the table's creation.
fn case_args(table_dir: &str, c: &Value) -> Vec<String> {
    let mut a = vec![
        table_dir.to_string(),
        "--to".into(),
        c["to_snapshot"].to_string(),
        "--format".into(),
        "jsonl".into(),
    ];
    match c["from_snapshot"].as_i64() {
        Some(from) => a.extend(["--from".into(), from.to_string()]),
        None => a.push("--from-creation".into()),
    }
    if let Some(k) = c["key"].as_array() {
        let k: Vec<&str> = k.iter().map(|v| v.as_str().unwrap()).collect();
        a.extend(["--key".into(), k.join(",")]);
    }
    if c["net"].as_bool() == Some(true) {
        a.push("--net".into());
    }
    a
}

/// Every case of `table` matches its expected rows; error cases fail with the reason.
fn check_table(table: &str) -> usize {
    let m = cases(table);
    let t = dir().join(m["table_dir"].as_str().unwrap());
    let t = t.to_str().unwrap();
    let mut n = 0;
    for c in m["cases"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap();
        let args = case_args(t, c);
        let o = run(&args);
        if let Some(e) = c["error"].as_str() {
            assert!(!o.status.success(), "{table}/{name} should fail");
            let msg = String::from_utf8_lossy(&o.stderr);
            let want = match e {
                "not_ancestor" => "is not an ancestor of",
                "needs_key" => "give --key",
                _ => panic!("unknown error kind {e}"),
            };
            assert!(msg.contains(want), "{table}/{name}: {msg}");
            n += 1;
            continue;
        }
        let got = rows(&o, &args);
        let want = jsonl(dir().join(format!("expected/{table}/{name}.jsonl")));
        if let Some(d) = diff_rows(&got, &want) {
            panic!("{table}/{name}: {d}");
        }
        n += 1;
    }
    n
}

#[test]
fn feed_mor_cow_merge_noop_and_branch() {
    assert_eq!(check_table("feed"), 14);
}

#[test]
fn copy_on_write_table() {
    assert_eq!(check_table("cow"), 6);
}

#[test]
fn v2_to_v3_upgrade_needs_a_key_before_lineage() {
    assert_eq!(check_table("upgrade"), 6);
}

#[test]
fn upsert_as_equality_delete_plus_insert() {
    assert_eq!(check_table("upsert"), 4);
}

/// Copy-on-write: a row updated then deleted, on main and on a branch; net views show the
/// deleted row as it was at `--from`; ranges from the table's creation.
#[test]
fn update_then_delete_and_from_creation_copy_on_write() {
    assert_eq!(check_table("lifecycle"), 10);
}

/// The same commits written merge-on-read (deletion vectors), which Spark's changelog refuses.
#[test]
fn update_then_delete_and_from_creation_merge_on_read() {
    assert_eq!(check_table("lifecycle_mor"), 10);
}

/// Format 2 copy-on-write, upgraded to 3: by key, the net view gives each row the lineage it
/// reads with at `--to`, also when it got lineage (the upgrade) after its last change.
#[test]
fn v2_to_v3_upgrade_net_by_key_has_lineage_at_to() {
    assert_eq!(check_table("upgrade_cow"), 7);
}

/// Every commit of `--from-creation` is read: the first snapshot's rows are inserts, the
/// range is refused with another start, and a table whose first snapshot was expired says
/// where the readable range starts.
#[test]
fn from_creation_flags_and_expired_start() {
    let m = cases("lifecycle");
    let t = dir().join(m["table_dir"].as_str().unwrap());
    let t = t.to_str().unwrap().to_string();
    let first = m["main"][0].as_i64().unwrap();
    let both = [&t, "--from-creation", "--from", &first.to_string()].map(String::from);
    let o = run(&both);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot be used with"));
    let neither = run(std::slice::from_ref(&t));
    assert!(!neither.status.success());
    let help = run(&["--help".to_string()]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("--from-creation"));
    // Drop the first snapshot from a copy's metadata: its child names an expired parent.
    let copy = copy_table(&dir().join("warehouse/db/lifecycle"));
    let meta = latest_metadata(copy.path());
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&meta).unwrap()).unwrap();
    v["snapshots"]
        .as_array_mut()
        .unwrap()
        .retain(|s| s["snapshot-id"] != first);
    v["snapshot-log"]
        .as_array_mut()
        .unwrap()
        .retain(|s| s["snapshot-id"] != first);
    std::fs::write(&meta, v.to_string()).unwrap();
    let args = [copy.path().to_str().unwrap(), "--from-creation"].map(String::from);
    let o = run(&args);
    assert!(!o.status.success());
    let second = m["main"][1].as_i64().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("names parent {first}, which was expired"))
            && err.contains(&format!("--from {second}")),
        "{err}"
    );
    // From that snapshot the feed still answers.
    let from = [copy.path().to_str().unwrap(), "--from", &second.to_string()].map(String::from);
    assert!(run(&from).status.success());
}

/// The current metadata file of a table directory (by `version-hint.text`).
fn latest_metadata(table: &std::path::Path) -> PathBuf {
    let hint = std::fs::read_to_string(table.join("metadata/version-hint.text")).unwrap();
    table.join(format!("metadata/v{}.metadata.json", hint.trim()))
}

/// Spark's changelog rows (data columns, change type, ordinal, commit) equal ours where both
/// describe the same changes; where they differ, they differ as docs/cli.md says: Spark drops a
/// no-op UPDATE (its carry-over removal), and its net view attributes rows a later
/// copy-on-write commit only rewrote to that commit, and a deleted row to its first change
/// (so net views are compared by their rows and change types, see [`spark_net_shape`]).
#[test]
fn spark_changelog_agrees_where_it_answers() {
    let mut compared = 0;
    for table in ["feed", "cow", "lifecycle", "upgrade_cow"] {
        let m = cases(table);
        let t = dir().join(m["table_dir"].as_str().unwrap());
        let cols: Vec<String> = m["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .filter(|c| !c.starts_with('_'))
            .collect();
        for c in m["cases"].as_array().unwrap() {
            let Some(file) = c["spark_changelog"]["file"].as_str() else {
                continue;
            };
            let name = c["name"].as_str().unwrap();
            let spark = jsonl(dir().join(format!("expected/{table}/{file}")));
            let args = case_args(t.to_str().unwrap(), c);
            let ours: Vec<Value> = rows(&run(&args), &args)
                .into_iter()
                .map(|r| {
                    let mut o = serde_json::Map::new();
                    for k in &cols {
                        o.insert(k.clone(), r[k].clone());
                    }
                    let ty = r["_change_type"].as_str().unwrap().to_uppercase();
                    o.insert("_change_type".into(), Value::String(ty));
                    o.insert("_change_ordinal".into(), r["_change_ordinal"].clone());
                    o.insert(
                        "_commit_snapshot_id".into(),
                        r["_commit_snapshot_id"].clone(),
                    );
                    Value::Object(o)
                })
                .collect();
            let differs = diff_rows(&ours, &spark);
            if matches!(table, "lifecycle" | "upgrade_cow") && c["net"] == true {
                let from_rows = match c["from_snapshot"].as_i64() {
                    Some(id) => snapshot_rows(table, id),
                    None => Vec::new(),
                };
                let shape = |rs: &[Value]| -> Vec<Value> {
                    rs.iter()
                        .map(|r| {
                            let mut o = serde_json::Map::new();
                            for k in cols.iter().chain(["_change_type".to_string()].iter()) {
                                o.insert(k.clone(), r[k].clone());
                            }
                            Value::Object(o)
                        })
                        .collect()
                };
                let ours = spark_net_shape(&ours, &from_rows);
                assert_eq!(
                    diff_rows(&shape(&ours), &shape(&spark)),
                    None,
                    "{table}/{name}"
                );
                compared += 1;
                continue;
            }
            match (table, name) {
                ("cow", "step3") | ("cow", "all") => {
                    // The no-op UPDATE of id 1: an update under lineage, nothing in Spark's.
                    assert!(spark.iter().all(|r| r["id"] != 1), "{name}: {spark:?}");
                    let noop: Vec<&Value> = ours.iter().filter(|r| r["id"] == 1).collect();
                    assert_eq!(noop.len(), 2, "{name}: {ours:?}");
                    let rest: Vec<Value> = ours.iter().filter(|r| r["id"] != 1).cloned().collect();
                    assert_eq!(diff_rows(&rest, &spark), None, "{table}/{name}");
                }
                ("cow", "all_net") => {
                    // Spark: id 2 and 3 "inserted" by the last commit, which only rewrote them.
                    assert!(differs.is_some());
                    let last = c["to_snapshot"].as_i64().unwrap();
                    assert!(spark
                        .iter()
                        .any(|r| r["id"] == 2 && r["_commit_snapshot_id"] == last));
                    assert!(!ours
                        .iter()
                        .any(|r| r["id"] == 2 && r["_commit_snapshot_id"] == last));
                }
                _ => assert_eq!(differs, None, "{table}/{name}"),
            }
            compared += 1;
        }
    }
    assert_eq!(compared, 25);
}

/// Spark's reads of `table` at snapshot `id` (recorded by the generator).
fn snapshot_rows(table: &str, id: i64) -> Vec<Value> {
    let p = dir().join(format!("expected/{table}/snapshot_rows.json"));
    let all: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    all[id.to_string()].as_array().unwrap().clone()
}

/// Our net rows (change type upper-cased) as Spark's net changelog gives them: Spark cannot
/// pair a net update, so an `UPDATE_AFTER` is a `DELETE` of the row as it was at `--from`
/// (from `from_rows`, by `id`) and an `INSERT` of the row at `--to`.
fn spark_net_shape(ours: &[Value], from_rows: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for r in ours {
        if r["_change_type"] != "UPDATE_AFTER" {
            out.push(r.clone());
            continue;
        }
        let was = from_rows
            .iter()
            .find(|w| w["id"] == r["id"])
            .unwrap_or_else(|| panic!("no row id {} at --from", r["id"]));
        let mut before = was.clone();
        before["_change_type"] = Value::from("DELETE");
        let mut after = r.clone();
        after["_change_type"] = Value::from("INSERT");
        out.extend([before, after]);
    }
    out
}

/// An append reads only its own new file: with every other data file of the table gone, the
/// change feed of the second INSERT still answers (a full read would fail).
#[test]
fn reads_only_what_the_commit_touched() {
    let m = cases("feed");
    let src = dir().join("warehouse/db/feed");
    let copy = copy_table(&src);
    let step1 = &m["cases"].as_array().unwrap()[0];
    assert_eq!(step1["name"], "step1");
    let want = jsonl(dir().join("expected/feed/step1.jsonl"));
    let keep: Vec<String> = want
        .iter()
        .map(|r| r["_row_id"].to_string())
        .collect::<Vec<_>>();
    assert_eq!(keep.len(), 2);
    // The first INSERT's files: every data file of the first snapshot.
    let first_rows = snapshot_files(copy.path(), step1["from_snapshot"].as_i64().unwrap());
    assert!(!first_rows.is_empty());
    for f in &first_rows {
        std::fs::remove_file(f).unwrap();
    }
    let args = case_args(copy.path().to_str().unwrap(), step1);
    let got = rows(&run(&args), &args);
    assert_eq!(diff_rows(&got, &want), None);
    // While reading the first snapshot itself now fails.
    let o = Command::new(env!("CARGO_BIN_EXE_icefloe"))
        .args(["cat", copy.path().to_str().unwrap(), "--snapshot"])
        .arg(step1["from_snapshot"].to_string())
        .output()
        .unwrap();
    assert!(!o.status.success());
}

/// Data files (Parquet) of a snapshot, by the `_file` metadata column.
fn snapshot_files(table: &std::path::Path, snapshot: i64) -> Vec<PathBuf> {
    let o = Command::new(env!("CARGO_BIN_EXE_icefloe"))
        .args(["cat", table.to_str().unwrap(), "--format", "jsonl"])
        .args(["--columns", "_file", "--snapshot", &snapshot.to_string()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut files: Vec<String> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["_file"].as_str().unwrap().to_string()
        })
        .collect();
    files.sort();
    files.dedup();
    // Recorded paths are absolute under the generator's warehouse; map them into the copy.
    files
        .iter()
        .map(|f| {
            let rel = f.split("/db/feed/").nth(1).expect("path under the table");
            table.join(rel)
        })
        .collect()
}

/// `--columns`, CSV and Parquet outputs carry the same rows.
#[test]
fn columns_and_formats() {
    let m = cases("feed");
    let t = dir().join("warehouse/db/feed");
    let all = m["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "all")
        .unwrap();
    let mut args = case_args(t.to_str().unwrap(), all);
    args.extend(["--columns".into(), "val".into()]);
    let got = rows(&run(&args), &args);
    let want = jsonl(dir().join("expected/feed/all.jsonl"));
    let project = |rs: &[Value]| -> Vec<Value> {
        rs.iter()
            .map(|r| {
                let mut o = r.as_object().unwrap().clone();
                o.retain(|k, _| k.starts_with('_') || k == "val");
                Value::Object(o)
            })
            .collect()
    };
    assert_eq!(diff_rows(&got, &project(&want)), None);
    for g in &got {
        let o = g.as_object().unwrap();
        let keys: Vec<&str> = o.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "_change_type",
                "_commit_snapshot_id",
                "_change_sequence_number",
                "_change_ordinal",
                "_row_id",
                "_last_updated_sequence_number",
                "val"
            ]
        );
    }
    let format_at = |a: &[String]| a.iter().position(|x| x == "--format").unwrap() + 1;
    let mut csv = case_args(t.to_str().unwrap(), all);
    let at = format_at(&csv);
    csv[at] = "csv".into();
    let o = run(&csv);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text.lines().count(), want.len() + 1);
    assert!(text.starts_with("_change_type,_commit_snapshot_id,"));
    let mut pq = case_args(t.to_str().unwrap(), all);
    pq[at] = "parquet".into();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("c.parquet");
    pq.extend(["--output".into(), file.to_str().unwrap().into()]);
    assert!(run(&pq).status.success());
    let bytes = std::fs::read(&file).unwrap();
    assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"));
}
