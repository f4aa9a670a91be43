//! A catalog of one table, named by the path or URL of its root directory or of one of its
//! metadata files. Its table sits in the root namespace, named after the last path segment.

use std::sync::Arc;

use async_trait::async_trait;

use super::{Catalog, Namespace, TableIdent};
use crate::cache::Caches;
#[cfg(doc)]
use crate::io::StorageConfig;
use crate::{OpenOptions, Table};

/// One table by location.
#[derive(Debug, Clone)]
pub struct TablePath {
    location: String,
    open: OpenOptions,
    caches: Arc<Caches>,
}

impl TablePath {
    /// The table at `location`, opened with `open` (a [`StorageConfig`] alone, or every
    /// [`OpenOptions`] setting); nothing is read until it is loaded.
    pub fn new(location: &str, open: impl Into<OpenOptions>, caches: Arc<Caches>) -> TablePath {
        TablePath {
            location: location.to_string(),
            open: open.into(),
            caches,
        }
    }

    /// The table's location as given.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The identifier of the one table: the root namespace and the last path segment.
    pub fn ident(&self) -> TableIdent {
        let trimmed = self.location.trim_end_matches('/');
        let name = trimmed.rsplit('/').next().unwrap_or(trimmed);
        TableIdent::new(Namespace::root(), name)
    }

    /// Loads the table (its current metadata).
    pub async fn load(&self) -> crate::Result<Table> {
        Table::open_with_options(&self.location, self.caches.clone(), &self.open).await
    }
}

#[async_trait]
impl Catalog for TablePath {
    fn name(&self) -> &str {
        &self.location
    }

    async fn list_namespaces(&self, _parent: &Namespace) -> crate::Result<Vec<Namespace>> {
        Ok(Vec::new())
    }

    async fn list_tables(&self, namespace: &Namespace) -> crate::Result<Vec<TableIdent>> {
        Ok(if namespace.is_root() {
            vec![self.ident()]
        } else {
            Vec::new()
        })
    }

    async fn load_table(&self, table: &TableIdent) -> crate::Result<Table> {
        if *table != self.ident() {
            return Err(crate::Error::NoSuchTable {
                catalog: self.location.clone(),
                table: table.to_string(),
                reason: format!("this location holds the one table {}", self.ident()),
            });
        }
        self.load().await
    }

    fn single_table(&self) -> Option<TableIdent> {
        Some(self.ident())
    }
}
