//! Read-ahead for Parquet files in object stores. The Arrow reader fetches a row group's
//! column chunks whole before it decodes the group's first row, so over the network a large
//! row group costs its whole download before any work starts, and nothing is fetched while it
//! is decoded. A file in an object store is therefore read as consecutive slices of rows, each
//! about [`SLICE_BYTES`](super::config::SLICE_BYTES) of the projected columns and fetching
//! only its own pages (through the offset index; a row group without one is one slice), each
//! on its own task, beyond the one being consumed: downloads overlap decoding, and a slice's
//! column ranges are fetched concurrently. Batches come out in file order, so positions
//! (deletes, `_row_id`) are those of a whole-file read.
//!
//! How far a file reads ahead is set in bytes, not slices, by the table's [`AheadWindow`]
//! (its size is the table's bytes in flight, `read_bytes_in_flight`): a slice is started ahead
//! only while the compressed bytes of the slices started and not yet consumed, over every file
//! of the table, fit in it. One round trip's worth of slices is not enough to keep a network
//! busy (each request waits for its first byte), and a count of slices says nothing about
//! bytes. Files share the window in the order they are consumed: the file being consumed may
//! fill it, the next ones get a quarter, an eighth, ... of it, so the file the consumer waits
//! on always finds at least half of it, and later files still fetch while it is decoded. A
//! local file read in slices (for bounded memory, not downloads) reads [`READ_AHEAD`] slices
//! ahead.
//!
//! A process serving many readers at once (the FUSE mount) bounds the slices read ahead over
//! all of them with a [`ReadAheadBudget`]: a slice is read ahead (on a task of its own, its
//! batches decoded before they are asked for) only while it holds one of the budget's permits,
//! and a slice that finds none is read in its consumer's own task when it is reached, holding
//! only the pages it is decoding. No reader ever waits for a permit.

use std::collections::VecDeque;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow::array::BooleanArray;
use arrow::record_batch::RecordBatch;
use futures::stream::BoxStream;
use futures::StreamExt;
use parquet::arrow::arrow_reader::RowSelectionPolicy;
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::ParquetMetaData;

use super::ahead_window::{AheadWindow, Place};
use super::parquet::OpenedParquet;

/// Compressed bytes a slice of a local file aims at when it is read in slices for bounded
/// memory ([`crate::scan::ScanBuilder::sliced_reads`]).
pub const LOCAL_SLICE_BYTES: u64 = 2 << 20;

/// The first slice of a file is this fraction of the others (rounded to a page start): the
/// first rows of a read wait for the whole of it.
const FIRST_SLICE_FRACTION: u64 = 8;

/// Slices of a local file read ahead of the one being consumed; a file in an object store
/// starts with as many and doubles them with each slice consumed, up to its share of the
/// window (a first burst of every slice the window holds would delay the first one).
pub const READ_AHEAD: usize = 2;

/// The most slices one file of an object store reads ahead, however small: a bound on its
/// tasks and on the decoded batches they hold ([`BATCHES_AHEAD`] each).
pub const MAX_SLICES_AHEAD: usize = 32;

/// Decoded batches a slice's task holds ready.
const BATCHES_AHEAD: usize = 2;

/// How many slices may be read ahead at once over all the streams that share it (clones share
/// one budget). A stream takes a permit for each slice it starts ahead, and gives it back when
/// that slice is consumed or the stream dropped.
#[derive(Debug, Clone)]
pub struct ReadAheadBudget {
    permits: Arc<tokio::sync::Semaphore>,
    slices: usize,
}

impl ReadAheadBudget {
    /// A budget of `slices` slices read ahead at once (0: every slice is read when reached).
    pub fn new(slices: usize) -> ReadAheadBudget {
        ReadAheadBudget {
            permits: Arc::new(tokio::sync::Semaphore::new(slices)),
            slices,
        }
    }

    /// Slices read ahead now, over every stream sharing the budget.
    pub fn in_use(&self) -> usize {
        self.slices - self.permits.available_permits()
    }

