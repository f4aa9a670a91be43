//! [`IcefloeSession`]: a DataFusion session over Iceberg tables: tables registered by name,
//! catalogs whose namespaces are schemas (`SELECT … FROM db.events`), and the table functions
//! ([`crate::functions`]), whose tables are found before each statement is planned.

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::common::TableReference;
use datafusion::dataframe::DataFrame;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::prelude::SessionConfig;
use datafusion::sql::parser::{CopyToSource, DFParserBuilder, Statement};
use datafusion::sql::sqlparser::ast::{
    Expr as SqlExpr, FunctionArg, FunctionArgExpr, TableFactor, Value, Visit, Visitor,
};
use datafusion::sql::sqlparser::dialect::dialect_from_str;
use icefloe_core::catalog::Catalog;
use icefloe_core::{SnapshotSelector, Table};

use crate::catalog::IcefloeCatalog;
use crate::columns::ExtraColumns;
use crate::registry::TableRegistry;
use crate::table::IcefloeTable;

/// A DataFusion session that reads Iceberg tables through the core.
pub struct IcefloeSession {
    ctx: SessionContext,
    registry: Arc<TableRegistry>,
}

impl IcefloeSession {
    /// A session (DataFusion's defaults: one partition per core; `information_schema` on, so
    /// `SHOW TABLES` works) whose tables show `extra` columns.
    pub fn new(extra: ExtraColumns) -> Self {
        Self::with_config(SessionConfig::new().with_information_schema(true), extra)
    }

    /// A session with DataFusion settings `config`.
    pub fn with_config(config: SessionConfig, extra: ExtraColumns) -> Self {
        let ctx = SessionContext::new_with_config(config);
        let registry = Arc::new(TableRegistry::new(extra));
        crate::functions::register(&ctx, registry.clone());
        IcefloeSession { ctx, registry }
    }

    /// A session over `ctx`, a context whose plans run on a cluster (Ballista's
    /// `SessionContext::remote_with_state`, with [`crate::codec`]'s codecs), with the table
    /// functions registered in it; those whose rows are computed in this process (the change
    /// feed, row history) are refused with [`crate::SqlError::NotOnCluster`].
    pub fn for_cluster(ctx: SessionContext, extra: ExtraColumns) -> Self {
        let registry = Arc::new(TableRegistry::distributed(extra));
        crate::functions::register(&ctx, registry.clone());
        IcefloeSession { ctx, registry }
    }

    /// The DataFusion context (to register other tables or functions, or to change settings).
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// The extra columns this session's tables show.
    pub fn extra_columns(&self) -> ExtraColumns {
        self.registry.extra()
    }

    /// Makes `table`'s current snapshot the table `name` (a bare name, or `schema.name`) and
    /// the table functions' `'name'`. Errors: DataFusion's, for a name already taken.
    pub fn register_table(&self, name: &str, table: Table) -> Result<()> {
        let provider = IcefloeTable::at(
            table.clone(),
            &SnapshotSelector::Current,
            self.registry.extra(),
        )?;
        self.ctx.register_table(name, Arc::new(provider))?;
        self.registry.insert(name, table);
        Ok(())
    }

    /// Registers `catalog` as the DataFusion catalog `name`, and each of its namespaces as a
    /// schema of the default catalog too, so that `ns.table` needs no catalog name. Tables
    /// already registered in a schema a namespace replaces are kept in it. Errors: the
    /// catalog's, when listing it fails.
    pub async fn register_catalog(&self, name: &str, catalog: Arc<dyn Catalog>) -> Result<()> {
        let c = IcefloeCatalog::new(catalog, self.registry.extra()).await?;
        let options = self.ctx.state().config().options().clone();
        let default = self
            .ctx
            .catalog(&options.catalog.default_catalog)
            .ok_or_else(|| {
                DataFusionError::Plan(format!(
                    "no default catalog {}",
                    options.catalog.default_catalog
                ))
            })?;
        for (schema_name, schema) in c.schemas() {
            if let Some(old) = default.register_schema(schema_name, schema.clone())? {
                for t in old.table_names() {
                    if let Some(p) = old.table(&t).await? {
                        datafusion::catalog::SchemaProvider::register_table(schema.as_ref(), t, p)?;
                    }
                }
            }
        }
        self.ctx.register_catalog(name, Arc::new(c));
        Ok(())
    }

