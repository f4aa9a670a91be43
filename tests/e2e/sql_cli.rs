//! `icefloe sql` (built with `--features sql`): its output formats against `icefloe cat`, the
//! query from standard input, the warehouse catalog, and errors on one line with a non-zero
//! exit.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use icefloe_testkit::fixtures_dir;
use icefloe_testkit::rows::{json_lines, sorted};
use icefloe_testkit::run::{icefloe, stdout, table};
use serde_json::Value;

fn sql(args: &[&str]) -> Output {
    icefloe(&[&["sql"], args].concat())
}

/// The one-line error of a failed run, and its exit status.
fn error(o: &Output) -> String {
    assert!(!o.status.success(), "expected a failure");
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8(o.stderr.clone()).unwrap();
    assert_eq!(e.lines().count(), 1, "one line: {e}");
    assert!(e.starts_with("icefloe: "), "{e}");
    e
}

#[test]
fn jsonl_and_csv_equal_cat() {
    let t = table("v3_basic");
    let arg = format!("t={t}");
    for lineage in [false, true] {
        let mut args = vec!["--table", &arg, "--format", "jsonl"];
        let mut cat_args = vec!["cat", &t, "--format", "jsonl"];
        if lineage {
            args.push("--lineage");
            cat_args.push("--lineage");
        }
        args.push("SELECT * FROM t");
        let got = json_lines(&stdout(&sql(&args)));
        let want = json_lines(&stdout(&icefloe(&cat_args)));
        assert_eq!(sorted(&got), sorted(&want), "lineage {lineage}");
        assert!(!want.is_empty());
    }
    // CSV: the header and every line of cat's CSV, in order (ORDER BY id as cat's file order
    // is not promised).
    let got = stdout(&sql(&[
        "--table",
        &arg,
        "--format",
        "csv",
        "SELECT * FROM t ORDER BY id, name",
    ]));
    let want = stdout(&icefloe(&["cat", &t, "--format", "csv"]));
    let mut want_lines: Vec<&str> = want.lines().collect();
    let mut got_lines: Vec<&str> = got.lines().collect();
    assert_eq!(got_lines[0], want_lines[0]);
    got_lines.sort();
    want_lines.sort();
    assert_eq!(got_lines, want_lines);
}

#[test]
fn parquet_output_file_and_terminal_table() {
    let t = table("v3_types");
    let arg = format!("t={t}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.parquet");
    let o = sql(&[
        "--table",
        &arg,
        "--format",
        "parquet",
        "--output",
        out.to_str().unwrap(),
        "SELECT id, s, dec38 FROM t WHERE id < 2",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.is_empty());
    let bytes = bytes::Bytes::from(std::fs::read(&out).unwrap());
    let reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap();
    let batches: Vec<_> = reader.build().unwrap().collect::<Result<_, _>>().unwrap();
    let n: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(n, 2);
    assert_eq!(batches[0].schema().field(2).name(), "dec38");
    // The terminal table: a header, a rule, one line a row; NULL an empty cell.
    let text = stdout(&sql(&[
        "--table",
        &arg,
        "SELECT id, s, NULL AS nothing FROM t WHERE id = 0",
    ]));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].contains("id") && lines[0].contains("nothing"),
        "{text}"
    );
    assert!(lines[1].chars().all(|c| c == '─'), "{text}");
    assert!(lines[2].contains("hello"), "{text}");
    // A query from standard input, several statements, each result in turn.
    let mut child = Command::new(icefloe_testkit::run::bin())
        .args(["sql", "--table", &arg, "--format", "jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"SELECT count(*) AS n FROM t;\nSELECT max(id) AS m FROM t;\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let rows = json_lines(&stdout(&o));
    assert_eq!(rows.len(), 2);
    assert!(rows[0]["n"].as_i64().unwrap() > 0 && rows[1]["m"].is_i64());
}

#[test]
fn warehouse_tables_by_namespace() {
    let w = fixtures_dir().join("warehouse");
    let w = w.to_str().unwrap();
    let got = json_lines(&stdout(&sql(&[
        "--warehouse",
        w,
        "--format",
        "jsonl",
        "SELECT count(*) AS n FROM db.v3_lineage",
    ])));
    let want = stdout(&icefloe(&[
        "cat",
        &table("v3_lineage"),
        "--format",
        "jsonl",
    ]));
    assert_eq!(got[0]["n"], Value::from(want.lines().count()));
    // Time travel and the change feed over a catalog table.
    let first = icefloe_testkit::all_snapshots()
        .into_iter()
        .find(|s| s.table == "v3_lineage")
        .unwrap()
        .snapshot_id
        .to_string();
    let got = json_lines(&stdout(&sql(&[
        "--warehouse",
        w,
        "--format",
        "jsonl",
        &format!("SELECT count(*) AS n FROM icefloe_changes('db.v3_lineage', NULL, {first})"),
    ])));
    let want = stdout(&icefloe(&[
        "changes",
        &table("v3_lineage"),
        "--from-creation",
        "--to",
        &first,
        "--format",
        "jsonl",
    ]));
    assert_eq!(got[0]["n"], Value::from(want.lines().count()));
}

#[test]
fn errors_are_one_line() {
    let arg = format!("t={}", table("v3_basic"));
    let e = error(&sql(&["--table", &arg, "SELECT nope FROM t"]));
    assert!(e.contains("nope"), "{e}");
    let e = error(&sql(&["--table", &arg, "SELEC 1"]));
    assert!(e.to_lowercase().contains("sql"), "{e}");
    let e = error(&sql(&[
        "--table",
        &arg,
        "SELECT * FROM icefloe_snapshot('t', 42)",
    ]));
    assert!(e.contains("snapshot 42 not found"), "{e}");
    let e = error(&sql(&["--table", "t=/no/such/table", "SELECT 1"]));
    assert!(e.contains("/no/such/table"), "{e}");
    // A damaged data file: the core's error names it.
    let copy = icefloe_testkit::copy_table(std::path::Path::new(&table("v3_lineage")));
    // Every data file (not the deletes) is damaged, so the current snapshot reads one.
    for e in std::fs::read_dir(copy.path().join("data"))
        .unwrap()
        .flatten()
    {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "parquet") {
            std::fs::write(&p, b"not parquet").unwrap();
        }
    }
    let arg = format!("t={}", copy.path().display());
    let o = sql(&["--table", &arg, "SELECT * FROM t"]);
    let e = error(&o);
    assert!(e.contains("data"), "{e}");
}

