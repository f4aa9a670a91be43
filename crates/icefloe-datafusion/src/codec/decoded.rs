//! [`DecodedTable`]: a table a logical plan named, decoded in the scheduler. Decoding is
//! synchronous and opening a table is not, so the table is opened (with the scheduler's own
//! storage configuration) when the scan is planned, then read as the client resolved it: the
//! same metadata file, snapshot, schema and extra columns.

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use tokio::sync::OnceCell;

use crate::columns::ExtraColumns;
use crate::opener::TableOpener;
use crate::scan_spec::TableRef;
use crate::table::IcefloeTable;

/// A table named by a decoded plan, opened on first scan.
pub struct DecodedTable {
    reference: TableRef,
    snapshot_id: Option<i64>,
    schema_id: i32,
    extra: ExtraColumns,
    /// The schema the client planned with (the opened table's must be the same).
    schema: SchemaRef,
    opener: Arc<TableOpener>,
    opened: OnceCell<IcefloeTable>,
}

impl fmt::Debug for DecodedTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DecodedTable")
            .field("metadata_file", &self.reference.metadata_file)
            .field("snapshot_id", &self.snapshot_id)
            .field("schema_id", &self.schema_id)
            .finish()
    }
}

impl DecodedTable {
    /// The table `reference` names, at `snapshot_id` with schema `schema_id` and `extra`
    /// columns, whose DataFusion schema is `schema`; opened by `opener`.
    pub fn new(
        reference: TableRef,
        snapshot_id: Option<i64>,
        schema_id: i32,
        extra: ExtraColumns,
        schema: SchemaRef,
        opener: Arc<TableOpener>,
    ) -> Self {
        DecodedTable {
            reference,
            snapshot_id,
            schema_id,
            extra,
            schema,
            opener,
            opened: OnceCell::new(),
        }
    }

    /// The table named.
    pub fn reference(&self) -> &TableRef {
        &self.reference
    }

    /// The snapshot, schema and extra columns the client resolved.
    pub fn resolved(&self) -> (Option<i64>, i32, ExtraColumns) {
        (self.snapshot_id, self.schema_id, self.extra)
    }

    /// The table, opened once.
    async fn open(&self) -> Result<&IcefloeTable> {
        self.opened
            .get_or_try_init(|| async {
                let table = self.opener.open(&self.reference).await?;
                let t = IcefloeTable::at_exactly(table, self.snapshot_id, self.schema_id, self.extra)?
                    .with_cluster(self.reference.storage.clone(), self.opener.clone());
                let (got, want) = (t.schema(), &self.schema);
                let same = got.fields().len() == want.fields().len()
                    && got
                        .fields()
                        .iter()
                        .zip(want.fields())
                        .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type());
                if !same {
                    return Err(DataFusionError::Plan(format!(
                        "{} read here has other columns than the client planned with: the client and this process read different builds or tables",
                        self.reference.metadata_file
                    )));
                }
                Ok(t)
            })
            .await
    }
}

#[async_trait]
impl TableProvider for DecodedTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// Before the table is open its column types are unknown here: every filter is offered as
    /// inexact (DataFusion re-checks it) and the scan hands the core only those it binds.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        match self.opened.get() {
            Some(t) => t.supports_filters_pushdown(filters),
            None => Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()]),
        }
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.open()
            .await?
            .scan(state, projection, filters, limit)
            .await
    }
}
