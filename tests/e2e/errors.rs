//! `icefloe` errors a person understands: what a path that is not a table is, the cause of a
//! storage error once, the background mount's own error; always one line, nothing twice.

use icefloe_testkit::run;

use std::process::Output;

use icefloe_testkit::{copy_table, fixtures_dir};
use run::{icefloe, path_str, table};

/// The one-line error of a failed run; checks that no part of it is repeated.
fn error(args: &[&str]) -> String {
    let o: Output = icefloe(args);
    assert_eq!(o.status.code(), Some(1), "{args:?} should fail");
    assert!(o.stdout.is_empty(), "{args:?} printed output");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    let line = err
        .trim_end()
        .strip_prefix("icefloe: ")
        .unwrap_or_else(|| panic!("{args:?}: {err}"));
    let parts: Vec<&str> = line.split(": ").filter(|p| p.len() > 12).collect();
    for (i, p) in parts.iter().enumerate() {
        assert!(
            !parts[i + 1..]
                .iter()
                .any(|q| q.contains(p) || p.contains(q)),
            "{args:?}: {p:?} is said twice in {line}"
        );
    }
    line.to_string()
}

fn file_in(table_name: &str, dir: &str, suffix: &str) -> String {
    let d = fixtures_dir()
        .join("warehouse/db")
        .join(table_name)
        .join(dir);
    let mut names: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_str().unwrap().ends_with(suffix))
        .collect();
    names.sort();
    path_str(
        names
            .first()
            .unwrap_or_else(|| panic!("no {suffix} in {}", d.display())),
    )
}

#[test]
fn a_missing_path_says_no_such_directory() {
    for cmd in ["snapshots", "schema", "files", "cat"] {
        let e = error(&[cmd, "/nonexistent/table"]);
        assert_eq!(e, "no such directory: /nonexistent/table", "{cmd}");
    }
    let e = error(&["snapshots", "/nonexistent/v1.metadata.json"]);
    assert_eq!(e, "no such file: /nonexistent/v1.metadata.json");
    let mnt = tempfile::tempdir().unwrap();
    let e = error(&["mount", "/nonexistent/table", &path_str(mnt.path())]);
    assert_eq!(e, "no such directory: /nonexistent/table");
}

#[test]
fn a_warehouse_lists_its_tables() {
    let warehouse = path_str(&fixtures_dir().join("warehouse"));
    let e = error(&["snapshots", &warehouse]);
    assert!(
        e.starts_with(&format!("{warehouse} is a warehouse, not a table")),
        "{e}"
    );
    assert!(
        e.contains("db/equality_deletes_v2, db/equality_deletes_v3, db/partitioned"),
        "{e}"
    );
    assert!(
        e.contains(&format!("e.g. {warehouse}/db/equality_deletes_v2")),
        "{e}"
    );
    // 14 tables: the first ten named, then how many more.
    assert!(e.contains(" and 4 more"), "{e}");
    // A namespace directory: its tables one level down.
    let ns = path_str(&fixtures_dir().join("warehouse/db"));
    let e = error(&["files", &ns]);
    assert!(
        e.contains("equality_deletes_v2, equality_deletes_v3"),
        "{e}"
    );
}

#[test]
fn a_file_of_another_kind_says_which() {
    let cases = [
        (file_in("v3_basic", "data", ".parquet"), "a Parquet file"),
        (file_in("v3_basic", "data", ".puffin"), "a Puffin file"),
        (
            file_in("v3_basic", "metadata", "-m0.avro"),
            "an Avro file (a manifest or manifest list)",
        ),
        (
            file_in("v3_basic", "metadata", "version-hint.text"),
            "a table's version hint",
        ),
    ];
    for (path, kind) in &cases {
        let e = error(&["snapshots", path]);
        assert!(e.starts_with(&format!("{path} is {kind}")), "{e}");
        assert!(e.contains("not a table: give the table's directory"), "{e}");
    }
    let meta = format!("{}/metadata", table("v3_basic"));
    let e = error(&["cat", &meta]);
    assert_eq!(
        e,
        format!(
            "{meta} is the metadata directory of the table {}; give the table's directory",
            table("v3_basic")
        )
    );
    let empty = tempfile::tempdir().unwrap();
    let e = error(&["snapshots", &path_str(empty.path())]);
    assert!(
        e.ends_with("is not a table: it has no metadata/ directory and there is no table under it"),
        "{e}"
    );
}

#[test]
fn a_storage_error_names_its_cause_once() {
    let copy = copy_table(&fixtures_dir().join("warehouse/db/v3_basic"));
    // The first snapshot's data files, gone from storage.
    let first = "1761960242105632244";
    let doc = run::json(&[
        "files",
        &path_str(copy.path()),
        "--snapshot",
        first,
        "--format",
        "json",
    ]);
    let mut names = Vec::new();
    for f in doc["files"].as_array().unwrap() {
        let name = f["data_file"]
            .as_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .to_string();
        std::fs::remove_file(copy.path().join("data").join(&name)).unwrap();
        names.push(name);
    }
    let e = error(&["cat", &path_str(copy.path()), "--snapshot", first]);
    let name = names
        .iter()
        .find(|n| e.contains(n.as_str()))
        .unwrap_or_else(|| panic!("{e}"));
    assert_eq!(
        e.matches(name.as_str()).count(),
        1,
        "the file is named once: {e}"
    );
    assert!(
        e.to_lowercase().contains("no such file"),
        "the cause is given: {e}"
    );
}

#[test]
fn mount_daemon_prints_the_background_process_error() {
    // An empty directory is neither a table nor a warehouse: the background process fails
    // before mounting, and its message is the command's.
    let empty = tempfile::tempdir().unwrap();
    let mnt = tempfile::tempdir().unwrap();
    let log = mnt.path().with_extension("log");
    for extra in [vec![], vec!["--log-file", log.to_str().unwrap()]] {
        let src = path_str(empty.path());
        let mut args = vec!["mount", &src, mnt.path().to_str().unwrap(), "--daemon"];
        args.extend(extra);
        let e = error(&args);
        assert!(e.contains("no Iceberg table at"), "{e}");
        assert!(!e.contains("without --daemon"), "{e}");
    }
    let _ = std::fs::remove_file(log);
}
