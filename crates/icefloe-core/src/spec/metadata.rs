//! Table metadata files, format versions 1 to 3 (spec: "Table Metadata").

use std::collections::BTreeMap;

use serde_json::Value as Json;

use super::metadata_json::Lists;
use super::partition::PartitionSpec;
use super::schema::Schema;
use super::snapshot::{
    MetadataLogEntry, RefType, Snapshot, SnapshotLogEntry, SnapshotRef, StatisticsFile,
};
use super::sort_order::SortOrder;

/// Highest format version this reader implements.
pub const MAX_FORMAT_VERSION: i64 = 3;

/// A parsed `*.metadata.json`.
#[derive(Debug, Clone)]
pub struct TableMetadata {
    pub format_version: i64,
    pub table_uuid: Option<String>,
    /// The table root recorded by the writer; file paths in the table start with it.
    pub location: String,
    pub last_sequence_number: i64,
    pub last_updated_ms: i64,
    pub last_column_id: i32,
    pub schemas: Vec<Schema>,
    pub current_schema_id: i32,
    pub partition_specs: Vec<PartitionSpec>,
    pub default_spec_id: i32,
    pub sort_orders: Vec<SortOrder>,
    pub default_sort_order_id: i64,
    pub properties: BTreeMap<String, String>,
    pub current_snapshot_id: Option<i64>,
    pub snapshots: Vec<Snapshot>,
    pub refs: BTreeMap<String, SnapshotRef>,
    pub snapshot_log: Vec<SnapshotLogEntry>,
    pub metadata_log: Vec<MetadataLogEntry>,
    /// v3: the next row id to assign.
    pub next_row_id: Option<i64>,
    /// Table and partition statistics files (`statistics`, `partition-statistics`).
    pub statistics: Vec<StatisticsFile>,
    /// The rules this metadata breaks without changing what it reads
    /// ([`crate::validate::metadata::check_metadata`]); a table replays them into its
    /// [`crate::Warnings`] each time it is opened.
    pub warnings: Vec<crate::Warning>,
}

/// The reason of a metadata error (its text without the path).
fn reason(e: crate::Error) -> String {
    match e {
        crate::Error::Metadata { reason, .. } => reason,
        e => e.to_string(),
    }
}

impl TableMetadata {
    /// [`TableMetadata::from_json_bytes`] before its checks (which live with the other
    /// checks, in [`crate::validate::metadata`]).
    pub(crate) fn decode_json_bytes(bytes: &[u8], path: &str) -> crate::Result<TableMetadata> {
        let (v, lists) = super::metadata_json::decode(bytes, path)?;
        Self::from_parts(&v, lists, path)
    }

    /// [`TableMetadata::from_json`] before its checks.
    pub(crate) fn decode_json(v: &Json, path: &str) -> crate::Result<TableMetadata> {
        if !v.is_object() {
            return Err(crate::Error::metadata(path, "not a JSON object"));
        }
        Self::from_parts(v, Lists::from_value(v, path)?, path)
    }

