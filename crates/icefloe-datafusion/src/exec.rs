//! The physical scan of an Iceberg snapshot: one DataFusion partition per group of file scan
//! tasks ([`crate::partition`]), each read by the core's scan (deletes applied, lineage and
//! defaults filled, the pushed filter applied), then put in the projection's order and cut at
//! the pushed `LIMIT`.

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
use futures::StreamExt;
use icefloe_core::{FileScanTask, Scan};

/// Reads groups of file scan tasks of one snapshot.
pub struct IcefloeScanExec {
    scan: Scan,
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
            .field("table", &self.scan.table().metadata_file())
            .field("snapshot", &self.scan.snapshot().map(|s| s.snapshot_id))
            .field("partitions", &self.partitions.len())
            .field("limit", &self.limit)
            .finish()
    }
}

impl IcefloeScanExec {
    /// A scan of `partitions` with `scan` (built for the projection), its batches' columns
    /// picked by `indices` into `schema`, at most `limit` rows.
    pub(crate) fn new(
        scan: Scan,
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
            scan,
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

    /// The core's scan these tasks are read with.
    pub fn scan(&self) -> &Scan {
        &self.scan
    }
}

impl DisplayAs for IcefloeScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let files: usize = self.partitions.iter().map(Vec::len).sum();
        write!(
            f,
            "IcefloeScanExec: table={}, snapshot={}, partitions={}, files={}",
            self.scan.table().metadata_file(),
            self.scan
                .snapshot()
                .map_or("none".to_string(), |s| s.snapshot_id.to_string()),
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
        let schema = self.schema.clone();
        let indices = self.indices.clone();
        let read = self.scan.read_tasks(tasks);
        // Stops reading once `left` rows are out: the next batch is not even decoded.
        let batches = futures::stream::unfold((read, self.limit), move |(mut read, left)| {
            let (schema, indices) = (schema.clone(), indices.clone());
            async move {
                if left == Some(0) {
                    return None;
                }
                let b = match read.next().await? {
                    Ok(b) => b,
                    Err(e) => return Some((Err(crate::error::core(e)), (read, Some(0)))),
                };
                let keep = left.map_or(b.num_rows(), |n| n.min(b.num_rows()));
                let out = project(&b.slice(0, keep), &indices, &schema);
                Some((out, (read, left.map(|n| n - keep))))
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            batches,
        )))
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
