//! A batch's plain columns turned into Datums on the thread that decoded it, not on the
//! backend's: the values of booleans, integers, floats, dates, times and timestamps, and
//! strings laid out as text varlenas ([`crate::varlena`]). None of that calls into Postgres,
//! so it runs beside the decoding ([`icefloe_core::Scan::read_splits_mapped`]) and the
//! backend only copies each row's Datums into the tuple slot. Every other column (numeric,
//! bytea, uuid, JSON, arrays) is converted per row on the backend ([`crate::convert`]).
//!
//! A column whose batch has a value without a Datum (a date outside Postgres' range) is left
//! to the per-row path, which raises that error at its row: a query that stops earlier
//! (`LIMIT`) never sees it.

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{
    DataType, Date32Type, Float32Type, Float64Type, Int32Type, Int64Type, Time64MicrosecondType,
    TimeUnit, TimestampMicrosecondType, TimestampNanosecondType,
};
use arrow::record_batch::RecordBatch;

use crate::convert::{ColumnPlan, Kind, Plain};
use crate::error::FdwError;
use crate::varlena::TextVarlenas;

/// The columns a scan converts ahead, one entry per [`ColumnPlan`] (`None`: per row).
#[derive(Debug, Clone)]
pub struct PrefillPlan {
    columns: Vec<Option<Column>>,
}

#[derive(Debug, Clone)]
struct Column {
    batch_index: usize,
    fill: Fill,
    /// The column's name, for errors.
    name: String,
}

/// What a column's Datums are made from.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fill {
    /// Values that are their own Datums.
    Plain(Plain),
    /// Strings as text varlenas (a UTF-8 database only).
    Text,
}

impl PrefillPlan {
    /// The plan for a scan's columns; strings are laid out ahead only in a UTF-8 database
    /// (`database_is_utf8`), where their bytes need no conversion.
    pub fn new(plans: &[ColumnPlan], database_is_utf8: bool) -> PrefillPlan {
        let columns = plans
            .iter()
            .map(|p| {
                let fill = match &p.kind {
                    Kind::Plain(plain) => Fill::Plain(*plain),
                    Kind::Text if TextVarlenas::usable(database_is_utf8) => Fill::Text,
                    _ => return None,
                };
                Some(Column {
                    batch_index: p.batch_index,
                    fill,
                    name: p.field.name().clone(),
                })
            })
            .collect();
        PrefillPlan { columns }
    }
}

/// One column of a batch as Datum words (`Datum::from(word)`) and nulls, one per row.
#[derive(Default)]
pub struct Filled {
    pub words: Vec<usize>,
    pub nulls: Vec<bool>,
}

/// A batch with its plain columns converted ([`prefill`]).
pub struct Prefilled {
    /// The batch, for the columns converted per row.
    pub batch: RecordBatch,
    /// Per [`ColumnPlan`], its converted column, or `None`.
    pub columns: Vec<Option<Filled>>,
    /// The text varlenas the converted string columns' words point into: kept as long as
    /// they are (the scan keeps a batch until every row of it was returned).
    _texts: Vec<TextVarlenas>,
}

/// Converts the columns of `batch` that `plan` converts ahead. Errors when a string holds a
/// NUL byte or is longer than Postgres text allows.
pub fn prefill(plan: &PrefillPlan, batch: RecordBatch) -> Result<Prefilled, FdwError> {
    let mut texts = Vec::new();
    let mut columns = Vec::with_capacity(plan.columns.len());
    for c in &plan.columns {
        let Some(c) = c else {
            columns.push(None);
            continue;
        };
        let array = batch.column(c.batch_index);
        let mut out = Filled::default();
        let done = match c.fill {
            Fill::Text => match array.as_string_opt::<i32>() {
                Some(strings) => {
                    let laid = TextVarlenas::new(strings, &c.name)?;
                    fill_text(strings, &laid, &mut out);
                    texts.push(laid);
                    true
                }
                None => false,
            },
            Fill::Plain(plain) => fill_plain(array, plain, &mut out),
        };
        columns.push(done.then_some(out));
    }
    Ok(Prefilled {
        batch,
        columns,
        _texts: texts,
    })
}

