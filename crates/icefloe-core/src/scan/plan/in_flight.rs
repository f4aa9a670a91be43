//! Manifests in flight: the manifests of a plan fetched and decoded ahead of the planner, in
//! manifest list order, under a budget of bytes rather than a count of manifests (spec: "Scan
//! Planning"). Each manifest is decoded as a stream of entries
//! ([`crate::spec::manifest::ManifestEntries`]) on a task of its own, checked entry by entry
//! ([`crate::validate::manifest::ManifestCheck`]), and handed over in chunks through a small
//! bounded channel, each live entry with the pruner's verdict on it: what planning holds of a
//! manifest is the bytes of the file while it is decoded (counted against
//! [`MANIFEST_BYTES_IN_FLIGHT`]) and a few chunks of entries, never the whole manifest
//! decoded, so a filter that rules out most entries keeps only those it admits. The entries
//! it rules out go no further than their decoding task: what the whole-snapshot checks need
//! of them is handed over instead ([`RuledOut`]), with every path's fingerprint taken there.
//!
//! Decoded manifests are kept in the manifest cache only when the caller says the whole
//! plan's entries fit in it (`keep`): the cache is bounded in bytes, and a pass over more
//! than it holds would only evict each manifest before the next plan could use it. A
//! manifest found in the cache is served from it.

use std::sync::Arc;

use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use super::manifest_load::{load_manifest_cached, manifest_cache_key};
use super::prune::Pruner;
use crate::spawned::AbortOnDrop;
use crate::spec::manifest::ManifestEntries;
use crate::spec::{EntryStatus, ManifestEntry, ManifestFile};
use crate::table::Table;
use crate::validate::live_files::{PathKeys, RuledOut};
use crate::validate::manifest::ManifestCheck;

/// The most manifest bytes fetched and being decoded at once (a manifest larger than this is
/// read alone): with the few chunks of decoded entries each holds, what bounds planning's
/// memory while it reads manifests, whatever their size.
pub const MANIFEST_BYTES_IN_FLIGHT: u64 = 32 << 20;

/// The most manifests in flight at once, however small: a bound on tasks and on the chunks
/// they hold.
const MANIFESTS_IN_FLIGHT: usize = 8;

/// Whether the tasks of a plan carry their data files' column metrics (value, null and NaN
/// counts, bounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metrics {
    /// As the manifests record them: what reads prune row groups and pages with.
    Keep,
    /// Not decoded (only negative counts, which the manifest rules refuse, are kept): for a
    /// listing of files, where decoding them is most of a large plan's work. Entries are
    /// still judged by the pruner with their metrics.
    Drop,
}

/// Live entries handed over at once.
const CHUNK_ENTRIES: usize = 256;

/// Chunks a manifest's task may decode ahead of the planner.
const CHUNKS_AHEAD: usize = 2;

/// A live entry of a manifest, judged by the pruner.
pub enum Judged {
    /// An entry the pruner admits (every entry without a pruner), or one it rules out whose
    /// data file a delete file names (the checks want it whole); `key` is its path's
    /// fingerprint ([`PathKeys::key`]) when the task was given the keys.
    Entry {
        entry: ManifestEntry,
        key: Option<u128>,
        admitted: bool,
    },
    /// An entry the pruner rules out, as the checks need it (its path in [`Chunk::paths`]).
    RuledOut(RuledOut),
}

/// Consecutive live entries of a manifest, in manifest order.
pub struct Chunk {
    pub judged: Vec<Judged>,
    /// The paths of the [`Judged::RuledOut`] entries, one after another: one buffer, freed
    /// with the chunk, rather than an entry each freed on the planner's thread.
    pub paths: String,
}

/// One manifest in flight: its entries come through `chunks`, in order; the channel closes
/// after the last (an error, if one, is the last item).
pub struct InFlight {
    pub manifest: ManifestFile,
    pub chunks: mpsc::Receiver<crate::Result<Chunk>>,
    _task: AbortOnDrop<()>,
}

/// The manifests of a plan in flight, in the order given.
pub struct Manifests {
    manifests: mpsc::Receiver<InFlight>,
    _launcher: AbortOnDrop<()>,
}

