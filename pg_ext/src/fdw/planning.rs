//! Planning a foreign scan: the relation's size (live rows from the snapshot summary, the
//! rows pruning leaves to decode), its paths (serial and partial) and their costs, and the
//! plan, which carries the attributes the query uses to execution.

use icefloe_core::scan::estimate_rows::live_rows_from_summary;
use icefloe_core::scan::prune::Pruner;
use pgrx::pg_sys;
use pgrx::prelude::*;

use super::binding::{prepare, used_attrs, Prepared};
use super::table::effective_user;
use crate::error::OrReport;
use crate::quals;
use crate::runtime;

/// `GetForeignRelSize`: checks the columns the query uses, estimates the relation's rows,
/// pages and rows to decode, and keeps them in a [`RelPlan`].
#[pg_guard]
pub(super) unsafe extern "C-unwind" fn get_foreign_rel_size(
    root: *mut pg_sys::PlannerInfo,
    baserel: *mut pg_sys::RelOptInfo,
    relid: pg_sys::Oid,
) {
    // Column types, NOT NULL and the user's rights are checked when the table is planned.
    let quals = pg_sys::extract_actual_clauses((*baserel).baserestrictinfo, false);
    let used = used_attrs((*(*baserel).reltarget).exprs, quals, (*baserel).relid);
    let columns = used.as_ref().map_or(all_columns(baserel), Vec::len);
    let rel = pg_sys::RelationIdGetRelation(relid);
    let prepared = prepare(
        relid,
        (*rel).rd_att,
        used.as_deref(),
        effective_user((*baserel).userid),
        None,
    );
    pg_sys::RelationClose(rel);
    let prepared = prepared.or_report();
    // Live rows estimated from the snapshot summary (the core's rule).
    let total = prepared
        .snapshot
        .as_ref()
        .and_then(live_rows_from_summary)
        .map_or(1000.0, |rows| rows as f64);
    (*baserel).tuples = total;
    // Pages of data, for the planner's choice of parallel workers.
    let bytes = prepared
        .snapshot
        .as_ref()
        .and_then(|s| s.summary_i64("total-files-size"))
        .unwrap_or(0)
        .max(0) as f64;
    (*baserel).pages = (bytes / pg_sys::BLCKSZ as f64).min(u32::MAX as f64) as pg_sys::BlockNumber;
    let sel = pg_sys::clauselist_selectivity(
        root,
        (*baserel).baserestrictinfo,
        (*baserel).relid as i32,
        pg_sys::JoinType::JOIN_INNER,
        std::ptr::null_mut(),
    );
    (*baserel).rows = pg_sys::clamp_row_est(total * sel);
    // Marks a relation whose conditions a pushed count(*) can take (crate::count).
    let countable = !quals.is_null()
        && crate::count::conditions_countable(
            quals,
            (*baserel).relid,
            &prepared.push_columns,
            &prepared.table,
            prepared.scan.table_schema(),
        );
    // Rows the scan will decode once its conditions prune files, row groups and pages
    // (parameters of prepared statements are unknown yet): a point lookup costs one page.
    let decode = rows_to_decode(&prepared, quals, (*baserel).relid).unwrap_or(total);
    if total > 0.0 && decode < total {
        (*baserel).pages = ((*baserel).pages as f64 * decode / total).ceil() as pg_sys::BlockNumber;
    }
    let plan = pg_sys::palloc0(std::mem::size_of::<RelPlan>()) as *mut RelPlan;
    *plan = RelPlan {
        countable,
        decode,
        columns,
    };
    (*baserel).fdw_private = plan as *mut _;
}

/// What planning learned of a base relation, kept in its `RelOptInfo.fdw_private` (planner
/// memory) for the path and upper-path callbacks.
#[repr(C)]
pub(crate) struct RelPlan {
    /// Every condition can be taken by a pushed `count(*)` (crate::count).
    pub(crate) countable: bool,
    /// Rows the scan is expected to decode (records less what pruning skips).
    decode: f64,
    /// Columns the scan decodes: those its output and its conditions use (every column for a
    /// whole-row reference).
    columns: usize,
}

/// The number of user columns of `baserel`, all of which a whole-row reference reads.
///
/// # Safety
/// `baserel` must be a valid `RelOptInfo` of the planner.
unsafe fn all_columns(baserel: *mut pg_sys::RelOptInfo) -> usize {
    (*baserel).max_attr.max(0) as usize
}

/// The [`RelPlan`] of a base relation planned by [`get_foreign_rel_size`], if any.
///
/// # Safety
/// `rel` must be a valid `RelOptInfo` of the planner.
pub(crate) unsafe fn rel_plan(rel: *mut pg_sys::RelOptInfo) -> Option<&'static RelPlan> {
    ((*rel).fdw_private as *const RelPlan).as_ref()
}

/// Footers read at most at plan time to count the rows pruning leaves.
const PLAN_FOOTER_FILES: usize = 64;

/// The rows a scan of `prepared` with conditions `quals` decodes: the files manifest pruning
/// keeps, less the row groups and pages their footers rule out (core: `Scan::rows_to_decode`).
/// `None` when it cannot be told (no snapshot, or a file that cannot be read now: the scan
/// reports that error itself).
unsafe fn rows_to_decode(prepared: &Prepared, quals: *mut pg_sys::List, rti: u32) -> Option<f64> {
    prepared.snapshot.as_ref()?;
    let pushed = quals::extract(quals, rti, &prepared.push_columns, std::ptr::null_mut());
    let predicates: Vec<_> = pushed.iter().map(|x| x.predicate.clone()).collect();
    let pruner = Pruner::new(
        prepared.table.metadata(),
        prepared.scan.table_schema(),
        predicates.clone(),
    );
    let scan = prepared
        .builder
        .clone()
        .row_group_filter(predicates)
        .build(&prepared.table)
        .ok()?;
    let estimate = async move {
        let tasks = scan.plan_files().await?;
        let (tasks, _) = pruner.prune(tasks);
        scan.rows_to_decode(&tasks, PLAN_FOOTER_FILES).await
    };
    match runtime::block_on_interruptible(estimate) {
        Ok(Ok(rows)) => Some(rows as f64),
        _ => None,
    }
}

