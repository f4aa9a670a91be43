//! Text views (CSV, JSON Lines) rendered in chunks with a sparse offset index.
//!
//! A view (`data.csv`, or `files/<f>.csv`) is the header followed by the rows of some data files
//! of a snapshot. Its chunks are the Arrow batches the core yields for each file: a first,
//! counting pass measures every batch with the core's length pass (no text is produced) to
//! learn its length (the [`FileLayout`] of each file,
//! shared by `data.csv` and the per-file view), which gives the exact file size and the byte
//! offset of every chunk. A read at offset X then renders only the chunks covering X. Rendered
//! chunks live in a cache bounded by weight; a chunk that is not cached is rendered through the
//! open file's [`Cursor`], which keeps the file's batch stream positioned after the last chunk
//! it produced, so a sequential reader decodes each data file once. A read elsewhere (backward,
//! or a jump ahead) restarts the file's read at the chunk's batch, from the restart point the
//! counting pass noted ([`icefloe_core::scan::resume`]): only that part of the file is decoded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use icefloe_core::scan::resume::PositionedBatch;
use icefloe_core::spec::DataFile;
use moka::future::Cache;

use crate::built::{Built, ViewSize};
use crate::error::{FuseError, Result};
use crate::index::{BodyReader, BodyWriter, EntryKind, Index, IndexKey};
use crate::locks::lock;
use crate::plan::SnapshotPlan;
use crate::sizing::Sizing;
use crate::text::Text;
use crate::tree::ViewKey;

/// How many data files the counting pass reads at once.
const COUNT_CONCURRENCY: usize = 2;

/// A rendered chunk: one batch of one data file of one snapshot read with one table schema,
/// in one text encoding (the same batch read with two schemas is two texts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChunkKey {
    pub text: Text,
    pub table: usize,
    pub snapshot: i64,
    pub schema: i32,
    pub task: usize,
    pub batch: usize,
}

/// Rendered chunks, bounded by their total size in bytes.
pub type ChunkCache = Cache<ChunkKey, Bytes>;

/// A chunk cache holding at most `bytes`. Least-recently-used eviction: views are mostly read
/// sequentially, and a just-rendered chunk must be admitted even when the cache is full.
pub fn chunk_cache(bytes: u64) -> ChunkCache {
    Cache::builder()
        .max_capacity(bytes)
        .eviction_policy(moka::policy::EvictionPolicy::lru())
        .weigher(|_, v: &Bytes| u32::try_from(v.len()).unwrap_or(u32::MAX))
        .build()
}

/// The CSV length of each batch the core yields for one data file (zero for a batch whose rows
/// are all deleted), and where the file's read restarts to yield it.
#[derive(Debug)]
pub struct FileLayout {
    pub batch_lens: Vec<u64>,
    pub restarts: Vec<u64>,
}

/// Where one chunk sits in a view.
#[derive(Debug, Clone, Copy)]
struct Chunk {
    offset: u64,
    len: u64,
    task: usize,
    batch: usize,
    /// The data file position the task's read restarts at to yield this batch first.
    restart: u64,
}

/// A positioned batch stream over one data file, owned by an open file.
pub struct Cursor {
    task: usize,
    next: usize,
    stream: BoxStream<'static, icefloe_core::Result<PositionedBatch>>,
}

/// How many batches a cursor decodes on to reach a chunk ahead of it (out-of-order read-ahead
/// requests) before restarting the read at the chunk's batch instead.
const SKIP_AHEAD: usize = 2;

/// How many chunks after a read are rendered in the background. One: it is encoded while the
/// read's own chunk is sent, and the next read finds it ready. Two were about 4% faster on a
/// cold `cat data.csv` of the bench table, but held more memory with 16 readers.
const PREFETCH: usize = 1;

/// How many rendered chunks an open file keeps for itself (the one being read and the ones
/// prefetched), whatever the shared cache evicts.
const RECENT_CHUNKS: usize = 1 + PREFETCH;

/// The read state of one open file: its cursor and the chunks it rendered last. The chunks
/// are behind their own lock, so a read of a chunk already rendered never waits for the
/// cursor (busy prefetching the next one).
#[derive(Default)]
pub struct ReadState {
    cursor: tokio::sync::Mutex<Option<Cursor>>,
    recent: Mutex<std::collections::VecDeque<(ChunkKey, Bytes)>>,
    /// Chunks a read took batches for and is rendering, each with the bytes once rendered
    /// (`Some(None)`: the render failed).
    pending: Mutex<HashMap<ChunkKey, tokio::sync::watch::Receiver<Option<Option<Bytes>>>>>,
    /// Batches decoded for this file (the tests' measure of what a read costs).
    decoded: std::sync::atomic::AtomicU64,
}

