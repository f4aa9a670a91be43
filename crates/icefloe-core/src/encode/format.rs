//! Text formats of single values: the one place where a number, a decimal, a date, a time, a
//! timestamp, a UUID or a byte string becomes text. The column encoders ([`super::value`]) and
//! the variant renderer ([`super::variant`]) both call these, so a value never prints two ways.
//!
//! Every function appends to a `Vec<u8>` and allocates nothing besides growing that vector.
//! The formats are the ones of the fixture README ("How values are encoded"):
//!
//! | value | text |
//! |---|---|
//! | float, double | shortest round-trip decimal, Python `repr` style (`1.0`, `-0.0`, `1e-05`, `3.4028234663852886e+38`); `NaN`, `Infinity`, `-Infinity` |
//! | decimal(p, s) | exactly `s` fraction digits (`-0.01`, `0.0000000000`) |
//! | date | `YYYY-MM-DD` (proleptic Gregorian) |
//! | time | `HH:MM:SS.ffffff` (9 digits for nanoseconds) |
//! | timestamp | `YYYY-MM-DDTHH:MM:SS.ffffff`, with `+00:00` appended when it is UTC-adjusted |
//! | uuid | lowercase `8-4-4-4-12` |
//! | fixed, binary | lowercase hex |
//!
//! Dates and times use exact integer arithmetic with floor division, so instants before 1970 and
//! the whole `i64` range (1677-09-21T00:12:43.145224192 to 2262-04-11T23:47:16.854775807 in
//! nanoseconds) print correctly.

use arrow::datatypes::TimeUnit;

/// How JSON escapes each byte: 0 = copy as is, `u` = `\u00XX`, anything else = `\` + that byte.
static ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

/// Appends `s` as a JSON string literal: quoted, with `"`, `\` and control characters escaped
/// (`\n`, `\t`, ... or `\u00XX`); every other character, non-ASCII included, is copied as is.
#[inline]
pub fn push_json_str(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    push_json_escaped(out, s.as_bytes());
    out.push(b'"');
}

/// Appends the bytes of a UTF-8 string JSON-escaped, without the surrounding quotes.
#[inline]
pub fn push_json_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc = ESCAPE[b as usize];
        if esc == 0 {
            continue;
        }
        if start < i {
            out.extend_from_slice(&bytes[start..i]);
        }
        if esc == b'u' {
            out.extend_from_slice(b"\\u00");
            push_hex(out, &[b]);
        } else {
            out.extend_from_slice(&[b'\\', esc]);
        }
        start = i + 1;
    }
    if start < bytes.len() {
        out.extend_from_slice(&bytes[start..]);
    }
}

/// Bytes per block of the block-wise byte searches ([`block_has`]).
pub(crate) const SEARCH_BLOCK: usize = 64;

/// Whether a byte of `block` is one `pred` selects, tested without branches: on a fixed-size
/// array the compiler turns this into a few vector compares (a block of a slice of unknown
/// length it did not vectorize, and tested 2 bytes at a time).
#[inline(always)]
pub(crate) fn block_has(block: &[u8; SEARCH_BLOCK], pred: impl Fn(u8) -> bool) -> bool {
    let mut any = 0u8;
    for &b in block {
        any |= u8::from(pred(b));
    }
    any != 0
}

/// The length of what [`push_json_escaped`] appends for `bytes`: the bytes plus one for each
/// two-character escape and five for each `\u00XX`.
#[inline]
pub fn json_escaped_len(bytes: &[u8]) -> usize {
    // Most strings need no escape: whole blocks are tested first.
    let needs = |b: u8| (b < 0x20) | (b == b'"') | (b == b'\\');
    let extra_of = |block: &[u8]| -> usize {
        block
            .iter()
            .map(|&b| match ESCAPE[b as usize] {
                0 => 0,
                b'u' => 5,
                _ => 1,
            })
            .sum()
    };
    let mut blocks = bytes.chunks_exact(SEARCH_BLOCK);
    let mut extra = 0;
    for block in blocks.by_ref() {
        let block: &[u8; SEARCH_BLOCK] = block.try_into().expect("a whole block");
        if block_has(block, needs) {
            extra += extra_of(block);
        }
    }
    bytes.len() + extra + extra_of(blocks.remainder())
}

