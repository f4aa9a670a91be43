//! Metadata functions beside `icefloe_snapshots`, over the Iceberg table a foreign table
//! reads (SELECT on it required; the scan's rules apply): `icefloe_files` (live data and
//! delete files of a snapshot, with deletion-vector cardinalities), `icefloe_manifests`,
//! `icefloe_refs` and `icefloe_history` (the snapshot log). They read the metadata version
//! pinned for the statement or transaction, as scans do.

use icefloe_core::scan::plan::live_entries;
use icefloe_core::spec::{DataContent, ManifestContent, RefType, Snapshot};
use icefloe_core::{SnapshotSelector, Table};
use pgrx::datum::TimestampWithTimeZone;
use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::access::open_foreign_table;
use crate::error::{FdwError, OrReport};
use crate::options::PG_EPOCH_OFFSET_MICROS;
use crate::runtime;

fn timestamp(ms: i64) -> Option<TimestampWithTimeZone> {
    ms.checked_mul(1000)
        .and_then(|v| v.checked_sub(PG_EPOCH_OFFSET_MICROS))
        .and_then(|v| TimestampWithTimeZone::try_from(v).ok())
}

/// The snapshot `snapshot` names, else the one the foreign table reads.
fn snapshot_of(
    relid: pg_sys::Oid,
    snapshot: Option<i64>,
) -> Result<(Table, Option<Snapshot>), FdwError> {
    let (t, r) = open_foreign_table(relid)?;
    let sel = match snapshot {
        Some(id) => SnapshotSelector::Id(id),
        None => r.selector,
    };
    let s = t.select(&sel)?.cloned();
    Ok((t, s))
}

/// The live data and delete files of a snapshot (by default the one the foreign table
/// reads). `deleted_rows` is the cardinality of a deletion vector, or the row count of a
/// position or equality delete file.
#[pg_extern]
#[allow(clippy::type_complexity)]
fn icefloe_files(
    foreign_table: pg_sys::Oid,
    snapshot_id: default!(Option<i64>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(content, String),
        name!(file_path, String),
        name!(file_format, String),
        name!(spec_id, i32),
        name!(record_count, i64),
        name!(file_size_in_bytes, i64),
        name!(sequence_number, i64),
        name!(first_row_id, Option<i64>),
        name!(referenced_data_file, Option<String>),
        name!(deleted_rows, Option<i64>),
    ),
> {
    let (t, s) = snapshot_of(foreign_table, snapshot_id).or_report();
    let Some(s) = s else {
        return TableIterator::new(Vec::new());
    };
    let entries = runtime::block_on_interruptible(live_entries(&t, &s))
        .or_report()
        .map_err(FdwError::from)
        .or_report();
    let rows: Vec<_> = entries
        .into_iter()
        .map(|e| {
            let f = e.data_file;
            let content = match f.content {
                DataContent::Data => "data",
                DataContent::PositionDeletes if f.is_deletion_vector() => "deletion_vector",
                DataContent::PositionDeletes => "position_deletes",
                DataContent::EqualityDeletes => "equality_deletes",
            };
            let deleted = (f.content != DataContent::Data).then_some(f.record_count);
            (
                content.to_string(),
                f.file_path.clone(),
                format!("{:?}", f.file_format).to_lowercase(),
                f.spec_id,
                f.record_count,
                f.file_size_in_bytes,
                e.sequence_number,
                f.first_row_id,
                f.referenced_data_file.clone(),
                deleted,
            )
        })
        .collect();
    TableIterator::new(rows)
}

/// The manifests of a snapshot's manifest list (by default the snapshot the foreign table
/// reads).
#[pg_extern]
#[allow(clippy::type_complexity)]
fn icefloe_manifests(
    foreign_table: pg_sys::Oid,
    snapshot_id: default!(Option<i64>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(manifest_path, String),
        name!(manifest_length, i64),
        name!(content, String),
        name!(partition_spec_id, i32),
        name!(sequence_number, i64),
        name!(min_sequence_number, i64),
        name!(added_snapshot_id, i64),
        name!(added_files_count, Option<i64>),
        name!(existing_files_count, Option<i64>),
        name!(deleted_files_count, Option<i64>),
        name!(added_rows_count, Option<i64>),
        name!(existing_rows_count, Option<i64>),
        name!(deleted_rows_count, Option<i64>),
        name!(first_row_id, Option<i64>),
    ),
> {
    let (t, s) = snapshot_of(foreign_table, snapshot_id).or_report();
    let Some(s) = s else {
        return TableIterator::new(Vec::new());
    };
    let list = runtime::block_on_interruptible(t.manifest_list(&s))
        .or_report()
        .map_err(FdwError::from)
        .or_report();
    let rows: Vec<_> = list
        .iter()
        .map(|m| {
            (
                m.manifest_path.clone(),
                m.manifest_length,
                match m.content {
                    ManifestContent::Data => "data",
                    ManifestContent::Deletes => "deletes",
                }
                .to_string(),
                m.partition_spec_id,
                m.sequence_number,
                m.min_sequence_number,
                m.added_snapshot_id,
                m.added_files_count,
                m.existing_files_count,
                m.deleted_files_count,
                m.added_rows_count,
                m.existing_rows_count,
                m.deleted_rows_count,
                m.first_row_id,
            )
        })
        .collect();
    TableIterator::new(rows)
}

/// The branches and tags of the table, by name.
#[pg_extern]
#[allow(clippy::type_complexity)]
fn icefloe_refs(
    foreign_table: pg_sys::Oid,
) -> TableIterator<
    'static,
    (
        name!(name, String),
        name!(ref_type, String),
        name!(snapshot_id, i64),
    ),
> {
    let (t, _) = open_foreign_table(foreign_table).or_report();
    let mut rows: Vec<_> = t
        .metadata()
        .refs
        .iter()
        .map(|(name, r)| {
            (
                name.clone(),
                match r.ref_type {
                    RefType::Branch => "branch",
                    RefType::Tag => "tag",
                }
                .to_string(),
                r.snapshot_id,
            )
        })
        .collect();
    rows.sort();
    TableIterator::new(rows)
}

/// The snapshot log: when each snapshot became current on `main`, oldest first, and whether
/// it is an ancestor of the current snapshot (a rollback leaves entries that are not).
#[pg_extern]
#[allow(clippy::type_complexity)]
fn icefloe_history(
    foreign_table: pg_sys::Oid,
) -> TableIterator<
    'static,
    (
        name!(made_current_at, Option<TimestampWithTimeZone>),
        name!(snapshot_id, i64),
        name!(parent_id, Option<i64>),
        name!(is_current_ancestor, bool),
    ),
> {
    let (t, _) = open_foreign_table(foreign_table).or_report();
    let m = t.metadata();
    let ancestors: std::collections::HashSet<i64> = m
        .current_snapshot_id
        .map(|id| icefloe_core::history::range::ancestors(m, id))
        .unwrap_or_default()
        .iter()
        .map(|s| s.snapshot_id)
        .collect();
    let rows: Vec<_> = m
        .snapshot_log
        .iter()
        .map(|e| {
            (
                timestamp(e.timestamp_ms),
                e.snapshot_id,
                m.snapshot(e.snapshot_id).and_then(|s| s.parent_snapshot_id),
                ancestors.contains(&e.snapshot_id),
            )
        })
        .collect();
    TableIterator::new(rows)
}
