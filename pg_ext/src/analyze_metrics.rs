//! `ANALYZE` corrected by Iceberg column metrics. Postgres computes a foreign table's
//! statistics from the sample rows the wrapper returns and has no callback after it stores
//! them. So the sample leaves the metrics of the snapshot it read (as the table's owner) here,
//! and they are written over the `pg_statistic` rows that ANALYZE stored: the null fraction
//! where the metrics give it exactly, and the histogram's first and last entries widened to the
//! metrics' bounds (the core's rules: [`icefloe_core::scan::column_stats`]). They are written
//! after the statement (a `ProcessUtility` hook), or when the transaction that stored the rows
//! commits, whichever comes first: an `ANALYZE` of several tables commits each table
//! separately, and in a backend that loads the library during the statement the hook was not
//! there when the statement started. Only rows the current transaction wrote are rewritten:
//! columns an `ANALYZE t (col)` left alone keep theirs.

use std::cell::RefCell;

use arrow::datatypes::FieldRef;
use icefloe_core::scan::column_stats::ColumnStats;
use icefloe_core::spec::{PrimitiveType, Type};
use pgrx::pg_guard;
use pgrx::pg_sys::{self, Datum, Oid};

use crate::convert::{ColumnReader, Kind};
use crate::pgutil::{array_elements, ArrayElem};

/// A column ANALYZE can correct: its attribute, the Iceberg field it reads and how its
/// values become Datums (the scan's plan).
#[derive(Clone)]
pub struct StatColumn {
    /// 1-based attribute number.
    pub attnum: i16,
    /// The Iceberg field id and type in the schema read.
    pub field_id: i32,
    pub ty: PrimitiveType,
    /// The column's Arrow field in the scan and its conversion to the declared type.
    pub field: FieldRef,
    pub kind: Kind,
}

/// The metrics statistics of one analyzed table.
struct Pending {
    relid: Oid,
    columns: Vec<(StatColumn, ColumnStats)>,
}

thread_local! {
    /// Tables sampled by the running ANALYZE statement, with their metrics.
    static PENDING: RefCell<Vec<Pending>> = const { RefCell::new(Vec::new()) };
}

static mut PREV_PROCESS_UTILITY: pg_sys::ProcessUtility_hook_type = None;

/// Installs the hook (from `_PG_init`), after any hook loaded before, and the commit callback.
pub fn init() {
    // SAFETY: _PG_init runs once per backend, before any statement.
    unsafe {
        PREV_PROCESS_UTILITY = pg_sys::ProcessUtility_hook;
        pg_sys::ProcessUtility_hook = Some(process_utility);
        pg_sys::RegisterXactCallback(Some(at_transaction_event), std::ptr::null_mut());
    }
}

/// Called by the sample of `relation` with the metrics of the snapshot sampled. Kept only when
/// ANALYZE samples the table for its own statistics: a parent's ANALYZE also samples its
/// children (for the parent's statistics, by the parent's owner's rights), and their own
/// statistics are not its to rewrite. Which table ANALYZE is analyzing is what it reports as
/// its progress target (without progress reporting, `track_activities = off`, every sample
/// counts).
///
/// # Safety
/// `relation` must be an open relation.
pub unsafe fn remember(relation: pg_sys::Relation, columns: Vec<(StatColumn, ColumnStats)>) {
    let relid = (*relation).rd_id;
    if let Some(target) = analyze_target() {
        if target != relid {
            return;
        }
    }
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        p.retain(|t| t.relid != relid);
        p.push(Pending { relid, columns });
    });
}

/// The relation the running ANALYZE reports as its progress target, if it reports one.
#[cfg(not(feature = "pg13"))]
unsafe fn analyze_target() -> Option<Oid> {
    let be = pg_sys::MyBEEntry;
    if be.is_null()
        || (*be).st_progress_command != pg_sys::ProgressCommandType::PROGRESS_COMMAND_ANALYZE
    {
        return None;
    }
    Some((*be).st_progress_command_target)
}

/// Postgres 13's bindings do not export the backend's progress entry.
#[cfg(feature = "pg13")]
unsafe fn analyze_target() -> Option<Oid> {
    None
}

#[pg_guard]
unsafe extern "C-unwind" fn at_transaction_event(
    event: pg_sys::XactEvent::Type,
    _arg: *mut std::os::raw::c_void,
) {
    match event {
        pg_sys::XactEvent::XACT_EVENT_PRE_COMMIT => apply(),
        pg_sys::XactEvent::XACT_EVENT_ABORT | pg_sys::XactEvent::XACT_EVENT_PARALLEL_ABORT => {
            PENDING.with(|p| p.borrow_mut().clear())
        }
        _ => {}
    }
}