/// `GetForeignPaths`: a foreign scan path, and a partial one when workers can share the
/// scan.
#[pg_guard]
pub(super) unsafe extern "C-unwind" fn get_foreign_paths(
    root: *mut pg_sys::PlannerInfo,
    baserel: *mut pg_sys::RelOptInfo,
    _relid: pg_sys::Oid,
) {
    let rows = (*baserel).rows;
    let (decoded, columns) = rel_plan(baserel)
        .map_or(((*baserel).tuples, all_columns(baserel)), |p| {
            (p.decode, p.columns)
        });
    let startup = 10.0;
    let run = run_cost(decoded, rows, columns);
    let path = foreign_path(root, baserel, rows, startup, startup + run);
    pg_sys::add_path(baserel, path as *mut pg_sys::Path);
    // A parallel scan: the leader and its workers share the units (crate::parallel).
    if (*baserel).consider_parallel {
        let workers = pg_sys::compute_parallel_worker(
            baserel,
            (*baserel).pages as f64,
            -1.0,
            pg_sys::max_parallel_workers_per_gather,
        );
        if workers > 0 {
            let divisor = workers as f64 + 1.0;
            let partial = foreign_path(
                root,
                baserel,
                pg_sys::clamp_row_est(rows / divisor),
                startup,
                startup + run / divisor,
            );
            (*partial).path.parallel_aware = true;
            (*partial).path.parallel_safe = true;
            (*partial).path.parallel_workers = workers;
            pg_sys::add_partial_path(baserel, partial as *mut pg_sys::Path);
        }
    }
}

/// Half a `cpu_operator_cost` per value decoded: with `cpu_tuple_cost` per row returned, a
/// scan of every column costs about what Postgres estimates for a sequential scan of a heap
/// copy of the table, and a scan of one column about half of that. Both match what the
/// `bench` table measures (`benches/pg-fdw`): a Parquet column is decoded on its own, so the
/// columns a query reads, not the width of the table, set the decoding work.
const DECODE_VALUE_COST: f64 = 0.5;

/// The run cost of a scan that decodes `decoded` rows of `columns` columns each and returns
/// `rows` of them.
fn run_cost(decoded: f64, rows: f64, columns: usize) -> f64 {
    // SAFETY: planner cost settings are plain globals, read on the backend's thread.
    let (tuple, operator) = unsafe { (pg_sys::cpu_tuple_cost, pg_sys::cpu_operator_cost) };
    decoded * columns.max(1) as f64 * operator * DECODE_VALUE_COST + rows * tuple
}

/// A plain foreign scan path of `baserel`.
unsafe fn foreign_path(
    root: *mut pg_sys::PlannerInfo,
    baserel: *mut pg_sys::RelOptInfo,
    rows: f64,
    startup: f64,
    total: f64,
) -> *mut pg_sys::ForeignPath {
    #[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15", feature = "pg16"))]
    let path = pg_sys::create_foreignscan_path(
        root,
        baserel,
        std::ptr::null_mut(),
        rows,
        startup,
        total,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    #[cfg(feature = "pg17")]
    let path = pg_sys::create_foreignscan_path(
        root,
        baserel,
        std::ptr::null_mut(),
        rows,
        startup,
        total,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    #[cfg(feature = "pg18")]
    let path = pg_sys::create_foreignscan_path(
        root,
        baserel,
        std::ptr::null_mut(),
        rows,
        0,
        startup,
        total,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    path
}

/// `GetForeignPlan`: the scan plan (every condition kept for Postgres to recheck), carrying
/// the attributes the query uses; a pushed `count(*)`'s plan for an upper relation.
#[pg_guard]
pub(super) unsafe extern "C-unwind" fn get_foreign_plan(
    _root: *mut pg_sys::PlannerInfo,
    baserel: *mut pg_sys::RelOptInfo,
    _relid: pg_sys::Oid,
    _best_path: *mut pg_sys::ForeignPath,
    tlist: *mut pg_sys::List,
    scan_clauses: *mut pg_sys::List,
    outer_plan: *mut pg_sys::Plan,
) -> *mut pg_sys::ForeignScan {
    if (*baserel).reloptkind == pg_sys::RelOptKind::RELOPT_UPPER_REL {
        return crate::count::plan(_best_path, tlist, outer_plan);
    }
    let scanrelid = (*baserel).relid;
    // Every condition stays in the plan's qual: Postgres rechecks them all.
    let quals = pg_sys::extract_actual_clauses(scan_clauses, false);
    // The attributes the query uses: its target list and its conditions.
    let mut used: *mut pg_sys::List = std::ptr::null_mut();
    match used_attrs((*(*baserel).reltarget).exprs, quals, scanrelid) {
        Some(attnos) => {
            for a in attnos {
                used = pg_sys::lappend_int(used, a);
            }
        }
        None => used = pg_sys::lappend_int(std::ptr::null_mut(), 0),
    }
    // fdw_private: [used attnums (0 = all)]
    let private = pg_sys::lappend(std::ptr::null_mut(), used as *mut std::ffi::c_void);
    pg_sys::make_foreignscan(
        tlist,
        quals,
        scanrelid,
        std::ptr::null_mut(),
        private,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        outer_plan,
    )
}
