//! Snapshot retention, evaluated as Iceberg's expire-snapshots does (spec: "Snapshot
//! Retention Policy"; Java `RemoveSnapshots`), as a dry run: which refs and snapshots an
//! expiry at `now` removes, when each of the others would expire if nothing else changed,
//! and which files the removal frees (Java `ExpireSnapshotsSparkAction`'s metrics).
//!
//! The rules, at `now`:
//! - a ref other than `main` is removed when its snapshot is older than its
//!   `max-ref-age-ms` (else `history.expire.max-ref-age-ms`, default forever);
//! - each kept branch keeps its ancestors, newest first, while fewer than its
//!   `min-snapshots-to-keep` (else `history.expire.min-snapshots-to-keep`, default 1) are
//!   kept or while they are no older than its `max-snapshot-age-ms` (else
//!   `history.expire.max-snapshot-age-ms`, default 5 days); a kept tag keeps its snapshot;
//! - a snapshot in no kept ref's history is kept when it is no older than the table's
//!   maximum snapshot age;
//! - every other snapshot expires. The current snapshot is always kept (main is kept and
//!   keeps at least one snapshot).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::range::ancestors;
use crate::spec::{DataContent, RefType, TableMetadata};
use crate::table::Table;

/// Iceberg's default `history.expire.max-snapshot-age-ms`: 5 days.
pub const DEFAULT_MAX_SNAPSHOT_AGE_MS: i64 = 5 * 24 * 3600 * 1000;
/// Iceberg's default `history.expire.min-snapshots-to-keep`.
pub const DEFAULT_MIN_SNAPSHOTS: i32 = 1;
/// S3 Tables' default snapshot management: 120 hours, 1 snapshot.
pub const S3TABLES_MAX_SNAPSHOT_AGE_MS: i64 = 120 * 3600 * 1000;

/// Whose settings apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// The table properties `history.expire.*` and the refs' own settings.
    #[default]
    Iceberg,
    /// S3 Tables' snapshot management: its settings live outside the metadata, so the table
    /// properties are ignored; they come from the overrides (default 120 hours, 1 snapshot).
    /// The refs' own settings still apply (S3 Tables expires through Iceberg's rules).
    S3Tables,
}

/// Settings that override the policy's (as `expire_snapshots`' `older_than` and
/// `retain_last` arguments do).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Overrides {
    pub max_snapshot_age_ms: Option<i64>,
    pub min_snapshots: Option<i32>,
    pub max_ref_age_ms: Option<i64>,
}

/// The table-wide settings in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub max_snapshot_age_ms: i64,
    pub min_snapshots: i32,
    /// `None`: refs never expire by age.
    pub max_ref_age_ms: Option<i64>,
}

impl Settings {
    /// The settings of `policy` for `m`, with `over` on top. Errors: a property that is not
    /// a number, or a minimum below 1.
    pub fn resolve(
        m: &TableMetadata,
        policy: Policy,
        over: Overrides,
        path: &str,
    ) -> crate::Result<Settings> {
        let prop = |k: &str| -> crate::Result<Option<i64>> {
            match (policy, m.properties.get(k)) {
                (Policy::Iceberg, Some(v)) => v.trim().parse::<i64>().map(Some).map_err(|_| {
                    crate::Error::metadata(
                        path,
                        format!("table property {k} = {v:?} is not a number"),
                    )
                }),
                _ => Ok(None),
            }
        };
        let default_age = match policy {
            Policy::Iceberg => DEFAULT_MAX_SNAPSHOT_AGE_MS,
            Policy::S3Tables => S3TABLES_MAX_SNAPSHOT_AGE_MS,
        };
        let min = match over.min_snapshots {
            Some(n) => n as i64,
            None => prop("history.expire.min-snapshots-to-keep")?
                .unwrap_or(DEFAULT_MIN_SNAPSHOTS as i64),
        };
        if min < 1 {
            return Err(crate::Error::InvalidArgument(format!(
                "the minimum number of snapshots to keep must be at least 1, not {min}"
            )));
        }
        Ok(Settings {
            max_snapshot_age_ms: match over.max_snapshot_age_ms {
                Some(a) => a,
                None => prop("history.expire.max-snapshot-age-ms")?.unwrap_or(default_age),
            },
            min_snapshots: min.min(i32::MAX as i64) as i32,
            max_ref_age_ms: match over.max_ref_age_ms {
                Some(a) => Some(a),
                None => prop("history.expire.max-ref-age-ms")?,
            },
        })
    }
}

