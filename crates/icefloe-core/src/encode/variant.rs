//! Variant → JSON text.
//!
//! Iceberg v3 stores an unshredded `variant` as a Parquet group of two binary fields,
//! `metadata` (the field-name dictionary) and `value` (the encoded value), in the binary format of
//! the Parquet spec (`VariantEncoding.md`). Decoding and validation are done by the
//! `parquet-variant` crate (arrow-rs); the rendering is ours, so a variant's leaves print exactly
//! like the same values in ordinary columns ([`super::format`]):
//!
//! | variant value | JSON |
//! |---|---|
//! | null | `null` |
//! | boolean, int8/16/32/64 | `true`/`false`, number |
//! | float, double | number (float widened to double); `"NaN"`, `"Infinity"`, `"-Infinity"` |
//! | decimal4/8/16 | string with exactly `scale` fraction digits (`"-12.345"`) |
//! | date | `"YYYY-MM-DD"` |
//! | time | `"HH:MM:SS.ffffff"` |
//! | timestamp / timestamp_ntz (micros) | `"YYYY-MM-DDTHH:MM:SS.ffffff+00:00"` / without `+00:00` |
//! | timestamp / timestamp_ntz (nanos) | the same with 9 fraction digits |
//! | string | string |
//! | binary | lowercase hex string |
//! | uuid | `"xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"` |
//! | object | object, keys in the order of the encoding (the spec requires them sorted by name) |
//! | array | array |
//!
//! (The `parquet-variant-json` crate renders decimals as JSON numbers, binary as base64 and floats
//! with `f32` precision, which differs from the Iceberg reference output; hence our renderer.)
//!
//! Every input is fully validated before it is rendered (bounds, offsets, dictionary ids, UTF-8,
//! nesting depth at most [`parquet_variant::MAX_NESTING_DEPTH`]): corrupt bytes give an
//! [`Error::Output`], never a panic.

use arrow::array::{Array, ArrayAccessor, AsArray, BinaryArray, StringArray, StructArray};
use arrow::buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, TimeUnit};
use chrono::Timelike;
use parquet_variant::Variant;

use super::format;
use crate::error::{Error, Result};

/// Days from 0001-01-01 (day 1 of the common era) to 1970-01-01.
const UNIX_EPOCH_DAYS_FROM_CE: i64 = 719_163;

/// Decodes one variant (its `metadata` and `value` bytes) and appends its JSON text to `out`.
///
/// # Errors
/// [`Error::Output`] when the bytes are not a valid variant (truncated, offsets out of bounds,
/// unknown type ids, invalid UTF-8, unsorted or duplicate keys, too deep). On error `out` is left
/// as it was.
pub fn variant_to_json(metadata: &[u8], value: &[u8], out: &mut Vec<u8>) -> Result<()> {
    // Some malformed values (a timestamp past chrono's range) panic in parquet-variant's
    // validation or decoding: that is an invalid value too, and `out` is restored.
    let start = out.len();
    crate::guard::catch(
        || {
            let v = Variant::try_new(metadata, value)
                .map_err(|e| Error::Output(format!("invalid variant value: {e}")))?;
            render(&v, out);
            Ok(())
        },
        |m| Error::Output(format!("invalid variant value: {m}")),
    )
    .inspect_err(|_| out.truncate(start))
}

/// Renders a whole column of unshredded variants to JSON text, one string per row.
///
/// `metadata` and `value` are the two binary children of the variant group; `nulls` is the null
/// buffer of the group itself. A row is SQL NULL in the result when the group is null or either
/// child is null; a variant null becomes the text `null`.
///
/// # Errors
/// [`Error::Output`] when the children differ in length, when a row is not a valid variant, or
/// when the rendered text exceeds 2 GiB (the `Utf8` offset limit).
pub fn variant_array_to_json(
    metadata: &BinaryArray,
    value: &BinaryArray,
    nulls: Option<&NullBuffer>,
) -> Result<StringArray> {
    convert(metadata, value, nulls)
}

/// Renders a variant column read from Parquet (a struct with binary `metadata` and `value`
/// children; `Binary`, `LargeBinary` and `BinaryView` are accepted) to JSON text, one string per
/// row; a null struct is a null string. See [`variant_array_to_json`].
///
/// # Errors
/// [`Error::Unsupported`] for a shredded variant (a `typed_value` child) and
/// [`Error::Output`] when a child is missing or not binary, or a row is not a valid variant.
pub fn variant_struct_to_json(array: &StructArray) -> Result<StringArray> {
    if array.column_by_name("typed_value").is_some() {
        return Err(Error::Unsupported(
            "shredded variant columns (typed_value)".to_string(),
        ));
    }
    let child = |name: &str| {
        array
            .column_by_name(name)
            .ok_or_else(|| Error::Output(format!("variant struct has no {name:?} field")))
    };
    let metadata = child("metadata")?;
    let value = child("value")?;
    let nulls = array.nulls();
    macro_rules! with_binary {
        ($arr:expr, |$b:ident| $body:expr) => {
            match $arr.data_type() {
                DataType::Binary => {
                    let $b = $arr.as_binary::<i32>();
                    $body
                }
                DataType::LargeBinary => {
                    let $b = $arr.as_binary::<i64>();
                    $body
                }
                DataType::BinaryView => {
                    let $b = $arr.as_binary_view();
                    $body
                }
                other => Err(Error::Output(format!(
                    "variant child must be binary, found {other}"
                ))),
            }
        };
    }
    with_binary!(metadata, |m| with_binary!(value, |v| convert(m, v, nulls)))
}

