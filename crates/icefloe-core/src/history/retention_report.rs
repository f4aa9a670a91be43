//! An expiry run as a listing (the CLI's text and CSV, the mount's `retention.csv`) and as
//! one JSON document, so every front-end shows the same thing.

use serde_json::{json, Value};

use super::retention::{ExpiryRun, FileKind};
use crate::listing::{format_timestamp_ms, Listing};
use crate::spec::{RefType, TableMetadata};

impl FileKind {
    /// The kind as a listing shows it.
    pub fn label(self) -> &'static str {
        match self {
            FileKind::DataFile => "data_file",
            FileKind::PositionDeleteFile => "position_delete_file",
            FileKind::EqualityDeleteFile => "equality_delete_file",
            FileKind::ManifestFile => "manifest_file",
            FileKind::ManifestList => "manifest_list",
            FileKind::StatisticsFile => "statistics_file",
        }
    }
}

fn when(t: Option<i64>) -> String {
    t.map(format_timestamp_ms).unwrap_or_else(|| "never".into())
}

impl ExpiryRun {
    /// One row per snapshot (oldest first), per ref and per file the run deletes: `item`
    /// (`snapshot`, `branch`, `tag`, or the file kind), `name` (operation, ref name or path),
    /// `snapshot_id`, `timestamp`, `status` (`kept`, `expired`, `deleted`) and `expires_at`
    /// (when a kept item would expire if nothing else changed; `never`).
    pub fn listing(&self, m: &TableMetadata) -> Listing {
        let header = [
            "item",
            "name",
            "snapshot_id",
            "timestamp",
            "status",
            "expires_at",
        ];
        let mut rows = Vec::new();
        let mut snaps: Vec<_> = m.snapshots.iter().collect();
        snaps.sort_by_key(|s| (s.sequence_number, s.timestamp_ms));
        for s in snaps {
            let kept = self.kept.snapshots.contains(&s.snapshot_id);
            rows.push(vec![
                "snapshot".into(),
                s.operation().to_string(),
                s.snapshot_id.to_string(),
                format_timestamp_ms(s.timestamp_ms),
                if kept { "kept" } else { "expired" }.into(),
                if kept {
                    when(self.expiry.snapshots.get(&s.snapshot_id).copied().flatten())
                } else {
                    String::new()
                },
            ]);
        }
        for (name, r) in &m.refs {
            let kept = self.kept.refs.contains(name);
            rows.push(vec![
                match r.ref_type {
                    RefType::Branch => "branch",
                    RefType::Tag => "tag",
                }
                .into(),
                name.clone(),
                r.snapshot_id.to_string(),
                m.snapshot(r.snapshot_id)
                    .map(|s| format_timestamp_ms(s.timestamp_ms))
                    .unwrap_or_default(),
                if kept { "kept" } else { "expired" }.into(),
                if kept {
                    when(self.expiry.refs.get(name).copied().flatten())
                } else {
                    String::new()
                },
            ]);
        }
        for (kind, path) in &self.deleted_files {
            rows.push(vec![
                kind.label().into(),
                path.clone(),
                String::new(),
                String::new(),
                "deleted".into(),
                String::new(),
            ]);
        }
        Listing {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows,
        }
    }

    /// The run as one JSON document: `now_ms`, `settings`, `expired_snapshots`,
    /// `expired_refs`, `metrics` (Iceberg's expire-snapshots counts), `deleted_files`, and
    /// per kept snapshot and ref `expires_at_ms` (null: never).
    pub fn to_json(&self) -> Value {
        let mut metrics = serde_json::Map::new();
        for (k, n) in self.metrics() {
            metrics.insert(k.into(), json!(n));
        }
        let mut kept: Vec<(&i64, &Option<i64>)> = self.expiry.snapshots.iter().collect();
        kept.sort();
        json!({
            "now_ms": self.now_ms,
            "settings": {
                "max_snapshot_age_ms": self.settings.max_snapshot_age_ms,
                "min_snapshots_to_keep": self.settings.min_snapshots,
                "max_ref_age_ms": self.settings.max_ref_age_ms,
            },
            "expired_snapshots": self.expired_snapshots,
            "expired_refs": self.expired_refs,
            "metrics": metrics,
            "deleted_files": self.deleted_files.iter()
                .map(|(k, p)| json!({"kind": k.label(), "path": p}))
                .collect::<Vec<_>>(),
            "kept_snapshots": kept.iter()
                .map(|(id, t)| json!({"snapshot_id": id, "expires_at_ms": t}))
                .collect::<Vec<_>>(),
            "kept_refs": self.expiry.refs.iter()
                .map(|(n, t)| json!({"name": n, "expires_at_ms": t}))
                .collect::<Vec<_>>(),
        })
    }
}