/// What an expiry at one instant keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// Names of the refs kept.
    pub refs: BTreeSet<String>,
    /// Ids of the snapshots kept.
    pub snapshots: HashSet<i64>,
}

/// Evaluates retention at `now_ms`.
pub fn kept_at(m: &TableMetadata, s: &Settings, now_ms: i64) -> Kept {
    let mut refs = BTreeSet::new();
    for (name, r) in &m.refs {
        let Some(snap) = m.snapshot(r.snapshot_id) else {
            continue; // a ref to a missing snapshot is dropped
        };
        let max_age = r.max_ref_age_ms.or(s.max_ref_age_ms);
        let young = max_age.is_none_or(|a| now_ms.saturating_sub(snap.timestamp_ms) <= a);
        if name == "main" || young {
            refs.insert(name.clone());
        }
    }
    let default_cutoff = now_ms.saturating_sub(s.max_snapshot_age_ms);
    let mut snapshots = HashSet::new();
    let mut referenced = HashSet::new();
    for name in &refs {
        let r = &m.refs[name];
        match r.ref_type {
            RefType::Tag => {
                snapshots.insert(r.snapshot_id);
                referenced.insert(r.snapshot_id);
            }
            RefType::Branch => {
                let cutoff = r
                    .max_snapshot_age_ms
                    .map_or(default_cutoff, |a| now_ms.saturating_sub(a));
                let min = r.min_snapshots_to_keep.unwrap_or(s.min_snapshots).max(1) as usize;
                let mut kept = 0;
                let mut keeping = true;
                for a in ancestors(m, r.snapshot_id) {
                    referenced.insert(a.snapshot_id);
                    if keeping && (kept < min || a.timestamp_ms >= cutoff) {
                        snapshots.insert(a.snapshot_id);
                        kept += 1;
                    } else {
                        keeping = false;
                    }
                }
            }
        }
    }
    for snap in &m.snapshots {
        if !referenced.contains(&snap.snapshot_id) && snap.timestamp_ms >= default_cutoff {
            snapshots.insert(snap.snapshot_id);
        }
    }
    if let Some(id) = m.current_snapshot_id {
        snapshots.insert(id);
    }
    Kept { refs, snapshots }
}

/// When each snapshot and ref stops being kept, if the table does not change after `now`:
/// `Some(t)` for the first instant `t > now` (ms) at which an expiry removes it, `None` if
/// none ever does. Items expired already at `now` are not in the maps.
#[derive(Debug, Clone, Default)]
pub struct Expiry {
    pub snapshots: HashMap<i64, Option<i64>>,
    pub refs: BTreeMap<String, Option<i64>>,
}

/// The instants after `now` at which the outcome can change: just past each snapshot's
/// age limits and each ref's age limit. Retention only shrinks as time passes, so the first
/// of these at which an item is gone is when it expires.
pub fn expiry(m: &TableMetadata, s: &Settings, now_ms: i64) -> Expiry {
    let mut ages: BTreeSet<i64> = BTreeSet::from([s.max_snapshot_age_ms]);
    let mut ref_ages: BTreeSet<i64> = s.max_ref_age_ms.into_iter().collect();
    for r in m.refs.values() {
        ages.extend(r.max_snapshot_age_ms);
        ref_ages.extend(r.max_ref_age_ms);
    }
    let mut times: BTreeSet<i64> = BTreeSet::new();
    for snap in &m.snapshots {
        for a in ages.iter().chain(&ref_ages) {
            let t = snap.timestamp_ms.saturating_add(*a).saturating_add(1);
            if t > now_ms {
                times.insert(t);
            }
        }
    }
    let now = kept_at(m, s, now_ms);
    let mut out = Expiry::default();
    for id in &now.snapshots {
        out.snapshots.insert(*id, None);
    }
    for r in &now.refs {
        out.refs.insert(r.clone(), None);
    }
    for t in times {
        let k = kept_at(m, s, t);
        for (id, when) in out.snapshots.iter_mut() {
            if when.is_none() && !k.snapshots.contains(id) {
                *when = Some(t);
            }
        }
        for (name, when) in out.refs.iter_mut() {
            if when.is_none() && !k.refs.contains(name) {
                *when = Some(t);
            }
        }
    }
    out
}