    /// Parses a metadata object whose long lists are already decoded into `lists`.
    fn from_parts(v: &Json, lists: Lists, path: &str) -> crate::Result<TableMetadata> {
        let err = |r: &str| crate::Error::metadata(path, r);
        let i = |k: &str| v.get(k).and_then(Json::as_i64);
        let format_version = i("format-version").ok_or_else(|| err("missing format-version"))?;
        if !(1..=MAX_FORMAT_VERSION).contains(&format_version) {
            return Err(crate::Error::UnsupportedFormatVersion {
                path: path.to_string(),
                version: format_version,
            });
        }
        let location = v
            .get("location")
            .and_then(Json::as_str)
            .ok_or_else(|| err("missing location"))?
            .trim_end_matches('/')
            .to_string();

        if v.get("schemas").is_some_and(|s| !s.is_array()) {
            return Err(err("schemas is not a list"));
        }
        let mut schemas = match v.get("schemas").and_then(Json::as_array) {
            Some(a) => a
                .iter()
                .map(|s| Schema::from_json(s, path))
                .collect::<crate::Result<Vec<_>>>()?,
            None => Vec::new(),
        };
        if schemas.is_empty() {
            // v1 keeps a single `schema`.
            let s = v.get("schema").ok_or_else(|| err("no schemas"))?;
            schemas.push(Schema::from_json(s, path)?);
        }
        let current_schema_id = match i("current-schema-id") {
            Some(x) => i32::try_from(x).map_err(|_| err("current-schema-id is not an int"))?,
            None if format_version >= 2 => {
                return Err(err(
                    "missing current-schema-id (required in format version 2 and 3)",
                ))
            }
            None => schemas[0].schema_id,
        };

        let mut partition_specs: Vec<PartitionSpec> = v
            .get("partition-specs")
            .and_then(Json::as_array)
            .map(|a| a.iter().map(|s| PartitionSpec::from_json(s, 0)).collect())
            .unwrap_or_default();
        if partition_specs.is_empty() {
            if let Some(s) = v.get("partition-spec") {
                partition_specs.push(PartitionSpec::from_json(s, 0));
            } else {
                partition_specs.push(PartitionSpec::default());
            }
        }
        let default_spec_id = i("default-spec-id").unwrap_or(0) as i32;

        let sort_orders = v
            .get("sort-orders")
            .and_then(Json::as_array)
            .map(|a| a.iter().map(SortOrder::from_json).collect())
            .unwrap_or_default();

        let snapshots = lists.snapshots.unwrap_or_default();
        // -1 is how writers spell "no current snapshot".
        let current_snapshot_id =
            super::snapshot::long_field(v, "current-snapshot-id", path)?.filter(|id| *id != -1);

        let mut refs = BTreeMap::new();
        if v.get("refs")
            .is_some_and(|r| !r.is_object() && !r.is_null())
        {
            return Err(err("refs is not an object"));
        }
        if let Some(o) = v.get("refs").and_then(Json::as_object) {
            for (name, r) in o {
                let snapshot_id = super::snapshot::long_field(r, "snapshot-id", path)
                    .map_err(|e| err(&format!("ref {name}: {}", reason(e))))?
                    .ok_or_else(|| err(&format!("ref {name} without snapshot-id")))?;
                let ref_type = match r.get("type").and_then(Json::as_str) {
                    Some("tag") => RefType::Tag,
                    Some("branch") => RefType::Branch,
                    t => {
                        return Err(err(&format!(
                            "ref {name} has type {t:?}, not branch or tag"
                        )))
                    }
                };
                let int = |k: &str| r.get(k).and_then(Json::as_i64);
                let min_snapshots_to_keep = int("min-snapshots-to-keep")
                    .map(|n| {
                        i32::try_from(n).map_err(|_| {
                            err(&format!(
                                "ref {name} has min-snapshots-to-keep {n}, not an int"
                            ))
                        })
                    })
                    .transpose()?;
                refs.insert(
                    name.clone(),
                    SnapshotRef {
                        snapshot_id,
                        ref_type,
                        min_snapshots_to_keep,
                        max_snapshot_age_ms: int("max-snapshot-age-ms"),
                        max_ref_age_ms: int("max-ref-age-ms"),
                    },
                );
            }
        }
        // Before refs existed, `main` was the current snapshot.
        if let (false, Some(id)) = (refs.contains_key("main"), current_snapshot_id) {
            refs.insert(
                "main".to_string(),
                SnapshotRef {
                    snapshot_id: id,
                    ref_type: RefType::Branch,
                    min_snapshots_to_keep: None,
                    max_snapshot_age_ms: None,
                    max_ref_age_ms: None,
                },
            );
        }

        let mut statistics = Vec::new();
        for (key, path_key) in [
            ("statistics", "statistics-path"),
            ("partition-statistics", "statistics-path"),
        ] {
            for f in v.get(key).and_then(Json::as_array).into_iter().flatten() {
                let (Some(snapshot_id), Some(p)) = (
                    f.get("snapshot-id").and_then(Json::as_i64),
                    f.get(path_key).and_then(Json::as_str),
                ) else {
                    return Err(err(&format!(
                        "an entry of {key} lacks snapshot-id or statistics-path"
                    )));
                };
                statistics.push(StatisticsFile {
                    snapshot_id,
                    path: p.to_string(),
                });
            }
        }
        let snapshot_log = lists.snapshot_log.unwrap_or_default();
        let metadata_log = lists.metadata_log.unwrap_or_default();

        let metadata = TableMetadata {
            format_version,
            table_uuid: v
                .get("table-uuid")
                .and_then(Json::as_str)
                .map(str::to_string),
            location,
            last_sequence_number: i("last-sequence-number").unwrap_or(0),
            last_updated_ms: i("last-updated-ms").unwrap_or(0),
            last_column_id: i("last-column-id").unwrap_or(0) as i32,
            schemas,
            current_schema_id,
            partition_specs,
            default_spec_id,
            sort_orders,
            default_sort_order_id: i("default-sort-order-id").unwrap_or(0),
            properties: v
                .get("properties")
                .and_then(Json::as_object)
                .map(|o| {
                    o.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                        .collect()
                })
                .unwrap_or_default(),
            current_snapshot_id,
            snapshots,
            refs,
            snapshot_log,
            metadata_log,
            next_row_id: i("next-row-id"),
            statistics,
            warnings: Vec::new(),
        };
        Ok(metadata)
    }

