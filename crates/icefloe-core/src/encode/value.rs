//! Per-column value encoders: the JSON (and CSV text) encoding of every value of an Arrow column.
//!
//! A [`ColumnEncoder`] is built once per batch and column: it inspects the data type and field
//! metadata once, downcasts once (also for every nested child), and then appends row after row
//! to a caller-owned `Vec<u8>` without allocating per value. Map columns keep one reusable
//! scratch buffer to sort their entries.
//!
//! # Encoding (the fixture README, "How values are encoded")
//!
//! | Arrow type (Iceberg type) | [`Flavor::Json`] | [`Flavor::Text`] (top level) |
//! |---|---|---|
//! | Null (`unknown`) | `null` | empty |
//! | Boolean | `true` / `false` | same |
//! | Int8…Int64, UInt8…UInt64 (`int`, `long`) | number | same |
//! | Float32, Float64 (`float`, `double`) | shortest repr, float widened to double ([`format::push_f64`]); `"NaN"`, `"Infinity"`, `"-Infinity"` | bare `NaN`, `Infinity`, `-Infinity` |
//! | Decimal32/64/128(p, s) | `"-0.01"` (exactly s fraction digits) | bare |
//! | Date32 | `"YYYY-MM-DD"` | bare |
//! | Time32/Time64 | `"HH:MM:SS.ffffff"` (µs), 9 digits for ns | bare |
//! | Timestamp(unit, None) | `"YYYY-MM-DDTHH:MM:SS.ffffff"` | bare |
//! | Timestamp(unit, Some(_)) | the same + `+00:00` (values are UTC instants) | bare |
//! | Utf8, LargeUtf8, Utf8View | JSON string | raw text |
//! | Utf8 with `iceberg.type` = `variant` | the JSON text embedded as is | the JSON text |
//! | Struct with `iceberg.type` = `variant` (binary `metadata`, `value`) | decoded by [`super::variant`] and embedded | the JSON text |
//! | FixedSizeBinary(16) with `iceberg.type` = `uuid` (or extension `arrow.uuid`) | `"xxxxxxxx-xxxx-…"` | bare |
//! | Binary, LargeBinary, BinaryView, FixedSizeBinary (`binary`, `fixed`, geometry, geography) | `"00ff…"` lowercase hex | bare |
//! | Struct | `{"field":value,…}` in field order | JSON text |
//! | List, LargeList, FixedSizeList | `[…]` | JSON text |
//! | Map | `[{"key":…,"value":…},…]` sorted by the key's JSON text (byte order; stable) | JSON text |
//!
//! Nested values always use the JSON encoding, whatever the flavour.

use arrow::array::{
    Array, AsArray, BinaryArray, BinaryViewArray, FixedSizeBinaryArray, FixedSizeListArray,
    LargeBinaryArray, LargeStringArray, StringArray, StringViewArray,
};
use arrow::buffer::{BooleanBuffer, NullBuffer};
use arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Decimal32Type, Decimal64Type, Field, Float32Type,
    Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, Time32MillisecondType,
    Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};

use super::format;
use crate::error::{Error, Result};

/// Field metadata key naming the Iceberg type where the Arrow type alone is ambiguous.
pub const ICEBERG_TYPE_KEY: &str = "iceberg.type";

/// Which text a [`ColumnEncoder`] writes for top-level values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// A JSON value: strings and string-like values quoted and escaped, SQL NULL as `null`.
    Json,
    /// CSV cell text: the same characters without JSON quoting for strings, decimals, dates,
    /// times, timestamps, UUIDs and hex; `NaN`/`Infinity` bare; SQL NULL writes nothing.
    /// Nested values (struct, list, map) and variants are JSON text. The caller applies CSV
    /// quoting.
    Text,
}

/// Encodes the values of one Arrow column, row by row. See the [module docs](self) for the
/// encoding of each type.
///
/// Built per batch ([`ColumnEncoder::try_new`]): it borrows the array. Cheap to build (a few
/// small allocations per column and nesting level), cheap per value (one `match`, no
/// allocation, no downcast).
pub struct ColumnEncoder<'a> {
    pub(super) enc: Enc<'a>,
    pub(super) json: bool,
    pub(super) may_need_quoting: bool,
}

