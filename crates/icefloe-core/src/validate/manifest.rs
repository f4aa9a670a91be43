//! Manifest list and manifest rules (spec: "Manifest Lists", "Manifests", "Deletion Vectors",
//! "Delete Formats"): counts and sequence numbers non-negative and consistent, each file in a
//! manifest of its own content type, deletion vectors only in format version 3 and always
//! naming their data file. The rules over a snapshot's files together are in `live_files`.
//!
//! Counts, sequence numbers and row ids that disagree without changing what is read are
//! warnings, read as Iceberg Java reads them (`docs/refusals.md`).

use super::Warn;
use crate::spec::checked::{add, non_negative};
use crate::spec::{
    DataContent, EntryStatus, FileFormat, ManifestContent, ManifestEntry, ManifestFile, Snapshot,
    TableMetadata,
};
use crate::warning::{Rule, Subject, Warning, Warnings};

/// Checks the entries of a manifest list read for `snapshot` of a table with metadata `m`;
/// `path` names the list. Returns the warnings found; a `first_row_id` that Iceberg Java
/// ignores (on a delete manifest, or in a format version 1 or 2 table) is dropped from `list`.
pub fn check_manifest_list(
    list: &mut [ManifestFile],
    snapshot: &Snapshot,
    m: &TableMetadata,
    path: &str,
) -> crate::Result<Vec<Warning>> {
    let fv = m.format_version;
    let mut found = Vec::new();
    for mf in list.iter_mut() {
        let what = |field: &str| format!("{field} of manifest {}", mf.manifest_path);
        let mut warn = |rule: Rule, detail: String| {
            found.push(Warning::new(rule, Subject::Manifest, path, detail))
        };
        let check = |warn: &mut Warn<'_>| -> Result<(), String> {
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
                warn(
                    Rule::SequenceNumbers,
                    format!(
                        "{} ({}) is above the sequence number of snapshot {} ({})",
                        what("sequence_number"),
                        mf.sequence_number,
                        snapshot.snapshot_id,
                        snapshot.sequence_number
                    ),
                );
            }
            if fv < 2 && mf.content == ManifestContent::Deletes {
                return Err(format!(
                    "delete manifest {} in a format version 1 table (deletes need version 2)",
                    mf.manifest_path
                ));
            }
            if fv < 3 && mf.first_row_id.is_some() {
                warn(Rule::NewerFeature, format!(
                    "{} is set (row lineage, a format version 3 feature) in a format version {fv} table",
                    what("first_row_id")
                ));
            }
            check_sequence_number(mf, m, warn);
            if fv >= 3 {
                check_first_row_id(mf, snapshot, warn)?;
            }
            Ok(())
        };
        check(&mut warn).map_err(|r| crate::Error::manifest(path, r))?;
        if fv < 3 || mf.content == ManifestContent::Deletes {
            mf.first_row_id = None;
        }
    }
    Ok(found)
}

/// A manifest's `sequence_number` is the sequence number of the snapshot that added it (spec:
/// "Manifest Lists", `sequence_number`: "the sequence number when the manifest was added to
/// the table"), checked when that snapshot is still in the metadata: an edited number would
/// silently change which deletes apply and every inherited `_last_updated_sequence_number`.
/// Iceberg Java reads the manifest list's number (it is what entries inherit): a warning.
fn check_sequence_number(mf: &ManifestFile, m: &TableMetadata, warn: &mut Warn<'_>) {
    if m.format_version < 2 {
        return;
    }
    let Some(added) = m.snapshot(mf.added_snapshot_id) else {
        return;
    };
    if added.sequence_number != mf.sequence_number {
        warn(Rule::SequenceNumbers, format!(
            "manifest {} has sequence_number {}, but snapshot {} that added it has sequence-number {} (spec: \"Manifest Lists\", sequence_number is the sequence number when the manifest was added)",
            mf.manifest_path, mf.sequence_number, mf.added_snapshot_id, added.sequence_number
        ));
    }
}

