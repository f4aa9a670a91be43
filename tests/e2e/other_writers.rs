//! Tables written by other writers than Spark (tests/fixtures/other_writers, made by
//! tests/gen/gen-other-writers): DuckDB 1.5.5 and 1.5.3 through the test REST catalog, PyIceberg
//! 0.12, the Iceberg Java API for shapes other writers are known to write, and one crafted
//! metadata file. Every snapshot reads as Spark 3.5.9 + Iceberg 1.10.2 reads it (Iceberg Java's
//! generic reader for a `time` column), row lineage included; each class of other-writer
//! behaviour first checks that its table still has the shape it stands for (so a regenerated
//! fixture cannot silently stop covering it), then reads it.

use icefloe_testkit::rows;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use apache_avro::types::Value as Avro;
use icefloe_core::Table;
use icefloe_testkit::{diff_rows, fixtures_dir, snapshots_in};
use parquet::file::reader::FileReader;
use parquet::file::serialized_reader::SerializedFileReader;
use serde_json::Value;

fn root() -> PathBuf {
    fixtures_dir().join("other_writers")
}

fn table_dir(table: &str) -> PathBuf {
    root().join("warehouse/db").join(table)
}

/// `expected/<table>/manifest.json`.
fn manifest(table: &str) -> Value {
    let p = root().join("expected").join(table).join("manifest.json");
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

/// Reads every snapshot of `tables` (all tables when empty); returns one line per snapshot
/// that fails (table, snapshot, operation, error or difference) and the number read.
async fn failures(tables: &[&str]) -> (Vec<String>, usize) {
    let snaps: Vec<_> = snapshots_in(&root())
        .into_iter()
        .filter(|s| tables.is_empty() || tables.contains(&s.table.as_str()))
        .collect();
    let mut out = Vec::new();
    for s in &snaps {
        let what = format!("{}@{} ({})", s.table, s.snapshot_id, s.operation);
        // Batches of 5 rows: deletes and positions cross batches.
        match rows::fixture_rows(s, 5).await {
            Err(e) => out.push(format!("{what}: error: {e}")),
            Ok(got) => {
                if let Some(d) = diff_rows(&got, &s.expected_rows()) {
                    out.push(format!("{what}: rows differ: {d}"));
                }
            }
        }
    }
    (out, snaps.len())
}

/// Every snapshot of `tables` reads as Spark reads it.
async fn check(tables: &[&str]) {
    let (failed, read) = failures(tables).await;
    assert!(read >= tables.len(), "{tables:?}: {read} snapshots");
    assert!(
        failed.is_empty(),
        "{} of {read} snapshots differ from Spark's read:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// Reads snapshot `id` of `table` (strict or not): each rule the read warned of with the
/// warning's detail, or the error.
async fn warnings_of(
    table: &str,
    id: i64,
    strict: bool,
) -> Result<Vec<(&'static str, String)>, String> {
    Ok(
        rows::rows_and_warnings(&table_dir(table), id, strict, false)
            .await?
            .1,
    )
}

fn digitless(s: &str) -> String {
    s.chars().filter(|c| !c.is_ascii_digit()).collect()
}

/// The refusal policy on a writer's table: snapshots of `table` that break `rule` read (as
/// [`check`] shows, Spark's rows) with a warning naming it, and with `--strict` they are
/// refused by the error of one of the read's warnings (the same detail, numbers aside). At least
/// one snapshot must break it.
async fn strict_refuses(table: &str, rule: &str) {
    let mut broke = 0;
    for s in snapshots_in(&root())
        .into_iter()
        .filter(|s| s.table == table)
    {
        let id = s.snapshot_id;
        let found = warnings_of(table, id, false)
            .await
            .unwrap_or_else(|e| panic!("{table}@{id}: {e}"));
        if found.iter().any(|(r, _)| *r == rule) {
            broke += 1;
            match warnings_of(table, id, true).await {
                Ok(r) => panic!("{table}@{id}: read strict with warnings {r:?}"),
                // The same rule broken, perhaps in another file first: compared without
                // numbers (counts, ids).
                Err(e) => assert!(
                    found
                        .iter()
                        .any(|(_, detail)| digitless(&e).contains(&digitless(detail))),
                    "{table}@{id}: the strict error is none of the warnings {found:?}: {e}"
                ),
            }
        }
    }
    assert!(broke >= 1, "{table}: no snapshot warns of {rule}");
}

/// A table that breaks no rule: every snapshot reads without a warning, strict too.
async fn no_warnings(table: &str) {
    for s in snapshots_in(&root())
        .into_iter()
        .filter(|s| s.table == table)
    {
        let id = s.snapshot_id;
        let found = warnings_of(table, id, true)
            .await
            .unwrap_or_else(|e| panic!("{table}@{id}: refused strict: {e}"));
        assert!(found.is_empty(), "{table}@{id}: {found:?}");
    }
}

/// Every snapshot of every table: the whole list of what does not read as Spark reads it.
#[tokio::test(flavor = "multi_thread")]
async fn every_snapshot_reads_as_spark_reads_it() {
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("index.json")).unwrap()).unwrap();
    assert!(index["tables"].as_array().unwrap().len() >= 19);
    check(&[]).await;
}

// ---- reading the tables' own files (not through the core under test) --------------------------

/// A path as a table records it (absolute, with or without `file:`), in the fixture copy.
fn local(table: &str, recorded: &str) -> PathBuf {
    let original = manifest(table)["original_location"]
        .as_str()
        .unwrap()
        .trim_start_matches("file:")
        .trim_start_matches("//")
        .to_string();
    let path = recorded
        .trim_start_matches("file:")
        .trim_start_matches("//");
    let rest = path
        .strip_prefix(&original)
        .unwrap_or_else(|| panic!("{recorded} is not below {original}"));
    table_dir(table).join(rest.trim_start_matches('/'))
}

/// The table's last metadata file, as JSON.
fn metadata(table: &str) -> Value {
    let m = manifest(table);
    let p = table_dir(table).join(m["current_metadata"].as_str().unwrap());
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn avro_json(v: &Avro) -> Value {
    match v {
        Avro::Null => Value::Null,
        Avro::Boolean(b) => Value::Bool(*b),
        Avro::Int(i) => Value::from(*i),
        Avro::Long(i) => Value::from(*i),
        Avro::String(s) => Value::String(s.clone()),
        Avro::Bytes(b) | Avro::Fixed(_, b) => {
            Value::String(b.iter().map(|x| format!("{x:02x}")).collect())
        }
        Avro::Union(_, inner) => avro_json(inner),
        Avro::Array(a) => Value::Array(a.iter().map(avro_json).collect()),
        Avro::Map(m) => Value::Object(m.iter().map(|(k, x)| (k.clone(), avro_json(x))).collect()),
        Avro::Record(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, x)| (k.clone(), avro_json(x)))
                .collect(),
        ),
        other => Value::String(format!("{other:?}")),
    }
}

