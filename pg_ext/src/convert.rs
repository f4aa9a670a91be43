//! Arrow columns → Postgres Datums, straight from the typed Arrow arrays (no intermediate
//! value type). The plan per column ([`ColumnPlan`]) is chosen once per scan from the Arrow
//! field and the column's declared Postgres type; per batch, each column gets a typed reader
//! ([`ColumnReader`]); per row, each reader makes one Datum in the current (per-tuple) memory
//! context.
//!
//! Type mapping (Iceberg → Arrow → Postgres):
//!
//! | Iceberg | Postgres |
//! |---|---|
//! | boolean | boolean |
//! | int, long | integer, bigint |
//! | float, double | real, double precision |
//! | decimal(P,S) | numeric(P,S) |
//! | date, time | date, time |
//! | timestamp, timestamptz | timestamp, timestamptz |
//! | timestamp_ns, timestamptz_ns | timestamp, timestamptz, truncated to microseconds (Postgres' resolution; the sub-microsecond digits are dropped, rounding towards negative infinity) |
//! | string | text (or varchar) |
//! | uuid | uuid |
//! | binary, fixed[L], geometry, geography | bytea (geometry/geography as WKB) |
//! | list of a primitive | an array of the element's type |
//! | struct, map, list of nested values, variant | jsonb (or json, or text holding JSON), in the core's JSON encoding (`icefloe_core::encode::value`) |
//! | unknown | text, always NULL |

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Field, FieldRef, Float32Type, Float64Type, Int32Type,
    Int64Type, Time64MicrosecondType, TimeUnit, TimestampMicrosecondType, TimestampNanosecondType,
};
use icefloe_core::encode::value::value_to_json;
use icefloe_core::scan::arrow_schema::ICEBERG_TYPE_KEY;
use pgrx::pg_sys::{self, Datum, Oid};

use crate::error::FdwError;
use crate::pgutil;

/// Days between 1970-01-01 and 2000-01-01.
const PG_EPOCH_OFFSET_DAYS: i32 = 10_957;
/// Microseconds between 1970-01-01 and 2000-01-01.
const PG_EPOCH_OFFSET_MICROS: i64 = crate::options::PG_EPOCH_OFFSET_MICROS;
/// Postgres' smallest valid date (4714-11-24 BC, Julian day 0), in days since 2000-01-01.
const PG_MIN_DATE: i32 = -2_451_545;
/// Postgres' largest valid date (5874897-12-31), in days since 2000-01-01.
const PG_MAX_DATE: i32 = 2_147_483_494 - 2_451_545 - 1;
/// Microseconds in a day (Postgres' time runs to 24:00:00 inclusive).
const USECS_PER_DAY: i64 = 86_400_000_000;
/// Postgres' smallest valid timestamp (4714-11-24 00:00:00 BC), in its own epoch.
const PG_MIN_TIMESTAMP: i64 = -211_813_488_000_000_000;
/// One past Postgres' largest valid timestamp (294277-01-01 00:00:00), in its own epoch.
const PG_END_TIMESTAMP: i64 = 9_223_371_331_200_000_000;

/// The kinds whose Datum is the value itself (a plain machine word, no allocation, no call
/// into Postgres), so it can be made on any thread ([`crate::prefill`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Plain {
    Bool,
    Int4,
    /// `int` read into a `bigint` column (a table whose column was promoted to `long`).
    Int4AsInt8,
    Int8,
    Float4,
    /// `float` read into a `double precision` column (promoted to `double`).
    Float4AsFloat8,
    Float8,
    Date,
    Time,
    /// Timestamps of either unit and either zone flag (the Datum is the same).
    Timestamp,
}

