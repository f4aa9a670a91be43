//! One way to read a data or delete file whatever its format (spec: `file_format` is Parquet,
//! Avro or ORC): its Arrow schema with Iceberg field ids, its row count, and a stream of the
//! chosen top-level columns for the rows that are not deleted. Everything after this (matching
//! by id, promotion, defaults, deletes, lineage) is format-blind.

use arrow::array::BooleanArray;
use arrow::compute::filter_record_batch;
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use futures::stream::BoxStream;
use futures::StreamExt;
use parquet::arrow::ProjectionMask;

use std::sync::Arc;

use moka::future::Cache;

use super::avro::open_avro;
use super::footer_cache::{open_parquet_cached, Footer};
use super::orc::open_orc;
use super::parquet::{open_parquet_with, OpenedParquet};
use super::readahead;
use super::row_batches::RowBatches;
use super::row_selection::selection;
use super::TableIo;
use crate::spec::{DataFile, FileFormat};

/// An opened data or delete file.
pub struct FileReader {
    shown: String,
    schema: SchemaRef,
    num_rows: u64,
    batch_size: usize,
    /// Whether a local Parquet file is read in slices too.
    sliced: bool,
    /// Bounds the slices read ahead, over every reader sharing it.
    budget: Option<readahead::ReadAheadBudget>,
    /// Its place in the table's read-ahead window, when its reader took one.
    place: Option<super::ahead_window::Place>,
    inner: Inner,
}

enum Inner {
    Parquet(Box<OpenedParquet>),
    Decoded(RowBatches),
}

impl FileReader {
    /// Opens `file` (as recorded in a manifest) by its `file_format`. Errors: missing file, a
    /// file that is not of its recorded format, a Puffin file (deletion vectors are not rows).
    pub async fn open(io: &TableIo, file: &DataFile, batch_size: usize) -> crate::Result<Self> {
        Self::open_with(io, file, batch_size, false).await
    }

    /// Like [`FileReader::open`]; with `page_index`, a Parquet file's page index (column and
    /// offset indexes, where written) is read too, for page pruning and for reading only the
    /// pages a row selection needs.
    pub async fn open_with(
        io: &TableIo,
        file: &DataFile,
        batch_size: usize,
        page_index: bool,
    ) -> crate::Result<Self> {
        Self::open_through(io, None, file, batch_size, page_index).await
    }

    /// Like [`FileReader::open_with`], keeping a Parquet file's footer in `footers` and reusing
    /// one kept there (super::footer_cache).
    pub async fn open_cached(
        io: &TableIo,
        footers: &Cache<String, Arc<Footer>>,
        file: &DataFile,
        batch_size: usize,
        page_index: bool,
    ) -> crate::Result<Self> {
        Self::open_through(io, Some(footers), file, batch_size, page_index).await
    }

    async fn open_through(
        io: &TableIo,
        footers: Option<&Cache<String, Arc<Footer>>>,
        file: &DataFile,
        batch_size: usize,
        page_index: bool,
    ) -> crate::Result<Self> {
        let shown = io.shown(&file.file_path);
        let (schema, num_rows, inner) = match file.file_format {
            FileFormat::Parquet => {
                let (written, size) = (&file.file_path, file.file_size_in_bytes);
                let p = match footers {
                    Some(cache) => {
                        open_parquet_cached(io, cache, written, size, page_index).await?
                    }
                    None => open_parquet_with(io, written, size, page_index).await?,
                };
                let rows = p.metadata.metadata().file_metadata().num_rows().max(0) as u64;
                (
                    p.metadata.schema().clone(),
                    rows,
                    Inner::Parquet(Box::new(p)),
                )
            }
            FileFormat::Avro => {
                let f = open_avro(io.read(&file.file_path).await?, &shown, batch_size)?;
                (f.schema, f.num_rows, Inner::Decoded(f.batches))
            }
            FileFormat::Orc => {
                let f = open_orc(io.read(&file.file_path).await?, &shown, batch_size)?;
                (f.schema, f.num_rows, Inner::Decoded(f.batches))
            }
            FileFormat::Puffin => {
                return Err(crate::Error::data_file(
                    &shown,
                    "is a Puffin file, which holds no rows",
                ))
            }
        };
        Ok(FileReader {
            shown,
            schema,
            num_rows,
            batch_size,
            sliced: false,
            budget: None,
            place: None,
            inner,
        })
    }

    /// Reads a local Parquet file in read-ahead slices too (as files in object stores are),
    /// for bounded memory: see [`super::readahead`].
    pub fn sliced(mut self, on: bool) -> Self {
        self.sliced = on;
        self
    }

    /// Reads slices ahead only while `budget` (shared with other readers) has room.
    pub fn read_ahead_budget(mut self, budget: Option<readahead::ReadAheadBudget>) -> Self {
        self.budget = budget;
        self
    }

    /// Shares the table's read-ahead window from `place` (taken in the order files are
    /// consumed); without one, a place is taken when the stream is made.
    pub fn window_place(mut self, place: Option<super::ahead_window::Place>) -> Self {
        self.place = place;
        self
    }

    /// The file's columns, with their field ids (`PARQUET:field_id`) where the file has them.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Rows in the file.
    pub fn num_rows(&self) -> u64 {
        self.num_rows
    }