impl<'a> ColumnEncoder<'a> {
    /// Prepares an encoder for `array`, described by `field` (the schema field of the column:
    /// its metadata marks `uuid` and `variant` columns, and its nested fields those of nested
    /// columns).
    ///
    /// # Errors
    /// [`Error::Output`] for Arrow types outside the schema contract (dictionary, union,
    /// run-end encoded, intervals, durations, Float16, Decimal256, Date64); a variant struct
    /// column whose bytes are not valid variants; [`Error::Unsupported`] for shredded variants.
    pub fn try_new(array: &'a dyn Array, field: &Field, flavor: Flavor) -> Result<Self> {
        let enc = build(array, field)?;
        let may_need_quoting = matches!(
            enc.node,
            Node::Str(_)
                | Node::LargeStr(_)
                | Node::StrView(_)
                | Node::Json(_)
                | Node::LargeJson(_)
                | Node::JsonView(_)
                | Node::JsonOwned(_)
                | Node::Struct(_)
                | Node::List(..)
                | Node::LargeList(..)
                | Node::FixedList(..)
                | Node::Map(_)
        );
        Ok(Self {
            enc,
            json: flavor == Flavor::Json,
            may_need_quoting,
        })
    }

    /// Whether the value of `row` is SQL NULL (always true for a Null-typed column).
    #[inline]
    pub fn is_null(&self, row: usize) -> bool {
        self.enc.is_null(row)
    }

    /// Appends the encoding of `row` to `out`. A NULL writes `null` in [`Flavor::Json`] and
    /// nothing in [`Flavor::Text`] (use [`Self::is_null`] to tell NULL from an empty string).
    ///
    /// `row` must be below the array's length (panics otherwise, like Arrow's accessors).
    #[inline]
    pub fn encode(&mut self, row: usize, out: &mut Vec<u8>) {
        if self.json {
            self.enc.write(row, out, true);
        } else if !self.enc.is_null(row) {
            self.enc.write(row, out, false);
        }
    }

    /// Whether this column's [`Flavor::Text`] can contain a comma, a double quote, CR or LF
    /// (strings, variants and nested values); numbers, dates, hex and the like never do.
    #[inline]
    pub fn may_need_quoting(&self) -> bool {
        self.may_need_quoting
    }
}

/// Encodes a single value as JSON text (`null` for NULL): for front-ends that show one value
/// at a time. Prefer [`ColumnEncoder`] for whole columns.
///
/// # Errors
/// As [`ColumnEncoder::try_new`]; [`Error::InvalidArgument`] if `row` is out of range.
pub fn value_to_json(array: &dyn Array, field: &Field, row: usize) -> Result<String> {
    if row >= array.len() {
        return Err(Error::InvalidArgument(format!(
            "row {row} is out of range for a column of {} values",
            array.len()
        )));
    }
    let mut enc = ColumnEncoder::try_new(array, field, Flavor::Json)?;
    let mut out = Vec::new();
    enc.encode(row, &mut out);
    String::from_utf8(out).map_err(|e| Error::Output(e.to_string()))
}

/// One prepared (sub)column.
pub(super) struct Enc<'a> {
    pub(super) nulls: Option<NullBuffer>,
    pub(super) all_null: bool,
    pub(super) node: Node<'a>,
}

