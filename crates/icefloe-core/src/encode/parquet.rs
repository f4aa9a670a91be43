//! Parquet output: [`parquet::arrow::ArrowWriter`] with zstd compression.
//!
//! The Arrow schema is written as is: each field's `PARQUET:field_id` metadata becomes the
//! Parquet field id, so the file keeps the Iceberg field ids (and the `_row_id` /
//! `_last_updated_sequence_number` ids) and can be read back by id. Values are not re-encoded:
//! decimals, timestamps (UTC-adjusted when the Arrow type has a time zone), binary and nested
//! types keep their Parquet types; variant columns are already JSON text (strings).

use std::io::Write;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::error::{Error, Result};

/// Streams record batches into one Parquet file written to `W`.
///
/// Rows are buffered into row groups by the Arrow writer (its default row-group size);
/// [`Self::finish`] writes the last row group and the footer. A writer dropped without `finish`
/// leaves an incomplete file.
pub struct ParquetWriter<W: Write + Send> {
    inner: ArrowWriter<W>,
}

fn err(e: parquet::errors::ParquetError) -> Error {
    Error::Output(format!("Parquet: {e}"))
}

impl<W: Write + Send> ParquetWriter<W> {
    /// A writer for batches of `schema`, zstd-compressed (level 3).
    ///
    /// # Errors
    /// [`Error::Output`] when the schema has a type Parquet cannot store.
    pub fn new(w: W, schema: &SchemaRef) -> Result<Self> {
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .build();
        let inner = ArrowWriter::try_new(w, schema.clone(), Some(props)).map_err(err)?;
        Ok(Self { inner })
    }

    /// Appends the rows of `batch`.
    ///
    /// # Errors
    /// [`Error::Output`] when the batch does not match the schema or `W` fails.
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        self.inner.write(batch).map_err(err)
    }

    /// Writes the remaining rows and the footer, flushes `W` and returns it.
    ///
    /// # Errors
    /// [`Error::Output`] when `W` fails.
    pub fn finish(self) -> Result<W> {
        let mut w = self.inner.into_inner().map_err(err)?;
        w.flush().map_err(super::io_error)?;
        Ok(w)
    }
}
