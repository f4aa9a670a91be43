//! Byte lengths of the CSV and JSON Lines encodings of a batch, without producing the text: the
//! length pass that sizes a view of rows (the mount's `data.csv`) at a fraction of the cost of
//! rendering it.
//!
//! Every length follows the encoders' rules: the length twins of the value formats sit next to
//! them in [`super::format`], CSV quoting in [`super::csv`]. Integers and decimals are digit
//! counts, dates, times and timestamps with four-digit years fixed widths, strings their byte
//! lengths plus the quoting (CSV) or escaping (JSON) found by a block-wise byte search. What has
//! no cheap length (floats off the short-decimal path, expanded years, nested values) is
//! formatted into one reused scratch buffer and measured, so nothing is allocated per value.

use arrow::array::{Array, GenericStringArray, OffsetSizeTrait};
use arrow::buffer::NullBuffer;
use arrow::record_batch::RecordBatch;

use super::csv::{find_quoted, quoted_len};
use super::format;
use super::value::{ColumnEncoder, Flavor, Node};
use crate::error::Result;

/// The number of bytes [`super::csv::encode_batch`] appends for `batch`.
///
/// # Errors
/// As [`super::csv::encode_batch`]: a column that cannot be encoded.
pub fn csv_batch_len(batch: &RecordBatch) -> Result<u64> {
    let n = batch.num_rows();
    // A `,` between fields and `\n` after each row (a row without columns is just `\n`).
    let mut total = n as u64 * batch.num_columns().max(1) as u64;
    let mut scratch = Vec::new();
    for (c, f) in batch.columns().iter().zip(batch.schema_ref().fields()) {
        let mut enc = ColumnEncoder::try_new(c.as_ref(), f, Flavor::Text)?;
        total += column_len(&mut enc, n, &mut scratch);
    }
    Ok(total)
}

/// The number of bytes [`super::jsonl::encode_batch`] appends for `batch`.
///
/// # Errors
/// As [`super::jsonl::encode_batch`]: a column that cannot be encoded.
pub fn jsonl_batch_len(batch: &RecordBatch) -> Result<u64> {
    let n = batch.num_rows();
    let fields = batch.schema_ref().fields();
    // `{"name":` or `,"name":` before each value, `}\n` after the row (`{}\n` if no column).
    let mut per_row = if fields.is_empty() { 3 } else { 2 };
    for f in fields {
        per_row += 4 + format::json_escaped_len(f.name().as_bytes()) as u64;
    }
    let mut total = n as u64 * per_row;
    let mut scratch = Vec::new();
    for (c, f) in batch.columns().iter().zip(fields) {
        let mut enc = ColumnEncoder::try_new(c.as_ref(), f, Flavor::Json)?;
        total += column_len(&mut enc, n, &mut scratch);
    }
    Ok(total)
}

/// The bytes the encoder writes for rows `0..n` of its column (CSV quoting included in the text
/// flavour; no separators).
fn column_len(col: &mut ColumnEncoder<'_>, n: usize, scratch: &mut Vec<u8>) -> u64 {
    let json = col.json;
    if col.enc.all_null {
        return if json { 4 * n as u64 } else { 0 };
    }
    let nulls = col.enc.nulls.clone();
    let null_count = nulls.as_ref().map_or(0, |nb| nb.null_count());
    // SQL NULL is `null` in JSON and nothing in CSV.
    let null_bytes = if json { 4 * null_count as u64 } else { 0 };
    if let Some(t) = leaf_len(&col.enc.node, nulls.as_ref(), n, json, scratch) {
        return t + null_bytes;
    }
    // Nested values: rendered as the encoder renders them, and measured.
    let may_quote = col.may_need_quoting;
    let enc = &mut col.enc;
    null_bytes
        + sum_valid(nulls.as_ref(), n, |i| {
            scratch.clear();
            enc.write(i, scratch, json);
            if json {
                scratch.len()
            } else if may_quote {
                quoted_len(scratch)
            } else {
                unquoted_len(scratch.len())
            }
        })
}

/// A CSV field that is never quoted: an empty one is written `""` (not NULL).
#[inline]
fn unquoted_len(len: usize) -> usize {
    if len == 0 {
        2
    } else {
        len
    }
}

/// Sums `f` over the non-null rows of `0..n`.
#[inline]
fn sum_valid(nulls: Option<&NullBuffer>, n: usize, mut f: impl FnMut(usize) -> usize) -> u64 {
    let mut total = 0u64;
    match nulls {
        Some(nb) if nb.null_count() > 0 => {
            for i in nb.valid_indices() {
                total += f(i) as u64;
            }
        }
        _ => {
            for i in 0..n {
                total += f(i) as u64;
            }
        }
    }
    total
}

