//! A table whose rows the core computes as a whole when the query runs (the change feed, row
//! history), with a schema known when the query is planned.

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::TableType;
use datafusion::error::Result;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use futures::future::BoxFuture;

/// Computes the batches.
pub type Compute =
    Arc<dyn Fn() -> BoxFuture<'static, icefloe_core::Result<Vec<RecordBatch>>> + Send + Sync>;

/// Rows computed by the core when scanned.
#[derive(Clone)]
pub struct ComputedTable {
    what: String,
    schema: SchemaRef,
    compute: Compute,
}

impl fmt::Debug for ComputedTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ComputedTable")
            .field("what", &self.what)
            .finish()
    }
}

impl ComputedTable {
    /// `what` (for messages) with rows of `schema` that `compute` gives.
    pub fn new(what: String, schema: SchemaRef, compute: Compute) -> Self {
        ComputedTable {
            what,
            schema,
            compute,
        }
    }
}

impl ComputedTable {
    /// What the rows are (`icefloe_changes('t')`), for messages.
    pub fn what(&self) -> &str {
        &self.what
    }
}

#[async_trait]
impl TableProvider for ComputedTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let batches = (self.compute)().await.map_err(crate::error::core)?;
        // The core's batches carry the schema it made; the announced one is the same shape.
        let batches = batches
            .into_iter()
            .map(|b| RecordBatch::try_new(self.schema.clone(), b.columns().to_vec()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MemorySourceConfig::try_new_exec(
            &[batches],
            self.schema.clone(),
            projection.cloned(),
        )?)
    }
}