    /// The Parquet footer, for a Parquet file (row-group statistics, physical types).
    pub fn parquet_metadata(
        &self,
    ) -> Option<&std::sync::Arc<parquet::file::metadata::ParquetMetaData>> {
        match &self.inner {
            Inner::Parquet(p) => Some(p.metadata.metadata()),
            Inner::Decoded(_) => None,
        }
    }

    /// The file as shown in messages.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Streams the top-level columns `roots` (ascending indices into [`FileReader::schema`])
    /// of the rows at the positions in `runs` (ascending `(start, len)`; `None`: every row).
    pub fn stream(
        self,
        roots: Vec<usize>,
        runs: Option<Arc<[(u64, u64)]>>,
    ) -> crate::Result<BoxStream<'static, crate::Result<RecordBatch>>> {
        let shown = self.shown;
        match self.inner {
            Inner::Parquet(p) => {
                let mask = ProjectionMask::roots(p.metadata.parquet_schema(), roots);
                // Local slices only bound memory (no download to overlap): smaller ones.
                let target = if self.sliced && !p.remote {
                    p.slice_bytes.min(readahead::LOCAL_SLICE_BYTES)
                } else {
                    p.slice_bytes
                };
                let slices = readahead::slices(p.metadata.metadata(), &mask, target);
                if readahead::worthwhile(&p, &slices, self.sliced) {
                    return Ok(readahead::stream(
                        *p,
                        mask,
                        self.batch_size,
                        slices,
                        runs,
                        shown,
                        self.budget,
                        self.place,
                    ));
                }
                let mut b = p
                    .builder()
                    .with_projection(mask)
                    .with_batch_size(self.batch_size);
                if let Some(r) = &runs {
                    let (rows, policy) = selection(r, self.num_rows);
                    b = b.with_row_selection(rows).with_row_selection_policy(policy);
                }
                let stream = b
                    .build()
                    .map_err(|e| crate::Error::data_file(&shown, e.to_string()))?;
                // Polled by the caller (not a spawned, guarded task): a decoder's panic on a
                // corrupt file becomes an error naming it.
                let panicked = shown.clone();
                let stream = stream
                    .map(move |r| r.map_err(|e| crate::Error::data_file(&shown, e.to_string())));
                Ok(crate::guard::guarded_stream(stream, move |m| {
                    crate::Error::data_file(&panicked, format!("Parquet decoder panicked: {m}"))
                })
                .boxed())
            }
            Inner::Decoded(batches) => {
                let mut keep = runs.map(RunFilter::new);
                let rows = batches.filter_map(move |b| {
                    let b = match b.and_then(|b| {
                        b.project(&roots)
                            .map_err(|e| crate::Error::data_file(&shown, e.to_string()))
                    }) {
                        Ok(b) => b,
                        Err(e) => return Some(Err(e)),
                    };
                    match keep.as_mut() {
                        None => Some(Ok(b)),
                        Some(k) => k.apply(&b, &shown).transpose(),
                    }
                });
                Ok(futures::stream::iter(rows).boxed())
            }
        }
    }
}

/// Keeps the rows of successive batches whose file positions are in the runs.
struct RunFilter {
    runs: Arc<[(u64, u64)]>,
    run: usize,
    pos: u64,
}

impl RunFilter {
    fn new(runs: Arc<[(u64, u64)]>) -> Self {
        RunFilter {
            runs,
            run: 0,
            pos: 0,
        }
    }

    /// The kept rows of `b` (the next batch in file order), `None` when none is kept.
    fn apply(&mut self, b: &RecordBatch, shown: &str) -> crate::Result<Option<RecordBatch>> {
        let (first, n) = (self.pos, b.num_rows() as u64);
        self.pos += n;
        let mut mask = vec![false; n as usize];
        let mut kept = 0;
        while let Some(&(start, len)) = self.runs.get(self.run) {
            let (lo, hi) = (start.max(first), (start + len).min(first + n));
            for p in lo..hi.max(lo) {
                mask[(p - first) as usize] = true;
                kept += 1;
            }
            if start + len > first + n {
                break; // the run goes on in the next batch
            }
            self.run += 1;
        }
        Ok(match kept {
            0 => None,
            k if k == n => Some(b.clone()),
            _ => Some(
                filter_record_batch(b, &BooleanArray::from(mask))
                    .map_err(|e| crate::Error::data_file(shown, e.to_string()))?,
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Int64Array};
    use std::sync::Arc;

    #[test]
    fn run_filter_spans_batches() {
        let batch = |from: i64| {
            RecordBatch::try_from_iter([(
                "p",
                Arc::new(Int64Array::from_iter_values(from..from + 4)) as _,
            )])
            .unwrap()
        };
        let mut f = RunFilter::new(vec![(1, 2), (3, 3), (11, 1)].into());
        let mut got = Vec::new();
        for from in [0, 4, 8, 12] {
            if let Some(b) = f.apply(&batch(from), "f").unwrap() {
                let c = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
                got.extend((0..c.len()).map(|i| c.value(i)));
            }
        }
        assert_eq!(got, vec![1, 2, 3, 4, 5, 11]);
    }
}
