//! A random sample of a snapshot's live rows that reads only the sampled positions of each
//! data file (for `ANALYZE`): each file gets a share of the sample proportional to its
//! `record_count`, drawn uniformly from its positions; positions its deletes mark are
//! dropped when read, so the sample holds live rows only.

use futures::stream::{BoxStream, StreamExt, TryStreamExt};
use roaring::RoaringTreemap;

use super::plan::task::FileScanTask;
use super::Scan;

/// A deterministic generator for sampling (splitmix64): a sample need not be cryptographic,
/// and a seed makes it reproducible.
pub struct SplitMix(u64);

impl SplitMix {
    /// The generator of `seed`.
    pub fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..=n`.
    pub fn at_most(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * (n as u128 + 1)) >> 64) as u64
    }
}

/// `k` distinct positions drawn uniformly from `0..n` (Floyd's algorithm; all of them when
/// `k >= n`).
fn choose(n: u64, k: u64, rng: &mut SplitMix) -> RoaringTreemap {
    if k >= n {
        return (0..n).collect();
    }
    let mut out = RoaringTreemap::new();
    for j in n - k..n {
        let t = rng.at_most(j);
        if !out.insert(t) {
            out.insert(j);
        }
    }
    out
}

/// How many positions of each task to draw for a sample of `target` rows: shares of the
/// tasks' `record_count`s, rounded up, so every file with rows contributes.
fn shares(tasks: &[FileScanTask], target: u64) -> Vec<u64> {
    let total: u128 = tasks
        .iter()
        .map(|t| t.data_file.record_count.max(0) as u128)
        .sum();
    tasks
        .iter()
        .map(|t| {
            let n = t.data_file.record_count.max(0) as u128;
            if total == 0 {
                0
            } else {
                (target as u128 * n).div_ceil(total).min(n) as u64
            }
        })
        .collect()
}

/// How many positions [`Scan::read_sample`] draws for `target` rows over `tasks` (at most
/// the sum of their `record_count`s): with the rows it returns, the fraction of live rows.
pub fn positions_drawn(tasks: &[FileScanTask], target: u64) -> u64 {
    shares(tasks, target).iter().sum()
}

impl Scan {
    /// About `target` live rows of `tasks`, chosen at random (by `seed`) across every data
    /// file in proportion to its `record_count`, reading only the chosen positions (with the
    /// page index, only the pages holding them). Fewer rows come back where deletes mark
    /// chosen positions. Batches are in this scan's output schema.
    pub fn read_sample(
        &self,
        tasks: Vec<FileScanTask>,
        target: u64,
        seed: u64,
    ) -> BoxStream<'static, crate::Result<arrow::record_batch::RecordBatch>> {
        let mut rng = SplitMix(seed);
        let jobs: Vec<(FileScanTask, RoaringTreemap)> = shares(&tasks, target)
            .into_iter()
            .zip(tasks)
            .filter(|(k, _)| *k > 0)
            .map(|(k, t)| {
                let n = t.data_file.record_count.max(0) as u64;
                (t, choose(n, k, &mut rng))
            })
            .collect();
        let scan = self.clone();
        futures::stream::iter(jobs)
            .map(move |(task, positions)| {
                let scan = scan.clone();
                async move { scan.read_positions(task, &positions).await }
            })
            .buffered(self.concurrency)
            .map_ok(|batches| futures::stream::iter(batches.into_iter().map(Ok)))
            .try_flatten()
            .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chosen_positions_are_distinct_in_range_and_reproducible() {
        let mut a = SplitMix(7);
        let got = choose(1000, 100, &mut a);
        assert_eq!(got.len(), 100);
        assert!(got.iter().all(|p| p < 1000));
        assert_eq!(choose(1000, 100, &mut SplitMix(7)), got);
        assert_ne!(choose(1000, 100, &mut SplitMix(8)), got);
        assert_eq!(choose(5, 9, &mut a), (0..5).collect());
        assert!(choose(0, 3, &mut a).is_empty());
    }

    #[test]
    fn positions_are_uniform_enough() {
        // 20,000 draws of 10 from 0..100: every position is drawn about 2,000 times.
        let mut counts = [0u32; 100];
        let mut rng = SplitMix(1);
        for _ in 0..20_000 {
            for p in choose(100, 10, &mut rng).iter() {
                counts[p as usize] += 1;
            }
        }
        assert!(
            counts.iter().all(|&c| (1700..2300).contains(&c)),
            "{counts:?}"
        );
    }
}
