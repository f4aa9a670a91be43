//! Instants written as text by a person: time travel (`--as-of`, the FDW's `as_of`, the
//! cut-offs of `history`, `retention` and `orphans`) and timestamp literals of `--where`. Every
//! front-end reads them with this module, so the same text names the same instant whatever the
//! reader's time zone.
//!
//! The forms, after leading and trailing whitespace is dropped:
//!
//! | form | example | instant |
//! |---|---|---|
//! | milliseconds since the epoch ([`parse_instant_ms`] only) | `1769860800000`, `-1` | as written |
//! | date | `2026-01-31` | its midnight |
//! | date and time, `T` or a space between | `2026-01-31T12:00`, `2026-01-31 12:00:00` | |
//! | ... with a fraction of 1 to 9 digits (more are cut off) | `2026-01-31T12:00:00.123456789` | |
//! | RFC 3339 (`t` as separator too) | `2026-01-31t12:00:00.5z` | |
//! | any of the above but a plain number, then a zone | `2026-01-31T12:00Z`, `2026-01-31 12:00:00 +02`, `2026-01-31+0530`, `…-05:30` | |
//!
//! A zone is `Z` or `z`, or a sign (`+`, `-` or U+2212 `−`) and two or four digits of hours and
//! minutes, colons and spaces between them ignored (`+02`, `+0200`, `+02:00`, `+02 00`), at
//! most `23:59`; space may come before it. Without a zone the time is UTC. Seconds may be `60`
//! (a leap second: the next minute's first second). Dates are proleptic Gregorian; month, day,
//! hour and minute may have one digit (`2026-1-5 9:05`), as chrono reads them.
//!
//! Refused, among others: names of zones (`2026-01-31 12:00 Europe/Paris`), relative times
//! (`yesterday`), days or times that do not exist (`2026-02-30`, `24:00`), offsets of 24 hours
//! or more (`+24:00`), other separators (`2026/01/31`).

use chrono::{DateTime, NaiveDate, NaiveDateTime};

/// Nanoseconds per second.
const NANOS: i128 = 1_000_000_000;

/// Reads an instant given as milliseconds since the epoch or in one of the ISO-8601 forms of
/// the module documentation; returns milliseconds since the epoch (UTC), an instant with a finer
/// fraction rounded down.
///
/// # Errors
/// [`crate::Error::InvalidArgument`] naming the text when it is none of those forms or is
/// outside what milliseconds in an `i64` hold.
pub fn parse_instant_ms(text: &str) -> crate::Result<i64> {
    let s = text.trim();
    if let Ok(ms) = s.parse::<i64>() {
        return Ok(ms);
    }
    iso_nanos(s)
        .and_then(|ns| i64::try_from(ns.div_euclid(1_000_000)).ok())
        .ok_or_else(|| {
            crate::Error::InvalidArgument(format!(
                "cannot read time {s:?}: give milliseconds since the epoch or an ISO-8601 time such as 2026-01-31T12:00:00Z (UTC unless it has an offset)"
            ))
        })
}

/// Reads an instant in one of the ISO-8601 forms of the module documentation (not a plain
/// number); returns nanoseconds since the epoch (UTC).
///
/// # Errors
/// [`crate::Error::InvalidArgument`] naming the text when it is none of those forms.
pub fn parse_instant_ns(text: &str) -> crate::Result<i128> {
    let s = text.trim();
    iso_nanos(s).ok_or_else(|| {
        crate::Error::InvalidArgument(format!(
            "cannot read time {s:?}: give an ISO-8601 time such as 2026-01-31T12:00:00.000000001Z (UTC unless it has an offset)"
        ))
    })
}

/// Nanoseconds since the epoch of trimmed text in an ISO-8601 form.
fn iso_nanos(s: &str) -> Option<i128> {
    if let Ok(dt) = DateTime::parse_from_rfc3339(s) {
        return Some(utc_nanos(&dt.naive_utc()));
    }
    if let Some((local, offset_secs)) = split_zone(s) {
        if let Some(ns) = local_nanos(local.trim_end()) {
            return Some(ns - i128::from(offset_secs) * NANOS);
        }
    }
    local_nanos(s)
}

/// The text before a trailing zone and the zone's offset east of UTC in seconds; `None` when
/// the text ends in no zone. The zone starts at the last sign past the first ten bytes (a date's
/// own dashes come before it).
fn split_zone(s: &str) -> Option<(&str, i32)> {
    if let Some(local) = s.strip_suffix(['Z', 'z']) {
        return Some((local, 0));
    }
    let (at, sign) = s
        .char_indices()
        .rev()
        .take_while(|&(i, _)| i >= 10)
        .find(|(_, c)| matches!(c, '+' | '-' | '\u{2212}'))?;
    // Colons anywhere; spaces only after the hours.
    let mut digits = Vec::with_capacity(4);
    for c in s[at + sign.len_utf8()..].chars() {
        match c.to_digit(10) {
            Some(d) => digits.push(d),
            None if c == ':' || (c.is_whitespace() && digits.len() >= 2) => {}
            None => return None,
        }
    }
    let (h, m) = match digits[..] {
        [h1, h2] => (h1 * 10 + h2, 0),
        [h1, h2, m1, m2] => (h1 * 10 + h2, m1 * 10 + m2),
        _ => return None,
    };
    if h > 23 || m > 59 {
        return None;
    }
    let secs = (h * 3600 + m * 60) as i32;
    Some((&s[..at], if sign == '+' { secs } else { -secs }))
}

