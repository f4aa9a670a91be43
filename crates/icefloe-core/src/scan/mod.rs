//! Scans: choose a snapshot and columns, plan file tasks, and stream live rows as Arrow
//! record batches with bounded memory.
//!
//! In the data path (catalog → metadata → manifests → file tasks → deletes → record batches
//! → CSV/Parquet/tuples) a scan covers manifests to record batches, in two halves:
//!
//! - [`plan`]: manifests → file tasks (task, planner, prune, estimate, split, live count,
//!   partition directories, column statistics). No data file's rows are read.
//! - [`read`]: file tasks → record batches (reader with deletes applied, schema adaptation,
//!   filter, page index, metadata columns, lineage).
//!
//! This module holds the [`Scan`] and its [`ScanBuilder`], which tie the two together, and
//! the modules that resolve a front-end's columns for a `Scan`: [`column_source`] (a named
//! column: lineage, field, metadata column, or a field absent from the schema read) and
//! [`projection`] (what the scan reads for them and where each sits in its batches); and
//! the modules that add methods to a `Scan` and so need both halves: [`estimate`] (rows to
//! decode), [`positions`] (chosen rows of a task), [`resume`] (reading from a batch's restart
//! point), [`sample`] (ANALYZE's sample), [`preload`] (every delete file up front) and
//! [`parquet_view`] (a scan's rows as one Parquet file); and [`deletes`], a task's deletes
//! through the table's caches (`delete/` decodes them and knows neither tables nor caches). The
//! children of both halves are re-exported here at their old paths (`scan::task`,
//! `scan::prune`, `scan::resume`, ...); `scan::plan` and `scan::read` keep the items of the
//! old `plan` and `read` modules.

pub mod column_source;
pub mod deletes;
pub mod estimate;
pub mod parquet_view;
pub mod plan;
pub mod positions;
pub mod preload;
pub mod projection;
pub mod read;
pub mod resume;
pub mod sample;

pub use plan::{column_stats, estimate_rows, live_count, partition_dirs, prune, split, task};
pub use read::{adapt, filter, lineage, metadata_columns, page_index};

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use futures::stream::BoxStream;
use futures::StreamExt;

use crate::spec::name_mapping::NameMapping;
use crate::spec::{NestedField, Schema, Snapshot};
use crate::table::{SnapshotSelector, Table};
pub use task::FileScanTask;
// Re-exported: front-ends name the Arrow schema by its old path.
pub use crate::spec::arrow_schema;
use read::{ReadContext, DEFAULT_BATCH_SIZE};
use split::TaskSplit;

/// Builds a [`Scan`].
#[derive(Debug, Clone, Default)]
pub struct ScanBuilder {
    selector: SnapshotSelector,
    columns: Option<Vec<String>>,
    lineage: bool,
    batch_size: Option<usize>,
    concurrency: Option<usize>,
    row_group_filter: Vec<prune::Predicate>,
    filter: Option<crate::expr::Filter>,
    schema_id: Option<i32>,
    sliced: bool,
    read_ahead: Option<crate::io::readahead::ReadAheadBudget>,
}

impl ScanBuilder {
    /// Skip the Parquet row groups whose column statistics prove that no row satisfies every
    /// predicate (file pruning is separate: [`prune::Pruner::prune`]). The predicates only
    /// decide what is read: rows that do not satisfy them may still be returned.
    pub fn row_group_filter(mut self, predicates: Vec<prune::Predicate>) -> Self {
        self.row_group_filter = predicates;
        self
    }

    /// Return only the rows where `filter` is true (SQL semantics, [`crate::expr`]), and skip
    /// the manifests, data files, row groups and pages that cannot hold such rows. The filter
    /// may name columns that are not projected, and the lineage columns.
    pub fn filter(mut self, filter: crate::expr::Filter) -> Self {
        self.filter = Some(filter);
        self
    }

    /// Which snapshot to read (default: current snapshot of `main`).
    pub fn snapshot(mut self, sel: SnapshotSelector) -> Self {
        self.selector = sel;
        self
    }

    /// Read with the table schema `id` instead of the one [`Table::read_schema`] chooses for
    /// the snapshot selector: for a front-end that has already resolved a selector with
    /// [`Table::resolve`] to a snapshot id and a schema, and reads that pair again later.
    pub fn schema_id(mut self, id: i32) -> Self {
        self.schema_id = Some(id);
        self
    }

    /// Read only these top-level columns, in this order (default: all, in schema order). The
    /// metadata columns `_file`, `_pos`, `_spec_id` and `_partition` can be named too (see
    /// [`metadata_columns`]); a table column of the same name wins.
    pub fn columns(mut self, names: Vec<String>) -> Self {
        self.columns = Some(names);
        self
    }

