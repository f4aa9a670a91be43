//! Parquet row selections from runs of kept row positions (the rows a deletion vector or a
//! slice leaves), as selectors or as a bitmap, whichever the reader decodes faster.

use parquet::arrow::arrow_reader::{RowSelection, RowSelectionPolicy, RowSelector};

/// Runs shorter than this on average make a selection a bitmap rather than a list of
/// selectors (Arrow's reader makes the same choice at the same density, but only after the
/// selectors were built and normalised).
const MASK_BELOW_AVERAGE_RUN: u64 = 32;

/// A Parquet row selection reading exactly the positions in `runs` of `num_rows` rows, and the
/// policy the reader must apply it with.
///
/// The kept positions of a file with scattered deleted rows (a deletion vector of an UPDATE or
/// DELETE here and there) are about as many runs as deleted rows: those go to the reader as a
/// bitmap, one bit per row, built directly from the runs. Density is judged over the rows from
/// the first kept to the last kept one, which is what the reader decodes: a slice of a row
/// group keeps a few runs of a long group, and judged over the whole group (as Arrow's `Auto`
/// policy would) it would be read selector by selector, one skip per deleted row. Rows before
/// the first run cost one skip either way (a bitmap's leading skip), and rows after the last
/// one are never read.
pub(crate) fn selection(runs: &[(u64, u64)], num_rows: u64) -> (RowSelection, RowSelectionPolicy) {
    if bitmap_span(runs).is_some() {
        return (
            RowSelection::from_boolean_buffer(run_mask(runs, num_rows)),
            RowSelectionPolicy::Mask,
        );
    }
    let mut sel = Vec::with_capacity(runs.len() * 2 + 1);
    let mut end = 0u64;
    for (start, len) in runs {
        if *start > end {
            sel.push(RowSelector::skip((*start - end) as usize));
        }
        sel.push(RowSelector::select(*len as usize));
        end = start + len;
    }
    if end < num_rows {
        sel.push(RowSelector::skip((num_rows - end) as usize));
    }
    (RowSelection::from(sel), RowSelectionPolicy::Selectors)
}

/// For a slice of a row group whose kept positions `runs` (sorted, disjoint, inside
/// `num_rows`) [`selection`] would read as a bitmap: a selection reading every row from the
/// first kept position to the last, and the bitmap of the kept ones among those rows, to
/// filter the batches with (`None` when [`selection`] would use selectors).
///
/// Arrow's reader walks a bitmap selection bit by bit from the row group's first row, and
/// turns it into selectors again to find the pages to load: for each of the 32 slices of a
/// 6M-row group, millions of bit tests before its own rows. A span selected whole costs three
/// selectors, and the bitmap covers the slice's rows only; the rows decoded are the same (a
/// bitmap selection also decodes every row of its span).
pub(crate) fn span_filter(
    runs: &[(u64, u64)],
    num_rows: u64,
) -> Option<(RowSelection, arrow::buffer::BooleanBuffer)> {
    let (lo, hi) = bitmap_span(runs)?;
    let shifted: Vec<(u64, u64)> = runs.iter().map(|&(s, l)| (s - lo, l)).collect();
    let sel = [
        RowSelector::skip(lo as usize),
        RowSelector::select((hi - lo) as usize),
        RowSelector::skip((num_rows - hi) as usize),
    ];
    let sel: Vec<RowSelector> = sel.into_iter().filter(|s| s.row_count > 0).collect();
    Some((RowSelection::from(sel), run_mask(&shifted, hi - lo)))
}

/// The rows from the first position of `runs` to past the last, when the runs are short
/// enough on average over them to be read as a bitmap (`None` for selectors, or no runs).
fn bitmap_span(runs: &[(u64, u64)]) -> Option<(u64, u64)> {
    let (lo, hi) = (runs.first()?.0, runs.last().map(|&(s, l)| s + l)?);
    ((runs.len() as u64).saturating_mul(MASK_BELOW_AVERAGE_RUN) > hi - lo).then_some((lo, hi))
}