    /// Parses `query` into its statements (`;`-separated) in the session's SQL dialect.
    pub fn parse(&self, query: &str) -> Result<Vec<Statement>> {
        let options = self.ctx.state().config().options().clone();
        let dialect_name = options.sql_parser.dialect.to_string();
        let dialect = dialect_from_str(&dialect_name)
            .ok_or_else(|| DataFusionError::Plan(format!("unknown SQL dialect {dialect_name}")))?;
        Ok(DFParserBuilder::new(query)
            .with_dialect(dialect.as_ref())
            .with_recursion_limit(options.sql_parser.recursion_limit.get())
            .build()?
            .parse_statements()?
            .into_iter()
            .collect())
    }

    /// Plans and runs one statement: first the tables its table functions name are found
    /// (registered tables, or loaded from a catalog), then DataFusion plans it.
    pub async fn execute(&self, statement: Statement) -> Result<DataFrame> {
        for name in function_tables(&statement) {
            self.find(&name).await?;
        }
        let state = self.ctx.state();
        let plan = state.statement_to_plan(statement).await?;
        self.ctx.execute_logical_plan(plan).await
    }

    /// Plans and runs `query`, one statement. Errors: DataFusion's (parse, plan), the table
    /// functions' ([`crate::SqlError`]), the core's when planning reads manifests.
    pub async fn sql(&self, query: &str) -> Result<DataFrame> {
        let mut statements = self.parse(query)?;
        if statements.len() != 1 {
            return Err(DataFusionError::Plan(format!(
                "expected one SQL statement, found {}",
                statements.len()
            )));
        }
        self.execute(statements.remove(0)).await
    }

    /// Puts the table `name` (as SQL names tables: `t`, `db.t`, `cat.db.t`) in the registry
    /// for the table functions, when DataFusion finds it and it is an Iceberg table; a name
    /// that finds nothing is left to the function, whose error lists the names it knows.
    async fn find(&self, name: &str) -> Result<()> {
        let reference = TableReference::from(name);
        let provider = match self.ctx.table_provider(reference).await {
            Ok(p) => p,
            Err(DataFusionError::Plan(_)) => return Ok(()),
            Err(e) => return Err(e),
        };
        if let Some(t) = provider.downcast_ref::<IcefloeTable>() {
            self.registry.insert(name, t.table().clone());
        }
        Ok(())
    }
}

/// The first arguments (text literals) of the `icefloe_*` table functions a statement calls.
fn function_tables(statement: &Statement) -> Vec<String> {
    let mut v = FunctionTables(Vec::new());
    match statement {
        Statement::Statement(s) => {
            let _ = s.visit(&mut v);
        }
        Statement::Explain(e) => return function_tables(&e.statement),
        Statement::CopyTo(c) => {
            if let CopyToSource::Query(q) = &c.source {
                let _ = q.visit(&mut v);
            }
        }
        Statement::CreateExternalTable(_) | Statement::Reset(_) => {}
    }
    v.0
}

struct FunctionTables(Vec<String>);

impl Visitor for FunctionTables {
    type Break = ();

    fn pre_visit_table_factor(&mut self, t: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table {
            name,
            args: Some(args),
            ..
        } = t
        {
            let is_ours = name
                .0
                .last()
                .map(|p| p.to_string().to_lowercase())
                .is_some_and(|n| n.trim_matches('"').starts_with("icefloe_"));
            if let (true, Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(SqlExpr::Value(v))))) =
                (is_ours, args.args.first())
            {
                if let Value::SingleQuotedString(s) = &v.value {
                    self.0.push(s.clone());
                }
            }
        }
        ControlFlow::Continue(())
    }
}
