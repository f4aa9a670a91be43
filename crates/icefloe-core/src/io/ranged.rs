//! Ranged GETs of data files in object stores. Over a network, one connection carries about
//! 80–100 MB/s and every request waits tens of milliseconds for its first byte, so throughput
//! comes from many requests of a few MiB in flight, not one large one. The byte ranges a
//! Parquet read asks for (column chunks, or the pages of a slice) are therefore
//! - coalesced where the gap between two of them is at most [`COALESCE_GAP`] (one request
//!   instead of many small ones),
//! - split into parts of at most [`PART_BYTES`] (several connections share a large range),
//! - fetched all at once, within a [`FetchBudget`] of bytes in flight shared by every file of
//!   the table: a part waits for room before its request is sent, and gives the room back once
//!   its body has arrived. Memory and connections stay bounded however many files and slices
//!   read at once.
//!
//! Storage options set the sizes: [`PART_KEY`] and [`IN_FLIGHT_KEY`].

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

/// Ranges closer than this many bytes are fetched by one request (the bytes between them are
/// read and dropped: cheaper than a request's latency).
pub const COALESCE_GAP: u64 = 256 << 10;

/// The largest request, by default (storage option [`PART_KEY`]).
pub const PART_BYTES: u64 = 4 << 20;

/// The bytes requested and not yet received, over every file of a table, by default (storage
/// option [`IN_FLIGHT_KEY`]).
pub const BYTES_IN_FLIGHT: u64 = 64 << 20;

/// The storage option that sets the largest request in bytes ([`PART_BYTES`]).
pub const PART_KEY: &str = "read_part_bytes";

/// The storage option that sets the bytes in flight ([`BYTES_IN_FLIGHT`]).
pub const IN_FLIGHT_KEY: &str = "read_bytes_in_flight";

/// The budget's unit: semaphore permits are counted in KiB (a `u32` of them covers 4 TiB).
const UNIT: u64 = 1024;

/// Bytes in flight (requested, body not yet received) over every ranged GET that shares it
/// (clones share one budget). A request waits for room before it is sent; a request larger
/// than the whole budget is never made (parts are cut to fit it).
#[derive(Debug, Clone)]
pub struct FetchBudget {
    inner: Arc<BudgetInner>,
}

#[derive(Debug)]
struct BudgetInner {
    permits: tokio::sync::Semaphore,
    bytes: u64,
    in_flight: AtomicU64,
    peak: AtomicU64,
    requests: AtomicU64,
}

impl FetchBudget {
    /// A budget of `bytes` in flight (at least 1 KiB).
    pub fn new(bytes: u64) -> FetchBudget {
        let units = bytes.div_ceil(UNIT).clamp(1, u64::from(u32::MAX) / 2);
        FetchBudget {
            inner: Arc::new(BudgetInner {
                permits: tokio::sync::Semaphore::new(units as usize),
                bytes: units * UNIT,
                in_flight: AtomicU64::new(0),
                peak: AtomicU64::new(0),
                requests: AtomicU64::new(0),
            }),
        }
    }

    /// The budget in bytes.
    pub fn bytes(&self) -> u64 {
        self.inner.bytes
    }

    /// Bytes requested and not yet received now.
    pub fn in_flight(&self) -> u64 {
        self.inner.in_flight.load(Ordering::Relaxed)
    }

    /// The most bytes ever in flight at once.
    pub fn peak(&self) -> u64 {
        self.inner.peak.load(Ordering::Relaxed)
    }

    /// Ranged GETs sent through the budget.
    pub fn requests(&self) -> u64 {
        self.inner.requests.load(Ordering::Relaxed)
    }

    /// Waits for room for `len` bytes (at most the budget) and counts them in flight until the
    /// returned guard is dropped.
    async fn reserve(&self, len: u64) -> InFlight<'_> {
        let units = len.div_ceil(UNIT).clamp(1, self.inner.bytes / UNIT) as u32;
        let permit = self
            .inner
            .permits
            .acquire_many(units)
            .await
            .expect("the budget's semaphore is never closed");
        let now = self.inner.in_flight.fetch_add(len, Ordering::Relaxed) + len;
        self.inner.peak.fetch_max(now, Ordering::Relaxed);
        self.inner.requests.fetch_add(1, Ordering::Relaxed);
        InFlight {
            budget: self,
            len,
            _permit: permit,
        }
    }
}

/// Room taken in a [`FetchBudget`] by one request.
struct InFlight<'a> {
    budget: &'a FetchBudget,
    len: u64,
    _permit: tokio::sync::SemaphorePermit<'a>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.budget
            .inner
            .in_flight
            .fetch_sub(self.len, Ordering::Relaxed);
    }
}

/// How a table's data files are fetched from an object store: the largest request, the
/// shared budget of bytes in flight, and the window of bytes read ahead.
#[derive(Debug, Clone)]
pub struct RangedFetch {
    /// Bytes per request at most (never above the budget).
    pub part_bytes: u64,
    /// Bytes in flight over every file.
    pub budget: FetchBudget,
    /// Bytes of slices read ahead (fetched or in flight, not yet consumed) over every file, as
    /// large as the budget: read-ahead keeps the budget full
    /// ([`super::ahead_window::AheadWindow`]).
    pub ahead: super::ahead_window::AheadWindow,
}

