//! The `FdwRoutine` of the `icefloe` wrapper, over `pg_sys`: planning (row estimates from the
//! snapshot summary, projection), execution (streaming Arrow batches from the core into tuple
//! slots), EXPLAIN and IMPORT FOREIGN SCHEMA.
//!
//! Scan state lives in Rust memory owned by the executor's memory context (dropped when the
//! query ends, also on ERROR), so an aborted query leaks nothing.

use std::collections::HashMap;
use std::ffi::{CStr, CString};

use arrow::record_batch::RecordBatch;
use futures::stream::BoxStream;
use futures::StreamExt;
use icefloe_core::scan::arrow_schema::{LAST_UPDATED_SEQ, ROW_ID};
use icefloe_core::scan::prune::{PruneStats, Pruner};
use icefloe_core::spec::Type;
use icefloe_core::{FileScanTask, Scan, Table};
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::{PgMemoryContexts, PgTupleDesc};

use crate::convert::{plan_kind, ColumnPlan, ColumnReader, Kind};
use crate::error::{FdwError, OrReport};
use crate::options::{self, OptionList, Resolved};
use crate::pgutil;
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
    pg_sys::Datum::from(routine)
}

/// The options of a foreign table, its server and the current user's mapping.
pub struct CatalogOptions {
    /// The foreign table's options.
    pub table: OptionList,
    /// Its server's options.
    pub server: OptionList,
    /// The current user's (or PUBLIC's) user mapping options; empty without one.
    pub mapping: OptionList,
    /// The server's name.
    pub server_name: String,
}

/// Reads the options a foreign table is read with.
///
/// # Safety
/// `relid` must be a foreign table.
pub unsafe fn catalog_options(relid: pg_sys::Oid) -> CatalogOptions {
    let ft = pg_sys::GetForeignTable(relid);
    let server = pg_sys::GetForeignServer((*ft).serverid);
    CatalogOptions {
        table: options::read_def_list((*ft).options),
        server: options::read_def_list((*server).options),
        mapping: pgutil::user_mapping_options(pg_sys::GetUserId(), (*ft).serverid),
        server_name: CStr::from_ptr((*server).servername)
            .to_string_lossy()
            .into_owned(),
    }
}

/// Resolves what a foreign table reads and checks that the current user may read it.
pub fn resolve_table(opts: &CatalogOptions) -> Result<Resolved, FdwError> {
    let r = options::resolve(&opts.table, &opts.server, &opts.mapping)?;
    options::check_local_access(&r.location, "Iceberg table")?;
    Ok(r)
}

