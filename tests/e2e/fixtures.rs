//! Every snapshot of every fixture table, read in-process through the core and encoded as
//! JSON Lines, CSV and Parquet, equals the rows the writing engine reads back.

use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use futures::TryStreamExt;
use icefloe_core::encode::csv::CsvWriter;
use icefloe_core::encode::jsonl::JsonLinesWriter;
use icefloe_core::encode::parquet::ParquetWriter;
use icefloe_core::{Scan, SnapshotSelector, Table};
use icefloe_testkit::{all_snapshots, csv_to_rows, diff_rows, parse_csv, FixtureSnapshot};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

async fn read(s: &FixtureSnapshot) -> (Arc<arrow::datatypes::Schema>, Vec<RecordBatch>) {
    let table = Table::open(s.table_dir.to_str().unwrap())
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", s.table));
    let scan = Scan::builder()
        .snapshot(SnapshotSelector::Id(s.snapshot_id))
        .lineage(true)
        .build(&table)
        .unwrap_or_else(|e| panic!("{}@{}: {e}", s.table, s.snapshot_id));
    let batches: Vec<RecordBatch> = async { scan.stream().await?.try_collect().await }
        .await
        .unwrap_or_else(|e: icefloe_core::Error| panic!("{}@{}: {e}", s.table, s.snapshot_id));
    (scan.schema(), batches)
}

fn jsonl(batches: &[RecordBatch]) -> Vec<Value> {
    let mut w = JsonLinesWriter::new(Vec::new());
    for b in batches {
        w.write_batch(b).unwrap();
    }
    let out = String::from_utf8(w.finish().unwrap()).unwrap();
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn check_columns(s: &FixtureSnapshot, rows: &[Value]) {
    for r in rows {
        let keys: Vec<&String> = r.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            s.expected_columns.iter().collect::<Vec<_>>(),
            "{}@{}",
            s.table,
            s.snapshot_id
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn jsonl_matches_every_snapshot() {
    let mut failures = Vec::new();
    let snaps = all_snapshots();
    for s in &snaps {
        let (_, batches) = read(s).await;
        let got = jsonl(&batches);
        check_columns(s, &got);
        if let Some(d) = diff_rows(&got, &s.expected_rows()) {
            failures.push(format!(
                "{}@{} ({}): {d}",
                s.table, s.snapshot_id, s.operation
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} snapshots differ:\n{}",
        failures.len(),
        snaps.len(),
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn csv_matches_every_snapshot() {
    let mut failures = Vec::new();
    for s in &all_snapshots() {
        let (schema, batches) = read(s).await;
        let mut w = CsvWriter::new(Vec::new(), &schema);
        for b in &batches {
            w.write_batch(b).unwrap();
        }
        let text = String::from_utf8(w.finish().unwrap()).unwrap();
        let records = parse_csv(&text);
        let header: Vec<&str> = records[0].iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(header, s.expected_columns, "{}@{}", s.table, s.snapshot_id);
        let want = s.expected_rows();
        let got = csv_to_rows(&records, &want);
        if let Some(d) = diff_rows(&got, &want) {
            failures.push(format!("{}@{}: {d}", s.table, s.snapshot_id));
        }
    }
    assert!(failures.is_empty(), "CSV differs:\n{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn parquet_round_trips_every_snapshot() {
    let mut failures = Vec::new();
    for s in &all_snapshots() {
        let (schema, batches) = read(s).await;
        let mut w = ParquetWriter::new(Vec::new(), &schema).unwrap();
        for b in &batches {
            w.write_batch(b).unwrap();
        }
        let bytes = bytes::Bytes::from(w.finish().unwrap());
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap();
        // Field ids survive: lineage columns carry their reserved ids.
        let pschema = reader.parquet_schema().root_schema().get_fields().to_vec();
        assert_eq!(pschema[0].name(), "_row_id");
        assert_eq!(pschema[0].get_basic_info().id(), 2147483540);
        assert_eq!(pschema[1].get_basic_info().id(), 2147483539);
        let back: Vec<RecordBatch> = reader.build().unwrap().collect::<Result<_, _>>().unwrap();
        let got = jsonl(&back);
        if let Some(d) = diff_rows(&got, &s.expected_rows()) {
            failures.push(format!("{}@{}: {d}", s.table, s.snapshot_id));
        }
    }
    assert!(
        failures.is_empty(),
        "Parquet differs:\n{}",
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn refs_and_time_travel_select_the_right_snapshot() {
    let snaps: Vec<_> = all_snapshots()
        .into_iter()
        .filter(|s| s.table == "v3_basic")
        .collect();
    let table = Table::open(snaps[0].table_dir.to_str().unwrap())
        .await
        .unwrap();
    // Every ref recorded for a snapshot selects it.
    let mut checked = 0;
    for s in &snaps {
        for r in &s.refs {
            // Recorded as `tag:NAME` / `branch:NAME`.
            let name = r.split_once(':').map_or(r.as_str(), |(_, n)| n);
            let got = table
                .select(&SnapshotSelector::Ref(name.to_string()))
                .unwrap()
                .unwrap();
            assert_eq!(got.snapshot_id, s.snapshot_id, "ref {r}");
            checked += 1;
        }
    }
    assert!(checked >= 3, "v3_basic has main, a tag and a branch");
    // As of each main snapshot's commit time, that snapshot is current.
    for e in &table.metadata().snapshot_log {
        let got = table
            .select(&SnapshotSelector::AsOf(e.timestamp_ms))
            .unwrap()
            .unwrap();
        assert_eq!(got.snapshot_id, e.snapshot_id);
    }
    let first = table.metadata().snapshot_log[0].timestamp_ms;
    assert!(table.select(&SnapshotSelector::AsOf(first - 1)).is_err());
    assert!(table.select(&SnapshotSelector::Ref("nope".into())).is_err());
}

/// The live row count from metadata (`scan::live_count`) is the number of rows Spark read at
/// every snapshot where it gives one, and it gives none where a V2 position delete file or an
/// equality delete applies (metadata cannot tell those apart from a read).
#[tokio::test(flavor = "multi_thread")]
async fn live_count_from_metadata_is_the_rows_spark_read() {
    use icefloe_core::scan::live_count::live_rows_from_metadata;
    let (mut counted, mut refused) = (0, 0);
    for s in all_snapshots() {
        let table = Table::open(s.table_dir.to_str().unwrap()).await.unwrap();
        let Ok(scan) = Scan::builder()
            .snapshot(SnapshotSelector::Id(s.snapshot_id))
            .build(&table)
        else {
            continue;
        };
        let tasks = scan.plan_files().await.unwrap();
        let needs_a_read = tasks
            .iter()
            .any(|t| !t.position_deletes.is_empty() || !t.equality_deletes.is_empty());
        match live_rows_from_metadata(&tasks) {
            Some(n) => {
                assert!(!needs_a_read, "{} @ {}", s.table, s.snapshot_id);
                assert_eq!(
                    n as usize,
                    s.expected_rows().len(),
                    "{} @ {}",
                    s.table,
                    s.snapshot_id
                );
                counted += 1;
            }
            None => {
                assert!(needs_a_read, "{} @ {}: no count", s.table, s.snapshot_id);
                refused += 1;
            }
        }
    }
    assert!(
        counted > 40 && refused > 3,
        "{counted} counted, {refused} refused"
    );
}
