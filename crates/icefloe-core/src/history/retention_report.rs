//! An expiry run as a listing (the CLI's text and CSV, the mount's `retention.csv`) and as
//! one JSON document, so every front-end shows the same thing.

use serde_json::{json, Value};

use super::retention::ReadableRemoved;
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

/// One item of an expiry run: a snapshot, a ref, or a file the run deletes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionItem {
    /// `snapshot`, `branch`, `tag`, the file kind ([`FileKind::label`]), or
    /// `readable_removed_rows`.
    pub item: &'static str,
    /// The snapshot's operation, the ref's name, the file's path, or how many removed rows.
    pub name: String,
    pub snapshot_id: Option<i64>,
    /// When the snapshot (of a ref: its snapshot) was committed.
    pub timestamp_ms: Option<i64>,
    /// `kept`, `expired`, `deleted`, or for removed rows `readable` (`unknown` without row
    /// lineage).
    pub status: &'static str,
    /// For a kept snapshot or ref, when a later expiry would remove it if nothing else
    /// changed (`Some(None)`: never); for removed rows, until when they stay readable;
    /// `None` for the others.
    pub expires_at_ms: Option<Option<i64>>,
}

impl ExpiryRun {
    /// Every snapshot (oldest first), every ref, every file the run deletes, and (when
    /// evaluated) the rows deleted or overwritten on the current branch that kept snapshots
    /// still read, one item per instant they stop being readable.
    pub fn items(&self, m: &TableMetadata) -> Vec<RetentionItem> {
        let mut out = Vec::new();
        for s in m.snapshots_in_order() {
            let kept = self.kept.snapshots.contains(&s.snapshot_id);
            out.push(RetentionItem {
                item: "snapshot",
                name: s.operation().to_string(),
                snapshot_id: Some(s.snapshot_id),
                timestamp_ms: Some(s.timestamp_ms),
                status: if kept { "kept" } else { "expired" },
                expires_at_ms: kept
                    .then(|| self.expiry.snapshots.get(&s.snapshot_id).copied().flatten()),
            });
        }
        for (name, r) in &m.refs {
            let kept = self.kept.refs.contains(name);
            out.push(RetentionItem {
                item: match r.ref_type {
                    RefType::Branch => "branch",
                    RefType::Tag => "tag",
                },
                name: name.clone(),
                snapshot_id: Some(r.snapshot_id),
                timestamp_ms: m.snapshot(r.snapshot_id).map(|s| s.timestamp_ms),
                status: if kept { "kept" } else { "expired" },
                expires_at_ms: kept.then(|| self.expiry.refs.get(name).copied().flatten()),
            });
        }
        for (kind, path) in &self.deleted_files {
            out.push(RetentionItem {
                item: kind.label(),
                name: path.clone(),
                snapshot_id: None,
                timestamp_ms: None,
                status: "deleted",
                expires_at_ms: None,
            });
        }
        let removed = |name: String, status, until| RetentionItem {
            item: "readable_removed_rows",
            name,
            snapshot_id: None,
            timestamp_ms: None,
            status,
            expires_at_ms: until,
        };
        match &self.readable_removed {
            ReadableRemoved::NotEvaluated => {}
            ReadableRemoved::NoLineage => out.push(removed("".into(), "unknown", None)),
            ReadableRemoved::Rows(groups) => {
                for g in groups {
                    out.push(removed(g.rows.to_string(), "readable", Some(g.until_ms)));
                }
            }
        }
        out
    }

    /// How many deleted or overwritten rows stay readable and until when, as one line (none
    /// when not evaluated).
    pub fn readable_summary(&self) -> Option<String> {
        Some(match &self.readable_removed {
            ReadableRemoved::NotEvaluated => return None,
            ReadableRemoved::NoLineage => {
                "rows deleted or overwritten but readable through older snapshots: unknown \
                 (snapshots without row lineage)"
                    .to_string()
            }
            ReadableRemoved::Rows(g) if g.is_empty() => {
                "rows deleted or overwritten but readable through older snapshots: none".into()
            }
            ReadableRemoved::Rows(groups) => {
                let total: u64 = groups.iter().map(|g| g.rows).sum();
                let parts: Vec<String> = groups
                    .iter()
                    .map(|g| format!("{} until {}", g.rows, when(g.until_ms)))
                    .collect();
                format!(
                    "rows deleted or overwritten but readable through older snapshots: {total} \
                     ({})",
                    parts.join(", ")
                )
            }
        })
    }

    /// [`items`](Self::items) as a listing: `item`, `name`, `snapshot_id`, `timestamp`,
    /// `status`, `expires_at` (`never`; empty where it does not apply).
    pub fn listing(&self, m: &TableMetadata) -> Listing {
        let header = [
            "item",
            "name",
            "snapshot_id",
            "timestamp",
            "status",
            "expires_at",
        ];
        let rows = self
            .items(m)
            .into_iter()
            .map(|i| {
                vec![
                    i.item.to_string(),
                    i.name,
                    i.snapshot_id.map(|id| id.to_string()).unwrap_or_default(),
                    i.timestamp_ms.map(format_timestamp_ms).unwrap_or_default(),
                    i.status.to_string(),
                    i.expires_at_ms.map(when).unwrap_or_default(),
                ]
            })
            .collect();
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
            "readable_removed_rows": match &self.readable_removed {
                ReadableRemoved::NotEvaluated | ReadableRemoved::NoLineage => Value::Null,
                ReadableRemoved::Rows(groups) => groups.iter()
                    .map(|g| json!({"rows": g.rows, "until_ms": g.until_ms}))
                    .collect::<Vec<_>>()
                    .into(),
            },
        })
    }
}
