//! Icefloe core: reads Apache Iceberg tables (format versions 1, 2 and 3) exactly as the spec
//! defines, and streams their live rows as Arrow record batches.
//!
//! The data path, one module per step:
//! `io` (storage, metadata file resolution) → `spec` (table metadata, manifest lists, manifests)
//! → `scan::plan` (snapshot → file scan tasks) → `delete` (deletion vectors, position and
//! equality deletes) → `scan::read` (Parquet → Arrow by field id, defaults, promotion)
//! → `scan::lineage` (`_row_id`, `_last_updated_sequence_number`) → `encode` (JSON Lines, CSV,
//! Parquet).

pub mod delete;
pub mod encode;
pub mod error;
pub mod puffin;

pub use error::{Error, Result};
