//! CSV bytes for the views, from the core's CSV encoder (the same encoding as
//! `icefloe cat --format csv`): the header once, and the rows of each batch on their own so a
//! view can be cut into chunks at row boundaries.

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use icefloe_core::encode::csv::{encode_batch, encode_header};

use crate::error::Result;

/// Encodes batches of one schema as CSV.
pub struct CsvRenderer {
    header: Bytes,
}

impl CsvRenderer {
    /// A renderer for batches of `schema`.
    pub fn new(schema: &SchemaRef) -> CsvRenderer {
        let mut header = Vec::new();
        encode_header(schema, &mut header);
        CsvRenderer {
            header: Bytes::from(header),
        }
    }

    /// The header line.
    pub fn header(&self) -> &Bytes {
        &self.header
    }

    /// The rows of `batch`, one line each, without the header. Errors: a column the encoder
    /// cannot write.
    pub fn rows(&self, batch: &RecordBatch) -> Result<Bytes> {
        let mut out = Vec::new();
        encode_batch(batch, &mut out)?;
        // The chunk cache weighs the length: the capacity the Vec grew to beyond it would be
        // held uncounted (up to as much again).
        out.shrink_to_fit();
        Ok(Bytes::from(out))
    }
}