impl Manifests {
    /// Starts fetching and decoding `manifests` of `table`, in order, at most
    /// [`MANIFEST_BYTES_IN_FLIGHT`] bytes of them at once; `pruner` judges the live entries,
    /// `keys` fingerprints their paths (without them no entry is ruled out), `keep` says
    /// whether what is decoded goes into the manifest cache, and `metrics` whether the entries
    /// handed over carry their column metrics. Must be called inside a tokio runtime; dropping
    /// the result stops the work.
    pub fn start(
        table: &Table,
        manifests: Vec<ManifestFile>,
        pruner: Option<Arc<Pruner>>,
        keys: Option<PathKeys>,
        keep: bool,
        metrics: Metrics,
    ) -> Manifests {
        let (tx, rx) = mpsc::channel(MANIFESTS_IN_FLIGHT);
        let table = table.clone();
        let launcher = tokio::spawn(async move {
            let budget = Arc::new(Semaphore::new(MANIFEST_BYTES_IN_FLIGHT as usize));
            for mf in manifests {
                let weight = weight(&mf);
                let Ok(permit) = budget.clone().acquire_many_owned(weight).await else {
                    return;
                };
                let (chunks_tx, chunks) = mpsc::channel(CHUNKS_AHEAD);
                let task = tokio::spawn(decode(
                    table.clone(),
                    mf.clone(),
                    Judge {
                        pruner: pruner.clone(),
                        keys: keys.clone(),
                        metrics,
                    },
                    keep,
                    chunks_tx,
                    permit,
                ));
                let flight = InFlight {
                    manifest: mf,
                    chunks,
                    _task: AbortOnDrop(task),
                };
                if tx.send(flight).await.is_err() {
                    return;
                }
            }
        });
        Manifests {
            manifests: rx,
            _launcher: AbortOnDrop(launcher),
        }
    }

    /// The next manifest, in order; `None` after the last.
    pub async fn next(&mut self) -> Option<InFlight> {
        self.manifests.recv().await
    }
}

/// What a manifest counts against the budget: its length (as the manifest list records it),
/// at most the whole budget.
fn weight(mf: &ManifestFile) -> u32 {
    mf.manifest_length.clamp(1, MANIFEST_BYTES_IN_FLIGHT as i64) as u32
}

/// How a manifest's task judges its entries.
struct Judge {
    pruner: Option<Arc<Pruner>>,
    keys: Option<PathKeys>,
    metrics: Metrics,
}

/// Decodes one manifest into `out` in chunks, holding `permit` until done. A panic becomes an
/// error naming the manifest: the channel never closes early without one.
async fn decode(
    table: Table,
    mf: ManifestFile,
    judge: Judge,
    keep: bool,
    out: mpsc::Sender<crate::Result<Chunk>>,
    permit: OwnedSemaphorePermit,
) {
    let shown = table.io().shown(&mf.manifest_path);
    let run = send_entries(&table, &mf, &judge, keep, &out);
    let result = match crate::guard::guarded(run).await {
        Ok(r) => r,
        Err(panic) => Err(crate::Error::manifest(
            &shown,
            format!("manifest task panicked: {panic}"),
        )),
    };
    drop(permit);
    if let Err(e) = result {
        let _ = out.send(Err(e)).await;
    }
}

