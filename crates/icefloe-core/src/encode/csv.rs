//! CSV output (RFC 4180): a header line of column names, then one line per row, fields separated
//! by `,`, lines ended by `\n`.
//!
//! Values are the [`Flavor::Text`] encoding of [`super::value`]: strings, decimals, dates,
//! timestamps, UUIDs and hex bare; nested values and variants as JSON text; booleans
//! `true`/`false`; `NaN`, `Infinity`, `-Infinity` bare. A field is quoted only when it contains
//! `,`, `"`, CR or LF, with `"` doubled inside; an empty string is written `""` so that it stays
//! distinct from SQL NULL, which is an empty unquoted field. (A variant holding variant-null is the
//! JSON text `null`, also distinct from a SQL NULL variant.)
//!
//! ```text
//! id,name,tags
//! 1,"a, b","[""x""]"
//! 2,"",
//! ```
//!
//! [`CsvWriter`] streams batches to a `Write`; [`encode_header`] and [`encode_batch`] produce
//! the bytes, so that a front-end can encode several batches in parallel and write them in order.

use std::io::Write;
use std::ops::Range;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;

use super::format;
use super::value::{ColumnEncoder, Flavor};
use super::{finish_buffered, write_chunked, FLUSH_THRESHOLD};
use crate::error::{Error, Result};

/// Streams record batches as CSV to `W`.
///
/// The header is prepared by [`Self::new`] and written with the first batch, or by
/// [`Self::finish`] when there was none, so an empty result is still a valid CSV file with its
/// header. Output is buffered internally; `W` is flushed by `finish`.
pub struct CsvWriter<W: Write> {
    w: W,
    buf: Vec<u8>,
    columns: usize,
}

impl<W: Write> CsvWriter<W> {
    /// A writer for batches of `schema`, with a header line of its column names.
    pub fn new(w: W, schema: &SchemaRef) -> Self {
        let mut me = Self::without_header(w, schema);
        encode_header(schema, &mut me.buf);
        me
    }

    /// A writer for batches of `schema` that writes no header line.
    pub fn without_header(w: W, schema: &SchemaRef) -> Self {
        Self {
            w,
            buf: Vec::with_capacity(2 * FLUSH_THRESHOLD),
            columns: schema.fields().len(),
        }
    }

    /// Writes every row of `batch`, one line per row.
    ///
    /// # Errors
    /// [`Error::Output`] when the batch has a different number of columns than the schema given
    /// to [`Self::new`], a column cannot be encoded (see [`ColumnEncoder::try_new`]), or `W`
    /// fails.
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_columns() != self.columns {
            return Err(Error::Output(format!(
                "CSV: batch has {} columns, the header has {}",
                batch.num_columns(),
                self.columns
            )));
        }
        let mut rows = Rows::try_new(batch)?;
        write_chunked(&mut self.w, &mut self.buf, batch.num_rows(), |r, buf| {
            rows.write(r, buf)
        })
    }

    /// Writes what is buffered (the header, if no batch came), flushes `W` and returns it.
    ///
    /// # Errors
    /// [`Error::Output`] when `W` fails.
    pub fn finish(mut self) -> Result<W> {
        finish_buffered(&mut self.w, &self.buf)?;
        Ok(self.w)
    }
}

/// Appends the header line (the column names, quoted by the same rules as values) to `out`.
pub fn encode_header(schema: &SchemaRef, out: &mut Vec<u8>) {
    let mut scratch = Vec::new();
    for (i, f) in schema.fields().iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let start = out.len();
        out.extend_from_slice(f.name().as_bytes());
        quote_if_needed(out, start, &mut scratch);
    }
    out.push(b'\n');
}

/// Appends the CSV lines of every row of `batch` to `out` (no header).
///
/// # Errors
/// [`Error::Output`] when a column cannot be encoded (see [`ColumnEncoder::try_new`]).
pub fn encode_batch(batch: &RecordBatch, out: &mut Vec<u8>) -> Result<()> {
    Rows::try_new(batch)?.write(0..batch.num_rows(), out);
    Ok(())
}