    fn try_take(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.permits.clone().try_acquire_owned().ok()
    }
}

/// A part of a file read on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// The row group it is in.
    pub row_group: usize,
    /// The file position of the row group's first row.
    pub group_start: u64,
    /// The row group's rows.
    pub group_rows: u64,
    /// The file positions it reads.
    pub rows: Range<u64>,
    /// The compressed bytes of the projected columns' pages it fetches (through the offset
    /// index: the pages holding its rows and each column's dictionary; without one: the row
    /// group's projected column chunks).
    pub bytes: u64,
}

/// The slices of a file for the columns `mask` projects, each about `target` compressed
/// bytes of them, cut at page starts of the largest column; a row group without an offset
/// index for those columns is one slice (a part of it would fetch its whole column chunks
/// again).
pub fn slices(meta: &ParquetMetaData, mask: &ProjectionMask, target: u64) -> Vec<Slice> {
    let mut out = Vec::new();
    let mut start = 0u64;
    for (g, rg) in meta.row_groups().iter().enumerate() {
        let rows = rg.num_rows().max(0) as u64;
        let leaves: Vec<usize> = (0..rg.num_columns())
            .filter(|&c| mask.leaf_included(c))
            .collect();
        let bytes: u64 = leaves
            .iter()
            .map(|&c| rg.column(c).compressed_size().max(0) as u64)
            .sum();
        let index = meta.offset_index().and_then(|o| o.get(g));
        let indexed = leaves.iter().all(|&c| {
            index
                .and_then(|i| i.get(c))
                .is_some_and(|o| !o.page_locations().is_empty())
        });
        let parts = if indexed {
            bytes.div_ceil(target.max(1)).clamp(1, rows.max(1))
        } else {
            1
        };
        let size = rows.div_ceil(parts).max(1);
        // Cuts fall on page starts of the group's largest projected column: a page on both
        // sides of a cut is fetched by both slices, and that column's pages are the big ones.
        let page_starts: Vec<u64> = leaves
            .iter()
            .max_by_key(|&&c| rg.column(c).compressed_size())
            .and_then(|&c| index.and_then(|i| i.get(c)))
            .filter(|_| indexed)
            .map(|o| {
                o.page_locations()
                    .iter()
                    .map(|p| p.first_row_index.max(0) as u64)
                    .collect()
            })
            .unwrap_or_default();
        let mut first = 0;
        while first < rows {
            // The file's first slice is smaller: the first rows wait for all of it.
            let size = if g == 0 && first == 0 && parts > 1 {
                size.div_ceil(FIRST_SLICE_FRACTION)
            } else {
                size
            };
            let mut end = (first + size).min(rows);
            if end < rows && !page_starts.is_empty() {
                // The page start nearest the even cut, past the slice's first row.
                let at = page_starts.partition_point(|&p| p < end);
                let candidates = [at.checked_sub(1), Some(at)];
                if let Some(p) = candidates
                    .into_iter()
                    .flatten()
                    .filter_map(|i| page_starts.get(i).copied())
                    .filter(|&p| p > first && p < rows)
                    .min_by_key(|&p| p.abs_diff(end))
                {
                    end = p;
                }
            }
            let fetched = if indexed {
                leaves
                    .iter()
                    .map(|&c| {
                        let pages = index.and_then(|i| i.get(c)).expect("indexed");
                        page_bytes(rg.column(c), pages.page_locations(), first..end)
                    })
                    .sum()
            } else {
                bytes
            };
            out.push(Slice {
                row_group: g,
                group_start: start,
                group_rows: rows,
                rows: start + first..start + end,
                bytes: fetched,
            });
            first = end;
        }
        start += rows;
    }
    out
}

