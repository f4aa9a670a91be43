//! Single values decoded by their type: column defaults (spec Appendix C, "JSON single-value
//! serialization") and column bounds (spec Appendix D, "Binary single-value serialization").

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime};
use serde_json::Value as Json;

use super::literal::{decode_hex, parse_decimal, parse_uuid, Literal};
use super::types::{PrimitiveType, Type};

const EPOCH: NaiveDate = match NaiveDate::from_ymd_opt(1970, 1, 1) {
    Some(d) => d,
    None => unreachable!(),
};

/// Which default a value is: struct defaults omit their sub-fields, which then take the
/// sub-field's own default of the same kind (spec: "Default values").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultKind {
    /// `initial-default`.
    Initial,
    /// `write-default`.
    Write,
}

impl Literal {
    /// Parses the JSON single-value serialization of a value of type `ty`; a sub-field a
    /// struct value omits takes its `initial-default` (or null). The error string says what
    /// did not fit.
    pub fn from_json(v: &Json, ty: &Type) -> Result<Literal, String> {
        Literal::default_from_json(v, ty, DefaultKind::Initial)
    }

    /// Parses a field's `initial-default` or `write-default`. In a struct value (also inside
    /// lists and maps), a sub-field the JSON object omits takes the sub-field's own default of
    /// the same `kind`, or null when it has none, so that the result has one entry per field.
    pub fn default_from_json(v: &Json, ty: &Type, kind: DefaultKind) -> Result<Literal, String> {
        let bad = || format!("{v} is not a valid {ty} value");
        match ty {
            Type::Primitive(p) => {
                let s = v.as_str();
                Ok(match p {
                    PrimitiveType::Boolean => Literal::Boolean(v.as_bool().ok_or_else(bad)?),
                    PrimitiveType::Int => Literal::Int(
                        v.as_i64()
                            .and_then(|x| i32::try_from(x).ok())
                            .ok_or_else(bad)?,
                    ),
                    PrimitiveType::Long => Literal::Long(v.as_i64().ok_or_else(bad)?),
                    PrimitiveType::Float => Literal::Float(json_float(v).ok_or_else(bad)? as f32),
                    PrimitiveType::Double => Literal::Double(json_float(v).ok_or_else(bad)?),
                    PrimitiveType::Decimal { scale, .. } => {
                        Literal::Decimal(parse_decimal(s.ok_or_else(bad)?, *scale).ok_or_else(bad)?)
                    }
                    PrimitiveType::Date => {
                        let d = NaiveDate::parse_from_str(s.ok_or_else(bad)?, "%Y-%m-%d")
                            .map_err(|_| bad())?;
                        Literal::Date((d - EPOCH).num_days() as i32)
                    }
                    PrimitiveType::Time => {
                        let t = NaiveTime::parse_from_str(s.ok_or_else(bad)?, "%H:%M:%S%.f")
                            .map_err(|_| bad())?;
                        let d = t - NaiveTime::MIN;
                        Literal::Time(d.num_microseconds().ok_or_else(bad)?)
                    }
                    PrimitiveType::Timestamp
                    | PrimitiveType::Timestamptz
                    | PrimitiveType::TimestampNs
                    | PrimitiveType::TimestamptzNs => {
                        let nanos = parse_timestamp_nanos(s.ok_or_else(bad)?).ok_or_else(bad)?;
                        let ns =
                            matches!(p, PrimitiveType::TimestampNs | PrimitiveType::TimestamptzNs);
                        Literal::Timestamp(if ns {
                            i64::try_from(nanos).map_err(|_| bad())?
                        } else {
                            i64::try_from(nanos.div_euclid(1000)).map_err(|_| bad())?
                        })
                    }
                    PrimitiveType::String => Literal::String(s.ok_or_else(bad)?.to_string()),
                    PrimitiveType::Uuid => {
                        Literal::Uuid(parse_uuid(s.ok_or_else(bad)?).ok_or_else(bad)?)
                    }
                    PrimitiveType::Fixed(_)
                    | PrimitiveType::Binary
                    | PrimitiveType::Geometry(_)
                    | PrimitiveType::Geography(_) => {
                        Literal::Binary(decode_hex(s.ok_or_else(bad)?).ok_or_else(bad)?)
                    }
                    PrimitiveType::Variant | PrimitiveType::Unknown => {
                        return Err(format!("type {p} cannot have a default"))
                    }
                })
            }
            Type::Struct(st) => {
                let o = v.as_object().ok_or_else(bad)?;
                let mut out = Vec::with_capacity(st.fields.len());
                for f in &st.fields {
                    let val = match o.get(&f.id.to_string()) {
                        None => match kind {
                            DefaultKind::Initial => f.initial_default.clone(),
                            DefaultKind::Write => f.write_default.clone(),
                        },
                        Some(Json::Null) => None,
                        Some(x) => Some(Literal::default_from_json(x, &f.field_type, kind)?),
                    };
                    out.push((f.id, val));
                }
                Ok(Literal::Struct(out))
            }
            Type::List(l) => {
                let a = v.as_array().ok_or_else(bad)?;
                a.iter()
                    .map(|x| match x {
                        Json::Null => Ok(None),
                        x => Literal::default_from_json(x, &l.element, kind).map(Some),
                    })
                    .collect::<Result<_, _>>()
                    .map(Literal::List)
            }
            Type::Map(m) => {
                let keys = v.get("keys").and_then(Json::as_array).ok_or_else(bad)?;
                let values = v.get("values").and_then(Json::as_array).ok_or_else(bad)?;
                if keys.len() != values.len() {
                    return Err(bad());
                }
                let mut out = Vec::with_capacity(keys.len());
                for (k, val) in keys.iter().zip(values) {
                    let k = Literal::default_from_json(k, &m.key, kind)?;
                    let val = match val {
                        Json::Null => None,
                        x => Some(Literal::default_from_json(x, &m.value, kind)?),
                    };
                    out.push((k, val));
                }
                Ok(Literal::Map(out))
            }
        }
    }

