//! CSV bytes for the views, from the core's CSV encoder (the same encoding as
//! `icefloe cat --format csv`): the header once, and the rows of each batch on their own so a
//! view can be cut into chunks at row boundaries.

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use icefloe_core::encode::csv::CsvWriter;

use crate::error::Result;

/// Encodes batches of one schema as CSV.
pub struct CsvRenderer {
    schema: SchemaRef,
    header: Bytes,
}

impl CsvRenderer {
    /// A renderer for batches of `schema`. Errors: a column the encoder cannot write.
    pub fn new(schema: SchemaRef) -> Result<CsvRenderer> {
        let header = CsvWriter::new(Vec::new(), &schema)?.finish()?;
        Ok(CsvRenderer {
            schema,
            header: Bytes::from(header),
        })
    }

    /// The header line.
    pub fn header(&self) -> &Bytes {
        &self.header
    }

    /// The rows of `batch`, one line each, without the header.
    pub fn rows(&self, batch: &RecordBatch) -> Result<Bytes> {
        let mut w = CsvWriter::new(Vec::new(), &self.schema)?;
        w.write_batch(batch)?;
        let mut out = w.finish()?;
        // The encoder always starts with the header; the views write it once, at offset 0.
        out.drain(..self.header.len());
        Ok(Bytes::from(out))
    }
}
