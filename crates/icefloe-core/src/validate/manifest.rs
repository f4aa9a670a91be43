//! Manifest list and manifest rules (spec: "Manifest Lists", "Manifests", "Deletion Vectors",
//! "Delete Formats"): counts and sequence numbers non-negative and consistent, each file in a
//! manifest of its own content type, deletion vectors only in format version 3 and always
//! naming their data file, at most one deletion vector per data file in a snapshot.

use std::collections::HashMap;

use super::non_negative;
use crate::spec::{
    DataContent, DataFile, EntryStatus, FileFormat, ManifestContent, ManifestEntry, ManifestFile,
    Snapshot, TableMetadata,
};

/// Checks the entries of a manifest list read for `snapshot` of a table with metadata `m`;
/// `path` names the list.
pub fn check_manifest_list(
    list: &[ManifestFile],
    snapshot: &Snapshot,
    m: &TableMetadata,
    path: &str,
) -> crate::Result<()> {
    let fv = m.format_version;
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
            check_sequence_number(mf, m)?;
            if fv >= 3 {
                check_first_row_id(mf, snapshot)?;
            }
            Ok(())
        };
        check().map_err(|r| crate::Error::manifest(path, r))?;
    }
    Ok(())
}

/// A manifest's `sequence_number` is the sequence number of the snapshot that added it (spec:
/// "Manifest Lists", `sequence_number`: "the sequence number when the manifest was added to
/// the table"), checked when that snapshot is still in the metadata: an edited number would
/// silently change which deletes apply and every inherited `_last_updated_sequence_number`.
fn check_sequence_number(mf: &ManifestFile, m: &TableMetadata) -> Result<(), String> {
    if m.format_version < 2 {
        return Ok(());
    }
    let Some(added) = m.snapshot(mf.added_snapshot_id) else {
        return Ok(());
    };
    if added.sequence_number != mf.sequence_number {
        return Err(format!(
            "manifest {} has sequence_number {}, but snapshot {} that added it has sequence-number {} (spec: \"Manifest Lists\", sequence_number is the sequence number when the manifest was added)",
            mf.manifest_path, mf.sequence_number, mf.added_snapshot_id, added.sequence_number
        ));
    }
    Ok(())
}

