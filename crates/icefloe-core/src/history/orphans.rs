//! Orphan files: files under the table location that no snapshot and no metadata file
//! references, older than a cutoff, as Iceberg's `remove_orphan_files` with `dry_run` lists
//! them (Java `DeleteOrphanFilesSparkAction`). Nothing is deleted.
//!
//! Referenced: every snapshot's manifest list, manifests and their live data and delete
//! files, statistics and partition statistics files, the current metadata file, every
//! metadata file in its `metadata-log` and, through the oldest of those that still exists,
//! the logs before it, and `metadata/version-hint.text`. Hidden paths (a name starting with
//! `.` or `_`, except `_name=value` partition directories) are never listed, as Iceberg
//! skips them.

use std::collections::HashSet;

use futures::TryStreamExt;
use object_store::path::Path;

use super::retention::reachable;
use crate::spec::TableMetadata;
use crate::table::Table;

/// The default cutoff: files modified in the last 3 days are never orphans (a commit may be
/// writing them), as Iceberg and ClickHouse default.
pub const DEFAULT_OLDER_THAN_MS: i64 = 3 * 24 * 3600 * 1000;

/// A file no metadata references.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Orphan {
    /// The file, as the store shows it.
    pub path: String,
    /// The file's path under the listed location.
    pub relative: String,
    /// Last modification, milliseconds since the epoch.
    pub last_modified_ms: i64,
    pub size: u64,
}

/// The orphan files under `location` (a path as the metadata writes them; default the
/// table's location) last modified before `older_than_ms`, sorted by path.
pub async fn orphan_files(
    table: &Table,
    older_than_ms: i64,
    location: Option<&str>,
) -> crate::Result<Vec<Orphan>> {
    let io = table.io();
    let m = table.metadata();
    let referenced = referenced_paths(table).await?;
    let root = io.resolve(location.unwrap_or(&m.location));
    let root_text = root.to_string();
    let partition_names: HashSet<&str> = m
        .partition_specs
        .iter()
        .flat_map(|s| s.fields.iter().map(|f| f.name.as_str()))
        .collect();
    let listed: Vec<object_store::ObjectMeta> = io
        .store()
        .list(Some(&root))
        .try_collect()
        .await
        .map_err(|e| crate::Error::from_store(io.display(&root), e))?;
    let mut out = Vec::new();
    for o in listed {
        let full = o.location.to_string();
        let relative = full
            .strip_prefix(&root_text)
            .unwrap_or(&full)
            .trim_start_matches('/')
            .to_string();
        if hidden(&relative, &partition_names) || referenced.contains(&full) {
            continue;
        }
        let modified = o.last_modified.timestamp_millis();
        if modified >= older_than_ms {
            continue;
        }
        out.push(Orphan {
            path: io.display(&o.location),
            relative,
            last_modified_ms: modified,
            size: o.size,
        });
    }
    out.sort();
    Ok(out)
}

/// Whether a path (relative to the listed root) is hidden: a part starting with `.` or `_`,
/// unless it is `_name=value` for a partition field `_name`.
fn hidden(relative: &str, partition_names: &HashSet<&str>) -> bool {
    relative.split('/').any(|part| {
        if part.starts_with('.') {
            return true;
        }
        if part.starts_with('_') {
            return !part
                .split_once('=')
                .is_some_and(|(name, _)| partition_names.contains(name));
        }
        false
    })
}

/// Every file the table's metadata references, as resolved store paths.
async fn referenced_paths(table: &Table) -> crate::Result<HashSet<String>> {
    let io = table.io();
    let m = table.metadata();
    let all: HashSet<i64> = m.snapshots.iter().map(|s| s.snapshot_id).collect();
    let mut paths: HashSet<String> = reachable(table, &all)
        .await?
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    paths.extend(metadata_files(table, m).await?);
    paths.insert(format!("{}/metadata/version-hint.text", m.location));
    let mut out: HashSet<String> = paths.iter().map(|p| io.resolve(p).to_string()).collect();
    // The metadata file as opened (it may not be under the recorded location).
    out.insert(Path::from(table.metadata_file()).to_string());
    out.insert(io.resolve(table.metadata_file()).to_string());
    Ok(out)
}

/// The metadata files the table's metadata log names, following the log of the oldest one
/// that still exists further back, as Iceberg's `ReachableFileUtil.metadataFileLocations`
/// does.
async fn metadata_files(table: &Table, m: &TableMetadata) -> crate::Result<Vec<String>> {
    let io = table.io();
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut log: Vec<String> = m
        .metadata_log
        .iter()
        .map(|e| e.metadata_file.clone())
        .collect();
    while !log.is_empty() {
        out.extend(log.iter().cloned());
        let mut next = Vec::new();
        for f in &log {
            if !seen.insert(f.clone()) {
                continue;
            }
            if !io.exists(f).await? {
                continue;
            }
            let shown = io.shown(f);
            let json = crate::io::json::parse_json(
                &io.read_capped(f, crate::io::limits::Capped::Metadata)
                    .await?,
                &shown,
                io.limits(),
            )?;
            let older = TableMetadata::from_json(&json, &shown)?;
            next = older
                .metadata_log
                .iter()
                .map(|e| e.metadata_file.clone())
                .filter(|p| !seen.contains(p))
                .collect();
            break;
        }
        log = next;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_paths() {
        let parts = HashSet::from(["_p"]);
        assert!(hidden("data/.x.crc", &parts));
        assert!(hidden("_temporary/0/x", &parts));
        assert!(hidden("data/_SUCCESS", &parts));
        assert!(!hidden("data/_p=1/x.parquet", &parts));
        assert!(hidden("data/_q=1/x.parquet", &parts));
        assert!(!hidden("data/x.parquet", &parts));
    }
}
