//! Column statistics of a snapshot from its manifests' column metrics, for a database's
//! planner statistics (ANALYZE): per field id, aggregated over the live data files a scan
//! plans, without reading data (spec: "Manifests", data file fields `value_counts`,
//! `null_value_counts`, `nan_value_counts`, `lower_bounds`, `upper_bounds`).
//!
//! # Rules
//! - Metrics describe the rows a data file was written with: rows a deletion vector, a position
//!   delete file or an equality delete removed later are still counted. So the null fraction
//!   is given only when no delete applies to any planned data file (it is then exact), and
//!   only when every one of them has both `value_counts` and `null_value_counts` for the
//!   field; otherwise there is none and the caller keeps its own estimate from live rows.
//! - Bounds: the spec requires a file's lower bound to be at most, and its upper bound at
//!   least, every non-null, non-NaN value of the column in the file. Writers may truncate
//!   `string` and `binary` bounds (a truncated upper bound is not a value) and order `uuid`
//!   bounds differently, so bounds are given only for types whose bounds are values of the
//!   column: `boolean`, `int`, `long`, `float`, `double`, `decimal`, `date`, `time` and the
//!   timestamp types. The column's bounds are the smallest lower bound and the largest upper
//!   bound over the files that hold a non-null, non-NaN value of it (their counts say which
//!   do not); none when such a file lacks a bound that decodes in the field's type (metrics
//!   mode `counts` or `none`, a file written before the field existed, a bound of a type it
//!   was not promoted from) or has a NaN bound. Deleted rows only widen them: they still
//!   enclose every live value, and equal the live rows' extremes when no delete applies
//!   (for writers that store the column's minimum and maximum, as Iceberg Java and PyIceberg
//!   do for these types).

use std::cmp::Ordering;

use super::prune::compare;
use super::task::FileScanTask;
use crate::spec::{DataFile, Literal, PrimitiveType};

/// What the metrics of a snapshot's live data files say about one column.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnStats {
    /// Null values over all values (rows, for a top-level column); `None` unless no delete
    /// applies and every file has both counts.
    pub null_fraction: Option<f64>,
    /// At most every live non-null, non-NaN value (see the module's rules).
    pub lower: Option<Literal>,
    /// At least every live non-null, non-NaN value.
    pub upper: Option<Literal>,
}

/// Whether bounds of type `ty` are values of the column (never truncated, ordered as the
/// values are).
pub fn bounds_are_values(ty: &PrimitiveType) -> bool {
    use PrimitiveType as P;
    matches!(
        ty,
        P::Boolean
            | P::Int
            | P::Long
            | P::Float
            | P::Double
            | P::Decimal { .. }
            | P::Date
            | P::Time
            | P::Timestamp
            | P::Timestamptz
            | P::TimestampNs
            | P::TimestamptzNs
    )
}

/// The statistics of the top-level column `field_id` of type `ty` (the type of the schema the
/// scan reads) over `tasks`, the data files a scan of one snapshot plans (unpruned, for
/// statistics of the whole table).
pub fn column_stats(tasks: &[FileScanTask], field_id: i32, ty: &PrimitiveType) -> ColumnStats {
    ColumnStats {
        null_fraction: null_fraction(tasks, field_id),
        lower: bound(tasks, field_id, ty, Ordering::Less),
        upper: bound(tasks, field_id, ty, Ordering::Greater),
    }
}

fn null_fraction(tasks: &[FileScanTask], field_id: i32) -> Option<f64> {
    if tasks.iter().any(FileScanTask::has_deletes) {
        return None;
    }
    let (mut nulls, mut values) = (0i64, 0i64);
    for t in tasks {
        let f = &t.data_file;
        let (n, v) = (
            *f.null_value_counts.get(&field_id)?,
            *f.value_counts.get(&field_id)?,
        );
        // A corrupt count is no statistic.
        if n < 0 || v < n {
            return None;
        }
        nulls = nulls.checked_add(n)?;
        values = values.checked_add(v)?;
    }
    (values > 0).then(|| nulls as f64 / values as f64)
}

/// Whether the counts show that file `f` holds no non-null, non-NaN value of the field (then
/// it rightly has no bounds).
fn only_nulls_and_nans(f: &DataFile, field_id: i32) -> bool {
    let Some(&values) = f.value_counts.get(&field_id) else {
        return false;
    };
    let nulls = f.null_value_counts.get(&field_id).copied();
    let nans = f.nan_value_counts.get(&field_id).copied().unwrap_or(0);
    nulls.is_some_and(|n| n.saturating_add(nans) >= values)
}

/// The most extreme bound in direction `towards` (`Less`: the smallest lower bound).
fn bound(
    tasks: &[FileScanTask],
    field_id: i32,
    ty: &PrimitiveType,
    towards: Ordering,
) -> Option<Literal> {
    if !bounds_are_values(ty) {
        return None;
    }
    let mut best: Option<Literal> = None;
    for t in tasks {
        let f = &t.data_file;
        let bounds = if towards == Ordering::Less {
            &f.lower_bounds
        } else {
            &f.upper_bounds
        };
        let Some(bytes) = bounds.get(&field_id) else {
            if only_nulls_and_nans(f, field_id) {
                continue;
            }
            return None;
        };
        let b = Literal::from_bytes(bytes, ty)?;
        if matches!(b, Literal::Float(x) if x.is_nan())
            || matches!(b, Literal::Double(x) if x.is_nan())
        {
            return None;
        }
        best = match best {
            None => Some(b),
            Some(cur) => match compare(&b, &cur)? {
                o if o == towards => Some(b),
                _ => Some(cur),
            },
        };
    }
    best
}

#[cfg(test)]
mod tests;
