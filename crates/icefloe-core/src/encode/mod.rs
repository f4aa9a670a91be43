//! Value encodings shared by every front-end: JSON Lines, CSV and Parquet; and the
//! percent-escaping of names ([`percent`]).
//!
//! One encoding of values for everything ([`value`], built on [`format`]), so the same value never
//! prints two ways: JSON Lines writes it as JSON, CSV as the same text without JSON quoting at the
//! top level. Variant columns are decoded by [`variant`]; a single default value is encoded by
//! [`literal`] the way a scan encodes values of its type.
//!
//! Writers share one shape: `new(w, &schema)`, `write_batch(&batch)` any number of times, then
//! `finish()` to flush and get the underlying writer back. Every failure is
//! [`Error::Output`](crate::Error::Output).

pub mod csv;
pub mod format;
pub mod jsonl;
pub mod length;
pub mod literal;
pub mod parquet;
pub mod percent;
pub mod value;
pub mod variant;
pub mod writer;

pub use csv::CsvWriter;
pub use jsonl::JsonLinesWriter;
pub use length::{csv_batch_len, jsonl_batch_len};
pub use parquet::ParquetWriter;
pub use value::{ColumnEncoder, Flavor};
pub use writer::{BatchWriter, Encoding};

use crate::error::Error;

/// Bytes buffered by the text writers before they hand them to the underlying writer.
pub(crate) const FLUSH_THRESHOLD: usize = 1 << 16;

/// Rows the text writers encode between two checks of their buffer.
pub(crate) const ROWS_PER_CHUNK: usize = 256;

/// Encodes rows `0..n` in chunks of [`ROWS_PER_CHUNK`] with `encode`, handing the buffer to
/// `w` whenever it passes [`FLUSH_THRESHOLD`] (so memory stays bounded for any batch size).
pub(crate) fn write_chunked<W: std::io::Write>(
    w: &mut W,
    buf: &mut Vec<u8>,
    n: usize,
    mut encode: impl FnMut(std::ops::Range<usize>, &mut Vec<u8>),
) -> crate::Result<()> {
    let mut start = 0;
    while start < n {
        let end = n.min(start + ROWS_PER_CHUNK);
        encode(start..end, buf);
        if buf.len() >= FLUSH_THRESHOLD {
            w.write_all(buf).map_err(io_error)?;
            buf.clear();
        }
        start = end;
    }
    Ok(())
}

/// Writes what is left in `buf` and flushes `w`.
pub(crate) fn finish_buffered<W: std::io::Write>(w: &mut W, buf: &[u8]) -> crate::Result<()> {
    w.write_all(buf).map_err(io_error)?;
    w.flush().map_err(io_error)
}

/// Wraps an I/O error of the underlying writer.
pub(crate) fn io_error(e: std::io::Error) -> Error {
    Error::Output(e.to_string())
}

#[cfg(test)]
mod length_tests;
#[cfg(test)]
mod tests;
