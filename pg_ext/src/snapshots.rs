//! `icefloe_snapshots(table, server)`: the snapshots of an Iceberg table, oldest first.

use icefloe_core::Table;
use pgrx::datum::TimestampWithTimeZone;
use pgrx::prelude::*;

use crate::error::{FdwError, OrReport};
use crate::options;
use pgrx::pg_sys;

/// The icefloe server to use when none is named: the only one there is.
fn only_server() -> Result<String, FdwError> {
    let names: Vec<String> = Spi::connect(|client| {
        client
            .select(
                "SELECT s.srvname::text FROM pg_foreign_server s JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw \
                 WHERE w.fdwname = 'icefloe' ORDER BY 1",
                None,
                &[],
            )?
            .map(|row| row.get::<String>(1).map(Option::unwrap_or_default))
            .collect::<Result<Vec<_>, _>>()
    })
    .map_err(|e| FdwError::Internal(e.to_string()))?;
    match names.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(FdwError::Options(
            "no server of foreign-data wrapper icefloe exists".into(),
        )),
        many => Err(FdwError::Options(format!(
            "several icefloe servers exist ({}): name one as the second argument",
            many.join(", ")
        ))),
    }
}

/// Opens `table` (a name or location) through `server` (default: the only icefloe server)
/// with a scan's checks: the one path every function that takes a table by name uses.
pub(crate) fn open(table: &str, server: Option<&str>) -> Result<Table, FdwError> {
    let server_name = match server {
        Some(s) => s.to_string(),
        None => only_server()?,
    };
    Ok(crate::access::open_by_name(table, &server_name)?.0)
}

/// Lists the snapshots of an Iceberg table (`'namespace.table'` under the server's warehouse,
/// or a table location), oldest first, with the refs pointing at each and the row counts of
/// its summary. `server` may be omitted when there is only one icefloe server.
#[pg_extern]
#[allow(clippy::type_complexity)]
fn icefloe_snapshots(
    table: &str,
    server: default!(Option<&str>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(snapshot_id, i64),
        name!(parent_id, Option<i64>),
        name!(sequence_number, i64),
        name!(committed_at, Option<TimestampWithTimeZone>),
        name!(operation, String),
        name!(refs, Vec<String>),
        name!(is_current, bool),
        name!(schema_id, Option<i32>),
        name!(first_row_id, Option<i64>),
        name!(added_records, Option<i64>),
        name!(deleted_records, Option<i64>),
        name!(total_records, Option<i64>),
    ),
> {
    TableIterator::new(snapshot_rows(&open(table, server).or_report()))
}

/// Lists the snapshots of the Iceberg table a foreign table reads, as
/// `icefloe_snapshots(text)` does; needs SELECT on the foreign table.
#[pg_extern(name = "icefloe_snapshots")]
#[allow(clippy::type_complexity)]
fn icefloe_snapshots_of(
    foreign_table: pg_sys::Oid,
) -> TableIterator<
    'static,
    (
        name!(snapshot_id, i64),
        name!(parent_id, Option<i64>),
        name!(sequence_number, i64),
        name!(committed_at, Option<TimestampWithTimeZone>),
        name!(operation, String),
        name!(refs, Vec<String>),
        name!(is_current, bool),
        name!(schema_id, Option<i32>),
        name!(first_row_id, Option<i64>),
        name!(added_records, Option<i64>),
        name!(deleted_records, Option<i64>),
        name!(total_records, Option<i64>),
    ),
> {
    let (t, _) = crate::access::open_foreign_table(foreign_table).or_report();
    TableIterator::new(snapshot_rows(&t))
}

/// A row of `icefloe_snapshots`.
type SnapshotRow = (
    i64,
    Option<i64>,
    i64,
    Option<TimestampWithTimeZone>,
    String,
    Vec<String>,
    bool,
    Option<i32>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

fn snapshot_rows(t: &Table) -> Vec<SnapshotRow> {
    let m = t.metadata();
    m.snapshots_in_order()
        .into_iter()
        .map(|s| {
            let mut refs: Vec<String> = m
                .refs_of(s.snapshot_id)
                .into_iter()
                .map(str::to_string)
                .collect();
            refs.sort();
            let pg_micros = s
                .timestamp_ms
                .checked_mul(1000)
                .and_then(|v| v.checked_sub(options::PG_EPOCH_OFFSET_MICROS));
            (
                s.snapshot_id,
                s.parent_snapshot_id,
                s.sequence_number,
                pg_micros.and_then(|v| TimestampWithTimeZone::try_from(v).ok()),
                s.operation().to_string(),
                refs,
                m.current_snapshot_id == Some(s.snapshot_id),
                s.schema_id,
                s.first_row_id,
                s.summary_i64("added-records"),
                s.summary_i64("deleted-records"),
                s.summary_i64("total-records"),
            )
        })
        .collect()
}