    /// Put `_row_id` and `_last_updated_sequence_number` first.
    pub fn lineage(mut self, on: bool) -> Self {
        self.lineage = on;
        self
    }

    /// Rows per batch (default 8192).
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = Some(n.max(1));
        self
    }

    /// Read every Parquet data file in slices of about `read_slice_bytes` of its projected
    /// columns through its offset index ([`crate::io::readahead`]), local files too (by
    /// default only files in object stores are): a reader then holds a few slices of a file,
    /// not whole row groups, whatever their size. For a long-lived process serving many
    /// readers at once (the FUSE mount).
    pub fn sliced_reads(mut self, on: bool) -> Self {
        self.sliced = on;
        self
    }

    /// Read slices ahead only while `budget` has room ([`crate::io::readahead`]): a process
    /// with many readers at once shares one budget between their scans, so what they decode
    /// ahead of their consumers stays bounded whatever their number (default: a stream of a
    /// local file reads [`crate::io::readahead::READ_AHEAD`] slices ahead, one of a file in
    /// an object store as far as its share of the table's read-ahead window allows).
    pub fn read_ahead_budget(mut self, budget: crate::io::readahead::ReadAheadBudget) -> Self {
        self.read_ahead = Some(budget);
        self
    }

    /// How many data files are read at once (default: available cores; for a table in an
    /// object store, as many as the read-ahead window holds slices of, between that and
    /// [`MAX_REMOTE_FILES_IN_FLIGHT`]).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = Some(n.max(1));
        self
    }

    /// Resolves the snapshot and the projection. Errors: no such snapshot or ref, unknown column,
    /// invalid name mapping.
    pub fn build(self, table: &Table) -> crate::Result<Scan> {
        if let Some(names) = &self.columns {
            let mut seen = std::collections::HashSet::new();
            if let Some(dup) = names.iter().find(|n| !seen.insert(n.as_str())) {
                return Err(crate::Error::InvalidArgument(format!(
                    "column {dup:?} is asked for twice; each column can be projected once"
                )));
            }
        }
        let (snapshot, schema) = table.resolve(&self.selector)?;
        let schema = match self.schema_id {
            None => schema,
            Some(id) => table.metadata().schema(id).ok_or_else(|| {
                crate::Error::InvalidArgument(format!(
                    "schema {id} is not in {}",
                    table.metadata_file()
                ))
            })?,
        };
        let (snapshot, schema) = (snapshot.cloned(), schema.clone());
        let bound = self
            .filter
            .as_ref()
            .map(|f| crate::expr::bind(f, &schema))
            .transpose()
            .map_err(|e| crate::Error::InvalidArgument(format!("invalid filter {e}")))?;
        let mut fields: Vec<NestedField> = match &self.columns {
            None => schema.columns().to_vec(),
            Some(names) => names
                .iter()
                .map(|n| {
                    let meta = || metadata_columns::metadata_column(table.metadata(), n);
                    schema.column(n).cloned().or_else(meta).ok_or_else(|| {
                        crate::Error::InvalidArgument(format!(
                            "no column {n:?} in schema {} (columns: {})",
                            schema.schema_id,
                            schema
                                .columns()
                                .iter()
                                .map(|f| f.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })
                })
                .collect::<crate::Result<_>>()?,
        };
        let m = table.metadata();
        let mut fields_by_id = HashMap::new();
        let mut types_by_id = HashMap::new();
        let mut paths_by_id = HashMap::new();
        // Older schemas first, so the reading schema wins for ids it has.
        for s in m.schemas.iter().chain(std::iter::once(&schema)) {
            for f in s.columns() {
                fields_by_id.insert(f.id, f.clone());
            }
            types_by_id.extend(s.types_by_id());
            paths_by_id.extend(s.struct_paths());
        }
        let name_mapping = m
            .name_mapping()
            .map(|j| {
                NameMapping::parse(j).map_err(|e| crate::Error::metadata(table.metadata_file(), e))
            })
            .transpose()?;
        let out_schema = arrow_schema::scan_schema(&fields, self.lineage);
        // The filter's columns are read too (dropped after filtering).
        let mut read_lineage = self.lineage;
        let mut filter_predicates = Vec::new();
        if let Some(b) = &bound {
            read_lineage |= b.uses_lineage();
            for c in b.columns.iter().filter(|c| !c.lineage) {
                if !fields.iter().any(|f| f.id == c.field_id) {
                    fields.push(schema.column(&c.name).cloned().expect("bound column"));
                }
            }
            filter_predicates = crate::expr::predicates(b);
        }
        let read_schema = arrow_schema::scan_schema(&fields, read_lineage);
        let row_filter = bound
            .map(|b| filter::RowFilter::new(b, &read_schema, out_schema.clone()))
            .transpose()?
            .map(Arc::new);
        let pruner = (!filter_predicates.is_empty())
            .then(|| prune::Pruner::new(m, &schema, filter_predicates.clone()))
            .filter(|p| !p.is_empty());
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        let concurrency = self.concurrency.unwrap_or(cores);
        let files_in_flight = self
            .concurrency
            .unwrap_or_else(|| remote_files_in_flight(table.io(), cores));
        let mut row_group_predicates = self.row_group_filter.clone();
        row_group_predicates.extend(filter_predicates);
        let row_group_filter = (!row_group_predicates.is_empty())
            .then(|| prune::Pruner::new(m, &schema, row_group_predicates))
            .filter(|p| !p.is_empty());
        Ok(Scan {
            table: table.clone(),
            snapshot,
            schema,
            ctx: Arc::new(ReadContext {
                fields,
                lineage: read_lineage,
                schema: read_schema,
                fields_by_id,
                types_by_id,
                paths_by_id,
                name_mapping,
                batch_size: self.batch_size.unwrap_or(DEFAULT_BATCH_SIZE),
                row_group_filter,
                sliced: self.sliced,
                read_ahead: self.read_ahead,
            }),
            concurrency,
            files_in_flight,
            row_filter,
            pruner,
        })
    }
}

/// The most data files of a table in an object store read at once by default: each holds its
/// footer, the slice being consumed and a few decoded batches beside its share of the
/// read-ahead window.
pub const MAX_REMOTE_FILES_IN_FLIGHT: usize = 16;

/// Files read at once by default: `cores` for a local table; for a table in an object store,
/// as many as its read-ahead window holds slices of (files read at once keep more requests in
/// flight, and each one's read-ahead is bounded by the window, not by their number), at least
/// `cores` and at most [`MAX_REMOTE_FILES_IN_FLIGHT`].
fn remote_files_in_flight(io: &crate::io::TableIo, cores: usize) -> usize {
    if !io.is_remote() {
        return cores;
    }
    let slice = io
        .read_slice_bytes()
        .max(crate::io::readahead::LOCAL_SLICE_BYTES);
    let fits = (io.ranged_fetch().ahead.bytes() / slice) as usize;
    fits.clamp(
        cores.min(MAX_REMOTE_FILES_IN_FLIGHT),
        MAX_REMOTE_FILES_IN_FLIGHT,
    )
}

/// A planned read of one snapshot.
#[derive(Clone)]
pub struct Scan {
    table: Table,
    snapshot: Option<Snapshot>,
    schema: Schema,
    ctx: Arc<ReadContext>,
    concurrency: usize,
    /// Data files read at once by [`Scan::read_tasks`].
    files_in_flight: usize,
    /// The row filter, if any (then `ctx` reads the columns it needs as well).
    row_filter: Option<Arc<filter::RowFilter>>,
    /// The filter's pruning predicates, if any.
    pruner: Option<prune::Pruner>,
}

impl Scan {
    /// Starts building a scan.
    pub fn builder() -> ScanBuilder {
        ScanBuilder::default()
    }

    /// The snapshot read (`None` for a table without snapshots: no rows).
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    /// The Iceberg schema the snapshot reads with.
    pub fn table_schema(&self) -> &Schema {
        &self.schema
    }

    /// The Arrow schema of every batch this scan yields.
    pub fn schema(&self) -> SchemaRef {
        match &self.row_filter {
            Some(f) => f.schema.clone(),
            None => self.ctx.schema.clone(),
        }
    }

    /// The pruning predicates of the scan's filter, bound to the table (`None` without a
    /// filter, or when no part of it can prune).
    pub fn pruner(&self) -> Option<&prune::Pruner> {
        self.pruner.as_ref()
    }

    /// The table being read.
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// One task per live data file of the snapshot, with the deletes that apply; with a
    /// filter, only the data files that may hold rows it keeps.
    pub async fn plan_files(&self) -> crate::Result<Vec<FileScanTask>> {
        match &self.snapshot {
            Some(s) => plan::plan_files_pruned(&self.table, s, self.pruner.as_ref()).await,
            None => Ok(Vec::new()),
        }
    }

    /// [`Scan::plan_files`] as a stream, in bounded memory ([`plan::plan_stream`]: errors may
    /// come after tasks, so read it to its end before trusting it).
    pub fn plan_stream(&self) -> BoxStream<'static, crate::Result<FileScanTask>> {
        match &self.snapshot {
            Some(s) => plan::plan_stream(&self.table, s, self.pruner.as_ref()),
            None => futures::stream::empty().boxed(),
        }
    }

    /// [`Scan::plan_stream`] for a listing of files: the tasks carry no column metrics
    /// (decoding them is most of the work of planning a large snapshot), so they are for
    /// listing, not for reading. The same files in the same order, and the same checks.
    pub fn plan_listing(&self) -> BoxStream<'static, crate::Result<FileScanTask>> {
        match &self.snapshot {
            Some(s) => plan::planner::plan_stream_with(
                &self.table,
                s,
                self.pruner.as_ref(),
                plan::planner::Metrics::Drop,
            ),
            None => futures::stream::empty().boxed(),
        }
    }

    /// [`Scan::plan_files`] with counts of the manifests and data files pruning skipped.
    pub async fn plan_with_stats(&self) -> crate::Result<(Vec<FileScanTask>, plan::PlanStats)> {
        match &self.snapshot {
            Some(s) => plan::plan_with_stats(&self.table, s, self.pruner.as_ref()).await,
            None => Ok((Vec::new(), plan::PlanStats::default())),
        }
    }

    /// Streams the live rows of one task.
    pub fn read_task(&self, task: FileScanTask) -> BoxStream<'static, crate::Result<RecordBatch>> {
        self.read_split(TaskSplit { task, rows: None })
    }

    /// Streams the live rows of one split of a task (its positions `split.rows`).
    pub fn read_split(&self, split: TaskSplit) -> BoxStream<'static, crate::Result<RecordBatch>> {
        self.read_split_from(split, 0)
            .map(|b| b.map(|b| b.batch))
            .boxed()
    }

    /// Streams the live rows of `tasks` in order, reading several files at once on the tokio
    /// runtime ([`ScanBuilder::concurrency`]); at most two batches per file are buffered, and
    /// the files of a table in an object store share its read-ahead window in this order
    /// ([`crate::io::readahead`]). Must be polled inside a tokio runtime. Stops at the first
    /// error.
    pub fn read_tasks(
        &self,
        tasks: Vec<FileScanTask>,
    ) -> BoxStream<'static, crate::Result<RecordBatch>> {
        self.read_splits(
            tasks
                .into_iter()
                .map(|task| TaskSplit { task, rows: None })
                .collect(),
        )
    }

    /// Like [`Scan::read_tasks`], for splits of tasks ([`split`]).
    pub fn read_splits(
        &self,
        splits: Vec<TaskSplit>,
    ) -> BoxStream<'static, crate::Result<RecordBatch>> {
        self.read_splits_mapped(splits, std::sync::Arc::new(|b| b))
    }

    /// Like [`Scan::read_splits`], with each batch passed through `f` on the task that decoded
    /// it: a consumer's own per-batch work (turning columns into its values) runs beside the
    /// decoding, off the thread that polls the stream.
    pub fn read_splits_mapped<T: Send + 'static>(
        &self,
        splits: Vec<TaskSplit>,
        f: std::sync::Arc<dyn Fn(RecordBatch) -> T + Send + Sync>,
    ) -> BoxStream<'static, crate::Result<T>> {
        let scan = self.clone();
        let io = self.table.io();
        // Places are taken as files are started, in output order: the file the consumer is
        // at gets the largest share of the window.
        let window = io.is_remote().then(|| io.ranged_fetch().ahead.clone());
        let per_file = futures::stream::iter(splits).map(move |split| {
            let path = split.task.data_file.file_path.clone();
            let f = f.clone();
            let place = window.as_ref().map(|w| w.enter());
            let batches = scan
                .read_split_placed(split, 0, place)
                .map(move |b| b.map(|b| f(b.batch)))
                .boxed();
            futures::future::ready(crate::spawned::spawn_items(batches, 2, path))
        });
        let mut failed = false;
        per_file
            .buffered(self.files_in_flight)
            .flatten()
            .take_while(move |item| {
                let go = !failed;
                failed |= item.is_err();
                futures::future::ready(go)
            })
            .boxed()
    }

    /// Plans and streams every live row of the snapshot.
    pub async fn stream(&self) -> crate::Result<BoxStream<'static, crate::Result<RecordBatch>>> {
        let tasks = self.plan_files().await?;
        Ok(self.read_tasks(tasks))
    }
}
