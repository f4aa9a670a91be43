//! File pruning by simple predicates (spec: "Scan Planning": data files whose partition values
//! or column metrics show that no row can match a filter need not be read).
//!
//! A front-end that filters rows itself (a database that rechecks every condition) passes the
//! conditions it can express as a conjunction of [`Predicate`]s; [`Pruner::may_match`] then
//! says, per data file, whether any row of it *may* match. It is conservative: a file is
//! skipped only when its metadata proves that no row matches; missing, truncated or
//! undecodable metrics keep the file. Deletes only ever remove rows, so pruning data files
//! before their deletes are applied is sound.
//!
//! # Semantics
//! - Predicates apply to top-level primitive columns, by field id, with values in the units of
//!   the column's type in the reading schema ([`Literal`]'s conventions: days for `date`,
//!   microseconds for `time`/`timestamp`/`timestamptz`, nanoseconds for the `_ns` types, the
//!   unscaled value at the column's scale for decimals). Predicates on other columns are
//!   ignored (they never prune).
//! - SQL NULL semantics: NULL satisfies no comparison and no `IN`.
//! - Floating point: the pruner is correct whether NaN is unordered (IEEE) or ordered above
//!   every number and equal to itself (Postgres, Spark): a NaN literal never prunes, and
//!   `>`/`>=` prune a float column by its upper bound only when the file's NaN count for it is
//!   known to be zero. `-0.0` and `0.0` compare equal.
//! - Strings compare by UTF-8 bytes, binary and fixed by unsigned bytes, as Iceberg bounds do.
//!   A caller whose own string ordering differs (a collation) must not pass range predicates
//!   on strings. UUID bounds are never used (writers disagree on their ordering); identity
//!   partition values of any type are.
//!
//! # What prunes
//! - Column metrics: `lower_bounds`/`upper_bounds` (decoded with [`Literal::from_bytes`] in the
//!   column's current type, so files written before a type promotion still prune when the
//!   bytes decode), `null_value_counts` (all-null and no-null files), `nan_value_counts`.
//! - Partition values of the file's own spec: `identity`; `year`/`month`/`day`/`hour` on
//!   `date` and timestamp columns (as the value range the partition covers); `truncate[W]` on
//!   `int`/`long`/`decimal` (as a range) and on `string`/`binary` (as a prefix: equality,
//!   `IN` and ranges); `bucket[N]` (equality and `IN`: the literal's bucket, by the spec's
//!   hash, [`crate::spec::bucket`]); a null partition value of any of these transforms means
//!   the column is null in every row.

use std::cmp::Ordering;
use std::collections::HashMap;

use super::task::FileScanTask;
// Re-exported: front-ends name the predicates by their old path.
pub use crate::expr::predicate::{CmpOp, Predicate};
use crate::spec::manifest_list::FieldSummary;
use crate::spec::transform_projection::range_of_partition;
use crate::spec::{
    bucket, DataFile, Literal, PartitionSpec, PrimitiveType, Schema, TableMetadata, Transform, Type,
};

/// How many files a pruning pass kept and skipped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneStats {
    /// Files that may hold matching rows (to be read).
    pub kept: usize,
    /// Files proven to hold no matching row.
    pub skipped: usize,
}

/// Predicates bound to a table's schema and partition specs, ready to test data files.
#[derive(Debug, Clone)]
pub struct Pruner {
    predicates: Vec<Predicate>,
    types: HashMap<i32, PrimitiveType>,
    specs: HashMap<i32, PartitionSpec>,
}

impl Pruner {
    /// Binds `predicates` to `schema` (the reading schema) and the partition specs of
    /// `metadata`. Predicates on fields that are not top-level primitive columns of `schema`
    /// are dropped.
    pub fn new(metadata: &TableMetadata, schema: &Schema, predicates: Vec<Predicate>) -> Pruner {
        let types: HashMap<i32, PrimitiveType> = schema
            .columns()
            .iter()
            .filter_map(|f| match &f.field_type {
                Type::Primitive(p) => Some((f.id, p.clone())),
                _ => None,
            })
            .collect();
        let predicates = predicates
            .into_iter()
            .filter(|p| p.only_fields_in(&types))
            .collect();
        let specs = metadata
            .partition_specs
            .iter()
            .map(|s| (s.spec_id, s.clone()))
            .collect();
        Pruner {
            predicates,
            types,
            specs,
        }
    }

    /// The predicates that take part in pruning.
    pub fn predicates(&self) -> &[Predicate] {
        &self.predicates
    }

    /// Whether no predicate takes part (every file is kept).
    pub fn is_empty(&self) -> bool {
        self.predicates.is_empty()
    }

    /// Whether any row of `file` may satisfy every predicate. `false` only when the file's
    /// metadata proves otherwise.
    pub fn may_match(&self, file: &DataFile) -> bool {
        self.predicates.iter().all(|p| self.may_match_one(p, file))
    }

    /// Whether the file's identity partition values alone decide every predicate for the
    /// file's rows, and say each holds: then every row of the file matches (an identity
    /// partition field holds the column's value in every row of its files). `false` when
    /// undecided (a column without an identity field in the file's spec, a NaN).
    pub fn all_rows_match(&self, file: &DataFile) -> bool {
        self.predicates
            .iter()
            .all(|p| self.holds_by_identity(p, file))
    }

