//! Time-travel instants written as text (`as-of`): what every front-end accepts.

/// Reads a time-travel instant: milliseconds since the epoch, or an ISO-8601 date or time
/// (`2026-01-31`, `2026-01-31T12:00:00`, `2026-01-31 12:00:00.250+02`, `...Z`), in UTC unless
/// it carries an offset. Every front-end reads `as-of` with this, so the same text names the
/// same instant whatever the reader's time zone.
pub fn parse_instant_ms(text: &str) -> crate::Result<i64> {
    use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Utc};
    let s = text.trim();
    if let Ok(ms) = s.parse::<i64>() {
        return Ok(ms);
    }
    if let Ok(dt) = DateTime::parse_from_rfc3339(s) {
        return Ok(dt.timestamp_millis());
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f%#z", "%Y-%m-%d %H:%M:%S%.f%#z"] {
        if let Ok(dt) = DateTime::parse_from_str(s, fmt) {
            return Ok(dt.timestamp_millis());
        }
    }
    if let Some(naive) = s.strip_suffix(['Z', 'z']) {
        for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"] {
            if let Ok(dt) = NaiveDateTime::parse_from_str(naive, fmt) {
                return Ok(Utc.from_utc_datetime(&dt).timestamp_millis());
            }
        }
    }
    for fmt in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(dt) = NaiveDateTime::parse_from_str(s, fmt) {
            return Ok(Utc.from_utc_datetime(&dt).timestamp_millis());
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Ok(Utc
            .from_utc_datetime(&d.and_hms_opt(0, 0, 0).expect("midnight"))
            .timestamp_millis());
    }
    Err(crate::Error::InvalidArgument(format!(
        "cannot read time {s:?}: give milliseconds since the epoch or an ISO-8601 time such as 2026-01-31T12:00:00Z (UTC unless it has an offset)"
    )))
}

#[cfg(test)]
mod tests {
    use super::parse_instant_ms;

    #[test]
    fn instants_are_utc_unless_offset() {
        assert_eq!(parse_instant_ms("1000").unwrap(), 1000);
        assert_eq!(parse_instant_ms("1970-01-01T00:00:01Z").unwrap(), 1000);
        assert_eq!(parse_instant_ms("1970-01-01 00:00:01").unwrap(), 1000);
        assert_eq!(parse_instant_ms("1970-01-01 00:00:01.5").unwrap(), 1500);
        assert_eq!(parse_instant_ms("1970-01-01 01:00:01+01").unwrap(), 1000);
        assert_eq!(
            parse_instant_ms("1970-01-01 01:00:01.000+01:00").unwrap(),
            1000
        );
        assert_eq!(parse_instant_ms("1970-01-01T01:00:01+0100").unwrap(), 1000);
        assert_eq!(parse_instant_ms(" 1970-01-02 ").unwrap(), 86_400_000);
        assert!(parse_instant_ms("yesterday").is_err());
        assert!(parse_instant_ms("1970-01-01 00:00:01 Asia/Tokyo").is_err());
    }
}