/// The bytes of the non-null values of a leaf column, `None` for nested columns.
fn leaf_len(
    node: &Node<'_>,
    nulls: Option<&NullBuffer>,
    n: usize,
    json: bool,
    scratch: &mut Vec<u8>,
) -> Option<u64> {
    // String-like leaves are quoted in JSON.
    let q = if json { 2 } else { 0 };
    macro_rules! sum {
        ($f:expr) => {
            sum_valid(nulls, n, $f)
        };
    }
    // Formats a value into the scratch buffer and measures it.
    fn measured(scratch: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) -> usize {
        scratch.clear();
        write(scratch);
        scratch.len()
    }
    let hex = |len: usize| {
        if json {
            2 * len + 2
        } else {
            unquoted_len(2 * len)
        }
    };
    Some(match node {
        Node::Null => 0,
        Node::Bool(b) => sum!(|i| if b.value(i) { 4 } else { 5 }),
        Node::I8(v) => sum!(|i| format::int_len(v[i].into())),
        Node::I16(v) => sum!(|i| format::int_len(v[i].into())),
        Node::I32(v) => sum!(|i| format::int_len(v[i].into())),
        Node::I64(v) => sum!(|i| format::int_len(v[i])),
        Node::U8(v) => sum!(|i| format::digits_u64(v[i].into())),
        Node::U16(v) => sum!(|i| format::digits_u64(v[i].into())),
        Node::U32(v) => sum!(|i| format::digits_u64(v[i].into())),
        Node::U64(v) => sum!(|i| format::digits_u64(v[i])),
        Node::F32(v) => sum!(|i| format::f64_len(f64::from(v[i]), json, scratch)),
        Node::F64(v) => sum!(|i| format::f64_len(v[i], json, scratch)),
        Node::Dec32(v, s) => sum!(|i| format::decimal_len(v[i].into(), *s) + q),
        Node::Dec64(v, s) => sum!(|i| format::decimal_len(v[i].into(), *s) + q),
        Node::Dec128(v, s) => sum!(|i| format::decimal_len(v[i], *s) + q),
        Node::Date32(v) => sum!(|i| {
            let d = i64::from(v[i]);
            q + format::date_len(d)
                .unwrap_or_else(|| measured(scratch, |o| format::push_date(o, d)))
        }),
        Node::Time32(v, u) => sum!(|i| {
            let t = i64::from(v[i]);
            q + format::time_len(t, *u)
                .unwrap_or_else(|| measured(scratch, |o| format::push_time(o, t, *u)))
        }),
        Node::Time64(v, u) => sum!(|i| {
            q + format::time_len(v[i], *u)
                .unwrap_or_else(|| measured(scratch, |o| format::push_time(o, v[i], *u)))
        }),
        Node::Timestamp(v, u, utc) => {
            let fixed = format::fixed_timestamps(*u);
            let width = format::timestamp_len(*u, *utc);
            sum!(|i| {
                q + if fixed.contains(&v[i]) {
                    width
                } else {
                    measured(scratch, |o| format::push_timestamp(o, v[i], *u, *utc))
                }
            })
        }
        Node::Str(a) => strings_len(a, nulls, json),
        Node::LargeStr(a) => strings_len(a, nulls, json),
        Node::StrView(a) => sum!(|i| string_len(a.value(i).as_bytes(), json)),
        Node::Json(a) => sum!(|i| json_text_len(a.value(i), json)),
        Node::LargeJson(a) => sum!(|i| json_text_len(a.value(i), json)),
        Node::JsonView(a) => sum!(|i| json_text_len(a.value(i), json)),
        Node::JsonOwned(a) => sum!(|i| json_text_len(a.value(i), json)),
        Node::Bin(a) => sum!(|i| hex(a.value(i).len())),
        Node::LargeBin(a) => sum!(|i| hex(a.value(i).len())),
        Node::BinView(a) => sum!(|i| hex(a.value(i).len())),
        Node::Fixed(a) => sum!(|i| hex(a.value(i).len())),
        Node::Uuid(a) => sum!(|i| match a.value(i).len() {
            16 => 36 + q,
            len => hex(len),
        }),
        Node::Struct(_)
        | Node::List(..)
        | Node::LargeList(..)
        | Node::FixedList(..)
        | Node::Map(_) => return None,
    })
}

/// One string: JSON-escaped and quoted, or CSV-quoted where needed.
#[inline]
fn string_len(bytes: &[u8], json: bool) -> usize {
    if json {
        2 + format::json_escaped_len(bytes)
    } else {
        quoted_len(bytes)
    }
}

/// A variant's JSON text, embedded as is (an empty one is `null`), CSV-quoted where needed.
#[inline]
fn json_text_len(text: &str, json: bool) -> usize {
    let bytes: &[u8] = if text.is_empty() {
        b"null"
    } else {
        text.as_bytes()
    };
    if json {
        bytes.len()
    } else {
        quoted_len(bytes)
    }
}

/// The non-null values of a string column. Without nulls the value bytes are one run, searched
/// once for bytes to quote or escape; the few values that hold one are then found by their
/// offsets.
fn strings_len<O: OffsetSizeTrait>(
    a: &GenericStringArray<O>,
    nulls: Option<&NullBuffer>,
    json: bool,
) -> u64 {
    let n = a.len();
    if n == 0 {
        return 0;
    }
    if nulls.is_some_and(|nb| nb.null_count() > 0) {
        // Null slots may hold bytes that are never written: value by value.
        return sum_valid(nulls, n, |i| string_len(a.value(i).as_bytes(), json));
    }
    let offsets = a.value_offsets();
    let data = a.value_data();
    let (start, end) = (offsets[0].as_usize(), offsets[n].as_usize());
    let bytes = &data[start..end];
    if json {
        return (2 * n + format::json_escaped_len(bytes)) as u64;
    }
    let empties = offsets.windows(2).filter(|w| w[0] == w[1]).count();
    let mut total = bytes.len() + 2 * empties;
    let mut pos = 0;
    while let Some(p) = find_quoted(&bytes[pos..]) {
        let at = start + pos + p;
        // The value holding byte `at`: the last one starting at or before it.
        let i = offsets.partition_point(|o| o.as_usize() <= at) - 1;
        let value = &data[offsets[i].as_usize()..offsets[i + 1].as_usize()];
        total += 2 + value.iter().filter(|&&b| b == b'"').count();
        pos = offsets[i + 1].as_usize() - start;
    }
    total as u64
}
