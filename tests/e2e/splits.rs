//! The core's part: splits of file scan tasks into parts of row positions
//! (`icefloe_core::scan::split`, what parallel readers share) read, together, exactly the rows
//! of the whole tasks, with lineage, at every snapshot of every fixture table; and a pruned
//! scan (row groups and pages) of the row-group fixture reads the rows an unpruned one does.

use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use futures::{StreamExt, TryStreamExt};
use icefloe_core::encode::jsonl::JsonLinesWriter;
use icefloe_core::scan::split::split_tasks;
use icefloe_core::{Scan, SnapshotSelector, Table};
use icefloe_testkit::{all_snapshots, diff_rows};
use serde_json::Value;

fn rows(batches: &[RecordBatch]) -> Vec<Value> {
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

#[tokio::test]
async fn splits_read_exactly_the_rows_of_their_tasks() {
    let mut checked = 0;
    for s in all_snapshots() {
        let table = Table::open(s.table_dir.to_str().unwrap()).await.unwrap();
        let lineage = table.metadata().format_version >= 3;
        let scan = match Scan::builder()
            .snapshot(SnapshotSelector::Id(s.snapshot_id))
            .lineage(lineage)
            .build(&table)
        {
            Ok(scan) => scan,
            Err(_) => continue, // a snapshot the other tests cover (e.g. variant columns)
        };
        let tasks = scan.plan_files().await.unwrap();
        let Ok(whole) = scan.read_tasks(tasks.clone()).try_collect::<Vec<_>>().await else {
            continue;
        };
        let want = rows(&whole);
        let largest = tasks
            .iter()
            .map(|t| t.data_file.record_count.max(0) as u64)
            .max()
            .unwrap_or(0);
        // Parts of 7 positions where files are small, else about three parts per file.
        for parts in [if largest <= 2000 { 7 } else { largest / 3 + 1 }, 1000] {
            let splits = split_tasks(&tasks, parts);
            let got: Vec<_> = scan
                .read_splits(splits.clone())
                .try_collect()
                .await
                .unwrap();
            if let Some(d) = diff_rows(&rows(&got), &want) {
                panic!("{} @ {} in parts of {parts}: {d}", s.table, s.snapshot_id);
            }
            // Mapped on the decoding task: the same batches, in the same order.
            let f: Arc<dyn Fn(RecordBatch) -> (usize, RecordBatch) + Send + Sync> =
                Arc::new(|b| (b.num_rows(), b));
            let mapped: Vec<_> = scan
                .read_splits_mapped(splits, f)
                .try_collect()
                .await
                .unwrap();
            assert!(mapped.iter().all(|(n, b)| *n == b.num_rows()));
            let mapped: Vec<_> = mapped.into_iter().map(|(_, b)| b).collect();
            if let Some(d) = diff_rows(&rows(&mapped), &want) {
                panic!(
                    "{} @ {} mapped, in parts of {parts}: {d}",
                    s.table, s.snapshot_id
                );
            }
        }
        checked += 1;
    }
    assert!(checked > 40, "{checked} snapshots");
}

/// A mapping that panics on the decoding task ends the stream with an error naming the data
/// file, never a silent end of rows.
#[tokio::test]
async fn a_panicking_mapping_is_an_error_naming_the_file() {
    let dir = icefloe_testkit::fixtures_dir().join("warehouse/db/v3_basic");
    let table = Table::open(dir.to_str().unwrap()).await.unwrap();
    let scan = Scan::builder().build(&table).unwrap();
    let tasks = scan.plan_files().await.unwrap();
    assert!(!tasks.is_empty());
    let splits = split_tasks(&tasks, u64::MAX);
    let f: Arc<dyn Fn(RecordBatch) -> usize + Send + Sync> = Arc::new(|_| panic!("mapping failed"));
    let got: Vec<_> = scan.read_splits_mapped(splits, f).collect().await;
    assert_eq!(got.len(), 1, "the stream stops at its first error");
    let e = got.into_iter().next().unwrap().unwrap_err().to_string();
    let first = tasks[0].data_file.file_path.rsplit('/').next().unwrap();
    assert!(
        e.contains(first) && e.contains("reader panicked: mapping failed"),
        "{e}"
    );
}

/// Page pruning (the Parquet page index) inside the one row group of `pg_edge/pages` (ten
/// pages of 500 ids, ids 4240..4244 deleted by a deletion vector, tests/gen/pg_pages.py):
/// a point lookup reads the one page that may hold the id, and every row it keeps is a row
/// of the unpruned scan.
#[tokio::test]
async fn pages_prune_inside_a_row_group() {
    use icefloe_core::scan::prune::{CmpOp, Predicate};
    use icefloe_core::spec::Literal;
    let dir = icefloe_testkit::fixtures_dir().join("pg_edge/pages");
    let table = Table::open(dir.to_str().unwrap()).await.unwrap();
    let id = table.metadata().current_schema().column("id").unwrap().id;
    let read = |preds: Vec<Predicate>| {
        let table = table.clone();
        async move {
            let scan = Scan::builder()
                .lineage(true)
                .row_group_filter(preds)
                .build(&table)
                .unwrap();
            let b: Vec<_> = scan.stream().await.unwrap().try_collect().await.unwrap();
            rows(&b)
        }
    };
    let all = read(vec![]).await;
    assert_eq!(all.len(), 4995);
    let eq = |v: i64| Predicate::Cmp {
        field_id: id,
        op: CmpOp::Eq,
        value: Literal::Long(v),
    };
    for (preds, want_rows) in [
        (vec![eq(4300)], 495),
        (vec![eq(10)], 500),
        (vec![Predicate::Or(vec![eq(10), eq(4999)])], 1000),
        (vec![eq(5000)], 0),
    ] {
        let got = read(preds.clone()).await;
        assert_eq!(got.len(), want_rows, "{preds:?}");
        for r in &got {
            assert!(all.contains(r), "{r} is not a row of the table");
        }
    }
    let got = read(vec![eq(4300)]).await;
    assert!(got.iter().any(|r| r["id"] == 4300));
}

/// What a planner is told a scan decodes (`Scan::rows_to_decode`) on the same table: the
/// pages pruning leaves, deleted positions included (their pages are decoded too); the
/// whole file without a filter, or with more files than footers may be read for.
#[tokio::test]
async fn rows_to_decode_counts_the_pages_pruning_leaves() {
    use icefloe_core::scan::prune::{CmpOp, Predicate};
    use icefloe_core::spec::Literal;
    let dir = icefloe_testkit::fixtures_dir().join("pg_edge/pages");
    let table = Table::open(dir.to_str().unwrap()).await.unwrap();
    let id = table.metadata().current_schema().column("id").unwrap().id;
    let eq = |v: i64| Predicate::Cmp {
        field_id: id,
        op: CmpOp::Eq,
        value: Literal::Long(v),
    };
    for (preds, max_files, want) in [
        (vec![], 64, 5000),
        (vec![eq(4300)], 64, 500),
        (vec![eq(4300)], 0, 5000),
        (vec![eq(10)], 64, 500),
        (vec![Predicate::Or(vec![eq(10), eq(4999)])], 64, 1000),
        (vec![eq(5000)], 64, 0),
    ] {
        let scan = Scan::builder()
            .row_group_filter(preds.clone())
            .build(&table)
            .unwrap();
        let tasks = scan.plan_files().await.unwrap();
        let got = scan.rows_to_decode(&tasks, max_files).await.unwrap();
        assert_eq!(
            got, want,
            "{preds:?} with footers of at most {max_files} files"
        );
    }
}
