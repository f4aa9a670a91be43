//! [`TableOpener`]: how a process of a cluster (scheduler, executor) opens the tables plans
//! name ([`TableRef`]) with its own storage configuration: its environment's `AWS_*`,
//! `AZURE_*`, `GOOGLE_*` variables and `--storage-option`s, never credentials from the plan.

use std::sync::Arc;

use icefloe_core::cache::Caches;
use icefloe_core::io::StorageConfig;
use icefloe_core::{OpenOptions, Table};

use crate::error::SqlError;
use crate::scan_spec::TableRef;

/// Opens tables by reference with this process's storage configuration.
#[derive(Debug, Clone)]
pub struct TableOpener {
    storage: StorageConfig,
    caches: Arc<Caches>,
}

impl Default for TableOpener {
    /// Local files only, nothing shared ([`StorageConfig::none`]).
    fn default() -> Self {
        TableOpener::new(StorageConfig::none())
    }
}

impl TableOpener {
    /// An opener with `storage` (the process's own), the process-wide caches.
    pub fn new(storage: StorageConfig) -> Self {
        TableOpener {
            storage,
            caches: Caches::global(),
        }
    }

    /// This process's options that may travel with a plan (no credential).
    pub fn shareable_options(&self) -> Vec<(String, String)> {
        self.storage.shareable_options()
    }

    /// Opens `table`: its metadata file, with the reference's shareable options under this
    /// process's own options, ambient credentials as this process allows them.
    pub async fn open(&self, table: &TableRef) -> Result<Table, SqlError> {
        let options = table
            .storage
            .iter()
            .filter(|(k, _)| icefloe_core::io::config::is_shareable_key(k))
            .chain(&self.storage.options)
            .cloned();
        let mut storage = StorageConfig::new(options, self.storage.ambient);
        storage.env = self.storage.env.clone();
        let opts = OpenOptions::from(storage);
        Ok(Table::open_with_options(&table.metadata_file, self.caches.clone(), &opts).await?)
    }
}
