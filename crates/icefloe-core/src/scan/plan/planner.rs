//! Scan planning (spec: "Scan Planning"): a snapshot's manifests → one task per live data
//! file, with the delete files that apply to it by the spec's sequence-number and partition
//! rules.

use std::sync::Arc;

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};

pub use super::in_flight::Metrics;
use super::in_flight::{Chunk, InFlight, Judged, Manifests};
pub use super::manifest_load::{load_manifest, partition_field_type, partition_types};
use super::prune::Pruner;
use crate::delete::index::DeleteIndex;
use crate::spec::ManifestContent;
use crate::spec::{FileFormat, ManifestEntry, ManifestFile, Snapshot};
use crate::table::Table;
use crate::validate::live_files::LiveFiles;
use crate::validate::manifest::check_list_totals;
// Re-exported: front-ends name the tasks by their old path.
pub use super::task::{DeleteFileRef, FileScanTask};

/// Whether planning should keep the manifests it reads in the cache: not when they would not
/// fit (by the counts the manifest list records), as a pass over more manifests than the cache
/// holds would only evict each before the next plan could use it.
fn worth_caching(table: &Table, manifests: &[ManifestFile]) -> bool {
    let entries: i64 = manifests
        .iter()
        .map(|mf| {
            let n = [
                mf.added_files_count,
                mf.existing_files_count,
                mf.deleted_files_count,
            ];
            n.iter().map(|c| c.unwrap_or(0).max(0)).sum::<i64>() + 1
        })
        .fold(0i64, i64::saturating_add);
    let weight = (entries as u64).saturating_mul(crate::cache::MANIFEST_ENTRY_WEIGHT);
    table
        .caches()
        .manifests
        .policy()
        .max_capacity()
        .is_none_or(|cap| weight <= cap)
}

/// The live data files the manifest list records for `manifests` (a hint to size the
/// whole-snapshot checks; 0 when not recorded).
fn live_files_hint(manifests: &[ManifestFile]) -> usize {
    manifests
        .iter()
        .map(|mf| {
            mf.added_files_count.unwrap_or(0).max(0) + mf.existing_files_count.unwrap_or(0).max(0)
        })
        .fold(0i64, i64::saturating_add) as usize
}

/// All live (added or existing) entries of a snapshot: data files and delete files.
pub async fn live_entries(table: &Table, snapshot: &Snapshot) -> crate::Result<Vec<ManifestEntry>> {
    let list = table.manifest_list(snapshot).await?;
    let all: Vec<&ManifestFile> = list.iter().collect();
    entries_of(table, &all).await
}

/// The live entries of some manifests of a snapshot, in order, read under the byte budget of
/// manifests in flight ([`in_flight`](super::in_flight)).
async fn entries_of(table: &Table, list: &[&ManifestFile]) -> crate::Result<Vec<ManifestEntry>> {
    let list: Vec<ManifestFile> = list.iter().map(|mf| (*mf).clone()).collect();
    let keep = worth_caching(table, &list);
    let mut manifests = Manifests::start(table, list, None, None, keep, Metrics::Keep);
    let mut out = Vec::new();
    while let Some(mut m) = manifests.next().await {
        while let Some(chunk) = m.chunks.recv().await {
            crate::cancel::check(|| "planning: reading manifests".into())?;
            out.extend(chunk?.judged.into_iter().filter_map(|j| match j {
                Judged::Entry { entry, .. } => Some(entry),
                // Without a pruner every entry is admitted.
                Judged::RuledOut(_) => None,
            }));
        }
    }
    Ok(out)
}

/// Plans a snapshot: one task per live data file, in manifest order, each with its deletes.
/// Errors: unreadable manifests, or a data file entry naming a Puffin file.
pub async fn plan_files(table: &Table, snapshot: &Snapshot) -> crate::Result<Vec<FileScanTask>> {
    plan_files_pruned(table, snapshot, None).await
}

/// What pruning skipped while planning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlanStats {
    /// Manifests read.
    pub manifests_read: usize,
    /// Data manifests skipped by their partition summaries (never opened).
    pub manifests_skipped: usize,
    /// Live data files of the manifests read that their partition values or column metrics
    /// ruled out.
    pub files_skipped: usize,
}

impl PlanStats {
    fn add(&mut self, o: PlanStats) {
        self.manifests_read += o.manifests_read;
        self.manifests_skipped += o.manifests_skipped;
        self.files_skipped += o.files_skipped;
    }
}

/// Like [`plan_files`], keeping only what `pruner` admits: data manifests are skipped by the
/// manifest list's partition summaries, data files by their partition values and metrics.
/// Delete manifests are always read (a delete applies across the data files it may match).
pub async fn plan_files_pruned(
    table: &Table,
    snapshot: &Snapshot,
    pruner: Option<&Pruner>,
) -> crate::Result<Vec<FileScanTask>> {
    plan_with_stats(table, snapshot, pruner)
        .await
        .map(|(t, _)| t)
}

