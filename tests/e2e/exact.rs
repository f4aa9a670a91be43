//! corners the public fixtures do not reach, over tables
//! written by Spark 3.5.9 + Iceberg 1.10.2 (`tests/gen/exact_sem.py`, expected rows as Spark
//! reads them) and scripted edits of them where no writer produces the case.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use futures::TryStreamExt;
use icefloe_core::cache::Caches;
use icefloe_core::encode::jsonl::JsonLinesWriter;
use icefloe_core::{Scan, SnapshotSelector, Table};
use icefloe_testkit::{copy_table, diff_rows, fixtures_dir};
use serde_json::Value;

fn exact_dir() -> PathBuf {
    fixtures_dir().join("exact")
}

fn table_dir(name: &str) -> PathBuf {
    exact_dir().join("warehouse/db").join(name)
}

/// The reads Spark made of a table (`expected/<table>/manifest.json`).
fn reads(table: &str) -> Vec<Value> {
    let p = exact_dir()
        .join("expected")
        .join(table)
        .join("manifest.json");
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    m["reads"].as_array().unwrap().clone()
}

fn expected(table: &str, name: &str) -> Vec<Value> {
    let p = exact_dir()
        .join("expected")
        .join(table)
        .join(format!("{name}.jsonl"));
    std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn jsonl(batches: &[RecordBatch]) -> Vec<Value> {
    let mut w = JsonLinesWriter::new(Vec::new());
    for b in batches {
        w.write_batch(b).unwrap();
    }
    String::from_utf8(w.finish().unwrap())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

async fn scan_rows(
    table: &Table,
    sel: SnapshotSelector,
    lineage: bool,
    columns: Option<&[&str]>,
) -> icefloe_core::Result<Vec<Value>> {
    let mut b = Scan::builder().snapshot(sel).lineage(lineage);
    if let Some(c) = columns {
        b = b.columns(c.iter().map(|s| s.to_string()).collect());
    }
    let scan = b.build(table)?;
    let batches: Vec<RecordBatch> = scan.stream().await?.try_collect().await?;
    Ok(jsonl(&batches))
}

async fn read(
    dir: &Path,
    sel: SnapshotSelector,
    lineage: bool,
    columns: Option<&[&str]>,
) -> icefloe_core::Result<Vec<Value>> {
    let table = Table::open_with(dir.to_str().unwrap(), Arc::new(Caches::new(16 << 20))).await?;
    scan_rows(&table, sel, lineage, columns).await
}

/// The selector a recorded Spark read used.
fn selector(r: &Value) -> SnapshotSelector {
    let s = &r["selector"];
    if let Some(id) = s["snapshot"].as_i64() {
        SnapshotSelector::Id(id)
    } else if let Some(name) = s["ref"].as_str() {
        SnapshotSelector::Ref(name.to_string())
    } else if let Some(ms) = s["as_of_ms"].as_i64() {
        SnapshotSelector::AsOf(ms)
    } else {
        SnapshotSelector::Current
    }
}

/// Every read Spark could make of `table` gives the same rows here (keys in the same order).
async fn matches_spark(table: &str, lineage: bool, columns: Option<&[&str]>) {
    let mut checked = 0;
    for r in reads(table) {
        if r.get("spark_read_error").is_some() {
            continue;
        }
        let name = r["name"].as_str().unwrap();
        let got = read(&table_dir(table), selector(&r), lineage, columns)
            .await
            .unwrap_or_else(|e| panic!("{table}/{name}: {e}"));
        let want = expected(table, name);
        if let Some(d) = diff_rows(&got, &want) {
            panic!("{table}/{name}: {d}");
        }
        let cols: Vec<&str> = r["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        for row in &got {
            let keys: Vec<&str> = row
                .as_object()
                .unwrap()
                .keys()
                .map(|k| k.as_str())
                .collect();
            assert_eq!(keys, cols, "{table}/{name}");
        }
        checked += 1;
    }
    assert!(checked >= 2, "{table}: only {checked} reads checked");
}

/// Item 1: after a V2 -> V3 upgrade a copy-on-write DELETE rewrites a manifest whose DELETED
/// entry comes before EXISTING ones; DELETED entries take no row id range, so every snapshot's
/// `_row_id`s are distinct and equal Spark's.
#[tokio::test(flavor = "multi_thread")]
async fn row_ids_after_upgrade_and_copy_on_write_delete_match_spark() {
    matches_spark("lineage_v2_cow", true, None).await;
    for r in reads("lineage_v2_cow") {
        let rows = read(&table_dir("lineage_v2_cow"), selector(&r), true, None)
            .await
            .unwrap();
        let ids: Vec<i64> = rows.iter().filter_map(|r| r["_row_id"].as_i64()).collect();
        let distinct: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(
            distinct.len(),
            ids.len(),
            "{}: duplicate _row_id",
            r["name"]
        );
    }
}

/// Item 4: Hive files added with `system.add_files` hold no partition columns; `p` and
/// `region` read from each file's identity partition values.
#[tokio::test(flavor = "multi_thread")]
async fn identity_partition_columns_absent_from_added_files_read_the_partition_tuple() {
    matches_spark("add_files_identity", false, None).await;
}

/// Item 6: current and branch reads use the current schema (a column added and one renamed
/// without a new snapshot); snapshot id, tag and timestamp reads use the snapshot's schema.
#[tokio::test(flavor = "multi_thread")]
async fn current_and_branches_read_with_the_current_schema_others_with_the_snapshots() {
    matches_spark("schema_rule", true, None).await;
    let table = Table::open(table_dir("schema_rule").to_str().unwrap())
        .await
        .unwrap();
    let names = |sel: SnapshotSelector| {
        let (s, schema) = table.resolve(&sel).unwrap();
        let s = s.cloned();
        (
            s,
            schema
                .columns()
                .iter()
                .map(|f| f.name.clone())
                .collect::<Vec<_>>(),
        )
    };
    let (cur, cur_cols) = names(SnapshotSelector::Current);
    assert_eq!(cur_cols, ["id", "a_renamed", "c"]);
    let (_, by_id) = names(SnapshotSelector::Id(cur.unwrap().snapshot_id));
    assert_eq!(by_id, ["id", "a"]);
    assert_eq!(names(SnapshotSelector::Ref("dev".into())).1, cur_cols);
    assert_eq!(
        names(SnapshotSelector::Ref("before_b".into())).1,
        ["id", "a"]
    );
}

/// Item 14: `_file`, `_pos`, `_spec_id` and `_partition` (across a partition spec change, with
/// a deletion vector) equal Spark's metadata columns.
#[tokio::test(flavor = "multi_thread")]
async fn metadata_columns_match_spark() {
    matches_spark(
        "meta_columns",
        false,
        Some(&["_file", "_pos", "_spec_id", "_partition", "id", "cat", "ts"]),
    )
    .await;
}

/// Item 7: one long-lived set of caches reads the table before and after `p` (an identity
/// partition source) is promoted int -> long and a position delete is written in partition
/// p=1; it must return what fresh caches (and Spark) return.
#[tokio::test(flavor = "multi_thread")]
async fn a_long_lived_cache_reads_what_a_fresh_process_reads_after_evolution() {
    let dir = table_dir("promote_delete");
    let caches = Arc::new(Caches::new(16 << 20));
    // The table as it was after the first INSERT: p is still an int.
    let before = Table::open_with(
        dir.join("metadata/v2.metadata.json").to_str().unwrap(),
        caches.clone(),
    )
    .await
    .unwrap();
    let first = scan_rows(&before, SnapshotSelector::Current, false, None)
        .await
        .unwrap();
    assert_eq!(first.len(), 5);
    let after = Table::open_with(dir.to_str().unwrap(), caches.clone())
        .await
        .unwrap();
    for r in reads("promote_delete") {
        if r.get("spark_read_error").is_some() {
            continue;
        }
        let name = r["name"].as_str().unwrap();
        let got = scan_rows(&after, selector(&r), false, None).await.unwrap();
        let fresh = read(&dir, selector(&r), false, None).await.unwrap();
        if let Some(d) = diff_rows(&got, &expected("promote_delete", name)) {
            panic!("long-lived cache, {name}: {d}");
        }
        assert!(diff_rows(&fresh, &got).is_none(), "{name}");
    }
}

/// Rewrites the current schema of a copied table's newest metadata file.
fn edit_current_schema(dir: &Path, edit: impl FnOnce(&mut Value)) {
    let meta = dir.join("metadata");
    let v: u32 = std::fs::read_to_string(meta.join("version-hint.text"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let p = meta.join(format!("v{v}.metadata.json"));
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    let id = m["current-schema-id"].clone();
    let schema = m["schemas"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|s| s["schema-id"] == id)
        .unwrap();
    edit(schema);
    std::fs::write(&p, serde_json::to_string(&m).unwrap()).unwrap();
}

fn set_type(schema: &mut Value, name: &str, ty: &str) {
    let f = schema["fields"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|f| f["name"] == name)
        .unwrap();
    f["type"] = Value::from(ty);
}

/// Item 5: a promotion or cast that does not fit is an error naming the file, never NULL.
/// Scripted edit of the Spark table `cast_edges` (no engine writes these): its `d` date column
/// (holding 9999-12-31) promoted to `timestamp_ns` (valid in v3, but that date is past
/// 2262-04-11), and its `raw` binary column typed `string`, as files from writers that store
/// strings as unannotated BYTE_ARRAY read (its bytes ff00fe are not UTF-8).
#[tokio::test(flavor = "multi_thread")]
async fn a_promotion_or_cast_that_does_not_fit_is_an_error() {
    let ok = read(
        &table_dir("cast_edges"),
        SnapshotSelector::Current,
        false,
        None,
    )
    .await
    .unwrap();
    assert!(diff_rows(&ok, &expected_current("cast_edges")).is_none());

    let t = copy_table(&table_dir("cast_edges"));
    edit_current_schema(t.path(), |s| set_type(s, "d", "timestamp"));
    let rows = read(
        t.path(),
        SnapshotSelector::Current,
        false,
        Some(&["id", "d"]),
    )
    .await
    .unwrap();
    let want: Vec<Value> = serde_json::from_str(
        r#"[{"id":1,"d":"2024-01-01T00:00:00.000000"},{"id":2,"d":"9999-12-31T00:00:00.000000"}]"#,
    )
    .unwrap();
    assert!(diff_rows(&rows, &want).is_none(), "{rows:?}");

    edit_current_schema(t.path(), |s| set_type(s, "d", "timestamp_ns"));
    let e = read(
        t.path(),
        SnapshotSelector::Current,
        false,
        Some(&["id", "d"]),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(e.contains("timestamp_ns") && e.contains(".parquet"), "{e}");

    let t = copy_table(&table_dir("cast_edges"));
    edit_current_schema(t.path(), |s| set_type(s, "raw", "string"));
    let e = read(t.path(), SnapshotSelector::Current, false, Some(&["raw"]))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("UTF") && e.contains(".parquet"), "{e}");
}

fn expected_current(table: &str) -> Vec<Value> {
    let r = reads(table)
        .into_iter()
        .rfind(|r| r.get("spark_read_error").is_none())
        .unwrap();
    expected(table, r["name"].as_str().unwrap())
}

/// Item 3: defaults of nested types, by a scripted edit of `cast_edges` that adds columns with
/// no new snapshot (Spark 3.5 DDL cannot set defaults): a struct whose `initial-default` is `{}`
/// takes each sub-field's own `initial-default` (or null); a list and a map default read as
/// their JSON single-value serialization says, a list of structs with `{}` elements too.
#[tokio::test(flavor = "multi_thread")]
async fn nested_defaults_take_the_sub_fields_defaults() {
    let t = copy_table(&table_dir("cast_edges"));
    let added: Value = serde_json::from_str(
        r#"[
        {"id": 100, "name": "pt", "required": false, "initial-default": {}, "write-default": {},
         "type": {"type": "struct", "fields": [
            {"id": 101, "name": "x", "required": false, "type": "int", "initial-default": 7, "write-default": 8},
            {"id": 102, "name": "y", "required": false, "type": "string", "initial-default": "why"},
            {"id": 103, "name": "z", "required": false, "type": "long"},
            {"id": 104, "name": "inner", "required": false, "initial-default": {},
             "type": {"type": "struct", "fields": [
                {"id": 105, "name": "deep", "required": true, "type": "date", "initial-default": "2024-02-29", "write-default": "2024-02-29"}]}}]}},
        {"id": 106, "name": "tags", "required": false, "initial-default": ["a", null, "c"],
         "type": {"type": "list", "element-id": 107, "element": "string", "element-required": false}},
        {"id": 108, "name": "attrs", "required": false,
         "initial-default": {"keys": ["k1", "k2"], "values": [1, null]},
         "type": {"type": "map", "key-id": 109, "key": "string", "value-id": 110, "value": "int", "value-required": false}},
        {"id": 111, "name": "pts", "required": false, "initial-default": [{}, {}],
         "type": {"type": "list", "element-id": 112, "element-required": false, "element": {"type": "struct", "fields": [
            {"id": 113, "name": "q", "required": false, "type": "int", "initial-default": 3}]}}}
    ]"#,
    )
    .unwrap();
    edit_current_schema(t.path(), |s| {
        s["fields"]
            .as_array_mut()
            .unwrap()
            .extend(added.as_array().unwrap().iter().cloned());
    });
    {
        // last-column-id covers the new ids.
        let meta = t.path().join("metadata");
        let v = std::fs::read_to_string(meta.join("version-hint.text")).unwrap();
        let p = meta.join(format!("v{}.metadata.json", v.trim()));
        let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        m["last-column-id"] = Value::from(113);
        std::fs::write(&p, serde_json::to_string(&m).unwrap()).unwrap();
    }
    let cols = ["id", "pt", "tags", "attrs", "pts"];
    let rows = read(t.path(), SnapshotSelector::Current, false, Some(&cols))
        .await
        .unwrap();
    let one = r#"{"pt":{"x":7,"y":"why","z":null,"inner":{"deep":"2024-02-29"}},
        "tags":["a",null,"c"],"attrs":[{"key":"k1","value":1},{"key":"k2","value":null}],
        "pts":[{"q":3},{"q":3}]}"#;
    let want: Vec<Value> = [1, 2]
        .iter()
        .map(|id| {
            let mut v: Value = serde_json::from_str(one).unwrap();
            let mut o = serde_json::Map::new();
            o.insert("id".into(), Value::from(*id));
            o.extend(v.as_object_mut().unwrap().clone());
            Value::Object(o)
        })
        .collect();
    if let Some(d) = diff_rows(&rows, &want) {
        panic!("{d}");
    }
}

/// Item 2: `v3_variant` with every data file's variant column shredded (`typed_value`; the
/// scripted edit is `tests/gen/shred_variant.rs`) reads back, snapshot by snapshot, the very
/// values Iceberg Java read from the unshredded table.
#[tokio::test(flavor = "multi_thread")]
async fn shredded_variants_read_back_the_same_values() {
    let dir = table_dir("v3_variant_shredded");
    // The edit really shredded the files.
    let data = dir.join("data");
    let mut shredded = 0;
    for e in std::fs::read_dir(&data).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "parquet") {
            let b = bytes::Bytes::from(std::fs::read(&p).unwrap());
            let r =
                parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(b).unwrap();
            let text = format!("{:?}", r.schema());
            shredded += usize::from(text.contains("typed_value"));
        }
    }
    assert_eq!(shredded, 3);
    let mut checked = 0;
    for s in icefloe_testkit::all_snapshots()
        .into_iter()
        .filter(|s| s.table == "v3_variant")
    {
        let got = read(&dir, SnapshotSelector::Id(s.snapshot_id), true, None)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", s.snapshot_id));
        if let Some(d) = diff_rows(&got, &s.expected_rows()) {
            panic!("{}: {d}", s.snapshot_id);
        }
        checked += 1;
    }
    assert_eq!(checked, 4);
}