/// How one column's values become Datums.
#[derive(Debug, Clone)]
pub enum Kind {
    /// Always NULL (`unknown`).
    Null,
    /// A value that is its own Datum.
    Plain(Plain),
    /// Decimal128 → numeric, through numeric's input function at the column's typmod.
    Numeric(pgutil::InputFn),
    /// Utf8 → text or varchar.
    Text,
    /// Binary or fixed → bytea.
    Bytea,
    Uuid,
    /// Nested values and variants as JSON text, through the declared type's input function
    /// (`jsonb`, `json`) or as `text`.
    Json(Option<pgutil::InputFn>),
    /// A list of primitives → a one-dimensional array.
    Array(Box<ArrayPlan>),
}

/// How list elements become an array.
#[derive(Debug, Clone)]
pub struct ArrayPlan {
    /// How each element becomes a Datum.
    pub element: Kind,
    /// The list's element field.
    pub element_field: FieldRef,
    /// The element's Postgres type, with its `typlen`, `typbyval` and `typalign`.
    pub elem_type: Oid,
    pub elem_len: i16,
    pub elem_byval: bool,
    pub elem_align: std::os::raw::c_char,
}

/// The plan for one column of the foreign table.
#[derive(Debug, Clone)]
pub struct ColumnPlan {
    /// 0-based attribute index in the tuple slot.
    pub att_index: usize,
    /// Column index in the scan's batches.
    pub batch_index: usize,
    /// The column's Arrow field in the scan's schema.
    pub field: FieldRef,
    /// How its values become Datums.
    pub kind: Kind,
}

/// The Postgres type a field reads as by default: its OID, or for arrays the element's plan.
pub fn natural_type(field: &Field) -> Oid {
    let iceberg = field.metadata().get(ICEBERG_TYPE_KEY).map(String::as_str);
    match field.data_type() {
        DataType::Null => pg_sys::TEXTOID,
        DataType::Boolean => pg_sys::BOOLOID,
        DataType::Int32 => pg_sys::INT4OID,
        DataType::Int64 => pg_sys::INT8OID,
        DataType::Float32 => pg_sys::FLOAT4OID,
        DataType::Float64 => pg_sys::FLOAT8OID,
        DataType::Decimal128(..) => pg_sys::NUMERICOID,
        DataType::Date32 => pg_sys::DATEOID,
        DataType::Time64(_) => pg_sys::TIMEOID,
        DataType::Timestamp(_, None) => pg_sys::TIMESTAMPOID,
        DataType::Timestamp(_, Some(_)) => pg_sys::TIMESTAMPTZOID,
        DataType::Utf8 if iceberg == Some("variant") => pg_sys::JSONBOID,
        DataType::Utf8 => pg_sys::TEXTOID,
        DataType::FixedSizeBinary(16) if iceberg == Some("uuid") => pg_sys::UUIDOID,
        DataType::FixedSizeBinary(_) | DataType::Binary => pg_sys::BYTEAOID,
        DataType::List(elem) if is_array_element(elem) => {
            // SAFETY: a catalog lookup.
            unsafe { pg_sys::get_array_type(natural_type(elem)) }
        }
        _ => pg_sys::JSONBOID,
    }
}

/// The type modifier of a field's natural type: `numeric(P,S)` for decimals, else none (-1).
pub fn natural_typmod(field: &Field) -> i32 {
    match field.data_type() {
        DataType::Decimal128(p, s) => ((*p as i32) << 16 | (*s as i32 & 0x7ff)) + 4,
        DataType::List(elem) => natural_typmod(elem),
        _ => -1,
    }
}

/// Whether a declared type modifier keeps every value of `field` exactly: a `numeric(P,S)`
/// at least as wide on both sides of the point, and `time(p)`/`timestamp(p)` of 6 digits.
fn typmod_holds(field: &Field, typmod: i32) -> bool {
    if typmod < 0 {
        return true;
    }
    match field.data_type() {
        DataType::Decimal128(p, s) => {
            let t = typmod - 4;
            let precision = (t >> 16) & 0xffff;
            // The scale is an 11-bit signed field (negative scales exist since Postgres 15).
            let raw = t & 0x7ff;
            let scale = if raw & 0x400 != 0 { raw - 0x800 } else { raw };
            scale >= *s as i32 && precision - scale >= *p as i32 - *s as i32
        }
        DataType::Time64(_) | DataType::Timestamp(..) => typmod >= 6,
        _ => true,
    }
}

