//! Read-ahead for Parquet files in object stores. The Arrow reader fetches a row group's
//! column chunks whole before it decodes the group's first row, so over the network a large
//! row group costs its whole download before any work starts, and nothing is fetched while it
//! is decoded. A file in an object store is therefore read as consecutive slices of rows, each
//! about [`SLICE_BYTES`] of the projected columns and fetching only its own pages (through the
//! offset index; a row group without one is one slice), each on its own task, up to
//! [`READ_AHEAD`] slices beyond the one being consumed: downloads overlap decoding, and a
//! slice's column ranges are fetched concurrently. Batches come out in file order, so
//! positions (deletes, `_row_id`) are those of a whole-file read.

use std::ops::Range;

use arrow::record_batch::RecordBatch;
use futures::stream::BoxStream;
use futures::StreamExt;
use parquet::arrow::arrow_reader::RowSelection;
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::ParquetMetaData;

use super::parquet::OpenedParquet;

/// Compressed bytes of the projected columns a slice aims at, by default (storage option
/// `read_slice_bytes`).
pub const SLICE_BYTES: u64 = 4 << 20;

/// Compressed bytes a slice of a local file aims at when it is read in slices for bounded
/// memory ([`crate::scan::ScanBuilder::sliced_reads`]).
pub const LOCAL_SLICE_BYTES: u64 = 2 << 20;

/// Slices fetched and decoded ahead of the one being consumed.
pub const READ_AHEAD: usize = 2;

/// Decoded batches a slice's task holds ready.
const BATCHES_AHEAD: usize = 2;

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
}

/// The slices of a file for the columns `mask` projects, each about `target` compressed
/// bytes of them; a row group without an offset index for those columns is one slice (a part
/// of it would fetch its whole column chunks again).
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
        let index = meta.page_index_for_row_group(g);
        let indexed = leaves.iter().all(|&c| {
            index
                .offset_index(c)
                .is_some_and(|o| !o.page_locations().is_empty())
        });
        let parts = if indexed {
            bytes.div_ceil(target.max(1)).clamp(1, rows.max(1))
        } else {
            1
        };
        let size = rows.div_ceil(parts).max(1);
        let mut first = 0;
        while first < rows {
            let end = (first + size).min(rows);
            out.push(Slice {
                row_group: g,
                group_start: start,
                group_rows: rows,
                rows: start + first..start + end,
            });
            first = end;
        }
        start += rows;
    }
    out
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
/// `file`'s columns `mask`, slice by slice with read-ahead. `shown` names the file in errors.
pub fn stream(
    file: OpenedParquet,
    mask: ProjectionMask,
    batch_size: usize,
    slices: Vec<Slice>,
    runs: Option<Vec<(u64, u64)>>,
    shown: String,
) -> BoxStream<'static, crate::Result<RecordBatch>> {
    let parts: Vec<(Slice, Vec<(u64, u64)>)> = slices
        .into_iter()
        .filter_map(|s| {
            let kept = within(runs.as_deref(), &s.rows);
            (!kept.is_empty()).then_some((s, kept))
        })
        .collect();
    futures::stream::iter(parts)
        .map(move |(slice, kept)| {
            let part = read_slice(&file, &mask, batch_size, &slice, &kept, &shown);
            futures::future::ready(crate::spawned::spawn_batches(
                part,
                BATCHES_AHEAD,
                shown.clone(),
            ))
        })
        .buffered(READ_AHEAD + 1)
        .flatten()
        .boxed()
}

/// The runs of `runs` inside `rows` (every position of `rows` when `runs` is `None`).
fn within(runs: Option<&[(u64, u64)]>, rows: &Range<u64>) -> Vec<(u64, u64)> {
    match runs {
        None => vec![(rows.start, rows.end - rows.start)],
        Some(runs) => runs
            .iter()
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
    let selection: RowSelection = super::file::selection(&local, slice.group_rows);
    let shown = shown.to_string();
    match file
        .builder()
        .with_projection(mask.clone())
        .with_batch_size(batch_size)
        .with_row_groups(vec![slice.row_group])
        .with_row_selection(selection)
        .build()
    {
        Ok(stream) => stream
            .map(move |r| r.map_err(|e| crate::Error::data_file(&shown, e.to_string())))
            .boxed(),
        Err(e) => {
            futures::stream::once(
                async move { Err(crate::Error::data_file(&shown, e.to_string())) },
            )
            .boxed()
        }
    }
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

    #[test]
    fn runs_are_cut_to_a_slice() {
        assert_eq!(within(None, &(10..20)), vec![(10, 10)]);
        let runs = [(0, 5), (8, 4), (15, 10), (30, 1)];
        assert_eq!(within(Some(&runs), &(10..20)), vec![(10, 2), (15, 5)]);
        assert!(within(Some(&runs), &(25..30)).is_empty());
    }
}