pub(super) enum Node<'a> {
    Null,
    Bool(&'a BooleanBuffer),
    I8(&'a [i8]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    F32(&'a [f32]),
    F64(&'a [f64]),
    Dec32(&'a [i32], i8),
    Dec64(&'a [i64], i8),
    Dec128(&'a [i128], i8),
    Date32(&'a [i32]),
    Time32(&'a [i32], TimeUnit),
    Time64(&'a [i64], TimeUnit),
    Timestamp(&'a [i64], TimeUnit, bool),
    Str(&'a StringArray),
    LargeStr(&'a LargeStringArray),
    StrView(&'a StringViewArray),
    Json(&'a StringArray),
    LargeJson(&'a LargeStringArray),
    JsonView(&'a StringViewArray),
    JsonOwned(StringArray),
    Bin(&'a BinaryArray),
    LargeBin(&'a LargeBinaryArray),
    BinView(&'a BinaryViewArray),
    Fixed(&'a FixedSizeBinaryArray),
    Uuid(&'a FixedSizeBinaryArray),
    /// Children with their pre-rendered keys (`"name":`, with a leading `,` after the first).
    Struct(Vec<(Box<[u8]>, Enc<'a>)>),
    List(&'a [i32], Box<Enc<'a>>),
    LargeList(&'a [i64], Box<Enc<'a>>),
    FixedList(&'a FixedSizeListArray, Box<Enc<'a>>),
    Map(Box<MapEnc<'a>>),
}

pub(super) struct MapEnc<'a> {
    offsets: &'a [i32],
    keys: Enc<'a>,
    values: Enc<'a>,
    /// Reused per row: the JSON text of the row's keys, and (start, end, entry) per entry.
    scratch: Vec<u8>,
    order: Vec<(usize, usize, usize)>,
}

fn iceberg_type(field: &Field) -> Option<&str> {
    field.metadata().get(ICEBERG_TYPE_KEY).map(String::as_str)
}

fn extension_name(field: &Field) -> Option<&str> {
    field
        .metadata()
        .get("ARROW:extension:name")
        .map(String::as_str)
}

fn unsupported(field: &Field, dt: &DataType) -> Error {
    Error::Output(format!(
        "column {:?}: cannot encode Arrow type {dt}",
        field.name()
    ))
}

/// Pre-renders `"name":` (with a leading comma unless first).
fn key_prefix(name: &str, first: bool) -> Box<[u8]> {
    let mut k = Vec::with_capacity(name.len() + 4);
    if !first {
        k.push(b',');
    }
    format::push_json_str(&mut k, name);
    k.push(b':');
    k.into_boxed_slice()
}

fn build<'a>(array: &'a dyn Array, field: &Field) -> Result<Enc<'a>> {
    // Nested field metadata comes from the schema field when it describes the same shape as the
    // array (it should); otherwise from the array's own type.
    let dt = if field.data_type().equals_datatype(array.data_type()) {
        field.data_type()
    } else {
        array.data_type()
    };
    let is_variant = iceberg_type(field) == Some("variant")
        || extension_name(field) == Some("arrow.parquet.variant");
    let node = match dt {
        DataType::Null => Node::Null,
        DataType::Boolean => Node::Bool(array.as_boolean().values()),
        DataType::Int8 => Node::I8(array.as_primitive::<Int8Type>().values()),
        DataType::Int16 => Node::I16(array.as_primitive::<Int16Type>().values()),
        DataType::Int32 => Node::I32(array.as_primitive::<Int32Type>().values()),
        DataType::Int64 => Node::I64(array.as_primitive::<Int64Type>().values()),
        DataType::UInt8 => Node::U8(array.as_primitive::<UInt8Type>().values()),
        DataType::UInt16 => Node::U16(array.as_primitive::<UInt16Type>().values()),
        DataType::UInt32 => Node::U32(array.as_primitive::<UInt32Type>().values()),
        DataType::UInt64 => Node::U64(array.as_primitive::<UInt64Type>().values()),
        DataType::Float32 => Node::F32(array.as_primitive::<Float32Type>().values()),
        DataType::Float64 => Node::F64(array.as_primitive::<Float64Type>().values()),
        DataType::Decimal32(_, s) => {
            Node::Dec32(array.as_primitive::<Decimal32Type>().values(), *s)
        }
        DataType::Decimal64(_, s) => {
            Node::Dec64(array.as_primitive::<Decimal64Type>().values(), *s)
        }
        DataType::Decimal128(_, s) => {
            Node::Dec128(array.as_primitive::<Decimal128Type>().values(), *s)
        }
        DataType::Date32 => Node::Date32(array.as_primitive::<Date32Type>().values()),
        DataType::Time32(TimeUnit::Second) => Node::Time32(
            array.as_primitive::<Time32SecondType>().values(),
            TimeUnit::Second,
        ),
        DataType::Time32(TimeUnit::Millisecond) => Node::Time32(
            array.as_primitive::<Time32MillisecondType>().values(),
            TimeUnit::Millisecond,
        ),
        DataType::Time64(TimeUnit::Microsecond) => Node::Time64(
            array.as_primitive::<Time64MicrosecondType>().values(),
            TimeUnit::Microsecond,
        ),
        DataType::Time64(TimeUnit::Nanosecond) => Node::Time64(
            array.as_primitive::<Time64NanosecondType>().values(),
            TimeUnit::Nanosecond,
        ),
        DataType::Timestamp(unit, tz) => {
            let v = match unit {
                TimeUnit::Second => array.as_primitive::<TimestampSecondType>().values(),
                TimeUnit::Millisecond => array.as_primitive::<TimestampMillisecondType>().values(),
                TimeUnit::Microsecond => array.as_primitive::<TimestampMicrosecondType>().values(),
                TimeUnit::Nanosecond => array.as_primitive::<TimestampNanosecondType>().values(),
            };
            Node::Timestamp(v, *unit, tz.is_some())
        }
        DataType::Utf8 if is_variant => Node::Json(array.as_string::<i32>()),
        DataType::LargeUtf8 if is_variant => Node::LargeJson(array.as_string::<i64>()),
        DataType::Utf8View if is_variant => Node::JsonView(array.as_string_view()),
        DataType::Struct(_) if is_variant => Node::JsonOwned(
            super::variant::variant_struct_to_json(array.as_struct()).map_err(|e| match e {
                Error::Output(m) => Error::Output(format!("column {:?}: {m}", field.name())),
                e => e,
            })?,
        ),
        DataType::Utf8 => Node::Str(array.as_string::<i32>()),
        DataType::LargeUtf8 => Node::LargeStr(array.as_string::<i64>()),
        DataType::Utf8View => Node::StrView(array.as_string_view()),
        DataType::Binary => Node::Bin(array.as_binary::<i32>()),
        DataType::LargeBinary => Node::LargeBin(array.as_binary::<i64>()),
        DataType::BinaryView => Node::BinView(array.as_binary_view()),
        DataType::FixedSizeBinary(16)
            if iceberg_type(field) == Some("uuid")
                || extension_name(field) == Some("arrow.uuid") =>
        {
            Node::Uuid(array.as_fixed_size_binary())
        }
        DataType::FixedSizeBinary(_) => Node::Fixed(array.as_fixed_size_binary()),
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let children = fields
                .iter()
                .zip(s.columns())
                .enumerate()
                .map(|(i, (f, c))| Ok((key_prefix(f.name(), i == 0), build(c.as_ref(), f)?)))
                .collect::<Result<Vec<_>>>()?;
            Node::Struct(children)
        }
        DataType::List(f) => {
            let l = array.as_list::<i32>();
            Node::List(l.value_offsets(), Box::new(build(l.values().as_ref(), f)?))
        }
        DataType::LargeList(f) => {
            let l = array.as_list::<i64>();
            Node::LargeList(l.value_offsets(), Box::new(build(l.values().as_ref(), f)?))
        }
        DataType::FixedSizeList(f, _) => {
            let l = array.as_fixed_size_list();
            Node::FixedList(l, Box::new(build(l.values().as_ref(), f)?))
        }
        DataType::Map(entries, _) => {
            let m = array.as_map();
            let (kf, vf) = match entries.data_type() {
                DataType::Struct(f) if f.len() == 2 => (&f[0], &f[1]),
                other => return Err(unsupported(field, other)),
            };
            Node::Map(Box::new(MapEnc {
                offsets: m.value_offsets(),
                keys: build(m.keys().as_ref(), kf)?,
                values: build(m.values().as_ref(), vf)?,
                scratch: Vec::new(),
                order: Vec::new(),
            }))
        }
        other => return Err(unsupported(field, other)),
    };
    // A rendered variant column carries its own nulls (the struct's and its children's).
    let nulls = match &node {
        Node::JsonOwned(a) => a.nulls().cloned(),
        _ => array.nulls().cloned(),
    };
    let all_null = matches!(node, Node::Null);
    Ok(Enc {
        nulls,
        all_null,
        node,
    })
}

/// Writes `body` between double quotes when `json`, bare otherwise.
macro_rules! quoted {
    ($out:ident, $json:ident, $body:expr) => {{
        if $json {
            $out.push(b'"');
            $body;
            $out.push(b'"');
        } else {
            $body;
        }
    }};
}

impl Enc<'_> {
    #[inline]
    pub(super) fn is_null(&self, i: usize) -> bool {
        self.all_null || self.nulls.as_ref().is_some_and(|n| n.is_null(i))
    }

    /// Appends value `i`; `json` selects JSON quoting for string-like leaves (nested values are
    /// always written with `json = true`). NULL writes `null` (callers of the text flavour check
    /// [`Self::is_null`] first).
    pub(super) fn write(&mut self, i: usize, out: &mut Vec<u8>, json: bool) {
        if self.is_null(i) {
            out.extend_from_slice(b"null");
            return;
        }
        match &mut self.node {
            Node::Null => out.extend_from_slice(b"null"),
            Node::Bool(b) => out.extend_from_slice(if b.value(i) { b"true" } else { b"false" }),
            Node::I8(v) => format::push_int(out, v[i]),
            Node::I16(v) => format::push_int(out, v[i]),
            Node::I32(v) => format::push_int(out, v[i]),
            Node::I64(v) => format::push_int(out, v[i]),
            Node::U8(v) => format::push_int(out, v[i]),
            Node::U16(v) => format::push_int(out, v[i]),
            Node::U32(v) => format::push_int(out, v[i]),
            Node::U64(v) => format::push_int(out, v[i]),
            Node::F32(v) => format::push_f64(out, f64::from(v[i]), json),
            Node::F64(v) => format::push_f64(out, v[i], json),
            Node::Dec32(v, s) => quoted!(out, json, format::push_decimal(out, v[i].into(), *s)),
            Node::Dec64(v, s) => quoted!(out, json, format::push_decimal(out, v[i].into(), *s)),
            Node::Dec128(v, s) => quoted!(out, json, format::push_decimal(out, v[i], *s)),
            Node::Date32(v) => quoted!(out, json, format::push_date(out, v[i].into())),
            Node::Time32(v, u) => quoted!(out, json, format::push_time(out, v[i].into(), *u)),
            Node::Time64(v, u) => quoted!(out, json, format::push_time(out, v[i], *u)),
            Node::Timestamp(v, u, utc) => {
                quoted!(out, json, format::push_timestamp(out, v[i], *u, *utc))
            }
            Node::Str(a) => write_str(out, a.value(i), json),
            Node::LargeStr(a) => write_str(out, a.value(i), json),
            Node::StrView(a) => write_str(out, a.value(i), json),
            Node::Json(a) => write_json_text(out, a.value(i)),
            Node::LargeJson(a) => write_json_text(out, a.value(i)),
            Node::JsonView(a) => write_json_text(out, a.value(i)),
            Node::JsonOwned(a) => write_json_text(out, a.value(i)),
            Node::Bin(a) => quoted!(out, json, format::push_hex(out, a.value(i))),
            Node::LargeBin(a) => quoted!(out, json, format::push_hex(out, a.value(i))),
            Node::BinView(a) => quoted!(out, json, format::push_hex(out, a.value(i))),
            Node::Fixed(a) => quoted!(out, json, format::push_hex(out, a.value(i))),
            Node::Uuid(a) => quoted!(out, json, format::push_uuid(out, a.value(i))),
            Node::Struct(children) => {
                out.push(b'{');
                for (key, child) in children.iter_mut() {
                    out.extend_from_slice(key);
                    child.write(i, out, true);
                }
                out.push(b'}');
            }
            Node::List(offsets, child) => {
                write_list(out, offsets[i] as usize, offsets[i + 1] as usize, child)
            }
            Node::LargeList(offsets, child) => {
                write_list(out, offsets[i] as usize, offsets[i + 1] as usize, child)
            }
            Node::FixedList(a, child) => {
                let start = a.value_offset(i) as usize;
                write_list(out, start, start + a.value_length() as usize, child)
            }
            Node::Map(m) => m.write(i, out),
        }
    }
}

#[inline]
fn write_str(out: &mut Vec<u8>, s: &str, json: bool) {
    if json {
        format::push_json_str(out, s);
    } else {
        out.extend_from_slice(s.as_bytes());
    }
}

/// Embeds already-rendered JSON text (a variant); an empty string (never produced by the
/// variant renderer) is written as `null` so that the output stays valid JSON.
#[inline]
fn write_json_text(out: &mut Vec<u8>, s: &str) {
    if s.is_empty() {
        out.extend_from_slice(b"null");
    } else {
        out.extend_from_slice(s.as_bytes());
    }
}

#[inline]
fn write_list(out: &mut Vec<u8>, start: usize, end: usize, child: &mut Enc<'_>) {
    out.push(b'[');
    for j in start..end {
        if j > start {
            out.push(b',');
        }
        child.write(j, out, true);
    }
    out.push(b']');
}

impl MapEnc<'_> {
    fn write(&mut self, i: usize, out: &mut Vec<u8>) {
        let (start, end) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
        out.push(b'[');
        if end - start == 1 {
            out.extend_from_slice(b"{\"key\":");
            self.keys.write(start, out, true);
            out.extend_from_slice(b",\"value\":");
            self.values.write(start, out, true);
            out.push(b'}');
        } else if end > start {
            let MapEnc {
                keys,
                values,
                scratch,
                order,
                ..
            } = self;
            scratch.clear();
            order.clear();
            for j in start..end {
                let s = scratch.len();
                keys.write(j, scratch, true);
                order.push((s, scratch.len(), j));
            }
            let text: &[u8] = scratch;
            order.sort_by(|a, b| text[a.0..a.1].cmp(&text[b.0..b.1]));
            for (n, &(s, e, j)) in order.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"{\"key\":");
                out.extend_from_slice(&text[s..e]);
                out.extend_from_slice(b",\"value\":");
                values.write(j, out, true);
                out.push(b'}');
            }
        }
        out.push(b']');
    }
}