impl ReadState {
    fn recent(&self, key: &ChunkKey) -> Option<Bytes> {
        lock(&self.recent)
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, b)| b.clone())
    }

    fn remember(&self, key: ChunkKey, bytes: Bytes) {
        let mut recent = lock(&self.recent);
        if recent.len() == RECENT_CHUNKS {
            recent.pop_front();
        }
        recent.push_back((key, bytes));
    }
}

/// The read state of an open file, shared with its background prefetch.
pub type CursorSlot = Arc<ReadState>;

/// One text view (CSV or JSON Lines) with its offset index.
pub struct CsvView {
    name: String,
    text: Text,
    plan: Arc<SnapshotPlan>,
    chunks: Vec<Chunk>,
    size: u64,
    cache: ChunkCache,
}

impl CsvView {
    /// The exact size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Reads `size` bytes at `offset` (fewer at the end of the view), rendering the chunks not in
    /// the cache through `cursor`. Afterwards the next chunk is rendered in the background, so a
    /// sequential reader finds it ready.
    pub async fn read(
        self: &Arc<Self>,
        offset: u64,
        size: u32,
        cursor: &CursorSlot,
    ) -> Result<Bytes> {
        let end = self.size.min(offset.saturating_add(u64::from(size)));
        if offset >= end {
            return Ok(Bytes::new());
        }
        let header = self.plan.text(self.text).header();
        let hlen = header.len() as u64;
        // A read inside one chunk (most are: chunks are about a read's size or larger) is a
        // slice of it, not a copy; one across chunks or the header is put together.
        let mut pieces: Vec<Bytes> = Vec::with_capacity(2);
        if offset < hlen {
            pieces.push(header.slice(offset as usize..hlen.min(end) as usize));
        }
        let mut pos = offset.max(hlen);
        let mut i = self.chunks.partition_point(|c| c.offset + c.len <= pos);
        while pos < end && i < self.chunks.len() {
            let c = self.chunks[i];
            let bytes = self.chunk(c, cursor).await?;
            if bytes.len() as u64 != c.len {
                // Never slice a chunk by another chunk's offsets.
                return Err(self.miscounted(c, bytes.len()));
            }
            let from = (pos - c.offset) as usize;
            let to = ((end - c.offset) as usize).min(bytes.len());
            pieces.push(bytes.slice(from..to));
            pos = c.offset + to as u64;
            i += 1;
        }
        let out = match pieces.len() {
            0 => Bytes::new(),
            1 => pieces.pop().expect("one piece"),
            _ => Bytes::from(pieces.concat()),
        };
        for &next in self.chunks.iter().skip(i).take(PREFETCH) {
            let key = self.key(next);
            if !self.in_hand(&key, cursor) {
                let (view, cursor) = (self.clone(), cursor.clone());
                tokio::spawn(async move {
                    if let Err(e) = view.chunk(next, &cursor).await {
                        tracing::debug!("prefetch of {} failed: {e}", view.name);
                    }
                });
            }
        }
        Ok(out)
    }

    fn key(&self, c: Chunk) -> ChunkKey {
        ChunkKey {
            text: self.text,
            table: self.plan.table_id,
            snapshot: self.plan.snapshot.snapshot_id,
            schema: self.plan.schema_id,
            task: c.task,
            batch: c.batch,
        }
    }

    /// The counted text length of batch `batch` of task `task` (0 if not counted).
    fn batch_len(&self, task: usize, batch: usize) -> u64 {
        self.plan.layouts[self.text as usize][task]
            .get()
            .and_then(|l| l.batch_lens.get(batch).copied())
            .unwrap_or(0)
    }

    /// Chunk `c` has `len` bytes where the counting pass found `c.len`.
    fn miscounted(&self, c: Chunk, len: usize) -> FuseError {
        FuseError::Inconsistent {
            view: self.name.clone(),
            reason: format!(
                "batch {} of task {} is {len} bytes, counted {}",
                c.batch, c.task, c.len
            ),
        }
    }

