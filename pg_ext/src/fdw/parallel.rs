//! Parallel foreign scans, the routine's side: whether a scan may run in parallel, and the
//! callbacks that share the leader's metadata file and units with its workers through dynamic
//! shared memory. The protocol over that memory (claims, fingerprint) is [`crate::parallel`].

use pgrx::pg_sys;
use pgrx::prelude::*;

use super::execution::{begin, keep_state, state_of};
use crate::error::{FdwError, OrReport};
use crate::options;

/// `IsForeignScanParallelSafe`: a scan reads files through the core, which any backend can
/// do; workers read the leader's pinned metadata (crate::parallel).
#[pg_guard]
pub(super) unsafe extern "C-unwind" fn is_parallel_safe(
    _root: *mut pg_sys::PlannerInfo,
    _rel: *mut pg_sys::RelOptInfo,
    rte: *mut pg_sys::RangeTblEntry,
) -> bool {
    // A worker opens the metadata file its leader pinned by its path; a REST catalog's table
    // is reached only through the catalog (its storage credentials come with the answer).
    let ft = pg_sys::GetForeignTable((*rte).relid);
    let server = pg_sys::GetForeignServer((*ft).serverid);
    !options::is_catalog_server(&options::read_def_list((*server).options))
}

/// The metadata file a scan node's state read.
unsafe fn metadata_file_of(node: *mut pg_sys::ForeignScanState) -> Option<String> {
    let state = state_of(node)?;
    Some(state.scan.as_ref()?.table().metadata_file().to_string())
}

/// `EstimateDSMForeignScan`: the shared memory the leader's metadata file needs.
#[pg_guard]
pub(super) unsafe extern "C-unwind" fn estimate_dsm(
    node: *mut pg_sys::ForeignScanState,
    _pcxt: *mut pg_sys::ParallelContext,
) -> pg_sys::Size {
    crate::parallel::size(&metadata_file_of(node).unwrap_or_default())
}

/// `InitializeDSMForeignScan` (leader): shares the metadata file, the unit count and their
/// fingerprint; the leader claims units from then on.
#[pg_guard]
pub(super) unsafe extern "C-unwind" fn initialize_dsm(
    node: *mut pg_sys::ForeignScanState,
    _pcxt: *mut pg_sys::ParallelContext,
    coordinate: *mut std::ffi::c_void,
) {
    let location = metadata_file_of(node).unwrap_or_default();
    let Some(state) = state_of(node) else { return };
    let fp = crate::parallel::fingerprint(state.snapshot_id, &state.units);
    crate::parallel::init(coordinate, &location, state.units.len() as u64, fp);
    state.claims = Some(crate::parallel::Claims::new(coordinate));
    state.restart();
}

/// `ReInitializeDSMForeignScan` (leader, before a rescan): every unit can be claimed again.
#[pg_guard]
pub(super) unsafe extern "C-unwind" fn reinitialize_dsm(
    node: *mut pg_sys::ForeignScanState,
    _pcxt: *mut pg_sys::ParallelContext,
    coordinate: *mut std::ffi::c_void,
) {
    crate::parallel::reset(coordinate);
    if let Some(state) = state_of(node) {
        state.claims = Some(crate::parallel::Claims::new(coordinate));
        state.restart();
    }
}

/// `InitializeWorkerForeignScan`: a worker begins its scan of the leader's metadata file and
/// checks that it planned the same units.
#[pg_guard]
pub(super) unsafe extern "C-unwind" fn initialize_worker(
    node: *mut pg_sys::ForeignScanState,
    _toc: *mut pg_sys::shm_toc,
    coordinate: *mut std::ffi::c_void,
) {
    let state = (|| {
        let location = crate::parallel::location(coordinate)?;
        let mut state = begin(node, (!location.is_empty()).then_some(location.as_str()))?;
        let fp = crate::parallel::fingerprint(state.snapshot_id, &state.units);
        crate::parallel::check(coordinate, state.units.len() as u64, fp)?;
        state.claims = Some(crate::parallel::Claims::new(coordinate));
        Ok::<_, FdwError>(state)
    })()
    .or_report();
    keep_state(node, state);
}

/// `ShutdownForeignScan`: a parallel scan stops reading before its shared memory goes away.
#[pg_guard]
pub(super) unsafe extern "C-unwind" fn shutdown_foreign_scan(node: *mut pg_sys::ForeignScanState) {
    // The parallel context (and the shared counter) goes away after this: stop using it.
    if let Some(state) = state_of(node) {
        if state.claims.take().is_some() {
            state.stop_reading();
        }
    }
}
