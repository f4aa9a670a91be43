//! Encoding a fresh part's rows with its leaf columns spread over tasks ("lanes").
//!
//! Parquet encodes each leaf column of a row group on its own (pages, dictionary,
//! compression), so a row group's columns can be encoded at once on several threads and put
//! together in leaf order. A fresh part of a data file with deletes is often one whole data
//! file, and on one thread its encoding takes longer than reading it; spread over lanes it
//! runs beside its decoding. What is written does not depend on the lanes: row groups end at
//! the same rows (the writer's row count, or [`super::ENCODED_GROUP_BYTES`] of pages after a
//! batch) and columns go in leaf order, so a part encoded again after eviction is the same
//! bytes.

use std::io::Write;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowLeafColumn,
    ArrowRowGroupWriterFactory,
};
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use tokio::sync::{mpsc, oneshot};

use super::error::err;

/// What a lane is asked to do with its column writers.
enum Job {
    /// Encode these leaves (one per writer, in order); answers its writers' estimated bytes.
    Write(
        Vec<ArrowLeafColumn>,
        oneshot::Sender<parquet::errors::Result<usize>>,
    ),
    /// Close the writers, answer their chunks, and take these writers for the next row group.
    Close(
        Vec<ArrowColumnWriter>,
        oneshot::Sender<parquet::errors::Result<Vec<ArrowColumnChunk>>>,
    ),
}

/// A Parquet writer whose column encoding runs on a few tasks (lanes) of the current runtime.
pub(super) struct LaneWriter<W: Write + Send> {
    file: SerializedFileWriter<W>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    /// Leaf `i` is encoded by lane `i % lanes.len()`.
    lanes: Vec<mpsc::Sender<Job>>,
    leaves: usize,
    row_group: usize,
    rows: usize,
    max_rows: usize,
    max_bytes: usize,
}

impl<W: Write + Send> LaneWriter<W> {
    /// A writer of `schema` with `props` into `sink`, its columns spread over `lanes` tasks
    /// (at least one), ending row groups at the properties' row count or at `max_bytes` of
    /// estimated pages. Must be called inside a tokio runtime.
    pub(super) fn try_new(
        sink: W,
        schema: SchemaRef,
        props: WriterProperties,
        max_bytes: usize,
        lanes: usize,
    ) -> crate::Result<Self> {
        let lanes = lanes.max(1);
        let max_rows = props.max_row_group_row_count().unwrap_or(usize::MAX).max(1);
        let (file, factory) = ArrowWriter::try_new(sink, schema.clone(), Some(props))
            .and_then(ArrowWriter::into_serialized_writer)
            .map_err(err)?;
        let writers = factory.create_column_writers(0).map_err(err)?;
        let leaves = writers.len();
        let lanes = deal(writers, lanes).into_iter().map(spawn_lane).collect();
        Ok(LaneWriter {
            file,
            factory,
            schema,
            lanes,
            leaves,
            row_group: 0,
            rows: 0,
            max_rows,
            max_bytes,
        })
    }

    /// Writes `batch` (of the writer's schema), ending row groups where they are full.
    pub(super) async fn write(&mut self, batch: &RecordBatch) -> crate::Result<()> {
        let mut rest = batch.clone();
        while rest.num_rows() > 0 {
            let take = rest.num_rows().min(self.max_rows - self.rows);
            let part = rest.slice(0, take);
            rest = rest.slice(take, rest.num_rows() - take);
            let bytes = self.encode(&part).await?;
            self.rows += take;
            if self.rows >= self.max_rows || bytes >= self.max_bytes {
                self.end_row_group().await?;
            }
        }
        Ok(())
    }

    /// Ends the last row group and writes the footer; the file's metadata.
    pub(super) async fn finish(mut self) -> crate::Result<ParquetMetaData> {
        if self.rows > 0 {
            self.end_row_group().await?;
        }
        self.file.finish().map_err(err)
    }

