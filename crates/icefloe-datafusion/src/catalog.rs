//! A catalog of Iceberg tables (a directory warehouse, the REST catalog: the core's
//! [`Catalog`]) as a DataFusion catalog: each namespace is a schema (a nested namespace is one
//! schema named with dots, `"a.b"`), each table is loaded from the catalog whenever a statement
//! names it, so every statement reads the table's current metadata.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, MemorySchemaProvider, SchemaProvider, TableProvider};
use datafusion::datasource::TableType;
use datafusion::error::Result;
use icefloe_core::catalog::{Catalog, Namespace, TableIdent};

use crate::columns::ExtraColumns;
use crate::error::SqlError;
use crate::table::IcefloeTable;

/// An Iceberg catalog as a DataFusion catalog, its namespaces and table names listed once,
/// when it is made.
#[derive(Debug)]
pub struct IcefloeCatalog {
    schemas: BTreeMap<String, Arc<IcefloeSchema>>,
}

impl IcefloeCatalog {
    /// Lists every namespace of `catalog` (at any depth) and its tables. Its tables show
    /// `extra` columns. Errors: the catalog's, when a listing fails.
    pub async fn new(catalog: Arc<dyn Catalog>, extra: ExtraColumns) -> Result<Self, SqlError> {
        let mut schemas = BTreeMap::new();
        let mut pending = vec![Namespace::root()];
        while let Some(ns) = pending.pop() {
            let tables = catalog.list_tables(&ns).await?;
            if !ns.is_root() || !tables.is_empty() {
                schemas.insert(
                    ns.to_string(),
                    Arc::new(IcefloeSchema {
                        catalog: catalog.clone(),
                        namespace: ns.clone(),
                        names: tables.into_iter().map(|t| t.name).collect(),
                        extra,
                        registered: MemorySchemaProvider::new(),
                    }),
                );
            }
            pending.extend(catalog.list_namespaces(&ns).await?);
        }
        Ok(IcefloeCatalog { schemas })
    }

    /// The schemas (namespaces), by name.
    pub fn schemas(&self) -> impl Iterator<Item = (&String, &Arc<IcefloeSchema>)> {
        self.schemas.iter()
    }
}

impl CatalogProvider for IcefloeCatalog {
    fn schema_names(&self) -> Vec<String> {
        self.schemas.keys().cloned().collect()
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        self.schemas
            .get(name)
            .map(|s| s.clone() as Arc<dyn SchemaProvider>)
    }
}

/// One namespace of an Iceberg catalog. Tables registered into it by name (DataFusion's
/// `register_table`) are kept beside the catalog's and win over them.
#[derive(Debug)]
pub struct IcefloeSchema {
    catalog: Arc<dyn Catalog>,
    namespace: Namespace,
    /// The tables listed when the catalog was made.
    names: Vec<String>,
    extra: ExtraColumns,
    registered: MemorySchemaProvider,
}

impl IcefloeSchema {
    /// The namespace this schema is.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }
}

#[async_trait]
impl SchemaProvider for IcefloeSchema {
    fn table_names(&self) -> Vec<String> {
        let mut names = self.names.clone();
        names.extend(self.registered.table_names());
        names.sort();
        names.dedup();
        names
    }

    /// Loads the table's current metadata from the catalog (`None` when the catalog has no
    /// such table, so DataFusion says the table is not found).
    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        if let Some(t) = self.registered.table(name).await? {
            return Ok(Some(t));
        }
        let ident = TableIdent::new(self.namespace.clone(), name);
        let table = match self.catalog.load_table(&ident).await {
            Ok(t) => t,
            Err(icefloe_core::Error::NoSuchTable { .. }) => return Ok(None),
            Err(e) => return Err(crate::error::core(e)),
        };
        let t = IcefloeTable::at(table, &icefloe_core::SnapshotSelector::Current, self.extra)?;
        Ok(Some(Arc::new(t)))
    }

    /// A listed table is a base table, said without loading it (`SHOW TABLES` asks for
    /// every table's type).
    async fn table_type(&self, name: &str) -> Result<Option<TableType>> {
        if let Some(t) = self.registered.table(name).await? {
            return Ok(Some(t.table_type()));
        }
        Ok(self
            .names
            .iter()
            .any(|n| n == name)
            .then_some(TableType::Base))
    }

    fn register_table(
        &self,
        name: String,
        table: Arc<dyn TableProvider>,
    ) -> Result<Option<Arc<dyn TableProvider>>> {
        self.registered.register_table(name, table)
    }

    fn deregister_table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        self.registered.deregister_table(name)
    }

    fn table_exist(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name) || self.registered.table_exist(name)
    }
}