/// The number of decimal digits of `v` (1 for 0).
#[inline]
pub fn digits_u128(v: u128) -> usize {
    match v.checked_ilog10() {
        Some(l) => l as usize + 1,
        None => 1,
    }
}

/// The number of decimal digits of `v` (1 for 0).
#[inline]
pub fn digits_u64(v: u64) -> usize {
    match v.checked_ilog10() {
        Some(l) => l as usize + 1,
        None => 1,
    }
}

/// The length of what [`push_int`] appends for a signed `v`.
#[inline]
pub fn int_len(v: i64) -> usize {
    usize::from(v < 0) + digits_u64(v.unsigned_abs())
}

/// Appends an integer in decimal.
#[inline]
pub fn push_int<I: itoa::Integer>(out: &mut Vec<u8>, v: I) {
    let mut b = itoa::Buffer::new();
    out.extend_from_slice(b.format(v).as_bytes());
}

/// Appends a double as the shortest decimal that reads back to the same value, in the style of
/// Python's `repr` (which the fixtures use): a whole number keeps `.0`, scientific notation is
/// used when the decimal exponent is below -4 or above 15 and is written `e+XX` / `e-XX` with at
/// least two digits. `-0.0` stays `-0.0`.
///
/// NaN and the infinities are `NaN`, `Infinity` and `-Infinity`, wrapped in double quotes when
/// `quote_non_finite` is set (JSON has no literal for them).
#[inline]
pub fn push_f64(out: &mut Vec<u8>, v: f64, quote_non_finite: bool) {
    if !v.is_finite() {
        let s: &[u8] = if v.is_nan() {
            b"NaN"
        } else if v > 0.0 {
            b"Infinity"
        } else {
            b"-Infinity"
        };
        if quote_non_finite {
            out.push(b'"');
            out.extend_from_slice(s);
            out.push(b'"');
        } else {
            out.extend_from_slice(s);
        }
        return;
    }
    if push_f64_few_decimals(out, v) {
        return;
    }
    push_f64_ryu(out, v);
}

/// The length of what [`push_f64`] appends for `v`, computed without writing in the common
/// cases (non-finite values and those of [`few_decimals`]); other values are formatted into
/// `scratch` (cleared first), so nothing is allocated once it has grown.
#[inline]
pub fn f64_len(v: f64, quote_non_finite: bool, scratch: &mut Vec<u8>) -> usize {
    if !v.is_finite() {
        let n = if v.is_nan() {
            3
        } else if v > 0.0 {
            8
        } else {
            9
        };
        return n + if quote_non_finite { 2 } else { 0 };
    }
    if let Some((m, k)) = few_decimals(v) {
        let sign = usize::from(v < 0.0);
        let digits = digits_u64(m);
        return sign
            + if k == 0 {
                digits + 2
            } else if digits > k {
                digits + 1
            } else {
                2 + k
            };
    }
    scratch.clear();
    push_f64_ryu(scratch, v);
    scratch.len()
}

/// Fast path of [`push_f64`] for values with at most 3 decimals and magnitude in
/// [0.001, 1e12) (prices, amounts, halves and quarters, whole numbers): the shortest
/// representation is then `m / 10^k` for the smallest `k` at which `m = round(|v|·10^k)`
/// satisfies `m / 10^k == |v|` (IEEE division and decimal parsing both round `m / 10^k`
/// correctly, and at that magnitude the product's rounding error is far below ½, so no shorter
/// or closer decimal exists). Returns false, writing nothing, for other values and for zeros.
#[inline]
fn push_f64_few_decimals(out: &mut Vec<u8>, v: f64) -> bool {
    let Some((m, k)) = few_decimals(v) else {
        return false;
    };
    if v < 0.0 {
        out.push(b'-');
    }
    let mut b = itoa::Buffer::new();
    let digits = b.format(m).as_bytes();
    if k == 0 {
        out.extend_from_slice(digits);
        out.extend_from_slice(b".0");
    } else if digits.len() > k {
        let int_len = digits.len() - k;
        out.extend_from_slice(&digits[..int_len]);
        out.push(b'.');
        out.extend_from_slice(&digits[int_len..]);
    } else {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + (k - digits.len()), b'0');
        out.extend_from_slice(digits);
    }
    true
}

