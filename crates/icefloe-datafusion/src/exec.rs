//! The physical scan of an Iceberg snapshot: one DataFusion partition per group of file scan
//! tasks ([`crate::partition`]), each read by the core's scan (deletes applied, lineage and
//! defaults filled, the pushed filter applied), then put in the projection's order and cut at
//! the pushed `LIMIT`.
//!
//! Made where the table is open, a scan holds the core's [`Scan`]; decoded in another process
//! (a cluster's executor, [`crate::codec`]) it holds what the scan is built from
//! ([`ScanSpec`]) and opens the table with that process's [`TableOpener`] when it first runs.

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{ColumnStatistics, Statistics};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PhysicalExpr, PlanProperties,
    ReplaceChildrenOptions, SendableRecordBatchStream, StatisticsArgs,
};
use futures::{StreamExt, TryStreamExt};
use icefloe_core::{FileScanTask, Scan};
use tokio::sync::OnceCell;

use crate::opener::TableOpener;
use crate::scan_spec::ScanSpec;

/// Reads groups of file scan tasks of one snapshot.
pub struct IcefloeScanExec {
    /// What the scan is built from (for another process).
    spec: Arc<ScanSpec>,
    /// The core's scan: made with the plan, or once, on first use, in another process.
    scan: Arc<OnceCell<Scan>>,
    /// How a decoded plan opens its table.
    opener: Arc<TableOpener>,
    /// Each partition's tasks.
    partitions: Vec<Vec<FileScanTask>>,
    /// Index in the core's batches of each output column.
    indices: Vec<usize>,
    schema: SchemaRef,
    limit: Option<usize>,
    /// The pushed filter's text, for EXPLAIN.
    filter: Option<String>,
    /// Live rows from metadata (exact) or an estimate.
    num_rows: Precision<usize>,
    properties: Arc<PlanProperties>,
}

impl fmt::Debug for IcefloeScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IcefloeScanExec")
            .field("table", &self.spec.table.metadata_file)
            .field("snapshot", &self.spec.snapshot_id)
            .field("partitions", &self.partitions.len())
            .field("limit", &self.limit)
            .finish()
    }
}

impl IcefloeScanExec {
    /// A scan of `partitions` with `scan` (built from `spec`, for the projection), its
    /// batches' columns picked by `indices` into `schema`, at most `limit` rows.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        spec: ScanSpec,
        scan: Option<Scan>,
        opener: Arc<TableOpener>,
        partitions: Vec<Vec<FileScanTask>>,
        indices: Vec<usize>,
        schema: SchemaRef,
        limit: Option<usize>,
        filter: Option<String>,
        num_rows: Precision<usize>,
    ) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(partitions.len().max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        IcefloeScanExec {
            spec: Arc::new(spec),
            scan: Arc::new(OnceCell::new_with(scan)),
            opener,
            partitions,
            indices,
            schema,
            limit,
            filter,
            num_rows,
            properties,
        }
    }

    /// Each partition's file scan tasks: plain data (data and delete files, sequence numbers,
    /// first row ids), what a distributed executor would be handed.
    pub fn partitions(&self) -> &[Vec<FileScanTask>] {
        &self.partitions
    }

    /// What the core's scan is built from.
    pub fn spec(&self) -> &ScanSpec {
        &self.spec
    }

    /// The core's scan these tasks are read with, once made (always in the process that
    /// planned it; in another, after the first partition started).
    pub fn scan(&self) -> Option<&Scan> {
        self.scan.get()
    }

    /// Index in the core's batches of each output column.
    pub fn indices(&self) -> &[usize] {
        &self.indices
    }

    /// The pushed `LIMIT`.
    pub fn limit(&self) -> Option<usize> {
        self.limit
    }

    /// The pushed filter's text (DataFusion's), for EXPLAIN.
    pub fn filter_text(&self) -> Option<&str> {
        self.filter.as_deref()
    }

    /// The rows the scan yields, from metadata.
    pub fn num_rows(&self) -> Precision<usize> {
        self.num_rows
    }

    /// The same scan as a [`crate::task_read::IcefloeTaskReadExec`] over its tasks held as
    /// in-memory partitions: the form a Ballista scheduler can hand out partition by
    /// partition (it restricts a task's plan to its partitions only through leaves it knows).
    pub fn into_task_read(self) -> Result<crate::task_read::IcefloeTaskReadExec> {
        crate::task_read::IcefloeTaskReadExec::over_tasks(
            Reader {
                scan: self.scan,
                spec: self.spec,
                opener: self.opener,
                indices: self.indices,
                schema: self.schema,
                limit: self.limit,
            },
            &self.partitions,
            self.filter,
            self.num_rows,
        )
    }
}