/// Row lineage in a manifest list (spec: "First Row ID Assignment", "Row Lineage for Upgraded
/// Tables"): delete manifests never have a `first_row_id`; in a snapshot with a `first-row-id`
/// every data manifest has one (a null one would read every `_row_id` of its files as null),
/// and one first assigned by this snapshot lies within the snapshot's
/// [`first-row-id`, `first-row-id` + `added-rows`]; in a snapshot without one (written before
/// the table was upgraded to v3) no data manifest has one.
fn check_first_row_id(mf: &ManifestFile, snapshot: &Snapshot) -> Result<(), String> {
    let name = &mf.manifest_path;
    let id = snapshot.snapshot_id;
    match (mf.content, mf.first_row_id, snapshot.first_row_id) {
        (ManifestContent::Deletes, Some(v), _) => Err(format!(
            "delete manifest {name} has first_row_id {v}; the value for delete manifests is always null (spec: \"First Row ID Assignment\")"
        )),
        (ManifestContent::Data, None, Some(_)) => Err(format!(
            "data manifest {name} has no first_row_id, but snapshot {id} has a first-row-id: all data manifests must be assigned one (spec: \"Row Lineage for Upgraded Tables\", \"First Row ID Assignment\")"
        )),
        (ManifestContent::Data, Some(v), None) => Err(format!(
            "data manifest {name} has first_row_id {v}, but snapshot {id} has no first-row-id: snapshots without one have null first_row_id on their data manifests (spec: \"Row Lineage for Upgraded Tables\")"
        )),
        (ManifestContent::Data, Some(v), Some(first)) if mf.added_snapshot_id == id => {
            let end = super::add(first, snapshot.added_rows.unwrap_or(0), "first-row-id + added-rows")?;
            if v < first || v > end {
                return Err(format!(
                    "data manifest {name}, added by snapshot {id}, has first_row_id {v} outside the range that snapshot assigns ({first} to {end}) (spec: \"First Row ID Assignment\", \"Snapshot Row IDs\")"
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
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
    if fv >= 2 && e.status != EntryStatus::Deleted {
        if let Some(added) = m.snapshot(e.snapshot_id) {
            if added.sequence_number != e.file_sequence_number {
                return Err(format!(
                    "file sequence number {} differs from the sequence-number {} of snapshot {} that added the file (spec: \"Sequence Number Inheritance\": the file sequence number is that of the snapshot that added the file)",
                    e.file_sequence_number, added.sequence_number, e.snapshot_id
                ));
            }
        }
    }
    if f.file_format != FileFormat::Puffin
        && (f.content_offset.is_some() || f.content_size_in_bytes.is_some())
    {
        return Err(format!(
            "a {} {:?} file with content_offset/content_size_in_bytes, which address a deletion vector blob in a Puffin file (spec: \"Manifests\", content_offset); {}",
            content_name(f.content),
            f.file_format,
            match &f.referenced_data_file {
                Some(d) => format!("its deletes for data file {d} would be read from a file of the wrong format"),
                None => "no other file is addressed by offset".to_string(),
            }
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
/// deletion vector per data file, every deletion vector naming a live data file, a delete file
/// that names its data file in the same partition as that file and not older than it, and
/// disjoint row id ranges below the table's `next-row-id`. `path` names the manifest list.
pub fn check_live_files(
    entries: &[ManifestEntry],
    next_row_id: Option<i64>,
    path: &str,
) -> crate::Result<()> {
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
        check_file_path_bounds(f, target).map_err(err)?;
        let Some(d) = data.get(target) else {
            // A V2 position delete file may outlive its data file (a "dangling" delete left by
            // compaction) and then applies to nothing; a deletion vector is written for one
            // live data file and removed with it, so one that names no live data file has lost
            // its data file, and its deletes would silently apply to nothing.
            if f.is_deletion_vector() {
                return Err(err(format!(
                    "deletion vector in {} (offset {:?}) has referenced_data_file {target}, which is not a live data file of the snapshot: its deletes would apply to no row (spec: \"Deletion Vectors\", \"Scan Planning\": a DV applies to the data file whose file_path equals its referenced_data_file)",
                    f.file_path, f.content_offset
                )));
            }
            continue;
        };
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
    check_row_id_ranges(entries, next_row_id).map_err(err)
}

/// Field id of the `file_path` column of position delete files (spec: "Reserved Field IDs").
const DELETE_FILE_PATH_ID: i32 = 2147483546;

/// A position delete file's `referenced_data_file` must lie within the bounds its metrics
/// record for its own `file_path` column (spec: "Manifests", referenced_data_file: "when all
/// deletes tracked by the entry are in a single data file"): a manifest whose
/// referenced_data_file was changed would apply the deletes to another file, or to none.
fn check_file_path_bounds(f: &DataFile, target: &str) -> Result<(), String> {
    let bound = |m: &HashMap<i32, Vec<u8>>| {
        m.get(&DELETE_FILE_PATH_ID)
            .and_then(|b| std::str::from_utf8(b).ok().map(str::to_string))
    };
    let (lower, upper) = (bound(&f.lower_bounds), bound(&f.upper_bounds));
    // An upper bound may be truncated (then it is a prefix rounded up), so compare prefixes.
    let above_upper = upper
        .as_deref()
        .is_some_and(|u| target.get(..u.len()).unwrap_or(target) > u);
    if lower.as_deref().is_some_and(|l| target < l) || above_upper {
        return Err(format!(
            "delete file {} has referenced_data_file {target}, outside the file_path bounds its metrics record ({lower:?} to {upper:?}): the deletes are for another data file",
            f.file_path
        ));
    }
    Ok(())
}

/// Row ids are unique in a table (spec: "Row Lineage"), and assigned from `next-row-id`
/// (spec: "First Row ID Assignment"): the ranges [`first_row_id`, `first_row_id` +
/// `record_count`) of the live data files must not overlap, nor reach past `next-row-id`.
fn check_row_id_ranges(entries: &[ManifestEntry], next_row_id: Option<i64>) -> Result<(), String> {
    let mut ranges = Vec::new();
    for e in entries {
        let f = &e.data_file;
        if let (DataContent::Data, Some(first)) = (f.content, f.first_row_id) {
            let end = super::add(
                first,
                f.record_count,
                &format!("first_row_id of {}", f.file_path),
            )?;
            ranges.push((first, end, f.file_path.as_str()));
        }
    }
    ranges.sort();
    for w in ranges.windows(2) {
        let ((a0, a1, a), (b0, _, b)) = (w[0], w[1]);
        if b0 < a1 {
            return Err(format!(
                "data files {a} (row ids {a0} to {}) and {b} (from {b0}) share row ids; row ids are unique in a table (spec: \"Row Lineage\")",
                a1 - 1
            ));
        }
    }
    if let (Some(next), Some(&(first, end, file))) = (next_row_id, ranges.last()) {
        if end > next {
            return Err(format!(
                "data file {file} has row ids {first} to {}, at or beyond the table's next-row-id {next} (spec: \"Row Lineage\", \"First Row ID Assignment\")",
                end - 1
            ));
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
