//! The history of rows: every version of a row (by `_row_id`) readable in the snapshots the
//! metadata still holds, oldest first (spec: "Row Lineage": a version is a
//! `_last_updated_sequence_number`, made by the snapshot with that sequence number).
//!
//! Each distinct file scan task (a data file with the deletes that apply to it) of all the
//! snapshots is read once, and its rows matching the request are kept; a version's
//! snapshots are those whose tasks yield it. Rows without lineage (format version 2,
//! snapshots before the upgrade to 3) have no `_row_id` and are not part of any history.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, Int64Array, StringArray, UInt32Array};
use arrow::compute::{cast, concat_batches, filter_record_batch, take};
use arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef};
use arrow::record_batch::RecordBatch;
use futures::{StreamExt, TryStreamExt};

use super::retention::Expiry;
use crate::scan::plan::plan_files;
use crate::scan::task::FileScanTask;
use crate::scan::Scan;
use crate::table::{SnapshotSelector, Table};

/// One version of a row: where one of its rows is (batch, row), and the snapshots it is
/// read in.
type Version = ((usize, usize), BTreeSet<i64>);

/// Which rows to follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowSelector {
    /// These `_row_id`s.
    RowIds(Vec<i64>),
    /// The rows whose column `column` reads as `value` (compared as text) in any snapshot.
    Where { column: String, value: String },
}

/// The columns before the table's in a history batch.
pub const HISTORY_COLUMNS: [&str; 10] = [
    "_row_id",
    "_last_updated_sequence_number",
    "made_by_snapshot_id",
    "made_at",
    "operation",
    "first_snapshot_id",
    "last_snapshot_id",
    "readable_snapshots",
    "readable_until",
    "readable_until_ms",
];