/// Fills `out` with the Datum words of `a`'s strings, laid out in `laid`.
fn fill_text(a: &arrow::array::StringArray, laid: &TextVarlenas, out: &mut Filled) {
    out.words.reserve(a.len());
    out.nulls.reserve(a.len());
    for i in 0..a.len() {
        let null = a.is_null(i);
        out.words.push(if null { 0 } else { laid.datum(i).value() });
        out.nulls.push(null);
    }
}

/// The nulls of an array of `len` values into `out`, one `bool` per value.
fn fill_nulls(nulls: Option<&arrow::buffer::NullBuffer>, len: usize, out: &mut Filled) {
    match nulls.filter(|n| n.null_count() > 0) {
        None => out.nulls.resize(len, false),
        Some(n) => out.nulls.extend(n.iter().map(|valid| !valid)),
    }
}

/// Converts every value of `a` with `f`, which every value has: one pass over the values
/// (a null slot gets a word too, which nothing reads) and one over the nulls.
fn fill_total<T: arrow::datatypes::ArrowPrimitiveType>(
    a: &arrow::array::PrimitiveArray<T>,
    out: &mut Filled,
    f: impl Fn(T::Native) -> usize,
) -> bool {
    out.words.extend(a.values().iter().map(|v| f(*v)));
    fill_nulls(a.nulls(), a.len(), out);
    true
}

/// Converts every non-null value of `a` with `f`; `false` as soon as one has no Datum.
fn fill_checked<T: arrow::datatypes::ArrowPrimitiveType>(
    a: &arrow::array::PrimitiveArray<T>,
    out: &mut Filled,
    f: impl Fn(T::Native) -> Option<usize>,
) -> bool {
    out.words.reserve(a.len());
    for (i, v) in a.values().iter().enumerate() {
        // A null slot holds whatever its writer left there: it is never checked.
        if a.is_null(i) {
            out.words.push(0);
        } else {
            match f(*v) {
                Some(d) => out.words.push(d),
                None => return false,
            }
        }
    }
    fill_nulls(a.nulls(), a.len(), out);
    true
}

/// Fills `out` from `a` as `plain` values; `false` when the array is not of the type the plan
/// expects (the per-row reader then names the mismatch) or a value has no Datum.
fn fill_plain(a: &ArrayRef, plain: Plain, out: &mut Filled) -> bool {
    use crate::convert::{date_word, time_word, timestamp_word};
    match (plain, a.data_type()) {
        (Plain::Bool, DataType::Boolean) => {
            let a = a.as_boolean();
            out.words.extend(a.values().iter().map(usize::from));
            fill_nulls(a.nulls(), a.len(), out);
            true
        }
        (Plain::Int4, DataType::Int32) => {
            // A Datum holds an int4 sign-extended, as Int32GetDatum does.
            fill_total(a.as_primitive::<Int32Type>(), out, |v| v as isize as usize)
        }
        (Plain::Int4AsInt8, DataType::Int32) => {
            fill_total(a.as_primitive::<Int32Type>(), out, |v| v as i64 as usize)
        }
        (Plain::Int8, DataType::Int64) => {
            fill_total(a.as_primitive::<Int64Type>(), out, |v| v as usize)
        }
        (Plain::Float4, DataType::Float32) => {
            fill_total(a.as_primitive::<Float32Type>(), out, |v| {
                v.to_bits() as usize
            })
        }
        (Plain::Float4AsFloat8, DataType::Float32) => {
            fill_total(a.as_primitive::<Float32Type>(), out, |v| {
                (v as f64).to_bits() as usize
            })
        }
        (Plain::Float8, DataType::Float64) => {
            fill_total(a.as_primitive::<Float64Type>(), out, |v| {
                v.to_bits() as usize
            })
        }
        (Plain::Date, DataType::Date32) => {
            fill_checked(a.as_primitive::<Date32Type>(), out, date_word)
        }
        (Plain::Time, DataType::Time64(TimeUnit::Microsecond)) => {
            fill_checked(a.as_primitive::<Time64MicrosecondType>(), out, time_word)
        }
        (Plain::Timestamp, DataType::Timestamp(TimeUnit::Microsecond, _)) => fill_checked(
            a.as_primitive::<TimestampMicrosecondType>(),
            out,
            timestamp_word,
        ),
        (Plain::Timestamp, DataType::Timestamp(TimeUnit::Nanosecond, _)) => {
            fill_checked(a.as_primitive::<TimestampNanosecondType>(), out, |v| {
                timestamp_word(v.div_euclid(1000))
            })
        }
        _ => false,
    }
}
