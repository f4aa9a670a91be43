//! Choosing the catalog of a location: one table, or a warehouse of them.

use std::sync::Arc;

use super::{warehouse, Catalog, TablePath, Warehouse};
use crate::cache::Caches;
use crate::OpenOptions;

/// The catalog of a location: [`TablePath`] when it is a table (a metadata file, or a
/// directory holding `metadata/` with metadata files), else a [`Warehouse`] rooted there.
/// `open` is a [`StorageConfig`](crate::io::StorageConfig) alone or every [`OpenOptions`] setting, for every table.
pub async fn open(
    location: &str,
    open: impl Into<OpenOptions>,
    caches: Arc<Caches>,
) -> crate::Result<Arc<dyn Catalog>> {
    let open = open.into();
    if warehouse::is_table_location(location, &open.storage).await? {
        Ok(Arc::new(TablePath::new(location, open, caches)))
    } else {
        Ok(Arc::new(Warehouse::new(location, open, caches)?))
    }
}