/// A batch prepared for encoding: one text encoder per column.
struct Rows<'a> {
    encoders: Vec<ColumnEncoder<'a>>,
    /// Reused when a field has to be quoted.
    scratch: Vec<u8>,
}

impl<'a> Rows<'a> {
    fn try_new(batch: &'a RecordBatch) -> Result<Self> {
        let encoders = batch
            .columns()
            .iter()
            .zip(batch.schema_ref().fields())
            .map(|(c, f)| ColumnEncoder::try_new(c.as_ref(), f, Flavor::Text))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            encoders,
            scratch: Vec::new(),
        })
    }

    fn write(&mut self, rows: Range<usize>, out: &mut Vec<u8>) {
        for row in rows {
            for (i, enc) in self.encoders.iter_mut().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                if enc.is_null(row) {
                    continue;
                }
                let start = out.len();
                enc.encode(row, out);
                if enc.may_need_quoting() {
                    quote_if_needed(out, start, &mut self.scratch);
                } else if out.len() == start {
                    // an empty binary value: not NULL
                    out.extend_from_slice(b"\"\"");
                }
            }
            out.push(b'\n');
        }
    }
}

/// Appends `field` as one CSV field: as it is, or, when it holds `,` `"` CR or LF, between `"`
/// with every `"` doubled. An empty field stays empty (what a row of values writes for SQL
/// NULL; the listings write it for "none").
#[inline]
pub fn push_field(out: &mut Vec<u8>, field: &[u8]) {
    if find_quoted(field).is_none() {
        out.extend_from_slice(field);
    } else {
        push_quoted(out, field);
    }
}

/// Quotes the field `buf[start..]` in place if it is empty or contains `,` `"` CR or LF.
#[inline]
fn quote_if_needed(buf: &mut Vec<u8>, start: usize, scratch: &mut Vec<u8>) {
    let field = &buf[start..];
    if field.is_empty() {
        buf.extend_from_slice(b"\"\"");
        return;
    }
    if !field.iter().any(|&b| needs_quoting(b)) {
        return;
    }
    scratch.clear();
    scratch.extend_from_slice(field);
    buf.truncate(start);
    push_quoted(buf, scratch);
}

/// Appends `field` between `"`, every `"` in it doubled.
#[inline]
fn push_quoted(out: &mut Vec<u8>, field: &[u8]) {
    out.reserve(field.len() + 2);
    out.push(b'"');
    for &b in field {
        if b == b'"' {
            out.push(b'"');
        }
        out.push(b);
    }
    out.push(b'"');
}

/// Whether a field holding byte `b` is quoted: `,`, `"`, CR or LF.
#[inline(always)]
pub(crate) fn needs_quoting(b: u8) -> bool {
    (b == b',') | (b == b'"') | (b == b'\r') | (b == b'\n')
}

/// The length of the field `field` as [`quote_if_needed`] leaves it.
#[inline]
pub(crate) fn quoted_len(field: &[u8]) -> usize {
    if field.is_empty() {
        return 2;
    }
    match find_quoted(field) {
        None => field.len(),
        Some(_) => field.len() + 2 + field.iter().filter(|&&b| b == b'"').count(),
    }
}

/// The position of the first byte of `bytes` that [`needs_quoting`], by whole blocks first
/// ([`format::block_has`]).
#[inline]
pub(crate) fn find_quoted(bytes: &[u8]) -> Option<usize> {
    let mut blocks = bytes.chunks_exact(format::SEARCH_BLOCK);
    let mut base = 0;
    for block in blocks.by_ref() {
        let block: &[u8; format::SEARCH_BLOCK] = block.try_into().expect("a whole block");
        if format::block_has(block, needs_quoting) {
            return block
                .iter()
                .position(|&b| needs_quoting(b))
                .map(|p| base + p);
        }
        base += format::SEARCH_BLOCK;
    }
    blocks
        .remainder()
        .iter()
        .position(|&b| needs_quoting(b))
        .map(|p| base + p)
}