/// [`plan_files_pruned`] with counts of what was skipped.
pub async fn plan_with_stats(
    table: &Table,
    snapshot: &Snapshot,
    pruner: Option<&Pruner>,
) -> crate::Result<(Vec<FileScanTask>, PlanStats)> {
    let mut batches = plan_batches(table, snapshot, pruner);
    let mut tasks = Vec::new();
    let mut stats = PlanStats::default();
    while let Some(b) = batches.next().await {
        let b = b?;
        stats.add(b.stats);
        tasks.extend(b.tasks);
    }
    Ok((tasks, stats))
}

/// The tasks of [`plan_files_pruned`] as a stream, planned entry by entry: at most
/// [`MANIFEST_BYTES_IN_FLIGHT`](super::in_flight::MANIFEST_BYTES_IN_FLIGHT) bytes of
/// manifests are decoded at once, each as a stream of entries, and an entry is kept only as
/// the task it becomes (one pruning rules out is let go as it is decoded), so memory stays
/// bounded whatever the snapshot's or its manifests' size (the whole-snapshot checks keep a
/// fingerprint per data file, see `validate::live_files`).
///
/// Errors come in the stream, in manifest order; the checks that need every file (a
/// deletion vector naming no live data file, the snapshot summary's totals) come last, after
/// every task: a consumer must read the stream to its end before trusting what it read.
pub fn plan_stream(
    table: &Table,
    snapshot: &Snapshot,
    pruner: Option<&Pruner>,
) -> BoxStream<'static, crate::Result<FileScanTask>> {
    plan_stream_with(table, snapshot, pruner, Metrics::Keep)
}

/// [`plan_stream`], with or without the tasks' column metrics.
pub fn plan_stream_with(
    table: &Table,
    snapshot: &Snapshot,
    pruner: Option<&Pruner>,
    metrics: Metrics,
) -> BoxStream<'static, crate::Result<FileScanTask>> {
    plan_batches_with(table, snapshot, pruner, metrics)
        .map_ok(|b| futures::stream::iter(b.tasks.into_iter().map(Ok)))
        .try_flatten()
        .boxed()
}

/// The tasks planned from a chunk of one manifest's entries, and what pruning skipped to get
/// them.
pub struct PlannedBatch {
    pub tasks: Vec<FileScanTask>,
    /// Counts to add up over the stream.
    pub stats: PlanStats,
}

/// [`plan_stream`] a chunk of entries at a time: the first batch (no tasks) counts the
/// manifests read and skipped, then one batch per chunk of a data manifest's live entries
/// (in manifest list order, then entry order).
pub fn plan_batches(
    table: &Table,
    snapshot: &Snapshot,
    pruner: Option<&Pruner>,
) -> BoxStream<'static, crate::Result<PlannedBatch>> {
    plan_batches_with(table, snapshot, pruner, Metrics::Keep)
}

/// [`plan_batches`], with or without the tasks' column metrics.
pub fn plan_batches_with(
    table: &Table,
    snapshot: &Snapshot,
    pruner: Option<&Pruner>,
    metrics: Metrics,
) -> BoxStream<'static, crate::Result<PlannedBatch>> {
    let (table, snapshot, pruner) = (table.clone(), snapshot.clone(), pruner.cloned());
    futures::stream::once(Planner::start(table, snapshot, pruner, metrics))
        .map(|started| match started {
            Err(e) => futures::stream::once(async { Err(e) }).boxed(),
            Ok((planner, stats)) => {
                let first = PlannedBatch {
                    tasks: Vec::new(),
                    stats,
                };
                futures::stream::once(async { Ok(first) })
                    .chain(futures::stream::unfold(planner, Planner::next_batch))
                    .boxed()
            }
        })
        .flatten()
        .boxed()
}

/// The state of a streaming plan once the delete manifests are read.
struct Planner {
    table: Table,
    snapshot: Snapshot,
    index: DeleteIndex,
    /// Taken when the data manifests are done (or one failed).
    check: Option<LiveFiles>,
    manifests: Manifests,
    /// The data manifest whose entries are being planned.
    current: Option<InFlight>,
}