    /// The bytes of chunk `c`: kept for this file, cached, being rendered (then awaited), or
    /// else rendered through the cursor. The cursor is held only to take batches from the data
    /// file; they are encoded after it is released, so the next chunk's batch can be decoded
    /// meanwhile.
    async fn chunk(&self, c: Chunk, cursor: &CursorSlot) -> Result<Bytes> {
        let key = self.key(c);
        loop {
            if let Some(b) = self.ready(&key, cursor).await {
                return Ok(b);
            }
            let mut slot = cursor.cursor.lock().await;
            // Kept, cached or taken by another read while we waited: that one it is.
            if self.in_hand(&key, cursor) {
                continue;
            }
            let taken = self.take(c, &mut slot, &cursor.decoded).await?;
            // Announced before the cursor is let go, so a read of one of them waits for it.
            let pending = Pending::announce(cursor, taken.iter().map(|t| t.0));
            drop(slot);
            let mut bytes = None;
            for ((k, batch, len), tx) in taken.into_iter().zip(pending.senders()) {
                let rendered = self.plan.text(self.text).rows(&batch, len)?;
                if rendered.len() as u64 != len {
                    let c = Chunk {
                        batch: k.batch,
                        len,
                        ..c
                    };
                    return Err(self.miscounted(c, rendered.len()));
                }
                if !rendered.is_empty() {
                    self.cache.insert(k, rendered.clone()).await;
                    // Evicts now, not in moka's later batches: an evicted chunk's
                    // buffer then comes back to the pool ([`crate::mapped`]) in time for the
                    // next render, which else faults in fresh pages (on the bench table, 230 000
                    // faults for a cold `cat data.csv`, 80 000 with this).
                    self.cache.run_pending_tasks().await;
                    cursor.remember(k, rendered.clone());
                }
                let _ = tx.send(Some(Some(rendered.clone())));
                if k == key {
                    bytes = Some(rendered);
                }
            }
            return Ok(bytes.expect("the chunk's own batch is the last taken"));
        }
    }

    /// Whether chunk `key` needs no render through the cursor: this file keeps it, the cache
    /// has it, or a read of this file is rendering it.
    fn in_hand(&self, key: &ChunkKey, cursor: &CursorSlot) -> bool {
        cursor.recent(key).is_some()
            || self.cache.contains_key(key)
            || lock(&cursor.pending).contains_key(key)
    }

    /// Chunk `key` if this file keeps it, the cache has it, or a read rendering it finishes
    /// (`None` if none of these, or that read failed).
    async fn ready(&self, key: &ChunkKey, cursor: &CursorSlot) -> Option<Bytes> {
        if let Some(b) = cursor.recent(key) {
            return Some(b);
        }
        if let Some(b) = self.cache.get(key).await {
            return Some(b);
        }
        let rx = lock(&cursor.pending).get(key).cloned();
        let mut rx = rx?;
        let done = rx.wait_for(|r| r.is_some()).await.ok()?.clone();
        done.flatten()
    }

    /// Takes from the data file the batches up to chunk `c`'s, with each one's key and counted
    /// length, positioning the cursor first: on from where it is when `c` is its next batch or
    /// a few ahead, else restarted at `c`'s batch. Batches skipped to reach `c` are decoded
    /// anyway and returned to be rendered and cached, since the kernel sends a sequential
    /// reader's requests out of order (read-ahead on two threads), and the one for a skipped
    /// chunk would else restart the file.
    async fn take(
        &self,
        c: Chunk,
        slot: &mut Option<Cursor>,
        decoded: &std::sync::atomic::AtomicU64,
    ) -> Result<Vec<(ChunkKey, RecordBatch, u64)>> {
        let key = self.key(c);
        let mut cur = match slot.take() {
            Some(cur)
                if cur.task == c.task
                    && cur.next <= c.batch
                    && c.batch - cur.next <= SKIP_AHEAD =>
            {
                cur
            }
            _ => Cursor {
                task: c.task,
                next: c.batch,
                stream: self
                    .plan
                    .scan
                    .read_task_from(self.plan.tasks[c.task].clone(), c.restart),
            },
        };
        let ended = || FuseError::Inconsistent {
            view: self.name.clone(),
            reason: format!(
                "data file {} has fewer batches than when counted",
                self.plan.tasks[c.task].data_file.file_path
            ),
        };
        let mut taken = Vec::with_capacity(1 + c.batch - cur.next);
        while cur.next <= c.batch {
            let b = cur.stream.next().await.ok_or_else(ended)??;
            decoded.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if cur.next == c.batch && b.restart != c.restart {
                return Err(FuseError::Inconsistent {
                    view: self.name.clone(),
                    reason: format!(
                        "batch {} of task {} restarts at position {}, counted {}",
                        c.batch, c.task, b.restart, c.restart
                    ),
                });
            }
            let len = self.batch_len(c.task, cur.next);
            taken.push((
                ChunkKey {
                    batch: cur.next,
                    ..key
                },
                b.batch,
                len,
            ));
            cur.next += 1;
        }
        *slot = Some(cur);
        Ok(taken)
    }
}