/// Opens the table a resolved foreign table reads (cached metadata).
pub fn open_table(r: &Resolved) -> Result<Table, FdwError> {
    let location = r.location.clone();
    let storage = r.storage.clone();
    runtime::block_on(async move {
        Table::open_with_storage(&location, icefloe_core::cache::Caches::global(), &storage).await
    })?
    .map_err(|e| match e {
        icefloe_core::Error::Location { reason, .. } => FdwError::TableNotFound {
            table: r.display.clone(),
            reason,
        },
        icefloe_core::Error::NotFound { path, .. } => FdwError::TableNotFound {
            table: r.display.clone(),
            reason: format!("{path} does not exist"),
        },
        e => FdwError::Core(e),
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
    let opts = catalog_options(relid);
    let resolved = resolve_table(&opts).or_report();
    let table = open_table(&resolved).or_report();
    let snapshot = table
        .select(&resolved.selector)
        .map_err(FdwError::from)
        .or_report();
    let total = snapshot
        .and_then(|s| s.summary_i64("total-records"))
        .map(|n| n.max(0) as f64)
        .unwrap_or(1000.0);
    (*baserel).tuples = total;
    let sel = pg_sys::clauselist_selectivity(
        root,
        (*baserel).baserestrictinfo,
        (*baserel).relid as i32,
        pg_sys::JoinType::JOIN_INNER,
        std::ptr::null_mut(),
    );
    (*baserel).rows = pg_sys::clamp_row_est(total * sel);
}

#[pg_guard]
unsafe extern "C-unwind" fn get_foreign_paths(
    root: *mut pg_sys::PlannerInfo,
    baserel: *mut pg_sys::RelOptInfo,
    _relid: pg_sys::Oid,
) {
    let rows = (*baserel).rows;
    let tuples = (*baserel).tuples;
    let startup = 10.0;
    // Reading and decoding a row costs about what a sequential scan of a heap row does.
    let total = startup + tuples * (pg_sys::cpu_tuple_cost * 2.0) + rows * pg_sys::cpu_tuple_cost;
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
    pg_sys::add_path(baserel, path as *mut pg_sys::Path);
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
    let scanrelid = (*baserel).relid;
    // Every condition stays in the plan's qual: Postgres rechecks them all.
    let quals = pg_sys::extract_actual_clauses(scan_clauses, false);
    // The attributes the query uses: its target list and its conditions.
    let mut attrs: *mut pg_sys::Bitmapset = std::ptr::null_mut();
    pg_sys::pull_varattnos(
        (*(*baserel).reltarget).exprs as *mut pg_sys::Node,
        scanrelid,
        &mut attrs,
    );
    pg_sys::pull_varattnos(quals as *mut pg_sys::Node, scanrelid, &mut attrs);
    let mut used: *mut pg_sys::List = std::ptr::null_mut();
    let mut whole_row = false;
    let mut i = -1;
    loop {
        i = pg_sys::bms_next_member(attrs, i);
        if i < 0 {
            break;
        }
        let attno = i + pg_sys::FirstLowInvalidHeapAttributeNumber;
        if attno == 0 {
            whole_row = true;
        } else if attno > 0 {
            used = pg_sys::lappend_int(used, attno);
        }
    }
    if whole_row {
        used = pg_sys::lappend_int(std::ptr::null_mut(), 0);
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

/// Everything one scan needs between calls.
struct ScanState {
    display: String,
    snapshot_id: Option<i64>,
    scan: Option<Scan>,
    tasks: Vec<FileScanTask>,
    stats: PruneStats,
    pushed: Vec<Pushed>,
    plans: Vec<ColumnPlan>,
    natts: usize,
    stream: Option<BoxStream<'static, icefloe_core::Result<RecordBatch>>>,
    readers: Vec<ColumnReader>,
    batch_rows: usize,
    row: usize,
    done: bool,
}

impl ScanState {
    fn start_stream(&mut self) {
        self.stream = self.scan.as_ref().map(|s| s.read_tasks(self.tasks.clone()));
        self.readers.clear();
        self.batch_rows = 0;
        self.row = 0;
        self.done = self.stream.is_none();
    }

    /// Moves to the next non-empty batch; `false` at the end.
    fn next_batch(&mut self) -> Result<bool, FdwError> {
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
                    return Ok(false);
                }
                Some(Err(e)) => {
                    self.stream = None;
                    return Err(e.into());
                }
                Some(Ok(batch)) => {
                    if batch.num_rows() == 0 {
                        continue;
                    }
                    let schema = batch.schema();
                    self.readers = self
                        .plans
                        .iter()
                        .map(|p| {
                            ColumnReader::new(
                                batch.column(p.batch_index),
                                &schema.fields()[p.batch_index],
                                &p.kind,
                            )
                        })
                        .collect::<Result<_, _>>()?;
                    self.batch_rows = batch.num_rows();
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

/// Where a foreign table column's values come from.
enum Source {
    Lineage(usize),
    Column(String),
    /// The column exists in another schema of the table but not in the snapshot read.
    Absent,
}

#[pg_guard]
unsafe extern "C-unwind" fn begin_foreign_scan(
    node: *mut pg_sys::ForeignScanState,
    eflags: std::os::raw::c_int,
) {
    let state = begin(node, eflags).or_report();
    let ptr = PgMemoryContexts::CurrentMemoryContext.leak_and_drop_on_delete(state);
    (*node).fdw_state = ptr as *mut std::ffi::c_void;
}

unsafe fn begin(
    node: *mut pg_sys::ForeignScanState,
    eflags: std::os::raw::c_int,
) -> Result<ScanState, FdwError> {
    let rel = (*node).ss.ss_currentRelation;
    let relid = (*rel).rd_id;
    let relname = relation_name(relid);
    let plan = (*node).ss.ps.plan as *mut pg_sys::ForeignScan;
    let opts = catalog_options(relid);
    let resolved = resolve_table(&opts)?;
    let table = open_table(&resolved)?;
    let tupdesc = PgTupleDesc::from_pg_unchecked((*rel).rd_att);
    let natts = tupdesc.len();
    let used = used_attnums(plan);

    // The snapshot and the schema the read uses (the core's rule: current and branch reads
    // use the current schema, snapshot/tag/time reads the snapshot's).
    let snapshot = table.select(&resolved.selector)?.cloned();
    let schema = table
        .read_schema(&resolved.selector, snapshot.as_ref())
        .clone();
    let known_anywhere = |name: &str| {
        table
            .metadata()
            .schemas
            .iter()
            .any(|s| s.column(name).is_some())
    };

    // Resolve every used column to a source.
    let mut sources: Vec<(usize, Source)> = Vec::new();
    for i in 0..natts {
        let Some(att) = tupdesc.get(i) else { continue };
        if att.is_dropped() {
            continue;
        }
        let attnum = (i + 1) as i32;
        if let Some(u) = &used {
            if !u.contains(&attnum) {
                continue;
            }
        }
        let colopts = options::read_def_list(pg_sys::GetForeignColumnOptions(relid, attnum as i16));
        let name = options::get(&colopts, "column_name")
            .map(str::to_string)
            .unwrap_or_else(|| att.name().to_string());
        let source = if name == ROW_ID {
            Source::Lineage(0)
        } else if name == LAST_UPDATED_SEQ {
            Source::Lineage(1)
        } else if schema.column(&name).is_some() {
            Source::Column(name)
        } else if known_anywhere(&name) {
            Source::Absent
        } else {
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
        sources.push((i, source));
    }
    let lineage = sources.iter().any(|(_, s)| matches!(s, Source::Lineage(_)));
    let mut columns: Vec<String> = Vec::new();
    for (_, s) in &sources {
        if let Source::Column(n) = s {
            if !columns.contains(n) {
                columns.push(n.clone());
            }
        }
    }
    let scan = Scan::builder()
        .snapshot(resolved.selector.clone())
        .columns(columns.clone())
        .lineage(lineage)
        .build(&table)?;
    let arrow_schema = scan.schema();
    let offset = if lineage { 2 } else { 0 };

    // Column plans: how each used column's values become Datums.
    let mut plans = Vec::new();
    let mut push_columns: HashMap<i16, PushColumn> = HashMap::new();
    for (i, source) in &sources {
        let Some(att) = tupdesc.get(*i) else { continue };
        let batch_index = match source {
            Source::Lineage(k) => *k,
            Source::Column(n) => offset + columns.iter().position(|c| c == n).unwrap_or(0),
            Source::Absent => {
                continue; // stays NULL
            }
        };
        let field = arrow_schema.fields()[batch_index].clone();
        let kind = plan_kind(&field, att.type_oid().value(), att.type_mod()).ok_or_else(|| {
            let expected = crate::convert::natural_type(&field);
            FdwError::TypeMismatch {
                column: att.name().to_string(),
                relation: relname.clone(),
                declared: pgutil::format_type(att.type_oid().value(), att.type_mod()),
                iceberg: match source {
                    Source::Column(n) => schema
                        .column(n)
                        .map(|f| f.field_type.to_string())
                        .unwrap_or_default(),
                    _ => "long".into(),
                },
                expected: pgutil::format_type(expected, -1),
            }
        })?;
        if let Source::Column(n) = source {
            if let Some(f) = schema.column(n) {
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
                                name: n.clone(),
                                ty: p.clone(),
                            },
                        );
                    }
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

    // Pushdown: prune data files with the plan's conditions.
    let pushed = quals::extract(
        (*plan).scan.plan.qual,
        (*plan).scan.scanrelid,
        &push_columns,
    );
    let pruner = Pruner::new(
        table.metadata(),
        &schema,
        pushed.iter().map(|p| p.predicate.clone()).collect(),
    );
    let scan_for_plan = scan.clone();
    let tasks = runtime::block_on_interruptible(scan_for_plan.plan_files())??;
    let (tasks, stats) = pruner.prune(tasks);

    let mut state = ScanState {
        display: resolved.display.clone(),
        snapshot_id: snapshot.as_ref().map(|s| s.snapshot_id),
        scan: Some(scan),
        tasks,
        stats,
        pushed,
        plans,
        natts,
        stream: None,
        readers: Vec::new(),
        batch_rows: 0,
        row: 0,
        done: true,
    };
    if eflags & pg_sys::EXEC_FLAG_EXPLAIN_ONLY as i32 == 0 {
        state.start_stream();
    }
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
    pg_sys::ExecClearTuple(slot);
    let Some(state) = state_of(node) else {
        return slot;
    };
    if state.done {
        return slot;
    }
    if state.row >= state.batch_rows && !state.next_batch().or_report() {
        state.done = true;
        return slot;
    }
    let row = state.row;
    state.row += 1;
    let values = std::slice::from_raw_parts_mut((*slot).tts_values, state.natts);
    let nulls = std::slice::from_raw_parts_mut((*slot).tts_isnull, state.natts);
    nulls.fill(true);
    for (plan, reader) in state.plans.iter().zip(state.readers.iter_mut()) {
        if let Some(d) = reader.datum(row).or_report() {
            values[plan.att_index] = d;
            nulls[plan.att_index] = false;
        }
    }
    pg_sys::ExecStoreVirtualTuple(slot);
    slot
}

#[pg_guard]
unsafe extern "C-unwind" fn rescan_foreign_scan(node: *mut pg_sys::ForeignScanState) {
    if let Some(state) = state_of(node) {
        state.start_stream();
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn end_foreign_scan(node: *mut pg_sys::ForeignScanState) {
    if let Some(state) = state_of(node) {
        // Stop reading now; the state itself is freed with the query's memory.
        state.stream = None;
        state.readers.clear();
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
    int("Files Scanned", state.stats.kept as i64);
    int("Files Skipped", state.stats.skipped as i64);
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
