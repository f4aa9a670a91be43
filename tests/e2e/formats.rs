//! Tables whose data and delete files are Avro or ORC, and equality deletes keyed on fields
//! nested in structs (tests/fixtures/formats, written by tests/gen/gen-formats with Spark 3.5.9,
//! Iceberg 1.10.2 and the Iceberg Java API): every snapshot reads as Spark reads it, with
//! schema evolution, defaults, deletes and row lineage applied as for Parquet.

use icefloe_testkit::rows;

use icefloe_core::spec::FileFormat;
use icefloe_core::{Scan, Table};
use icefloe_testkit::{diff_rows, fixtures_dir, snapshots_in};

/// Reads every snapshot of the tables named `prefix*`; returns the failures.
async fn check(prefix: &str) -> usize {
    let snaps: Vec<_> = snapshots_in(&fixtures_dir().join("formats"))
        .into_iter()
        .filter(|s| s.table.starts_with(prefix))
        .collect();
    assert!(snaps.len() >= 6, "{prefix}: {} snapshots", snaps.len());
    let mut failures = Vec::new();
    for s in &snaps {
        match rows::fixture_rows(s, 7).await {
            Err(e) => failures.push(format!(
                "{}@{} ({}): {e}",
                s.table, s.snapshot_id, s.operation
            )),
            Ok(got) => {
                if let Some(d) = diff_rows(&got, &s.expected_rows()) {
                    failures.push(format!(
                        "{}@{} ({}): {d}",
                        s.table, s.snapshot_id, s.operation
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} snapshots differ:\n{}",
        failures.len(),
        snaps.len(),
        failures.join("\n")
    );
    snaps.len()
}

/// The formats of the files a table's current snapshot reads: data and delete files.
async fn formats(table: &str) -> (Vec<FileFormat>, Vec<FileFormat>) {
    let dir = fixtures_dir().join("formats/warehouse/db").join(table);
    let t = Table::open(dir.to_str().unwrap()).await.unwrap();
    let tasks = Scan::builder()
        .build(&t)
        .unwrap()
        .plan_files()
        .await
        .unwrap();
    let data = tasks.iter().map(|t| t.data_file.file_format).collect();
    let deletes = tasks
        .iter()
        .flat_map(|t| t.position_deletes.iter().chain(&t.equality_deletes))
        .map(|d| d.file.file_format)
        .collect();
    (data, deletes)
}

#[tokio::test(flavor = "multi_thread")]
async fn avro_tables_read_as_spark_reads_them() {
    let (data, deletes) = formats("avro_v2").await;
    assert!(data.iter().all(|f| *f == FileFormat::Avro), "{data:?}");
    assert!(deletes.len() >= 3 && deletes.iter().all(|f| *f == FileFormat::Avro));
    check("avro_").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn orc_tables_read_as_spark_reads_them() {
    let (data, deletes) = formats("orc_v2").await;
    assert!(data.iter().all(|f| *f == FileFormat::Orc), "{data:?}");
    assert!(deletes.len() >= 3 && deletes.iter().all(|f| *f == FileFormat::Orc));
    check("orc_").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn parquet_twins_read_as_spark_reads_them() {
    check("parquet_").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn equality_deletes_on_nested_fields() {
    let dir = fixtures_dir().join("formats/warehouse/db/eq_nested");
    let t = Table::open(dir.to_str().unwrap()).await.unwrap();
    let tasks = Scan::builder()
        .build(&t)
        .unwrap()
        .plan_files()
        .await
        .unwrap();
    // s.k, (id, s.tag) and s.inner.z: ids of fields inside the struct s.
    let mut ids: Vec<Vec<i32>> = tasks
        .iter()
        .flat_map(|t| {
            t.equality_deletes
                .iter()
                .map(|d| d.file.equality_ids.clone())
        })
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "{ids:?}");
    check("eq_nested").await;
}
