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
    allowed_endpoints: Vec<String>,
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
            allowed_endpoints: Vec::new(),
        }
    }

    /// This opener taking endpoints a plan names under these URL prefixes when the process
    /// sets none of its own ([`icefloe_core::io::destination::accept_plan_options`]).
    pub fn with_allowed_endpoints(mut self, prefixes: Vec<String>) -> Self {
        self.allowed_endpoints = prefixes;
        self
    }

    /// This process's options that may travel with a plan (no credential).
    pub fn shareable_options(&self) -> Vec<(String, String)> {
        self.storage.shareable_options()
    }

    /// Opens `table`: its metadata file, with the reference's shareable options under this
    /// process's own options, ambient credentials as this process allows them. A plan's
    /// endpoint is taken only as [`icefloe_core::io::destination::accept_plan_options`] says
    /// (for a table on local disk, the plan's destination options are ignored). Errors: the
    /// core's, [`icefloe_core::Error::DestinationRefused`] among them.
    pub async fn open(&self, table: &TableRef) -> Result<Table, SqlError> {
        use icefloe_core::io::destination::{accept_plan_options, is_destination_key};
        let shareable: Vec<(String, String)> = table
            .storage
            .iter()
            .filter(|(k, _)| icefloe_core::io::config::is_shareable_key(k))
            .cloned()
            .collect();
        let local = icefloe_core::io::classify(&table.metadata_file).ok()
            == Some(icefloe_core::io::LocationKind::Local);
        let from_plan = if local {
            shareable
                .into_iter()
                .filter(|(k, _)| !is_destination_key(k))
                .collect()
        } else {
            let own = |k: &str| {
                self.storage
                    .get(k)
                    .or_else(|| {
                        self.storage
                            .env
                            .iter()
                            .find(|(e, _)| e == k)
                            .map(|(_, v)| v.as_str())
                    })
                    .map(str::to_string)
            };
            accept_plan_options(
                &table.metadata_file,
                &shareable,
                &own,
                &self.allowed_endpoints,
            )?
        };
        let options = from_plan.into_iter().chain(self.storage.options.clone());
        let mut storage = StorageConfig::new(options, self.storage.ambient);
        storage.env = self.storage.env.clone();
        let opts = OpenOptions::from(storage);
        Ok(Table::open_with_options(&table.metadata_file, self.caches.clone(), &opts).await?)
    }
}
