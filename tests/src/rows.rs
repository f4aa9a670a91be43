//! A snapshot's rows as JSON values, read through the core (`Scan` → batches → JSON Lines),
//! and the fixture snapshots of one table.

use std::path::Path;

use crate::{all_snapshots, FixtureSnapshot};
use arrow::record_batch::RecordBatch;
use futures::TryStreamExt;
use icefloe_core::encode::jsonl::JsonLinesWriter;
use icefloe_core::scan::ScanBuilder;
use icefloe_core::{Scan, SnapshotSelector, Table};
use serde_json::Value;

/// The rows of a snapshot (`None`: current), with lineage columns, as JSON values.
pub async fn rows(table: &Table, snapshot: Option<i64>) -> Result<Vec<Value>, String> {
    let sel = snapshot.map_or(SnapshotSelector::Current, SnapshotSelector::Id);
    scan_rows(Scan::builder().snapshot(sel).lineage(true), table).await
}

/// The rows `builder` reads from `table`, as JSON values.
pub async fn scan_rows(builder: ScanBuilder, table: &Table) -> Result<Vec<Value>, String> {
    let scan = builder.build(table).map_err(|e| e.to_string())?;
    let batches: Vec<RecordBatch> = async { scan.stream().await?.try_collect().await }
        .await
        .map_err(|e: icefloe_core::Error| e.to_string())?;
    to_json_rows(&batches)
}

/// Record batches as JSON values, one per row, in the scan's JSON Lines encoding.
fn to_json_rows(batches: &[RecordBatch]) -> Result<Vec<Value>, String> {
    let mut w = JsonLinesWriter::new(Vec::new());
    for b in batches {
        w.write_batch(b).map_err(|e| e.to_string())?;
    }
    let out = String::from_utf8(w.finish().map_err(|e| e.to_string())?).expect("JSON is UTF-8");
    Ok(out
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON value per line"))
        .collect())
}

/// The rows of a fixture snapshot with lineage columns, read in batches of `batch_size` rows
/// (small, so that deletes and positions cross batches).
pub async fn fixture_rows(s: &FixtureSnapshot, batch_size: usize) -> Result<Vec<Value>, String> {
    let table = Table::open(s.table_dir.to_str().unwrap())
        .await
        .map_err(|e| e.to_string())?;
    let builder = Scan::builder()
        .snapshot(SnapshotSelector::Id(s.snapshot_id))
        .lineage(true)
        .batch_size(batch_size);
    scan_rows(builder, &table).await
}

/// Every fixture snapshot of `table`.
pub fn snapshots_of(table: &str) -> Vec<FixtureSnapshot> {
    all_snapshots()
        .into_iter()
        .filter(|s| s.table == table)
        .collect()
}

/// The fixture snapshot that is current in `table`'s metadata.
pub async fn current_of(table: &str, dir: &Path) -> FixtureSnapshot {
    let t = Table::open(dir.to_str().unwrap()).await.unwrap();
    let id = t.metadata().current_snapshot_id.unwrap();
    snapshots_of(table)
        .into_iter()
        .find(|s| s.snapshot_id == id)
        .unwrap()
}

/// Reads snapshot `id` of the table at `dir` with lineage columns, opened with `strict` (every
/// warning an error): its rows as JSON values and the warnings the read reported, as (rule
/// name, detail). With `preload`, as `icefloe cat` reads: planned, every delete file of the
/// snapshot loaded and checked (`Scan::load_deletes`, unused ones too), then read.
pub async fn rows_and_warnings(
    dir: &Path,
    id: i64,
    strict: bool,
    preload: bool,
) -> Result<(Vec<Value>, Vec<(&'static str, String)>), String> {
    let opts = icefloe_core::OpenOptions {
        strict,
        ..Default::default()
    };
    let caches = std::sync::Arc::new(icefloe_core::cache::Caches::new(32 << 20));
    let table = Table::open_with_options(dir.to_str().expect("UTF-8 path"), caches, &opts)
        .await
        .map_err(|e| e.to_string())?;
    let builder = Scan::builder()
        .snapshot(SnapshotSelector::Id(id))
        .lineage(true);
    let rows = if preload {
        let scan = builder.build(&table).map_err(|e| e.to_string())?;
        let batches: Vec<RecordBatch> = async {
            let tasks = scan.plan_files().await?;
            scan.load_deletes(&tasks).await?;
            scan.read_tasks(tasks).try_collect().await
        }
        .await
        .map_err(|e: icefloe_core::Error| e.to_string())?;
        to_json_rows(&batches)?
    } else {
        scan_rows(builder, &table).await?
    };
    let warnings = table
        .warnings()
        .all()
        .iter()
        .map(|f| (f.warning.rule.name(), f.warning.detail.clone()))
        .collect();
    Ok((rows, warnings))
}

/// Each line of `text` (JSON Lines) as a JSON value; panics naming the line that is not JSON.
pub fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// `rows` as their JSON text, sorted: for comparing reads whose order is not promised.
pub fn sorted(rows: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
    v.sort();
    v
}

/// Change-feed rows without the columns a join of two snapshots on `_row_id` cannot give
/// (`_change_ordinal`, `_commit_snapshot_id`, `_change_sequence_number`).
pub fn without_commit_columns(rows: Vec<Value>) -> Vec<Value> {
    rows.into_iter()
        .map(|mut r| {
            let o = r.as_object_mut().expect("a row is a JSON object");
            for k in [
                "_change_ordinal",
                "_commit_snapshot_id",
                "_change_sequence_number",
            ] {
                o.shift_remove(k);
            }
            r
        })
        .collect()
}
