//! SQL over Apache Iceberg tables (format versions 1-3) with DataFusion, reading through
//! icefloe-core: every row a query sees is a row `icefloe cat` prints for the same snapshot
//! (deletion vectors, position and equality deletes, defaults, schema evolution, lineage).
//!
//! - [`IcefloeTable`]: one snapshot of a table as a DataFusion `TableProvider`: projection,
//!   filters (handed to the core's pruning, re-checked by DataFusion: see [`filter`]) and
//!   `LIMIT` pushed down; one partition per group of file scan tasks ([`partition`]); the
//!   exact row count from metadata where the core's live count gives one.
//! - [`IcefloeCatalog`]: a directory warehouse or REST catalog as a DataFusion catalog, its
//!   namespaces as schemas.
//! - [`functions`]: time travel (`icefloe_snapshot`, `icefloe_as_of`, `icefloe_ref`), the
//!   change feed (`icefloe_changes`, `icefloe_net_changes`) and row history
//!   (`icefloe_row_history`) as table functions.
//! - [`IcefloeSession`]: a session with all of it, which finds the tables the table functions
//!   name before planning.
//! - [`output`]: a result's batches made writable by the core's encoders.
//!
//! Lineage (`_row_id`, `_last_updated_sequence_number`) and metadata columns (`_file`, `_pos`,
//! `_spec_id`, `_partition`) are shown only when [`ExtraColumns`] asks for them: DataFusion
//! 55 has no hidden columns, so a column a table shows is in `SELECT *`.
//!
//! ```no_run
//! # async fn demo() -> datafusion::error::Result<()> {
//! use icefloe_datafusion::{ExtraColumns, IcefloeSession};
//! let table = icefloe_core::Table::open("/data/warehouse/db/events").await.map_err(icefloe_datafusion::SqlError::from)?;
//! let session = IcefloeSession::new(ExtraColumns { lineage: true, metadata: false });
//! session.register_table("events", table)?;
//! let df = session
//!     .sql("SELECT b._row_id, a.kind, b.kind FROM icefloe_snapshot('events', 1) a \
//!           JOIN icefloe_snapshot('events', 2) b USING (_row_id) WHERE a.kind <> b.kind")
//!     .await?;
//! let batches = df.collect().await?;
//! # Ok(()) }
//! ```

pub mod catalog;
#[cfg(feature = "cluster")]
pub mod codec;
pub mod columns;
pub mod error;
pub mod exec;
pub mod filter;
pub mod functions;
pub mod opener;
pub mod output;
pub mod partition;
pub mod registry;
pub mod scan_spec;
pub mod session;
pub mod table;
pub mod task_read;

pub use catalog::{IcefloeCatalog, IcefloeSchema};
pub use columns::ExtraColumns;
pub use error::SqlError;
pub use exec::IcefloeScanExec;
pub use opener::TableOpener;
pub use scan_spec::{ScanSpec, TableRef};
pub use session::IcefloeSession;
pub use table::IcefloeTable;
pub use task_read::IcefloeTaskReadExec;
