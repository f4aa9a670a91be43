//! `icefloe cat|files --where` (the CLI over the core filter that
//! `where_filter.rs` tests at every snapshot): rows, lineage, projection, pruned file
//! listings, and errors that point at the problem.

use icefloe_testkit::run;

use run::{icefloe, json, path_str, stdout, table};
use serde_json::Value;

/// The CLI: `cat --where` prints the rows the core filter keeps, with lineage, in every
/// format's row content; `files --where` lists only files whose partition may match.
#[test]
fn cli_cat_where_matches_the_filtered_rows() {
    let t = table("partitioned");
    let all = stdout(&icefloe(&["cat", &t, "--format", "jsonl", "--lineage"]));
    let rows: Vec<Value> = all
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let cat = rows[0]["cat"].clone();
    let text = format!("cat = '{}' AND _row_id >= 0", cat.as_str().unwrap());
    let got = stdout(&icefloe(&[
        "cat",
        &t,
        "--format",
        "jsonl",
        "--lineage",
        "--where",
        &text,
    ]));
    let mut got: Vec<&str> = got.lines().collect();
    let mut want: Vec<&str> = all
        .lines()
        .zip(&rows)
        .filter(|(_, r)| r["cat"] == cat && r["_row_id"].as_i64().is_some_and(|v| v >= 0))
        .map(|(l, _)| l)
        .collect();
    got.sort();
    want.sort();
    assert!(!want.is_empty() && want.len() < rows.len());
    assert_eq!(got, want);
    // Without --lineage, the lineage columns still filter but are not printed; a filter
    // column outside --columns is not printed either.
    let got = stdout(&icefloe(&[
        "cat",
        &t,
        "--format",
        "jsonl",
        "--columns",
        "id",
        "--where",
        &text,
    ]));
    let mut ids: Vec<i64> = got
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            assert_eq!(v.as_object().unwrap().len(), 1, "{l}");
            v["id"].as_i64().unwrap()
        })
        .collect();
    let mut want_ids: Vec<i64> = want
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_i64()
                .unwrap()
        })
        .collect();
    ids.sort();
    want_ids.sort();
    assert_eq!(ids, want_ids);
    // files --where: the files of that partition only, all of them.
    let files = json(&["files", &t, "--format", "json"]);
    let pruned = json(&["files", &t, "--format", "json", "--where", &text]);
    let n = |v: &Value| v["files"].as_array().unwrap().len();
    assert!(n(&pruned) >= 1 && n(&pruned) < n(&files), "{pruned}");
    for f in pruned["files"].as_array().unwrap() {
        let path = f["data_file"].as_str().unwrap();
        assert!(
            path.contains(&format!("cat={}", cat.as_str().unwrap())),
            "{path}"
        );
    }
}

#[test]
fn where_errors_point_at_the_problem() {
    let t = table("v3_types");
    let err = |w: &str| {
        let o = icefloe(&["cat", &t, "--where", w]);
        assert!(!o.status.success(), "{w}");
        String::from_utf8(o.stderr).unwrap()
    };
    let e = err("i = 1 AND nope > 2");
    assert!(
        e.contains("at column 11") && e.contains("no column \"nope\""),
        "{e}"
    );
    let e = err("i = 1 AND");
    assert!(e.contains("invalid --where expression at column 10"), "{e}");
    let e = err("tstz < '2024-01-01T00:00:00+25:00'");
    assert!(
        e.contains("at column 8") && e.contains("not a timestamp"),
        "{e}"
    );
    let e = err("st = 1");
    assert!(e.contains("top-level primitive columns"), "{e}");
}

/// `files` takes deleted-row counts of deletion vectors from their manifest entries: with
/// every Puffin file of a copy deleted it still lists the same counts (while `cat`, which
/// reads the vectors, fails).
#[test]
fn files_opens_no_puffin_file() {
    let src = icefloe_testkit::fixtures_dir().join("warehouse/db/partitioned");
    let copy = icefloe_testkit::copy_table(&src);
    let dir = path_str(copy.path());
    let before = json(&["files", &dir, "--format", "json"]);
    // The counts are the rows reading drops.
    let live: i64 = before["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["record_count"].as_i64().unwrap() - f["deleted_positions"].as_i64().unwrap())
        .sum();
    let read = stdout(&icefloe(&["cat", &dir, "--format", "jsonl"]));
    assert_eq!(read.lines().count() as i64, live);
    let mut removed = 0;
    for e in std::fs::read_dir(copy.path().join("data")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "puffin") {
            std::fs::remove_file(&p).unwrap();
            removed += 1;
        }
    }
    assert!(removed > 0);
    let after = json(&["files", &dir, "--format", "json"]);
    assert_eq!(before["files"], after["files"]);
    let counted: i64 = after["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !f["deletion_vector"].is_null())
        .map(|f| {
            let n = f["deleted_positions"].as_i64().unwrap();
            assert_eq!(n, f["deletion_vector"]["cardinality"].as_i64().unwrap());
            n
        })
        .sum();
    assert!(counted > 0);
    // Reading the rows needs the vectors.
    assert!(!icefloe(&["cat", &dir]).status.success());
}