/// Shared body of the array conversions, generic over the binary array kinds.
fn convert<'a, M, V>(metadata: M, value: V, nulls: Option<&NullBuffer>) -> Result<StringArray>
where
    M: ArrayAccessor<Item = &'a [u8]>,
    V: ArrayAccessor<Item = &'a [u8]>,
{
    let len = value.len();
    if metadata.len() != len || nulls.is_some_and(|n| n.len() != len) {
        return Err(Error::Output(format!(
            "variant children differ in length: metadata {}, value {len}",
            metadata.len()
        )));
    }
    let out_nulls = NullBuffer::union(
        nulls,
        NullBuffer::union(
            metadata.logical_nulls().as_ref(),
            value.logical_nulls().as_ref(),
        )
        .as_ref(),
    );
    let mut text: Vec<u8> = Vec::with_capacity(len * 16);
    let mut offsets: Vec<i32> = Vec::with_capacity(len + 1);
    offsets.push(0);
    for i in 0..len {
        if !out_nulls.as_ref().is_some_and(|n| n.is_null(i)) {
            variant_to_json(metadata.value(i), value.value(i), &mut text)
                .map_err(|e| Error::Output(format!("row {i}: {e}")))?;
        }
        let end = i32::try_from(text.len())
            .map_err(|_| Error::Output("variant JSON text exceeds 2 GiB in one batch".into()))?;
        offsets.push(end);
    }
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    // The text is valid UTF-8 by construction (JSON syntax around validated UTF-8 strings);
    // `try_new` checks it again rather than trusting that.
    StringArray::try_new(offsets, Buffer::from_vec(text), out_nulls)
        .map_err(|e| Error::Output(format!("variant JSON text: {e}")))
}

/// Appends the JSON text of a fully validated variant.
fn render(v: &Variant<'_, '_>, out: &mut Vec<u8>) {
    match v {
        Variant::Null => out.extend_from_slice(b"null"),
        Variant::BooleanTrue => out.extend_from_slice(b"true"),
        Variant::BooleanFalse => out.extend_from_slice(b"false"),
        Variant::Int8(i) => format::push_int(out, *i),
        Variant::Int16(i) => format::push_int(out, *i),
        Variant::Int32(i) => format::push_int(out, *i),
        Variant::Int64(i) => format::push_int(out, *i),
        Variant::Float(f) => format::push_f64(out, f64::from(*f), true),
        Variant::Double(f) => format::push_f64(out, *f, true),
        Variant::Decimal4(d) => quoted(out, |o| {
            format::push_decimal(o, i128::from(d.integer()), d.scale() as i8)
        }),
        Variant::Decimal8(d) => quoted(out, |o| {
            format::push_decimal(o, i128::from(d.integer()), d.scale() as i8)
        }),
        Variant::Decimal16(d) => quoted(out, |o| {
            format::push_decimal(o, d.integer(), d.scale() as i8)
        }),
        Variant::Date(d) => quoted(out, |o| {
            format::push_date(
                o,
                i64::from(chrono::Datelike::num_days_from_ce(d)) - UNIX_EPOCH_DAYS_FROM_CE,
            )
        }),
        Variant::Time(t) => quoted(out, |o| {
            let micros = i64::from(t.num_seconds_from_midnight()) * 1_000_000
                + i64::from(t.nanosecond() / 1_000);
            format::push_time(o, micros, TimeUnit::Microsecond)
        }),
        Variant::TimestampMicros(ts) => {
            push_ts(out, ts.timestamp(), ts.timestamp_subsec_nanos(), 6, true)
        }
        Variant::TimestampNanos(ts) => {
            push_ts(out, ts.timestamp(), ts.timestamp_subsec_nanos(), 9, true)
        }
        Variant::TimestampNtzMicros(ts) => {
            let ts = ts.and_utc();
            push_ts(out, ts.timestamp(), ts.timestamp_subsec_nanos(), 6, false)
        }
        Variant::TimestampNtzNanos(ts) => {
            let ts = ts.and_utc();
            push_ts(out, ts.timestamp(), ts.timestamp_subsec_nanos(), 9, false)
        }
        Variant::Binary(b) => quoted(out, |o| format::push_hex(o, b)),
        Variant::String(s) => format::push_json_str(out, s),
        Variant::ShortString(s) => format::push_json_str(out, s.as_str()),
        Variant::Uuid(u) => quoted(out, |o| format::push_uuid(o, u.as_bytes())),
        Variant::Object(obj) => {
            out.push(b'{');
            for (i, (name, field)) in obj.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                format::push_json_str(out, name);
                out.push(b':');
                render(&field, out);
            }
            out.push(b'}');
        }
        Variant::List(list) => {
            out.push(b'[');
            for (i, item) in list.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                render(&item, out);
            }
            out.push(b']');
        }
    }
}