/// Renders announced by one read: their keys in the file's pending map until the read is done
/// with them (sent or failed), so reads of them wait rather than take the cursor again.
struct Pending<'a> {
    state: &'a ReadState,
    keys: Vec<ChunkKey>,
    senders: Vec<tokio::sync::watch::Sender<Option<Option<Bytes>>>>,
}

impl<'a> Pending<'a> {
    fn announce(state: &'a ReadState, keys: impl Iterator<Item = ChunkKey>) -> Pending<'a> {
        let keys: Vec<ChunkKey> = keys.collect();
        let mut map = lock(&state.pending);
        let senders = keys
            .iter()
            .map(|k| {
                let (tx, rx) = tokio::sync::watch::channel(None);
                map.insert(*k, rx);
                tx
            })
            .collect();
        drop(map);
        Pending {
            state,
            keys,
            senders,
        }
    }

    /// One sender per key, in order; a render that fails sends `Some(None)` when dropped.
    fn senders(&self) -> impl Iterator<Item = &tokio::sync::watch::Sender<Option<Option<Bytes>>>> {
        self.senders.iter()
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        let mut map = lock(&self.state.pending);
        for (k, tx) in self.keys.iter().zip(&self.senders) {
            // Whoever still waits learns the render is not coming, and renders it itself.
            tx.send_if_modified(|v| {
                if v.is_none() {
                    *v = Some(None);
                    true
                } else {
                    false
                }
            });
            map.remove(k);
        }
    }
}

impl ViewSize for CsvView {
    fn size(&self) -> u64 {
        self.size()
    }
}

/// The CSV views of the mount, each built once.
pub struct CsvViews {
    cache: ChunkCache,
    views: Built<CsvView>,
    index: Arc<Index>,
}

impl CsvViews {
    /// Views sharing a chunk cache of at most `cache_bytes`.
    pub fn new(cache_bytes: u64) -> CsvViews {
        CsvViews {
            cache: chunk_cache(cache_bytes),
            views: Built::default(),
            index: Arc::new(Index::disabled()),
        }
    }

    /// Takes and keeps file layouts in `index`.
    pub fn with_index(mut self, index: Arc<Index>) -> CsvViews {
        self.index = index;
        self
    }

    /// The views built so far (to find or forget one, count them, sum their sizes).
    pub fn views(&self) -> &Built<CsvView> {
        &self.views
    }

    /// The view `key` of `plan`, built by a counting pass on first use. `name` is used in logs.
    pub async fn get(
        &self,
        key: &ViewKey,
        plan: &Arc<SnapshotPlan>,
        name: &str,
    ) -> Result<Arc<CsvView>> {
        self.views
            .get_or_build(key, || async {
                let text = key.format.text().ok_or_else(|| FuseError::Inconsistent {
                    view: name.to_string(),
                    reason: "not a text view".into(),
                })?;
                self.build(name, plan, text, &plan.tasks_of(key.scope))
                    .await
            })
            .await
    }

