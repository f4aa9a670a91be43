//! A batch's strings laid out once as Postgres `text` values (4-byte-header varlenas) in one
//! buffer, so a row's Datum is a pointer into it: no allocation, encoding check or call into
//! Postgres per value (each such call costs a `sigsetjmp` guard).
//!
//! Only for UTF-8 databases (the bytes need no conversion) on little-endian targets (where the
//! 4-byte varlena header is `size << 2`). The Datums stay valid while the buffer lives: the
//! scan keeps it until it moves to the next batch, after every row of this one was returned
//! (the executor's contract: a scan's tuple is valid until its next call).

use arrow::array::{Array, StringArray};
use pgrx::pg_sys::Datum;

use crate::error::FdwError;

/// Largest text value Postgres stores (`MaxAllocSize` less the header), bytes.
const MAX_TEXT_BYTES: usize = 0x3fff_ffff - 4;

/// The strings of one batch column as text varlenas.
pub struct TextVarlenas {
    /// The varlenas, each starting at a 4-byte boundary (`text` has int alignment).
    buf: Vec<u32>,
    /// Where row `i`'s varlena starts in `buf` (in `u32` units); unused for nulls.
    starts: Vec<usize>,
}

impl TextVarlenas {
    /// Whether this layout can be used: a UTF-8 database on a little-endian target.
    pub fn usable(database_is_utf8: bool) -> bool {
        database_is_utf8 && cfg!(target_endian = "little")
    }

    /// Lays out every non-null value of `a`. Errors when a value holds a NUL byte (Postgres
    /// text cannot store it) or is longer than Postgres allows, naming column `name`.
    pub fn new(a: &StringArray, name: &str) -> Result<TextVarlenas, FdwError> {
        check_no_nul(a, name)?;
        let words: usize = (0..a.len())
            .filter(|&i| a.is_valid(i))
            .map(|i| (4 + a.value(i).len()).div_ceil(4))
            .sum();
        let mut buf = vec![0u32; words];
        let mut starts = Vec::with_capacity(a.len());
        let mut at = 0usize;
        for i in 0..a.len() {
            starts.push(at);
            if a.is_null(i) {
                continue;
            }
            let v = a.value(i).as_bytes();
            if v.len() > MAX_TEXT_BYTES {
                return Err(FdwError::Unrepresentable(format!(
                    "a value of column {name} is {} bytes, longer than Postgres text allows",
                    v.len()
                )));
            }
            let total = 4 + v.len();
            buf[at] = (total as u32) << 2;
            let bytes = bytemuck_words(&mut buf[at..at + total.div_ceil(4)]);
            bytes[4..total].copy_from_slice(v);
            at += total.div_ceil(4);
        }
        Ok(TextVarlenas { buf, starts })
    }

    /// The Datum of row `row` (a non-null row).
    pub fn datum(&self, row: usize) -> Datum {
        Datum::from(self.buf[self.starts[row]..].as_ptr() as *const u8 as usize)
    }
}

/// `words` as bytes.
fn bytemuck_words(words: &mut [u32]) -> &mut [u8] {
    // SAFETY: u8 has no alignment or validity requirements; the length covers the same bytes.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr() as *mut u8, words.len() * 4) }
}

/// One search over the batch's string bytes; a NUL found is an error only if it lies in a
/// non-null value.
fn check_no_nul(a: &StringArray, name: &str) -> Result<(), FdwError> {
    let offsets = a.value_offsets();
    let (first, last) = (offsets[0] as usize, offsets[a.len()] as usize);
    let data = &a.value_data()[first..last];
    if !data.contains(&0) {
        return Ok(());
    }
    let mut from = 0;
    while let Some(p) = data[from..].iter().position(|&b| b == 0) {
        let at = first + from + p;
        // The row whose value holds byte `at`: the last offset at or before it.
        let row = offsets.partition_point(|&o| o as usize <= at) - 1;
        if row < a.len() && a.is_valid(row) && (offsets[row + 1] as usize) > at {
            return Err(FdwError::Unrepresentable(format!(
                "a value of column {name} holds a NUL byte, which Postgres text cannot store"
            )));
        }
        from += p + 1;
    }
    Ok(())
}