/// The records of an Avro file (a manifest list or a manifest), as JSON.
fn avro_records(p: &Path) -> Vec<Value> {
    let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    apache_avro::Reader::new(&bytes[..])
        .unwrap()
        .map(|r| avro_json(&r.unwrap()))
        .collect()
}

/// Every snapshot of the table's last metadata with its manifest list's entries.
fn manifest_lists(table: &str) -> Vec<(Value, Vec<Value>)> {
    let meta = metadata(table);
    meta["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let list = local(table, s["manifest-list"].as_str().unwrap());
            (s.clone(), avro_records(&list))
        })
        .collect()
}

/// The entries of the manifest a manifest list entry names.
fn entries(table: &str, list_entry: &Value) -> Vec<Value> {
    avro_records(&local(table, list_entry["manifest_path"].as_str().unwrap()))
}

// ---- class: identity partition columns only in the path and the partition tuple -----------------

const HIVE: [&str; 11] = [
    "hive_boolean",
    "hive_int",
    "hive_long",
    "hive_float",
    "hive_double",
    "hive_decimal",
    "hive_binary",
    "hive_timestamp",
    "hive_timestamptz",
    "hive_time",
    "hive_nested",
];

/// Hive-style data files that do not store their identity partition columns, while the
/// manifest records counts and bounds for those columns (taken from the partition value),
/// read as Iceberg Java reads them: the column's value is the partition value.
#[tokio::test(flavor = "multi_thread")]
async fn hive_style_files_read_their_partition_values() {
    for table in HIVE {
        let meta = metadata(table);
        let schema = &meta["schemas"][0]["fields"];
        let spec = &meta["partition-specs"][0]["fields"];
        let part_ids: Vec<i64> = spec
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["source-id"].as_i64().unwrap())
            .collect();
        let part_names: Vec<&str> = schema
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| part_ids.contains(&f["id"].as_i64().unwrap()))
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        let (_, list) = manifest_lists(table).pop().unwrap();
        let mut files = 0;
        for mf in &list {
            for e in entries(table, mf) {
                let df = &e["data_file"];
                let path = local(table, df["file_path"].as_str().unwrap());
                let bytes = bytes::Bytes::from(std::fs::read(&path).unwrap());
                let reader = SerializedFileReader::new(bytes).unwrap();
                let stored: Vec<String> = reader
                    .metadata()
                    .file_metadata()
                    .schema_descr()
                    .columns()
                    .iter()
                    .map(|c| c.name().to_string())
                    .collect();
                for name in &part_names {
                    assert!(
                        !stored.iter().any(|c| c == name),
                        "{table}: {path:?} stores {name}"
                    );
                }
                let bounded: Vec<i64> = df["lower_bounds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|kv| kv["key"].as_i64().unwrap())
                    .collect();
                for id in &part_ids {
                    assert!(
                        bounded.contains(id),
                        "{table}: no bound for field {id}: {df}"
                    );
                }
                files += 1;
            }
        }
        assert!(files >= 2, "{table}: {files} data files");
    }
    check(&HIVE).await;
    // Valid tables (spec: "Column Projection": a field id absent from a data file takes its
    // identity partition value; metrics may name any field id): no warning, read strict too.
    for table in HIVE {
        no_warnings(table).await;
    }
}

