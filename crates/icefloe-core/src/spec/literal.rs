//! Single values of Iceberg types (column defaults, column bounds) and the text forms they are
//! written in; decoding them by type is in [`super::literal_decode`].

/// A typed value. Temporal values use the type's own unit: days for dates, microseconds for
/// `time`/`timestamp`/`timestamptz`, nanoseconds for the `_ns` types. Decimals hold the unscaled
/// value at the type's scale.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    Boolean(bool),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    Decimal(i128),
    Date(i32),
    Time(i64),
    Timestamp(i64),
    String(String),
    Uuid([u8; 16]),
    Binary(Vec<u8>),
    /// Struct defaults: one entry per field of the struct, by field id (absent = null).
    Struct(Vec<(i32, Option<Literal>)>),
    List(Vec<Option<Literal>>),
    Map(Vec<(Literal, Option<Literal>)>),
}

/// Parses a decimal string to its unscaled value at `scale` (more fraction digits than the
/// scale is an error, never a silent rounding).
pub fn parse_decimal(s: &str, scale: u32) -> Option<i128> {
    let s = s.trim();
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if frac.len() > scale as usize || (int.is_empty() && frac.is_empty()) {
        return None;
    }
    let mut v: i128 = 0;
    for c in int.chars().chain(frac.chars()) {
        v = v.checked_mul(10)?.checked_add(c.to_digit(10)? as i128)?;
    }
    v = v.checked_mul(10i128.checked_pow(scale - frac.len() as u32)?)?;
    Some(if neg { -v } else { v })
}

/// A UUID's 16 bytes from its text: 32 hex digits (either case), read by the `uuid` crate,
/// with dashes anywhere among them left out (so the canonical `8-4-4-4-12` form and the plain
/// 32 digits both read); `None` for anything else.
pub fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    let digits: String = s.chars().filter(|c| *c != '-').collect();
    if digits.len() != 32 {
        return None;
    }
    uuid::Uuid::try_parse(&digits)
        .ok()
        .map(uuid::Uuid::into_bytes)
}

/// Decodes a hex string (either case).
pub fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::parse_uuid;

    #[test]
    fn uuids_read_with_dashes_anywhere_and_nothing_else() {
        let want = [
            0xf7, 0x9c, 0x3e, 0x09, 0x67, 0x7c, 0x4d, 0x67, 0xb3, 0xa2, 0xa7, 0xd9, 0xe8, 0xb1,
            0xc2, 0xd3,
        ];
        for text in [
            "f79c3e09-677c-4d67-b3a2-a7d9e8b1c2d3",
            "F79C3E09-677C-4D67-B3A2-A7D9E8B1C2D3",
            "f79c3e09677c4d67b3a2a7d9e8b1c2d3",
            "f79c-3e09-677c-4d67-b3a2-a7d9-e8b1-c2d3",
            "-f79c3e09677c4d67b3a2a7d9e8b1c2d3--",
        ] {
            assert_eq!(parse_uuid(text), Some(want), "{text}");
        }
        for text in [
            "",
            "f79c3e09-677c-4d67-b3a2-a7d9e8b1c2d",
            "f79c3e09-677c-4d67-b3a2-a7d9e8b1c2d3a",
            "{f79c3e09-677c-4d67-b3a2-a7d9e8b1c2d3}",
            "urn:uuid:f79c3e09-677c-4d67-b3a2-a7d9e8b1c2d3",
            "g79c3e09-677c-4d67-b3a2-a7d9e8b1c2d3",
            " f79c3e09-677c-4d67-b3a2-a7d9e8b1c2d3",
            "+f79c3e09677c4d67b3a2a7d9e8b1c2d",
            "é79c3e09677c4d67b3a2a7d9e8b1c2d",
        ] {
            assert_eq!(parse_uuid(text), None, "{text}");
        }
    }
}
