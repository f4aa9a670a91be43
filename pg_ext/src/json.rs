//! JSON text of nested values (struct, map, list of non-primitives) and variants, for `jsonb`
//! columns. The encoding is the one the fixtures and the CLI's JSON Lines use (the fixture
//! README's "How values are encoded").
//!
//! PROVISIONAL: this mirrors `icefloe_core::encode::value::value_to_json`, which is being
//! finished on `main`; once merged, [`write_value`] is replaced by the core's encoder so the
//! wrapper keeps no encoding rule of its own.

use std::fmt::Write as _;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Field, Float32Type, Float64Type, Int32Type, Int64Type,
    Time64MicrosecondType, TimeUnit, TimestampMicrosecondType, TimestampNanosecondType,
};
use icefloe_core::scan::arrow_schema::ICEBERG_TYPE_KEY;

use crate::error::FdwError;

/// Appends the JSON encoding of `array[row]` (described by `field`) to `out`.
pub fn write_value(
    array: &dyn Array,
    field: &Field,
    row: usize,
    out: &mut String,
) -> Result<(), FdwError> {
    if array.is_null(row) {
        out.push_str("null");
        return Ok(());
    }
    let iceberg_type = field.metadata().get(ICEBERG_TYPE_KEY).map(String::as_str);
    match array.data_type() {
        DataType::Null => out.push_str("null"),
        DataType::Boolean => out.push_str(if array.as_boolean().value(row) {
            "true"
        } else {
            "false"
        }),
        DataType::Int32 => {
            let _ = write!(out, "{}", array.as_primitive::<Int32Type>().value(row));
        }
        DataType::Int64 => {
            let _ = write!(out, "{}", array.as_primitive::<Int64Type>().value(row));
        }
        DataType::Float32 => push_f64(out, array.as_primitive::<Float32Type>().value(row) as f64),
        DataType::Float64 => push_f64(out, array.as_primitive::<Float64Type>().value(row)),
        DataType::Decimal128(_, scale) => {
            out.push('"');
            push_decimal(
                out,
                array.as_primitive::<Decimal128Type>().value(row),
                *scale,
            );
            out.push('"');
        }
        DataType::Date32 => {
            out.push('"');
            push_date(out, array.as_primitive::<Date32Type>().value(row) as i64);
            out.push('"');
        }
        DataType::Time64(TimeUnit::Microsecond) => {
            let v = array.as_primitive::<Time64MicrosecondType>().value(row);
            let (s, f) = (v.div_euclid(1_000_000), v.rem_euclid(1_000_000));
            let _ = write!(
                out,
                "\"{:02}:{:02}:{:02}.{:06}\"",
                s / 3600,
                s / 60 % 60,
                s % 60,
                f
            );
        }
        DataType::Timestamp(unit, tz) => {
            let (v, per_sec, digits) = match unit {
                TimeUnit::Nanosecond => (
                    array.as_primitive::<TimestampNanosecondType>().value(row),
                    1_000_000_000i64,
                    9,
                ),
                _ => (
                    array.as_primitive::<TimestampMicrosecondType>().value(row),
                    1_000_000,
                    6,
                ),
            };
            let (secs, frac) = (v.div_euclid(per_sec), v.rem_euclid(per_sec));
            out.push('"');
            push_date(out, secs.div_euclid(86_400));
            let s = secs.rem_euclid(86_400);
            let _ = write!(
                out,
                "T{:02}:{:02}:{:02}.{:0w$}",
                s / 3600,
                s / 60 % 60,
                s % 60,
                frac,
                w = digits
            );
            if tz.is_some() {
                out.push_str("+00:00");
            }
            out.push('"');
        }
        DataType::Utf8 => {
            let s = array.as_string::<i32>().value(row);
            if iceberg_type == Some("variant") {
                out.push_str(s);
            } else {
                push_str(out, s);
            }
        }
        DataType::FixedSizeBinary(_) => {
            let b = array.as_fixed_size_binary().value(row);
            out.push('"');
            if iceberg_type == Some("uuid") && b.len() == 16 {
                for (i, byte) in b.iter().enumerate() {
                    if matches!(i, 4 | 6 | 8 | 10) {
                        out.push('-');
                    }
                    let _ = write!(out, "{byte:02x}");
                }
            } else {
                push_hex(out, b);
            }
            out.push('"');
        }
        DataType::Binary => {
            out.push('"');
            push_hex(out, array.as_binary::<i32>().value(row));
            out.push('"');
        }
        DataType::Struct(fields) => {
            let s = array.as_struct();
            out.push('{');
            for (i, (f, col)) in fields.iter().zip(s.columns()).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_str(out, f.name());
                out.push(':');
                write_value(col.as_ref(), f, row, out)?;
            }
            out.push('}');
        }
        DataType::List(elem) => {
            let l = array.as_list::<i32>();
            let values = l.values();
            let offsets = l.value_offsets();
            out.push('[');
            for (n, i) in (offsets[row] as usize..offsets[row + 1] as usize).enumerate() {
                if n > 0 {
                    out.push(',');
                }
                write_value(values.as_ref(), elem, i, out)?;
            }
            out.push(']');
        }
        DataType::Map(entries, _) => {
            let m = array.as_map();
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(FdwError::Internal("map entries are not a struct".into()));
            };
            let (keys, values) = (m.keys(), m.values());
            let offsets = m.value_offsets();
            let mut items: Vec<(String, String)> = Vec::new();
            for i in offsets[row] as usize..offsets[row + 1] as usize {
                let mut k = String::new();
                write_value(keys.as_ref(), &kv[0], i, &mut k)?;
                let mut v = String::new();
                write_value(values.as_ref(), &kv[1], i, &mut v)?;
                items.push((k, v));
            }
            items.sort_by(|a, b| a.0.cmp(&b.0));
            out.push('[');
            for (n, (k, v)) in items.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{{\"key\":{k},\"value\":{v}}}");
            }
            out.push(']');
        }
        other => {
            return Err(FdwError::Internal(format!(
                "no JSON encoding for Arrow type {other}"
            )))
        }
    }
    Ok(())
}