    async fn build(
        &self,
        name: &str,
        plan: &Arc<SnapshotPlan>,
        text: Text,
        tasks: &[usize],
    ) -> Result<CsvView> {
        // One task per data file, at most COUNT_CONCURRENCY counting at once.
        let permits = Arc::new(tokio::sync::Semaphore::new(COUNT_CONCURRENCY));
        let total_rows = tasks.iter().map(|&t| plan.tasks[t].max_live_rows()).sum();
        let sizing = Sizing::start(name, total_rows, tasks.len() as u64);
        let handles: Vec<_> = tasks
            .iter()
            .map(|&t| {
                let (plan, permits) = (plan.clone(), permits.clone());
                let (sizing, index) = (sizing.clone(), self.index.clone());
                tokio::spawn(async move {
                    let _permit = permits.acquire_owned().await;
                    let l = layout(&plan, text, t, &sizing, &index).await;
                    sizing.file_done();
                    l
                })
            })
            .collect();
        let mut layouts = Vec::with_capacity(handles.len());
        for h in handles {
            layouts.push(h.await??);
        }
        let mut offset = plan.text(text).header().len() as u64;
        let mut chunks = Vec::new();
        for (&task, layout) in tasks.iter().zip(&layouts) {
            for (batch, (&len, &restart)) in
                layout.batch_lens.iter().zip(&layout.restarts).enumerate()
            {
                if len > 0 {
                    chunks.push(Chunk {
                        offset,
                        len,
                        task,
                        batch,
                        restart,
                    });
                    offset += len;
                }
            }
        }
        sizing.finish(offset);
        tracing::debug!("{name}: {offset} bytes in {} chunks", chunks.len());
        Ok(CsvView {
            name: name.to_string(),
            text,
            plan: plan.clone(),
            chunks,
            size: offset,
            cache: self.cache.clone(),
        })
    }
}

/// The layout of one data file, counted once per plan: from the on-disk index, else by the
/// core's length pass, which gives each batch's text length without rendering it (and is then
/// kept in the index).
async fn layout(
    plan: &Arc<SnapshotPlan>,
    text: Text,
    task: usize,
    sizing: &Sizing,
    index: &Index,
) -> Result<Arc<FileLayout>> {
    let layout = plan.layouts[text as usize][task]
        .get_or_try_init(|| async {
            let file = &plan.tasks[task].data_file;
            let key = IndexKey::new(
                plan.scan.table(),
                plan.snapshot.snapshot_id,
                plan.schema_id,
                match text {
                    Text::Csv => EntryKind::CsvLayout,
                    Text::Jsonl => EntryKind::JsonlLayout,
                },
                file.file_path.clone(),
            );
            if let Some(body) = index.get(&key) {
                match FileLayout::decode(&body, file) {
                    Some(l) => {
                        index.hit();
                        return Ok(Arc::new(l));
                    }
                    None => index.reject(&key, "not the layout of this data file"),
                }
            }
            let mut stream = plan.scan.read_task_from(plan.tasks[task].clone(), 0);
            let (mut batch_lens, mut restarts) = (Vec::new(), Vec::new());
            while let Some(batch) = stream.next().await {
                let batch = batch?;
                sizing.add_rows(batch.batch.num_rows());
                batch_lens.push(plan.text(text).len(&batch.batch)?);
                restarts.push(batch.restart);
            }
            let layout = FileLayout {
                batch_lens,
                restarts,
            };
            index.put(&key, &layout.encode(file));
            Ok::<_, FuseError>(Arc::new(layout))
        })
        .await?;
    Ok(layout.clone())
}

impl FileLayout {
    /// The layout as an index entry's body (each batch's length and restart point), with the
    /// data file's size and row count (checked when read back).
    fn encode(&self, file: &DataFile) -> Vec<u8> {
        let mut w = BodyWriter::default();
        w.u64(file.file_size_in_bytes as u64);
        w.u64(file.record_count as u64);
        w.u64(self.batch_lens.len() as u64);
        for (&l, &r) in self.batch_lens.iter().zip(&self.restarts) {
            w.u64(l);
            w.u64(r);
        }
        w.0
    }