/// `icefloe --catalog NAME sql` against the real REST catalog `scripts/rest-catalog start`
/// runs (skipped, with the reason printed, when none runs): every fixture snapshot through
/// `icefloe_snapshot('db.<table>', id)` with the lineage columns equals Spark's rows, and the
/// catalog's tables are schemas of the session (`SHOW TABLES`, `db.<table>`).
#[test]
fn rest_catalog_tables_and_snapshots() {
    let Some(s) = icefloe_testkit::servers::rest_catalog_env() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    // Only this user's configuration: no PYICEBERG_* or AWS_* of the machine.
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_icefloe"))
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .env("PYICEBERG_CATALOG__FIXTURES__URI", &s["ICEFLOE_REST_URI"])
            .env(
                "PYICEBERG_CATALOG__FIXTURES__WAREHOUSE",
                &s["ICEFLOE_REST_WAREHOUSE"],
            )
            .env(
                "PYICEBERG_CATALOG__FIXTURES__TOKEN",
                &s["ICEFLOE_REST_TOKEN"],
            )
            .output()
            .expect("run icefloe")
    };
    let snaps = icefloe_testkit::all_snapshots();
    let tables = stdout(&run(&[
        "--catalog",
        "fixtures",
        "sql",
        "--format",
        "csv",
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'db' ORDER BY 1",
    ]));
    let mut want: Vec<&str> = snaps.iter().map(|s| s.table.as_str()).collect();
    want.sort();
    want.dedup();
    for t in &want {
        assert!(tables.lines().any(|l| l == *t), "{t} not listed: {tables}");
    }
    let mut failures = Vec::new();
    for f in &snaps {
        let q = format!(
            "SELECT * FROM icefloe_snapshot('db.{}', {})",
            f.table, f.snapshot_id
        );
        let o = run(&[
            "--catalog",
            "fixtures",
            "sql",
            "--lineage",
            "--format",
            "jsonl",
            &q,
        ]);
        if !o.status.success() {
            failures.push(format!(
                "{q}: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ));
            continue;
        }
        let got = json_lines(&stdout(&o));
        if let Some(d) = icefloe_testkit::diff_rows(&got, &f.expected_rows()) {
            failures.push(format!("{q}: {d}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} snapshots differ:\n{}",
        failures.len(),
        snaps.len(),
        failures.join("\n")
    );
    // The current snapshot by the catalog's name, and the same table counted.
    let t = &want[0];
    let n = json_lines(&stdout(&run(&[
        "--catalog",
        "fixtures",
        "sql",
        "--format",
        "jsonl",
        &format!("SELECT count(*) AS n FROM db.{t}"),
    ])));
    let cat = stdout(&run(&[
        "--catalog",
        "fixtures",
        "cat",
        &format!("db.{t}"),
        "--format",
        "jsonl",
    ]));
    assert_eq!(n[0]["n"], Value::from(cat.lines().count()));
}