    /// Decodes the binary single-value serialization used for `lower_bounds`/`upper_bounds`.
    /// `None` if the bytes do not fit the type (such a bound is then not used for pruning).
    pub fn from_bytes(b: &[u8], ty: &PrimitiveType) -> Option<Literal> {
        let le4 = || b.try_into().ok().map(i32::from_le_bytes);
        let le8 = || b.try_into().ok().map(i64::from_le_bytes);
        Some(match ty {
            PrimitiveType::Boolean => Literal::Boolean(*b.first()? != 0),
            PrimitiveType::Int => Literal::Int(le4()?),
            PrimitiveType::Date => Literal::Date(le4()?),
            PrimitiveType::Long => Literal::Long(if b.len() == 4 { le4()? as i64 } else { le8()? }),
            PrimitiveType::Float => Literal::Float(f32::from_le_bytes(b.try_into().ok()?)),
            PrimitiveType::Double => Literal::Double(if b.len() == 4 {
                f32::from_le_bytes(b.try_into().ok()?) as f64
            } else {
                f64::from_le_bytes(b.try_into().ok()?)
            }),
            PrimitiveType::Time => Literal::Time(le8()?),
            PrimitiveType::Timestamp
            | PrimitiveType::Timestamptz
            | PrimitiveType::TimestampNs
            | PrimitiveType::TimestamptzNs => Literal::Timestamp(le8()?),
            PrimitiveType::String => Literal::String(String::from_utf8(b.to_vec()).ok()?),
            PrimitiveType::Uuid => Literal::Uuid(b.try_into().ok()?),
            PrimitiveType::Fixed(_) | PrimitiveType::Binary => Literal::Binary(b.to_vec()),
            PrimitiveType::Decimal { .. } => {
                if b.is_empty() || b.len() > 16 {
                    return None;
                }
                // Big-endian two's complement, sign-extended to 128 bits.
                let fill = if b[0] & 0x80 != 0 { 0xff } else { 0 };
                let mut buf = [fill; 16];
                buf[16 - b.len()..].copy_from_slice(b);
                Literal::Decimal(i128::from_be_bytes(buf))
            }
            _ => return None,
        })
    }
}

fn json_float(v: &Json) -> Option<f64> {
    match v {
        Json::Number(n) => n.as_f64(),
        Json::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

/// Nanoseconds since the epoch of an ISO-8601 timestamp, with or without a UTC offset.
fn parse_timestamp_nanos(s: &str) -> Option<i128> {
    let dt = match DateTime::parse_from_rfc3339(s) {
        Ok(dt) => dt.naive_utc(),
        Err(_) => NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f").ok()?,
    };
    let secs = dt.and_utc().timestamp() as i128;
    Some(secs * 1_000_000_000 + dt.and_utc().timestamp_subsec_nanos() as i128)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_parse_at_scale() {
        assert_eq!(parse_decimal("12.3", 2), Some(1230));
        assert_eq!(parse_decimal("-0.01", 2), Some(-1));
        assert_eq!(parse_decimal("1.234", 2), None);
    }

    #[test]
    fn defaults_parse_by_type() {
        let ts = Type::Primitive(PrimitiveType::Timestamptz);
        assert_eq!(
            Literal::from_json(&Json::from("1970-01-01T00:00:01.000001+00:00"), &ts),
            Ok(Literal::Timestamp(1_000_001))
        );
        let d = Type::Primitive(PrimitiveType::Date);
        assert_eq!(
            Literal::from_json(&Json::from("1969-12-31"), &d),
            Ok(Literal::Date(-1))
        );
        let b = Type::Primitive(PrimitiveType::Binary);
        assert_eq!(
            Literal::from_json(&Json::from("00ff"), &b),
            Ok(Literal::Binary(vec![0, 255]))
        );
    }

    #[test]
    fn bounds_decode() {
        let dec = PrimitiveType::Decimal {
            precision: 9,
            scale: 2,
        };
        assert_eq!(
            Literal::from_bytes(&[0xff, 0x85], &dec),
            Some(Literal::Decimal(-123))
        );
        assert_eq!(
            Literal::from_bytes(&7i32.to_le_bytes(), &PrimitiveType::Int),
            Some(Literal::Int(7))
        );
    }
}
