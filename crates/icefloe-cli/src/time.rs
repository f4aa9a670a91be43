//! Times on the command line and in listings.

use anyhow::{anyhow, Result};
use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Utc};

/// Parses milliseconds since the epoch, RFC 3339, or `YYYY-MM-DD[ T]HH:MM:SS[.fff]` (UTC), or
/// a bare date (its midnight, UTC).
pub fn parse_time_ms(s: &str) -> Result<i64> {
    let s = s.trim();
    if let Ok(ms) = s.parse::<i64>() {
        return Ok(ms);
    }
    if let Ok(dt) = DateTime::parse_from_rfc3339(s) {
        return Ok(dt.timestamp_millis());
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"] {
        if let Ok(dt) = NaiveDateTime::parse_from_str(s, fmt) {
            return Ok(Utc.from_utc_datetime(&dt).timestamp_millis());
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Ok(Utc
            .from_utc_datetime(&d.and_hms_opt(0, 0, 0).expect("midnight"))
            .timestamp_millis());
    }
    Err(anyhow!(
        "cannot read time {s:?}: give milliseconds since the epoch or an ISO-8601 time such as 2026-01-31T12:00:00Z"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_times() {
        assert_eq!(parse_time_ms("1000").unwrap(), 1000);
        assert_eq!(parse_time_ms("1970-01-01T00:00:01Z").unwrap(), 1000);
        assert_eq!(parse_time_ms("1970-01-01 00:00:01.5").unwrap(), 1500);
        assert_eq!(parse_time_ms("1970-01-02").unwrap(), 86_400_000);
        assert!(parse_time_ms("yesterday").is_err());
    }
}