#[cfg(not(feature = "pg13"))]
#[pg_guard]
#[allow(clippy::too_many_arguments)]
unsafe extern "C-unwind" fn process_utility(
    pstmt: *mut pg_sys::PlannedStmt,
    query_string: *const std::os::raw::c_char,
    read_only_tree: bool,
    context: pg_sys::ProcessUtilityContext::Type,
    params: pg_sys::ParamListInfo,
    query_env: *mut pg_sys::QueryEnvironment,
    dest: *mut pg_sys::DestReceiver,
    qc: *mut pg_sys::QueryCompletion,
) {
    let prev = PREV_PROCESS_UTILITY;
    match prev {
        Some(prev) => prev(
            pstmt,
            query_string,
            read_only_tree,
            context,
            params,
            query_env,
            dest,
            qc,
        ),
        None => pg_sys::standard_ProcessUtility(
            pstmt,
            query_string,
            read_only_tree,
            context,
            params,
            query_env,
            dest,
            qc,
        ),
    }
    apply();
}

#[cfg(feature = "pg13")]
#[pg_guard]
unsafe extern "C-unwind" fn process_utility(
    pstmt: *mut pg_sys::PlannedStmt,
    query_string: *const std::os::raw::c_char,
    context: pg_sys::ProcessUtilityContext::Type,
    params: pg_sys::ParamListInfo,
    query_env: *mut pg_sys::QueryEnvironment,
    dest: *mut pg_sys::DestReceiver,
    qc: *mut pg_sys::QueryCompletion,
) {
    let prev = PREV_PROCESS_UTILITY;
    match prev {
        Some(prev) => prev(pstmt, query_string, context, params, query_env, dest, qc),
        None => pg_sys::standard_ProcessUtility(
            pstmt,
            query_string,
            context,
            params,
            query_env,
            dest,
            qc,
        ),
    }
    apply();
}

/// Rewrites the statistics of the sampled tables, where the current transaction wrote them.
unsafe fn apply() {
    let pending = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
    if pending.is_empty() || !pg_sys::IsTransactionState() {
        return;
    }
    // The rows ANALYZE stored in this command become visible.
    pg_sys::CommandCounterIncrement();
    let rel = pg_sys::table_open(
        pg_sys::StatisticRelationId,
        pg_sys::RowExclusiveLock as pg_sys::LOCKMODE,
    );
    for t in &pending {
        for (col, stats) in &t.columns {
            correct(rel, t.relid, col, stats);
        }
    }
    pg_sys::table_close(rel, pg_sys::RowExclusiveLock as pg_sys::LOCKMODE);
    pg_sys::CommandCounterIncrement();
}

/// A bound as a Datum of the column's declared type, converted as the scan converts values;
/// `None` when it has no such value (out of Postgres' range).
fn bound_datum(col: &StatColumn, lit: &icefloe_core::spec::Literal) -> Option<Datum> {
    let array =
        icefloe_core::scan::adapt::literal_array(lit, &Type::Primitive(col.ty.clone())).ok()?;
    ColumnReader::new(&array, &col.field, &col.kind)
        .ok()?
        .datum(0)
        .ok()
        .flatten()
}

