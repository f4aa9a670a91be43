//! [`IcefloeTable`]: one snapshot of an Iceberg table as a DataFusion table, giving exactly
//! the rows `icefloe cat` gives for that snapshot (the core's scan: deletion vectors, position
//! and equality deletes, defaults, schema evolution, lineage).

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::{DataType, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::Statistics;
use datafusion::datasource::TableType;
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use icefloe_core::scan::estimate_rows::live_rows_from_summary;
use icefloe_core::scan::live_count::live_rows_from_metadata;
use icefloe_core::spec::Schema;
use icefloe_core::{SnapshotSelector, Table};

use crate::columns::{ExtraColumns, Source, TableColumns};
use crate::error::SqlError;
use crate::exec::IcefloeScanExec;
use crate::filter;
use crate::opener::TableOpener;
use crate::partition::group_tasks;
use crate::scan_spec::{ScanSpec, TableRef};

/// One snapshot of a table, with the schema it reads with ([`Table::resolve`]: the current
/// snapshot and branch heads read with the table's current schema, a snapshot id, a time or a
/// tag with that snapshot's own schema).
#[derive(Clone)]
pub struct IcefloeTable {
    table: Table,
    /// The snapshot read; `None` for a table without snapshots (no rows).
    snapshot_id: Option<i64>,
    schema: Schema,
    columns: TableColumns,
    extra: ExtraColumns,
    /// Storage options without credentials that travel with this table's plans.
    shared_storage: Vec<(String, String)>,
    /// How a scan decoded in another process opens the table (unused here).
    opener: Arc<TableOpener>,
    /// Scans as [`crate::IcefloeTaskReadExec`] (a table decoded on a cluster's scheduler).
    distributed: bool,
}

impl fmt::Debug for IcefloeTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IcefloeTable")
            .field("metadata_file", &self.table.metadata_file())
            .field("snapshot_id", &self.snapshot_id)
            .field("schema_id", &self.schema.schema_id)
            .finish()
    }
}

impl IcefloeTable {
    /// The current snapshot of `main`, with the table's columns only.
    pub fn new(table: Table) -> Result<Self, SqlError> {
        Self::at(table, &SnapshotSelector::Current, ExtraColumns::default())
    }

    /// The snapshot `selector` picks (spec: "Snapshot References" for branches and tags), with
    /// `extra` columns. Errors: [`icefloe_core::Error::SnapshotNotFound`] when the selector
    /// names no snapshot.
    pub fn at(
        table: Table,
        selector: &SnapshotSelector,
        extra: ExtraColumns,
    ) -> Result<Self, SqlError> {
        let (snapshot, schema) = table.resolve(selector)?;
        let snapshot_id = snapshot.map(|s| s.snapshot_id);
        let schema = schema.clone();
        Ok(Self::with_schema(table, snapshot_id, schema, extra))
    }

    /// Snapshot `snapshot_id` read with schema `schema_id` exactly (what another process
    /// decodes: the snapshot and schema the planning process resolved). Errors:
    /// [`icefloe_core::Error::SnapshotNotFound`] or [`icefloe_core::Error::InvalidArgument`]
    /// when the table has no such snapshot or schema.
    pub fn at_exactly(
        table: Table,
        snapshot_id: Option<i64>,
        schema_id: i32,
        extra: ExtraColumns,
    ) -> Result<Self, SqlError> {
        if let Some(id) = snapshot_id {
            table.select(&SnapshotSelector::Id(id))?;
        }
        let schema = table.metadata().schema(schema_id).cloned().ok_or_else(|| {
            icefloe_core::Error::InvalidArgument(format!(
                "{} has no schema {schema_id}",
                table.metadata_file()
            ))
        })?;
        Ok(Self::with_schema(table, snapshot_id, schema, extra))
    }

    fn with_schema(
        table: Table,
        snapshot_id: Option<i64>,
        schema: Schema,
        extra: ExtraColumns,
    ) -> Self {
        let columns = TableColumns::new(table.metadata(), &schema, extra);
        IcefloeTable {
            table,
            snapshot_id,
            schema,
            columns,
            extra,
            shared_storage: Vec::new(),
            opener: Arc::new(TableOpener::default()),
            distributed: false,
        }
    }

    /// This table as a cluster's scheduler plans it: its scans are
    /// [`crate::IcefloeTaskReadExec`]s, with storage options that hold no credential (others
    /// are dropped) to send with their plans, and the opener their decoded copies use.
    pub fn with_cluster(
        mut self,
        shared_storage: Vec<(String, String)>,
        opener: Arc<TableOpener>,
    ) -> Self {
        self.shared_storage = shared_storage
            .into_iter()
            .filter(|(k, _)| icefloe_core::io::config::is_shareable_key(k))
            .collect();
        self.opener = opener;
        self.distributed = true;
        self
    }