    /// The schema with this id.
    pub fn schema(&self, id: i32) -> Option<&Schema> {
        self.schemas.iter().find(|s| s.schema_id == id)
    }

    /// The current schema.
    pub fn current_schema(&self) -> &Schema {
        self.schema(self.current_schema_id)
            .unwrap_or(&self.schemas[0])
    }

    /// The schema a snapshot reads with: its own `schema-id`, else the current schema.
    pub fn snapshot_schema(&self, snapshot: &Snapshot) -> &Schema {
        snapshot
            .schema_id
            .and_then(|id| self.schema(id))
            .unwrap_or_else(|| self.current_schema())
    }

    /// The partition spec with this id.
    pub fn partition_spec(&self, id: i32) -> Option<&PartitionSpec> {
        self.partition_specs.iter().find(|s| s.spec_id == id)
    }

    /// The snapshot with this id.
    pub fn snapshot(&self, id: i64) -> Option<&Snapshot> {
        self.snapshots.iter().find(|s| s.snapshot_id == id)
    }

    /// Every snapshot, oldest first: by sequence number, then by timestamp (format v1 has no
    /// sequence numbers: they are all 0, so by timestamp); snapshots equal in both keep their
    /// order in the metadata's `snapshots` list. The order of every snapshot listing
    /// (`icefloe snapshots`, the mount's `snapshots/` and `snapshots.csv`, the FDW's).
    pub fn snapshots_in_order(&self) -> Vec<&Snapshot> {
        let mut snaps: Vec<&Snapshot> = self.snapshots.iter().collect();
        // Stable: ties keep the metadata's order.
        snaps.sort_by_key(|s| (s.sequence_number, s.timestamp_ms));
        snaps
    }

    /// The current snapshot of `main`, if the table has any.
    pub fn current_snapshot(&self) -> Option<&Snapshot> {
        self.current_snapshot_id.and_then(|id| self.snapshot(id))
    }

    /// Names of the refs pointing at a snapshot.
    pub fn refs_of(&self, snapshot_id: i64) -> Vec<&str> {
        self.refs
            .iter()
            .filter(|(_, r)| r.snapshot_id == snapshot_id)
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// The name mapping from `schema.name-mapping.default`, if set.
    pub fn name_mapping(&self) -> Option<&str> {
        self.properties
            .get("schema.name-mapping.default")
            .map(String::as_str)
    }
}