impl RangedFetch {
    /// Requests of at most `part_bytes` (at least 4 KiB, at most `in_flight`) within a budget
    /// of `in_flight` bytes.
    pub fn new(part_bytes: u64, in_flight: u64) -> RangedFetch {
        let budget = FetchBudget::new(in_flight);
        RangedFetch {
            part_bytes: part_bytes.max(4 << 10).min(budget.bytes()),
            ahead: super::ahead_window::AheadWindow::new(budget.bytes()),
            budget,
        }
    }

    /// Fetches `ranges` of `path` (any order, may overlap), coalesced and split as the module
    /// says, every part at once within the budget. Returns one buffer per range, in the order
    /// given. Errors: the store's, for the first part that failed.
    pub async fn get_ranges(
        &self,
        store: &Arc<dyn ObjectStore>,
        path: &Path,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        let parts = plan(ranges, COALESCE_GAP, self.part_bytes);
        let fetched = futures::future::try_join_all(parts.iter().map(|part| async move {
            let _room = self.budget.reserve(part.end - part.start).await;
            store.get_range(path, part.clone()).await
        }))
        .await?;
        Ok(ranges.iter().map(|r| cut(&parts, &fetched, r)).collect())
    }
}

/// The requests that fetch `ranges`: sorted, those at most `gap` apart merged, each merged
/// range cut into equal parts of at most `part` bytes. Empty ranges need no request.
pub fn plan(ranges: &[Range<u64>], gap: u64, part: u64) -> Vec<Range<u64>> {
    let mut sorted: Vec<Range<u64>> = ranges.iter().filter(|r| r.end > r.start).cloned().collect();
    sorted.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::new();
    for r in sorted {
        match merged.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(gap) => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    let part = part.max(1);
    let mut out = Vec::new();
    for m in merged {
        let len = m.end - m.start;
        let n = len.div_ceil(part);
        let size = len.div_ceil(n);
        let mut start = m.start;
        while start < m.end {
            let end = (start + size).min(m.end);
            out.push(start..end);
            start = end;
        }
    }
    out
}

/// The bytes of `want` out of the fetched `parts` (sorted and disjoint, covering it): a view of
/// one part when it lies inside one, a copy joined from several otherwise.
fn cut(parts: &[Range<u64>], fetched: &[Bytes], want: &Range<u64>) -> Bytes {
    if want.end <= want.start {
        return Bytes::new();
    }
    let first = parts.partition_point(|p| p.end <= want.start);
    let p = &parts[first];
    if want.end <= p.end {
        let at = (want.start - p.start) as usize;
        return fetched[first].slice(at..at + (want.end - want.start) as usize);
    }
    let mut out = BytesMut::with_capacity((want.end - want.start) as usize);
    for (p, bytes) in parts[first..].iter().zip(&fetched[first..]) {
        if p.start >= want.end {
            break;
        }
        let lo = want.start.max(p.start) - p.start;
        let hi = want.end.min(p.end) - p.start;
        out.extend_from_slice(&bytes[lo as usize..hi as usize]);
    }
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_ranges_are_merged_and_large_ones_split_evenly() {
        // 0..10 and 20..30 are 10 apart (merged at gap 10, not at 9); 1000..1100 stays alone.
        assert_eq!(
            plan(&[20..30, 0..10, 1000..1100], 10, 1000),
            vec![0..30, 1000..1100]
        );
        assert_eq!(
            plan(&[20..30, 0..10, 1000..1100], 9, 1000),
            vec![0..10, 20..30, 1000..1100]
        );
        // 250 bytes in parts of at most 100: three parts of 84, 84 and 82.
        let whole = 0..250;
        assert_eq!(
            plan(std::slice::from_ref(&whole), 0, 100),
            vec![0..84, 84..168, 168..250]
        );
        // Overlapping and empty ranges.
        assert_eq!(plan(&[5..5, 0..10, 3..8], 0, 100), vec![0..10]);
        assert!(plan(&[], 0, 100).is_empty());
    }

    #[test]
    fn a_range_is_cut_out_of_one_part_or_joined_across_parts() {
        let data: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let whole = 0..1000;
        let parts = plan(std::slice::from_ref(&whole), 0, 300);
        let fetched: Vec<Bytes> = parts
            .iter()
            .map(|p| Bytes::copy_from_slice(&data[p.start as usize..p.end as usize]))
            .collect();
        for want in [0..1000u64, 10..20, 240..260, 249..751, 999..1000, 7..7] {
            let got = cut(&parts, &fetched, &want);
            assert_eq!(
                &got[..],
                &data[want.start as usize..want.end as usize],
                "{want:?}"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn parts_of_a_local_object_read_back_what_was_asked_within_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(dir.path().join("f"), &data).unwrap();
        let store: Arc<dyn ObjectStore> =
            Arc::new(object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap());
        // Parts of 64 KiB within 128 KiB: the budget holds two parts at a time.
        let fetch = RangedFetch::new(64 << 10, 128 << 10);
        let ranges = [150_000..200_000, 0..100_000, 100_500..101_000, 5..6];
        let got = fetch
            .get_ranges(&store, &Path::from("f"), &ranges)
            .await
            .unwrap();
        for (r, b) in ranges.iter().zip(&got) {
            assert_eq!(&b[..], &data[r.start as usize..r.end as usize], "{r:?}");
        }
        assert!(fetch.budget.peak() <= fetch.budget.bytes());
        assert!(fetch.budget.peak() > 0);
        assert_eq!(fetch.budget.in_flight(), 0);
        // Every range is within the gap of the next: 0..200_000 in four parts of 50,000.
        assert_eq!(fetch.budget.requests(), 4);
    }
}