/// The decision of [`push_f64_few_decimals`]: `|v| = m / 10^k` with the smallest `k ≤ 3`.
#[inline]
fn few_decimals(v: f64) -> Option<(u64, usize)> {
    let a = v.abs();
    if !(1e-3..1e12).contains(&a) {
        return None;
    }
    let mut scale = 1.0;
    for k in 0..=3usize {
        let m = (a * scale).round();
        if m / scale == a {
            return Some((m as u64, k));
        }
        scale *= 10.0;
    }
    None
}

/// The general path of [`push_f64`] for finite values: ryu's shortest digits, reformatted.
fn push_f64_ryu(out: &mut Vec<u8>, v: f64) {
    let mut b = ryu::Buffer::new();
    let s = b.format_finite(v).as_bytes();
    // ryu writes plain decimals for decimal exponents -5..=15 and `de<exp>` / `d.ddde<exp>`
    // otherwise; Python switches to scientific notation one step earlier for small numbers
    // (1e-05, not 0.00001) and writes the exponent with a sign and at least two digits.
    let (sign, body) = match s.first() {
        Some(b'-') => (&s[..1], &s[1..]),
        _ => (&s[..0], s),
    };
    if let Some(e) = body.iter().position(|&c| c == b'e') {
        out.extend_from_slice(sign);
        out.extend_from_slice(&body[..e]);
        push_exponent(out, &body[e + 1..]);
    } else if body.starts_with(b"0.0000") {
        // 0.0000ddd = d.dd × 10^-5
        let digits = &body[6..];
        out.extend_from_slice(sign);
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.extend_from_slice(b"e-05");
    } else {
        out.extend_from_slice(s);
    }
}

/// Writes `e+XX` / `e-XX` from ryu's exponent text (`38`, `-7`, `-324`).
fn push_exponent(out: &mut Vec<u8>, exp: &[u8]) {
    out.push(b'e');
    let digits = match exp.first() {
        Some(b'-') => {
            out.push(b'-');
            &exp[1..]
        }
        _ => {
            out.push(b'+');
            exp
        }
    };
    if digits.len() < 2 {
        out.push(b'0');
    }
    out.extend_from_slice(digits);
}

/// Appends a decimal given its unscaled value and scale: exactly `scale` fraction digits, a
/// leading `0` before the point when the value is below one, `-` for negatives (`-0.01`,
/// `0.00`, `12.30`). A negative scale (not produced by Iceberg) appends `-scale` zeros.
pub fn push_decimal(out: &mut Vec<u8>, unscaled: i128, scale: i8) {
    if unscaled < 0 {
        out.push(b'-');
    }
    let mut b = itoa::Buffer::new();
    let abs = unscaled.unsigned_abs();
    let digits = match u64::try_from(abs) {
        Ok(small) => b.format(small).as_bytes(),
        Err(_) => b.format(abs).as_bytes(),
    };
    if scale <= 0 {
        out.extend_from_slice(digits);
        if unscaled != 0 {
            out.resize(out.len() + (-(scale as i32)) as usize, b'0');
        }
        return;
    }
    let scale = scale as usize;
    if digits.len() > scale {
        let int_len = digits.len() - scale;
        out.extend_from_slice(&digits[..int_len]);
        out.push(b'.');
        out.extend_from_slice(&digits[int_len..]);
    } else {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + (scale - digits.len()), b'0');
        out.extend_from_slice(digits);
    }
}

/// The length of what [`push_decimal`] appends.
#[inline]
pub fn decimal_len(unscaled: i128, scale: i8) -> usize {
    let sign = usize::from(unscaled < 0);
    let abs = unscaled.unsigned_abs();
    let digits = match u64::try_from(abs) {
        Ok(small) => digits_u64(small),
        Err(_) => digits_u128(abs),
    };
    if scale <= 0 {
        let zeros = if unscaled != 0 {
            (-(scale as i32)) as usize
        } else {
            0
        };
        return sign + digits + zeros;
    }
    let scale = scale as usize;
    sign + if digits > scale {
        digits + 1
    } else {
        2 + scale
    }
}