/// Whether a list element maps to a Postgres array element (a primitive, not a variant).
fn is_array_element(elem: &Field) -> bool {
    let variant = elem.metadata().get(ICEBERG_TYPE_KEY).map(String::as_str) == Some("variant");
    !variant
        && !matches!(
            elem.data_type(),
            DataType::Struct(_) | DataType::List(_) | DataType::Map(..) | DataType::LargeList(_)
        )
}

/// Chooses how `field` fills a column declared as `typid`/`typmod`; `None` if that type cannot
/// hold the field's values.
pub fn plan_kind(field: &FieldRef, typid: Oid, typmod: i32) -> Option<Kind> {
    let natural = natural_type(field);
    let json_like = natural == pg_sys::JSONBOID;
    if matches!(field.data_type(), DataType::Null) {
        return Some(Kind::Null);
    }
    if !matches!(field.data_type(), DataType::List(_)) && !typmod_holds(field, typmod) {
        return None;
    }
    if json_like || matches!(field.data_type(), DataType::List(_)) {
        if typid == pg_sys::JSONBOID || typid == pg_sys::JSONOID {
            return Some(Kind::Json(Some(pgutil::InputFn::new(typid, -1))));
        }
        if json_like && typid == pg_sys::TEXTOID {
            return Some(Kind::Json(None));
        }
    }
    // Iceberg's type promotions: older snapshots read into the promoted type.
    match (field.data_type(), typid) {
        (DataType::Int32, t) if t == pg_sys::INT8OID => {
            return Some(Kind::Plain(Plain::Int4AsInt8))
        }
        (DataType::Float32, t) if t == pg_sys::FLOAT8OID => {
            return Some(Kind::Plain(Plain::Float4AsFloat8))
        }
        _ => {}
    }
    if typid != natural {
        let text_like = natural == pg_sys::TEXTOID && typid == pg_sys::VARCHAROID && typmod < 0;
        if !text_like {
            return None;
        }
    }
    Some(match field.data_type() {
        DataType::Boolean => Kind::Plain(Plain::Bool),
        DataType::Int32 => Kind::Plain(Plain::Int4),
        DataType::Int64 => Kind::Plain(Plain::Int8),
        DataType::Float32 => Kind::Plain(Plain::Float4),
        DataType::Float64 => Kind::Plain(Plain::Float8),
        DataType::Decimal128(..) => Kind::Numeric(pgutil::InputFn::new(pg_sys::NUMERICOID, typmod)),
        DataType::Date32 => Kind::Plain(Plain::Date),
        DataType::Time64(TimeUnit::Microsecond) => Kind::Plain(Plain::Time),
        DataType::Timestamp(TimeUnit::Microsecond | TimeUnit::Nanosecond, _) => {
            Kind::Plain(Plain::Timestamp)
        }
        DataType::Utf8 => Kind::Text,
        DataType::FixedSizeBinary(16) if natural == pg_sys::UUIDOID => Kind::Uuid,
        DataType::FixedSizeBinary(_) | DataType::Binary => Kind::Bytea,
        DataType::List(elem) => {
            let elem_type = natural_type(elem);
            // An array column's typmod is its element's.
            let element = plan_kind(elem, elem_type, typmod)?;
            let (len, byval, align) = pgutil::typlenbyvalalign(elem_type);
            Kind::Array(Box::new(ArrayPlan {
                element,
                element_field: elem.clone(),
                elem_type,
                elem_len: len,
                elem_byval: byval,
                elem_align: align,
            }))
        }
        _ => return None,
    })
}