    /// Whether every predicate names only columns of a type with an exact total order that
    /// are the source of an identity field in every partition spec of the table, so that
    /// [`Pruner::all_rows_match`] decides every data file.
    pub fn decided_by_identity_partitions(&self) -> bool {
        !self.specs.is_empty()
            && self.field_ids().iter().all(|id| {
                !matches!(
                    self.types.get(id),
                    None | Some(PrimitiveType::Float | PrimitiveType::Double)
                ) && self.specs.values().all(|s| {
                    s.fields
                        .iter()
                        .any(|f| f.source_id == *id && f.transform == Transform::Identity)
                })
            })
    }

    fn holds_by_identity(&self, p: &Predicate, file: &DataFile) -> bool {
        let id = match p {
            Predicate::And(ps) => return ps.iter().all(|q| self.holds_by_identity(q, file)),
            Predicate::Or(ps) => return ps.iter().any(|q| self.holds_by_identity(q, file)),
            p => match p.field_id() {
                Some(id) => id,
                None => return false,
            },
        };
        let Some(spec) = self.specs.get(&file.spec_id) else {
            return false;
        };
        let Some(value) = spec
            .fields
            .iter()
            .zip(&file.partition)
            .find(|(f, _)| f.source_id == id && f.transform == Transform::Identity)
            .map(|(_, v)| v)
        else {
            return false;
        };
        match (p, value) {
            (Predicate::IsNull { .. }, v) => v.is_none(),
            (Predicate::IsNotNull { .. }, v) => v.is_some(),
            (_, None) => false,
            (Predicate::Cmp { op, value: lit, .. }, Some(v)) => match compare(v, lit) {
                Some(o) => match op {
                    CmpOp::Eq => o == Ordering::Equal,
                    CmpOp::Lt => o == Ordering::Less,
                    CmpOp::LtEq => o != Ordering::Greater,
                    CmpOp::Gt => o == Ordering::Greater,
                    CmpOp::GtEq => o != Ordering::Less,
                    // No rule for `!=`: undecided.
                    CmpOp::NotEq => false,
                },
                None => false,
            },
            (Predicate::In { values, .. }, Some(v)) => values
                .iter()
                .any(|l| compare(v, l) == Some(Ordering::Equal)),
            _ => false,
        }
    }

    /// Keeps the tasks whose data file may match, in order, and counts what was skipped.
    pub fn prune(&self, tasks: Vec<FileScanTask>) -> (Vec<FileScanTask>, PruneStats) {
        let before = tasks.len();
        let kept: Vec<FileScanTask> = if self.is_empty() {
            tasks
        } else {
            tasks
                .into_iter()
                .filter(|t| self.may_match(&t.data_file))
                .collect()
        };
        let stats = PruneStats {
            kept: kept.len(),
            skipped: before - kept.len(),
        };
        (kept, stats)
    }

    /// Whether any data file of a manifest may hold a row satisfying every predicate, by the
    /// manifest list's partition summaries (spec: "Manifest Lists", `field_summary`):
    /// `spec_id` is the manifest's partition spec, `types` the result types of its fields.
    /// Summaries that do not line up with the spec prune nothing.
    pub fn may_match_manifest(
        &self,
        spec_id: i32,
        summaries: &[FieldSummary],
        types: &[PrimitiveType],
    ) -> bool {
        let Some(spec) = self.specs.get(&spec_id) else {
            return true;
        };
        if summaries.len() != spec.fields.len() || types.len() != spec.fields.len() {
            return true;
        }
        self.predicates
            .iter()
            .all(|p| self.summary_eval(p, spec, summaries, types))
    }

    fn summary_eval(
        &self,
        p: &Predicate,
        spec: &PartitionSpec,
        summaries: &[FieldSummary],
        types: &[PrimitiveType],
    ) -> bool {
        let id = match p {
            Predicate::And(ps) => {
                return ps
                    .iter()
                    .all(|q| self.summary_eval(q, spec, summaries, types))
            }
            Predicate::Or(ps) => {
                return ps
                    .iter()
                    .any(|q| self.summary_eval(q, spec, summaries, types))
            }
            p if unprunable(p) => return true,
            p => match p.field_id() {
                Some(id) => id,
                None => return true,
            },
        };
        let Some(ty) = self.types.get(&id) else {
            return true;
        };
        spec.fields
            .iter()
            .zip(summaries)
            .zip(types)
            .filter(|((f, _), _)| f.source_id == id)
            .all(|((f, s), part_ty)| summary_may_match(p, &f.transform, s, part_ty, ty))
    }

    fn may_match_one(&self, p: &Predicate, file: &DataFile) -> bool {
        let partition = Some((file.spec_id, file.partition.as_slice()));
        self.eval(p, &|id, ty| Metrics::of(file, id, ty), partition)
    }

    /// Whether any row of a file of partition spec `spec_id` with the partition values
    /// `partition` may satisfy every predicate, by those values alone (column metrics
    /// unknown): `false` means [`Pruner::may_match`] is `false` for the file whatever its
    /// metrics, so a manifest entry can be ruled out before its metrics are decoded.
    pub fn may_match_partition_values(&self, spec_id: i32, partition: &[Option<Literal>]) -> bool {
        let unknown = |_: i32, _: &PrimitiveType| Metrics::default();
        self.predicates
            .iter()
            .all(|p| self.eval(p, &unknown, Some((spec_id, partition))))
    }