/// "00", "01", … "99".
static PAIRS: [[u8; 2]; 100] = {
    let mut t = [[0u8; 2]; 100];
    let mut i = 0;
    while i < 100 {
        t[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    t
};

/// Writes `v` (< 100) as two digits at `b[at..at + 2]`.
#[inline(always)]
fn put2(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 2].copy_from_slice(&PAIRS[v as usize]);
}

/// Writes `v` zero-padded to `width` (≤ 20) digits at the start of `b`; `v` must fit.
#[inline]
fn put_padded(b: &mut [u8], mut v: u64, width: usize) {
    let mut i = width;
    while i >= 2 {
        i -= 2;
        b[i..i + 2].copy_from_slice(&PAIRS[(v % 100) as usize]);
        v /= 100;
    }
    if i == 1 {
        b[0] = b'0' + (v % 10) as u8;
    }
}

/// Converts days since 1970-01-01 to a proleptic Gregorian (year, month, day).
/// Exact for every `i64` whose year fits in `i64` (H. Hinnant's `civil_from_days`).
#[inline]
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Appends a date given as days since 1970-01-01: `YYYY-MM-DD`. Years outside 0..=9999 follow
/// ISO 8601 expanded years as Java and chrono print them: `+10000-01-01`, `-0001-12-31`.
#[inline]
pub fn push_date(out: &mut Vec<u8>, days: i64) {
    let (y, m, d) = civil_from_days(days);
    let mut b = *b"0000-00-00";
    if (0..=9999).contains(&y) {
        put2(&mut b, 0, (y / 100) as u32);
        put2(&mut b, 2, (y % 100) as u32);
    } else {
        out.push(if y < 0 { b'-' } else { b'+' });
        let a = y.unsigned_abs();
        if a < 10_000 {
            put_padded(&mut b, a, 4);
        } else {
            push_int(out, a / 10_000);
            put_padded(&mut b, a % 10_000, 4);
        }
    }
    put2(&mut b, 5, m);
    put2(&mut b, 8, d);
    out.extend_from_slice(&b);
}

/// Days since 1970-01-01 of 0000-01-01 and 9999-12-31: [`push_date`] writes exactly 10
/// characters for the days between them.
const FOUR_DIGIT_YEARS: std::ops::RangeInclusive<i64> = -719_528..=2_932_896;

/// The length of what [`push_date`] appends, when it is the fixed `YYYY-MM-DD` (years
/// 0..=9999); `None` for expanded years.
#[inline]
pub fn date_len(days: i64) -> Option<usize> {
    FOUR_DIGIT_YEARS.contains(&days).then_some(10)
}

/// The values (in `unit` since the epoch) [`push_timestamp`] writes with a four-digit year,
/// where its length is fixed ([`timestamp_len`]).
pub fn fixed_timestamps(unit: TimeUnit) -> std::ops::RangeInclusive<i64> {
    let (per_sec, _) = unit_scale(unit);
    let per_sec = i128::from(per_sec);
    let lo = i128::from(*FOUR_DIGIT_YEARS.start()) * 86_400 * per_sec;
    let hi = (i128::from(*FOUR_DIGIT_YEARS.end()) + 1) * 86_400 * per_sec - 1;
    let clamp = |v: i128| v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    clamp(lo)..=clamp(hi)
}

/// The length of what [`push_timestamp`] appends for a value in [`fixed_timestamps`]:
/// `YYYY-MM-DDTHH:MM:SS`, the fraction and `+00:00` when `utc`.
#[inline]
pub fn timestamp_len(unit: TimeUnit, utc: bool) -> usize {
    let (_, digits) = unit_scale(unit);
    19 + if digits > 0 { 1 + digits } else { 0 } + if utc { 6 } else { 0 }
}

/// The length of what [`push_time`] appends, when it is the fixed `HH:MM:SS[.f…]` (from 0 up
/// to 100 hours); `None` otherwise.
#[inline]
pub fn time_len(v: i64, unit: TimeUnit) -> Option<usize> {
    let (per_sec, digits) = unit_scale(unit);
    (v >= 0 && v / per_sec < 360_000).then_some(8 + if digits > 0 { 1 + digits } else { 0 })
}

/// Units per second and fraction digits written for a time unit: seconds have no fraction,
/// milliseconds 3 digits, microseconds 6 and nanoseconds 9.
#[inline]
pub fn unit_scale(unit: TimeUnit) -> (i64, usize) {
    match unit {
        TimeUnit::Second => (1, 0),
        TimeUnit::Millisecond => (1_000, 3),
        TimeUnit::Microsecond => (1_000_000, 6),
        TimeUnit::Nanosecond => (1_000_000_000, 9),
    }
}

/// Appends `HH:MM:SS` for a second of the day (hours past 99 are written in full) and the
/// fraction `.fff…` with `digits` (≤ 9) digits when `digits > 0`.
#[inline]
fn push_hms_frac(out: &mut Vec<u8>, secs_of_day: u64, frac: u64, digits: usize) {
    let h = secs_of_day / 3600;
    let mut b = *b"00:00:00.000000000";
    if h >= 100 {
        push_int(out, h / 100);
    }
    put2(&mut b, 0, (h % 100) as u32);
    put2(&mut b, 3, (secs_of_day / 60 % 60) as u32);
    put2(&mut b, 6, (secs_of_day % 60) as u32);
    if digits == 0 {
        out.extend_from_slice(&b[..8]);
    } else {
        put_padded(&mut b[9..], frac, digits);
        out.extend_from_slice(&b[..9 + digits]);
    }
}

/// Appends a time of day given in `unit` since midnight: `HH:MM:SS.ffffff` for microseconds
/// (Iceberg `time`), 9 fraction digits for nanoseconds. A negative value (not a valid Iceberg
/// time) is written as `-` followed by its magnitude.
#[inline]
pub fn push_time(out: &mut Vec<u8>, v: i64, unit: TimeUnit) {
    let (per_sec, digits) = unit_scale(unit);
    if v < 0 {
        out.push(b'-');
    }
    let a = v.unsigned_abs();
    let per_sec = per_sec as u64;
    push_hms_frac(out, a / per_sec, a % per_sec, digits);
}

/// Appends a timestamp given in `unit` since 1970-01-01T00:00:00: `YYYY-MM-DDTHH:MM:SS.ffffff`
/// (9 digits for nanoseconds), followed by `+00:00` when `utc` (Iceberg `timestamptz`,
/// `timestamptz_ns`). Floor division keeps instants before 1970 right:
/// -1 µs is `1969-12-31T23:59:59.999999`.
#[inline]
pub fn push_timestamp(out: &mut Vec<u8>, v: i64, unit: TimeUnit, utc: bool) {
    let (per_sec, digits) = unit_scale(unit);
    let secs = v.div_euclid(per_sec);
    let frac = v.rem_euclid(per_sec) as u64;
    push_timestamp_parts(out, secs, frac, digits, utc);
}

/// Appends a timestamp from whole seconds since the epoch and a fraction of `digits` (≤ 9)
/// digits (`frac < 10^digits`); the shared tail of [`push_timestamp`].
#[inline]
pub fn push_timestamp_parts(out: &mut Vec<u8>, secs: i64, frac: u64, digits: usize, utc: bool) {
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400) as u64;
    out.reserve(36);
    push_date(out, days);
    out.push(b'T');
    push_hms_frac(out, sod, frac, digits);
    if utc {
        out.extend_from_slice(b"+00:00");
    }
}