/// Reads the history of the rows `sel` names, with each version's retention from `expiry`
/// (an expiry evaluation at some instant; `None`: not evaluated, the columns stay null).
/// One batch, ordered by `_row_id` then version (oldest first), columns
/// [`HISTORY_COLUMNS`] then the table's (current schema).
pub async fn row_history(
    table: &Table,
    sel: &RowSelector,
    expiry: Option<(&Expiry, &HashSet<i64>)>,
) -> crate::Result<RecordBatch> {
    let m = table.metadata();
    let schema = m.current_schema();
    let names: Vec<String> = schema.columns().iter().map(|f| f.name.clone()).collect();
    // The current schema reads every snapshot's files, so all versions share one schema.
    let scan = Scan::builder()
        .snapshot(SnapshotSelector::Current)
        .lineage(true)
        .columns(names.clone())
        .build(table)?;
    // Every snapshot's tasks; identical tasks are read once.
    let mut tasks: Vec<FileScanTask> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut in_snapshot: Vec<BTreeSet<i64>> = Vec::new();
    for s in &m.snapshots {
        for t in plan_files(table, s).await? {
            let k = task_key(&t);
            let i = *index.entry(k).or_insert_with(|| {
                tasks.push(t.clone());
                in_snapshot.push(BTreeSet::new());
                tasks.len() - 1
            });
            in_snapshot[i].insert(s.snapshot_id);
        }
    }
    let ids: HashSet<i64> = match sel {
        RowSelector::RowIds(ids) => ids.iter().copied().collect(),
        RowSelector::Where { column, value } => {
            let col = names.iter().position(|n| n == column).ok_or_else(|| {
                crate::Error::InvalidArgument(format!(
                    "no column {column:?} in the current schema (columns: {})",
                    names.join(", ")
                ))
            })? + 2;
            let found = read_matching(&scan, &tasks, |b| text_equals(b.column(col), value)).await?;
            let mut ids = HashSet::new();
            for (_, b) in &found {
                let rid = int64(b.column(0));
                ids.extend(rid.iter().flatten());
            }
            ids
        }
    };
    let found = read_matching(&scan, &tasks, |b| {
        let rid = int64(b.column(0));
        Ok(rid
            .iter()
            .map(|v| Some(v.is_some_and(|v| ids.contains(&v))))
            .collect())
    })
    .await?;
    // (row id, version) -> its rows and snapshots.
    let mut versions: BTreeMap<(i64, i64), Version> = BTreeMap::new();
    let mut batches = Vec::new();
    for (task, b) in found {
        let bi = batches.len();
        let rid = int64(b.column(0));
        let seq = int64(b.column(1));
        for r in 0..b.num_rows() {
            let key = (rid.value(r), seq.value(r));
            let e = versions
                .entry(key)
                .or_insert_with(|| ((bi, r), BTreeSet::new()));
            e.1.extend(in_snapshot[task].iter().copied());
        }
        batches.push(b);
    }
    let by_seq: HashMap<i64, &crate::spec::Snapshot> =
        m.snapshots.iter().map(|s| (s.sequence_number, s)).collect();
    let seq_of: HashMap<i64, i64> = m
        .snapshots
        .iter()
        .map(|s| (s.snapshot_id, s.sequence_number))
        .collect();
    let n = versions.len();
    let mut made_by = Vec::with_capacity(n);
    let mut made_at = Vec::with_capacity(n);
    let mut operation = Vec::with_capacity(n);
    let mut first = Vec::with_capacity(n);
    let mut last = Vec::with_capacity(n);
    let mut count = Vec::with_capacity(n);
    let mut until = Vec::with_capacity(n);
    let mut until_ms = Vec::with_capacity(n);
    let mut picks: Vec<(usize, usize)> = Vec::with_capacity(n);
    for ((_, seq), (pick, snaps)) in &versions {
        let maker = by_seq.get(seq);
        made_by.push(maker.map(|s| s.snapshot_id));
        made_at.push(maker.map(|s| crate::listing::format_timestamp_ms(s.timestamp_ms)));
        operation.push(maker.map(|s| s.operation().to_string()));
        let mut ordered: Vec<i64> = snaps.iter().copied().collect();
        ordered.sort_by_key(|id| seq_of.get(id).copied().unwrap_or(0));
        first.push(ordered.first().copied());
        last.push(ordered.last().copied());
        count.push(Some(ordered.len() as i64));
        let (text, ms) = match expiry {
            None => (None, None),
            Some((e, kept)) => readable_until(snaps, e, kept),
        };
        until.push(text);
        until_ms.push(ms);
        picks.push(*pick);
    }
    let read_schema = scan.schema();
    let all = concat_all(&read_schema, &batches, &picks)?;
    let mut cols: Vec<ArrayRef> = vec![all.column(0).clone(), all.column(1).clone()];
    cols.push(Arc::new(Int64Array::from(made_by)));
    cols.push(Arc::new(StringArray::from(made_at)));
    cols.push(Arc::new(StringArray::from(operation)));
    cols.push(Arc::new(Int64Array::from(first)));
    cols.push(Arc::new(Int64Array::from(last)));
    cols.push(Arc::new(Int64Array::from(count)));
    cols.push(Arc::new(StringArray::from(until)));
    cols.push(Arc::new(Int64Array::from(until_ms)));
    cols.extend(all.columns()[2..].iter().cloned());
    RecordBatch::try_new(history_schema(&read_schema), cols).map_err(arrow_err)
}

/// The Arrow schema of [`row_history`]'s batch for `table`, known before anything is read:
/// [`HISTORY_COLUMNS`] (`_row_id`, `_last_updated_sequence_number` and the version columns:
/// snapshot ids as `long`, times as text, `readable_until_ms` in milliseconds since the epoch)
/// then the columns of the table's current schema.
pub fn row_history_schema(table: &Table) -> SchemaRef {
    let columns = table.metadata().current_schema().columns().to_vec();
    history_schema(&crate::spec::arrow_schema::scan_schema(&columns, true))
}

/// The history schema over a read schema (`_row_id`, `_last_updated_sequence_number`, the
/// table's columns).
fn history_schema(read_schema: &SchemaRef) -> SchemaRef {
    let mut fields: Vec<Arc<Field>> = vec![
        read_schema.fields()[0].clone(),
        read_schema.fields()[1].clone(),
    ];
    for (name, ty) in [
        ("made_by_snapshot_id", DataType::Int64),
        ("made_at", DataType::Utf8),
        ("operation", DataType::Utf8),
        ("first_snapshot_id", DataType::Int64),
        ("last_snapshot_id", DataType::Int64),
        ("readable_snapshots", DataType::Int64),
        ("readable_until", DataType::Utf8),
        ("readable_until_ms", DataType::Int64),
    ] {
        fields.push(Arc::new(Field::new(name, ty, true)));
    }
    fields.extend(read_schema.fields()[2..].iter().cloned());
    Arc::new(ArrowSchema::new(fields))
}