/// The kinds of files an expiry deletes, in the order of Iceberg's metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileKind {
    DataFile,
    PositionDeleteFile,
    EqualityDeleteFile,
    ManifestFile,
    ManifestList,
    StatisticsFile,
}

impl FileKind {
    /// The kind's metric in Iceberg's expire-snapshots result.
    pub fn metric(self) -> &'static str {
        match self {
            FileKind::DataFile => "deleted_data_files_count",
            FileKind::PositionDeleteFile => "deleted_position_delete_files_count",
            FileKind::EqualityDeleteFile => "deleted_equality_delete_files_count",
            FileKind::ManifestFile => "deleted_manifest_files_count",
            FileKind::ManifestList => "deleted_manifest_lists_count",
            FileKind::StatisticsFile => "deleted_statistics_files_count",
        }
    }

    /// Every kind, in metric order.
    pub const ALL: [FileKind; 6] = [
        FileKind::DataFile,
        FileKind::PositionDeleteFile,
        FileKind::EqualityDeleteFile,
        FileKind::ManifestFile,
        FileKind::ManifestList,
        FileKind::StatisticsFile,
    ];
}

/// Every file the snapshots `ids` reach (paths as recorded), by kind: their manifest lists,
/// manifests, the live data and delete files of those manifests, and their statistics
/// files. Reads the manifest lists and manifests (cached).
pub async fn reachable(
    table: &Table,
    ids: &HashSet<i64>,
) -> crate::Result<HashSet<(FileKind, String)>> {
    let m = table.metadata();
    let mut out = HashSet::new();
    let mut seen_manifests = HashSet::new();
    for snap in m.snapshots.iter().filter(|s| ids.contains(&s.snapshot_id)) {
        if let Some(l) = &snap.manifest_list {
            out.insert((FileKind::ManifestList, l.clone()));
        }
        for mf in table.manifest_list(snap).await?.iter() {
            out.insert((FileKind::ManifestFile, mf.manifest_path.clone()));
            if !seen_manifests.insert(mf.manifest_path.clone()) {
                continue;
            }
            let entries = crate::scan::plan::load_manifest(table, mf).await?;
            for e in entries
                .iter()
                .filter(|e| e.status != crate::spec::EntryStatus::Deleted)
            {
                let kind = match e.data_file.content {
                    DataContent::Data => FileKind::DataFile,
                    DataContent::PositionDeletes => FileKind::PositionDeleteFile,
                    DataContent::EqualityDeletes => FileKind::EqualityDeleteFile,
                };
                out.insert((kind, e.data_file.file_path.clone()));
            }
        }
    }
    for st in m.statistics.iter().filter(|s| ids.contains(&s.snapshot_id)) {
        out.insert((FileKind::StatisticsFile, st.path.clone()));
    }
    Ok(out)
}

/// The outcome of an expiry run at one instant.
#[derive(Debug, Clone)]
pub struct ExpiryRun {
    pub now_ms: i64,
    pub settings: Settings,
    pub kept: Kept,
    /// Snapshots removed, oldest first.
    pub expired_snapshots: Vec<i64>,
    /// Refs removed.
    pub expired_refs: Vec<String>,
    /// Files no kept snapshot reaches any more, by kind, sorted.
    pub deleted_files: Vec<(FileKind, String)>,
    /// When each kept snapshot and ref would expire later.
    pub expiry: Expiry,
    /// The removed rows kept snapshots still read ([`ExpiryRun::with_readable_rows`]).
    pub readable_removed: ReadableRemoved,
}

