//! The `FdwRoutine` of the `icefloe` wrapper, over `pg_sys`: planning (row estimates from the
//! snapshot summary, projection), execution (streaming Arrow batches from the core into tuple
//! slots), EXPLAIN and IMPORT FOREIGN SCHEMA.
//!
//! Scan state lives in Rust memory owned by the executor's memory context (dropped when the
//! query ends, also on ERROR), so an aborted query leaks nothing.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use futures::stream::BoxStream;
use futures::StreamExt;
use icefloe_core::catalog::{Catalog, TablePath, Warehouse};
use icefloe_core::scan::column_source::ColumnSource;
use icefloe_core::scan::estimate_rows::live_rows_from_summary;
use icefloe_core::scan::projection::Projection;
use icefloe_core::scan::prune::{PruneStats, Pruner};
use icefloe_core::scan::split::TaskSplit;
use icefloe_core::spec::{Snapshot, Type};
use icefloe_core::{FileScanTask, Scan, Table};
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::{PgMemoryContexts, PgTupleDesc};

use crate::convert::{plan_kind, ColumnPlan, ColumnReader, Kind};
use crate::error::{FdwError, OrReport};
use crate::options::{self, OptionList, Resolved};
use crate::pgutil;
use crate::prefill::{PrefillPlan, Prefilled};
use crate::quals::{self, PushColumn, Pushed};
use crate::runtime;

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
    (*routine).GetForeignRelSize = Some(get_foreign_rel_size);
    (*routine).GetForeignPaths = Some(get_foreign_paths);
    (*routine).GetForeignPlan = Some(get_foreign_plan);
    (*routine).BeginForeignScan = Some(begin_foreign_scan);
    (*routine).IterateForeignScan = Some(iterate_foreign_scan);
    (*routine).ReScanForeignScan = Some(rescan_foreign_scan);
    (*routine).EndForeignScan = Some(end_foreign_scan);
    (*routine).ExplainForeignScan = Some(explain_foreign_scan);
    (*routine).ImportForeignSchema = Some(crate::import::import_foreign_schema);
    (*routine).GetForeignUpperPaths = Some(crate::count::get_foreign_upper_paths);
    (*routine).AnalyzeForeignTable = Some(crate::analyze::analyze_foreign_table);
    (*routine).IsForeignScanParallelSafe = Some(is_parallel_safe);
    (*routine).EstimateDSMForeignScan = Some(estimate_dsm);
    (*routine).InitializeDSMForeignScan = Some(initialize_dsm);
    (*routine).ReInitializeDSMForeignScan = Some(reinitialize_dsm);
    (*routine).InitializeWorkerForeignScan = Some(initialize_worker);
    (*routine).ShutdownForeignScan = Some(shutdown_foreign_scan);
    pg_sys::Datum::from(routine)
}

/// The options of a foreign table, its server and the user mapping that applies.
pub struct CatalogOptions {
    /// The foreign table's options.
    pub table: OptionList,
    /// Its server's options.
    pub server: OptionList,
    /// The user mapping options of the role the scan runs as (or PUBLIC's); empty without one.
    pub mapping: OptionList,
    /// The server's name.
    pub server_name: String,
}

/// Reads the options a foreign table is read with, as role `user`.
///
/// # Safety
/// `relid` must be a foreign table.
pub unsafe fn catalog_options(relid: pg_sys::Oid, user: pg_sys::Oid) -> CatalogOptions {
    let ft = pg_sys::GetForeignTable(relid);
    let server = pg_sys::GetForeignServer((*ft).serverid);
    CatalogOptions {
        table: options::read_def_list((*ft).options),
        server: options::read_def_list((*server).options),
        mapping: pgutil::user_mapping_options(user, (*ft).serverid),
        server_name: CStr::from_ptr((*server).servername)
            .to_string_lossy()
            .into_owned(),
    }
}

/// The role whose rights and user mapping apply: the one Postgres checks the relation as
/// (a view's owner), else the current user (as postgres_fdw does).
pub fn effective_user(check_as: pg_sys::Oid) -> pg_sys::Oid {
    if check_as != pg_sys::InvalidOid {
        check_as
    } else {
        // SAFETY: reads the current user id.
        unsafe { pg_sys::GetUserId() }
    }
}

/// Resolves what a foreign table reads and checks that `user` may read it.
pub fn resolve_table(opts: &CatalogOptions, user: pg_sys::Oid) -> Result<Resolved, FdwError> {
    let mut r = options::resolve(&opts.table, &opts.server, &opts.mapping, &opts.server_name)?;
    r.local_files = options::may_read_server_files(user);
    if r.catalog.is_some() {
        // The catalog names the location: the core refuses a local one (r.local_files).
        return Ok(r);
    }
    options::check_local_access(&r.location, "Iceberg table", user)?;
    for (_, new) in &r.open.path_map {
        options::check_local_access(new, "path_map target", user)?;
    }
    if let Some(f) = &r.open.metadata.metadata_file {
        if !icefloe_core::io::Location::parse(f).is_relative() {
            options::check_local_access(f, "metadata_file", user)?;
        }
    }
    Ok(r)
}