/// Row lineage in a manifest list (spec: "First Row ID Assignment", "Row Lineage for Upgraded
/// Tables"): delete manifests never have a `first_row_id`; in a snapshot with a `first-row-id`
/// every data manifest has one (a null one would read every `_row_id` of its files as null),
/// and one first assigned by this snapshot lies within the snapshot's
/// [`first-row-id`, `first-row-id` + `added-rows`]; in a snapshot without one (written before
/// the table was upgraded to v3) no data manifest has one.
///
/// Iceberg Java ignores a delete manifest's value and takes every data manifest's from the
/// list (null gives null row ids), so each disagreement is a warning; overlapping row ids are
/// refused when the files are planned (`live_files`).
fn check_first_row_id(
    mf: &ManifestFile,
    snapshot: &Snapshot,
    warn: &mut Warn<'_>,
) -> Result<(), String> {
    let name = &mf.manifest_path;
    let id = snapshot.snapshot_id;
    match (mf.content, mf.first_row_id, snapshot.first_row_id) {
        (ManifestContent::Deletes, Some(v), _) => warn(Rule::DeleteManifestRowId, format!(
            "delete manifest {name} has first_row_id {v}; the value for delete manifests is always null (spec: \"First Row ID Assignment\")"
        )),
        (ManifestContent::Data, None, Some(_)) => warn(Rule::RowIdAssignment, format!(
            "data manifest {name} has no first_row_id, but snapshot {id} has a first-row-id: all data manifests must be assigned one (spec: \"Row Lineage for Upgraded Tables\", \"First Row ID Assignment\"); its rows have null row ids"
        )),
        (ManifestContent::Data, Some(v), None) => warn(Rule::RowIdAssignment, format!(
            "data manifest {name} has first_row_id {v}, but snapshot {id} has no first-row-id: snapshots without one have null first_row_id on their data manifests (spec: \"Row Lineage for Upgraded Tables\")"
        )),
        (ManifestContent::Data, Some(v), Some(first)) if mf.added_snapshot_id == id => {
            let end = add(first, snapshot.added_rows.unwrap_or(0), "first-row-id + added-rows")?;
            if v < first || v > end {
                warn(Rule::RowIdAssignment, format!(
                    "data manifest {name}, added by snapshot {id}, has first_row_id {v} outside the range that snapshot assigns ({first} to {end}) (spec: \"First Row ID Assignment\", \"Snapshot Row IDs\")"
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

/// Checks the entries of one manifest, listed by `mf`, of a table with metadata `m`; `path`
/// names the manifest. Returns the warnings found; a data file's `first_row_id` in a format
/// version 1 or 2 table is dropped from `entries` (Iceberg Java ignores it).
pub fn check_manifest(
    entries: &mut [ManifestEntry],
    mf: &ManifestFile,
    m: &TableMetadata,
    path: &str,
) -> crate::Result<Vec<Warning>> {
    let mut check = ManifestCheck::new(mf, m, path);
    for e in entries.iter_mut() {
        check.entry(e)?;
    }
    check.finish()
}

/// [`check_manifest`] fed one entry at a time, for a manifest decoded as a stream: each
/// entry is checked as it comes ([`ManifestCheck::entry`]), and the rules over the whole
/// manifest (its entries against the manifest list's counts) are checked from counts
/// accumulated on the way, when [`ManifestCheck::finish`] is called after the last entry.
pub struct ManifestCheck<'a> {
    mf: &'a ManifestFile,
    m: &'a TableMetadata,
    path: &'a str,
    /// The field ids of every schema, made when the first equality delete file comes.
    known_ids: Option<std::collections::HashSet<i32>>,
    counts: EntryCounts,
    found: Vec<Warning>,
}

impl<'a> ManifestCheck<'a> {
    /// Starts the checks of the manifest `mf` lists, of a table with metadata `m`; `path`
    /// names the manifest.
    pub fn new(mf: &'a ManifestFile, m: &'a TableMetadata, path: &'a str) -> ManifestCheck<'a> {
        ManifestCheck {
            mf,
            m,
            path,
            known_ids: None,
            counts: EntryCounts::default(),
            found: Vec::new(),
        }
    }

    /// Checks one entry (in the manifest's order); a data file's `first_row_id` in a format
    /// version 1 or 2 table is dropped from it. Errors: a rule the entry breaks, naming the
    /// manifest and the entry's file.
    pub fn entry(&mut self, e: &mut ManifestEntry) -> crate::Result<()> {
        let (m, path) = (self.m, self.path);
        if e.data_file.content == DataContent::EqualityDeletes && self.known_ids.is_none() {
            self.known_ids = Some(
                m.schemas
                    .iter()
                    .flat_map(|s| s.types_by_id().into_keys())
                    .collect(),
            );
        }
        let empty = std::collections::HashSet::new();
        let known_ids = self.known_ids.as_ref().unwrap_or(&empty);
        let file = &e.data_file.file_path;
        let found = &mut self.found;
        let mut warn = |rule, r: String| {
            found.push(Warning::new(
                rule,
                Subject::Manifest,
                path,
                format!("{file}: {r}"),
            ))
        };
        check_entry(e, self.mf, m, known_ids, &mut warn)
            .map_err(|r| crate::Error::manifest(path, format!("{file}: {r}")))?;
        self.counts
            .add(e)
            .map_err(|r| crate::Error::manifest(path, r))?;
        if m.format_version < 3 && e.data_file.first_row_id.is_some() {
            std::sync::Arc::make_mut(&mut e.data_file).first_row_id = None;
        }
        Ok(())
    }

    /// The checks of the whole manifest, once every entry was fed; returns every warning
    /// found.
    pub fn finish(mut self) -> crate::Result<Vec<Warning>> {
        let path = self.path;
        let found = &mut self.found;
        check_counts(&self.counts, self.mf, &mut |rule, r| {
            found.push(Warning::new(rule, Subject::Manifest, path, r))
        })
        .map_err(|r| crate::Error::manifest(path, r))?;
        Ok(self.found)
    }
}

/// Files and rows of a manifest's entries by status (added, existing, deleted).
#[derive(Default)]
struct EntryCounts {
    files: [i64; 3],
    rows: [i64; 3],
}

impl EntryCounts {
    fn add(&mut self, e: &ManifestEntry) -> Result<(), String> {
        let k = match e.status {
            EntryStatus::Added => 0,
            EntryStatus::Existing => 1,
            EntryStatus::Deleted => 2,
        };
        self.files[k] += 1;
        self.rows[k] = add(
            self.rows[k],
            e.data_file.record_count,
            "the manifest's row count",
        )?;
        Ok(())
    }
}

/// A manifest's entries against the counts its manifest list entry records for it
/// (`added_files_count`, `existing_files_count`, `deleted_files_count`, and the rows of added
/// and existing files), when recorded: an entry lost from a manifest, or one added to it, would
/// otherwise change the rows read silently, also in a read whose filter skips other manifests
/// (where the snapshot summary's totals cannot be checked against the entries). Iceberg Java
/// reads the entries whatever the counts say (they are optional in format version 1, and
/// written loosely by some writers): a warning.
fn check_counts(counts: &EntryCounts, mf: &ManifestFile, warn: &mut Warn<'_>) -> Result<(), String> {
    let EntryCounts { files, rows } = counts;
    let recorded = [
        ("added_files_count", mf.added_files_count, files[0]),
        ("existing_files_count", mf.existing_files_count, files[1]),
        ("deleted_files_count", mf.deleted_files_count, files[2]),
        ("added_rows_count", mf.added_rows_count, rows[0]),
        ("existing_rows_count", mf.existing_rows_count, rows[1]),
    ];
    for (name, want, found) in recorded {
        if let Some(want) = want.filter(|w| *w != found) {
            warn(Rule::ManifestCounts, format!(
                "the manifest list records {name} {want} for this manifest, but its entries count {found} (spec: \"Manifest Lists\")"
            ));
            break;
        }
    }
    Ok(())
}

/// The snapshot summary's `total-data-files`, `total-delete-files` and `total-records`
/// against the counts the manifest list records for its manifests, when every manifest has
/// them: what a read that skips manifests checks in place of counting every entry, so a
/// manifest lost from the list is found without reading the others. `path` names the list.
///
/// Iceberg Java never compares them: a difference is a warning to `warnings`.
pub fn check_list_totals(
    list: &[ManifestFile],
    snapshot: &Snapshot,
    path: &str,
    warnings: &Warnings,
) -> crate::Result<()> {
    let live = |mf: &ManifestFile| Some(mf.added_files_count? + mf.existing_files_count?);
    let mut totals = Some((0i64, 0i64, 0i64));
    for mf in list {
        totals = totals.and_then(|(data, deletes, records)| {
            let files = live(mf)?;
            match mf.content {
                ManifestContent::Data => Some((
                    data.checked_add(files)?,
                    deletes,
                    records
                        .checked_add(mf.added_rows_count?)?
                        .checked_add(mf.existing_rows_count?)?,
                )),
                ManifestContent::Deletes => Some((data, deletes.checked_add(files)?, records)),
            }
        });
    }
    let Some((data, deletes, records)) = totals else {
        return Ok(());
    };
    for (key, found) in [
        ("total-data-files", data),
        ("total-delete-files", deletes),
        ("total-records", records),
    ] {
        if let Some(want) = snapshot.summary_i64(key).filter(|w| *w != found) {
            warnings.report(Warning::new(
                Rule::SummaryTotals,
                Subject::Manifest,
                path,
                format!(
                    "snapshot {} records {want} for {key} in its summary, but its manifest list counts {found} for its manifests (spec: \"Snapshot Summary\")",
                    snapshot.snapshot_id
                ),
            ))?;
        }
    }
    Ok(())
}

fn check_entry(
    e: &ManifestEntry,
    mf: &ManifestFile,
    m: &TableMetadata,
    known_ids: &std::collections::HashSet<i32>,
    warn: &mut Warn<'_>,
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
        // The name is only made for a count that is negative (this runs for every entry).
        if let Some((id, v)) = counts.iter().find(|(_, v)| **v < 0) {
            non_negative(*v, &format!("{name} of field {id}"))?;
        }
    }
    if fv >= 2 && e.sequence_number > mf.sequence_number {
        warn(Rule::SequenceNumbers, format!(
            "data sequence number {} is above its manifest's sequence number {} (spec: \"Sequence Number Inheritance\")",
            e.sequence_number, mf.sequence_number
        ));
    }
    if fv >= 2 && e.sequence_number > e.file_sequence_number {
        warn(Rule::SequenceNumbers, format!(
            "data sequence number {} is above its file sequence number {} (spec: \"Sequence Numbers\")",
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
        warn(
            Rule::NewerFeature,
            format!(
            "first_row_id (row lineage, a format version 3 feature) in a format version {fv} table"
        ),
        );
    }
    if fv >= 2 && e.status != EntryStatus::Deleted {
        if let Some(added) = m.snapshot(e.snapshot_id) {
            if added.sequence_number != e.file_sequence_number {
                warn(Rule::SequenceNumbers, format!(
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
