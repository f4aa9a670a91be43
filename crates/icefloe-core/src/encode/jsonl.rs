//! JSON Lines output: one JSON object per row, keys = the field names in schema order, values
//! encoded by [`super::value`] ([`Flavor::Json`]), each line ending with `\n`.
//!
//! ```text
//! {"id":1,"name":"a","amount":"1.50","tags":["x"]}
//! ```
//!
//! [`JsonLinesWriter`] streams batches to a `Write`; [`encode_batch`] turns one batch into bytes,
//! so that a front-end can encode several batches in parallel and write them in order.

use std::io::Write;
use std::ops::Range;

use arrow::record_batch::RecordBatch;

use super::value::{ColumnEncoder, Flavor};
use super::{io_error, FLUSH_THRESHOLD, ROWS_PER_CHUNK};
use crate::error::Result;

/// Streams record batches as JSON Lines to `W`.
///
/// Output is buffered internally (about 64 KiB at a time is handed to `W`); `W` itself is
/// flushed by [`Self::finish`]. A writer dropped without `finish` may lose the last chunk.
pub struct JsonLinesWriter<W: Write> {
    w: W,
    buf: Vec<u8>,
}

impl<W: Write> JsonLinesWriter<W> {
    /// A writer that writes to `w`. Writes nothing until the first batch.
    pub fn new(w: W) -> Self {
        Self {
            w,
            buf: Vec::with_capacity(2 * FLUSH_THRESHOLD),
        }
    }

    /// Writes every row of `batch`, one line per row.
    ///
    /// # Errors
    /// [`crate::Error::Output`] when a column has an Arrow type that cannot be encoded (see
    /// [`ColumnEncoder::try_new`]) or `W` fails.
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let mut rows = Rows::try_new(batch)?;
        let n = batch.num_rows();
        let mut start = 0;
        while start < n {
            let end = n.min(start + ROWS_PER_CHUNK);
            rows.write(start..end, &mut self.buf);
            if self.buf.len() >= FLUSH_THRESHOLD {
                self.w.write_all(&self.buf).map_err(io_error)?;
                self.buf.clear();
            }
            start = end;
        }
        Ok(())
    }

    /// Writes what is buffered, flushes `W` and returns it.
    ///
    /// # Errors
    /// [`crate::Error::Output`] when `W` fails.
    pub fn finish(mut self) -> Result<W> {
        self.w.write_all(&self.buf).map_err(io_error)?;
        self.w.flush().map_err(io_error)?;
        Ok(self.w)
    }
}

/// Appends the JSON Lines text of every row of `batch` to `out` (nothing for zero rows).
///
/// # Errors
/// [`crate::Error::Output`] when a column cannot be encoded (see [`ColumnEncoder::try_new`]).
pub fn encode_batch(batch: &RecordBatch, out: &mut Vec<u8>) -> Result<()> {
    Rows::try_new(batch)?.write(0..batch.num_rows(), out);
    Ok(())
}

/// A batch prepared for encoding: one encoder and one pre-rendered key per column.
struct Rows<'a> {
    encoders: Vec<ColumnEncoder<'a>>,
    /// `{"name":` for the first column, `,"name":` for the others.
    keys: Vec<Box<[u8]>>,
}

impl<'a> Rows<'a> {
    fn try_new(batch: &'a RecordBatch) -> Result<Self> {
        let schema = batch.schema_ref();
        let encoders = batch
            .columns()
            .iter()
            .zip(schema.fields())
            .map(|(c, f)| ColumnEncoder::try_new(c.as_ref(), f, Flavor::Json))
            .collect::<Result<Vec<_>>>()?;
        let keys = schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut k = Vec::with_capacity(f.name().len() + 4);
                k.push(if i == 0 { b'{' } else { b',' });
                super::format::push_json_str(&mut k, f.name());
                k.push(b':');
                k.into_boxed_slice()
            })
            .collect();
        Ok(Self { encoders, keys })
    }

    fn write(&mut self, rows: Range<usize>, out: &mut Vec<u8>) {
        let end: &[u8] = if self.encoders.is_empty() {
            b"{}\n"
        } else {
            b"}\n"
        };
        for row in rows {
            for (key, enc) in self.keys.iter().zip(self.encoders.iter_mut()) {
                out.extend_from_slice(key);
                enc.encode(row, out);
            }
            out.extend_from_slice(end);
        }
    }
}