/// Reads one column of one batch: the typed Arrow array (a cheap reference-counted clone) for
/// each [`Kind`].
pub enum ColumnReader {
    Null,
    Bool(arrow::array::BooleanArray),
    Int4(arrow::array::Int32Array),
    Int4AsInt8(arrow::array::Int32Array),
    Int8(arrow::array::Int64Array),
    Float4(arrow::array::Float32Array),
    Float4AsFloat8(arrow::array::Float32Array),
    Float8(arrow::array::Float64Array),
    Numeric(arrow::array::Decimal128Array, i8, pgutil::InputFn, Vec<u8>),
    /// A string column and its name (for errors).
    Text(arrow::array::StringArray, String),
    /// A string column laid out as text varlenas (UTF-8 databases), and its nulls.
    TextLaidOut(crate::varlena::TextVarlenas, arrow::array::StringArray),
    Binary(arrow::array::BinaryArray),
    Fixed(arrow::array::FixedSizeBinaryArray),
    Uuid(arrow::array::FixedSizeBinaryArray),
    Date(arrow::array::Date32Array),
    Time(arrow::array::Time64MicrosecondArray),
    TimestampMicros(arrow::array::TimestampMicrosecondArray),
    TimestampNanos(arrow::array::TimestampNanosecondArray),
    Json {
        array: ArrayRef,
        field: FieldRef,
        input: Option<pgutil::InputFn>,
    },
    Array {
        list: arrow::array::ListArray,
        element: Box<ColumnReader>,
        plan: Box<ArrayPlan>,
        datums: Vec<Datum>,
        nulls: Vec<bool>,
    },
}

fn mismatch(field: &Field) -> FdwError {
    FdwError::Internal(format!(
        "column {} arrived as Arrow {} which its plan does not expect",
        field.name(),
        field.data_type()
    ))
}

impl ColumnReader {
    /// A reader of `array` (the batch's column) under `kind`.
    pub fn new(array: &ArrayRef, field: &FieldRef, kind: &Kind) -> Result<ColumnReader, FdwError> {
        let a = array.as_ref();
        Ok(match (kind, a.data_type()) {
            (Kind::Null, _) => ColumnReader::Null,
            (Kind::Plain(Plain::Bool), DataType::Boolean) => {
                ColumnReader::Bool(a.as_boolean().clone())
            }
            (Kind::Plain(Plain::Int4AsInt8), DataType::Int32) => {
                ColumnReader::Int4AsInt8(a.as_primitive::<Int32Type>().clone())
            }
            (Kind::Plain(Plain::Float4AsFloat8), DataType::Float32) => {
                ColumnReader::Float4AsFloat8(a.as_primitive::<Float32Type>().clone())
            }
            (Kind::Plain(Plain::Int4), DataType::Int32) => {
                ColumnReader::Int4(a.as_primitive::<Int32Type>().clone())
            }
            (Kind::Plain(Plain::Int8), DataType::Int64) => {
                ColumnReader::Int8(a.as_primitive::<Int64Type>().clone())
            }
            (Kind::Plain(Plain::Float4), DataType::Float32) => {
                ColumnReader::Float4(a.as_primitive::<Float32Type>().clone())
            }
            (Kind::Plain(Plain::Float8), DataType::Float64) => {
                ColumnReader::Float8(a.as_primitive::<Float64Type>().clone())
            }
            (Kind::Numeric(f), DataType::Decimal128(_, s)) => ColumnReader::Numeric(
                a.as_primitive::<Decimal128Type>().clone(),
                *s,
                f.clone(),
                Vec::new(),
            ),
            (Kind::Text, DataType::Utf8) => {
                let strings = a.as_string::<i32>().clone();
                if crate::varlena::TextVarlenas::usable(pgutil::database_is_utf8()) {
                    let laid = crate::varlena::TextVarlenas::new(&strings, field.name())?;
                    ColumnReader::TextLaidOut(laid, strings)
                } else {
                    ColumnReader::Text(strings, field.name().clone())
                }
            }
            (Kind::Bytea, DataType::Binary) => ColumnReader::Binary(a.as_binary::<i32>().clone()),
            (Kind::Bytea, DataType::FixedSizeBinary(_)) => {
                ColumnReader::Fixed(a.as_fixed_size_binary().clone())
            }
            (Kind::Uuid, DataType::FixedSizeBinary(16)) => {
                ColumnReader::Uuid(a.as_fixed_size_binary().clone())
            }
            (Kind::Plain(Plain::Date), DataType::Date32) => {
                ColumnReader::Date(a.as_primitive::<Date32Type>().clone())
            }
            (Kind::Plain(Plain::Time), DataType::Time64(TimeUnit::Microsecond)) => {
                ColumnReader::Time(a.as_primitive::<Time64MicrosecondType>().clone())
            }
            (Kind::Plain(Plain::Timestamp), DataType::Timestamp(TimeUnit::Microsecond, _)) => {
                ColumnReader::TimestampMicros(a.as_primitive::<TimestampMicrosecondType>().clone())
            }
            (Kind::Plain(Plain::Timestamp), DataType::Timestamp(TimeUnit::Nanosecond, _)) => {
                ColumnReader::TimestampNanos(a.as_primitive::<TimestampNanosecondType>().clone())
            }
            (Kind::Json(input), _) => ColumnReader::Json {
                array: array.clone(),
                field: field.clone(),
                input: input.clone(),
            },
            (Kind::Array(plan), DataType::List(_)) => {
                let list = a.as_list::<i32>().clone();
                let element = ColumnReader::new(list.values(), &plan.element_field, &plan.element)?;
                ColumnReader::Array {
                    list,
                    element: Box::new(element),
                    plan: plan.clone(),
                    datums: Vec::new(),
                    nulls: Vec::new(),
                }
            }
            _ => return Err(mismatch(field)),
        })
    }

