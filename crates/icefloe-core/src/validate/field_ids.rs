//! A data file's field ids against its manifest entry and the table's schemas (spec: "Column
//! Projection": columns are found by field id). A field id edited in a data file, or in the
//! manifest, would otherwise read a column as null with no error.
//!
//! Iceberg Java reads such files (a missing column comes from the partition tuple of an
//! identity partition, else reads as null), so what is found here is a warning.

use std::collections::HashSet;

use parquet::schema::types::{SchemaDescriptor, Type as ParquetType};

use crate::spec::DataFile;
use crate::warning::{Rule, Subject, Warning, Warnings};

/// Every field id of a Parquet schema, at every level (struct fields, list elements, map keys
/// and values).
pub fn parquet_field_ids(schema: &SchemaDescriptor) -> HashSet<i32> {
    fn walk(t: &ParquetType, out: &mut HashSet<i32>) {
        if t.get_basic_info().has_id() {
            out.insert(t.get_basic_info().id());
        }
        if t.is_group() {
            for c in t.get_fields() {
                walk(c, out);
            }
        }
    }
    let mut out = HashSet::new();
    for c in schema.root_schema().get_fields() {
        walk(c, &mut out);
    }
    out
}

/// Checks the field ids `file_ids` found in data file `f` (`path` names it), when the file has
/// any (files without ids are matched through the name mapping, by name):
/// - every field id the manifest entry records metrics for (`value_counts`,
///   `null_value_counts`, `nan_value_counts`, bounds) is a column of the file, or the source
///   of an identity partition field (Hive-style files store none), since writers
///   compute those metrics from the file's own columns (spec: "Manifests", the metric maps are
///   keyed by column id);
/// - at least one id of the file is a field of some schema of the table (`in_some_schema`),
///   since every data file is written with one of them.
///
/// What is found goes to `warnings` (an error when strict). `identity_sources` are the source
/// field ids of the identity fields of the file's partition spec: a Hive-style file stores no
/// column for them, and writers record their metrics from the partition value.
pub fn check_field_ids(
    file_ids: &HashSet<i32>,
    f: &DataFile,
    in_some_schema: impl Fn(i32) -> bool,
    identity_sources: &[i32],
    path: &str,
    warnings: &Warnings,
) -> crate::Result<()> {
    if file_ids.is_empty() {
        return Ok(());
    }
    let recorded = f
        .value_counts
        .keys()
        .chain(f.null_value_counts.keys())
        .chain(f.nan_value_counts.keys())
        .chain(f.lower_bounds.keys())
        .chain(f.upper_bounds.keys());
    // A Hive-style file stores no column for an identity partition source; its metrics come
    // from the partition value, and the column reads from the partition tuple: valid.
    let mut missing: Vec<i32> = recorded
        .filter(|id| !file_ids.contains(id) && !identity_sources.contains(id))
        .copied()
        .collect();
    missing.sort_unstable();
    missing.dedup();
    if let Some(id) = missing.first() {
        warnings.report(Warning::new(
            Rule::MetricsWithoutColumn,
            Subject::DataFile,
            path,
            format!(
                "has no column with field id {id} (not an identity partition source), but its manifest entry records metrics for field id {id} (spec: \"Manifests\", metrics are keyed by the file's column ids; \"Column Projection\")"
            ),
        ))?;
    }
    if !file_ids.iter().any(|id| in_some_schema(*id)) {
        let mut ids: Vec<i32> = file_ids.iter().copied().collect();
        ids.sort_unstable();
        warnings.report(Warning::new(
            Rule::NoKnownFieldIds,
            Subject::DataFile,
            path,
            format!(
                "has field ids {ids:?}, none of which is a field of any schema of the table (spec: \"Column Projection\", columns are matched by field id)"
            ),
        ))?;
    }
    Ok(())
}
