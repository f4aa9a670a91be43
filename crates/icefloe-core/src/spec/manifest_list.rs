//! Manifest lists (spec: "Manifest Lists"): one Avro file per snapshot naming its manifests.

use super::avro::Record;

/// Whether a manifest tracks data files or delete files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManifestContent {
    Data,
    Deletes,
}

/// One `manifest_file` entry of a manifest list.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestFile {
    pub manifest_path: String,
    pub manifest_length: i64,
    pub partition_spec_id: i32,
    pub content: ManifestContent,
    /// Sequence number of the snapshot that added the manifest (0 in v1).
    pub sequence_number: i64,
    pub min_sequence_number: i64,
    pub added_snapshot_id: i64,
    pub added_files_count: Option<i64>,
    pub existing_files_count: Option<i64>,
    pub deleted_files_count: Option<i64>,
    pub added_rows_count: Option<i64>,
    pub existing_rows_count: Option<i64>,
    pub deleted_rows_count: Option<i64>,
    /// v3: first `_row_id` of rows in data files of this manifest that inherit one.
    pub first_row_id: Option<i64>,
    /// `partitions`: one summary per field of the manifest's partition spec, in order (empty
    /// when the list records none).
    pub partitions: Vec<FieldSummary>,
}

/// A `field_summary` of a manifest list entry: what the partition values of one partition
/// field hold across the manifest's files (bounds in the binary single-value serialization of
/// the field's result type).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldSummary {
    pub contains_null: bool,
    /// `None` when not recorded (v1 lists, writers before it existed).
    pub contains_nan: Option<bool>,
    pub lower_bound: Option<Vec<u8>>,
    pub upper_bound: Option<Vec<u8>>,
}

fn field_summaries(r: &Record<'_>) -> Vec<FieldSummary> {
    let bool_of = |r: &Record<'_>, name: &str| match r.get(name) {
        Some(apache_avro::types::Value::Boolean(b)) => Some(*b),
        _ => None,
    };
    let bytes_of = |r: &Record<'_>, name: &str| match r.get(name) {
        Some(apache_avro::types::Value::Bytes(b)) => Some(b.clone()),
        _ => None,
    };
    r.array("partitions")
        .unwrap_or(&[])
        .iter()
        .map(|v| match Record::new(v) {
            // A summary that says nothing rules nothing out: contains_null is assumed.
            None => FieldSummary {
                contains_null: true,
                ..FieldSummary::default()
            },
            Some(s) => FieldSummary {
                contains_null: bool_of(&s, "contains_null").unwrap_or(true),
                contains_nan: bool_of(&s, "contains_nan"),
                lower_bound: bytes_of(&s, "lower_bound"),
                upper_bound: bytes_of(&s, "upper_bound"),
            },
        })
        .collect()
}

/// Decodes a manifest list. `path` names the file for errors.
pub fn read_manifest_list(bytes: &[u8], path: &str) -> crate::Result<Vec<ManifestFile>> {
    // A corrupt file can make the Avro decoder panic; that is this file's error.
    crate::guard::catch(
        || decode_manifest_list(bytes, path),
        |m| crate::Error::manifest(path, format!("Avro decoder panicked: {m}")),
    )
}

fn decode_manifest_list(bytes: &[u8], path: &str) -> crate::Result<Vec<ManifestFile>> {
    let err = |r: String| crate::Error::manifest(path, r);
    let reader = super::avro::open_container(bytes).map_err(err)?;
    let mut out = Vec::new();
    for value in reader {
        let value = value.map_err(|e| err(format!("corrupt Avro data: {e}")))?;
        let r = Record::new(&value).ok_or_else(|| err("entry is not a record".into()))?;
        let manifest_path = r
            .str("manifest_path")
            .ok_or_else(|| err("entry without manifest_path".into()))?
            .to_string();
        out.push(ManifestFile {
            manifest_length: r.i64("manifest_length").unwrap_or(0),
            partition_spec_id: r.i64("partition_spec_id").unwrap_or(0) as i32,
            content: match r.i64("content").unwrap_or(0) {
                0 => ManifestContent::Data,
                1 => ManifestContent::Deletes,
                c => {
                    return Err(err(format!(
                        "{manifest_path}: unknown manifest content {c}"
                    )))
                }
            },
            sequence_number: r.i64("sequence_number").unwrap_or(0),
            min_sequence_number: r.i64("min_sequence_number").unwrap_or(0),
            added_snapshot_id: r.i64("added_snapshot_id").unwrap_or(0),
            added_files_count: r
                .i64("added_files_count")
                .or_else(|| r.i64("added_data_files_count")),
            existing_files_count: r
                .i64("existing_files_count")
                .or_else(|| r.i64("existing_data_files_count")),
            deleted_files_count: r
                .i64("deleted_files_count")
                .or_else(|| r.i64("deleted_data_files_count")),
            added_rows_count: r.i64("added_rows_count"),
            existing_rows_count: r.i64("existing_rows_count"),
            deleted_rows_count: r.i64("deleted_rows_count"),
            first_row_id: r.i64("first_row_id"),
            partitions: field_summaries(&r),
            manifest_path,
        });
    }
    Ok(out)
}
