//! `icefloe cat` never leaves output that looks complete when it fails: an
//! `--output` file appears only when every row was written, and on standard output the
//! delete files are all checked before the first row.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use icefloe_core::{Scan, Table};
use icefloe_testkit::rewrite::rewrite_avro_records;
use icefloe_testkit::{copy_table, fixtures_dir};

fn icefloe(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_icefloe"))
        .args(args)
        .output()
        .expect("run icefloe")
}

fn tasks_of(dir: &Path) -> Vec<icefloe_core::FileScanTask> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let table = Table::open(dir.to_str().unwrap()).await.unwrap();
        let scan = Scan::builder().build(&table).unwrap();
        scan.plan_files().await.unwrap()
    })
}

fn local(dir: &Path, written: &str) -> PathBuf {
    let rel = written.split("/v3_basic/").nth(1).unwrap();
    dir.join(rel)
}

fn only_file(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn failed_cat_leaves_no_output_file() {
    let tmp = copy_table(&fixtures_dir().join("warehouse/db/v3_basic"));
    let tasks = tasks_of(tmp.path());
    assert!(tasks.len() > 1);
    // The last data file goes missing: earlier files' rows are written before the error.
    std::fs::remove_file(local(
        tmp.path(),
        &tasks.last().unwrap().data_file.file_path,
    ))
    .unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("rows.csv");
    let dir = tmp.path().to_str().unwrap();

    let r = icefloe(&["cat", dir, "--output", out.to_str().unwrap()]);
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr).to_string();
    assert!(
        err.contains("missing file") || err.contains("not found"),
        "{err}"
    );
    assert!(
        only_file(out_dir.path()).is_empty(),
        "{:?}",
        only_file(out_dir.path())
    );

    // An existing file is left as it was.
    std::fs::write(&out, "old\n").unwrap();
    let r = icefloe(&["cat", dir, "--output", out.to_str().unwrap()]);
    assert!(!r.status.success());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old\n");
    assert_eq!(only_file(out_dir.path()), ["rows.csv"]);
}

#[test]
fn successful_cat_replaces_the_output_file() {
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("rows.jsonl");
    std::fs::write(&out, "old\n").unwrap();
    let table = fixtures_dir().join("warehouse/db/v3_basic");
    let r = icefloe(&[
        "cat",
        table.to_str().unwrap(),
        "--format",
        "jsonl",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let piped = icefloe(&["cat", table.to_str().unwrap(), "--format", "jsonl"]);
    assert_eq!(std::fs::read(&out).unwrap(), piped.stdout);
    assert!(!piped.stdout.is_empty());
    assert_eq!(only_file(out_dir.path()), ["rows.jsonl"]);
}

#[test]
fn broken_delete_file_fails_before_the_first_row() {
    let tmp = copy_table(&fixtures_dir().join("warehouse/db/v3_basic"));
    let tasks = tasks_of(tmp.path());
    let dv = tasks
        .iter()
        .rev()
        .find_map(|t| t.deletion_vector.clone())
        .unwrap();
    let puffin = local(tmp.path(), &dv.file.file_path);
    let mut bytes = std::fs::read(&puffin).unwrap();
    let at =
        (dv.file.content_offset.unwrap() + dv.file.content_size_in_bytes.unwrap() - 1) as usize;
    bytes[at] ^= 1;
    std::fs::write(&puffin, bytes).unwrap();
    let r = icefloe(&["cat", tmp.path().to_str().unwrap(), "--format", "jsonl"]);
    assert!(!r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("CRC"));
    assert!(r.stdout.is_empty(), "{} bytes printed", r.stdout.len());
}

/// A table that breaks a rule without changing its rows (a delete manifest with a
/// `first_row_id`, as DuckDB writes): `icefloe cat` prints the rows and one warning line on
/// standard error naming the file and the rule; with `--strict` it refuses the table.
#[test]
fn cat_warns_once_and_strict_refuses() {
    let tmp = copy_table(&fixtures_dir().join("warehouse/db/v3_basic"));
    let dir = tmp.path().to_str().unwrap();
    let want = icefloe(&["cat", dir, "--format", "jsonl"]);
    assert!(want.status.success());
    assert!(
        want.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&want.stderr)
    );
    let mut edited = 0;
    for e in std::fs::read_dir(tmp.path().join("metadata")).unwrap() {
        let p = e.unwrap().path();
        if !p
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("snap-")
        {
            continue;
        }
        rewrite_avro_records(&p, |mut v| {
            if let apache_avro::types::Value::Record(fields) = &mut v {
                let delete = fields
                    .iter()
                    .any(|(n, v)| n == "content" && matches!(v, apache_avro::types::Value::Int(1)));
                if delete {
                    for (n, v) in fields.iter_mut() {
                        if n == "first_row_id" {
                            *v = apache_avro::types::Value::Union(
                                1,
                                Box::new(apache_avro::types::Value::Long(7)),
                            );
                            edited += 1;
                        }
                    }
                }
            }
            Some(v)
        });
    }
    assert!(edited > 0);

    let r = icefloe(&["cat", dir, "--format", "jsonl"]);
    assert!(r.status.success());
    assert_eq!(
        r.stdout, want.stdout,
        "rows differ from the unedited table's"
    );
    let err = String::from_utf8_lossy(&r.stderr).to_string();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one warning per table: {err}");
    for part in [
        "icefloe: warning:",
        "snap-",
        "first_row_id 7",
        "[delete-manifest-first-row-id]",
        "--strict",
    ] {
        assert!(lines[0].contains(part), "warning lacks {part:?}: {err}");
    }

    let r = icefloe(&["cat", dir, "--format", "jsonl", "--strict"]);
    assert!(!r.status.success());
    assert!(r.stdout.is_empty());
    let err = String::from_utf8_lossy(&r.stderr).to_string();
    assert!(err.starts_with("icefloe: invalid manifest"), "{err}");
    assert!(err.contains("first_row_id 7"), "{err}");
}