/// Sends the live entries of `mf`, judged, in chunks; `Ok` also when the receiver is gone.
async fn send_entries(
    table: &Table,
    mf: &ManifestFile,
    judge: &Judge,
    keep: bool,
    out: &mpsc::Sender<crate::Result<Chunk>>,
) -> crate::Result<()> {
    let (pruner, metrics) = (judge.pruner.as_deref(), judge.metrics);
    let mut chunk = Chunker {
        judge,
        out,
        chunk: Chunker::empty(),
        closed: false,
    };
    let key = manifest_cache_key(table, mf)?;
    let cached = match keep {
        true => Some(load_manifest_cached(table, mf, true).await?),
        false => match table.caches().manifests.get(&key.key).await {
            Some(checked) => {
                table.warnings().report_all(&checked.warnings)?;
                Some(checked.value.clone())
            }
            None => None,
        },
    };
    if let Some(entries) = cached {
        for e in entries.iter() {
            chunk.push(e.clone()).await;
            if chunk.closed {
                return Ok(());
            }
        }
        return chunk.flush().await;
    }
    crate::cancel::check(|| format!("planning: reading manifest {}", mf.manifest_path))?;
    let bytes = table
        .io()
        .read_capped(&mf.manifest_path, crate::io::limits::Capped::Manifest)
        .await?;
    let mut entries =
        ManifestEntries::open(&bytes, &key.shown, mf, &key.types, Some(&key.spec_ids))?;
    match (pruner, metrics) {
        // Entries ruled out by their partition values are decoded without their metrics.
        (Some(p), _) => {
            let spec_id = mf.partition_spec_id;
            entries = entries
                .with_partition_filter(Box::new(move |v| p.may_match_partition_values(spec_id, v)));
        }
        // Nothing judges them, and no one wants them: none are decoded.
        (None, Metrics::Drop) => entries = entries.without_metrics(),
        (None, Metrics::Keep) => {}
    }
    // The manifest's own warnings (its partition tuple) before any of its entries.
    table.warnings().report_all(&entries.take_warnings())?;
    let mut check = ManifestCheck::new(mf, table.metadata(), &key.shown);
    for e in entries.by_ref() {
        let mut e = e?;
        check.entry(&mut e)?;
        chunk.push(e).await;
        if chunk.closed {
            return Ok(());
        }
    }
    table.warnings().report_all(&check.finish()?)?;
    chunk.flush().await
}

/// Live entries gathered into chunks and sent when full.
struct Chunker<'a> {
    judge: &'a Judge,
    out: &'a mpsc::Sender<crate::Result<Chunk>>,
    chunk: Chunk,
    /// Whether the receiver is gone (nothing more to do).
    closed: bool,
}

impl Chunker<'_> {
    fn empty() -> Chunk {
        Chunk {
            judged: Vec::with_capacity(CHUNK_ENTRIES),
            paths: String::new(),
        }
    }

    async fn push(&mut self, entry: ManifestEntry) {
        if entry.status == EntryStatus::Deleted {
            return;
        }
        let f = &entry.data_file;
        let keys = self.judge.keys.as_ref();
        let key = keys.map(|k| k.key(&f.file_path));
        let admitted = self.judge.pruner.as_ref().is_none_or(|p| p.may_match(f));
        let judged = match (key, keys) {
            (Some(key), Some(keys)) if !admitted && !keys.is_named(key) => {
                let paths = &mut self.chunk.paths;
                let start = paths.len();
                paths.push_str(&f.file_path);
                Judged::RuledOut(RuledOut {
                    key,
                    path: start..paths.len(),
                    record_count: f.record_count,
                    first_row_id: f.first_row_id,
                })
            }
            _ if admitted && self.judge.metrics == Metrics::Keep => Judged::Entry {
                entry,
                key,
                admitted,
            },
            _ => Judged::Entry {
                entry: without_metrics(entry),
                key,
                admitted,
            },
        };
        self.chunk.judged.push(judged);
        if self.chunk.judged.len() >= CHUNK_ENTRIES {
            let _ = self.flush().await;
        }
    }

    async fn flush(&mut self) -> crate::Result<()> {
        if self.chunk.judged.is_empty() || self.closed {
            return Ok(());
        }
        let full = std::mem::replace(&mut self.chunk, Chunker::empty());
        self.closed = self.out.send(Ok(full)).await.is_err();
        Ok(())
    }
}

/// An entry without what only a read would need (column metrics): for a listing, or for an
/// entry pruning ruled out that the whole-snapshot checks want (`validate::live_files`).
fn without_metrics(mut entry: ManifestEntry) -> ManifestEntry {
    if let Some(f) = Arc::get_mut(&mut entry.data_file) {
        for counts in [
            &mut f.value_counts,
            &mut f.null_value_counts,
            &mut f.nan_value_counts,
        ] {
            *counts = Default::default();
        }
        f.lower_bounds = Default::default();
        f.upper_bounds = Default::default();
    }
    entry
}
