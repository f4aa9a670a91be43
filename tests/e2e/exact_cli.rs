//! The `icefloe` binary on the issue-7 Spark tables: metadata columns through `--columns`, and
//! the schema rule of current, branch, tag and snapshot reads (tests/gen/exact_sem.py).

use std::process::Command;

use icefloe_testkit::{diff_rows, fixtures_dir};
use serde_json::Value;

fn cat(args: &[&str]) -> Vec<Value> {
    let o = Command::new(env!("CARGO_BIN_EXE_icefloe"))
        .arg("cat")
        .args(args)
        .args(["--format", "jsonl"])
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

fn exact(rel: &str) -> String {
    fixtures_dir()
        .join("exact")
        .join(rel)
        .to_str()
        .unwrap()
        .to_string()
}

fn reads(table: &str) -> Vec<Value> {
    let m: Value = serde_json::from_str(
        &std::fs::read_to_string(exact(&format!("expected/{table}/manifest.json"))).unwrap(),
    )
    .unwrap();
    m["reads"].as_array().unwrap().clone()
}

fn expected(table: &str, name: &str) -> Vec<Value> {
    std::fs::read_to_string(exact(&format!("expected/{table}/{name}.jsonl")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn metadata_columns_select_with_columns() {
    let t = exact("warehouse/db/meta_columns");
    for r in reads("meta_columns") {
        let id = r["selector"]["snapshot"].as_i64().unwrap().to_string();
        let got = cat(&[
            &t,
            "--snapshot",
            &id,
            "--columns",
            "_file,_pos,_spec_id,_partition,id,cat,ts",
        ]);
        let name = r["name"].as_str().unwrap();
        if let Some(d) = diff_rows(&got, &expected("meta_columns", name)) {
            panic!("{name}: {d}");
        }
    }
}

#[test]
fn current_and_branch_use_the_current_schema_tags_the_snapshots() {
    let t = exact("warehouse/db/schema_rule");
    for (args, name) in [
        (vec![], "current"),
        (vec!["--ref", "dev"], "branch-dev"),
        (vec!["--ref", "before_b"], "tag-before_b"),
    ] {
        let mut a = vec![t.as_str(), "--lineage"];
        a.extend(args);
        let got = cat(&a);
        if let Some(d) = diff_rows(&got, &expected("schema_rule", name)) {
            panic!("{name}: {d}");
        }
        let want_keys: Vec<String> = expected("schema_rule", name)[0]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        let keys: Vec<String> = got[0].as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, want_keys, "{name}");
    }
}
