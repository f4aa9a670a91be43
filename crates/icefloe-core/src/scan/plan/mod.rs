//! Planning half of a scan: from a snapshot's manifests to the file tasks a reader works
//! through, without reading a data file's rows.
//!
//! In the data path (catalog → metadata → manifests → **file tasks** → deletes → record
//! batches → CSV/Parquet/tuples) this is the step from manifests to file tasks, with what a
//! planner needs to cost them:
//!
//! - [`task`]: a [`task::FileScanTask`], one data file with the delete files that apply to it.
//! - [`planner`]: loads manifests and plans the live data files of a snapshot (streamed,
//!   batched, with [`planner::PlanStats`]).
//! - [`in_flight`]: manifests fetched and decoded ahead of the planner as streams of entries,
//!   under a budget of bytes in flight.
//! - [`prune`]: drops manifests, data files and row groups that a predicate rules out.
//! - [`split`]: a task cut into row-group ranges for parallel readers.
//! - [`live_count`]: live rows of a snapshot from the plan alone, where it can be known.
//! - [`estimate_rows`]: live rows of a snapshot estimated from its summary, before planning.
//! - [`partition_dirs`]: Hive-style partition directories grouped from the plan.
//! - [`column_stats`]: per-column statistics from manifest metrics, for ANALYZE.
//!
//! The reading half, [`super::read`], turns these tasks into record batches. How many rows a
//! scan will decode ([`super::estimate`]) is a method of the [`super::Scan`], so it sits beside
//! it: it needs both halves.

pub mod column_stats;
pub mod estimate_rows;
pub mod in_flight;
pub mod live_count;
mod manifest_load;
pub mod partition_dirs;
pub mod planner;
pub mod prune;
pub mod split;
pub mod task;
pub mod task_json;

// The old `scan::plan` module's items, at their old paths.
pub use planner::{
    live_entries, load_manifest, partition_field_type, partition_types, plan_batches, plan_files,
    plan_files_pruned, plan_stream, plan_with_stats, PlanStats, PlannedBatch,
};
pub use task::{DeleteFileRef, FileScanTask};
