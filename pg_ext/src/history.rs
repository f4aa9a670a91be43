//! Row history from lineage in SQL, all read-only and each over one table opened with a
//! scan's checks ([`crate::access`]):
//!
//! - `icefloe_changes(table, from_snapshot, to_snapshot, net, key)`: the core's change feed as
//!   typed rows. It returns `SETOF record`: the column definition list names the columns
//!   wanted (change columns, lineage, the table's) with their types, as a foreign table's
//!   declaration does, while the range stays an argument of the query.
//! - `icefloe_history(table, row_id)`: every readable version of a row.
//! - `icefloe_retention(table [, now])`: the dry run of snapshot expiry.
//! - `icefloe_orphans(table [, older_than])`: files no metadata references.
//!
//! `table` is a foreign table (`'t'::regclass`, SELECT on it required) or, as for
//! `icefloe_snapshots`, a `namespace.table` or location read through a server.

use arrow::array::{Array, Int64Array};
use arrow::record_batch::RecordBatch;
use icefloe_core::encode::value::value_to_json;
use icefloe_core::history::orphans::{orphan_files, DEFAULT_OLDER_THAN_MS};
use icefloe_core::history::retention::{ExpiryRun, Overrides, Policy};
use icefloe_core::history::row_history::{row_history, RowSelector, HISTORY_COLUMNS};
use icefloe_core::history::ChangeFeed;
use icefloe_core::Table;
use pgrx::datum::TimestampWithTimeZone;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::JsonB;

use crate::convert::{natural_type, natural_typmod, plan_kind, ColumnReader, Kind};
use crate::error::{FdwError, OrReport};
use crate::options::PG_EPOCH_OFFSET_MICROS;
use crate::{pgutil, runtime};

/// Which table a function reads.
enum TableArg {
    /// A foreign table.
    Foreign(pg_sys::Oid),
    /// A `namespace.table` or location, through a server (default: the only one).
    Named {
        table: String,
        server: Option<String>,
    },
}

impl TableArg {
    fn open(&self) -> Result<Table, FdwError> {
        match self {
            TableArg::Foreign(relid) => crate::access::open_foreign_table(*relid).map(|(t, _)| t),
            TableArg::Named { table, server } => crate::snapshots::open(table, server.as_deref()),
        }
    }
}

fn timestamp(ms: i64) -> Option<TimestampWithTimeZone> {
    ms.checked_mul(1000)
        .and_then(|v| v.checked_sub(PG_EPOCH_OFFSET_MICROS))
        .and_then(|v| TimestampWithTimeZone::try_from(v).ok())
}

/// Milliseconds since the epoch of a Postgres timestamptz.
fn epoch_ms(t: TimestampWithTimeZone) -> i64 {
    (i64::from(t) + PG_EPOCH_OFFSET_MICROS).div_euclid(1000)
}

fn now_ms(now: Option<TimestampWithTimeZone>) -> i64 {
    match now {
        Some(t) => epoch_ms(t),
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0),
    }
}

// ---------------------------------------------------------------------------------------------
// icefloe_changes: a materialising set-returning function with a column definition list.

const V1: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };

/// `PG_FUNCTION_INFO_V1(icefloe_changes_of)`.
#[unsafe(no_mangle)]
#[doc(hidden)]
pub extern "C" fn pg_finfo_icefloe_changes_of() -> &'static pg_sys::Pg_finfo_record {
    &V1
}

/// `PG_FUNCTION_INFO_V1(icefloe_changes_named)`.
#[unsafe(no_mangle)]
#[doc(hidden)]
pub extern "C" fn pg_finfo_icefloe_changes_named() -> &'static pg_sys::Pg_finfo_record {
    &V1
}

/// `icefloe_changes(foreign_table regclass, from_snapshot, to_snapshot, net, key)`.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn icefloe_changes_of(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    let relid: Option<pg_sys::Oid> = pgrx::fcinfo::pg_getarg(fcinfo, 0);
    let Some(relid) = relid else {
        FdwError::Options("icefloe_changes: the table is NULL".into()).report()
    };
    changes(fcinfo, TableArg::Foreign(relid)).or_report()
}

/// `icefloe_changes("table" text, from_snapshot, to_snapshot, net, key, server)`.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn icefloe_changes_named(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    let table: Option<String> = pgrx::fcinfo::pg_getarg(fcinfo, 0);
    let Some(table) = table else {
        FdwError::Options("icefloe_changes: the table is NULL".into()).report()
    };
    let server: Option<String> = pgrx::fcinfo::pg_getarg(fcinfo, 5);
    changes(fcinfo, TableArg::Named { table, server }).or_report()
}