    /// Sends each lane its leaves of `batch`; the estimated bytes of the row group so far.
    async fn encode(&self, batch: &RecordBatch) -> crate::Result<usize> {
        let fields = self.schema.fields();
        let same = batch.num_columns() == fields.len()
            && fields
                .iter()
                .zip(batch.columns())
                .all(|(f, c)| f.data_type() == c.data_type());
        if !same {
            return Err(err(format!(
                "a batch of {} columns is not of the part's schema ({} columns)",
                batch.num_columns(),
                fields.len()
            )));
        }
        // Columns of the schema's types have the schema's leaves, one per column writer.
        let mut leaves = Vec::with_capacity(self.leaves);
        for (field, column) in fields.iter().zip(batch.columns()) {
            leaves.extend(compute_leaves(field, column).map_err(err)?);
        }
        let mut answers = Vec::with_capacity(self.lanes.len());
        for (lane, leaves) in self.lanes.iter().zip(deal(leaves, self.lanes.len())) {
            let (tx, rx) = oneshot::channel();
            lane.send(Job::Write(leaves, tx)).await.map_err(gone)?;
            answers.push(rx);
        }
        let mut bytes = 0;
        for rx in answers {
            bytes += rx.await.map_err(gone)?.map_err(err)?;
        }
        Ok(bytes)
    }

    /// Closes the row group's column writers, appends their chunks in leaf order, and gives
    /// the lanes the writers of the next row group.
    async fn end_row_group(&mut self) -> crate::Result<()> {
        self.row_group += 1;
        let next = self
            .factory
            .create_column_writers(self.row_group)
            .map_err(err)?;
        let mut answers = Vec::with_capacity(self.lanes.len());
        for (lane, writers) in self.lanes.iter().zip(deal(next, self.lanes.len())) {
            let (tx, rx) = oneshot::channel();
            lane.send(Job::Close(writers, tx)).await.map_err(gone)?;
            answers.push(rx);
        }
        let mut chunks: Vec<std::vec::IntoIter<ArrowColumnChunk>> =
            Vec::with_capacity(self.lanes.len());
        for rx in answers {
            chunks.push(rx.await.map_err(gone)?.map_err(err)?.into_iter());
        }
        let mut rg = self.file.next_row_group().map_err(err)?;
        for i in 0..self.leaves {
            let chunk = chunks[i % self.lanes.len()]
                .next()
                .ok_or_else(|| err("a lane closed fewer column chunks than it encoded"))?;
            chunk.append_to_row_group(&mut rg).map_err(err)?;
        }
        rg.close().map_err(err)?;
        self.rows = 0;
        Ok(())
    }
}

/// `items` dealt to `lanes` lanes in turn: item `i` to lane `i % lanes`.
fn deal<T>(items: Vec<T>, lanes: usize) -> Vec<Vec<T>> {
    let mut dealt: Vec<Vec<T>> = (0..lanes).map(|_| Vec::new()).collect();
    for (i, item) in items.into_iter().enumerate() {
        dealt[i % lanes].push(item);
    }
    dealt
}

/// Starts a lane owning `writers`; it ends when its writer is dropped.
fn spawn_lane(mut writers: Vec<ArrowColumnWriter>) -> mpsc::Sender<Job> {
    let (tx, mut rx) = mpsc::channel::<Job>(1);
    tokio::spawn(async move {
        while let Some(job) = rx.recv().await {
            match job {
                Job::Write(leaves, answer) => {
                    let r = writers
                        .iter_mut()
                        .zip(&leaves)
                        .try_for_each(|(w, l)| w.write(l))
                        .map(|()| writers.iter().map(|w| w.get_estimated_total_bytes()).sum());
                    let _ = answer.send(r);
                }
                Job::Close(next, answer) => {
                    let done = std::mem::replace(&mut writers, next);
                    let r = done.into_iter().map(ArrowColumnWriter::close).collect();
                    let _ = answer.send(r);
                }
            }
        }
    });
    tx
}