fn push_f64(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("\"NaN\"");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 {
            "\"Infinity\""
        } else {
            "\"-Infinity\""
        });
    } else {
        let _ = write!(out, "{v:?}");
    }
}

fn push_str(out: &mut String, s: &str) {
    // serde_json escapes exactly as JSON requires.
    out.push_str(&serde_json::Value::from(s).to_string());
}

fn push_hex(out: &mut String, b: &[u8]) {
    for byte in b {
        let _ = write!(out, "{byte:02x}");
    }
}

/// Writes an unscaled decimal with exactly `scale` fraction digits.
pub fn push_decimal(out: &mut String, unscaled: i128, scale: i8) {
    let neg = unscaled < 0;
    let digits = unscaled.unsigned_abs().to_string();
    if neg {
        out.push('-');
    }
    if scale <= 0 {
        out.push_str(&digits);
        for _ in 0..(-scale) {
            out.push('0');
        }
        return;
    }
    let scale = scale as usize;
    if digits.len() <= scale {
        out.push_str("0.");
        for _ in 0..scale - digits.len() {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let (int, frac) = digits.split_at(digits.len() - scale);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    }
}

/// Writes days since 1970-01-01 as `YYYY-MM-DD` (proleptic Gregorian; years outside 0..=9999
/// are written with a sign, as ISO 8601 extended years).
fn push_date(out: &mut String, days: i64) {
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    if (0..=9999).contains(&y) {
        let _ = write!(out, "{y:04}-{m:02}-{d:02}");
    } else {
        let _ = write!(out, "{y:+05}-{m:02}-{d:02}");
    }
}