    fn is_null(&self, row: usize) -> bool {
        match self {
            ColumnReader::Null => true,
            ColumnReader::Bool(a) => a.is_null(row),
            ColumnReader::Int4(a) | ColumnReader::Int4AsInt8(a) => a.is_null(row),
            ColumnReader::Int8(a) => a.is_null(row),
            ColumnReader::Float4(a) | ColumnReader::Float4AsFloat8(a) => a.is_null(row),
            ColumnReader::Float8(a) => a.is_null(row),
            ColumnReader::Numeric(a, ..) => a.is_null(row),
            ColumnReader::Text(a, _) | ColumnReader::TextLaidOut(_, a) => a.is_null(row),
            ColumnReader::Binary(a) => a.is_null(row),
            ColumnReader::Fixed(a) | ColumnReader::Uuid(a) => a.is_null(row),
            ColumnReader::Date(a) => a.is_null(row),
            ColumnReader::Time(a) => a.is_null(row),
            ColumnReader::TimestampMicros(a) => a.is_null(row),
            ColumnReader::TimestampNanos(a) => a.is_null(row),
            ColumnReader::Json { array, .. } => array.is_null(row),
            ColumnReader::Array { list, .. } => list.is_null(row),
        }
    }

    /// The Datum of `row`, or `None` for NULL. Allocates (text, numeric, arrays, ...) in the
    /// current memory context.
    pub fn datum(&mut self, row: usize) -> Result<Option<Datum>, FdwError> {
        if self.is_null(row) {
            return Ok(None);
        }
        Ok(Some(match self {
            ColumnReader::Null => return Ok(None),
            ColumnReader::Bool(a) => Datum::from(a.value(row)),
            ColumnReader::Int4(a) => Datum::from(a.value(row)),
            ColumnReader::Int4AsInt8(a) => Datum::from(a.value(row) as i64),
            ColumnReader::Int8(a) => Datum::from(a.value(row)),
            ColumnReader::Float4(a) => Datum::from(a.value(row).to_bits()),
            ColumnReader::Float4AsFloat8(a) => Datum::from((a.value(row) as f64).to_bits()),
            ColumnReader::Float8(a) => Datum::from(a.value(row).to_bits()),
            ColumnReader::Numeric(a, scale, input, buf) => {
                buf.clear();
                icefloe_core::encode::format::push_decimal(buf, a.value(row), *scale);
                input.call(buf)?
            }
            ColumnReader::Text(a, name) => {
                let v = a.value(row);
                if v.as_bytes().contains(&0) {
                    return Err(FdwError::Unrepresentable(format!(
                        "a value of column {name} holds a NUL byte, which Postgres text cannot store"
                    )));
                }
                pgutil::text_datum(v.as_bytes())
            }
            ColumnReader::TextLaidOut(t, _) => t.datum(row),
            ColumnReader::Binary(a) => pgutil::bytea_datum(a.value(row)),
            ColumnReader::Fixed(a) => pgutil::bytea_datum(a.value(row)),
            ColumnReader::Uuid(a) => pgutil::uuid_datum(a.value(row)),
            ColumnReader::Date(a) => {
                let d = date_word(a.value(row)).ok_or_else(|| {
                    FdwError::OutOfRange(format!(
                        "date {} days after 1970-01-01 is out of Postgres' range (4714-11-24 BC to 5874897-12-31)",
                        a.value(row)
                    ))
                })?;
                Datum::from(d)
            }
            ColumnReader::Time(a) => {
                let t = a.value(row);
                let w = time_word(t).ok_or_else(|| {
                    FdwError::OutOfRange(format!(
                        "time {t} µs after midnight is out of Postgres' range (00:00 to 24:00)"
                    ))
                })?;
                Datum::from(w)
            }
            ColumnReader::TimestampMicros(a) => timestamp_datum(a.value(row))?,
            ColumnReader::TimestampNanos(a) => timestamp_datum(a.value(row).div_euclid(1000))?,
            ColumnReader::Json {
                array,
                field,
                input,
            } => {
                let text = value_to_json(array.as_ref(), field, row)?;
                match input {
                    Some(f) => f.call(text.as_bytes())?,
                    None => pgutil::text_datum(text.as_bytes()),
                }
            }
            ColumnReader::Array {
                list,
                element,
                plan,
                datums,
                nulls,
            } => {
                let offsets = list.value_offsets();
                let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
                datums.clear();
                nulls.clear();
                for i in start..end {
                    match element.datum(i)? {
                        Some(d) => {
                            datums.push(d);
                            nulls.push(false);
                        }
                        None => {
                            datums.push(Datum::from(0usize));
                            nulls.push(true);
                        }
                    }
                }
                pgutil::array_datum(datums, nulls, plan)
            }
        }))
    }
}