/// The bytes a read of the rows `rows` (of its row group) fetches of a column chunk with the
/// pages `pages`: the pages holding them, and whatever precedes the first page (the
/// dictionary).
fn page_bytes(
    chunk: &parquet::file::metadata::ColumnChunkMetaData,
    pages: &[parquet::file::page_index::offset_index::PageLocation],
    rows: Range<u64>,
) -> u64 {
    let chunk_start = chunk
        .dictionary_page_offset()
        .unwrap_or_else(|| chunk.data_page_offset())
        .max(0) as u64;
    let dictionary = pages
        .first()
        .map_or(0, |p| (p.offset.max(0) as u64).saturating_sub(chunk_start));
    let data: u64 = pages
        .iter()
        .enumerate()
        .filter(|(i, p)| {
            let first = p.first_row_index.max(0) as u64;
            let next = pages
                .get(i + 1)
                .map_or(u64::MAX, |n| n.first_row_index.max(0) as u64);
            first < rows.end && next > rows.start
        })
        .map(|(_, p)| p.compressed_page_size.max(0) as u64)
        .sum();
    dictionary + data
}

/// Whether reading `file` in `slices` pays: a file in an object store (or any file, when
/// `always`: for bounded memory) with more than one slice, read inside a tokio runtime
/// (slices run on tasks of their own).
pub fn worthwhile(file: &OpenedParquet, slices: &[Slice], always: bool) -> bool {
    (file.remote || always)
        && file.slice_bytes > 0
        && slices.len() > 1
        && tokio::runtime::Handle::try_current().is_ok()
}

/// Streams the rows at the positions `runs` (ascending `(start, len)`; `None`: every row) of
/// `file`'s columns `mask`, slice by slice with read-ahead: for a file in an object store, as
/// far as its share of the table's [`AheadWindow`] allows, by its `place` in it (`None`: a
/// place taken now, after every reader placed before); for a local file, [`READ_AHEAD`]
/// slices. Each slice read ahead also holds a permit of `budget` when there is one (none: no
/// bound). `shown` names the file in errors.
#[allow(clippy::too_many_arguments)]
pub fn stream(
    file: OpenedParquet,
    mask: ProjectionMask,
    batch_size: usize,
    slices: Vec<Slice>,
    runs: Option<Arc<[(u64, u64)]>>,
    shown: String,
    budget: Option<ReadAheadBudget>,
    place: Option<Place>,
) -> BoxStream<'static, crate::Result<RecordBatch>> {
    let window = file
        .reader
        .ranged()
        .map(|r| r.ahead.clone())
        .filter(|_| file.remote);
    let place = window.as_ref().map(|w| place.unwrap_or_else(|| w.enter()));
    Slices {
        file,
        mask,
        batch_size,
        shown,
        budget,
        window: window.zip(place),
        runs,
        parts: slices.into(),
        ahead: VecDeque::new(),
        current: None,
        depth: READ_AHEAD,
    }
    .boxed()
}

/// The slices of one file in order: the one being consumed, those started ahead, those not
/// started yet.
struct Slices {
    file: OpenedParquet,
    mask: ProjectionMask,
    batch_size: usize,
    shown: String,
    budget: Option<ReadAheadBudget>,
    /// The table's window and this file's place in it (a file in an object store).
    window: Option<(AheadWindow, Place)>,
    /// The positions read (`None`: every row), shared with the reader's position cursor; each
    /// slice's part of them is cut when it starts.
    runs: Option<Arc<[(u64, u64)]>>,
    /// Slices not started yet.
    parts: VecDeque<Slice>,
    ahead: VecDeque<BoxStream<'static, crate::Result<RecordBatch>>>,
    current: Option<BoxStream<'static, crate::Result<RecordBatch>>>,
    /// The most slices read ahead now ([`READ_AHEAD`] growing to [`MAX_SLICES_AHEAD`] for a
    /// file in an object store).
    depth: usize,
}

impl Slices {
    /// The next slice not started yet that keeps some rows, and the positions it reads.
    fn next_part(&mut self) -> Option<(Slice, Vec<(u64, u64)>)> {
        while let Some(slice) = self.parts.pop_front() {
            let kept = within(self.runs.as_deref(), &slice.rows);
            if !kept.is_empty() {
                return Some((slice, kept));
            }
        }
        None
    }

