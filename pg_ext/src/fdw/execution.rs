//! Executing a foreign scan: the [`ScanState`] a scan keeps between calls, begin (pruning
//! the data files with the plan's conditions, or a pushed `count(*)`), the rows streamed from
//! the core as Arrow batches and converted into tuple slots, rescan and end.

use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use futures::stream::BoxStream;
use futures::StreamExt;
use icefloe_core::scan::prune::{PruneStats, Pruner};
use icefloe_core::scan::split::TaskSplit;
use icefloe_core::{FileScanTask, Scan};
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::PgMemoryContexts;

use super::binding::{prepare, used_attnums, used_attrs};
use super::table::effective_user;
use crate::convert::{ColumnPlan, ColumnReader};
use crate::error::{FdwError, OrReport};
use crate::prefill::{PrefillPlan, Prefilled};
use crate::quals::{self, Pushed};
use crate::runtime;

/// A pushed-down `count(*)`: the count from metadata, or `None` when the files must be read.
pub(super) struct AggCount {
    pub(super) from_metadata: Option<i64>,
    /// Whether the one result row was returned.
    pub(super) returned: bool,
}

/// Everything one scan needs between calls.
pub(crate) struct ScanState {
    /// Set when the scan answers `count(*)`.
    pub(super) agg: Option<AggCount>,
    pub(super) display: String,
    pub(super) snapshot_id: Option<i64>,
    pub(super) scan: Option<Scan>,
    tasks: Vec<FileScanTask>,
    pub(super) stats: PruneStats,
    pub(super) pushed: Vec<Pushed>,
    plans: Vec<ColumnPlan>,
    /// Absent columns' constant values.
    constants: Vec<(usize, pg_sys::Datum)>,
    natts: usize,
    /// Rows the core delivered (live rows of the files read), for EXPLAIN ANALYZE.
    pub(super) rows_read: u64,
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
    pub(super) claims: Option<crate::parallel::Claims>,
    /// A parallel-aware scan's units (crate::parallel), claimed one at a time.
    pub(super) units: Vec<TaskSplit>,
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

    /// Stops reading for good: drops the stream and the batch, and returns no more rows.
    pub(super) fn stop_reading(&mut self) {
        self.stream = None;
        self.readers.clear();
        self.batch = None;
        self.done = true;
    }

    /// Forgets what was read: the next row starts the scan again.
    pub(super) fn restart(&mut self) {
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

/// `BeginForeignScan`: prepares the scan's state (a parallel worker's waits for its leader's
/// metadata, [`super::parallel`]); nothing is read before the first row.
#[pg_guard]
pub(super) unsafe extern "C-unwind" fn begin_foreign_scan(
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
pub(super) unsafe fn keep_state(node: *mut pg_sys::ForeignScanState, state: ScanState) {
    let cxt = (*(*node).ss.ps.state).es_query_cxt;
    let ptr = PgMemoryContexts::For(cxt).leak_and_drop_on_delete(state);
    (*node).fdw_state = ptr as *mut std::ffi::c_void;
}

/// Prepares a scan node's read: of the pinned table version, or (a parallel worker) of
/// metadata file `metadata_file`. Nothing is read before the first row.
pub(super) unsafe fn begin(
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

/// The state of a scan node begun by [`begin_foreign_scan`] (`None` before, or in a parallel
/// worker not yet initialized).
pub(super) unsafe fn state_of<'a>(
    node: *mut pg_sys::ForeignScanState,
) -> Option<&'a mut ScanState> {
    ((*node).fdw_state as *mut ScanState).as_mut()
}

/// `IterateForeignScan`: the next row in the scan slot (the count of a pushed `count(*)`),
/// or an empty slot at the end.
#[pg_guard]
pub(super) unsafe extern "C-unwind" fn iterate_foreign_scan(
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

/// `ReScanForeignScan`: the next row starts the scan again.
#[pg_guard]
pub(super) unsafe extern "C-unwind" fn rescan_foreign_scan(node: *mut pg_sys::ForeignScanState) {
    if let Some(state) = state_of(node) {
        if let Some(agg) = state.agg.as_mut() {
            agg.returned = false;
        }
        state.restart();
    }
}

/// `EndForeignScan`: reports the table's warnings and stops reading.
#[pg_guard]
pub(super) unsafe extern "C-unwind" fn end_foreign_scan(node: *mut pg_sys::ForeignScanState) {
    if let Some(state) = state_of(node) {
        if let Some(scan) = &state.scan {
            crate::error::report_warnings(&state.display, scan.table());
        }
        // Stop reading now; the state itself is freed with the query's memory.
        state.stop_reading();
        state.tasks.clear();
    }
}