    /// Whether any row of a part of a file (a Parquet row group) may satisfy every predicate,
    /// given its column statistics by field id and its row count. Partition values are not
    /// looked at (the file as a whole was checked against them).
    pub fn may_match_stats(&self, stats: &HashMap<i32, PartStats>, rows: u64) -> bool {
        let metrics = |id: i32, ty: &PrimitiveType| match stats.get(&id) {
            Some(c) => c.metrics(rows, ty),
            None => Metrics::default(),
        };
        self.predicates.iter().all(|p| self.eval(p, &metrics, None))
    }

    /// The field ids the predicates name.
    pub fn field_ids(&self) -> Vec<i32> {
        fn walk(p: &Predicate, out: &mut Vec<i32>) {
            match p {
                Predicate::And(ps) | Predicate::Or(ps) => ps.iter().for_each(|q| walk(q, out)),
                p => out.extend(p.field_id()),
            }
        }
        let mut out = Vec::new();
        self.predicates.iter().for_each(|p| walk(p, &mut out));
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The type of a field the predicates may name.
    pub fn field_type(&self, id: i32) -> Option<&PrimitiveType> {
        self.types.get(&id)
    }

    fn eval(
        &self,
        p: &Predicate,
        metrics: &dyn Fn(i32, &PrimitiveType) -> Metrics,
        partition: Option<(i32, &[Option<Literal>])>,
    ) -> bool {
        let id = match p {
            Predicate::And(ps) => return ps.iter().all(|q| self.eval(q, metrics, partition)),
            Predicate::Or(ps) => return ps.iter().any(|q| self.eval(q, metrics, partition)),
            p if unprunable(p) => return true,
            p => match p.field_id() {
                Some(id) => id,
                None => return true,
            },
        };
        let Some(ty) = self.types.get(&id) else {
            return true;
        };
        if !may_match_range(p, &metrics(id, ty), ty) {
            return false;
        }
        let Some((spec_id, values)) = partition else {
            return true;
        };
        let Some(spec) = self.specs.get(&spec_id) else {
            return true;
        };
        for (field, value) in spec.fields.iter().zip(values) {
            if field.source_id != id {
                continue;
            }
            if !may_match_partition(p, &field.transform, value.as_ref(), ty) {
                return false;
            }
        }
        true
    }
}

/// What the statistics of one column of a part of a data file (a Parquet row group or page)
/// say (bounds already in the column's Iceberg type; `None` when unknown). Not the table-wide
/// [`crate::scan::column_stats::ColumnStats`] of a snapshot's live data files.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PartStats {
    pub lower: Option<Literal>,
    pub upper: Option<Literal>,
    pub null_count: Option<u64>,
}

impl PartStats {
    fn metrics(&self, rows: u64, ty: &PrimitiveType) -> Metrics {
        let usable = |l: &Option<Literal>| l.clone().filter(|l| !is_nan(l));
        let is_float = matches!(ty, PrimitiveType::Float | PrimitiveType::Double);
        Metrics {
            lower: usable(&self.lower),
            upper: usable(&self.upper),
            all_null: rows > 0 && self.null_count == Some(rows),
            no_null: self.null_count == Some(0),
            // Row-group statistics carry no NaN count.
            no_nan: !is_float,
        }
    }
}

/// What a file's metadata says about one column: value range and null/NaN counts.
#[derive(Debug, Default)]
struct Metrics {
    lower: Option<Literal>,
    upper: Option<Literal>,
    /// Every row is null in this column.
    all_null: bool,
    /// No row is null in this column.
    no_null: bool,
    /// No row is NaN in this column (always true for non-float types).
    no_nan: bool,
}

impl Metrics {
    fn of(file: &DataFile, id: i32, ty: &PrimitiveType) -> Metrics {
        let is_float = matches!(ty, PrimitiveType::Float | PrimitiveType::Double);
        let usable = |l: Literal| match l {
            Literal::Float(f) if f.is_nan() => None,
            Literal::Double(f) if f.is_nan() => None,
            l => Some(l),
        };
        let bound = |m: &HashMap<i32, Vec<u8>>| {
            if matches!(ty, PrimitiveType::Uuid) {
                return None;
            }
            m.get(&id)
                .and_then(|b| Literal::from_bytes(b, ty))
                .and_then(usable)
        };
        let nulls = file.null_value_counts.get(&id).copied();
        Metrics {
            lower: bound(&file.lower_bounds),
            upper: bound(&file.upper_bounds),
            all_null: file.record_count > 0 && nulls == Some(file.record_count),
            no_null: nulls == Some(0),
            no_nan: !is_float || file.nan_value_counts.get(&id).copied() == Some(0),
        }
    }
}

/// Whether a literal is a float NaN.
fn is_nan(l: &Literal) -> bool {
    matches!(l, Literal::Float(f) if f.is_nan()) || matches!(l, Literal::Double(f) if f.is_nan())
}