    /// The first slice not started yet that keeps some rows, left in place.
    fn peek_part(&mut self) -> Option<&Slice> {
        while let Some(slice) = self.parts.front() {
            if within(self.runs.as_deref(), &slice.rows).is_empty() {
                self.parts.pop_front();
            } else {
                return self.parts.front();
            }
        }
        None
    }

    /// The rows of `slice` at `kept`, read in the consumer's task.
    fn read(
        &self,
        slice: &Slice,
        kept: &[(u64, u64)],
    ) -> BoxStream<'static, crate::Result<RecordBatch>> {
        read_slice(
            &self.file,
            &self.mask,
            self.batch_size,
            slice,
            kept,
            &self.shown,
        )
    }

    /// Starts the next slices ahead, on tasks of their own, while the window (or, for a local
    /// file, the count) and the budget let it.
    fn read_ahead(&mut self) {
        let room = self.depth + usize::from(self.current.is_none());
        while self.ahead.len() < room {
            let Some(bytes) = self.peek_part().map(|s| s.bytes) else {
                return;
            };
            let reserved = match &self.window {
                None => None,
                Some((window, place)) => match window.try_reserve(place, bytes) {
                    Some(r) => Some(r),
                    None => return,
                },
            };
            let permit = match &self.budget {
                None => None,
                Some(b) => match b.try_take() {
                    Some(p) => Some(p),
                    None => return,
                },
            };
            let Some((slice, kept)) = self.next_part() else {
                return;
            };
            let part = self.read(&slice, &kept);
            let spawned = crate::spawned::spawn_batches(part, BATCHES_AHEAD, self.shown.clone());
            // The permit and the room go back when the slice's stream is dropped (consumed,
            // or the read given up).
            self.ahead.push_back(
                spawned
                    .map(move |b| {
                        let _held = (&permit, &reserved);
                        b
                    })
                    .boxed(),
            );
        }
    }
}

impl futures::Stream for Slices {
    type Item = crate::Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            this.read_ahead();
            if this.current.is_none() {
                this.current = match this.ahead.pop_front() {
                    Some(s) => Some(s),
                    // No permit for it: read here, when reached.
                    None => match this.next_part() {
                        Some((slice, kept)) => Some(this.read(&slice, &kept)),
                        None => return Poll::Ready(None),
                    },
                };
            }
            let current = this.current.as_mut().expect("a slice");
            match current.poll_next_unpin(cx) {
                Poll::Ready(None) => {
                    this.current = None;
                    if this.window.is_some() {
                        this.depth = (this.depth * 2).min(MAX_SLICES_AHEAD);
                    }
                }
                other => return other,
            }
        }
    }
}

/// The runs of `runs` (ascending, disjoint) inside `rows` (every position of `rows` when `runs`
/// is `None`).
fn within(runs: Option<&[(u64, u64)]>, rows: &Range<u64>) -> Vec<(u64, u64)> {
    match runs {
        None => vec![(rows.start, rows.end - rows.start)],
        Some(runs) => runs[runs.partition_point(|&(start, len)| start + len <= rows.start)..]
            .iter()
            .take_while(|&&(start, _)| start < rows.end)
            .filter_map(|&(start, len)| {
                let (lo, hi) = (start.max(rows.start), (start + len).min(rows.end));
                (lo < hi).then_some((lo, hi - lo))
            })
            .collect(),
    }
}

