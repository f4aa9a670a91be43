//! Reading half of a scan: from file tasks to the live rows of a table as Arrow record
//! batches.
//!
//! In the data path (catalog → metadata → manifests → file tasks → **deletes → record
//! batches** → CSV/Parquet/tuples) this is the step from a planned task (see [`super::plan`])
//! to batches with deleted rows removed, ready for a front-end to print or hand on:
//!
//! - [`reader`]: reads one task (Parquet, Avro, ORC) with its deletes applied; the
//!   [`reader::ReadContext`] a scan shares with its readers.
//! - [`adapt`]: reshapes a data file's columns to the reading schema (schema evolution).
//! - [`filter`]: a scan's row filter applied to decoded batches.
//! - [`page_index`]: rows the Parquet page index rules out inside a row group.
//! - [`metadata_columns`]: `_file`, `_pos`, `_spec_id`, `_partition` and friends.
//! - [`lineage`]: row lineage (`_row_id`, `_last_updated_sequence_number`).
//!
//! The reads that are methods of a [`super::Scan`] ([`super::positions`], [`super::resume`],
//! [`super::sample`], [`super::preload`]) and a scan's [`super::parquet_view`] sit beside the
//! `Scan`, not here: they need both halves, and the `Scan` needs this one.

pub mod adapt;
pub mod filter;
pub mod lineage;
pub mod metadata_columns;
pub mod page_index;
pub mod reader;

// The old `scan::read` module's items, at their old paths.
pub(crate) use reader::pruned_positions;
pub use reader::{ReadContext, TaskReader, DEFAULT_BATCH_SIZE};
