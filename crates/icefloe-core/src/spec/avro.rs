//! Small helpers to read fields out of `apache_avro` values, by name, so manifest readers
//! tolerate the optional and version-specific fields of each format version.

use apache_avro::types::Value;

use super::literal::Literal;
use super::types::PrimitiveType;

/// A decoded Avro record: its fields by name.
pub struct Record<'a>(pub &'a [(String, Value)]);

impl<'a> Record<'a> {
    /// Wraps an Avro value that must be a record.
    pub fn new(v: &'a Value) -> Option<Record<'a>> {
        match unwrap_union(v) {
            Value::Record(fields) => Some(Record(fields)),
            _ => None,
        }
    }

    /// The field's value with unions unwrapped; `None` when absent or null.
    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| unwrap_union(v))
            .filter(|v| !matches!(v, Value::Null))
    }

    /// An integer field (int or long).
    pub fn i64(&self, name: &str) -> Option<i64> {
        match self.get(name)? {
            Value::Int(i) => Some(*i as i64),
            Value::Long(l) => Some(*l),
            _ => None,
        }
    }

    /// A string field.
    pub fn str(&self, name: &str) -> Option<&'a str> {
        match self.get(name)? {
            Value::String(s) => Some(s.as_str()),
            Value::Enum(_, s) => Some(s.as_str()),
            _ => None,
        }
    }

    /// An array field's items.
    pub fn array(&self, name: &str) -> Option<&'a [Value]> {
        match self.get(name)? {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// A map stored as Iceberg stores int-keyed maps: an array of `{key, value}` records.
    pub fn int_map(&self, name: &str) -> Vec<(i32, &'a Value)> {
        self.array(name)
            .unwrap_or(&[])
            .iter()
            .filter_map(|kv| {
                let r = Record::new(kv)?;
                Some((r.i64("key")? as i32, r.get("value")?))
            })
            .collect()
    }
}

/// Strips a union wrapper.
pub fn unwrap_union(v: &Value) -> &Value {
    match v {
        Value::Union(_, inner) => inner,
        other => other,
    }
}

/// Converts an Avro partition value to a literal of the partition field's type. `None` for
/// null; `Err` when the Avro value does not fit the type.
pub fn to_literal(v: &Value, ty: &PrimitiveType) -> Result<Option<Literal>, String> {
    let v = unwrap_union(v);
    let bad = || format!("partition value {v:?} does not fit type {ty}");
    Ok(Some(match (v, ty) {
        (Value::Null, _) => return Ok(None),
        (Value::Boolean(b), _) => Literal::Boolean(*b),
        (Value::Int(i), PrimitiveType::Long) => Literal::Long(*i as i64),
        (Value::Int(i), PrimitiveType::Date) | (Value::Date(i), _) => Literal::Date(*i),
        (Value::Int(i), _) => Literal::Int(*i),
        (Value::Long(l), PrimitiveType::Time) | (Value::TimeMicros(l), _) => Literal::Time(*l),
        (Value::Long(l), PrimitiveType::Timestamp | PrimitiveType::Timestamptz)
        | (Value::Long(l), PrimitiveType::TimestampNs | PrimitiveType::TimestamptzNs)
        | (Value::TimestampMicros(l), _)
        | (Value::TimestampNanos(l), _)
        | (Value::LocalTimestampMicros(l), _)
        | (Value::LocalTimestampNanos(l), _) => Literal::Timestamp(*l),
        (Value::Long(l), _) => Literal::Long(*l),
        (Value::Float(f), PrimitiveType::Double) => Literal::Double(*f as f64),
        (Value::Float(f), _) => Literal::Float(*f),
        (Value::Double(d), _) => Literal::Double(*d),
        (Value::String(s), PrimitiveType::Uuid) => {
            let hex: String = s.chars().filter(|c| *c != '-').collect();
            let b = super::literal::decode_hex(&hex).ok_or_else(bad)?;
            Literal::Uuid(b.try_into().map_err(|_| bad())?)
        }
        (Value::String(s), _) => Literal::String(s.clone()),
        (Value::Uuid(u), _) => Literal::Uuid(*u.as_bytes()),
        (Value::Bytes(b), PrimitiveType::Decimal { .. })
        | (Value::Fixed(_, b), PrimitiveType::Decimal { .. }) => {
            Literal::from_bytes(b, ty).ok_or_else(bad)?
        }
        (Value::Decimal(d), _) => {
            let b: Vec<u8> = d.try_into().map_err(|_| bad())?;
            Literal::from_bytes(
                &b,
                &PrimitiveType::Decimal {
                    precision: 38,
                    scale: 0,
                },
            )
            .ok_or_else(bad)?
        }
        (Value::Bytes(b), PrimitiveType::Uuid) | (Value::Fixed(_, b), PrimitiveType::Uuid) => {
            Literal::Uuid(b.as_slice().try_into().map_err(|_| bad())?)
        }
        (Value::Bytes(b), _) | (Value::Fixed(_, b), _) => Literal::Binary(b.clone()),
        _ => return Err(bad()),
    }))
}
