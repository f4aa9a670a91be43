//! Manifest list and manifest rules (spec: "Manifest Lists", "Manifests", "Deletion Vectors",
//! "Delete Formats"): counts and sequence numbers non-negative and consistent, each file in a
//! manifest of its own content type, deletion vectors only in format version 3 and always
//! naming their data file, at most one deletion vector per data file in a snapshot.

use std::collections::HashMap;

use super::non_negative;
use crate::spec::{
    DataContent, DataFile, FileFormat, ManifestContent, ManifestEntry, ManifestFile, Snapshot,
    TableMetadata,
};

/// Checks the entries of a manifest list read for `snapshot`; `path` names the list.
pub fn check_manifest_list(
    list: &[ManifestFile],
    snapshot: &Snapshot,
    format_version: i64,
    path: &str,
) -> crate::Result<()> {
    let fv = format_version;
    for mf in list {
        let what = |field: &str| format!("{field} of manifest {}", mf.manifest_path);
        let check = || -> Result<(), String> {
            non_negative(mf.manifest_length, &what("manifest_length"))?;
            non_negative(mf.sequence_number, &what("sequence_number"))?;
            non_negative(mf.min_sequence_number, &what("min_sequence_number"))?;
            for (name, v) in [
                ("added_files_count", mf.added_files_count),
                ("existing_files_count", mf.existing_files_count),
                ("deleted_files_count", mf.deleted_files_count),
                ("added_rows_count", mf.added_rows_count),
                ("existing_rows_count", mf.existing_rows_count),
                ("deleted_rows_count", mf.deleted_rows_count),
                ("first_row_id", mf.first_row_id),
            ] {
                if let Some(v) = v {
                    non_negative(v, &what(name))?;
                }
            }
            if mf.min_sequence_number > mf.sequence_number {
                return Err(format!(
                    "{} ({}) is above its sequence_number ({})",
                    what("min_sequence_number"),
                    mf.min_sequence_number,
                    mf.sequence_number
                ));
            }
            if mf.sequence_number > snapshot.sequence_number && fv >= 2 {
                return Err(format!(
                    "{} ({}) is above the sequence number of snapshot {} ({})",
                    what("sequence_number"),
                    mf.sequence_number,
                    snapshot.snapshot_id,
                    snapshot.sequence_number
                ));
            }
            if fv < 2 && mf.content == ManifestContent::Deletes {
                return Err(format!(
                    "delete manifest {} in a format version 1 table (deletes need version 2)",
                    mf.manifest_path
                ));
            }
            if fv < 3 && mf.first_row_id.is_some() {
                return Err(format!(
                    "{} is set (row lineage, a format version 3 feature) in a format version {fv} table",
                    what("first_row_id")
                ));
            }
            Ok(())
        };
        check().map_err(|r| crate::Error::manifest(path, r))?;
    }
    Ok(())
}

/// Checks the entries of one manifest, listed by `mf`, of a table with metadata `m`; `path`
/// names the manifest.
pub fn check_manifest(
    entries: &[ManifestEntry],
    mf: &ManifestFile,
    m: &TableMetadata,
    path: &str,
) -> crate::Result<()> {
    let known_ids: std::collections::HashSet<i32> = if entries
        .iter()
        .any(|e| e.data_file.content == DataContent::EqualityDeletes)
    {
        m.schemas
            .iter()
            .flat_map(|s| s.types_by_id().into_keys())
            .collect()
    } else {
        Default::default()
    };
    for e in entries {
        check_entry(e, mf, m, &known_ids)
            .map_err(|r| crate::Error::manifest(path, format!("{}: {r}", e.data_file.file_path)))?;
    }
    Ok(())
}