extension_sql!(
    r#"
CREATE FUNCTION icefloe_changes(foreign_table regclass, from_snapshot bigint,
    to_snapshot bigint DEFAULT NULL, net boolean DEFAULT false, key text DEFAULT NULL)
    RETURNS SETOF record AS 'MODULE_PATHNAME', 'icefloe_changes_of' LANGUAGE C;
CREATE FUNCTION icefloe_changes("table" text, from_snapshot bigint,
    to_snapshot bigint DEFAULT NULL, net boolean DEFAULT false, key text DEFAULT NULL,
    server text DEFAULT NULL)
    RETURNS SETOF record AS 'MODULE_PATHNAME', 'icefloe_changes_named' LANGUAGE C;
COMMENT ON FUNCTION icefloe_changes(regclass, bigint, bigint, boolean, text) IS
    'rows changed after from_snapshot (NULL: since the table''s creation) up to to_snapshot (default: current), from row lineage; columns by the column definition list';
"#,
    name = "icefloe_changes",
);

/// The change feed of `table` into the tuplestore of the call, one tuple per change with the
/// columns of the call's column definition list, matched by name.
unsafe fn changes(
    fcinfo: pg_sys::FunctionCallInfo,
    table: TableArg,
) -> Result<pg_sys::Datum, FdwError> {
    let rsinfo = (*fcinfo).resultinfo as *mut pg_sys::ReturnSetInfo;
    if rsinfo.is_null()
        || (*rsinfo).type_ != pg_sys::NodeTag::T_ReturnSetInfo
        || (*rsinfo).allowedModes & pg_sys::SetFunctionReturnMode::SFRM_Materialize as i32 == 0
    {
        return Err(FdwError::Options(
            "icefloe_changes returns a set: call it in FROM".into(),
        ));
    }
    let desc = (*rsinfo).expectedDesc;
    if desc.is_null() {
        return Err(FdwError::Options(
            "icefloe_changes returns record: give a column definition list, e.g. \
             AS c(_change_type text, _commit_snapshot_id bigint, _row_id bigint, id bigint)"
                .into(),
        ));
    }
    let from: Option<i64> = pgrx::fcinfo::pg_getarg(fcinfo, 1);
    let to: Option<i64> = pgrx::fcinfo::pg_getarg(fcinfo, 2);
    let net: Option<bool> = pgrx::fcinfo::pg_getarg(fcinfo, 3);
    let key: Option<String> = pgrx::fcinfo::pg_getarg(fcinfo, 4);
    let t = table.open()?;
    let mut b = ChangeFeed::builder().net(net.unwrap_or(false));
    // No start snapshot: every change since the table's creation, as Spark's changelog.
    b = match from {
        Some(from) => b.from_snapshot(from),
        None => b.from_creation(),
    };
    if let Some(to) = to {
        b = b.to_snapshot(to);
    }
    if let Some(k) = key {
        b = b.key(k.split(',').map(|c| c.trim().to_string()).collect());
    }
    let feed = b.build(&t)?;
    let schema = feed.schema();

    // Each declared column: the feed column of its name and how its values become Datums.
    let tupdesc = pgrx::PgTupleDesc::from_pg_unchecked(desc);
    let available = || {
        schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut plans: Vec<Option<(usize, Kind)>> = Vec::with_capacity(tupdesc.len());
    for i in 0..tupdesc.len() {
        let att = tupdesc.get(i).expect("attribute in range");
        if att.is_dropped() {
            plans.push(None);
            continue;
        }
        let name = att.name().to_string();
        let idx = schema.index_of(&name).map_err(|_| FdwError::NoSuchColumn {
            column: name.clone(),
            relation: "icefloe_changes".into(),
            available: available(),
        })?;
        let field = schema.fields()[idx].clone();
        let kind = plan_kind(&field, att.type_oid().value(), att.type_mod()).ok_or_else(|| {
            FdwError::TypeMismatch {
                column: name.clone(),
                relation: "icefloe_changes".into(),
                declared: pgutil::format_type(att.type_oid().value(), att.type_mod()),
                iceberg: field.data_type().to_string(),
                expected: pgutil::format_type(natural_type(&field), natural_typmod(&field)),
            }
        })?;
        plans.push(Some((idx, kind)));
    }

    let batches = runtime::block_on_interruptible(feed.batches())??;

    let per_query = (*(*rsinfo).econtext).ecxt_per_query_memory;
    let old = pg_sys::MemoryContextSwitchTo(per_query);
    let random =
        (*rsinfo).allowedModes & pg_sys::SetFunctionReturnMode::SFRM_Materialize_Random as i32 != 0;
    let store = pg_sys::tuplestore_begin_heap(random, false, pg_sys::work_mem);
    let out_desc = pg_sys::CreateTupleDescCopy(desc);
    pg_sys::MemoryContextSwitchTo(old);

    let mut values = vec![pg_sys::Datum::from(0usize); plans.len()];
    let mut nulls = vec![true; plans.len()];
    for batch in &batches {
        put_rows(
            batch,
            &schema,
            &plans,
            store,
            out_desc,
            &mut values,
            &mut nulls,
        )?;
        pgrx::check_for_interrupts!();
    }
    (*rsinfo).returnMode = pg_sys::SetFunctionReturnMode::SFRM_Materialize;
    (*rsinfo).setResult = store;
    (*rsinfo).setDesc = out_desc;
    Ok(pg_sys::Datum::from(0usize))
}

/// Appends the rows of `batch` to `store`, Datums made in a context reset after the batch
/// (the tuplestore keeps its own copies).
unsafe fn put_rows(
    batch: &RecordBatch,
    schema: &arrow::datatypes::SchemaRef,
    plans: &[Option<(usize, Kind)>],
    store: *mut pg_sys::Tuplestorestate,
    desc: pg_sys::TupleDesc,
    values: &mut [pg_sys::Datum],
    nulls: &mut [bool],
) -> Result<(), FdwError> {
    let mut readers = plans
        .iter()
        .map(|p| {
            p.as_ref()
                .map(|(idx, kind)| {
                    ColumnReader::new(batch.column(*idx), &schema.fields()[*idx], kind)
                })
                .transpose()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut ctx = pgrx::PgMemoryContexts::new("icefloe_changes rows");
    let r = ctx.switch_to(|_| -> Result<(), FdwError> {
        for row in 0..batch.num_rows() {
            for (i, reader) in readers.iter_mut().enumerate() {
                match reader.as_mut().map(|r| r.datum(row)).transpose()?.flatten() {
                    Some(d) => {
                        values[i] = d;
                        nulls[i] = false;
                    }
                    None => nulls[i] = true,
                }
            }
            pg_sys::tuplestore_putvalues(store, desc, values.as_mut_ptr(), nulls.as_mut_ptr());
        }
        Ok(())
    });
    drop(ctx);
    r
}

// ---------------------------------------------------------------------------------------------
// icefloe_history(table, row_id)

/// A row of `icefloe_history(table, row_id)`.
type HistoryRow = (
    i64,
    Option<i64>,
    Option<i64>,
    Option<TimestampWithTimeZone>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<TimestampWithTimeZone>,
    JsonB,
);

fn history_rows(
    t: &Table,
    row_id: i64,
    now: Option<TimestampWithTimeZone>,
) -> Result<Vec<HistoryRow>, FdwError> {
    let now = now_ms(now);
    let (run, batch) = runtime::block_on_interruptible(async {
        let run = ExpiryRun::evaluate(t, Policy::Iceberg, Overrides::default(), now).await?;
        let batch = row_history(
            t,
            &RowSelector::RowIds(vec![row_id]),
            Some((&run.expiry, &run.kept.snapshots)),
        )
        .await?;
        Ok::<_, icefloe_core::Error>((run, batch))
    })??;
    let _ = run;
    let m = t.metadata();
    let int = |i: usize| {
        batch
            .column(i)
            .as_any()
            .downcast_ref::<Int64Array>()
            .cloned()
            .expect("history's id columns are Int64")
    };
    let text = |i: usize| {
        batch
            .column(i)
            .as_any()
            .downcast_ref::<arrow::array::StringArray>()
            .cloned()
            .expect("history's text columns are Utf8")
    };
    let (rid, seq, made_by, op) = (int(0), int(1), int(2), text(4));
    let (first, last, count, until, until_ms) = (int(5), int(6), int(7), text(8), int(9));
    let opt = |a: &Int64Array, r: usize| (!a.is_null(r)).then(|| a.value(r));
    let schema = batch.schema();
    let mut rows = Vec::with_capacity(batch.num_rows());
    for r in 0..batch.num_rows() {
        let mut obj = serde_json::Map::new();
        for c in HISTORY_COLUMNS.len()..batch.num_columns() {
            let field = schema.field(c);
            let v = value_to_json(batch.column(c).as_ref(), field, r)?;
            let v: serde_json::Value = serde_json::from_str(&v)
                .map_err(|e| FdwError::Internal(format!("history row as JSON: {e}")))?;
            obj.insert(field.name().clone(), v);
        }
        let made_by_id = opt(&made_by, r);
        // `never`: +infinity; `next expiry` (an expiry now removes every snapshot that reads
        // it): readable until now.
        let readable_until = match opt(&until_ms, r) {
            Some(ms) => timestamp(ms),
            None if until.value(r) == "never" => Some(TimestampWithTimeZone::positive_infinity()),
            None if until.is_null(r) => None,
            None => timestamp(now),
        };
        rows.push((
            rid.value(r),
            opt(&seq, r),
            made_by_id,
            made_by_id
                .and_then(|id| m.snapshot(id))
                .and_then(|s| timestamp(s.timestamp_ms)),
            (!op.is_null(r)).then(|| op.value(r).to_string()),
            opt(&first, r),
            opt(&last, r),
            opt(&count, r),
            readable_until,
            JsonB(serde_json::Value::Object(obj)),
        ));
    }
    Ok(rows)
}

/// Every version of the row `row_id` readable in the snapshots the metadata holds, oldest
/// first: which snapshot made it, in which snapshots it is read, and until when it stays
/// readable under the table's retention evaluated at `now` (default now; `infinity`: never
/// expires). `row` holds the version's columns (current schema) as JSON.
#[pg_extern(name = "icefloe_history")]
#[allow(clippy::type_complexity)]
fn icefloe_row_history(
    table: &str,
    row_id: i64,
    server: default!(Option<&str>, "NULL"),
    now: default!(Option<TimestampWithTimeZone>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(_row_id, i64),
        name!(_last_updated_sequence_number, Option<i64>),
        name!(made_by_snapshot_id, Option<i64>),
        name!(made_at, Option<TimestampWithTimeZone>),
        name!(operation, Option<String>),
        name!(first_snapshot_id, Option<i64>),
        name!(last_snapshot_id, Option<i64>),
        name!(readable_snapshots, Option<i64>),
        name!(readable_until, Option<TimestampWithTimeZone>),
        name!(row, JsonB),
    ),
> {
    let arg = TableArg::Named {
        table: table.to_string(),
        server: server.map(str::to_string),
    };
    TableIterator::new(
        arg.open()
            .and_then(|t| history_rows(&t, row_id, now))
            .or_report(),
    )
}

/// `icefloe_history(table, row_id)` of the Iceberg table a foreign table reads.
#[pg_extern(name = "icefloe_history")]
#[allow(clippy::type_complexity)]
fn icefloe_row_history_of(
    foreign_table: pg_sys::Oid,
    row_id: i64,
    now: default!(Option<TimestampWithTimeZone>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(_row_id, i64),
        name!(_last_updated_sequence_number, Option<i64>),
        name!(made_by_snapshot_id, Option<i64>),
        name!(made_at, Option<TimestampWithTimeZone>),
        name!(operation, Option<String>),
        name!(first_snapshot_id, Option<i64>),
        name!(last_snapshot_id, Option<i64>),
        name!(readable_snapshots, Option<i64>),
        name!(readable_until, Option<TimestampWithTimeZone>),
        name!(row, JsonB),
    ),
> {
    let arg = TableArg::Foreign(foreign_table);
    TableIterator::new(
        arg.open()
            .and_then(|t| history_rows(&t, row_id, now))
            .or_report(),
    )
}

// ---------------------------------------------------------------------------------------------
// icefloe_retention(table [, now])

/// A row of `icefloe_retention`.
type RetentionRow = (
    String,
    String,
    Option<i64>,
    Option<TimestampWithTimeZone>,
    String,
    Option<TimestampWithTimeZone>,
);

fn retention_rows(
    t: &Table,
    now: Option<TimestampWithTimeZone>,
) -> Result<Vec<RetentionRow>, FdwError> {
    let now = now_ms(now);
    let run = runtime::block_on_interruptible(async {
        ExpiryRun::evaluate(t, Policy::Iceberg, Overrides::default(), now)
            .await?
            .with_readable_rows(t)
            .await
    })??;
    Ok(run
        .items(t.metadata())
        .into_iter()
        .map(|i| {
            (
                i.item.to_string(),
                i.name,
                i.snapshot_id,
                i.timestamp_ms.and_then(timestamp),
                i.status.to_string(),
                match i.expires_at_ms {
                    Some(Some(ms)) => timestamp(ms),
                    Some(None) => Some(TimestampWithTimeZone::positive_infinity()),
                    None => None,
                },
            )
        })
        .collect())
}

/// A dry run of snapshot expiry at `now` (default now) under the table's own settings, as
/// `icefloe retention` lists it: every snapshot and ref `kept` (with `expires_at`,
/// `infinity` for never) or `expired`, and every file the run would delete (`deleted`).
#[pg_extern(name = "icefloe_retention")]
#[allow(clippy::type_complexity)]
fn icefloe_retention(
    table: &str,
    now: default!(Option<TimestampWithTimeZone>, "NULL"),
    server: default!(Option<&str>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(item, String),
        name!(name, String),
        name!(snapshot_id, Option<i64>),
        name!(committed_at, Option<TimestampWithTimeZone>),
        name!(status, String),
        name!(expires_at, Option<TimestampWithTimeZone>),
    ),
> {
    let arg = TableArg::Named {
        table: table.to_string(),
        server: server.map(str::to_string),
    };
    TableIterator::new(arg.open().and_then(|t| retention_rows(&t, now)).or_report())
}

/// `icefloe_retention` of the Iceberg table a foreign table reads.
#[pg_extern(name = "icefloe_retention")]
#[allow(clippy::type_complexity)]
fn icefloe_retention_of(
    foreign_table: pg_sys::Oid,
    now: default!(Option<TimestampWithTimeZone>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(item, String),
        name!(name, String),
        name!(snapshot_id, Option<i64>),
        name!(committed_at, Option<TimestampWithTimeZone>),
        name!(status, String),
        name!(expires_at, Option<TimestampWithTimeZone>),
    ),
> {
    let arg = TableArg::Foreign(foreign_table);
    TableIterator::new(arg.open().and_then(|t| retention_rows(&t, now)).or_report())
}

// ---------------------------------------------------------------------------------------------
// icefloe_orphans(table [, older_than])

type OrphanRow = (String, Option<TimestampWithTimeZone>, i64);

fn orphan_rows(
    t: &Table,
    older_than: Option<TimestampWithTimeZone>,
) -> Result<Vec<OrphanRow>, FdwError> {
    let cutoff = match older_than {
        Some(t) => epoch_ms(t),
        None => now_ms(None) - DEFAULT_OLDER_THAN_MS,
    };
    let found = runtime::block_on_interruptible(orphan_files(t, cutoff, None))??;
    Ok(found
        .into_iter()
        .map(|o| {
            (
                o.path,
                timestamp(o.last_modified_ms),
                i64::try_from(o.size).unwrap_or(i64::MAX),
            )
        })
        .collect())
}

/// Files under the table location that no snapshot or metadata file references and that were
/// last modified before `older_than` (default: 3 days ago), as `remove_orphan_files` with
/// `dry_run` lists them. Nothing is deleted.
#[pg_extern(name = "icefloe_orphans")]
#[allow(clippy::type_complexity)]
fn icefloe_orphans(
    table: &str,
    older_than: default!(Option<TimestampWithTimeZone>, "NULL"),
    server: default!(Option<&str>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(file_path, String),
        name!(last_modified, Option<TimestampWithTimeZone>),
        name!(size_bytes, i64),
    ),
> {
    let arg = TableArg::Named {
        table: table.to_string(),
        server: server.map(str::to_string),
    };
    TableIterator::new(
        arg.open()
            .and_then(|t| orphan_rows(&t, older_than))
            .or_report(),
    )
}

/// `icefloe_orphans` of the Iceberg table a foreign table reads.
#[pg_extern(name = "icefloe_orphans")]
#[allow(clippy::type_complexity)]
fn icefloe_orphans_of(
    foreign_table: pg_sys::Oid,
    older_than: default!(Option<TimestampWithTimeZone>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(file_path, String),
        name!(last_modified, Option<TimestampWithTimeZone>),
        name!(size_bytes, i64),
    ),
> {
    let arg = TableArg::Foreign(foreign_table);
    TableIterator::new(
        arg.open()
            .and_then(|t| orphan_rows(&t, older_than))
            .or_report(),
    )
}
