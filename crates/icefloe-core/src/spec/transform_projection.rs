//! Projection through partition transforms: the source values a partition value stands for.
//!
//! A partition value of `year`/`month`/`day`/`hour` (on `date` and timestamp columns) or
//! `truncate[W]` (on `int`/`long`/`decimal`) covers an inclusive range of source values; the
//! pruner ([`crate::scan::prune`]) compares a predicate on the source column with that range.
//! `identity`, `bucket[N]` ([`super::bucket`]) and `truncate[W]` on strings and binary
//! (a prefix) are projected by the pruner itself, since they need the predicate.

use chrono::{Datelike, NaiveDate};

use super::{Literal, PrimitiveType, Transform};

/// The inclusive range of source values that a partition value of a monotonic transform
/// covers, in the source type's units; `None` where not derived.
pub(crate) fn range_of_partition(
    transform: &Transform,
    value: &Literal,
    ty: &PrimitiveType,
) -> Option<(Literal, Literal)> {
    if let (Transform::Truncate(w), Literal::Decimal(v)) = (transform, value) {
        // truncate[W] of a decimal truncates the unscaled value: rows hold [v, v + W - 1].
        let hi = v.checked_add(*w as i128 - 1)?;
        return (*w > 0).then_some((Literal::Decimal(*v), Literal::Decimal(hi)));
    }
    let n = match value {
        Literal::Int(v) => *v as i64,
        Literal::Date(v) => *v as i64,
        Literal::Long(v) => *v,
        _ => return None,
    };
    match (transform, ty) {
        (Transform::Truncate(w), PrimitiveType::Int | PrimitiveType::Long) => {
            let w = *w as i64;
            if w <= 0 {
                return None;
            }
            let hi = n.checked_add(w - 1)?;
            Some(match ty {
                PrimitiveType::Int => (
                    Literal::Int(i32::try_from(n).ok()?),
                    Literal::Int(i32::try_from(hi).unwrap_or(i32::MAX)),
                ),
                _ => (Literal::Long(n), Literal::Long(hi)),
            })
        }
        (Transform::Year | Transform::Month | Transform::Day | Transform::Hour, _) => {
            // Start and end (exclusive) of the partition in days or hours since the epoch.
            let (start_days, end_days) = match transform {
                Transform::Year => (
                    days_of_month(n.checked_mul(12)?)?,
                    days_of_month(n.checked_add(1)?.checked_mul(12)?)?,
                ),
                Transform::Month => (days_of_month(n)?, days_of_month(n.checked_add(1)?)?),
                Transform::Day => (n, n.checked_add(1)?),
                _ => (0, 0),
            };
            let per_day: i64 = match ty {
                PrimitiveType::Date => 1,
                PrimitiveType::Timestamp | PrimitiveType::Timestamptz => 86_400_000_000,
                PrimitiveType::TimestampNs | PrimitiveType::TimestamptzNs => 86_400_000_000_000,
                _ => return None,
            };
            let (lo, hi_excl) = if matches!(transform, Transform::Hour) {
                if per_day == 1 {
                    return None;
                }
                let per_hour = per_day / 24;
                (
                    n.checked_mul(per_hour)?,
                    n.checked_add(1)?.checked_mul(per_hour)?,
                )
            } else {
                (
                    start_days.checked_mul(per_day)?,
                    end_days.checked_mul(per_day)?,
                )
            };
            let hi = hi_excl.checked_sub(1)?;
            Some(match ty {
                PrimitiveType::Date => (
                    Literal::Date(i32::try_from(lo).ok()?),
                    Literal::Date(i32::try_from(hi).ok()?),
                ),
                _ => (Literal::Timestamp(lo), Literal::Timestamp(hi)),
            })
        }
        _ => None,
    }
}

/// Days since the epoch of the first day of month `m` (months since 1970-01).
fn days_of_month(m: i64) -> Option<i64> {
    let year = 1970 + m.div_euclid(12);
    let month = m.rem_euclid(12) as u32 + 1;
    let d = NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, 1)?;
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1)?;
    debug_assert_eq!(d.day(), 1);
    Some((d - epoch).num_days())
}
