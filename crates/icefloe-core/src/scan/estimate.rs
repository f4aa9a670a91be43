//! How many rows a scan will decode: the planned data files' records less the positions its
//! row-group filter rules out inside them (row group statistics and the page index). A
//! planner that knows a point lookup reads one page of a large file costs it as such, not as a
//! read of the whole file.

use futures::{StreamExt, TryStreamExt};

use super::plan::task::FileScanTask;
use super::read::pruned_positions;
use super::Scan;
use crate::io::file::FileReader;
use crate::spec::FileFormat;

/// Footers read at once while estimating.
const CONCURRENT_FOOTERS: usize = 8;

impl Scan {
    /// Rows the scan decodes from `tasks` (planned by this scan): each data file's
    /// `record_count`, less the positions the row-group filter skips inside Parquet files.
    /// Footers are read (page index included) only with a row-group filter and at most
    /// `max_files` tasks, and kept in the table's footer cache for the read that follows;
    /// otherwise, and for Avro and ORC files, the whole `record_count` counts. Deleted
    /// positions are not subtracted: their pages are decoded too. Errors: a footer that cannot
    /// be read (missing or corrupt data file).
    pub async fn rows_to_decode(
        &self,
        tasks: &[FileScanTask],
        max_files: usize,
    ) -> crate::Result<u64> {
        let records = |t: &FileScanTask| t.data_file.record_count.max(0) as u64;
        let Some(filter) = &self.ctx.row_group_filter else {
            return Ok(tasks.iter().map(records).sum());
        };
        if tasks.len() > max_files {
            return Ok(tasks.iter().map(records).sum());
        }
        let table = &self.table;
        let mapping = self.ctx.name_mapping.as_ref().map(|m| m.fields.as_slice());
        futures::stream::iter(tasks)
            .map(|task| async move {
                if task.data_file.file_format != FileFormat::Parquet {
                    return Ok(records(task));
                }
                let file = FileReader::open_cached(
                    table.io(),
                    &table.caches().parquet_footers,
                    &task.data_file,
                    self.ctx.batch_size,
                    true,
                )
                .await?;
                let Some(meta) = file.parquet_metadata() else {
                    return Ok(records(task));
                };
                let skipped: u64 = pruned_positions(filter, meta, file.schema().fields(), mapping)
                    .iter()
                    .map(|(_, len)| len)
                    .sum();
                Ok(file.num_rows().saturating_sub(skipped))
            })
            .buffer_unordered(CONCURRENT_FOOTERS)
            .try_fold(0u64, |sum, n| async move { Ok(sum + n) })
            .await
    }
}