/// The removed rows older snapshots still read, as far as [`ExpiryRun::with_readable_rows`]
/// evaluated them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ReadableRemoved {
    /// Not evaluated (it reads the changes of the kept history).
    #[default]
    NotEvaluated,
    /// The history has snapshots without row lineage.
    NoLineage,
    /// By when they stop being readable, soonest first, never last.
    Rows(Vec<ReadableRows>),
}

/// Removed row versions that stay readable until one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadableRows {
    /// When the last kept snapshot that reads them expires (`None`: never).
    pub until_ms: Option<i64>,
    /// How many row versions.
    pub rows: u64,
}

impl ExpiryRun {
    /// Evaluates an expiry of `table` at `now_ms` and the files it would delete.
    pub async fn evaluate(
        table: &Table,
        policy: Policy,
        over: Overrides,
        now_ms: i64,
    ) -> crate::Result<ExpiryRun> {
        let m = table.metadata();
        let settings = Settings::resolve(m, policy, over, table.metadata_file())?;
        let kept = kept_at(m, &settings, now_ms);
        let expired: Vec<&crate::spec::Snapshot> = m
            .snapshots_in_order()
            .into_iter()
            .filter(|s| !kept.snapshots.contains(&s.snapshot_id))
            .collect();
        let all: HashSet<i64> = m.snapshots.iter().map(|s| s.snapshot_id).collect();
        let mut deleted: Vec<(FileKind, String)> = if expired.is_empty() {
            Vec::new()
        } else {
            let before = reachable(table, &all).await?;
            let after = reachable(table, &kept.snapshots).await?;
            // A path reached as any kind after expiry stays.
            let after_paths: HashSet<&str> = after.iter().map(|(_, p)| p.as_str()).collect();
            before
                .into_iter()
                .filter(|(_, p)| !after_paths.contains(p.as_str()))
                .collect()
        };
        deleted.sort();
        Ok(ExpiryRun {
            now_ms,
            settings,
            expired_snapshots: expired.iter().map(|s| s.snapshot_id).collect(),
            expired_refs: m
                .refs
                .keys()
                .filter(|r| !kept.refs.contains(*r))
                .cloned()
                .collect(),
            expiry: expiry(m, &settings, now_ms),
            kept,
            deleted_files: deleted,
            readable_removed: Default::default(),
        })
    }

    /// Iceberg's expire-snapshots metrics: deleted file counts by kind.
    pub fn metrics(&self) -> Vec<(&'static str, usize)> {
        FileKind::ALL
            .iter()
            .map(|k| {
                (
                    k.metric(),
                    self.deleted_files.iter().filter(|(f, _)| f == k).count(),
                )
            })
            .collect()
    }
}

