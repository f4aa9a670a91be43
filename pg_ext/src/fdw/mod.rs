//! The `FdwRoutine` of the `icefloe` wrapper, over `pg_sys`: the handler that fills it in,
//! and one child module per part of a foreign scan's life:
//!
//! - [`table`]: which Iceberg table a foreign table reads, as which role, and opening it
//!   (catalog options, access checks, the pinned version, metadata caches per credentials).
//! - [`binding`]: the foreign table's columns bound to what a scan of one snapshot reads
//!   (the core's column sources, type checks, NOT NULL checks, pushable columns).
//! - [`planning`]: row estimates, paths and costs, the plan.
//! - [`execution`]: the scan state, and the rows streamed from the core into tuple slots.
//! - [`parallel`]: parallel safety and the parallel scan's shared-memory callbacks (the
//!   protocol over that memory is [`crate::parallel`]).
//! - [`explain`]: what EXPLAIN shows of a scan.
//!
//! The order Postgres calls the routine in:
//!
//! 1. Planning: `IsForeignScanParallelSafe` (when the query may run in parallel),
//!    `GetForeignRelSize`, `GetForeignPaths`, `GetForeignUpperPaths` (a pushed `count(*)`,
//!    [`crate::count`]), `GetForeignPlan`.
//! 2. Execution: `BeginForeignScan`; in a parallel plan `EstimateDSMForeignScan` and
//!    `InitializeDSMForeignScan` in the leader, `InitializeWorkerForeignScan` in each worker;
//!    `IterateForeignScan` for each row; `ReScanForeignScan` to start again (after
//!    `ReInitializeDSMForeignScan` in a parallel plan); `ShutdownForeignScan` before the
//!    parallel context goes away; `EndForeignScan`.
//! 3. `ExplainForeignScan` when EXPLAIN prints the plan (for EXPLAIN ANALYZE, once the rows
//!    are read).
//!
//! Apart from scans: `ImportForeignSchema` ([`crate::import`]) and `AnalyzeForeignTable`
//! ([`crate::analyze`]).
//!
//! Scan state lives in Rust memory owned by the executor's memory context (dropped when the
//! query ends, also on ERROR), so an aborted query leaks nothing.

use pgrx::pg_sys;
use pgrx::prelude::*;

mod binding;
mod execution;
mod explain;
mod parallel;
mod planning;
mod table;

pub(crate) use execution::ScanState;
pub(crate) use planning::rel_plan;
pub(crate) use table::{caches_for, catalog_options, open_table, resolve_table, CatalogOptions};

/// `PG_FUNCTION_INFO_V1(icefloe_fdw_handler)`.
#[unsafe(no_mangle)]
#[doc(hidden)]
pub extern "C" fn pg_finfo_icefloe_fdw_handler() -> &'static pg_sys::Pg_finfo_record {
    const V1: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };
    &V1
}

/// The handler function of the `icefloe` foreign-data wrapper: returns its `FdwRoutine`.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn icefloe_fdw_handler(
    _fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    let routine =
        pg_sys::palloc0(std::mem::size_of::<pg_sys::FdwRoutine>()) as *mut pg_sys::FdwRoutine;
    (*routine).type_ = pg_sys::NodeTag::T_FdwRoutine;
    (*routine).GetForeignRelSize = Some(planning::get_foreign_rel_size);
    (*routine).GetForeignPaths = Some(planning::get_foreign_paths);
    (*routine).GetForeignPlan = Some(planning::get_foreign_plan);
    (*routine).BeginForeignScan = Some(execution::begin_foreign_scan);
    (*routine).IterateForeignScan = Some(execution::iterate_foreign_scan);
    (*routine).ReScanForeignScan = Some(execution::rescan_foreign_scan);
    (*routine).EndForeignScan = Some(execution::end_foreign_scan);
    (*routine).ExplainForeignScan = Some(explain::explain_foreign_scan);
    (*routine).ImportForeignSchema = Some(crate::import::import_foreign_schema);
    (*routine).GetForeignUpperPaths = Some(crate::count::get_foreign_upper_paths);
    (*routine).AnalyzeForeignTable = Some(crate::analyze::analyze_foreign_table);
    (*routine).IsForeignScanParallelSafe = Some(parallel::is_parallel_safe);
    (*routine).EstimateDSMForeignScan = Some(parallel::estimate_dsm);
    (*routine).InitializeDSMForeignScan = Some(parallel::initialize_dsm);
    (*routine).ReInitializeDSMForeignScan = Some(parallel::reinitialize_dsm);
    (*routine).InitializeWorkerForeignScan = Some(parallel::initialize_worker);
    (*routine).ShutdownForeignScan = Some(parallel::shutdown_foreign_scan);
    pg_sys::Datum::from(routine)
}
