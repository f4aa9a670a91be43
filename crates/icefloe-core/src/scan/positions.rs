//! Reading chosen row positions of one task: the change feed reads only the rows a commit's
//! deletes newly mark, never the whole file.

use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use roaring::RoaringTreemap;

use super::plan::task::FileScanTask;
use super::read::TaskReader;
use super::Scan;

impl Scan {
    /// The live rows (by `task`'s deletes) of `task`'s data file at `positions`, in position
    /// order, in this scan's output schema.
    pub async fn read_positions(
        &self,
        task: FileScanTask,
        positions: &RoaringTreemap,
    ) -> crate::Result<Vec<RecordBatch>> {
        let mut reader = TaskReader::open_at(
            &self.table,
            task,
            None,
            Some(positions),
            Arc::clone(&self.ctx),
        )
        .await?;
        let mut out = Vec::new();
        while let Some(b) = reader.next_batch().await? {
            out.push(b);
        }
        Ok(out)
    }

    /// Every live row of `task`, in position order, in this scan's output schema.
    pub async fn read_whole(&self, task: FileScanTask) -> crate::Result<Vec<RecordBatch>> {
        let mut reader =
            TaskReader::open_at(&self.table, task, None, None, Arc::clone(&self.ctx)).await?;
        let mut out = Vec::new();
        while let Some(b) = reader.next_batch().await? {
            out.push(b);
        }
        Ok(out)
    }
}