/// Parses a duration: milliseconds (`1500`), or a number with a unit as humantime reads
/// them (`120h`, `5days`, `30min`, `10s`, `250ms`).
pub fn parse_duration_ms(text: &str) -> crate::Result<i64> {
    let s = text.trim();
    if let Ok(ms) = s.parse::<i64>() {
        return Ok(ms);
    }
    humantime::parse_duration(s)
        .map(|d| d.as_millis().min(i64::MAX as u128) as i64)
        .map_err(|e| {
            crate::Error::InvalidArgument(format!(
                "cannot read duration {s:?} ({e}): give milliseconds or a number with a unit, such as 120h, 5d, 30m"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn table(props: serde_json::Value, refs: serde_json::Value) -> TableMetadata {
        // Main: 1 <- 2 <- 3 <- 4 (current) at t = 1000 .. 4000; 5 is a child of 2 on branch b.
        let snap = |id: i64, parent: Option<i64>, t: i64| {
            json!({"snapshot-id": id, "parent-snapshot-id": parent, "sequence-number": id,
                   "timestamp-ms": t, "manifest-list": format!("/t/m/snap-{id}.avro"),
                   "summary": {"operation": "append"}, "schema-id": 0})
        };
        let v = json!({
            "format-version": 2, "table-uuid": "u", "location": "/t", "last-sequence-number": 5,
            "last-updated-ms": 5000, "last-column-id": 1, "current-schema-id": 0,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
            "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
            "last-partition-id": 999, "default-sort-order-id": 0,
            "sort-orders": [{"order-id": 0, "fields": []}], "properties": props,
            "current-snapshot-id": 4, "refs": refs,
            "snapshots": [snap(1, None, 1000), snap(2, Some(1), 2000), snap(3, Some(2), 3000),
                          snap(4, Some(3), 4000), snap(5, Some(2), 4500)],
        });
        TableMetadata::from_json(&v, "m.json").unwrap()
    }

    fn ids(k: &Kept) -> Vec<i64> {
        let mut v: Vec<i64> = k.snapshots.iter().copied().collect();
        v.sort();
        v
    }

    #[test]
    fn main_keeps_min_and_young_snapshots() {
        let m = table(
            json!({"history.expire.max-snapshot-age-ms": "1500", "history.expire.min-snapshots-to-keep": "1"}),
            json!({"main": {"snapshot-id": 4, "type": "branch"}}),
        );
        let s = Settings::resolve(&m, Policy::Iceberg, Overrides::default(), "m").unwrap();
        // At 5000 the cutoff is 3500: 4 is young; 5 is unreferenced and young.
        assert_eq!(ids(&kept_at(&m, &s, 5000)), vec![4, 5]);
        // At 4000 the cutoff is 2500: 3 and 4 on main, 5 unreferenced.
        assert_eq!(ids(&kept_at(&m, &s, 4000)), vec![3, 4, 5]);
        // The current snapshot is kept however old.
        assert_eq!(ids(&kept_at(&m, &s, 1_000_000)), vec![4]);
        let e = expiry(&m, &s, 4000);
        assert_eq!(e.snapshots[&3], Some(4501)); // 3000 + 1500 + 1
        assert_eq!(e.snapshots[&4], None);
        assert_eq!(e.snapshots[&5], Some(6001));
    }

    #[test]
    fn refs_age_out_and_tags_keep_their_snapshot() {
        let m = table(
            json!({"history.expire.max-snapshot-age-ms": "100"}),
            json!({"main": {"snapshot-id": 4, "type": "branch"},
                   "old": {"snapshot-id": 1, "type": "tag", "max-ref-age-ms": 10000},
                   "b": {"snapshot-id": 5, "type": "branch", "min-snapshots-to-keep": 2}}),
        );
        let s = Settings::resolve(&m, Policy::Iceberg, Overrides::default(), "m").unwrap();
        // Tag old keeps 1 until 11000; branch b keeps 5 and its parent 2.
        assert_eq!(ids(&kept_at(&m, &s, 10_000)), vec![1, 2, 4, 5]);
        let k = kept_at(&m, &s, 11_001);
        assert_eq!(ids(&k), vec![2, 4, 5]);
        assert!(!k.refs.contains("old"));
        let e = expiry(&m, &s, 10_000);
        assert_eq!(e.refs["old"], Some(11_001));
        assert_eq!(e.refs["main"], None);
        // S3 Tables ignores the table property: 120 hours.
        let s3 = Settings::resolve(&m, Policy::S3Tables, Overrides::default(), "m").unwrap();
        assert_eq!(s3.max_snapshot_age_ms, S3TABLES_MAX_SNAPSHOT_AGE_MS);
        assert_eq!(ids(&kept_at(&m, &s3, 10_000)), vec![1, 2, 3, 4, 5]);
    }

    #[test]
    fn overrides_and_bad_settings() {
        let m = table(
            json!({"history.expire.min-snapshots-to-keep": "x"}),
            json!({"main": {"snapshot-id": 4, "type": "branch"}}),
        );
        assert!(Settings::resolve(&m, Policy::Iceberg, Overrides::default(), "m").is_err());
        let over = Overrides {
            min_snapshots: Some(3),
            max_snapshot_age_ms: Some(0),
            max_ref_age_ms: None,
        };
        let s = Settings::resolve(&m, Policy::Iceberg, over, "m").unwrap();
        assert_eq!(ids(&kept_at(&m, &s, 9000)), vec![2, 3, 4]);
        assert_eq!(parse_duration_ms("120h").unwrap(), 432_000_000);
        assert_eq!(parse_duration_ms("1500").unwrap(), 1500);
        assert!(parse_duration_ms("soon").is_err());
    }
}