    /// The layout of `file` in an index entry's body, unless the body is of another file.
    fn decode(body: &[u8], file: &DataFile) -> Option<FileLayout> {
        let mut r = BodyReader(body);
        if r.u64()? != file.file_size_in_bytes as u64 || r.u64()? != file.record_count as u64 {
            return None;
        }
        let n = r.u64()?;
        let (mut batch_lens, mut restarts) = (Vec::new(), Vec::new());
        for _ in 0..n {
            batch_lens.push(r.u64()?);
            restarts.push(r.u64()?);
        }
        r.done().then_some(FileLayout {
            batch_lens,
            restarts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::Format;
    use crate::tree::Scope;
    use icefloe_core::Table;

    const LARGE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/warehouse/db/v3_dv_large"
    );

    /// The whole view, rendered in one go through the core's encoder.
    async fn whole(plan: &SnapshotPlan) -> Vec<u8> {
        let mut out = plan.csv.header().to_vec();
        let mut stream = plan.scan.read_tasks(plan.tasks.clone());
        while let Some(b) = stream.next().await {
            icefloe_core::encode::csv::encode_batch(&b.expect("batch"), &mut out).expect("encode");
        }
        out
    }

    /// The plan of the current snapshot of the large fixture, its whole `data.csv`, views
    /// sharing a chunk cache of `cache_bytes`, and that `data.csv` view.
    async fn large_view(cache_bytes: u64) -> (Arc<SnapshotPlan>, Vec<u8>, CsvViews, Arc<CsvView>) {
        let plan = crate::plan::current_plan(LARGE).await;
        let want = whole(&plan).await;
        let views = CsvViews::new(cache_bytes);
        let key = ViewKey {
            table: 0,
            snapshot: plan.snapshot.snapshot_id,
            schema: plan.schema_id,
            scope: Scope::All,
            format: Format::Csv,
        };
        let view = views.get(&key, &plan, "test").await.expect("view");
        (plan, want, views, view)
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn reads_at_any_offset_match_the_whole_view() {
        // A cache far smaller than the view: most chunks are rendered again through cursors.
        let (plan, want, _views, view) = large_view(64 << 10).await;
        assert_eq!(view.size(), want.len() as u64);
        assert!(
            view.chunks.len() >= 5,
            "54,327 rows in batches of up to 8192: {} chunks",
            view.chunks.len()
        );
        assert_eq!(view.chunks[0].offset, plan.csv.header().len() as u64);
        // Sequential reads of 128 KiB, as the kernel issues them.
        let cursor = CursorSlot::default();
        let mut got = Vec::new();
        loop {
            let b = view
                .read(got.len() as u64, 128 << 10, &cursor)
                .await
                .expect("read");
            if b.is_empty() {
                break;
            }
            got.extend(b);
        }
        assert!(got == want, "sequential read differs");
        // Backwards, odd sizes, straddling chunk boundaries, on a fresh cursor.
        let cursor = CursorSlot::default();
        let mut offset = want.len() as u64;
        while offset > 0 {
            offset = offset.saturating_sub(50_021);
            let b = view.read(offset, 70_001, &cursor).await.expect("read");
            let end = (offset as usize + 70_001).min(want.len());
            assert!(b == want[offset as usize..end], "read at {offset}");
        }
        assert!(view
            .read(want.len() as u64, 10, &cursor)
            .await
            .expect("eof")
            .is_empty());
    }

    /// A chunk rendered again after the cursor passed it (a backward read), or far ahead of
    /// it, decodes its own batch only: the read restarts there, not at the file's first batch
    /// (before, a backward read decoded every batch up to it).
    #[tokio::test(flavor = "multi_thread")]
    async fn a_read_elsewhere_decodes_only_its_batch() {
        let (_plan, want, views, view) = large_view(16 << 20).await;
        let n = view.chunks.len();
        assert!(n >= 5, "{n} chunks");
        let cursor = CursorSlot::default();
        let decoded = || cursor.decoded.load(std::sync::atomic::Ordering::Relaxed);
        for &c in &view.chunks {
            view.chunk(c, &cursor).await.expect("chunk");
        }
        assert_eq!(decoded(), n as u64, "sequential: each batch once");
        // Nothing rendered is left (neither cached nor kept by the file): each step renders.
        views.cache.invalidate_all();
        lock(&cursor.recent).clear();
        assert!(n >= 6, "{n} chunks");
        // (chunk, batches decoded): backward and far ahead restart at the chunk's batch; a
        // chunk just ahead decodes the one skipped (cached, so reading it decodes nothing).
        let steps = [(1, 1), (0, 1), (n - 1, 1), (2, 1), (4, 2), (3, 0)];
        let mut total = n as u64;
        for (at, cost) in steps {
            let c = view.chunks[at];
            let bytes = view.chunk(c, &cursor).await.expect("chunk");
            assert!(
                bytes[..] == want[c.offset as usize..(c.offset + c.len) as usize],
                "chunk {at}"
            );
            total += cost;
            assert_eq!(decoded(), total, "chunk {at}: {cost} batches decoded");
        }
    }

    /// Reads of one open file that want the same chunks at once (the kernel's read-ahead on
    /// two threads) decode and render each chunk once: while one read renders a chunk, the
    /// others wait for it instead of taking the cursor back to it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_reads_of_a_chunk_render_it_once() {
        let (_plan, want, views, view) = large_view(16 << 20).await;
        assert!(view.chunks.len() >= 4);
        for round in 0..20 {
            views.cache.invalidate_all();
            let cursor = CursorSlot::default();
            let wanted = [2, 2, 3, 2, 3, 3, 2, 2];
            let reads: Vec<_> = wanted
                .iter()
                .map(|&at| {
                    let (view, cursor, c) = (view.clone(), cursor.clone(), view.chunks[at]);
                    tokio::spawn(async move { (c, view.chunk(c, &cursor).await.expect("chunk")) })
                })
                .collect();
            for r in reads {
                let (c, bytes) = r.await.expect("join");
                assert!(
                    bytes[..] == want[c.offset as usize..(c.offset + c.len) as usize],
                    "round {round}: chunk of batch {}",
                    c.batch
                );
            }
            let decoded = cursor.decoded.load(std::sync::atomic::Ordering::Relaxed);
            assert_eq!(decoded, 2, "round {round}: two chunks, each decoded once");
            assert!(
                lock(&cursor.pending).is_empty(),
                "round {round}: nothing left pending"
            );
        }
    }

    /// Reads the whole view through a fresh cursor.
    async fn read_all(view: &Arc<CsvView>) -> Vec<u8> {
        view.read(0, u32::MAX, &CursorSlot::default())
            .await
            .expect("read")
            .to_vec()
    }

    /// One snapshot read with two table schemas (its own and the current one, after a column
    /// was added and one renamed) is two views sharing one chunk cache: each must serve its own
    /// text, not the chunks the other rendered (they once shared cache keys, which served
    /// `refs/dev`'s rows under `snapshots/<id>`'s size).
    #[tokio::test(flavor = "multi_thread")]
    async fn two_schemas_of_one_snapshot_do_not_share_chunks() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/exact/warehouse/db/schema_rule"
        );
        let table = Table::open(dir).await.expect("open");
        let dev = 8281097127026930738;
        let current = table.metadata().current_schema().schema_id;
        let views = CsvViews::new(16 << 20);
        let mut texts = Vec::new();
        for schema in [current, 0, current] {
            assert_ne!(current, 0);
            let plan = Arc::new(
                SnapshotPlan::new(0, &table, dev, schema)
                    .await
                    .expect("plan"),
            );
            let key = ViewKey {
                table: 0,
                snapshot: dev,
                schema,
                scope: Scope::All,
                format: Format::Csv,
            };
            let view = views.get(&key, &plan, "dev").await.expect("view");
            let got = read_all(&view).await;
            assert_eq!(
                String::from_utf8(got.clone()).unwrap(),
                String::from_utf8(whole(&plan).await).unwrap(),
                "schema {schema}"
            );
            texts.push(got);
        }
        assert_ne!(texts[0], texts[1]);
        // Spark's rows for the snapshot's own schema (tests/fixtures/exact), in file order.
        let text = String::from_utf8(texts[1].clone()).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines[1..].sort_unstable();
        assert_eq!(
            lines,
            [
                "_row_id,_last_updated_sequence_number,id,a",
                "0,1,1,a1",
                "1,1,2,a2",
                "2,2,10,dev10"
            ]
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_file_view_is_its_rows_after_the_header() {
        let plan = crate::plan::current_plan(LARGE).await;
        let (id, schema) = (plan.snapshot.snapshot_id, plan.schema_id);
        let views = CsvViews::new(16 << 20);
        let mut rows = 0;
        for t in 0..plan.tasks.len() {
            let key = ViewKey {
                table: 0,
                snapshot: id,
                schema,
                scope: Scope::File(t),
                format: Format::Csv,
            };
            let view = views.get(&key, &plan, "file").await.expect("view");
            let bytes = view
                .read(0, u32::MAX, &CursorSlot::default())
                .await
                .expect("read");
            assert_eq!(bytes.len() as u64, view.size());
            assert!(bytes.starts_with(plan.csv.header()));
            rows += bytes.iter().filter(|b| **b == b'\n').count() - 1;
        }
        // 70,000 rows written, 15,673 deleted by the deletion vector.
        assert_eq!(rows, 70_000 - 15_673);
    }
}
