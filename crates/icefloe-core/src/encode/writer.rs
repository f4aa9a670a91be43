//! One writer over the three output encodings, so every front-end that lets its user pick the
//! encoding (`icefloe cat --format`, the mount's `data.{csv,jsonl,parquet}`) writes it the same
//! way.

use std::io::Write;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;

use super::{CsvWriter, JsonLinesWriter, ParquetWriter};

/// An output encoding of rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// RFC 4180 CSV with a header.
    Csv,
    /// One JSON object per row.
    Jsonl,
    /// Parquet with the Iceberg field ids.
    Parquet,
}

impl Encoding {
    /// The usual file name extension.
    pub fn extension(self) -> &'static str {
        match self {
            Encoding::Csv => "csv",
            Encoding::Jsonl => "jsonl",
            Encoding::Parquet => "parquet",
        }
    }
}

/// A writer of one [`Encoding`].
pub enum BatchWriter<W: Write + Send> {
    Csv(CsvWriter<W>),
    Jsonl(JsonLinesWriter<W>),
    Parquet(Box<ParquetWriter<W>>),
}

impl<W: Write + Send> BatchWriter<W> {
    /// A writer of `encoding` for batches of `schema`.
    pub fn new(encoding: Encoding, w: W, schema: &SchemaRef) -> crate::Result<Self> {
        Ok(match encoding {
            Encoding::Csv => BatchWriter::Csv(CsvWriter::new(w, schema)),
            Encoding::Jsonl => BatchWriter::Jsonl(JsonLinesWriter::new(w)),
            Encoding::Parquet => BatchWriter::Parquet(Box::new(ParquetWriter::new(w, schema)?)),
        })
    }

    /// Writes the rows of `batch`.
    pub fn write(&mut self, batch: &RecordBatch) -> crate::Result<()> {
        match self {
            BatchWriter::Csv(w) => w.write_batch(batch),
            BatchWriter::Jsonl(w) => w.write_batch(batch),
            BatchWriter::Parquet(w) => w.write_batch(batch),
        }
    }

    /// Flushes (for Parquet: writes the footer) and hands back the underlying writer.
    pub fn finish(self) -> crate::Result<W> {
        match self {
            BatchWriter::Csv(w) => w.finish(),
            BatchWriter::Jsonl(w) => w.finish(),
            BatchWriter::Parquet(w) => w.finish(),
        }
    }
}