impl DisplayAs for IcefloeScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let files: usize = self.partitions.iter().map(Vec::len).sum();
        write!(
            f,
            "IcefloeScanExec: table={}, snapshot={}, partitions={}, files={}",
            self.spec.table.metadata_file,
            self.spec
                .snapshot_id
                .map_or("none".to_string(), |s| s.to_string()),
            self.partitions.len(),
            files
        )?;
        if let Some(filter) = &self.filter {
            write!(f, ", filter={filter}")?;
        }
        if let Some(limit) = self.limit {
            write!(f, ", limit={limit}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for IcefloeScanExec {
    fn name(&self) -> &str {
        "IcefloeScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let tasks = match self.partitions.get(partition) {
            Some(t) => t.clone(),
            None if partition == 0 => Vec::new(),
            None => {
                return Err(DataFusionError::Internal(format!(
                    "IcefloeScanExec has {} partitions, not {}",
                    self.partitions.len(),
                    partition + 1
                )))
            }
        };
        let reader = Reader {
            scan: self.scan.clone(),
            spec: self.spec.clone(),
            opener: self.opener.clone(),
            indices: self.indices.clone(),
            schema: self.schema.clone(),
            limit: self.limit,
        };
        Ok(reader.read(futures::future::ready(Ok(tasks))))
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        let num_rows = match args.partition() {
            None => self.num_rows,
            // Per partition, only the whole's count is known.
            Some(_) => self.num_rows.to_inexact(),
        };
        Ok(Arc::new(Statistics {
            num_rows,
            total_byte_size: Precision::Absent,
            column_statistics: vec![ColumnStatistics::new_unknown(); self.schema.fields().len()],
        }))
    }

    fn fetch(&self) -> Option<usize> {
        self.limit
    }
}

/// How a partition's tasks are read: the scan (made once, here or on first use), what it is
/// made from, the output columns and the limit. Shared by [`IcefloeScanExec`] and
/// [`crate::task_read::IcefloeTaskReadExec`].
#[derive(Clone)]
pub(crate) struct Reader {
    pub scan: Arc<OnceCell<Scan>>,
    pub spec: Arc<ScanSpec>,
    pub opener: Arc<TableOpener>,
    pub indices: Vec<usize>,
    pub schema: SchemaRef,
    pub limit: Option<usize>,
}

impl Reader {
    /// The rows of the tasks `tasks` gives, projected, at most `limit` of them.
    pub fn read(
        self,
        tasks: impl std::future::Future<Output = Result<Vec<FileScanTask>>> + Send + 'static,
    ) -> SendableRecordBatchStream {
        let Reader {
            scan: cell,
            spec,
            opener,
            indices,
            schema,
            limit,
        } = self;
        let read = futures::stream::once(async move {
            let tasks = tasks.await?;
            let scan = cell
                .get_or_try_init(|| async {
                    let table = opener.open(&spec.table).await?;
                    spec.build(&table)
                })
                .await?;
            Ok::<_, DataFusionError>(scan.read_tasks(tasks).map_err(crate::error::core))
        })
        .try_flatten()
        .boxed();
        let out_schema = schema.clone();
        // Stops reading once `left` rows are out: the next batch is not even decoded.
        let batches = futures::stream::unfold((read, limit), move |(mut read, left)| {
            let (schema, indices) = (schema.clone(), indices.clone());
            async move {
                if left == Some(0) {
                    return None;
                }
                let b = match read.next().await? {
                    Ok(b) => b,
                    Err(e) => return Some((Err(e), (read, Some(0)))),
                };
                let keep = left.map_or(b.num_rows(), |n| n.min(b.num_rows()));
                let out = project(&b.slice(0, keep), &indices, &schema);
                Some((out, (read, left.map(|n| n - keep))))
            }
        });
        Box::pin(RecordBatchStreamAdapter::new(out_schema, batches))
    }
}

/// The output columns of a core batch (`indices` into it), in `schema`; with no columns, the
/// row count alone.
fn project(b: &RecordBatch, indices: &[usize], schema: &SchemaRef) -> Result<RecordBatch> {
    let columns = indices.iter().map(|i| b.column(*i).clone()).collect();
    let options = RecordBatchOptions::new().with_row_count(Some(b.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &options,
    )?)
}