#[inline]
fn quoted(out: &mut Vec<u8>, f: impl FnOnce(&mut Vec<u8>)) {
    out.push(b'"');
    f(out);
    out.push(b'"');
}

/// A timestamp from chrono's (seconds, sub-second nanos); `digits` is 6 or 9.
fn push_ts(out: &mut Vec<u8>, secs: i64, nanos: u32, digits: usize, utc: bool) {
    let frac = if digits == 6 { nanos / 1_000 } else { nanos };
    quoted(out, |o| {
        format::push_timestamp_parts(o, secs, u64::from(frac), digits, utc)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet_variant::{VariantBuilder, VariantDecimal16, VariantDecimal4, VariantDecimal8};
    use std::sync::Arc;

    fn json_of(build: impl FnOnce(&mut VariantBuilder)) -> String {
        let mut b = VariantBuilder::new();
        build(&mut b);
        let (m, v) = b.finish();
        let mut out = Vec::new();
        variant_to_json(&m, &v, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn primitives() {
        let cases: Vec<(Variant<'static, 'static>, &str)> = vec![
            (Variant::Null, "null"),
            (Variant::BooleanTrue, "true"),
            (Variant::BooleanFalse, "false"),
            (Variant::Int8(-7), "-7"),
            (Variant::Int16(-32768), "-32768"),
            (Variant::Int32(123), "123"),
            (Variant::Int64(123456789012), "123456789012"),
            (Variant::Float(1.25), "1.25"),
            (Variant::Float(f32::NAN), "\"NaN\""),
            (Variant::Double(-0.0), "-0.0"),
            (Variant::Double(f64::NEG_INFINITY), "\"-Infinity\""),
            (Variant::Double(1e-7), "1e-07"),
            (
                Variant::from(VariantDecimal4::try_new(-12345, 3).unwrap()),
                "\"-12.345\"",
            ),
            (
                Variant::from(VariantDecimal8::try_new(-1, 6).unwrap()),
                "\"-0.000001\"",
            ),
            (
                Variant::from(VariantDecimal16::try_new(10i128.pow(20), 10).unwrap()),
                "\"10000000000.0000000000\"",
            ),
            (
                Variant::from(chrono::NaiveDate::from_ymd_opt(2024, 2, 29).unwrap()),
                "\"2024-02-29\"",
            ),
            (
                Variant::from(chrono::NaiveDate::from_ymd_opt(1900, 1, 1).unwrap()),
                "\"1900-01-01\"",
            ),
            (
                Variant::TimestampMicros(
                    chrono::DateTime::from_timestamp_micros(1_709_168_523_456_789).unwrap(),
                ),
                "\"2024-02-29T01:02:03.456789+00:00\"",
            ),
            (
                Variant::TimestampMicros(chrono::DateTime::from_timestamp_micros(-1).unwrap()),
                "\"1969-12-31T23:59:59.999999+00:00\"",
            ),
            (
                Variant::TimestampNtzMicros(
                    chrono::DateTime::from_timestamp_micros(0)
                        .unwrap()
                        .naive_utc(),
                ),
                "\"1970-01-01T00:00:00.000000\"",
            ),
            (
                Variant::TimestampNanos(chrono::DateTime::from_timestamp_nanos(i64::MIN)),
                "\"1677-09-21T00:12:43.145224192+00:00\"",
            ),
            (
                Variant::TimestampNtzNanos(
                    chrono::DateTime::from_timestamp_nanos(i64::MAX).naive_utc(),
                ),
                "\"2262-04-11T23:47:16.854775807\"",
            ),
            (
                Variant::Time(chrono::NaiveTime::from_hms_micro_opt(12, 34, 56, 789012).unwrap()),
                "\"12:34:56.789012\"",
            ),
            (Variant::Binary(&[0xde, 0xad, 0x00]), "\"dead00\""),
            (Variant::from("a \"q\"\n✓"), "\"a \\\"q\\\"\\n✓\""),
            (
                Variant::from(
                    "a string that is longer than sixty-three bytes, so it is stored long",
                ),
                "\"a string that is longer than sixty-three bytes, so it is stored long\"",
            ),
            (
                Variant::Uuid(uuid::Uuid::from_bytes([
                    0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14,
                    0x17, 0x40, 0x00,
                ])),
                "\"123e4567-e89b-12d3-a456-426614174000\"",
            ),
        ];
        for (v, want) in cases {
            let got = json_of(|b| b.append_value(v.clone()));
            assert_eq!(got, want, "{v:?}");
        }
    }

    #[test]
    fn nested_object_keys_in_encoding_order() {
        // inserted out of order; the encoding sorts field ids by name, and so does the output
        let got = json_of(|b| {
            let mut o = b.new_object();
            o.insert("d", true);
            o.insert("a", 0i8);
            {
                let mut l = o.new_list("c");
                l.append_value(1i8);
                l.append_value(());
                l.append_value(2.5f64);
                l.finish();
            }
            o.insert("b", "str0");
            o.finish();
        });
        assert_eq!(got, r#"{"a":0,"b":"str0","c":[1,null,2.5],"d":true}"#);
        assert_eq!(json_of(|b| b.new_list().finish()), "[]");
        assert_eq!(json_of(|b| b.new_object().finish()), "{}");
    }

    #[test]
    fn corrupt_input_is_an_error_never_a_panic() {
        let mut b = VariantBuilder::new();
        {
            let mut o = b.new_object();
            o.insert("alpha", 1234567i32);
            o.insert("beta", "a long enough string value to be interesting");
            let mut l = o.new_list("gamma");
            l.append_value(1.5f64);
            l.append_value(VariantDecimal8::try_new(-5, 2).unwrap());
            l.finish();
            o.finish();
        }
        let (m, v) = b.finish();
        let mut out = Vec::new();
        variant_to_json(&m, &v, &mut out).unwrap();
        // every truncation
        for cut in 0..v.len() {
            let mut o = Vec::new();
            assert!(
                variant_to_json(&m, &v[..cut], &mut o).is_err(),
                "value cut {cut}"
            );
            assert!(o.is_empty());
        }
        for cut in 0..m.len() {
            let _ = variant_to_json(&m[..cut], &v, &mut Vec::new());
        }
        // byte flips: Ok or Err, but no panic
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20_000 {
            let mut mm = m.clone();
            let mut vv = v.clone();
            for _ in 0..1 + next() % 3 {
                let r = next();
                if r % 2 == 0 {
                    let i = (r >> 8) as usize % vv.len();
                    vv[i] = (r >> 32) as u8;
                } else {
                    let i = (r >> 8) as usize % mm.len();
                    mm[i] = (r >> 32) as u8;
                }
            }
            let _ = variant_to_json(&mm, &vv, &mut Vec::new());
        }
        assert!(variant_to_json(&[], &[], &mut Vec::new()).is_err());
        assert!(variant_to_json(&[1, 0, 0], &[0xff], &mut Vec::new()).is_err());
    }

    #[test]
    fn arrays_and_nulls() {
        let mut rows: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for i in 0..3i64 {
            let mut b = VariantBuilder::new();
            if i == 1 {
                b.append_value(());
            } else {
                b.append_value(i);
            }
            rows.push(b.finish());
        }
        let m = BinaryArray::from_iter_values(rows.iter().map(|r| r.0.as_slice()));
        let v = BinaryArray::from_iter_values(rows.iter().map(|r| r.1.as_slice()));
        let nulls = NullBuffer::from(vec![true, true, false]);
        let s = variant_array_to_json(&m, &v, Some(&nulls)).unwrap();
        assert_eq!(s.value(0), "0");
        assert_eq!(s.value(1), "null");
        assert!(s.is_valid(1));
        assert!(s.is_null(2));

        let st = StructArray::new(
            vec![
                Arc::new(arrow::datatypes::Field::new(
                    "metadata",
                    DataType::Binary,
                    false,
                )),
                Arc::new(arrow::datatypes::Field::new(
                    "value",
                    DataType::Binary,
                    false,
                )),
            ]
            .into(),
            vec![Arc::new(m.clone()), Arc::new(v.clone())],
            Some(nulls.clone()),
        );
        let s2 = variant_struct_to_json(&st).unwrap();
        assert_eq!(s2, s);
        // sliced struct
        let s3 = variant_struct_to_json(&st.slice(1, 2)).unwrap();
        assert_eq!(s3.value(0), "null");
        assert!(s3.is_null(1));

        let bad = BinaryArray::from_iter_values([b"\x03".as_slice(), b"\x03", b"\x03"]);
        let err = variant_array_to_json(&m, &bad, None).unwrap_err();
        assert!(err.to_string().contains("row 0"), "{err}");
    }
}
