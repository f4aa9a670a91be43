//! When a REST catalog request is tried again: exponential backoff with full jitter, the delay
//! and the number of retries capped, and a server's `Retry-After` (on 429 and 503) honoured up
//! to a cap.
//!
//! Retry `n` (from 0) waits a uniformly random time between zero and
//! `min(BASE_DELAY × 2ⁿ, MAX_DELAY)` (100, 200 and 400 ms at most for the three retries), so
//! clients that failed together do not come back together. A `Retry-After` answer waits what
//! the server asks instead, at most [`MAX_RETRY_AFTER`].

use std::time::{Duration, SystemTime};

/// Tries after the first one, at most: a request is sent at most `1 + MAX_RETRIES` times.
pub(crate) const MAX_RETRIES: u32 = 3;

/// The longest first delay; each retry doubles it.
const BASE_DELAY: Duration = Duration::from_millis(100);

/// No backoff delay is longer.
const MAX_DELAY: Duration = Duration::from_secs(1);

/// The longest wait a `Retry-After` header obtains: a server asking for more is tried again
/// after this.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);

/// The retries of one request.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    /// Retries handed out so far.
    retries: u32,
}

impl Backoff {
    /// No retry yet.
    pub(crate) fn new() -> Backoff {
        Backoff::default()
    }

    /// How long to wait before the next try, or `None` when the retries are used up.
    /// `retry_after` is the wait the server asked for ([`retry_after`]); without one, a random
    /// delay of the backoff.
    pub(crate) fn next_delay(&mut self, retry_after: Option<Duration>) -> Option<Duration> {
        if self.retries >= MAX_RETRIES {
            return None;
        }
        let ceiling = ceiling(self.retries);
        self.retries += 1;
        Some(retry_after.unwrap_or_else(|| jittered(ceiling, fastrand::f64())))
    }
}

/// The longest delay before retry `n` (from 0): `BASE_DELAY × 2ⁿ`, at most `MAX_DELAY`.
fn ceiling(n: u32) -> Duration {
    BASE_DELAY
        .saturating_mul(1u32.checked_shl(n).unwrap_or(u32::MAX))
        .min(MAX_DELAY)
}

/// Full jitter: `unit` (uniform in `[0, 1)`) of `ceiling`.
fn jittered(ceiling: Duration, unit: f64) -> Duration {
    ceiling.mul_f64(unit.clamp(0.0, 1.0))
}

/// The wait a `Retry-After` header value asks for, at most [`MAX_RETRY_AFTER`]: a number of
/// seconds (`120`), or an HTTP date (`Wed, 21 Oct 2015 07:28:00 GMT`, and the two obsolete
/// forms, read by the `httpdate` crate) counted from `now`, a date already past being no wait.
/// `None` when the value is neither.
pub(crate) fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    let wait = if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // More seconds than a u64 holds is still "longer than the cap".
        Duration::from_secs(value.parse().unwrap_or(u64::MAX))
    } else {
        let at = httpdate::parse_http_date(value).ok()?;
        at.duration_since(now).unwrap_or(Duration::ZERO)
    };
    Some(wait.min(MAX_RETRY_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_stay_under_a_doubling_ceiling_and_the_cap() {
        assert_eq!(ceiling(0), Duration::from_millis(100));
        assert_eq!(ceiling(1), Duration::from_millis(200));
        assert_eq!(ceiling(2), Duration::from_millis(400));
        assert_eq!(ceiling(4), MAX_DELAY);
        assert_eq!(ceiling(40), MAX_DELAY);
        assert_eq!(jittered(ceiling(2), 0.0), Duration::ZERO);
        assert_eq!(jittered(ceiling(2), 0.5), Duration::from_millis(200));
        assert!(jittered(ceiling(2), 0.999_999) <= ceiling(2));
        for _ in 0..1000 {
            let mut b = Backoff::new();
            for n in 0..MAX_RETRIES {
                let d = b.next_delay(None).expect("a retry left");
                assert!(d <= ceiling(n), "retry {n}: {d:?}");
            }
            assert_eq!(b.next_delay(None), None);
        }
        // Jitter: the delays of one retry are not all alike.
        let firsts: std::collections::BTreeSet<Duration> = (0..100)
            .map(|_| Backoff::new().next_delay(None).unwrap())
            .collect();
        assert!(firsts.len() > 10, "{firsts:?}");
    }

    #[test]
    fn retry_after_is_waited_within_the_retries() {
        let mut b = Backoff::new();
        let asked = Some(Duration::from_secs(3));
        assert_eq!(b.next_delay(asked), asked);
        assert_eq!(b.next_delay(asked), asked);
        assert_eq!(b.next_delay(asked), asked);
        assert_eq!(b.next_delay(asked), None);
    }

    #[test]
    fn retry_after_reads_seconds_and_dates_capped() {
        // Wed, 21 Oct 2015 07:28:00 GMT
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        let s = |secs| Some(Duration::from_secs(secs));
        assert_eq!(retry_after("0", now), s(0));
        assert_eq!(retry_after("3", now), s(3));
        assert_eq!(retry_after(" 7 ", now), s(7));
        assert_eq!(retry_after("120", now), Some(MAX_RETRY_AFTER));
        assert_eq!(
            retry_after("99999999999999999999999", now),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(retry_after("Wed, 21 Oct 2015 07:28:05 GMT", now), s(5));
        assert_eq!(retry_after("Wednesday, 21-Oct-15 07:28:04 GMT", now), s(4));
        assert_eq!(retry_after("Wed Oct 21 07:28:02 2015", now), s(2));
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 08:28:00 GMT", now),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now), s(0));
        for bad in ["", "-1", "1.5", "soon", "3 s", "2015-10-21T07:28:05Z"] {
            assert_eq!(retry_after(bad, now), None, "{bad:?}");
        }
    }
}
