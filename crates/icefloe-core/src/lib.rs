//! Icefloe core: reads Apache Iceberg tables (format versions 1, 2 and 3) exactly as the spec
//! defines, and streams their live rows as Arrow record batches.
//!
//! The data path, one module per step:
//! `io` (storage, metadata file resolution) → `spec` (table metadata, manifest lists, manifests)
//! → `scan::plan` (snapshot → file scan tasks) → `delete` (deletion vectors, position and
//! equality deletes) → `scan::read` (Parquet → Arrow by field id, defaults, promotion)
//! → `scan::lineage` (`_row_id`, `_last_updated_sequence_number`) → `encode` (JSON Lines, CSV,
//! Parquet).
//!
//! ```no_run
//! # async fn demo() -> icefloe_core::Result<()> {
//! use futures::TryStreamExt;
//! use icefloe_core::{Scan, SnapshotSelector, Table};
//! let table = Table::open("/data/warehouse/db/events").await?;
//! let scan = Scan::builder().snapshot(SnapshotSelector::Current).lineage(true).build(&table)?;
//! let batches: Vec<_> = scan.stream().await?.try_collect().await?;
//! # Ok(()) }
//! ```

// The API the front-ends (CLI, mount, Postgres) use.
pub mod cache;
pub mod cancel;
pub mod catalog;
pub mod encode;
pub mod expr;
pub mod guard;
pub mod history;
pub mod instant;
pub mod io;
pub mod listing;
pub mod scan;
pub mod spec;
pub mod warning;

/// Declares modules that are public only with the `internal-api` feature, which the
/// end-to-end tests, the fuzzer and the benchmarks turn on to reach into them; without it
/// they are the crate's own, and a front-end sees only the API above and the items re-exported
/// below.
macro_rules! internal_modules {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "internal-api")]
        pub mod $name;
        #[cfg(not(feature = "internal-api"))]
        mod $name;
    )*};
}
internal_modules!(delete, error, spawned, table, validate);

pub use error::{Error, Result};
pub use io::locate::MetadataSelection;
pub use scan::{FileScanTask, Scan, ScanBuilder};
pub use table::{OpenOptions, SnapshotSelector, Table};
pub use warning::{Found, Warning, Warnings};