/// One slice's rows: its row group, with a selection of the kept positions.
fn read_slice(
    file: &OpenedParquet,
    mask: &ProjectionMask,
    batch_size: usize,
    slice: &Slice,
    kept: &[(u64, u64)],
    shown: &str,
) -> BoxStream<'static, crate::Result<RecordBatch>> {
    let local: Vec<(u64, u64)> = kept
        .iter()
        .map(|&(start, len)| (start - slice.group_start, len))
        .collect();
    // Scattered kept rows: the slice's span read whole and filtered here (see `span_filter`).
    let (selection, policy, filter) =
        match super::row_selection::span_filter(&local, slice.group_rows) {
            Some((span, keep)) => (span, RowSelectionPolicy::Selectors, Some(keep)),
            None => {
                let (s, p) = super::row_selection::selection(&local, slice.group_rows);
                (s, p, None)
            }
        };
    let shown = shown.to_string();
    match file
        .builder()
        .with_projection(mask.clone())
        .with_batch_size(batch_size)
        .with_row_groups(vec![slice.row_group])
        .with_row_selection(selection)
        .with_row_selection_policy(policy)
        .build()
    {
        Ok(stream) => {
            let named = shown.clone();
            let stream =
                stream.map(move |r| r.map_err(|e| crate::Error::data_file(&named, e.to_string())));
            match filter {
                None => stream.boxed(),
                // Cut again into `batch_size` kept rows a batch, as every other read is.
                Some(keep) => {
                    let kept = keep_rows(stream, keep, shown.clone()).boxed();
                    super::rebatch::rebatch(kept, batch_size, shown)
                }
            }
        }
        Err(e) => {
            futures::stream::once(
                async move { Err(crate::Error::data_file(&shown, e.to_string())) },
            )
            .boxed()
        }
    }
}

