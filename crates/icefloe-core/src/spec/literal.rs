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