/// Opens the table a resolved foreign table reads: the version pinned for this statement or
/// transaction ([`crate::pin`]), else the newest (cached metadata).
pub fn open_table(r: &Resolved) -> Result<Table, FdwError> {
    // By values, secrets included (never shown): a table one role's catalog token loaded is
    // never the pinned table of a role with another token.
    let key = format!(
        "{}\u{0}{:?}\u{0}{}\u{0}{:?}\u{0}{:?}\u{0}{}",
        r.location,
        r.storage,
        r.ambient,
        r.open,
        r.catalog.as_ref().map(|c| c.props()),
        r.local_files
    );
    crate::pin::pinned(&key, || open_unpinned(r, &r.location))
}

thread_local! {
    /// Caches per set of storage credentials, so that metadata one role's credentials fetched
    /// is never served to a role with other (or no) credentials.
    static CACHES: std::cell::RefCell<crate::recent::Recent<std::sync::Arc<icefloe_core::cache::Caches>>> =
        const { std::cell::RefCell::new(crate::recent::Recent::new(CREDENTIAL_CACHES)) };
}

/// Caches for tables read with `r`'s storage settings and credentials: the process-wide ones
/// when there are none (local files, anonymous access).
pub fn caches_for(r: &Resolved) -> std::sync::Arc<icefloe_core::cache::Caches> {
    static SIZED: std::sync::Once = std::sync::Once::new();
    // The backend's caches take icefloe.cache_size when first used.
    SIZED.call_once(|| icefloe_core::cache::Caches::init_global(crate::settings::cache_bytes()));
    if r.storage.is_empty() && !r.ambient {
        return icefloe_core::cache::Caches::global();
    }
    let key = format!("{:?}\u{0}{}", r.storage, r.ambient);
    CACHES.with(|c| {
        let mut c = c.borrow_mut();
        if let Some(caches) = c.get(&key) {
            return caches;
        }
        let caches = std::sync::Arc::new(icefloe_core::cache::Caches::new(
            crate::settings::cache_bytes() / 4,
        ));
        c.insert(key, caches.clone());
        caches
    })
}

/// How many sets of storage credentials a backend keeps caches for besides the process-wide
/// ones (each a quarter of `icefloe.cache_size`).
const CREDENTIAL_CACHES: usize = 4;

/// Opens `location` (the table's, or one of its metadata files: a parallel worker reads the
/// version its leader pinned) with `r`'s storage settings and credentials.
fn open_unpinned(r: &Resolved, location: &str) -> Result<Table, FdwError> {
    let caches = caches_for(r);
    let storage = crate::options::storage_config(r);
    // A metadata file (a parallel worker's) is opened by its path, as it is: the metadata
    // file choice was made by the leader.
    let own = location == r.location;
    let open = icefloe_core::OpenOptions {
        storage,
        metadata: if own {
            r.open.metadata.clone()
        } else {
            Default::default()
        },
        path_map: r.open.path_map.clone(),
        strict: r.open.strict,
    };
    let table = if own { r.table.clone() } else { None };
    let location = location.to_string();
    let catalog = match (&r.catalog, own) {
        (Some(config), true) => Some(crate::rest::connected(r, config, &caches)?),
        (Some(_), false) => {
            return Err(FdwError::Internal(format!(
                "table {} of a REST catalog opened by metadata file {location}",
                r.display
            )))
        }
        (None, _) => None,
    };
    let strict = r.open.strict;
    runtime::block_on_interruptible(async move {
        match table {
            Some((_, ident)) if catalog.is_some() => {
                // A catalog's table is opened as the catalog says: strict is applied after.
                let t = catalog.expect("checked").load_table(&ident).await?;
                if strict {
                    t.make_strict()?;
                }
                Ok(t)
            }
            Some((warehouse, ident)) => {
                Warehouse::new(&warehouse, open, caches)?
                    .load_table(&ident)
                    .await
            }
            None => TablePath::new(&location, open, caches).load().await,
        }
    })?
    .map_err(|e| match e {
        icefloe_core::Error::Location { reason, .. }
        | icefloe_core::Error::NoSuchTable { reason, .. } => FdwError::TableNotFound {
            table: r.display.clone(),
            reason,
        },
        icefloe_core::Error::NotFound { path, .. } => FdwError::TableNotFound {
            table: r.display.clone(),
            reason: format!("{path} does not exist"),
        },
        e => crate::error::from_core(e),
    })
}

