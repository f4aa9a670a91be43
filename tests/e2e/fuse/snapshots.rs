//! Time travel in the mount: `current` and branches read with the current schema, snapshot
//! ids with their own, an older metadata file mounted, and the change feed between snapshots
//! (`changes/<A>..<B>/`) with `retention.csv`.

use std::path::{Path, PathBuf};
use std::process::Command;

use icefloe_testkit::{csv_to_rows, diff_rows, fixtures_dir, parse_csv};
use serde_json::Value;

use crate::common::{cat_csv, errno, parquet_rows, run, table_dir, ICEFLOE};
use crate::mount::Mount;

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