/// Days since 1970 → a Postgres date's Datum word, `None` outside Postgres' range.
pub(crate) fn date_word(days: i32) -> Option<usize> {
    days.checked_sub(PG_EPOCH_OFFSET_DAYS)
        .filter(|d| (PG_MIN_DATE..=PG_MAX_DATE).contains(d))
        .map(|d| d as usize)
}

/// Microseconds after midnight → a Postgres time's Datum word, `None` outside 00:00–24:00.
pub(crate) fn time_word(micros: i64) -> Option<usize> {
    (0..=USECS_PER_DAY)
        .contains(&micros)
        .then_some(micros as usize)
}

/// Microseconds since 1970 → a Postgres timestamp(tz)'s Datum word, `None` out of range.
pub(crate) fn timestamp_word(micros: i64) -> Option<usize> {
    timestamp_datum(micros).ok().map(|d| d.value())
}

/// Microseconds since 1970 → a Postgres timestamp(tz) Datum; out-of-range values are errors.
fn timestamp_datum(micros: i64) -> Result<Datum, FdwError> {
    let pg = micros
        .checked_sub(PG_EPOCH_OFFSET_MICROS)
        .filter(|v| (PG_MIN_TIMESTAMP..PG_END_TIMESTAMP).contains(v))
        .ok_or_else(|| {
            FdwError::OutOfRange(format!(
                "timestamp {micros} µs after 1970-01-01 is out of Postgres' range (4713 BC to 294276 AD)"
            ))
        })?;
    Ok(Datum::from(pg))
}