/// Appends bytes as lowercase hex, two digits per byte (empty input → nothing), as
/// [`hex::encode`] writes them.
#[inline]
pub fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    let start = out.len();
    out.resize(start + 2 * bytes.len(), 0);
    hex::encode_to_slice(bytes, &mut out[start..]).expect("two digits per byte");
}

/// Appends 16 bytes as a lowercase canonical UUID `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (the
/// `uuid` crate's hyphenated form). Other lengths fall back to plain hex.
#[inline]
pub fn push_uuid(out: &mut Vec<u8>, bytes: &[u8]) {
    match uuid::Uuid::from_slice(bytes) {
        Ok(u) => out.extend_from_slice(
            u.hyphenated()
                .encode_lower(&mut uuid::Uuid::encode_buffer())
                .as_bytes(),
        ),
        Err(_) => push_hex(out, bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut v = Vec::new();
        f(&mut v);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn floats_python_repr() {
        let cases: &[(f64, &str)] = &[
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (2.5, "2.5"),
            (2.3333333333333335, "2.3333333333333335"),
            (5e-324, "5e-324"),
            (f32::MAX as f64, "3.4028234663852886e+38"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1e15, "1000000000000000.0"),
            (123456789012345.6, "123456789012345.6"),
            (0.0001, "0.0001"),
            (0.00012, "0.00012"),
            (0.00001, "1e-05"),
            (-0.000015, "-1.5e-05"),
            (1e-7, "1e-07"),
            (-1e100, "-1e+100"),
            (10.001, "10.001"),
        ];
        for &(v, want) in cases {
            assert_eq!(s(|o| push_f64(o, v, true)), want, "{v:e}");
            // what Python/serde read back is the same double
            assert_eq!(want.parse::<f64>().unwrap().to_bits(), v.to_bits());
        }
        assert_eq!(s(|o| push_f64(o, f64::NAN, true)), "\"NaN\"");
        assert_eq!(s(|o| push_f64(o, f64::INFINITY, true)), "\"Infinity\"");
        assert_eq!(s(|o| push_f64(o, f64::NEG_INFINITY, false)), "-Infinity");
        assert_eq!(s(|o| push_f64(o, f64::NAN, false)), "NaN");
    }

    #[test]
    fn float_fast_path_agrees_with_ryu() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut values: Vec<f64> = vec![0.001, 0.002, 0.1, 0.3, 1e12 - 0.5, 999999999999.999];
        for _ in 0..200_000 {
            let r = next();
            let scale = [1.0, 10.0, 100.0, 1000.0, 1e4][(r % 5) as usize];
            let m =
                (r >> 8) % [1_000, 1_000_000, 1_000_000_000_000, 1 << 53][(r >> 3) as usize % 4];
            let sign = if r & 0x80 != 0 { -1.0 } else { 1.0 };
            values.push(sign * m as f64 / scale);
            values.push(f64::from_bits(next() >> 2)); // anything
            values.push(((next() % 100_000) as f64 * 0.01) as f32 as f64); // widened floats
        }
        for v in values {
            if !v.is_finite() {
                continue;
            }
            let mut fast = Vec::new();
            if push_f64_few_decimals(&mut fast, v) {
                let mut slow = Vec::new();
                push_f64_ryu(&mut slow, v);
                assert_eq!(fast, slow, "{v:e}");
            }
        }
    }

    #[test]
    fn decimals() {
        let cases: &[(i128, i8, &str)] = &[
            (123, 2, "1.23"),
            (-1, 2, "-0.01"),
            (0, 10, "0.0000000000"),
            (0, 0, "0"),
            (-1, 6, "-0.000001"),
            (1230, 2, "12.30"),
            (-12345, 3, "-12.345"),
            (12, -2, "1200"),
            (i128::MIN, 0, "-170141183460469231731687303715884105728"),
            (
                99999999999999999999999999999999999999,
                10,
                "9999999999999999999999999999.9999999999",
            ),
        ];
        for &(v, sc, want) in cases {
            assert_eq!(s(|o| push_decimal(o, v, sc)), want);
        }
    }

    #[test]
    fn dates_and_times() {
        assert_eq!(s(|o| push_date(o, 0)), "1970-01-01");
        assert_eq!(s(|o| push_date(o, -1)), "1969-12-31");
        assert_eq!(s(|o| push_date(o, -25567)), "1900-01-01");
        assert_eq!(s(|o| push_date(o, 11016)), "2000-02-29");
        assert_eq!(s(|o| push_date(o, 2_932_896)), "9999-12-31");
        assert_eq!(s(|o| push_date(o, 2_932_897)), "+10000-01-01");
        assert_eq!(s(|o| push_date(o, -719_528)), "0000-01-01");
        assert_eq!(s(|o| push_date(o, -719_529)), "-0001-12-31");
        // agrees with chrono over a wide range
        let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap();
        for days in (-800_000i64..3_000_000).step_by(997) {
            let d = epoch + chrono::Duration::days(days);
            assert_eq!(s(|o| push_date(o, days)), d.format("%Y-%m-%d").to_string());
        }
        assert_eq!(
            s(|o| push_time(o, 45_296_789_012, TimeUnit::Microsecond)),
            "12:34:56.789012"
        );
        assert_eq!(
            s(|o| push_time(o, 0, TimeUnit::Microsecond)),
            "00:00:00.000000"
        );
        assert_eq!(
            s(|o| push_time(o, 86_399_999_999, TimeUnit::Microsecond)),
            "23:59:59.999999"
        );
        assert_eq!(
            s(|o| push_time(o, 1_000_000_001, TimeUnit::Nanosecond)),
            "00:00:01.000000001"
        );
    }

    #[test]
    fn timestamps() {
        let us = TimeUnit::Microsecond;
        let ns = TimeUnit::Nanosecond;
        assert_eq!(
            s(|o| push_timestamp(o, -1, us, false)),
            "1969-12-31T23:59:59.999999"
        );
        assert_eq!(
            s(|o| push_timestamp(o, -1, us, true)),
            "1969-12-31T23:59:59.999999+00:00"
        );
        assert_eq!(
            s(|o| push_timestamp(o, i64::MIN, ns, false)),
            "1677-09-21T00:12:43.145224192"
        );
        assert_eq!(
            s(|o| push_timestamp(o, i64::MAX, ns, true)),
            "2262-04-11T23:47:16.854775807+00:00"
        );
        assert_eq!(
            s(|o| push_timestamp(o, 1_705_322_096_789_012, us, false)),
            "2024-01-15T12:34:56.789012"
        );
        assert_eq!(
            s(|o| push_timestamp(o, 9_223_372_036_854_775, us, true)),
            "2262-04-11T23:47:16.854775+00:00"
        );
        assert_eq!(
            s(|o| push_timestamp(o, -2_208_988_800_000_000, us, false)),
            "1900-01-01T00:00:00.000000"
        );
        // extreme microsecond values (far outside the ns range) still print
        assert_eq!(
            s(|o| push_timestamp(o, i64::MIN, us, false)),
            "-290308-12-21T19:59:05.224192"
        );
        assert_eq!(
            s(|o| push_timestamp(o, i64::MAX, us, false)),
            "+294247-01-10T04:00:54.775807"
        );
        assert_eq!(
            s(|o| push_timestamp(o, 1500, TimeUnit::Millisecond, false)),
            "1970-01-01T00:00:01.500"
        );
        assert_eq!(
            s(|o| push_timestamp(o, -1, TimeUnit::Second, false)),
            "1969-12-31T23:59:59"
        );
    }

    #[test]
    fn strings_hex_uuid() {
        assert_eq!(
            s(|o| push_json_str(o, "unicode ✓ \"quoted\" \\ back\nnewline\t\u{1}\u{7f}")),
            "\"unicode ✓ \\\"quoted\\\" \\\\ back\\nnewline\\t\\u0001\u{7f}\""
        );
        assert_eq!(s(|o| push_json_str(o, "")), "\"\"");
        assert_eq!(s(|o| push_hex(o, &[0xde, 0xad, 0x00, 0x0a])), "dead000a");
        assert_eq!(s(|o| push_hex(o, &[])), "");
        let u = [
            0xf7, 0x9c, 0x3e, 0x09, 0x67, 0x7c, 0x4d, 0x67, 0xb3, 0xa2, 0xa7, 0xd9, 0xe8, 0xb1,
            0xc2, 0xd3,
        ];
        assert_eq!(
            s(|o| push_uuid(o, &u)),
            "f79c3e09-677c-4d67-b3a2-a7d9e8b1c2d3"
        );
        // Not 16 bytes: plain hex.
        assert_eq!(s(|o| push_uuid(o, &u[..3])), "f79c3e");
    }

    /// Every byte prints as the two lowercase digits the old table-driven encoder wrote, after
    /// what the buffer held; every control character escapes as `\u00` and those digits.
    #[test]
    fn hex_is_two_lowercase_digits_per_byte() {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let all: Vec<u8> = (0..=255).collect();
        let want: String = all
            .iter()
            .flat_map(|&b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 0xf)]])
            .map(char::from)
            .collect();
        let mut out = b"x".to_vec();
        push_hex(&mut out, &all);
        assert_eq!(String::from_utf8(out).unwrap(), format!("x{want}"));
        for b in (0u8..0x20).filter(|b| !b"\x08\t\n\x0c\r".contains(b)) {
            let text = char::from(b).to_string();
            assert_eq!(
                s(|o| push_json_escaped(o, text.as_bytes())),
                format!("\\u00{}", &want[2 * usize::from(b)..2 * usize::from(b) + 2])
            );
        }
    }
}
