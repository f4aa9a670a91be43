//! Text bytes for the views (CSV and JSON Lines), from the core's encoders (the same encoding
//! as `icefloe cat --format csv|jsonl`): a header once (CSV's; JSON Lines has none), and the
//! rows of each batch on their own so a view can be cut into chunks at row boundaries. Each
//! batch's length is known without producing its text (the core's length pass).

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use icefloe_core::encode::{csv, csv_batch_len, jsonl, jsonl_batch_len};

use crate::error::Result;

/// A text encoding of rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Text {
    Csv,
    Jsonl,
}

/// Encodes batches of one schema as one text encoding.
pub struct TextRenderer {
    text: Text,
    header: Bytes,
}

impl TextRenderer {
    /// A renderer of `text` for batches of `schema`.
    pub fn new(text: Text, schema: &SchemaRef) -> TextRenderer {
        let mut header = Vec::new();
        if text == Text::Csv {
            csv::encode_header(schema, &mut header);
        }
        TextRenderer {
            text,
            header: Bytes::from(header),
        }
    }

    /// The header line (empty for JSON Lines).
    pub fn header(&self) -> &Bytes {
        &self.header
    }

    /// The rows of `batch`, one line each, without the header; `len` is their length as
    /// [`TextRenderer::len`] counted it (the buffer's size). Errors: a column the encoder
    /// cannot write.
    pub fn rows(&self, batch: &RecordBatch, len: u64) -> Result<Bytes> {
        // A chunk lives in the chunk cache until evicted: rendered into a block of its
        // length, a mapping of its own from 64 KiB on, off malloc's heap ([`crate::mapped`]).
        let mut out = crate::mapped::buffer(usize::try_from(len).unwrap_or(0));
        match self.text {
            Text::Csv => csv::encode_batch(batch, &mut out)?,
            Text::Jsonl => jsonl::encode_batch(batch, &mut out)?,
        }
        Ok(crate::mapped::freeze(out))
    }

    /// The length of [`TextRenderer::rows`] of `batch`, without producing it.
    pub fn len(&self, batch: &RecordBatch) -> Result<u64> {
        Ok(match self.text {
            Text::Csv => csv_batch_len(batch)?,
            Text::Jsonl => jsonl_batch_len(batch)?,
        })
    }
}
