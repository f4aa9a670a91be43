//! Times on the command line and in listings.

use anyhow::{anyhow, Result};

/// Parses milliseconds since the epoch or an ISO-8601 time (UTC unless it has an offset), as
/// every front-end does: [`icefloe_core::table::parse_instant_ms`].
pub fn parse_time_ms(s: &str) -> Result<i64> {
    icefloe_core::table::parse_instant_ms(s).map_err(|e| anyhow!("{e}"))
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
