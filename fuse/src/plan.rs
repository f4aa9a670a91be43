//! A planned snapshot: the core's scan of one snapshot, its data file tasks, and the names the
//! per-file views get under `files/`.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use icefloe_core::io::readahead::ReadAheadBudget;
use icefloe_core::scan::partition_dirs::{partition_dirs, PartitionDir};
use icefloe_core::spec::Snapshot;
use icefloe_core::{FileScanTask, Scan, SnapshotSelector, Table};
use tokio::sync::OnceCell;

use crate::error::Result;
use crate::text::{Text, TextRenderer};
use crate::view::FileLayout;

/// Slices of data files read ahead at once over every reader of the mount (sizing passes,
/// rendering cursors, encodings), each about 2 MiB of compressed columns and a few decoded
/// batches: past it, a reader decodes only the slice it is at ([`ReadAheadBudget`]).
pub const READ_AHEAD_SLICES: usize = 8;

/// The mount's read-ahead budget, shared by the scans of every plan.
pub fn read_ahead_budget() -> &'static ReadAheadBudget {
    static BUDGET: OnceLock<ReadAheadBudget> = OnceLock::new();
    BUDGET.get_or_init(|| ReadAheadBudget::new(READ_AHEAD_SLICES))
}

/// One snapshot, planned once and shared by every view of it. Snapshots are immutable, so a
/// plan never changes; an open file keeps its plan even after the snapshot is expired.
pub struct SnapshotPlan {
    /// Which mounted table (index in the catalog).
    pub table_id: usize,
    /// The snapshot.
    pub snapshot: Snapshot,
    /// The table schema the snapshot is read with.
    pub schema_id: i32,
    /// The core's scan of the snapshot, with `_row_id` and `_last_updated_sequence_number`.
    pub scan: Scan,
    /// One task per live data file, in the core's order (the order of `data.csv`).
    pub tasks: Vec<FileScanTask>,
    /// The stem of each task's view under `files/` (unique within the snapshot).
    pub file_names: Vec<String>,
    /// The partition directories under `partitions/`, by the core's rule.
    pub partitions: Vec<PartitionDir>,
    /// The CSV encoding of the scan's schema.
    pub csv: TextRenderer,
    /// The JSON Lines encoding of the scan's schema.
    pub jsonl: TextRenderer,
    /// The text layout of each task (CSV, then JSON Lines), computed on first use.
    pub(crate) layouts: [Vec<OnceCell<Arc<FileLayout>>>; 2],
}

impl SnapshotPlan {
    /// The plan's task indices whose rows a view of `scope` holds.
    pub fn tasks_of(&self, scope: crate::tree::Scope) -> Vec<usize> {
        use crate::tree::Scope;
        match scope {
            Scope::All => (0..self.tasks.len()).collect(),
            Scope::File(t) => vec![t],
            Scope::Partition(p) => self.partitions[p].tasks.clone(),
        }
    }

    /// Plans `snapshot_id` of `table`, read with table schema `schema_id` (as the core's
    /// [`Table::resolve`] chose it for the directory the views are in), through the core.
    pub async fn new(
        table_id: usize,
        table: &Table,
        snapshot_id: i64,
        schema_id: i32,
    ) -> Result<SnapshotPlan> {
        let scan = Scan::builder()
            .snapshot(SnapshotSelector::Id(snapshot_id))
            .schema_id(schema_id)
            .lineage(true)
            // Many readers at once, each holding a slice of a file, not a row group, and a few
            // read ahead only while the mount's budget has room.
            .sliced_reads(true)
            .read_ahead_budget(read_ahead_budget().clone())
            .build(table)?;
        let tasks = scan.plan_files().await?;
        let snapshot = scan.snapshot().cloned().ok_or_else(|| {
            icefloe_core::Error::SnapshotNotFound(format!("snapshot {snapshot_id} not found"))
        })?;
        let file_names = view_names(tasks.iter().map(|t| t.data_file.file_path.as_str()));
        let partitions = partition_dirs(table, &tasks);
        let cells = || tasks.iter().map(|_| OnceCell::new()).collect();
        let layouts = [cells(), cells()];
        let csv = TextRenderer::new(Text::Csv, &scan.schema());
        let jsonl = TextRenderer::new(Text::Jsonl, &scan.schema());
        Ok(SnapshotPlan {
            csv,
            jsonl,
            table_id,
            snapshot,
            schema_id,
            scan,
            tasks,
            file_names,
            partitions,
            layouts,
        })
    }

    /// The renderer of `text`.
    pub fn text(&self, text: Text) -> &TextRenderer {
        match text {
            Text::Csv => &self.csv,
            Text::Jsonl => &self.jsonl,
        }
    }

    /// The task whose view stem is `name`.
    pub fn task_named(&self, name: &str) -> Option<usize> {
        self.file_names.iter().position(|n| n == name)
    }
}

/// View stems for data file paths: the file name without its extension. Every stem's first
/// file keeps it; a later file with the same stem (another partition directory, another
/// format) gets `~2`, `~3`… — the first such suffix that no file's own stem already is, so
/// that every data file has its own name.
pub fn view_names<'a>(paths: impl Iterator<Item = &'a str>) -> Vec<String> {
    let stems: Vec<&str> = paths
        .map(|p| {
            let base = p.rsplit('/').next().unwrap_or(p);
            base.rsplit_once('.')
                .map(|(s, _)| s)
                .filter(|s| !s.is_empty())
                .unwrap_or(base)
        })
        .collect();
    let mut taken: HashSet<String> = HashSet::with_capacity(stems.len());
    let mut names: Vec<Option<String>> = stems
        .iter()
        .map(|s| taken.insert(s.to_string()).then(|| s.to_string()))
        .collect();
    for (name, stem) in names.iter_mut().zip(&stems) {
        if name.is_none() {
            let unique = (2..)
                .map(|n| format!("{stem}~{n}"))
                .find(|c| !taken.contains(c))
                .expect("a free suffix");
            taken.insert(unique.clone());
            *name = Some(unique);
        }
    }
    names.into_iter().map(|n| n.expect("named")).collect()
}

/// The plan of the current snapshot of the table at `dir`, read with the current schema (for
/// the unit tests of the views).
#[cfg(test)]
pub(crate) async fn current_plan(dir: &str) -> Arc<SnapshotPlan> {
    let table = icefloe_core::Table::open(dir).await.expect("open");
    let id = table.metadata().current_snapshot_id.expect("current");
    let schema = table.metadata().current_schema().schema_id;
    Arc::new(
        SnapshotPlan::new(0, &table, id, schema)
            .await
            .expect("plan"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stems_and_unique() {
        let names = view_names(
            [
                "/w/t/data/a=1/00000-1-x.parquet",
                "/w/t/data/a=2/00000-1-x.parquet",
                "/w/t/data/b.parquet",
                "c",
            ]
            .into_iter(),
        );
        assert_eq!(names, ["00000-1-x", "00000-1-x~2", "b", "c"]);
    }

    #[test]
    fn a_suffix_never_takes_another_files_own_stem() {
        let names = view_names(
            [
                "/w/t/data/a=1/x.parquet",
                "/w/t/data/a=2/x.parquet",
                "/w/t/data/a=3/x~2.parquet",
                "/w/t/data/a=4/x.avro",
                "/w/t/data/a=5/x~3",
            ]
            .into_iter(),
        );
        assert_eq!(names, ["x", "x~4", "x~2", "x~5", "x~3"]);
        let unique: HashSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
    }
}
