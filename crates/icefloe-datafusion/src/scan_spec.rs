//! What a scan of one snapshot reads, as plain data: the table's metadata file, the snapshot,
//! the schema, the columns, lineage and the pushed filter. A scan is built from it where the
//! table is open ([`ScanSpec::build`]); another process (a cluster's scheduler or executor)
//! re-opens the table from its [`TableRef`] with its own storage configuration
//! ([`crate::TableOpener`]) and builds the same scan.

use icefloe_core::expr::Filter;
use icefloe_core::{Scan, SnapshotSelector, Table};

use crate::error::SqlError;

/// Files a partition's reader opens at once (each DataFusion partition has its own reader;
/// their number is the session's `target_partitions`, the cores by default).
pub(crate) const FILES_AT_ONCE_PER_PARTITION: usize = 2;

/// A table as another process finds it: the exact metadata file read (so that every process
/// reads the same version of the table), and the storage options that hold no credential
/// ([`icefloe_core::io::config::is_shareable_key`]: region, endpoint, reading settings).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableRef {
    /// The metadata file's location (a local path or URL).
    pub metadata_file: String,
    /// Storage options without credentials; the opening process's own options win.
    pub storage: Vec<(String, String)>,
}

/// How to build the core's scan of one snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanSpec {
    /// The table.
    pub table: TableRef,
    /// The snapshot read (`None`: the table has none).
    pub snapshot_id: Option<i64>,
    /// The schema the snapshot is read with.
    pub schema_id: i32,
    /// The table columns read, by name.
    pub columns: Vec<String>,
    /// Whether `_row_id` and `_last_updated_sequence_number` are read.
    pub lineage: bool,
    /// The filter handed to the core (rows it drops are dropped while reading).
    pub filter: Option<Filter>,
}

impl ScanSpec {
    /// The core's scan of `table` (the table [`ScanSpec::table`] names, opened).
    pub fn build(&self, table: &Table) -> Result<Scan, SqlError> {
        let mut b = Scan::builder()
            .columns(self.columns.clone())
            .lineage(self.lineage)
            .schema_id(self.schema_id)
            .concurrency(FILES_AT_ONCE_PER_PARTITION);
        if let Some(id) = self.snapshot_id {
            b = b.snapshot(SnapshotSelector::Id(id));
        }
        if let Some(f) = &self.filter {
            b = b.filter(f.clone());
        }
        Ok(b.build(table)?)
    }
}
