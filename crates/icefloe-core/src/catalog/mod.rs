//! Catalogs: where tables are found by name. One abstraction for every front-end (the CLI,
//! the mount, the Postgres wrapper): list namespaces (nested ones too), list the tables of a
//! namespace, load a table. Implementations: one table by its path or URL ([`TablePath`]), a
//! Hadoop-layout warehouse on any store ([`Warehouse`]), the Iceberg REST catalog (`rest`).
//!
//! Storage configuration comes in from the caller ([`StorageConfig`](crate::io::StorageConfig)); no catalog reads the
//! process environment.

pub mod ident;
mod open;
pub mod path;
pub mod rest;
pub mod warehouse;

use async_trait::async_trait;

use crate::Table;

pub use ident::{Namespace, TableIdent};
pub use open::open;
pub use path::TablePath;
pub use warehouse::Warehouse;

/// A catalog of tables. Errors are [`crate::Error::NoSuchTable`],
/// [`crate::Error::NoSuchNamespace`] and [`crate::Error::Catalog`], each naming the catalog,
/// or the storage and metadata errors of the table being loaded.
#[async_trait]
pub trait Catalog: Send + Sync + std::fmt::Debug {
    /// How messages name this catalog (its location, URI or configured name).
    fn name(&self) -> &str;

    /// The namespaces directly inside `parent` ([`Namespace::root`] for the top level),
    /// sorted.
    async fn list_namespaces(&self, parent: &Namespace) -> crate::Result<Vec<Namespace>>;

    /// The tables directly inside `namespace`, sorted by name.
    async fn list_tables(&self, namespace: &Namespace) -> crate::Result<Vec<TableIdent>>;

    /// Loads a table's current metadata.
    async fn load_table(&self, table: &TableIdent) -> crate::Result<Table>;

    /// `Some` when this catalog is one table opened by its path: front-ends show it at their
    /// root instead of under `<namespace>/<table>`.
    fn single_table(&self) -> Option<TableIdent> {
        None
    }
}

/// Every table of a catalog, in every namespace at any depth, sorted by path.
pub async fn all_tables(catalog: &dyn Catalog) -> crate::Result<Vec<TableIdent>> {
    let mut found = Vec::new();
    let mut pending = vec![Namespace::root()];
    while let Some(ns) = pending.pop() {
        found.extend(catalog.list_tables(&ns).await?);
        pending.extend(catalog.list_namespaces(&ns).await?);
    }
    found.sort_by_key(|t| t.path());
    Ok(found)
}
