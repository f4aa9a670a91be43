//! [`IcefloeTaskReadExec`]: a snapshot's scan whose file scan tasks are its input, one
//! in-memory partition per group of tasks (each a one-row batch: the group as
//! [`icefloe_core::scan::plan::task_json`] text), each read by the core like
//! [`crate::IcefloeScanExec`] reads its groups.
//!
//! It is the form a table decoded on a cluster scans with ([`crate::codec::DecodedTable`]): a
//! Ballista scheduler hands each task only its slice of partitions by restricting the plan's
//! leaves, which it can do for in-memory sources but not for a leaf it does not know (every
//! task would read every partition). Over in-memory tasks, a task's plan carries only its own
//! file scan tasks.

use std::fmt;
use std::sync::Arc;

use arrow::array::{Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{ColumnStatistics, Statistics};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PhysicalExpr, PlanProperties,
    ReplaceChildrenOptions, SendableRecordBatchStream, StatisticsArgs,
};
use futures::TryStreamExt;
use icefloe_core::scan::plan::task_json::{tasks_from_text, tasks_to_text};
use icefloe_core::FileScanTask;

use crate::exec::Reader;
use crate::scan_spec::ScanSpec;

/// The one column of the input's batches: a group of tasks as JSON text.
const TASKS_COLUMN: &str = "icefloe_tasks";

/// Reads the file scan tasks its input partitions hold.
pub struct IcefloeTaskReadExec {
    reader: Reader,
    input: Arc<dyn ExecutionPlan>,
    /// The pushed filter's text, for EXPLAIN.
    filter: Option<String>,
    /// Live rows of the whole scan, from metadata (exact) or an estimate.
    num_rows: Precision<usize>,
    properties: Arc<PlanProperties>,
}

impl fmt::Debug for IcefloeTaskReadExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IcefloeTaskReadExec")
            .field("table", &self.reader.spec.table.metadata_file)
            .field("snapshot", &self.reader.spec.snapshot_id)
            .finish()
    }
}

/// The schema of the input's batches.
fn tasks_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        TASKS_COLUMN,
        DataType::Utf8,
        false,
    )]))
}

impl IcefloeTaskReadExec {
    /// A read of `groups` (each an in-memory partition) by `reader`.
    pub(crate) fn over_tasks(
        reader: Reader,
        groups: &[Vec<FileScanTask>],
        filter: Option<String>,
        num_rows: Precision<usize>,
    ) -> Result<Self> {
        let schema = tasks_schema();
        let partitions = groups
            .iter()
            .map(|g| {
                let text = StringArray::from(vec![tasks_to_text(std::slice::from_ref(g))]);
                Ok(vec![RecordBatch::try_new(
                    schema.clone(),
                    vec![Arc::new(text)],
                )?])
            })
            .collect::<Result<Vec<_>>>()?;
        let input = MemorySourceConfig::try_new_exec(&partitions, schema, None)?;
        Ok(Self::new(reader, input, filter, num_rows))
    }

    pub(crate) fn new(
        reader: Reader,
        input: Arc<dyn ExecutionPlan>,
        filter: Option<String>,
        num_rows: Precision<usize>,
    ) -> Self {
        let n = input.properties().output_partitioning().partition_count();
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(reader.schema.clone()),
            Partitioning::UnknownPartitioning(n),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        IcefloeTaskReadExec {
            reader,
            input,
            filter,
            num_rows,
            properties,
        }
    }

    /// What the core's scan is built from.
    pub fn spec(&self) -> &ScanSpec {
        &self.reader.spec
    }

    /// Index in the core's batches of each output column.
    pub fn indices(&self) -> &[usize] {
        &self.reader.indices
    }

    /// The pushed `LIMIT` (per partition).
    pub fn limit(&self) -> Option<usize> {
        self.reader.limit
    }

    /// The pushed filter's text.
    pub fn filter_text(&self) -> Option<&str> {
        self.filter.as_deref()
    }

    /// The rows the scan yields, from metadata.
    pub fn num_rows(&self) -> Precision<usize> {
        self.num_rows
    }
}

impl IcefloeTaskReadExec {
    /// This read over another input (the same tasks, or a share of them).
    fn over(&self, mut children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return Err(DataFusionError::Internal(format!(
                "IcefloeTaskReadExec takes one input, not {}",
                children.len()
            )));
        }
        Ok(Arc::new(IcefloeTaskReadExec::new(
            self.reader.clone(),
            children.remove(0),
            self.filter.clone(),
            self.num_rows,
        )))
    }
}

/// The tasks of `batch`'s text column.
fn tasks_of(batch: &RecordBatch) -> Result<Vec<FileScanTask>> {
    let col = batch
        .column(0)
        .as_any()
        .downcast_ref::<StringArray>()
        .ok_or_else(|| DataFusionError::Internal(format!("{TASKS_COLUMN} is not text")))?;
    let mut out = Vec::new();
    for i in 0..col.len() {
        let groups = tasks_from_text(col.value(i)).map_err(crate::error::core)?;
        out.extend(groups.into_iter().flatten());
    }
    Ok(out)
}

impl DisplayAs for IcefloeTaskReadExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let spec = &self.reader.spec;
        write!(
            f,
            "IcefloeTaskReadExec: table={}, snapshot={}",
            spec.table.metadata_file,
            spec.snapshot_id
                .map_or("none".to_string(), |s| s.to_string()),
        )?;
        if let Some(filter) = &self.filter {
            write!(f, ", filter={filter}")?;
        }
        if let Some(limit) = self.reader.limit {
            write!(f, ", limit={limit}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for IcefloeTaskReadExec {
    fn name(&self) -> &str {
        "IcefloeTaskReadExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.over(children)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.over(children)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let tasks = async move {
            let batches: Vec<RecordBatch> = input.try_collect().await?;
            let mut tasks = Vec::new();
            for b in &batches {
                tasks.extend(tasks_of(b)?);
            }
            Ok(tasks)
        };
        Ok(self.reader.clone().read(tasks))
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        let num_rows = match args.partition() {
            None => self.num_rows,
            Some(_) => self.num_rows.to_inexact(),
        };
        Ok(Arc::new(Statistics {
            num_rows,
            total_byte_size: Precision::Absent,
            column_statistics: vec![
                ColumnStatistics::new_unknown();
                self.reader.schema.fields().len()
            ],
        }))
    }

    fn fetch(&self) -> Option<usize> {
        self.reader.limit
    }
}