/// Orders two literals of compatible kinds; `None` when they cannot be compared soundly.
pub(crate) fn compare(a: &Literal, b: &Literal) -> Option<Ordering> {
    use Literal as L;
    let int = |l: &Literal| match l {
        L::Int(v) => Some(*v as i64),
        L::Long(v) => Some(*v),
        _ => None,
    };
    let float = |l: &Literal| match l {
        L::Float(v) => Some(*v as f64),
        L::Double(v) => Some(*v),
        _ => None,
    };
    match (a, b) {
        (L::Boolean(x), L::Boolean(y)) => Some(x.cmp(y)),
        (L::Int(_) | L::Long(_), L::Int(_) | L::Long(_)) => Some(int(a)?.cmp(&int(b)?)),
        (L::Float(_) | L::Double(_), L::Float(_) | L::Double(_)) => {
            float(a)?.partial_cmp(&float(b)?)
        }
        (L::Decimal(x), L::Decimal(y)) => Some(x.cmp(y)),
        (L::Date(x), L::Date(y)) => Some(x.cmp(y)),
        (L::Time(x), L::Time(y)) => Some(x.cmp(y)),
        (L::Timestamp(x), L::Timestamp(y)) => Some(x.cmp(y)),
        (L::String(x), L::String(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (L::Binary(x), L::Binary(y)) => Some(x.cmp(y)),
        (L::Uuid(x), L::Uuid(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

/// Whether some value in `[lower, upper]` (either end may be unknown) may satisfy `p`, given
/// the null and NaN facts.
fn may_match_range(p: &Predicate, m: &Metrics, ty: &PrimitiveType) -> bool {
    let is_float = matches!(ty, PrimitiveType::Float | PrimitiveType::Double);
    match p {
        Predicate::IsNull { .. } => !m.no_null,
        Predicate::IsNotNull { .. } => !m.all_null,
        Predicate::Cmp { op, value, .. } => {
            if m.all_null {
                return false;
            }
            cmp_may_match(
                *op,
                value,
                m.lower.as_ref(),
                m.upper.as_ref(),
                is_float && !m.no_nan,
            )
        }
        Predicate::In { values, .. } => {
            if m.all_null {
                return false;
            }
            values
                .iter()
                .any(|v| cmp_may_match(CmpOp::Eq, v, m.lower.as_ref(), m.upper.as_ref(), true))
        }
        // Combinations are split by `Pruner::may_match_one` before they get here.
        Predicate::And(_) | Predicate::Or(_) => true,
    }
}

/// Whether a value in `[lower, upper]` may satisfy `x op value`. `nan_possible`: the column
/// may hold NaN, which a database ordering NaN above all numbers counts as greater.
fn cmp_may_match(
    op: CmpOp,
    value: &Literal,
    lower: Option<&Literal>,
    upper: Option<&Literal>,
    nan_possible: bool,
) -> bool {
    if is_nan(value) {
        return true;
    }
    // Some(ordering) only when comparable; unknown comparisons keep the file.
    let lo = lower.and_then(|l| compare(l, value));
    let hi = upper.and_then(|u| compare(u, value));
    match op {
        CmpOp::Eq => !(lo == Some(Ordering::Greater) || hi == Some(Ordering::Less)),
        CmpOp::Lt => lo != Some(Ordering::Greater) && lo != Some(Ordering::Equal),
        CmpOp::LtEq => lo != Some(Ordering::Greater),
        CmpOp::Gt => nan_possible || (hi != Some(Ordering::Less) && hi != Some(Ordering::Equal)),
        CmpOp::GtEq => nan_possible || hi != Some(Ordering::Less),
        CmpOp::NotEq => true,
    }
}

/// Whether `p` is a comparison pruning has no rule for (`!=`): any file may hold a row
/// satisfying it, whatever its metadata says.
fn unprunable(p: &Predicate) -> bool {
    matches!(
        p,
        Predicate::Cmp {
            op: CmpOp::NotEq,
            ..
        }
    )
}

/// Whether rows of a file whose partition field (with `transform` over the predicate's column)
/// has value `value` may satisfy `p`.
fn may_match_partition(
    p: &Predicate,
    transform: &Transform,
    value: Option<&Literal>,
    ty: &PrimitiveType,
) -> bool {
    // Transforms that map null to null and only null: a null partition value means the
    // column is null in every row of the file, and a non-null one that it is never null.
    let null_preserving = matches!(
        transform,
        Transform::Identity
            | Transform::Bucket(_)
            | Transform::Truncate(_)
            | Transform::Year
            | Transform::Month
            | Transform::Day
            | Transform::Hour
    );
    if !null_preserving {
        return true;
    }
    let Some(value) = value else {
        return matches!(p, Predicate::IsNull { .. });
    };
    if matches!(p, Predicate::IsNull { .. }) {
        return false;
    }
    if matches!(p, Predicate::IsNotNull { .. }) {
        return true;
    }
    match transform {
        Transform::Identity => {
            let m = Metrics {
                lower: Some(value.clone()),
                upper: Some(value.clone()),
                all_null: false,
                no_null: true,
                no_nan: !is_nan(value),
            };
            // A NaN partition value is not a usable bound.
            if is_nan(value) {
                return true;
            }
            may_match_range(p, &m, ty)
        }
        Transform::Bucket(n) => {
            // Equal values hash alike: a value can only be in the file of its own bucket.
            let Literal::Int(b) = value else {
                return true;
            };
            let fits = |v: &Literal| bucket::bucket(v, ty, *n).is_none_or(|x| x == *b);
            match p {
                Predicate::Cmp {
                    op: CmpOp::Eq,
                    value,
                    ..
                } => fits(value),
                Predicate::In { values, .. } => values.iter().any(fits),
                _ => true,
            }
        }
        Transform::Truncate(w) if matches!(ty, PrimitiveType::String | PrimitiveType::Binary) => {
            may_match_prefix(p, value, *w as usize)
        }
        _ => match range_of_partition(transform, value, ty) {
            Some((lower, upper)) => {
                let m = Metrics {
                    lower: Some(lower),
                    upper: Some(upper),
                    all_null: false,
                    no_null: true,
                    no_nan: true,
                };
                may_match_range(p, &m, ty)
            }
            None => true,
        },
    }
}

/// Whether files whose values of one partition field (with `transform` over the predicate's
/// column of type `ty`) are summarized by `s` may hold a row satisfying `p`.
fn summary_may_match(
    p: &Predicate,
    transform: &Transform,
    s: &FieldSummary,
    part_ty: &PrimitiveType,
    ty: &PrimitiveType,
) -> bool {
    // As for partition values: with these transforms a null partition value is exactly a
    // null column value.
    if !matches!(
        transform,
        Transform::Identity
            | Transform::Bucket(_)
            | Transform::Truncate(_)
            | Transform::Year
            | Transform::Month
            | Transform::Day
            | Transform::Hour
    ) {
        return true;
    }
    let float_part = matches!(part_ty, PrimitiveType::Float | PrimitiveType::Double);
    let bound = |b: &Option<Vec<u8>>| {
        b.as_ref()
            .and_then(|b| Literal::from_bytes(b, part_ty))
            .filter(|l| !is_nan(l))
    };
    let (lower, upper) = (bound(&s.lower_bound), bound(&s.upper_bound));
    let no_nan = !float_part || s.contains_nan == Some(false);
    // The spec: a bound is null when every value is null or NaN.
    let all_null = s.contains_null && s.lower_bound.is_none() && s.upper_bound.is_none() && no_nan;
    match p {
        Predicate::IsNull { .. } => return s.contains_null,
        Predicate::IsNotNull { .. } => return !all_null,
        _ if all_null => return false,
        _ => {}
    }
    let (lower, upper) = match transform {
        Transform::Identity => (lower, upper),
        Transform::Bucket(n) => {
            // The buckets of the literals must meet the summary's range of buckets.
            let (Some(Literal::Int(lo)), Some(Literal::Int(hi))) = (&lower, &upper) else {
                return true;
            };
            let fits = |v: &Literal| bucket::bucket(v, ty, *n).is_none_or(|b| *lo <= b && b <= *hi);
            return match p {
                Predicate::Cmp {
                    op: CmpOp::Eq,
                    value,
                    ..
                } => fits(value),
                Predicate::In { values, .. } => values.iter().any(fits),
                _ => true,
            };
        }
        // Every value is at or above its own prefix, and so above the least prefix; the
        // greatest prefix bounds nothing (longer values follow it).
        Transform::Truncate(_) if matches!(ty, PrimitiveType::String | PrimitiveType::Binary) => {
            (lower, None)
        }
        t => (
            lower.and_then(|l| range_of_partition(t, &l, ty).map(|r| r.0)),
            upper.and_then(|u| range_of_partition(t, &u, ty).map(|r| r.1)),
        ),
    };
    let m = Metrics {
        lower,
        upper,
        all_null: false,
        no_null: !s.contains_null,
        no_nan: no_nan || !matches!(transform, Transform::Identity),
    };
    may_match_range(p, &m, ty)
}

/// A value's first `w` code points (strings) or bytes (binary), as bytes; `None` for a value
/// of another kind.
type Truncation = fn(&Literal, usize) -> Option<Vec<u8>>;

/// Whether rows of a file whose `truncate[w]` partition value of a string (first `w` code
/// points) or binary (first `w` bytes) column is `value` may satisfy `p`. Every row's value
/// starts with the partition value (values shorter than `w` are their own truncation), so
/// the partition value is the least of them, and a bound that does not start with it is
/// above or below all of them.
fn may_match_prefix(p: &Predicate, value: &Literal, w: usize) -> bool {
    // Values as bytes (UTF-8 for strings, as Iceberg orders them) and their truncation.
    let (prefix, truncate): (&[u8], Truncation) = match value {
        Literal::String(s) => (s.as_bytes(), |v, w| match v {
            Literal::String(s) => Some(s.chars().take(w).collect::<String>().into_bytes()),
            _ => None,
        }),
        Literal::Binary(b) => (b.as_slice(), |v, w| match v {
            Literal::Binary(b) => Some(b[..b.len().min(w)].to_vec()),
            _ => None,
        }),
        _ => return true,
    };
    let bytes = |v: &Literal| match v {
        Literal::String(s) => Some(s.as_bytes().to_vec()),
        Literal::Binary(b) => Some(b.clone()),
        _ => None,
    };
    let fits = |v: &Literal| truncate(v, w).is_none_or(|t| t == prefix);
    match p {
        Predicate::Cmp { op, value, .. } => {
            let Some(x) = bytes(value) else { return true };
            match op {
                CmpOp::Eq => fits(value),
                // The least value of the file is the prefix itself (when a row equals it) or
                // longer: `< x` may match iff prefix < x.
                CmpOp::Lt => prefix < x.as_slice(),
                CmpOp::LtEq => prefix <= x.as_slice(),
                // Values with the prefix reach above x iff x starts with the prefix (longer
                // values follow it) or the prefix is already above x.
                CmpOp::Gt | CmpOp::GtEq => x.starts_with(prefix) || prefix > x.as_slice(),
                CmpOp::NotEq => true,
            }
        }
        Predicate::In { values, .. } => values.iter().any(fits),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{NestedField, PartitionField, StructType};

    fn field(id: i32, name: &str, p: PrimitiveType) -> NestedField {
        NestedField::optional(id, name, Type::Primitive(p))
    }

    fn schema() -> Schema {
        Schema {
            schema_id: 0,
            fields: StructType {
                fields: vec![
                    field(1, "id", PrimitiveType::Long),
                    field(2, "x", PrimitiveType::Double),
                    field(3, "s", PrimitiveType::String),
                    field(4, "ts", PrimitiveType::Timestamp),
                    field(5, "d", PrimitiveType::Date),
                    field(
                        20,
                        "dec",
                        PrimitiveType::Decimal {
                            precision: 9,
                            scale: 2,
                        },
                    ),
                    field(21, "b", PrimitiveType::Binary),
                ],
            },
            identifier_field_ids: vec![],
        }
    }

    fn metadata(specs: Vec<PartitionSpec>) -> TableMetadata {
        let json = serde_json::json!({
            "format-version": 3, "location": "/t", "last-sequence-number": 0,
            "last-updated-ms": 0, "last-column-id": 5, "current-schema-id": 0,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
            "partition-specs": [{"spec-id": 0, "fields": []}], "default-spec-id": 0,
        });
        let mut m = TableMetadata::from_json(&json, "test").expect("metadata");
        m.partition_specs = specs;
        m
    }

    fn file(spec_id: i32, partition: Vec<Option<Literal>>) -> DataFile {
        DataFile::for_test("f.parquet", spec_id, partition, 10)
    }

    fn cmp(field_id: i32, op: CmpOp, value: Literal) -> Predicate {
        Predicate::Cmp {
            field_id,
            op,
            value,
        }
    }

    #[test]
    fn bounds_prune_comparisons() {
        let m = metadata(vec![PartitionSpec::default()]);
        let mut f = file(0, vec![]);
        f.lower_bounds.insert(1, 10i64.to_le_bytes().to_vec());
        f.upper_bounds.insert(1, 20i64.to_le_bytes().to_vec());
        let may = |p: Predicate| Pruner::new(&m, &schema(), vec![p]).may_match(&f);
        assert!(!may(cmp(1, CmpOp::Eq, Literal::Long(9))));
        assert!(may(cmp(1, CmpOp::Eq, Literal::Long(10))));
        assert!(may(cmp(1, CmpOp::Eq, Literal::Int(20))));
        assert!(!may(cmp(1, CmpOp::Eq, Literal::Long(21))));
        assert!(!may(cmp(1, CmpOp::Lt, Literal::Long(10))));
        assert!(may(cmp(1, CmpOp::LtEq, Literal::Long(10))));
        assert!(!may(cmp(1, CmpOp::Gt, Literal::Long(20))));
        assert!(may(cmp(1, CmpOp::GtEq, Literal::Long(20))));
        assert!(!may(Predicate::In {
            field_id: 1,
            values: vec![Literal::Long(1), Literal::Long(30)]
        }));
        assert!(may(Predicate::In {
            field_id: 1,
            values: vec![Literal::Long(1), Literal::Long(15)]
        }));
        // Unknown field ids and incomparable literals never prune.
        assert!(may(cmp(99, CmpOp::Eq, Literal::Long(0))));
        assert!(may(cmp(1, CmpOp::Eq, Literal::String("a".into()))));
    }

    #[test]
    fn and_or_combine() {
        let m = metadata(vec![PartitionSpec::default()]);
        let mut f = file(0, vec![]);
        f.lower_bounds.insert(1, 10i64.to_le_bytes().to_vec());
        f.upper_bounds.insert(1, 20i64.to_le_bytes().to_vec());
        let may = |p: Predicate| Pruner::new(&m, &schema(), vec![p]).may_match(&f);
        let out = || cmp(1, CmpOp::Eq, Literal::Long(5));
        let inside = || cmp(1, CmpOp::Eq, Literal::Long(15));
        assert!(!may(Predicate::Or(vec![
            out(),
            cmp(1, CmpOp::Gt, Literal::Long(20))
        ])));
        assert!(may(Predicate::Or(vec![out(), inside()])));
        assert!(!may(Predicate::Or(vec![])));
        assert!(!may(Predicate::Or(vec![
            Predicate::And(vec![inside(), out()]),
            out()
        ])));
        assert!(may(Predicate::And(vec![
            inside(),
            cmp(1, CmpOp::LtEq, Literal::Long(10))
        ])));
        // A disjunct on an unknown column could match anything: the OR is dropped.
        assert!(may(Predicate::Or(vec![
            out(),
            cmp(99, CmpOp::Eq, Literal::Long(0))
        ])));
    }

    #[test]
    fn null_counts_prune() {
        let m = metadata(vec![PartitionSpec::default()]);
        let mut f = file(0, vec![]);
        f.null_value_counts.insert(1, 0);
        f.null_value_counts.insert(3, 10);
        let may = |p: Predicate| Pruner::new(&m, &schema(), vec![p]).may_match(&f);
        assert!(!may(Predicate::IsNull { field_id: 1 }));
        assert!(may(Predicate::IsNotNull { field_id: 1 }));
        assert!(may(Predicate::IsNull { field_id: 3 }));
        assert!(!may(Predicate::IsNotNull { field_id: 3 }));
        assert!(!may(cmp(3, CmpOp::Eq, Literal::String("a".into()))));
        // No null counts for field 2: nothing known.
        assert!(may(Predicate::IsNull { field_id: 2 }));
    }

    #[test]
    fn floats_and_nan() {
        let m = metadata(vec![PartitionSpec::default()]);
        let mut f = file(0, vec![]);
        f.lower_bounds.insert(2, (-0.0f64).to_le_bytes().to_vec());
        f.upper_bounds.insert(2, 1.5f64.to_le_bytes().to_vec());
        let may = |f: &DataFile, p: Predicate| Pruner::new(&m, &schema(), vec![p]).may_match(f);
        assert!(may(&f, cmp(2, CmpOp::Eq, Literal::Double(0.0))));
        assert!(!may(&f, cmp(2, CmpOp::Lt, Literal::Double(0.0))));
        assert!(!may(&f, cmp(2, CmpOp::Eq, Literal::Double(2.0))));
        // NaN count unknown: a NaN row may be "greater" than anything.
        assert!(may(&f, cmp(2, CmpOp::Gt, Literal::Double(2.0))));
        f.nan_value_counts.insert(2, 0);
        assert!(!may(&f, cmp(2, CmpOp::Gt, Literal::Double(2.0))));
        assert!(may(&f, cmp(2, CmpOp::Eq, Literal::Double(f64::NAN))));
    }

    #[test]
    fn partitions_prune() {
        let spec = PartitionSpec {
            spec_id: 1,
            fields: vec![
                PartitionField {
                    source_id: 3,
                    field_id: 1000,
                    name: "s".into(),
                    transform: Transform::Identity,
                },
                PartitionField {
                    source_id: 4,
                    field_id: 1001,
                    name: "ts_day".into(),
                    transform: Transform::Day,
                },
                PartitionField {
                    source_id: 5,
                    field_id: 1002,
                    name: "d_month".into(),
                    transform: Transform::Month,
                },
                PartitionField {
                    source_id: 1,
                    field_id: 1003,
                    name: "id_bucket".into(),
                    transform: Transform::Bucket(4),
                },
            ],
        };
        let m = metadata(vec![spec]);
        // s = 'a/b', ts in 1970-01-02, d in 1970-02, bucket 3.
        let f = file(
            1,
            vec![
                Some(Literal::String("a/b".into())),
                Some(Literal::Date(1)),
                Some(Literal::Int(1)),
                Some(Literal::Int(3)),
            ],
        );
        let may = |p: Predicate| Pruner::new(&m, &schema(), vec![p]).may_match(&f);
        assert!(may(cmp(3, CmpOp::Eq, Literal::String("a/b".into()))));
        assert!(!may(cmp(3, CmpOp::Eq, Literal::String("a".into()))));
        assert!(!may(Predicate::IsNull { field_id: 3 }));
        let day = 86_400_000_000i64;
        assert!(may(cmp(4, CmpOp::Eq, Literal::Timestamp(day + 5))));
        assert!(!may(cmp(4, CmpOp::Lt, Literal::Timestamp(day))));
        assert!(may(cmp(4, CmpOp::LtEq, Literal::Timestamp(day))));
        assert!(!may(cmp(4, CmpOp::GtEq, Literal::Timestamp(2 * day))));
        assert!(may(cmp(4, CmpOp::Gt, Literal::Timestamp(2 * day - 2))));
        assert!(!may(cmp(4, CmpOp::Gt, Literal::Timestamp(2 * day - 1))));
        // February 1970 is days 31..=58.
        assert!(!may(cmp(5, CmpOp::Eq, Literal::Date(30))));
        assert!(may(cmp(5, CmpOp::Eq, Literal::Date(31))));
        assert!(may(cmp(5, CmpOp::Eq, Literal::Date(58))));
        assert!(!may(cmp(5, CmpOp::Eq, Literal::Date(59))));
        // bucket[4]: only values whose bucket is 3 may be in the file.
        let in_bucket = |v: i64| bucket::bucket(&Literal::Long(v), &PrimitiveType::Long, 4);
        let (hit, miss) = (
            (0..100).find(|v| in_bucket(*v) == Some(3)).unwrap(),
            (0..100).find(|v| in_bucket(*v) != Some(3)).unwrap(),
        );
        assert!(may(cmp(1, CmpOp::Eq, Literal::Long(hit))));
        assert!(!may(cmp(1, CmpOp::Eq, Literal::Long(miss))));
        assert!(may(Predicate::In {
            field_id: 1,
            values: vec![Literal::Long(miss), Literal::Long(hit)]
        }));
        assert!(!may(Predicate::In {
            field_id: 1,
            values: vec![Literal::Long(miss)]
        }));
        // Ranges say nothing about buckets.
        assert!(may(cmp(1, CmpOp::Lt, Literal::Long(miss))));
        // A null identity value: every row is null.
        let g = file(1, vec![None, None, None, None]);
        let may_g = |p: Predicate| Pruner::new(&m, &schema(), vec![p]).may_match(&g);
        assert!(may_g(Predicate::IsNull { field_id: 3 }));
        assert!(!may_g(cmp(3, CmpOp::Eq, Literal::String("a".into()))));
        assert!(!may_g(Predicate::IsNotNull { field_id: 4 }));
    }

    #[test]
    fn identity_values_decide_every_row() {
        let spec = PartitionSpec {
            spec_id: 1,
            fields: vec![PartitionField {
                source_id: 3,
                field_id: 1000,
                name: "s".into(),
                transform: Transform::Identity,
            }],
        };
        let m = metadata(vec![spec]);
        let f = file(1, vec![Some(Literal::String("b".into()))]);
        let null = file(1, vec![None]);
        let all =
            |p: Predicate, f: &DataFile| Pruner::new(&m, &schema(), vec![p]).all_rows_match(f);
        let s = |v: &str| Literal::String(v.into());
        assert!(all(cmp(3, CmpOp::Eq, s("b")), &f));
        assert!(!all(cmp(3, CmpOp::Eq, s("a")), &f));
        assert!(all(cmp(3, CmpOp::Gt, s("a")), &f));
        assert!(!all(cmp(3, CmpOp::Gt, s("b")), &f));
        assert!(all(cmp(3, CmpOp::GtEq, s("b")), &f));
        assert!(all(
            Predicate::In {
                field_id: 3,
                values: vec![s("a"), s("b")]
            },
            &f
        ));
        assert!(all(
            Predicate::Or(vec![
                cmp(3, CmpOp::Eq, s("x")),
                Predicate::IsNotNull { field_id: 3 }
            ]),
            &f
        ));
        assert!(!all(cmp(3, CmpOp::Eq, s("b")), &null));
        assert!(all(Predicate::IsNull { field_id: 3 }, &null));
        // A column without an identity field decides nothing.
        assert!(!all(cmp(1, CmpOp::Eq, Literal::Long(1)), &f));
        let p = |preds| Pruner::new(&m, &schema(), preds);
        assert!(p(vec![cmp(3, CmpOp::Eq, s("b"))]).decided_by_identity_partitions());
        assert!(!p(vec![cmp(1, CmpOp::Eq, Literal::Long(1))]).decided_by_identity_partitions());
    }

    #[test]
    fn string_truncate_partitions() {
        let spec = PartitionSpec {
            spec_id: 2,
            fields: vec![PartitionField {
                source_id: 3,
                field_id: 1000,
                name: "s_trunc".into(),
                transform: Transform::Truncate(3),
            }],
        };
        let m = metadata(vec![spec]);
        let f = file(2, vec![Some(Literal::String("abc".into()))]);
        let may = |p: Predicate| Pruner::new(&m, &schema(), vec![p]).may_match(&f);
        assert!(may(cmp(3, CmpOp::Eq, Literal::String("abcdef".into()))));
        assert!(!may(cmp(3, CmpOp::Eq, Literal::String("abd".into()))));
        assert!(!may(cmp(3, CmpOp::Eq, Literal::String("ab".into()))));
        // Every value starts with "abc": the least is "abc" itself.
        assert!(!may(cmp(3, CmpOp::Lt, Literal::String("a".into()))));
        assert!(!may(cmp(3, CmpOp::Lt, Literal::String("abc".into()))));
        assert!(may(cmp(3, CmpOp::LtEq, Literal::String("abc".into()))));
        assert!(may(cmp(3, CmpOp::Lt, Literal::String("abca".into()))));
        assert!(may(cmp(3, CmpOp::Lt, Literal::String("b".into()))));
        assert!(may(cmp(3, CmpOp::Gt, Literal::String("abczzz".into()))));
        assert!(may(cmp(3, CmpOp::Gt, Literal::String("ab".into()))));
        assert!(!may(cmp(3, CmpOp::Gt, Literal::String("abd".into()))));
        assert!(!may(cmp(3, CmpOp::GtEq, Literal::String("b".into()))));
    }

    #[test]
    fn decimal_and_binary_truncate_partitions() {
        let sch = schema();
        let spec = PartitionSpec {
            spec_id: 3,
            fields: vec![
                PartitionField {
                    source_id: 20,
                    field_id: 1000,
                    name: "d_trunc".into(),
                    transform: Transform::Truncate(50),
                },
                PartitionField {
                    source_id: 21,
                    field_id: 1001,
                    name: "b_trunc".into(),
                    transform: Transform::Truncate(2),
                },
            ],
        };
        let m = metadata(vec![spec]);
        // d in [1.00, 1.49] (unscaled 100..=149), b starts with 0x01 0x02.
        let file_ = file(
            3,
            vec![
                Some(Literal::Decimal(100)),
                Some(Literal::Binary(vec![1, 2])),
            ],
        );
        let may = |p: Predicate| Pruner::new(&m, &sch, vec![p]).may_match(&file_);
        assert!(may(cmp(20, CmpOp::Eq, Literal::Decimal(149))));
        assert!(!may(cmp(20, CmpOp::Eq, Literal::Decimal(150))));
        assert!(!may(cmp(20, CmpOp::Lt, Literal::Decimal(100))));
        assert!(may(cmp(21, CmpOp::Eq, Literal::Binary(vec![1, 2, 9]))));
        assert!(!may(cmp(21, CmpOp::Eq, Literal::Binary(vec![1, 3]))));
        assert!(!may(cmp(21, CmpOp::Gt, Literal::Binary(vec![1, 3]))));
    }
}