/// When a version read in `snaps` stops being readable: never if an expiry never removes
/// one of them, else when the last of them expires; `"next expiry"` (ms null) when an
/// expiry now already removes them all.
fn readable_until(
    snaps: &BTreeSet<i64>,
    e: &Expiry,
    kept: &HashSet<i64>,
) -> (Option<String>, Option<i64>) {
    let mut latest: Option<i64> = None;
    let mut any_kept = false;
    for id in snaps {
        if !kept.contains(id) {
            continue;
        }
        any_kept = true;
        match e.snapshots.get(id).copied().flatten() {
            None => return (Some("never".into()), None),
            Some(t) => latest = Some(latest.map_or(t, |l: i64| l.max(t))),
        }
    }
    match (any_kept, latest) {
        (false, _) => (Some("next expiry".into()), None),
        (true, Some(t)) => (Some(crate::listing::format_timestamp_ms(t)), Some(t)),
        (true, None) => (Some("never".into()), None),
    }
}

/// Rows of the tasks that `keep` selects (and that have a `_row_id`), with their task.
async fn read_matching<F>(
    scan: &Scan,
    tasks: &[FileScanTask],
    keep: F,
) -> crate::Result<Vec<(usize, RecordBatch)>>
where
    F: Fn(&RecordBatch) -> crate::Result<BooleanArray>,
{
    let mut out = Vec::new();
    let mut stream = futures::stream::iter(tasks.iter().cloned().enumerate())
        .map(|(i, t)| {
            let scan = scan.clone();
            async move { scan.read_whole(t).await.map(|b| (i, b)) }
        })
        .buffered(4);
    while let Some((i, batches)) = stream.try_next().await? {
        for b in batches {
            let mut mask = keep(&b)?;
            let has_id = int64(b.column(0));
            if has_id.null_count() > 0 {
                mask = mask
                    .iter()
                    .zip(has_id.iter())
                    .map(|(k, id)| Some(k.unwrap_or(false) && id.is_some()))
                    .collect();
            }
            let f = filter_record_batch(&b, &mask).map_err(arrow_err)?;
            if f.num_rows() > 0 {
                out.push((i, f));
            }
        }
    }
    Ok(out)
}

fn text_equals(col: &ArrayRef, value: &str) -> crate::Result<BooleanArray> {
    let text = cast(col, &DataType::Utf8).map_err(arrow_err)?;
    let text = text
        .as_any()
        .downcast_ref::<StringArray>()
        .expect("cast to Utf8");
    Ok(text.iter().map(|v| Some(v == Some(value))).collect())
}

fn int64(a: &ArrayRef) -> &Int64Array {
    a.as_any()
        .downcast_ref::<Int64Array>()
        .expect("lineage columns are Int64")
}

/// The rows `picks` (batch, row) of `batches`, in order.
fn concat_all(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    picks: &[(usize, usize)],
) -> crate::Result<RecordBatch> {
    let all = concat_batches(schema, batches).map_err(arrow_err)?;
    let mut starts = Vec::with_capacity(batches.len());
    let mut acc = 0usize;
    for b in batches {
        starts.push(acc);
        acc += b.num_rows();
    }
    let idx = UInt32Array::from_iter_values(picks.iter().map(|(b, r)| (starts[*b] + r) as u32));
    let cols = all
        .columns()
        .iter()
        .map(|c| take(c, &idx, None).map_err(arrow_err))
        .collect::<crate::Result<Vec<_>>>()?;
    RecordBatch::try_new(schema.clone(), cols).map_err(arrow_err)
}

/// Tasks with the same data file and the same deletes yield the same rows.
fn task_key(t: &FileScanTask) -> String {
    let mut k = t.data_file.file_path.clone();
    if let Some(dv) = &t.deletion_vector {
        k.push_str(&format!(
            "|dv:{}@{:?}",
            dv.file.file_path, dv.file.content_offset
        ));
    }
    let mut other: Vec<&str> = t
        .position_deletes
        .iter()
        .chain(&t.equality_deletes)
        .map(|d| d.file.file_path.as_str())
        .collect();
    other.sort_unstable();
    for p in other {
        k.push('|');
        k.push_str(p);
    }
    k.push_str(&format!("|{:?}", t.first_row_id));
    k
}

fn arrow_err(e: arrow::error::ArrowError) -> crate::Error {
    crate::Error::Unsupported(format!("row history: {e}"))
}