impl Planner {
    /// Reads the manifest list, skips the data manifests `pruner` rules out, and reads every
    /// delete manifest (all deletes must be known before any data file's task is).
    async fn start(
        table: Table,
        snapshot: Snapshot,
        pruner: Option<Pruner>,
        metrics: Metrics,
    ) -> crate::Result<(Planner, PlanStats)> {
        let list = table.manifest_list(&snapshot).await?;
        let mut stats = PlanStats::default();
        let (mut data, mut deletes) = (Vec::new(), Vec::new());
        for mf in list.iter() {
            if mf.content == ManifestContent::Deletes {
                deletes.push(mf);
                continue;
            }
            let skip = match (
                &pruner,
                table.metadata().partition_spec(mf.partition_spec_id),
            ) {
                (Some(p), Some(spec)) => !p.may_match_manifest(
                    mf.partition_spec_id,
                    &mf.partitions,
                    &partition_types(&table, spec),
                ),
                _ => false,
            };
            if skip {
                stats.manifests_skipped += 1;
            } else {
                data.push(mf.clone());
            }
        }
        stats.manifests_read = data.len() + deletes.len();
        tracing::debug!(
            manifests_read = stats.manifests_read,
            manifests_skipped = stats.manifests_skipped,
            "planning snapshot {}",
            snapshot.snapshot_id
        );
        let list_path = snapshot
            .manifest_list
            .as_deref()
            .unwrap_or("the snapshot's manifests");
        let shown = table.io().display(&table.io().resolve(list_path));
        if stats.manifests_skipped > 0 {
            // The summary's totals cannot be checked against entries not read: they are
            // checked against the list's counts, and each manifest read against its own.
            check_list_totals(&list, &snapshot, &shown, table.warnings())?;
        }
        let delete_entries = entries_of(&table, &deletes).await?;
        let check = LiveFiles::new(
            &shown,
            table.metadata().next_row_id,
            stats.manifests_skipped == 0,
            &delete_entries,
            live_files_hint(&data),
        )?;
        let index = DeleteIndex::new(table.metadata(), delete_entries);
        let keep = worth_caching(&table, &data);
        // Each manifest is fetched and decoded on a task of its own (decoding is CPU work
        // that may use another core), under a budget of bytes in flight, in list order; the
        // pruner judges each entry as it is decoded.
        let keys = check.path_keys();
        let manifests = Manifests::start(
            &table,
            data,
            pruner.map(Arc::new),
            Some(keys),
            keep,
            metrics,
        );
        let planner = Planner {
            table,
            snapshot,
            index,
            check: Some(check),
            manifests,
            current: None,
        };
        Ok((planner, stats))
    }

    /// The tasks of the next chunk of a data manifest's entries; after the last, the checks
    /// of the whole snapshot (an error then, or the end).
    async fn next_batch(mut self) -> Option<(crate::Result<PlannedBatch>, Planner)> {
        let mut check = self.check.take()?;
        let out = loop {
            if let Err(e) = crate::cancel::check(|| "planning".into()) {
                break Err(e);
            }
            let Some(current) = self.current.as_mut() else {
                match self.manifests.next().await {
                    Some(m) => {
                        self.current = Some(m);
                        continue;
                    }
                    None => match check.finish(&self.snapshot, self.table.warnings()) {
                        Ok(()) => return None,
                        Err(e) => break Err(e),
                    },
                }
            };
            match current.chunks.recv().await {
                // The manifest's task closes its channel after its last entry (or error).
                None => self.current = None,
                Some(Err(e)) => break Err(e),
                Some(Ok(chunk)) => {
                    let shown = self.table.io().shown(&current.manifest.manifest_path);
                    let batch = self.tasks_of(&shown, chunk, &mut check);
                    if batch.is_ok() {
                        self.check = Some(check);
                    }
                    break batch;
                }
            }
        };
        Some((out, self))
    }

    /// The tasks of a chunk of one data manifest's live entries; `shown` names the manifest.
    fn tasks_of(
        &self,
        shown: &str,
        chunk: Chunk,
        check: &mut LiveFiles,
    ) -> crate::Result<PlannedBatch> {
        let mut stats = PlanStats::default();
        let mut tasks = Vec::new();
        for judged in chunk.judged {
            let e = match judged {
                Judged::RuledOut(f) => {
                    check.ruled_out(&f, &chunk.paths, shown)?;
                    stats.files_skipped += 1;
                    continue;
                }
                Judged::Entry {
                    entry,
                    key,
                    admitted,
                } => {
                    check.data_file(&entry, key, shown)?;
                    if !admitted {
                        stats.files_skipped += 1;
                        continue;
                    }
                    entry
                }
            };
            if e.data_file.file_format == FileFormat::Puffin {
                return Err(crate::Error::manifest(
                    &e.data_file.file_path,
                    "a data file entry names a Puffin file, which holds no rows",
                ));
            }
            let applicable = self.index.for_data_file(&e.data_file, e.sequence_number);
            tasks.push(FileScanTask {
                first_row_id: e.data_file.first_row_id,
                sequence_number: e.sequence_number,
                deletion_vector: applicable.deletion_vector,
                position_deletes: applicable.position_deletes,
                equality_deletes: applicable.equality_deletes,
                data_file: e.data_file,
            });
        }
        Ok(PlannedBatch { tasks, stats })
    }
}
