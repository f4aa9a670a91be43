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
    let span = match (runs.first(), runs.last()) {
        (Some(&(first, _)), Some(&(start, len))) => start + len - first,
        _ => 0,
    };
    if (runs.len() as u64).saturating_mul(MASK_BELOW_AVERAGE_RUN) > span {
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