/// The rows of `batches` (the consecutive rows of a span of the data file `shown`, in order)
/// that `keep` marks, one bit a row, in batches of whatever survived each (possibly none:
/// [`super::rebatch::rebatch`] drops those). More rows than bits is an error (the reader read
/// another span than it was asked for).
fn keep_rows(
    batches: impl futures::Stream<Item = crate::Result<RecordBatch>>,
    keep: arrow::buffer::BooleanBuffer,
    shown: String,
) -> impl futures::Stream<Item = crate::Result<RecordBatch>> {
    let mut at = 0usize;
    batches.map(move |batch| {
        let batch = batch?;
        let n = batch.num_rows();
        if at + n > keep.len() {
            return Err(crate::Error::data_file(
                &shown,
                format!(
                    "a slice read {} rows where {} were selected",
                    at + n,
                    keep.len()
                ),
            ));
        }
        let bits = keep.slice(at, n);
        at += n;
        if bits.count_set_bits() == n {
            return Ok(batch);
        }
        arrow::compute::filter_record_batch(&batch, &BooleanArray::from(bits))
            .map_err(|e| crate::Error::data_file(&shown, format!("filtering deleted rows: {e}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixture_file_is_cut_into_contiguous_slices_by_its_offset_index() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/warehouse/db/v3_dv_large/data"
        );
        let path = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .max_by_key(|p| std::fs::metadata(p).unwrap().len())
            .unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let meta = parquet::file::metadata::ParquetMetaDataReader::new()
            .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Required)
            .parse_and_finish(&file)
            .unwrap();
        let rows = meta.file_metadata().num_rows() as u64;
        let all = slices(&meta, &ProjectionMask::all(), 4096);
        assert!(all.len() > 4, "{} slices", all.len());
        let mut next = 0;
        for s in &all {
            assert_eq!(s.rows.start, next, "{all:?}");
            assert!(s.rows.end > s.rows.start);
            next = s.rows.end;
        }
        assert_eq!(next, rows);
        // Large slices: one per row group; without an offset index: one per row group too.
        assert_eq!(slices(&meta, &ProjectionMask::all(), u64::MAX).len(), 1);
        let plain = parquet::file::metadata::ParquetMetaDataReader::new()
            .parse_and_finish(&file)
            .unwrap();
        assert_eq!(slices(&plain, &ProjectionMask::all(), 4096).len(), 1);
    }

    /// Slices read ahead take permits of a shared budget and give them back once consumed or
    /// dropped; a stream that finds no permit reads its slices when it reaches them, and every
    /// stream yields the batches of a read without a budget.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn read_ahead_stays_within_a_shared_budget() {
        use futures::TryStreamExt;
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/warehouse/db/v3_dv_large"
        );
        // Slices of 4 KiB: the fixture's 90 KB data file is read as many slices.
        let storage = [(
            crate::io::config::READ_SLICE_KEY.to_string(),
            "4096".to_string(),
        )];
        let table = crate::Table::open_with_storage(dir, crate::cache::Caches::global(), &storage)
            .await
            .expect("open");
        let scan = |budget: Option<ReadAheadBudget>| {
            let b = crate::Scan::builder().lineage(true).sliced_reads(true);
            match budget {
                Some(budget) => b.read_ahead_budget(budget),
                None => b,
            }
            .build(&table)
            .expect("scan")
        };
        let task = scan(None).plan_files().await.expect("plan").remove(0);
        let want: Vec<RecordBatch> = scan(None)
            .read_task(task.clone())
            .try_collect()
            .await
            .expect("read");
        assert!(want.len() > 4, "{} batches", want.len());

        let budget = ReadAheadBudget::new(2);
        let shared = scan(Some(budget.clone()));
        let mut a = shared.read_task(task.clone());
        let mut got_a = vec![a.try_next().await.expect("read").expect("a batch")];
        // The slice being consumed and one ahead: the whole budget.
        assert_eq!(budget.in_use(), 2);
        // A second reader finds no permit, and reads all the same.
        let mut b = shared.read_task(task.clone());
        let mut got_b = Vec::new();
        while let Some(batch) = b.try_next().await.expect("read") {
            assert_eq!(budget.in_use(), 2, "the second reader took a permit");
            got_b.push(batch);
        }
        assert!(
            got_b == want,
            "the reader without read-ahead read other rows"
        );
        while let Some(batch) = a.try_next().await.expect("read") {
            assert!(budget.in_use() <= 2);
            got_a.push(batch);
        }
        assert!(got_a == want, "the reader with read-ahead read other rows");
        assert_eq!(budget.in_use(), 0, "permits kept after the read ended");

        // A read given up midway gives its permits back.
        let mut c = shared.read_task(task.clone());
        c.try_next().await.expect("read").expect("a batch");
        assert_eq!(budget.in_use(), 2);
        drop(c);
        assert_eq!(budget.in_use(), 0, "permits kept by a dropped read");

        // No budget at all: every slice is read when reached.
        let none = ReadAheadBudget::new(0);
        let got: Vec<RecordBatch> = scan(Some(none))
            .read_task(task)
            .try_collect()
            .await
            .expect("read");
        assert!(got == want, "the read without read-ahead read other rows");
    }

    /// A slice's bytes are those of the pages holding its rows (and each column's dictionary):
    /// the slices of a row group add up to its projected column chunks, and a slice of part of
    /// a group counts less than the group.
    #[test]
    fn slice_bytes_are_those_of_their_pages() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/warehouse/db/v3_dv_large/data"
        );
        let path = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
            .max_by_key(|p| std::fs::metadata(p).unwrap().len())
            .unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let meta = parquet::file::metadata::ParquetMetaDataReader::new()
            .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Required)
            .parse_and_finish(&file)
            .unwrap();
        let whole: u64 = meta
            .row_groups()
            .iter()
            .flat_map(|rg| rg.columns())
            .map(|c| c.compressed_size() as u64)
            .sum();
        let all = slices(&meta, &ProjectionMask::all(), u64::MAX);
        assert_eq!(all.iter().map(|s| s.bytes).sum::<u64>(), whole);
        let small = slices(&meta, &ProjectionMask::all(), 4096);
        assert!(small.len() > 4);
        for s in &small {
            assert!(s.bytes > 0 && s.bytes < whole, "{s:?}");
        }
        // Cut at page starts, each page is in one slice (dictionaries in every slice).
        assert!(small.iter().map(|s| s.bytes).sum::<u64>() >= whole);
    }

    #[test]
    fn runs_are_cut_to_a_slice() {
        assert_eq!(within(None, &(10..20)), vec![(10, 10)]);
        let runs = [(0, 5), (8, 4), (15, 10), (30, 1)];
        assert_eq!(within(Some(&runs), &(10..20)), vec![(10, 2), (15, 5)]);
        assert!(within(Some(&runs), &(25..30)).is_empty());
    }
}