    /// How another process finds this table: its metadata file and shareable storage options.
    pub fn table_ref(&self) -> TableRef {
        TableRef {
            metadata_file: self.table.metadata_file().to_string(),
            storage: self.shared_storage.clone(),
        }
    }

    /// The schema the snapshot is read with.
    pub fn schema_id(&self) -> i32 {
        self.schema.schema_id
    }

    /// The extra columns shown.
    pub fn extra_columns(&self) -> ExtraColumns {
        self.extra
    }

    /// The table read.
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// The snapshot read (`None`: the table has none).
    pub fn snapshot_id(&self) -> Option<i64> {
        self.snapshot_id
    }

    /// The Arrow type of a column the core's filter can name: a table column or a lineage
    /// column this table shows.
    fn filter_column_type(&self, name: &str) -> Option<DataType> {
        let i = self.columns.schema.index_of(name).ok()?;
        match &self.columns.sources[i] {
            Source::Lineage(_) => Some(DataType::Int64),
            Source::Named(n) if self.schema.column(n).is_some() => {
                Some(self.columns.schema.field(i).data_type().clone())
            }
            Source::Named(_) => None,
        }
    }
}

#[async_trait]
impl TableProvider for IcefloeTable {
    fn schema(&self) -> SchemaRef {
        self.columns.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        let types = |n: &str| self.filter_column_type(n);
        Ok(filters
            .iter()
            .map(|f| filter::pushdown(f, &types, &self.schema))
            .collect())
    }

    /// Live rows estimated from the snapshot's summary (spec: "Snapshots", `total-records`
    /// less the delete counts), before any manifest is read.
    fn statistics(&self) -> Option<Statistics> {
        let snapshot = match self.snapshot_id {
            None => {
                return Some(
                    Statistics::new_unknown(&self.columns.schema)
                        .with_num_rows(Precision::Exact(0)),
                )
            }
            Some(id) => self.table.metadata().snapshot(id)?,
        };
        let rows = live_rows_from_summary(snapshot)?;
        Some(
            Statistics::new_unknown(&self.columns.schema)
                .with_num_rows(Precision::Inexact(usize::try_from(rows).ok()?)),
        )
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let projection = projection.map(Vec::as_slice);
        let cols = self.columns.scan_columns(projection);
        let types = |n: &str| self.filter_column_type(n);
        // Only filters the core binds (a decoded table is asked for every filter before it
        // knows its types: see crate::codec).
        let parts: Vec<_> = filters
            .iter()
            .filter(|f| {
                filter::pushdown(f, &types, &self.schema) == TableProviderFilterPushDown::Inexact
            })
            .filter_map(|f| filter::to_core(f, &types).map(|c| (f, c)))
            .collect();
        let core_filter = (!parts.is_empty()).then(|| filter::filter(parts));
        let filter_text = core_filter.as_ref().map(|f| f.text.clone());
        let spec = ScanSpec {
            table: self.table_ref(),
            snapshot_id: self.snapshot_id,
            schema_id: self.schema.schema_id,
            columns: cols.names,
            lineage: cols.lineage,
            filter: core_filter,
        };
        let scan = spec.build(&self.table)?;
        let tasks = scan.plan_files().await.map_err(crate::error::core)?;
        let num_rows = row_count(&tasks, filter_text.is_some(), limit);
        let partitions = group_tasks(tasks, state.config().target_partitions());
        let exec = IcefloeScanExec::new(
            spec,
            Some(scan),
            self.opener.clone(),
            partitions,
            cols.indices,
            self.columns.projected(projection),
            limit,
            filter_text,
            num_rows,
        );
        if self.distributed {
            return Ok(Arc::new(exec.into_task_read()?));
        }
        Ok(Arc::new(exec))
    }
}

/// The rows a scan of `tasks` yields: exact from metadata where the core's live count gives
/// one and no filter drops rows, else at most the tasks' live rows. With a `limit` each
/// partition stops at `limit` rows, so the count is only an estimate.
fn row_count(
    tasks: &[icefloe_core::FileScanTask],
    filtered: bool,
    limit: Option<usize>,
) -> Precision<usize> {
    let exact = (!filtered)
        .then(|| live_rows_from_metadata(tasks))
        .flatten()
        .and_then(|n| usize::try_from(n).ok());
    let rows = match exact {
        Some(n) => Precision::Exact(n),
        None => {
            let most: u64 = tasks.iter().map(|t| t.max_live_rows()).sum();
            match usize::try_from(most) {
                Ok(n) => Precision::Inexact(n),
                Err(_) => Precision::Absent,
            }
        }
    };
    match (rows, limit) {
        (Precision::Exact(n) | Precision::Inexact(n), Some(l)) => Precision::Inexact(n.min(l)),
        (Precision::Absent, Some(l)) => Precision::Inexact(l),
        (rows, None) => rows,
    }
}