fn check_entry(
    e: &ManifestEntry,
    mf: &ManifestFile,
    m: &TableMetadata,
    known_ids: &std::collections::HashSet<i32>,
) -> Result<(), String> {
    let fv = m.format_version;
    let f = &e.data_file;
    non_negative(e.sequence_number, "sequence_number")?;
    non_negative(e.file_sequence_number, "file_sequence_number")?;
    non_negative(f.record_count, "record_count")?;
    non_negative(f.file_size_in_bytes, "file_size_in_bytes")?;
    for (name, v) in [
        ("first_row_id", f.first_row_id),
        ("content_offset", f.content_offset),
        ("content_size_in_bytes", f.content_size_in_bytes),
    ] {
        if let Some(v) = v {
            non_negative(v, name)?;
        }
    }
    for (name, counts) in [
        ("value_counts", &f.value_counts),
        ("null_value_counts", &f.null_value_counts),
        ("nan_value_counts", &f.nan_value_counts),
    ] {
        for (id, v) in counts {
            non_negative(*v, &format!("{name} of field {id}"))?;
        }
    }
    if fv >= 2 && e.sequence_number > mf.sequence_number {
        return Err(format!(
            "data sequence number {} is above its manifest's sequence number {}",
            e.sequence_number, mf.sequence_number
        ));
    }
    if fv >= 2 && e.sequence_number > e.file_sequence_number {
        return Err(format!(
            "data sequence number {} is above its file sequence number {}",
            e.sequence_number, e.file_sequence_number
        ));
    }
    match (mf.content, f.content) {
        (ManifestContent::Data, DataContent::Data)
        | (ManifestContent::Deletes, DataContent::PositionDeletes | DataContent::EqualityDeletes) =>
            {}
        (ManifestContent::Data, c) => {
            return Err(format!(
                "a {} file listed in a data manifest",
                content_name(c)
            ))
        }
        (ManifestContent::Deletes, _) => {
            return Err("a data file listed in a delete manifest".to_string())
        }
    }
    if fv < 2 && f.content != DataContent::Data {
        return Err(format!(
            "a {} file in a format version 1 table",
            content_name(f.content)
        ));
    }
    if fv < 3 && f.first_row_id.is_some() {
        return Err(format!(
            "first_row_id (row lineage, a format version 3 feature) in a format version {fv} table"
        ));
    }
    if f.file_format == FileFormat::Puffin && f.content != DataContent::PositionDeletes {
        return Err(format!(
            "a {} file stored as Puffin (Puffin holds only deletion vectors)",
            content_name(f.content)
        ));
    }
    if f.is_deletion_vector() {
        if fv < 3 {
            return Err(format!(
                "a deletion vector (a format version 3 feature) in a format version {fv} table"
            ));
        }
        if f.referenced_data_file.is_none() {
            return Err("deletion vector without referenced_data_file".to_string());
        }
        if f.content_offset.is_none() || f.content_size_in_bytes.is_none() {
            return Err(
                "deletion vector without content_offset and content_size_in_bytes".to_string(),
            );
        }
    }
    if f.content == DataContent::EqualityDeletes {
        if f.equality_ids.is_empty() {
            return Err("equality delete file without equality_ids".to_string());
        }
        for id in &f.equality_ids {
            if !known_ids.contains(id) {
                return Err(format!(
                    "equality delete file names field id {id}, which is in no schema"
                ));
            }
        }
    } else if !f.equality_ids.is_empty() {
        return Err(format!(
            "a {} file with equality_ids (only equality delete files have them)",
            content_name(f.content)
        ));
    }
    Ok(())
}

fn content_name(c: DataContent) -> &'static str {
    match c {
        DataContent::Data => "data",
        DataContent::PositionDeletes => "position delete",
        DataContent::EqualityDeletes => "equality delete",
    }
}

/// Checks the live files of a snapshot together: no data file listed twice, at most one
/// deletion vector per data file, and a delete file that names its data file in the same
/// partition as that file and not older than it. `path` names the manifest list.
pub fn check_live_files(entries: &[ManifestEntry], path: &str) -> crate::Result<()> {
    let mut data: HashMap<&str, &ManifestEntry> = HashMap::new();
    let mut dvs: HashMap<&str, &DataFile> = HashMap::new();
    let err = |r: String| crate::Error::manifest(path, r);
    for e in entries {
        let f = &e.data_file;
        if f.content == DataContent::Data && data.insert(&f.file_path, e).is_some() {
            return Err(err(format!(
                "data file {} is live twice in the snapshot",
                f.file_path
            )));
        }
        if f.is_deletion_vector() {
            let target = f.referenced_data_file.as_deref().unwrap_or_default();
            if let Some(other) = dvs.insert(target, f) {
                return Err(err(format!(
                    "two deletion vectors for data file {target} in one snapshot ({} at offset {:?} and {} at offset {:?}); the spec allows at most one",
                    other.file_path, other.content_offset, f.file_path, f.content_offset
                )));
            }
        }
    }
    for e in entries {
        let f = &e.data_file;
        let (true, Some(target)) = (
            f.content == DataContent::PositionDeletes,
            f.referenced_data_file.as_deref(),
        ) else {
            continue;
        };
        let Some(d) = data.get(target) else { continue };
        if d.data_file.partition_key() != f.partition_key() {
            return Err(err(format!(
                "delete file {} names data file {target} but is in another partition ({:?} vs {:?})",
                f.file_path, f.partition, d.data_file.partition
            )));
        }
        if d.sequence_number > e.sequence_number {
            return Err(err(format!(
                "delete file {} (sequence number {}) names data file {target}, which is newer (sequence number {}): it cannot have been written for it",
                f.file_path, e.sequence_number, d.sequence_number
            )));
        }
    }
    Ok(())
}

/// Checks the live files of `snapshot` against the totals its summary records
/// (`total-data-files`, `total-delete-files`, `total-records`), when it records them: a
/// manifest or entry lost from a manifest list or manifest would otherwise drop rows silently.
/// `path` names the manifest list.
pub fn check_summary(
    snapshot: &Snapshot,
    entries: &[ManifestEntry],
    path: &str,
) -> crate::Result<()> {
    let data = || {
        entries
            .iter()
            .filter(|e| e.data_file.content == DataContent::Data)
    };
    let data_files = data().count() as i64;
    let delete_files = entries.len() as i64 - data_files;
    let records = data()
        .try_fold(0i64, |acc, e| acc.checked_add(e.data_file.record_count))
        .ok_or_else(|| crate::Error::manifest(path, "total record count overflows a long"))?;
    for (key, found) in [
        ("total-data-files", data_files),
        ("total-delete-files", delete_files),
        ("total-records", records),
    ] {
        if let Some(want) = snapshot.summary_i64(key) {
            if want != found {
                return Err(crate::Error::manifest(
                    path,
                    format!(
                        "snapshot {} lists {found} for {key} in its manifests but its summary records {want}",
                        snapshot.snapshot_id
                    ),
                ));
            }
        }
    }
    Ok(())
}