/// Nanoseconds since the epoch of a date or a date and time without a zone, read as UTC.
fn local_nanos(s: &str) -> Option<i128> {
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Some(utc_nanos(&d.and_hms_opt(0, 0, 0)?));
    }
    [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
    ]
    .iter()
    .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
    .map(|dt| utc_nanos(&dt))
}

/// Nanoseconds since the epoch of a UTC date and time (a leap second counts as the next
/// minute's first).
fn utc_nanos(dt: &NaiveDateTime) -> i128 {
    let u = dt.and_utc();
    i128::from(u.timestamp()) * NANOS + i128::from(u.timestamp_subsec_nanos())
}

#[cfg(test)]
mod tests {
    use super::{parse_instant_ms, parse_instant_ns};

    const S: i128 = 1_000_000_000;

    #[test]
    fn every_form_names_its_instant() {
        // (text, nanoseconds since the epoch)
        let day = 86_400 * S;
        let cases: &[(&str, i128)] = &[
            ("1970-01-02", day),
            (" 1970-01-02 ", day),
            ("1969-12-31", -day),
            ("1970-1-2", day),
            ("1970-01-01T00:00", 0),
            ("1970-01-01 00:01", 60 * S),
            ("1970-01-01T00:00:01", S),
            ("1970-01-01 00:00:01", S),
            ("1970-01-01 00:00:01.5", S + S / 2),
            ("1970-01-01T00:00:00.000000001", 1),
            ("1970-01-01T00:00:00.1234567891", 123_456_789),
            ("1969-12-31T23:59:59.999999999", -1),
            ("1970-01-01T00:00:59.5Z", 59 * S + S / 2),
            ("1970-01-01T23:59:60Z", day),
            ("1970-01-01t00:00:01z", S),
            ("1970-01-01T00:00:01Z", S),
            ("1970-01-01 00:00:01 Z", S),
            ("1970-01-01T00:01Z", 60 * S),
            ("1970-01-02Z", day),
            ("1970-01-01 01:00:01+01", S),
            ("1970-01-01 01:00:01.000+01:00", S),
            ("1970-01-01T01:00:01+0100", S),
            ("1970-01-01T01:00:01 +01:00", S),
            ("1970-01-01T01:00:01+01 00", S),
            ("1970-01-01T01:00:01+01::00", S),
            ("1969-12-31T19:00:01\u{2212}05:00", S),
            ("1969-12-31 18:30-05:30", 0),
            ("1970-01-02+01", day - 3600 * S),
            ("1970-01-01T00:00:01-00:00", S),
            ("1970-01-01T23:59:01+23:59", S),
            ("2026-01-31T12:00:00Z", 1_769_860_800 * S),
        ];
        for &(text, ns) in cases {
            assert_eq!(parse_instant_ns(text).unwrap(), ns, "{text}");
            assert_eq!(
                parse_instant_ms(text).unwrap(),
                ns.div_euclid(1_000_000) as i64,
                "{text}"
            );
        }
    }

    #[test]
    fn milliseconds_since_the_epoch_are_read_only_as_milliseconds() {
        assert_eq!(parse_instant_ms("1000").unwrap(), 1000);
        assert_eq!(parse_instant_ms(" -1 ").unwrap(), -1);
        assert_eq!(
            parse_instant_ms("+1769860800000").unwrap(),
            1_769_860_800_000
        );
        assert!(parse_instant_ns("1000").is_err());
    }

    #[test]
    fn other_text_is_refused() {
        for text in [
            "",
            "yesterday",
            "now",
            "1970-01-01 00:00:01 Asia/Tokyo",
            "1970-01-01T00:00:01 UTC",
            "1970/01/01",
            "01/02/1970",
            "1970-02-30",
            "1970-13-01",
            "1970-01-01T24:00",
            "1970-01-01T12:60",
            "1970-01-01T00:00:00+24:00",
            "1970-01-01T00:00:00+01:60",
            "1970-01-01T00:00:00+1",
            "1970-01-01T00:00:00+123",
            "1970-01-01T00:00:00+01:00:00",
            "1970-01-01T00:00:00+x1",
            "1970-01-01T00:00:00ZZ",
            "1970-01-01T",
            "1970-01-01T12",
            "1e3",
            "1000 ms",
        ] {
            let err = parse_instant_ms(text).unwrap_err().to_string();
            assert!(err.contains(&format!("{:?}", text.trim())), "{text}: {err}");
            assert!(parse_instant_ns(text).is_err(), "{text}");
        }
        // Milliseconds past what an i64 of milliseconds holds.
        assert!(parse_instant_ms("9223372036854775808").is_err());
    }
}
