//! Loading every delete file a scan needs before the first row is produced, so that a damaged
//! deletion vector or delete file fails the scan up front rather than after some rows were
//! printed. Delete files of the snapshot that apply to no planned task are checked too: each
//! must open as what its manifest entry says it is.

use std::collections::HashSet;

use futures::{StreamExt, TryStreamExt};

use super::deletes::{deleted_positions, load_equality_set};
use super::plan::planner::live_entries;
use super::plan::task::FileScanTask;
use super::Scan;
use crate::delete::position::check_position_delete_file;
use crate::io::footer_cache::open_parquet_cached;
use crate::spec::{DataContent, FileFormat};

/// How many delete files are loaded at once.
const PRELOAD_CONCURRENCY: usize = 8;

impl Scan {
    /// Loads and validates (into the table's caches) the deletion vectors, position delete
    /// files and equality delete files that `tasks` use, and checks the other live delete
    /// files of the snapshot. Meanwhile the Parquet footers of the first files a read of
    /// `tasks` opens are fetched into the footer cache, so that the first row waits for one
    /// round trip less. Errors: the first delete file that fails to load or validate (a footer
    /// that cannot be read is the read's error, later).
    pub async fn load_deletes(&self, tasks: &[FileScanTask]) -> crate::Result<()> {
        let (deletes, ()) =
            futures::join!(self.load_delete_files(tasks), self.prefetch_footers(tasks));
        deletes
    }

    /// Fetches the footers of the first files (as many as are read at once) into the table's
    /// footer cache, with the page index when the reads will want it.
    async fn prefetch_footers(&self, tasks: &[FileScanTask]) {
        let table = self.table();
        let page_index = self.ctx.wants_page_index();
        let first = tasks
            .iter()
            .filter(|t| t.data_file.file_format == FileFormat::Parquet)
            .take(self.files_in_flight)
            .map(|t| async move {
                // A failure here is met again, and reported, when the file is read.
                let _ = open_parquet_cached(
                    table.io(),
                    &table.caches().parquet_footers,
                    &t.data_file.file_path,
                    t.data_file.file_size_in_bytes,
                    page_index,
                )
                .await;
            });
        futures::future::join_all(first).await;
    }

    async fn load_delete_files(&self, tasks: &[FileScanTask]) -> crate::Result<()> {
        let table = self.table();
        let types_by_id = &self.ctx.types_by_id;
        let paths_by_id = &self.ctx.paths_by_id;
        let mut used: HashSet<&str> = HashSet::new();
        let per_task = tasks.iter().filter(|t| t.has_deletes()).map(|t| {
            for d in t
                .deletion_vector
                .iter()
                .chain(&t.position_deletes)
                .chain(&t.equality_deletes)
            {
                used.insert(d.file.file_path.as_str());
            }
            async move {
                deleted_positions(table, t).await?;
                for d in &t.equality_deletes {
                    load_equality_set(table, &d.file, types_by_id, paths_by_id).await?;
                }
                Ok::<_, crate::Error>(())
            }
        });
        let loads: Vec<_> = per_task.collect();
        futures::stream::iter(loads)
            .buffer_unordered(PRELOAD_CONCURRENCY)
            .try_collect::<Vec<()>>()
            .await?;

        let Some(snapshot) = self.snapshot() else {
            return Ok(());
        };
        let entries = live_entries(table, snapshot).await?;
        let unused: Vec<_> = entries
            .iter()
            .filter(|e| e.data_file.content != DataContent::Data)
            .filter(|e| !used.contains(e.data_file.file_path.as_str()))
            .map(|e| {
                let f = &e.data_file;
                async move {
                    match f.content {
                        DataContent::PositionDeletes if f.is_deletion_vector() => Ok(()),
                        DataContent::PositionDeletes => {
                            check_position_delete_file(table.io(), f).await
                        }
                        _ => load_equality_set(table, f, types_by_id, paths_by_id)
                            .await
                            .map(|_| ()),
                    }
                }
            })
            .collect();
        futures::stream::iter(unused)
            .buffer_unordered(PRELOAD_CONCURRENCY)
            .try_collect::<Vec<()>>()
            .await?;
        Ok(())
    }
}
