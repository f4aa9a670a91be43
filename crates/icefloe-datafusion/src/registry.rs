//! The tables a session's table functions can name (`icefloe_snapshot('t', …)`): DataFusion
//! calls a table function synchronously, while loading a table (from storage or a catalog) is
//! asynchronous, so the tables are found before planning ([`crate::IcefloeSession::sql`]) and
//! kept here by the name written in the function's first argument.

use std::collections::HashMap;
use std::sync::RwLock;

use crate::error::SqlError;

use icefloe_core::Table;

use crate::columns::ExtraColumns;

/// Tables by the name a query writes, and the extra columns the session shows.
#[derive(Debug, Default)]
pub struct TableRegistry {
    tables: RwLock<HashMap<String, Table>>,
    extra: ExtraColumns,
    /// The session's plans run on a cluster: functions computed in this process are refused.
    distributed: bool,
}

impl TableRegistry {
    /// An empty registry for a session showing `extra` columns.
    pub fn new(extra: ExtraColumns) -> Self {
        TableRegistry {
            tables: RwLock::default(),
            extra,
            distributed: false,
        }
    }

    /// An empty registry for a session whose plans run on a cluster.
    pub fn distributed(extra: ExtraColumns) -> Self {
        TableRegistry {
            distributed: true,
            ..TableRegistry::new(extra)
        }
    }

    /// Errors with [`SqlError::NotOnCluster`] when the session's plans run on a cluster:
    /// for `function`s whose rows are computed in this process.
    pub fn check_local(&self, function: &'static str) -> Result<(), SqlError> {
        if self.distributed {
            return Err(SqlError::NotOnCluster { function });
        }
        Ok(())
    }

    /// The extra columns every table of the session shows.
    pub fn extra(&self) -> ExtraColumns {
        self.extra
    }

    /// Makes `table` the one `name` means.
    pub fn insert(&self, name: &str, table: Table) {
        self.tables
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_string(), table);
    }

    /// The table `name` means, if it was found.
    pub fn get(&self, name: &str) -> Option<Table> {
        self.tables
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    /// The names known, sorted (for messages).
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .tables
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    }
}
