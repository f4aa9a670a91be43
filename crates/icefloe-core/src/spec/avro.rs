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
            Literal::Uuid(super::literal::parse_uuid(s).ok_or_else(bad)?)
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

/// The largest length (bytes, string, array or map count) read from an Avro manifest or
/// manifest list: 8 MiB, far above any real field, and a bound on what one corrupt length
/// can make the decoder reserve (set once per process, see `apache_avro::util`).
pub const MAX_AVRO_LENGTH: usize = 8 << 20;

/// Opens an Avro object container file (manifest or manifest list) after checking its header.
///
/// The header's metadata map is walked first (Avro spec, "Object Container Files"): every
/// block count and length must fit in the bytes that follow. `apache_avro` reserves room for a
/// map's declared entry count before reading any entry, so one corrupt count would otherwise
/// ask for gigabytes. Errors are the reason, for the caller to name the file.
pub fn open_container(bytes: &[u8]) -> Result<apache_avro::Reader<'_, &[u8]>, String> {
    check_container_header(bytes)?;
    // apache_avro also reserves a collection's declared length up front inside data blocks;
    // its process-wide bound (512 MiB by default) then still allows gigabytes of reserve.
    apache_avro::util::max_allocation_bytes(MAX_AVRO_LENGTH);
    apache_avro::Reader::new(bytes).map_err(|e| format!("not an Avro file: {e}"))
}

fn check_container_header(bytes: &[u8]) -> Result<(), String> {
    let mut rest = bytes
        .strip_prefix(b"Obj\x01")
        .ok_or("not an Avro file: no Avro object container magic")?;
    loop {
        let mut count = read_long(&mut rest)?;
        if count == 0 {
            break;
        }
        if count < 0 {
            // A negative count is followed by the block's size in bytes.
            count = count.checked_neg().ok_or("header block count overflows")?;
            let size = read_long(&mut rest)?;
            if size < 0 || size as u64 > rest.len() as u64 {
                return Err(format!("header block size {size} exceeds the file"));
            }
        }
        // Each entry holds at least its key's and its value's length.
        if count as u64 > rest.len() as u64 / 2 {
            return Err(format!(
                "header declares {count} metadata entries in {} bytes",
                rest.len()
            ));
        }
        for _ in 0..count {
            for _ in 0..2 {
                let len = read_long(&mut rest)?;
                if len < 0 || len as u64 > rest.len() as u64 {
                    return Err(format!("header metadata length {len} exceeds the file"));
                }
                rest = &rest[len as usize..];
            }
        }
    }
    if rest.len() < 16 {
        return Err("header ends before its sync marker".into());
    }
    Ok(())
}

/// Reads one zig-zag varint `long`, advancing `rest`.
fn read_long(rest: &mut &[u8]) -> Result<i64, String> {
    let mut value: u64 = 0;
    for i in 0..10 {
        let (&b, tail) = rest.split_first().ok_or("header ends inside a number")?;
        *rest = tail;
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
        }
    }
    Err("header number longer than 10 bytes".into())
}

#[cfg(test)]
mod container_tests {
    use super::*;

    fn header(entries: &[u8]) -> Vec<u8> {
        let mut b = b"Obj\x01".to_vec();
        b.extend_from_slice(entries);
        b.extend_from_slice(&[0; 16]);
        b
    }

    #[test]
    fn a_well_formed_header_passes() {
        // One entry: key "k" (len 1 -> zigzag 2), value "v", then the terminating 0.
        assert_eq!(
            check_container_header(&header(&[2, 2, b'k', 2, b'v', 0])),
            Ok(())
        );
    }

    #[test]
    fn a_huge_entry_count_is_refused_before_decoding() {
        // count = 123,000,000 (zigzag varint), as a fuzzed manifest header had.
        let mut n: u64 = 123_000_000 << 1;
        let mut e = Vec::new();
        while n >= 0x80 {
            e.push((n as u8) | 0x80);
            n >>= 7;
        }
        e.push(n as u8);
        let err = check_container_header(&header(&e)).unwrap_err();
        assert!(err.contains("metadata entries"), "{err}");
        assert!(open_container(&header(&e)).is_err());
    }

    #[test]
    fn lengths_past_the_end_and_truncated_headers_are_refused() {
        assert!(check_container_header(&header(&[2, 200, 1])).is_err());
        assert!(check_container_header(b"Obj\x01").is_err());
        assert!(check_container_header(b"Obj\x02\0").is_err());
        assert!(check_container_header(&header(&[0xff; 11])).is_err());
        assert!(check_container_header(b"Obj\x01\x00short").is_err());
    }
}