/// Corrects the `pg_statistic` row of one column (non-inherited), if it has one.
unsafe fn correct(rel: pg_sys::Relation, relid: Oid, col: &StatColumn, stats: &ColumnStats) {
    let cache = pg_sys::SysCacheIdentifier::STATRELATTINH as i32;
    let tup = pg_sys::SearchSysCache3(
        cache,
        Datum::from(relid),
        Datum::from(col.attnum),
        Datum::from(false),
    );
    if tup.is_null() {
        return;
    }
    if !pg_sys::TransactionIdIsCurrentTransactionId(pg_sys::HeapTupleHeaderGetXmin((*tup).t_data)) {
        pg_sys::ReleaseSysCache(tup);
        return;
    }
    let form = &*(pg_sys::GETSTRUCT(tup) as *const pg_sys::FormData_pg_statistic);
    let natts = (*(*rel).rd_att).natts as usize;
    let mut values = vec![Datum::from(0usize); natts];
    let mut nulls = vec![false; natts];
    let mut replace = vec![false; natts];
    let mut set = |anum: u32, d: Datum| {
        values[anum as usize - 1] = d;
        replace[anum as usize - 1] = true;
    };
    let kinds = [
        form.stakind1,
        form.stakind2,
        form.stakind3,
        form.stakind4,
        form.stakind5,
    ];
    let ops = [
        form.staop1,
        form.staop2,
        form.staop3,
        form.staop4,
        form.staop5,
    ];
    let colls = [
        form.stacoll1,
        form.stacoll2,
        form.stacoll3,
        form.stacoll4,
        form.stacoll5,
    ];
    if let Some(frac) = stats.null_fraction {
        let old = form.stanullfrac as f64;
        set(
            pg_sys::Anum_pg_statistic_stanullfrac,
            Datum::from((frac as f32).to_bits()),
        );
        // Most common values' frequencies and a distinct count given as a fraction are
        // fractions of all rows: scale them to the new share of non-null rows.
        if old < 1.0 {
            let scale = (1.0 - frac) / (1.0 - old);
            if form.stadistinct < 0.0 {
                let d = (form.stadistinct as f64 * scale).max(-1.0) as f32;
                set(
                    pg_sys::Anum_pg_statistic_stadistinct,
                    Datum::from(d.to_bits()),
                );
            }
            for (slot, kind) in kinds.iter().enumerate() {
                if *kind as u32 != pg_sys::STATISTIC_KIND_MCV {
                    continue;
                }
                let anum = pg_sys::Anum_pg_statistic_stanumbers1 + slot as u32;
                if let Some(d) = scaled_numbers(cache, tup, anum, scale) {
                    set(anum, d);
                }
            }
        }
    }
    for (slot, kind) in kinds.iter().enumerate() {
        if *kind as u32 != pg_sys::STATISTIC_KIND_HISTOGRAM || ops[slot] == pg_sys::InvalidOid {
            continue;
        }
        let anum = pg_sys::Anum_pg_statistic_stavalues1 + slot as u32;
        let lower = stats.lower.as_ref().and_then(|l| bound_datum(col, l));
        let upper = stats.upper.as_ref().and_then(|l| bound_datum(col, l));
        if lower.is_none() && upper.is_none() {
            continue;
        }
        let typid = pg_sys::get_atttype(relid, col.attnum);
        if let Some(d) = widened(
            cache,
            tup,
            anum,
            typid,
            ops[slot],
            colls[slot],
            lower,
            upper,
        ) {
            set(anum, d);
        }
    }
    if replace.iter().any(|r| *r) {
        let new = pg_sys::heap_modify_tuple(
            tup,
            (*rel).rd_att,
            values.as_mut_ptr(),
            nulls.as_mut_ptr(),
            replace.as_mut_ptr(),
        );
        pg_sys::CatalogTupleUpdate(rel, &mut (*new).t_self, new);
        pg_sys::heap_freetuple(new);
    }
    pg_sys::ReleaseSysCache(tup);
}

/// The `float4[]` at attribute `anum` of the statistics tuple, each element times `scale`.
unsafe fn scaled_numbers(
    cache: i32,
    tup: pg_sys::HeapTuple,
    anum: u32,
    scale: f64,
) -> Option<Datum> {
    let (mut elems, typ) = array_elems(cache, tup, anum)?;
    if typ.typid != pg_sys::FLOAT4OID {
        return None;
    }
    for e in elems.iter_mut() {
        let v = f32::from_bits(e.value() as u32) as f64;
        *e = Datum::from(((v * scale).clamp(0.0, 1.0) as f32).to_bits());
    }
    Some(make_array(&mut elems, &typ))
}

/// The elements of the array at attribute `anum` (none of them NULL), in the current memory
/// context.
unsafe fn array_elems(
    cache: i32,
    tup: pg_sys::HeapTuple,
    anum: u32,
) -> Option<(Vec<Datum>, ArrayElem)> {
    let mut isnull = false;
    let d = pg_sys::SysCacheGetAttr(cache, tup, anum as pg_sys::AttrNumber, &mut isnull);
    if isnull {
        return None;
    }
    let (elems, nulls, typ) = array_elements(d);
    (!nulls.contains(&true)).then_some((elems, typ))
}

unsafe fn make_array(elems: &mut [Datum], typ: &ArrayElem) -> Datum {
    let a = pg_sys::construct_array(
        elems.as_mut_ptr(),
        elems.len() as i32,
        typ.typid,
        typ.len as i32,
        typ.byval,
        typ.align,
    );
    Datum::from(a)
}

/// The histogram at attribute `anum` with its first entry lowered to `lower` and its last
/// raised to `upper` where they lie beyond (by the histogram's own `<` operator `op`); `None`
/// when nothing changes or the histogram is not of the column's type `typid`.
#[allow(clippy::too_many_arguments)]
unsafe fn widened(
    cache: i32,
    tup: pg_sys::HeapTuple,
    anum: u32,
    typid: Oid,
    op: Oid,
    coll: Oid,
    lower: Option<Datum>,
    upper: Option<Datum>,
) -> Option<Datum> {
    let (mut elems, typ) = array_elems(cache, tup, anum)?;
    if typ.typid != typid || elems.len() < 2 {
        return None;
    }
    let lt = pg_sys::get_opcode(op);
    let less = |a: Datum, b: Datum| pg_sys::OidFunctionCall2Coll(lt, coll, a, b).value() != 0;
    let last = elems.len() - 1;
    let mut changed = false;
    if let Some(l) = lower.filter(|l| less(*l, elems[0])) {
        elems[0] = l;
        changed = true;
    }
    if let Some(u) = upper.filter(|u| less(elems[last], *u)) {
        elems[last] = u;
        changed = true;
    }
    changed.then(|| make_array(&mut elems, &typ))
}