/// PyIceberg's `add_files` of Hive-style files without the partition column: PyIceberg 0.12
/// records a null partition value and no metrics for the column, so Java reads it as NULL.
#[tokio::test(flavor = "multi_thread")]
async fn pyiceberg_add_files_of_hive_style_files() {
    let (_, list) = manifest_lists("pyiceberg_add_files").remove(0);
    let nulls = list
        .iter()
        .flat_map(|mf| entries("pyiceberg_add_files", mf))
        .filter(|e| e["data_file"]["partition"]["p"].is_null())
        .count();
    assert_eq!(
        nulls, 2,
        "two files added without p, with a null partition value"
    );
    check(&["pyiceberg_add_files"]).await;
}

// ---- class: initial-default and write-default in format-version 2 metadata ------------------------

fn has_default(fields: &Value, nested: bool) -> bool {
    fields.as_array().unwrap().iter().any(|f| {
        let own = f.get("initial-default").is_some() && f.get("write-default").is_some();
        let inner = f["type"]
            .get("fields")
            .is_some_and(|sub| has_default(sub, false));
        if nested {
            inner
        } else {
            own || inner
        }
    })
}

/// PyIceberg writes `initial-default` and `write-default` into format-version 2 metadata, top
/// level and inside a struct; Iceberg Java reads such tables and applies the defaults.
#[tokio::test(flavor = "multi_thread")]
async fn pyiceberg_defaults_in_format_version_2() {
    let meta = metadata("pyiceberg_defaults");
    assert_eq!(meta["format-version"], 2);
    let schema = meta["schemas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["schema-id"] == meta["current-schema-id"])
        .unwrap();
    assert!(
        has_default(&schema["fields"], false),
        "no top-level default"
    );
    assert!(
        has_default(&schema["fields"], true),
        "no default inside a struct"
    );
    check(&["pyiceberg_defaults"]).await;
    strict_refuses("pyiceberg_defaults", "newer-format-feature").await;
}

// ---- class: format-version 1 manifest list counts that disagree with the manifest ----------------

/// A format-version 1 manifest list whose `added_files_count`/`added_rows_count` disagree with
/// its manifest (counts are optional in v1 and written loosely by some writers): Iceberg Java
/// reads the manifest's entries.
#[tokio::test(flavor = "multi_thread")]
async fn v1_manifest_list_counts_disagreeing_with_the_manifest() {
    assert_eq!(metadata("v1_loose_counts")["format-version"], 1);
    let mut loose = 0;
    for (_, list) in manifest_lists("v1_loose_counts") {
        for mf in &list {
            let es = entries("v1_loose_counts", mf);
            let rows: i64 = es
                .iter()
                .map(|e| e["data_file"]["record_count"].as_i64().unwrap())
                .sum();
            if mf["added_rows_count"].as_i64() != Some(rows)
                || mf["added_files_count"].as_i64() != Some(es.len() as i64)
            {
                loose += 1;
            }
        }
    }
    assert!(
        loose >= 2,
        "{loose} manifest list entries disagree with their manifests"
    );
    check(&["v1_loose_counts"]).await;
    strict_refuses("v1_loose_counts", "manifest-counts").await;
}

// ---- class: deletion vectors without a Puffin footer (DuckDB 1.5.3) --------------------------------

/// DuckDB 1.5.3 wrote each deletion vector alone in its file, without Puffin's magic and
/// footer: the blob at the manifest's `content_offset`/`content_size_in_bytes` is a valid DV.
#[tokio::test(flavor = "multi_thread")]
async fn bare_deletion_vector_files() {
    let table = "duckdb153_v3";
    let (_, list) = manifest_lists(table).pop().unwrap();
    let mut bare = 0;
    for mf in list.iter().filter(|mf| mf["content"] == 1) {
        for e in entries(table, mf) {
            let df = &e["data_file"];
            assert!(df["content_offset"].is_i64(), "{df}");
            let bytes = std::fs::read(local(table, df["file_path"].as_str().unwrap())).unwrap();
            assert_ne!(&bytes[..4], b"PFA1", "{df}");
            assert_ne!(&bytes[bytes.len() - 4..], b"PFA1", "{df}");
            bare += 1;
        }
    }
    assert!(bare >= 2, "{bare} bare deletion vectors");
    check(&[table]).await;
    strict_refuses(table, "puffin-footer").await;
}

// ---- class: delete manifests with a first_row_id (DuckDB 1.5) --------------------------------------

/// DuckDB 1.5 sets a `first_row_id` on every delete manifest of a format-version 3 table (the
/// spec says null); it is meaningless for deletes and Iceberg Java ignores it.
#[tokio::test(flavor = "multi_thread")]
async fn delete_manifests_with_a_first_row_id() {
    for table in ["duckdb_v3", "duckdb153_v3"] {
        let with_id = manifest_lists(table)
            .iter()
            .flat_map(|(_, l)| l.iter())
            .filter(|mf| mf["content"] == 1 && mf["first_row_id"].is_i64())
            .count();
        assert!(
            with_id >= 1,
            "{table}: no delete manifest with a first_row_id"
        );
    }
    check(&["duckdb_v3", "duckdb153_v3"]).await;
    for table in ["duckdb_v3", "duckdb153_v3"] {
        strict_refuses(table, "delete-manifest-first-row-id").await;
    }
}

// ---- class: row-id bookkeeping after a DuckDB MERGE -------------------------------------------------

/// After a MERGE, DuckDB 1.5.5's snapshots and manifest lists disagree on row ids: a snapshot's
/// `first-row-id` differs from the `first_row_id` of the data manifest it added. Iceberg Java
/// reads row ids from the manifests (and from the files, where DuckDB stored `_row_id`).
#[tokio::test(flavor = "multi_thread")]
async fn row_ids_after_a_duckdb_merge() {
    let table = "duckdb_v3";
    let mut disagree = BTreeMap::new();
    for (s, list) in manifest_lists(table) {
        let id = &s["snapshot-id"];
        for mf in list
            .iter()
            .filter(|mf| mf["content"] == 0 && &mf["added_snapshot_id"] == id)
        {
            if mf["first_row_id"] != s["first-row-id"] {
                disagree.insert(
                    id.to_string(),
                    (s["first-row-id"].clone(), mf["first_row_id"].clone()),
                );
            }
        }
    }
    assert!(
        !disagree.is_empty(),
        "every snapshot's first-row-id agrees with its manifests"
    );
    check(&[table]).await;
    strict_refuses(table, "row-id-assignment").await;
}

// ---- the other tables, each by its writer ------------------------------------------------------

/// After partition evolution DuckDB writes the delete manifests of the new spec with a
/// partition tuple holding every spec's fields, and deletes for files of the old spec in them:
/// read as Iceberg Java reads them (the spec's fields by field id; a delete that names its
/// data file applies to it by path), with warnings, refused strict.
#[tokio::test(flavor = "multi_thread")]
async fn duckdb_format_version_2() {
    check(&["duckdb_v2"]).await;
    for table in ["duckdb_v2", "duckdb_v3"] {
        strict_refuses(table, "partition-tuple-fields").await;
    }
    // A deletion vector in a manifest of spec 1 for a data file of spec 0.
    strict_refuses("duckdb_v3", "delete-partition").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pyiceberg_format_versions_1_and_2() {
    assert_eq!(metadata("pyiceberg_v1")["format-version"], 1);
    assert_eq!(metadata("pyiceberg_v2")["format-version"], 2);
    check(&["pyiceberg_v1", "pyiceberg_v2"]).await;
}

// ---- class: a snapshot id outside the range of a long -----------------------------------------------

/// A metadata file whose snapshot-id is 9223372036854775808 (one past the largest long): Iceberg
/// Java cannot parse it, and reading it would need an id no reader can hold: refused, with an
/// error naming the metadata file.
#[tokio::test(flavor = "multi_thread")]
async fn snapshot_id_beyond_a_long_is_refused() {
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("index.json")).unwrap()).unwrap();
    let refused = index["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 1);
    let dir = root().join(refused[0]["table_dir"].as_str().unwrap());
    let meta = std::fs::read_dir(dir.join("metadata"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.to_str()
                .unwrap()
                .ends_with("crafted-snapshot-id.metadata.json")
        })
        .unwrap();
    assert!(std::fs::read_to_string(&meta)
        .unwrap()
        .contains("9223372036854775808"));
    // Opened by its metadata file: the refusal, not the choice of the current file, is tested.
    let result = match Table::open(meta.to_str().unwrap()).await {
        Err(e) => Err(e.to_string()),
        Ok(t) => rows::rows(&t, None).await.map(|r| r.len()),
    };
    match result {
        Ok(n) => panic!("read {n} rows of a table whose snapshot id is beyond a long"),
        Err(e) => assert!(
            e.contains("crafted-snapshot-id.metadata.json"),
            "the error names the metadata file: {e}"
        ),
    }
}
