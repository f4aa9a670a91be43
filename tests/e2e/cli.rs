//! The `icefloe` binary as users run it: every fixture snapshot through `icefloe cat`, the
//! listing commands, time travel flags, and clean one-line errors for bad input.

use std::process::{Command, Output};

use icefloe_testkit::{all_snapshots, csv_to_rows, diff_rows, fixtures_dir, parse_csv};
use serde_json::Value;

fn icefloe(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_icefloe"))
        .args(args)
        .output()
        .expect("run icefloe")
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "icefloe failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("UTF-8 output")
}

fn table(name: &str) -> String {
    fixtures_dir()
        .join("warehouse/db")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

#[test]
fn cat_jsonl_and_csv_match_every_snapshot() {
    let mut failures = Vec::new();
    for s in all_snapshots() {
        let dir = s.table_dir.to_str().unwrap();
        let id = s.snapshot_id.to_string();
        let want = s.expected_rows();
        let out = stdout(&icefloe(&[
            "cat",
            dir,
            "--snapshot",
            &id,
            "--format",
            "jsonl",
            "--lineage",
        ]));
        let got: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON line"))
            .collect();
        if let Some(d) = diff_rows(&got, &want) {
            failures.push(format!("jsonl {}@{id}: {d}", s.table));
        }
        let out = stdout(&icefloe(&["cat", dir, "--snapshot", &id, "--lineage"]));
        let got = csv_to_rows(&parse_csv(&out), &want);
        if let Some(d) = diff_rows(&got, &want) {
            failures.push(format!("csv {}@{id}: {d}", s.table));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn snapshots_lists_every_snapshot_with_refs() {
    let out = stdout(&icefloe(&[
        "snapshots",
        &table("v3_basic"),
        "--format",
        "csv",
    ]));
    let rows: Vec<&str> = out.lines().collect();
    let snaps: Vec<_> = all_snapshots()
        .into_iter()
        .filter(|s| s.table == "v3_basic")
        .collect();
    assert_eq!(rows.len(), snaps.len() + 1);
    assert!(rows[0].starts_with("snapshot_id,parent_id,sequence_number,timestamp,operation,refs"));
    let tagged = rows
        .iter()
        .find(|r| r.contains("after_update"))
        .expect("tag listed");
    let tag_snapshot = snaps
        .iter()
        .find(|s| s.refs.iter().any(|r| r.ends_with("after_update")))
        .unwrap();
    assert!(tagged.starts_with(&tag_snapshot.snapshot_id.to_string()));
}

#[test]
fn ref_and_columns_select_rows_and_order() {
    let snaps: Vec<_> = all_snapshots()
        .into_iter()
        .filter(|s| s.table == "v3_basic")
        .collect();
    let tagged = snaps
        .iter()
        .find(|s| s.refs.iter().any(|r| r.ends_with("after_update")))
        .unwrap();
    let out = stdout(&icefloe(&[
        "cat",
        &table("v3_basic"),
        "--ref",
        "after_update",
        "--format",
        "jsonl",
        "--columns",
        "name,id",
    ]));
    let got: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let want: Vec<Value> = tagged
        .expected_rows()
        .into_iter()
        .map(|r| serde_json::json!({"name": r["name"], "id": r["id"]}))
        .collect();
    assert_eq!(diff_rows(&got, &want), None);
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with("{\"name\":"),
        "columns keep the asked order: {first}"
    );
}

#[test]
fn schema_and_files_describe_the_table() {
    let out = stdout(&icefloe(&["schema", &table("v3_defaults")]));
    assert!(out.contains("c_int") && out.contains("Int(7)"), "{out}");
    let out = stdout(&icefloe(&[
        "files",
        &table("v3_dv_large"),
        "--format",
        "csv",
    ]));
    // One data file of 70,000 rows with a DV of 15,673 positions.
    assert!(
        out.lines()
            .any(|l| l.contains(",70000,") && l.contains(",15673,") && l.contains("dv ")),
        "{out}"
    );
}

#[test]
fn bad_input_is_one_clean_line() {
    let cases: &[(&[&str], &str)] = &[
        (&["cat", "/nonexistent/table"], "no such directory"),
        (
            &["cat", &table("v3_basic"), "--snapshot", "42"],
            "snapshot 42 not found",
        ),
        (
            &["cat", &table("v3_basic"), "--ref", "nope"],
            "no branch or tag named \"nope\"",
        ),
        (
            &["cat", &table("v3_basic"), "--columns", "nope"],
            "no column \"nope\"",
        ),
        (
            &["cat", &table("v3_basic"), "--as-of", "yesterday"],
            "cannot read time",
        ),
        (
            &["cat", &table("v3_basic"), "--as-of", "1970-01-01T00:00:00Z"],
            "no snapshot of main was current",
        ),
    ];
    for (args, needle) in cases {
        let o = icefloe(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.starts_with("icefloe: ") && err.contains(needle),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?} printed rows");
    }
}

#[test]
fn parquet_output_file_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rows.parquet");
    let o = icefloe(&[
        "cat",
        &table("v3_dv_large"),
        "--format",
        "parquet",
        "--lineage",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(&bytes[..4], b"PAR1");
    let snaps: Vec<_> = all_snapshots()
        .into_iter()
        .filter(|s| s.table == "v3_dv_large")
        .collect();
    let current = snaps.last().unwrap();
    // The footer's row count equals the live rows of the current snapshot.
    let meta_len =
        u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap()) as usize;
    assert!(meta_len > 0 && meta_len < bytes.len());
    let rows = stdout(&icefloe(&[
        "cat",
        &table("v3_dv_large"),
        "--format",
        "csv",
        "--columns",
        "id",
    ]))
    .lines()
    .count()
        - 1;
    assert_eq!(rows, current.expected_rows().len());
}

#[test]
fn help_version_completions_and_man() {
    let version = stdout(&icefloe(&["--version"]));
    assert_eq!(
        version.trim(),
        format!(
            "icefloe {} (reads Iceberg table format versions 1, 2 and 3)",
            env!("CARGO_PKG_VERSION")
        )
    );
    // <TABLE> is described the same way in every subcommand, under the same headings.
    for cmd in ["snapshots", "schema", "files", "cat"] {
        let help = stdout(&icefloe(&[cmd, "--help"]));
        assert!(
            help.contains("Usage: icefloe ") && help.contains("<TABLE>"),
            "{cmd}: {help}"
        );
        assert!(
            help.contains("The table: its root directory (the one holding metadata/)"),
            "{cmd}: {help}"
        );
        assert!(help.contains("\nOutput:\n"), "{cmd}: {help}");
        if cmd != "snapshots" {
            assert!(
                help.contains("\nSnapshot (default: the current snapshot of main):\n"),
                "{cmd}: {help}"
            );
        }
    }
    let bash = stdout(&icefloe(&["completions", "bash"]));
    assert!(
        bash.contains("_icefloe()") && bash.contains("snapshots"),
        "{bash}"
    );
    let zsh = stdout(&icefloe(&["completions", "zsh"]));
    assert!(zsh.starts_with("#compdef icefloe"), "{zsh}");
    let fish = stdout(&icefloe(&["completions", "fish"]));
    assert!(fish.contains("complete -c icefloe"), "{fish}");
    let man = stdout(&icefloe(&["man"]));
    assert!(
        man.contains(".TH icefloe 1") && man.contains("snapshots"),
        "{man}"
    );
    let dir = tempfile::tempdir().unwrap();
    stdout(&icefloe(&["man", "--dir", dir.path().to_str().unwrap()]));
    for page in [
        "icefloe.1",
        "icefloe-cat.1",
        "icefloe-files.1",
        "icefloe-mount.1",
    ] {
        assert!(dir.path().join(page).is_file(), "{page}");
    }
}