unsafe fn relation_name(relid: pg_sys::Oid) -> String {
    let name = pg_sys::get_rel_name(relid);
    if name.is_null() {
        format!("{}", relid.to_u32())
    } else {
        CStr::from_ptr(name).to_string_lossy().into_owned()
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn get_foreign_rel_size(
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
pub struct RelPlan {
    /// Every condition can be taken by a pushed `count(*)` (crate::count).
    pub countable: bool,
    /// Rows the scan is expected to decode (records less what pruning skips).
    pub decode: f64,
    /// Columns the scan decodes: those its output and its conditions use (every column for a
    /// whole-row reference).
    pub columns: usize,
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
pub unsafe fn rel_plan(rel: *mut pg_sys::RelOptInfo) -> Option<&'static RelPlan> {
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

/// The attribute numbers that expressions `exprs` and conditions `quals` use of range-table
/// entry `relid`; `None` when a whole-row reference needs every column.
unsafe fn used_attrs(
    exprs: *mut pg_sys::List,
    quals: *mut pg_sys::List,
    relid: u32,
) -> Option<Vec<i32>> {
    let mut attrs: *mut pg_sys::Bitmapset = std::ptr::null_mut();
    pg_sys::pull_varattnos(exprs as *mut pg_sys::Node, relid, &mut attrs);
    pg_sys::pull_varattnos(quals as *mut pg_sys::Node, relid, &mut attrs);
    let mut used = Vec::new();
    let mut i = -1;
    loop {
        i = pg_sys::bms_next_member(attrs, i);
        if i < 0 {
            break;
        }
        let attno = i + pg_sys::FirstLowInvalidHeapAttributeNumber;
        if attno == 0 {
            return None;
        } else if attno > 0 {
            used.push(attno);
        }
    }
    Some(used)
}

#[pg_guard]
unsafe extern "C-unwind" fn get_foreign_paths(
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

/// `IsForeignScanParallelSafe`: a scan reads files through the core, which any backend can
/// do; workers read the leader's pinned metadata (crate::parallel).
#[pg_guard]
unsafe extern "C-unwind" fn is_parallel_safe(
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

#[pg_guard]
unsafe extern "C-unwind" fn get_foreign_plan(
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

/// A pushed-down `count(*)`: the count from metadata, or `None` when the files must be read.
struct AggCount {
    from_metadata: Option<i64>,
    /// Whether the one result row was returned.
    returned: bool,
}

/// Everything one scan needs between calls.
pub(crate) struct ScanState {
    /// Set when the scan answers `count(*)`.
    agg: Option<AggCount>,
    display: String,
    snapshot_id: Option<i64>,
    scan: Option<Scan>,
    tasks: Vec<FileScanTask>,
    stats: PruneStats,
    pushed: Vec<Pushed>,
    plans: Vec<ColumnPlan>,
    /// Absent columns' constant values.
    constants: Vec<(usize, pg_sys::Datum)>,
    natts: usize,
    /// Rows the core delivered (live rows of the files read), for EXPLAIN ANALYZE.
    rows_read: u64,
    /// The batches, their plain columns converted beside the decoding (crate::prefill).
    stream: Option<BoxStream<'static, icefloe_core::Result<Result<Prefilled, FdwError>>>>,
    /// What the stream converts ahead.
    prefill: Arc<PrefillPlan>,
    /// The batch being returned: its converted columns and the rest's readers (one per plan;
    /// `ColumnReader::Null` where the column was converted ahead).
    batch: Option<Prefilled>,
    readers: Vec<ColumnReader>,
    batch_rows: usize,
    row: usize,
    done: bool,
    /// Whether the stream was started (scans start at their first row).
    started: bool,
    /// Set in a parallel scan: the shared counter the units are claimed from.
    claims: Option<crate::parallel::Claims>,
    /// A parallel-aware scan's units (crate::parallel), claimed one at a time.
    units: Vec<icefloe_core::scan::split::TaskSplit>,
}

impl ScanState {
    /// Fills `values`/`nulls` (one per attribute) with the next row; `false` at the end.
    /// Datums are made in the current memory context.
    pub(crate) fn next_row(
        &mut self,
        values: &mut [pg_sys::Datum],
        nulls: &mut [bool],
    ) -> Result<bool, FdwError> {
        if self.done {
            return Ok(false);
        }
        if self.row >= self.batch_rows && !self.next_batch()? {
            self.done = true;
            return Ok(false);
        }
        let row = self.row;
        self.row += 1;
        nulls.fill(true);
        for (i, d) in &self.constants {
            values[*i] = *d;
            nulls[*i] = false;
        }
        let Some(batch) = &self.batch else {
            return Ok(false);
        };
        for ((plan, reader), filled) in self
            .plans
            .iter()
            .zip(self.readers.iter_mut())
            .zip(batch.columns.iter())
        {
            if let Some(f) = filled {
                values[plan.att_index] = pg_sys::Datum::from(f.words[row]);
                nulls[plan.att_index] = f.nulls[row];
            } else if let Some(d) = reader.datum(row)? {
                values[plan.att_index] = d;
                nulls[plan.att_index] = false;
            }
        }
        Ok(true)
    }

    /// A scan of every column of foreign table `relid` as `user`, without conditions (for
    /// ANALYZE), streaming every live row, or with `sample` = (target, seed) about `target`
    /// random live rows across the data files ([`icefloe_core::Scan::read_sample`]); and
    /// the columns that read an Iceberg field whose metrics can correct their statistics.
    ///
    /// # Safety
    /// `rd_att` must be the relation's tuple descriptor.
    pub(crate) unsafe fn whole_table(
        relid: pg_sys::Oid,
        rd_att: pg_sys::TupleDesc,
        user: pg_sys::Oid,
        sample: Option<(u64, u64)>,
    ) -> Result<(ScanState, Vec<crate::analyze_metrics::StatColumn>), FdwError> {
        let p = prepare(relid, rd_att, None, user, None)?;
        let columns = p
            .plans
            .iter()
            .filter_map(|plan| {
                let attnum = (plan.att_index + 1) as i16;
                let c = p.push_columns.get(&attnum)?;
                Some(crate::analyze_metrics::StatColumn {
                    attnum,
                    field_id: c.field_id,
                    ty: c.ty.clone(),
                    field: plan.field.clone(),
                    kind: plan.kind.clone(),
                })
            })
            .collect();
        let tasks = runtime::block_on_interruptible(p.scan.clone().plan_files())??;
        let kept = tasks.len();
        let mut state = ScanState {
            agg: None,
            display: p.resolved.display.clone(),
            snapshot_id: p.snapshot.as_ref().map(|s| s.snapshot_id),
            scan: Some(p.scan),
            tasks,
            stats: PruneStats { kept, skipped: 0 },
            pushed: Vec::new(),
            prefill: Arc::new(PrefillPlan::new(
                &p.plans,
                crate::pgutil::database_is_utf8(),
            )),
            plans: p.plans,
            constants: p.constants,
            natts: (*rd_att).natts as usize,
            stream: None,
            batch: None,
            readers: Vec::new(),
            batch_rows: 0,
            row: 0,
            rows_read: 0,
            done: false,
            started: false,
            claims: None,
            units: Vec::new(),
        };
        match sample {
            None => state.start_stream(),
            Some((target, seed)) => {
                let prefill = state.prefill.clone();
                state.stream = state.scan.as_ref().map(|s| {
                    s.read_sample(state.tasks.clone(), target, seed)
                        .map(move |b| b.map(|b| crate::prefill::prefill(&prefill, b)))
                        .boxed()
                });
                state.started = true;
                state.done = state.stream.is_none();
            }
        }
        Ok((state, columns))
    }

    /// The data files the scan plans (after pruning).
    pub(crate) fn tasks(&self) -> &[icefloe_core::FileScanTask] {
        &self.tasks
    }

    /// Starts reading: every unit, or in a parallel scan the units this process claims.
    fn start_stream(&mut self) {
        let plan = self.prefill.clone();
        let f: Arc<dyn Fn(RecordBatch) -> Result<Prefilled, FdwError> + Send + Sync> =
            Arc::new(move |b| crate::prefill::prefill(&plan, b));
        self.stream = self.scan.as_ref().map(|s| match self.claims {
            None => {
                let whole = self.tasks.iter().map(|t| TaskSplit {
                    task: t.clone(),
                    rows: None,
                });
                s.read_splits_mapped(whole.collect(), f)
            }
            Some(claims) => {
                let (scan, units) = (s.clone(), Arc::new(self.units.clone()));
                // One claimed unit at a time (claimed here, on the backend's thread), decoded
                // and converted on the runtime's worker thread.
                futures::stream::iter(std::iter::from_fn(move || claims.claim()))
                    .flat_map(move |i| scan.read_splits_mapped(vec![units[i].clone()], f.clone()))
                    .boxed()
            }
        });
        self.readers.clear();
        self.batch = None;
        self.batch_rows = 0;
        self.row = 0;
        self.started = true;
        self.done = self.stream.is_none();
    }

    /// Forgets what was read: the next row starts the scan again.
    fn restart(&mut self) {
        self.stream = None;
        self.readers.clear();
        self.batch = None;
        self.batch_rows = 0;
        self.row = 0;
        self.started = false;
        self.done = false;
    }

    /// Moves to the next non-empty batch; `false` at the end.
    fn next_batch(&mut self) -> Result<bool, FdwError> {
        if !self.started {
            self.start_stream();
        }
        loop {
            let Some(stream) = self.stream.as_mut() else {
                return Ok(false);
            };
            pgrx::check_for_interrupts!();
            let next = runtime::block_on_interruptible(stream.next())?;
            match next {
                None => {
                    self.stream = None;
                    self.readers.clear();
                    self.batch = None;
                    return Ok(false);
                }
                Some(Err(e)) => {
                    self.stream = None;
                    return Err(e.into());
                }
                Some(Ok(Err(e))) => {
                    self.stream = None;
                    return Err(e);
                }
                Some(Ok(Ok(pre))) => {
                    let batch = &pre.batch;
                    if batch.num_rows() == 0 {
                        continue;
                    }
                    let schema = batch.schema();
                    self.readers = self
                        .plans
                        .iter()
                        .zip(&pre.columns)
                        .map(|(p, filled)| match filled {
                            Some(_) => Ok(ColumnReader::Null),
                            None => ColumnReader::new(
                                batch.column(p.batch_index),
                                &schema.fields()[p.batch_index],
                                &p.kind,
                            ),
                        })
                        .collect::<Result<_, _>>()?;
                    self.batch_rows = batch.num_rows();
                    self.rows_read += batch.num_rows() as u64;
                    self.batch = Some(pre);
                    self.row = 0;
                    return Ok(true);
                }
            }
        }
    }
}

/// Which foreign table columns the plan uses (1-based attnums); `None` = all.
unsafe fn used_attnums(plan: *mut pg_sys::ForeignScan) -> Option<Vec<i32>> {
    let private = (*plan).fdw_private;
    if private.is_null() || (*private).length < 1 {
        return None;
    }
    let used = pg_sys::list_nth(private, 0) as *mut pg_sys::List;
    let mut out = Vec::new();
    if !used.is_null() {
        for i in 0..(*used).length {
            let a = pg_sys::list_nth_int(used, i);
            if a == 0 {
                return None;
            }
            out.push(a);
        }
    }
    Some(out)
}

/// A foreign table prepared for reading one snapshot: checked column plans and what
/// conditions can be pushed.
struct Prepared {
    resolved: Resolved,
    table: Table,
    snapshot: Option<Snapshot>,
    scan: Scan,
    /// What built `scan`, to build it again with row-group filters once the conditions'
    /// parameters are known.
    builder: icefloe_core::ScanBuilder,
    plans: Vec<ColumnPlan>,
    /// Columns absent from the snapshot's schema that read as a constant (0-based index).
    constants: Vec<(usize, pg_sys::Datum)>,
    push_columns: HashMap<i16, PushColumn>,
}

/// Resolves, opens (pinned, or metadata file `metadata_file` when given) and checks a
/// foreign table for a scan as role `user` of the columns `used` (1-based; `None` = all). Errors: the user may not read the location, a
/// column is unknown, a declared type cannot hold the Iceberg values exactly, or a NOT NULL
/// column could read NULL.
unsafe fn prepare(
    relid: pg_sys::Oid,
    rd_att: pg_sys::TupleDesc,
    used: Option<&[i32]>,
    user: pg_sys::Oid,
    metadata_file: Option<&str>,
) -> Result<Prepared, FdwError> {
    let relname = relation_name(relid);
    let opts = catalog_options(relid, user);
    let resolved = resolve_table(&opts, user)?;
    let table = match metadata_file {
        Some(m) => open_unpinned(&resolved, m)?,
        None => open_table(&resolved)?,
    };
    let tupdesc = PgTupleDesc::from_pg_unchecked(rd_att);
    let natts = tupdesc.len();

    // The snapshot and the schema the read uses (the core's rule: current and branch reads
    // use the current schema, snapshot/tag/time reads the snapshot's).
    let snapshot = table.select(&resolved.selector)?.cloned();
    let schema = table
        .read_schema(&resolved.selector, snapshot.as_ref())
        .clone();
    let snapshot_text = snapshot
        .as_ref()
        .map(|s| format!("snapshot {}", s.snapshot_id))
        .unwrap_or_else(|| "the table (no snapshot)".into());

    // Resolve every used column to its source (the core's rules: lineage, a column of the
    // schema read, a metadata column, or a field absent from that schema).
    let mut sources: Vec<(usize, ColumnSource)> = Vec::new();
    let mut constants = Vec::new();
    for i in 0..natts {
        let Some(att) = tupdesc.get(i) else { continue };
        if att.is_dropped() {
            continue;
        }
        let attnum = (i + 1) as i32;
        if let Some(u) = used {
            if !u.contains(&attnum) {
                continue;
            }
        }
        let colopts = options::read_def_list(pg_sys::GetForeignColumnOptions(relid, attnum as i16));
        let name = options::get(&colopts, "column_name")
            .map(str::to_string)
            .unwrap_or_else(|| att.name().to_string());
        let Some(source) = ColumnSource::resolve(table.metadata(), &schema, &name) else {
            return Err(FdwError::NoSuchColumn {
                column: name,
                relation: relname,
                available: schema
                    .columns()
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        if att.attnotnull && source.may_read_null() {
            return Err(FdwError::NotNull {
                column: att.name().to_string(),
                relation: relname.clone(),
                reason: match &source {
                    ColumnSource::Lineage(_) => format!(
                        "{name} is NULL for rows written before the table had row lineage"
                    ),
                    ColumnSource::Field(_) => {
                        format!("the Iceberg column {name} is optional in {snapshot_text}")
                    }
                    ColumnSource::Metadata(_) => {
                        format!("{name} is NULL for files of unpartitioned specs")
                    }
                    ColumnSource::Absent(_) => format!(
                        "{snapshot_text} has no column {name} and it has no initial-default"
                    ),
                },
            });
        }
        // An absent field reads as a constant: its initial-default, else NULL.
        if let ColumnSource::Absent(f) = &source {
            if let Some(l) = &f.initial_default {
                let datum = absent_value(l, &f.field_type, att).ok_or_else(|| {
                    FdwError::Internal(format!(
                        "cannot read the initial-default of {name} as {}",
                        pgutil::format_type(att.type_oid().value(), att.type_mod())
                    ))
                })?;
                constants.push((i, datum));
            }
        }
        sources.push((i, source));
    }
    let projection = Projection::new(sources.iter().map(|(_, s)| s));
    let mut builder = projection.apply(Scan::builder().snapshot(resolved.selector.clone()));
    if let Some(n) = crate::settings::scan_concurrency() {
        builder = builder.concurrency(n);
    }
    let scan = builder.clone().build(&table)?;
    let arrow_schema = scan.schema();

    // Column plans: how each used column's values become Datums.
    let mut plans = Vec::new();
    let mut push_columns: HashMap<i16, PushColumn> = HashMap::new();
    for (i, source) in &sources {
        let Some(att) = tupdesc.get(*i) else { continue };
        let Some(batch_index) = projection.batch_index(source) else {
            // Absent: a constant, or NULL.
            continue;
        };
        let field = arrow_schema.fields()[batch_index].clone();
        let kind = plan_kind(&field, att.type_oid().value(), att.type_mod()).ok_or_else(|| {
            FdwError::TypeMismatch {
                column: att.name().to_string(),
                relation: relname.clone(),
                declared: pgutil::format_type(att.type_oid().value(), att.type_mod()),
                iceberg: match source {
                    ColumnSource::Field(f) => f.field_type.to_string(),
                    ColumnSource::Metadata(_) => String::new(),
                    _ => "long".into(),
                },
                expected: pgutil::format_type(
                    crate::convert::natural_type(&field),
                    crate::convert::natural_typmod(&field),
                ),
            }
        })?;
        if let ColumnSource::Field(f) = source {
            if let Type::Primitive(p) = &f.field_type {
                let pushable = !matches!(
                    p,
                    icefloe_core::spec::PrimitiveType::TimestampNs
                        | icefloe_core::spec::PrimitiveType::TimestamptzNs
                ) && !matches!(kind, Kind::Json(_) | Kind::Null);
                if pushable {
                    push_columns.insert(
                        (*i + 1) as i16,
                        PushColumn {
                            field_id: f.id,
                            name: f.name.clone(),
                            ty: p.clone(),
                        },
                    );
                }
            }
        }
        plans.push(ColumnPlan {
            att_index: *i,
            batch_index,
            field,
            kind,
        });
    }
    Ok(Prepared {
        resolved,
        table,
        snapshot,
        scan,
        builder,
        plans,
        constants,
        push_columns,
    })
}

/// The value an absent column reads: the field's `initial-default` as a Datum of the
/// column's type (through its input function), `None` if it has no text form.
fn absent_value(
    l: &icefloe_core::spec::Literal,
    ty: &Type,
    att: &pgrx::pg_sys::FormData_pg_attribute,
) -> Option<pg_sys::Datum> {
    let text = crate::import::literal_text(l, ty)?;
    pgutil::InputFn::new(att.type_oid().value(), att.type_mod())
        .call(text.as_bytes())
        .ok()
}

/// The role a scan node of range-table entry `rti` runs as (a view's owner for a view's
/// relations).
unsafe fn scan_user(node: *mut pg_sys::ForeignScanState, rti: u32) -> pg_sys::Oid {
    let plan = (*node).ss.ps.plan as *mut pg_sys::ForeignScan;
    #[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15"))]
    let check_as = {
        let _ = plan;
        let estate = (*node).ss.ps.state;
        let rti = rti as i32;
        let rte = pg_sys::list_nth((*estate).es_range_table, rti - 1) as *mut pg_sys::RangeTblEntry;
        if rte.is_null() {
            pg_sys::InvalidOid
        } else {
            (*rte).checkAsUser
        }
    };
    #[cfg(not(any(feature = "pg13", feature = "pg14", feature = "pg15")))]
    let check_as = {
        let _ = rti;
        (*plan).checkAsUser
    };
    effective_user(check_as)
}

#[pg_guard]
unsafe extern "C-unwind" fn begin_foreign_scan(
    node: *mut pg_sys::ForeignScanState,
    _eflags: std::os::raw::c_int,
) {
    // A parallel worker starts once it knows the metadata its leader read
    // (initialize_worker).
    if pg_sys::ParallelWorkerNumber >= 0 && (*(*node).ss.ps.plan).parallel_aware {
        (*node).fdw_state = std::ptr::null_mut();
        return;
    }
    let state = begin(node, None).or_report();
    keep_state(node, state);
}

/// Hands `state` to the query's memory context (dropped with it, also on ERROR).
unsafe fn keep_state(node: *mut pg_sys::ForeignScanState, state: ScanState) {
    let cxt = (*(*node).ss.ps.state).es_query_cxt;
    let ptr = PgMemoryContexts::For(cxt).leak_and_drop_on_delete(state);
    (*node).fdw_state = ptr as *mut std::ffi::c_void;
}

/// Prepares a scan node's read: of the pinned table version, or (a parallel worker) of
/// metadata file `metadata_file`. Nothing is read before the first row.
unsafe fn begin(
    node: *mut pg_sys::ForeignScanState,
    metadata_file: Option<&str>,
) -> Result<ScanState, FdwError> {
    let plan = (*node).ss.ps.plan as *mut pg_sys::ForeignScan;
    let counted = crate::count::counted(plan);
    let (p, natts) = match counted {
        // count(*) pushed down: no scan relation; the scan tuple holds the counts.
        Some((relid, rti, quals)) => {
            let rel = pg_sys::RelationIdGetRelation(relid);
            // The columns of the conditions, for pruning.
            let used = used_attrs(std::ptr::null_mut(), quals, rti).unwrap_or_default();
            let p = prepare(
                relid,
                (*rel).rd_att,
                Some(&used),
                scan_user(node, rti),
                None,
            );
            pg_sys::RelationClose(rel);
            let slot = (*node).ss.ss_ScanTupleSlot;
            (p?, (*(*slot).tts_tupleDescriptor).natts as usize)
        }
        None => {
            let rel = (*node).ss.ss_currentRelation;
            let used = used_attnums(plan);
            let p = prepare(
                (*rel).rd_id,
                (*rel).rd_att,
                used.as_deref(),
                scan_user(node, (*plan).scan.scanrelid),
                metadata_file,
            )?;
            (p, (*(*rel).rd_att).natts as usize)
        }
    };

    // Pushdown: prune data files with the plan's conditions.
    // Parameters of a prepared statement have their values now: generic plans prune too.
    let (quals, rti) = match counted {
        Some((_, rti, quals)) => (quals, rti),
        None => ((*plan).scan.plan.qual, (*plan).scan.scanrelid),
    };
    let params = (*(*node).ss.ps.state).es_param_list_info;
    let pushed = match counted {
        // A count must take every condition, exactly (as planned).
        Some(_) => quals::extract_exact(quals, rti, &p.push_columns, params).ok_or_else(|| {
            FdwError::Internal("count(*): the conditions are no longer exact predicates".into())
        })?,
        None => quals::extract(quals, rti, &p.push_columns, params),
    };
    let schema = p.scan.table_schema().clone();
    let pruner = Pruner::new(
        p.table.metadata(),
        &schema,
        pushed.iter().map(|x| x.predicate.clone()).collect(),
    );
    let scan_for_plan = p.scan.clone();
    let tasks = runtime::block_on_interruptible(scan_for_plan.plan_files())??;
    let (tasks, stats) = pruner.prune(tasks);
    let units = if (*plan).scan.plan.parallel_aware {
        crate::parallel::units(&tasks, crate::settings::parallel_split_rows())
    } else {
        Vec::new()
    };
    // The same conditions skip row groups inside the files read.
    let scan = if pushed.is_empty() {
        p.scan
    } else {
        p.builder
            .row_group_filter(pushed.iter().map(|x| x.predicate.clone()).collect())
            .build(&p.table)?
    };
    let agg = match counted {
        Some(_) => {
            // Every file left must match in every row, by its partition values: the count is
            // then the files' live rows.
            if pruner.predicates().len() != pushed.len() {
                return Err(FdwError::Internal(
                    "count(*): a condition names a column the snapshot read lacks".into(),
                ));
            }
            if let Some(t) = tasks.iter().find(|t| !pruner.all_rows_match(&t.data_file)) {
                return Err(FdwError::Internal(format!(
                    "count(*) with conditions {}: data file {} is not decided by its partition values",
                    pushed.iter().map(|p| p.display.as_str()).collect::<Vec<_>>().join(" AND "),
                    t.data_file.file_path
                )));
            }
            Some(AggCount {
                from_metadata: icefloe_core::scan::live_count::live_rows_from_metadata(&tasks),
                returned: false,
            })
        }
        None => None,
    };

    let state = ScanState {
        agg,
        display: p.resolved.display.clone(),
        snapshot_id: p.snapshot.as_ref().map(|s| s.snapshot_id),
        scan: Some(scan),
        tasks,
        stats,
        pushed,
        prefill: Arc::new(PrefillPlan::new(
            &p.plans,
            crate::pgutil::database_is_utf8(),
        )),
        plans: p.plans,
        constants: p.constants,
        natts,
        stream: None,
        batch: None,
        readers: Vec::new(),
        batch_rows: 0,
        row: 0,
        rows_read: 0,
        done: false,
        started: false,
        claims: None,
        units,
    };
    Ok(state)
}

unsafe fn state_of<'a>(node: *mut pg_sys::ForeignScanState) -> Option<&'a mut ScanState> {
    ((*node).fdw_state as *mut ScanState).as_mut()
}

#[pg_guard]
unsafe extern "C-unwind" fn iterate_foreign_scan(
    node: *mut pg_sys::ForeignScanState,
) -> *mut pg_sys::TupleTableSlot {
    let slot = (*node).ss.ss_ScanTupleSlot;
    crate::slot::clear(slot);
    let Some(state) = state_of(node) else {
        return slot;
    };
    if let Some(agg) = &state.agg {
        if agg.returned {
            return slot;
        }
        let n = match agg.from_metadata {
            Some(n) => n,
            None => {
                // Deletes that metadata cannot count: count the live rows the core returns.
                let mut n = 0i64;
                while state.next_batch().or_report() {
                    n += state.batch_rows as i64;
                }
                n
            }
        };
        if let Some(agg) = state.agg.as_mut() {
            agg.returned = true;
        }
        let values = std::slice::from_raw_parts_mut((*slot).tts_values, state.natts);
        let nulls = std::slice::from_raw_parts_mut((*slot).tts_isnull, state.natts);
        values.fill(pg_sys::Datum::from(n));
        nulls.fill(false);
        crate::slot::store_virtual(slot);
        return slot;
    }
    let values = std::slice::from_raw_parts_mut((*slot).tts_values, state.natts);
    let nulls = std::slice::from_raw_parts_mut((*slot).tts_isnull, state.natts);
    if !state.next_row(values, nulls).or_report() {
        return slot;
    }
    crate::slot::store_virtual(slot);
    slot
}

#[pg_guard]
unsafe extern "C-unwind" fn rescan_foreign_scan(node: *mut pg_sys::ForeignScanState) {
    if let Some(state) = state_of(node) {
        if let Some(agg) = state.agg.as_mut() {
            agg.returned = false;
        }
        state.restart();
    }
}

/// The metadata file a scan node's state read.
unsafe fn metadata_file_of(node: *mut pg_sys::ForeignScanState) -> Option<String> {
    let state = state_of(node)?;
    Some(state.scan.as_ref()?.table().metadata_file().to_string())
}

#[pg_guard]
unsafe extern "C-unwind" fn estimate_dsm(
    node: *mut pg_sys::ForeignScanState,
    _pcxt: *mut pg_sys::ParallelContext,
) -> pg_sys::Size {
    crate::parallel::size(&metadata_file_of(node).unwrap_or_default())
}

#[pg_guard]
unsafe extern "C-unwind" fn initialize_dsm(
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

#[pg_guard]
unsafe extern "C-unwind" fn reinitialize_dsm(
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

#[pg_guard]
unsafe extern "C-unwind" fn initialize_worker(
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

#[pg_guard]
unsafe extern "C-unwind" fn shutdown_foreign_scan(node: *mut pg_sys::ForeignScanState) {
    // The parallel context (and the shared counter) goes away after this: stop using it.
    if let Some(state) = state_of(node) {
        if state.claims.take().is_some() {
            state.stream = None;
            state.readers.clear();
            state.batch = None;
            state.done = true;
        }
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn end_foreign_scan(node: *mut pg_sys::ForeignScanState) {
    if let Some(state) = state_of(node) {
        if let Some(scan) = &state.scan {
            crate::error::report_warnings(&state.display, scan.table());
        }
        // Stop reading now; the state itself is freed with the query's memory.
        state.stream = None;
        state.readers.clear();
        state.batch = None;
        state.tasks.clear();
        state.done = true;
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn explain_foreign_scan(
    node: *mut pg_sys::ForeignScanState,
    es: *mut pg_sys::ExplainState,
) {
    let Some(state) = state_of(node) else { return };
    let text = |label: &str, value: &str| {
        if let (Ok(l), Ok(v)) = (CString::new(label), CString::new(value)) {
            pg_sys::ExplainPropertyText(l.as_ptr(), v.as_ptr(), es);
        }
    };
    let int = |label: &str, value: i64| {
        if let Ok(l) = CString::new(label) {
            pg_sys::ExplainPropertyInteger(l.as_ptr(), std::ptr::null(), value, es);
        }
    };
    text("Iceberg Table", &state.display);
    match state.snapshot_id {
        Some(id) => text("Snapshot", &id.to_string()),
        None => text("Snapshot", "none (table has no snapshot)"),
    }
    if let Some(agg) = &state.agg {
        let of = if state.pushed.is_empty() {
            ""
        } else {
            ", of the files whose identity partition values satisfy the conditions"
        };
        text(
            "Aggregate",
            &match agg.from_metadata {
                Some(_) => format!(
                    "count(*) from metadata (record counts minus deletion vector cardinalities{of})"
                ),
                None => {
                    format!("count(*) of the rows read (position or equality deletes apply{of})")
                }
            },
        );
    }
    int("Files Scanned", state.stats.kept as i64);
    if (*(*node).ss.ps.plan).parallel_aware {
        int("Units", state.units.len() as i64);
    }
    int("Files Skipped", state.stats.skipped as i64);
    if (*es).analyze {
        int("Rows Read", state.rows_read as i64);
    }
    if !state.pushed.is_empty() {
        text(
            "Pruning Filters",
            &state
                .pushed
                .iter()
                .map(|p| p.display.as_str())
                .collect::<Vec<_>>()
                .join(" AND "),
        );
    }
}