/// A bitmap of `num_rows` bits (Arrow's order: bit `i` is bit `i % 8` of byte `i / 8`) set at
/// the positions of `runs` (sorted, disjoint, inside `num_rows`): whole bytes are filled at
/// once, so a run costs a few byte writes whatever its length (a deletion vector's runs are
/// about as many as its deleted rows).
fn run_mask(runs: &[(u64, u64)], num_rows: u64) -> arrow::buffer::BooleanBuffer {
    let mut bytes = vec![0u8; (num_rows as usize).div_ceil(8)];
    for &(start, len) in runs {
        let (lo, hi) = (start as usize, (start + len) as usize);
        if lo >= hi {
            continue;
        }
        let (first, last) = (lo / 8, (hi - 1) / 8);
        let head = 0xffu8 << (lo % 8);
        let tail = 0xffu8 >> (7 - (hi - 1) % 8);
        if first == last {
            bytes[first] |= head & tail;
        } else {
            bytes[first] |= head;
            bytes[first + 1..last].fill(0xff);
            bytes[last] |= tail;
        }
    }
    arrow::buffer::BooleanBuffer::new(bytes.into(), 0, num_rows as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The positions a selection keeps, from its selectors.
    fn kept(sel: RowSelection) -> Vec<u64> {
        let mut out = Vec::new();
        let mut at = 0u64;
        for s in Vec::<RowSelector>::from(sel) {
            if !s.skip {
                out.extend(at..at + s.row_count as u64);
            }
            at += s.row_count as u64;
        }
        out
    }

    #[test]
    fn run_masks_set_exactly_the_runs_across_byte_edges() {
        // Every run of 0..=20 positions starting at 0..=17, alone and beside a second run,
        // in 0..=40 rows: each bit against the positions of the runs.
        for start in 0..=17u64 {
            for len in 0..=20u64 {
                for (n, runs) in [
                    (start + len, vec![(start, len)]),
                    (40, vec![(start, len)]),
                    (
                        40,
                        vec![(start, len), (start + len + 1, 40 - start - len - 1)],
                    ),
                ] {
                    let mask = run_mask(&runs, n);
                    assert_eq!(mask.len() as u64, n);
                    let want: Vec<bool> = (0..n)
                        .map(|p| runs.iter().any(|&(s, l)| (s..s + l).contains(&p)))
                        .collect();
                    assert_eq!(mask.iter().collect::<Vec<_>>(), want, "{runs:?} in {n}");
                }
            }
        }
        assert_eq!(run_mask(&[], 0).len(), 0);
    }

    #[test]
    fn a_span_filter_keeps_exactly_the_runs() {
        // Scattered gaps in the middle of a long group: the span of the runs read whole, the
        // bitmap over the span; positions kept = the runs.
        let runs: Vec<(u64, u64)> = (0..1000u64).map(|i| (500_003 + i * 10, 9)).collect();
        let (sel, mask) = span_filter(&runs, 1_000_000).expect("short runs");
        let span = kept(sel);
        assert_eq!(span.first(), Some(&500_003));
        assert_eq!(span.last(), Some(&(500_003 + 999 * 10 + 8)));
        assert_eq!(span.len(), mask.len());
        let filtered: Vec<u64> = span
            .iter()
            .zip(mask.iter())
            .filter_map(|(p, k)| k.then_some(*p))
            .collect();
        let want: Vec<u64> = runs.iter().flat_map(|&(s, l)| s..s + l).collect();
        assert_eq!(filtered, want);
        // A span at the group's first and last rows: no empty selectors.
        let edge = [(0u64, 3u64), (4, 2), (7, 3)];
        let (sel, mask) = span_filter(&edge, 10).expect("short runs");
        assert_eq!(Vec::<RowSelector>::from(sel), vec![RowSelector::select(10)]);
        assert_eq!(mask.count_set_bits(), 8);
        // Long runs: selectors, no filter.
        assert!(span_filter(&[(0, 5000), (5001, 5000)], 20_000).is_none());
        assert!(span_filter(&[], 10).is_none());
    }

    #[test]
    fn selection_keeps_exactly_the_runs_as_selectors_or_bitmap() {
        let expand = |runs: &[(u64, u64)]| -> Vec<u64> {
            runs.iter().flat_map(|&(s, l)| s..s + l).collect()
        };
        let mask = |(sel, policy): &(RowSelection, RowSelectionPolicy)| {
            assert_eq!(sel.as_mask().is_some(), *policy == RowSelectionPolicy::Mask);
            *policy == RowSelectionPolicy::Mask
        };
        // Scattered single-row gaps (a deletion vector): short runs, a bitmap.
        let dense: Vec<(u64, u64)> = (0..1000u64).map(|i| (i * 10, 9)).collect();
        let sel = selection(&dense, 10_005);
        assert!(mask(&sel), "short runs are a bitmap");
        assert_eq!(sel.0.row_count(), 9000);
        assert_eq!(kept(sel.0), expand(&dense));
        // The same runs in one slice of a long row group: dense where they are, so still a
        // bitmap (over the whole group they average 1,000 rows a run).
        let slice: Vec<(u64, u64)> = (0..1000u64).map(|i| (500_000 + i * 10, 9)).collect();
        let sel = selection(&slice, 1_000_000);
        assert!(mask(&sel), "a dense slice of a long group is a bitmap");
        assert_eq!(kept(sel.0), expand(&slice));
        // A first run starting late and one ending at the last row.
        let edges = [(3u64, 2u64), (7, 1), (9, 1)];
        let sel = selection(&edges, 10);
        assert!(mask(&sel));
        assert_eq!(kept(sel.0), vec![3, 4, 7, 9]);
        // Long runs stay selectors.
        let sparse = [(0u64, 5000u64), (5001, 4999)];
        let sel = selection(&sparse, 10_000);
        assert!(!mask(&sel), "long runs are selectors");
        assert_eq!(kept(sel.0), expand(&sparse));
        // Every row deleted.
        let none = selection(&[], 100);
        assert!(!mask(&none));
        assert_eq!(none.0.row_count(), 0);
        assert!(kept(none.0).is_empty());
    }
}