/// A lane that stopped (its task panicked or the runtime is shutting down).
fn gone(e: impl std::fmt::Display) -> crate::Error {
    err(format!("a column encoding task stopped: {e}"))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Int64Array, ListArray, StringArray, StructArray};
    use arrow::datatypes::{DataType, Field, Fields, Int32Type, Schema};
    use parquet::file::reader::{FileReader, SerializedFileReader};

    use super::*;

    /// Batches of a flat, a nested and a repeated column with nulls, of uneven lengths.
    fn batches() -> (SchemaRef, Vec<RecordBatch>) {
        let inner = Fields::from(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Utf8, true),
        ]);
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("s", DataType::Struct(inner.clone()), true),
            Field::new_list("l", Field::new_list_field(DataType::Int32, true), true),
            Field::new("note", DataType::Utf8, true),
        ]));
        let mut out = Vec::new();
        let mut start = 0i64;
        for n in [700usize, 1, 0, 2500, 333, 0, 4096] {
            let ids: Vec<i64> = (start..start + n as i64).collect();
            let id = Arc::new(Int64Array::from(ids.clone())) as ArrayRef;
            let a = Arc::new(Int64Array::from_iter(
                ids.iter().map(|i| (i % 7 != 0).then_some(i * 3)),
            )) as ArrayRef;
            let b = Arc::new(StringArray::from_iter(
                ids.iter()
                    .map(|i| (i % 5 != 0).then(|| format!("b{}", i % 13))),
            )) as ArrayRef;
            let s = Arc::new(StructArray::new(inner.clone(), vec![a, b], None)) as ArrayRef;
            let l = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(
                ids.iter().map(|i| {
                    (i % 11 != 0).then(|| (0..(i % 4) as i32).map(|v| (v != 2).then_some(v)))
                }),
            )) as ArrayRef;
            let note = Arc::new(StringArray::from_iter(ids.iter().map(|i| {
                (i % 3 != 0).then(|| format!("note {i:x} {}", "x".repeat((i % 40) as usize)))
            }))) as ArrayRef;
            out.push(RecordBatch::try_new(schema.clone(), vec![id, s, l, note]).expect("batch"));
            start += n as i64;
        }
        (schema, out)
    }

    /// The bytes `ArrowWriter` writes, ending row groups as the fresh parts did before lanes:
    /// at the row count inside `write`, at `max_bytes` after each batch.
    fn reference(
        schema: &SchemaRef,
        batches: &[RecordBatch],
        props: &WriterProperties,
        max_bytes: usize,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = ArrowWriter::try_new(&mut out, schema.clone(), Some(props.clone())).unwrap();
        for b in batches {
            w.write(b).unwrap();
            if w.in_progress_size() >= max_bytes {
                w.flush().unwrap();
            }
        }
        w.close().unwrap();
        out
    }

    async fn laned(
        schema: &SchemaRef,
        batches: &[RecordBatch],
        props: &WriterProperties,
        max_bytes: usize,
        lanes: usize,
    ) -> (Vec<u8>, ParquetMetaData) {
        let mut out = Vec::new();
        let mut w =
            LaneWriter::try_new(&mut out, schema.clone(), props.clone(), max_bytes, lanes).unwrap();
        for b in batches {
            w.write(b).await.unwrap();
        }
        let meta = w.finish().await.unwrap();
        (out, meta)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lanes_write_the_bytes_one_writer_writes() {
        let (schema, batches) = batches();
        let total: usize = batches.iter().map(|b| b.num_rows()).sum();
        // Row groups end mid-batch at 1000 rows, and (second case) after a batch at 8 KiB.
        for (max_rows, max_bytes) in [(1000, usize::MAX), (1_000_000, 8 << 10), (1000, 8 << 10)] {
            let props = WriterProperties::builder()
                .set_max_row_group_row_count(Some(max_rows))
                .set_data_page_row_count_limit(300)
                .build();
            let want = reference(&schema, &batches, &props, max_bytes);
            for lanes in [1, 2, 3, 16] {
                let (got, meta) = laned(&schema, &batches, &props, max_bytes, lanes).await;
                assert!(
                    got == want,
                    "{lanes} lanes, {max_rows} rows, {max_bytes} bytes: {} bytes, want {}",
                    got.len(),
                    want.len()
                );
                let rows: i64 = meta.row_groups().iter().map(|g| g.num_rows()).sum();
                assert_eq!(rows as usize, total);
                assert!(meta.num_row_groups() > 1, "row groups were ended");
                let back = SerializedFileReader::new(bytes::Bytes::from(got)).unwrap();
                assert_eq!(back.metadata().file_metadata().num_rows() as usize, total);
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_of_another_shape_is_an_error() {
        let (schema, batches) = batches();
        let props = WriterProperties::builder().build();
        let flat = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        let mut out = Vec::new();
        let mut w = LaneWriter::try_new(&mut out, flat, props, usize::MAX, 2).unwrap();
        let e = w
            .write(&batches[0])
            .await
            .expect_err("four columns into one");
        assert!(e.to_string().contains("not of the part's schema"), "{e}");
        // One column of another type.
        let other = Arc::new(Schema::new(vec![Field::new("id", DataType::Utf8, true)]));
        let b = RecordBatch::try_new(other, vec![batches[0].column(3).clone()]).unwrap();
        let e = w.write(&b).await.expect_err("strings into a bigint column");
        assert!(e.to_string().contains("not of the part's schema"), "{e}");
        drop(schema);
    }
}
