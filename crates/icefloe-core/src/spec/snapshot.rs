//! Snapshots, refs (branches and tags) and the snapshot log (spec: "Snapshots",
//! "Snapshot References").

use std::collections::BTreeMap;

use serde_json::Value as Json;

/// One snapshot of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub snapshot_id: i64,
    pub parent_snapshot_id: Option<i64>,
    /// Data sequence number of the snapshot (0 for v1 tables).
    pub sequence_number: i64,
    /// Milliseconds since the epoch.
    pub timestamp_ms: i64,
    /// Path of the manifest list (v2+; optional in v1).
    pub manifest_list: Option<String>,
    /// v1 only: manifest paths listed in the snapshot itself.
    pub manifests: Vec<String>,
    /// The summary; `operation` is among its keys.
    pub summary: BTreeMap<String, String>,
    pub schema_id: Option<i32>,
    /// v3: first row id assigned to rows added in this snapshot.
    pub first_row_id: Option<i64>,
    /// v3: number of row ids assigned by this snapshot.
    pub added_rows: Option<i64>,
}

/// The long `key` of object `v` (a snapshot, a ref, the metadata), if present and not null. Errors: a value that is not an
/// integer that fits a long (spec: "Snapshots" and "Primitive Types", `long` is a 64-bit
/// signed integer), such as a snapshot id written unsigned above 2^63 - 1; reading it as
/// absent would misreport it, and no other reading would name the right snapshot.
pub(crate) fn long_field(v: &Json, key: &str, path: &str) -> crate::Result<Option<i64>> {
    match v.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(n) => n.as_i64().map(Some).ok_or_else(|| {
            crate::Error::metadata(
                path,
                format!(
                    "{key} {n} is not a long (a 64-bit signed integer, -9223372036854775808 to 9223372036854775807; spec: \"Snapshots\")"
                ),
            )
        }),
    }
}

impl Snapshot {
    /// Parses a snapshot object; `path` names the metadata file for errors.
    pub fn from_json(v: &Json, path: &str) -> crate::Result<Snapshot> {
        let i = |k: &str| v.get(k).and_then(Json::as_i64);
        let long = |k: &str| long_field(v, k, path);
        let snapshot_id = long("snapshot-id")?
            .ok_or_else(|| crate::Error::metadata(path, "snapshot without snapshot-id"))?;
        Ok(Snapshot {
            snapshot_id,
            parent_snapshot_id: long("parent-snapshot-id")?,
            sequence_number: long("sequence-number")?.unwrap_or(0),
            timestamp_ms: long("timestamp-ms")?.unwrap_or(0),
            manifest_list: v
                .get("manifest-list")
                .and_then(Json::as_str)
                .map(str::to_string),
            manifests: v
                .get("manifests")
                .and_then(Json::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|m| m.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            summary: v
                .get("summary")
                .and_then(Json::as_object)
                .map(|o| {
                    o.iter()
                        .map(|(k, v)| {
                            let s = v
                                .as_str()
                                .map(str::to_string)
                                .unwrap_or_else(|| v.to_string());
                            (k.clone(), s)
                        })
                        .collect()
                })
                .unwrap_or_default(),
            schema_id: i("schema-id")
                .map(|s| {
                    i32::try_from(s).map_err(|_| {
                        crate::Error::metadata(
                            path,
                            format!("snapshot schema-id {s} is not an int"),
                        )
                    })
                })
                .transpose()?,
            first_row_id: long("first-row-id")?,
            added_rows: long("added-rows")?,
        })
    }

    /// The operation from the summary (`append`, `overwrite`, `delete`, `replace`).
    pub fn operation(&self) -> &str {
        self.summary
            .get("operation")
            .map(String::as_str)
            .unwrap_or("")
    }

    /// A numeric summary field such as `total-records`.
    pub fn summary_i64(&self, key: &str) -> Option<i64> {
        self.summary.get(key).and_then(|v| v.parse().ok())
    }
}

/// Whether a ref is a branch or a tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefType {
    Branch,
    Tag,
}

/// A named ref to a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotRef {
    pub snapshot_id: i64,
    pub ref_type: RefType,
    /// Branches: how many snapshots of the branch expiry keeps at least.
    pub min_snapshots_to_keep: Option<i32>,
    /// Branches: the longest a snapshot of the branch is kept (unless among the minimum).
    pub max_snapshot_age_ms: Option<i64>,
    /// How old the ref's snapshot may be before expiry removes the ref (never for `main`).
    pub max_ref_age_ms: Option<i64>,
}

/// A table statistics file (spec: "Table Statistics") or partition statistics file, and the
/// snapshot it describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatisticsFile {
    pub snapshot_id: i64,
    pub path: String,
}

/// One entry of `snapshot-log` (when `main` changed to which snapshot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotLogEntry {
    pub timestamp_ms: i64,
    pub snapshot_id: i64,
}

/// One entry of `metadata-log`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataLogEntry {
    pub timestamp_ms: i64,
    pub metadata_file: String,
}
