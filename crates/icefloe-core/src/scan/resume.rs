//! Reading a task from one of its batches. Each batch a task's read yields comes with a
//! restart point: the data file position of the first row the file's read gave for it. A read
//! started there yields exactly the batches the whole read yields from that one on (same rows,
//! same boundaries, the same deletes applied and the same lineage), without decoding what lies
//! before: the positions before it leave the row selection, so row groups and slices before
//! it are skipped and the first one is read from the page holding it (offset index).
//!
//! Why the boundaries agree: a batch holds the next `batch_size` selected rows of a row group
//! (or slice) whatever came before, and a restart point is the first selected row of its
//! batch; a deleted row is never selected, and equality deletes filter a batch after it is
//! read, so they remove the same rows in both reads.

use arrow::record_batch::RecordBatch;
use futures::stream::BoxStream;
use futures::StreamExt;

use super::plan::split::TaskSplit;
use super::plan::task::FileScanTask;
use super::read::TaskReader;
use super::Scan;

/// A batch of a task's live rows and where a read restarts to yield it first.
#[derive(Debug, Clone)]
pub struct PositionedBatch {
    /// The rows, as [`Scan::read_task`] yields them.
    pub batch: RecordBatch,
    /// The data file position to pass to [`Scan::read_task_from`] for this batch to come
    /// first.
    pub restart: u64,
}

impl Scan {
    /// Streams the live rows of `task` with their restart points, from the restart point
    /// `from` (0: the whole task), as the read from the start yields them there.
    pub fn read_task_from(
        &self,
        task: FileScanTask,
        from: u64,
    ) -> BoxStream<'static, crate::Result<PositionedBatch>> {
        self.read_split_from(TaskSplit { task, rows: None }, from)
    }

    /// [`Scan::read_task_from`] for a split of a task.
    pub fn read_split_from(
        &self,
        split: TaskSplit,
        from: u64,
    ) -> BoxStream<'static, crate::Result<PositionedBatch>> {
        self.read_split_placed(split, from, None)
    }

    /// [`Scan::read_split_from`], the file sharing the table's read-ahead window from `place`
    /// (`None`: from a place taken when it is opened).
    pub(crate) fn read_split_placed(
        &self,
        split: TaskSplit,
        from: u64,
        place: Option<crate::io::ahead_window::Place>,
    ) -> BoxStream<'static, crate::Result<PositionedBatch>> {
        let table = self.table.clone();
        let ctx = self.ctx.clone();
        let TaskSplit { task, rows } = split;
        let filtered = self.row_filter.clone().map(|f| {
            let io = self.table.io();
            let path = io.display(&io.resolve(&task.data_file.file_path));
            (f, path)
        });
        let opened =
            async move { TaskReader::open_placed(&table, task, rows, from, ctx, place).await };
        let batches = futures::stream::once(opened).flat_map(|opened| match opened {
            Err(e) => futures::stream::once(async { Err(e) }).boxed(),
            Ok(reader) => futures::stream::unfold(Some(reader), |state| async move {
                let mut reader = state?;
                match reader.next_positioned().await {
                    Ok(Some((restart, batch))) => {
                        Some((Ok(PositionedBatch { batch, restart }), Some(reader)))
                    }
                    Ok(None) => None,
                    Err(e) => Some((Err(e), None)),
                }
            })
            .boxed(),
        });
        match filtered {
            None => batches.boxed(),
            Some((f, path)) => batches
                .filter_map(move |b| {
                    let out = b.and_then(|b| {
                        Ok(PositionedBatch {
                            batch: f.apply(&b.batch, &path)?,
                            restart: b.restart,
                        })
                    });
                    futures::future::ready(match out {
                        Ok(b) if b.batch.num_rows() == 0 => None,
                        other => Some(other),
                    })
                })
                .boxed(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use futures::TryStreamExt;

    use super::*;
    use crate::{SnapshotSelector, Table};

    /// Every table directory below `dir` (one with `metadata/`).
    fn tables(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries.into_iter().filter(|p| p.is_dir()) {
            if p.join("metadata").is_dir() {
                out.push(p);
            } else {
                tables(&p, out);
            }
        }
    }

    /// Up to `n` batch indices out of `len`: the first, the last and some spread between.
    fn some(len: usize, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).map(|i| i * len / n).collect();
        v.push(len.saturating_sub(1));
        v.dedup();
        v.retain(|&i| i < len);
        v
    }

    /// For every task of every snapshot of every fixture table (deletion vectors, position
    /// and equality deletes, lineage materialized or not, ten row groups, Avro and ORC data
    /// files), in small batches, with and without sliced reads, and in slices of 4 KiB (many
    /// slices a row group, several batches a slice): a read from a batch's restart point is
    /// the tail of the whole read from that batch on, batch for batch.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_read_from_any_batch_is_the_tail_of_the_whole_read() {
        let mut dirs = Vec::new();
        tables(
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures")),
            &mut dirs,
        );
        assert!(dirs.len() > 10, "fixture tables: {dirs:?}");
        let (mut checked, mut deleted, mut restarts) = (0, 0, 0);
        for dir in dirs {
            let Ok(table) = Table::open(dir.to_str().unwrap()).await else {
                continue;
            };
            let small = [("read_slice_bytes".to_string(), "4096".to_string())];
            let caches = crate::cache::Caches::global();
            let Ok(small) = Table::open_with_storage(dir.to_str().unwrap(), caches, &small).await
            else {
                continue;
            };
            for s in &table.metadata().snapshots {
                for (batch_size, sliced, table) in [
                    (97, false, &table),
                    (1000, true, &table),
                    (97, true, &small),
                ] {
                    let scan = Scan::builder()
                        .snapshot(SnapshotSelector::Id(s.snapshot_id))
                        .lineage(true)
                        .batch_size(batch_size)
                        .sliced_reads(sliced)
                        .build(table)
                        .expect("scan");
                    let Ok(tasks) = scan.plan_files().await else {
                        continue;
                    };
                    for task in tasks {
                        let whole: Vec<PositionedBatch> =
                            match scan.read_task_from(task.clone(), 0).try_collect().await {
                                Ok(w) => w,
                                Err(_) => continue, // a fixture corrupt on purpose
                            };
                        // The batches are those of the plain read.
                        let plain: Vec<RecordBatch> =
                            scan.read_task(task.clone()).try_collect().await.unwrap();
                        assert!(
                            whole.iter().map(|b| &b.batch).eq(plain.iter()),
                            "{dir:?}@{}",
                            s.snapshot_id
                        );
                        let has_deletes = task.deletion_vector.is_some()
                            || !task.position_deletes.is_empty()
                            || !task.equality_deletes.is_empty();
                        deleted += usize::from(has_deletes);
                        for k in some(whole.len(), 12) {
                            let tail: Vec<PositionedBatch> = scan
                                .read_task_from(task.clone(), whole[k].restart)
                                .try_collect()
                                .await
                                .unwrap();
                            assert_eq!(tail.len(), whole.len() - k);
                            for (i, (got, want)) in tail.iter().zip(&whole[k..]).enumerate() {
                                assert!(
                                    got.batch == want.batch && got.restart == want.restart,
                                    "{dir:?}@{} {}: batch {} read from batch {k}",
                                    s.snapshot_id,
                                    task.data_file.file_path,
                                    k + i
                                );
                            }
                            restarts += 1;
                        }
                        checked += 1;
                    }
                }
            }
        }
        assert!(
            checked > 100 && deleted > 20,
            "{checked} tasks, {deleted} with deletes"
        );
        assert!(restarts > 500, "{restarts} restarts");
    }
}
