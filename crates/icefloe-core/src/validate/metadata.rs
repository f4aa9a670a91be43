//! Table metadata rules (spec: "Table Metadata", "Snapshots", "Snapshot References",
//! "Row Lineage"): every id the metadata refers to exists, sequence numbers and row ids are
//! consistent and non-negative, and V3-only fields appear only in format version 3 tables.
//!
//! What Iceberg Java refuses too is an error; a rule broken without changing what the table
//! reads is a warning kept in the metadata (`docs/refusals.md`).

use std::collections::HashSet;

use super::schema::check_schema;
use super::Warn;
use crate::spec::checked::{add, non_negative};
use crate::spec::TableMetadata;
use crate::warning::{Rule, Subject, Warning};

// The checked constructors live beside their checks, so that `spec` (decoding) does not
// import `validate` (deciding).
impl TableMetadata {
    /// Parses metadata JSON. `path` names the file in errors. A format version above 3 is an
    /// error naming the version, as the spec requires of readers.
    /// Its long lists are decoded element by element, so no JSON tree of the whole file is
    /// held (see [`crate::spec::metadata_json`]).
    pub fn from_json_bytes(bytes: &[u8], path: &str) -> crate::Result<TableMetadata> {
        let mut metadata = TableMetadata::decode_json_bytes(bytes, path)?;
        check_metadata(&mut metadata, path)?;
        Ok(metadata)
    }

    /// Parses an already decoded metadata JSON object.
    pub fn from_json(v: &serde_json::Value, path: &str) -> crate::Result<TableMetadata> {
        let mut metadata = TableMetadata::decode_json(v, path)?;
        check_metadata(&mut metadata, path)?;
        Ok(metadata)
    }
}

/// Checks parsed metadata; `path` names the metadata file in errors and warnings. The rules
/// broken without changing the answer are added to `m.warnings`, and the row lineage fields a
/// format version 1 or 2 table carries are dropped (Iceberg Java ignores them there).
pub fn check_metadata(m: &mut TableMetadata, path: &str) -> crate::Result<()> {
    let mut found = Vec::new();
    check(m, &mut |rule, detail| found.push((rule, detail)))
        .map_err(|r| crate::Error::metadata(path, r))?;
    m.warnings.extend(
        found
            .into_iter()
            .map(|(rule, detail)| Warning::new(rule, Subject::Metadata, path, detail)),
    );
    if m.format_version < 3 {
        m.next_row_id = None;
        for s in &mut m.snapshots {
            s.first_row_id = None;
            s.added_rows = None;
        }
    }
    Ok(())
}

fn check(m: &TableMetadata, warn: &mut Warn<'_>) -> Result<(), String> {
    let fv = m.format_version;
    non_negative(m.last_sequence_number, "last-sequence-number")?;
    let mut schema_ids = HashSet::new();
    for s in &m.schemas {
        if !schema_ids.insert(s.schema_id) {
            return Err(format!("schema id {} is used twice", s.schema_id));
        }
        check_schema(s, fv, warn)?;
        check_ids_assigned(s, m.last_column_id, warn)?;
    }
    if m.schema(m.current_schema_id).is_none() {
        return Err(format!(
            "current-schema-id {} names no schema",
            m.current_schema_id
        ));
    }
    if m.partition_spec(m.default_spec_id).is_none() {
        return Err(format!(
            "default-spec-id {} names no partition spec",
            m.default_spec_id
        ));
    }
    if fv < 3 && m.next_row_id.is_some() {
        warn(
            Rule::NewerFeature,
            format!(
            "next-row-id (row lineage, a format version 3 feature) in a format version {fv} table"
        ),
        );
    }
    if let Some(n) = m.next_row_id {
        non_negative(n, "next-row-id")?;
    }

    let mut snapshot_ids = HashSet::new();
    for s in &m.snapshots {
        let id = s.snapshot_id;
        if !snapshot_ids.insert(id) {
            return Err(format!("snapshot id {id} is used twice"));
        }
        non_negative(
            s.sequence_number,
            &format!("sequence-number of snapshot {id}"),
        )?;
        if s.sequence_number > m.last_sequence_number {
            return Err(format!(
                "snapshot {id} has sequence-number {} above last-sequence-number {}",
                s.sequence_number, m.last_sequence_number
            ));
        }
        if fv >= 2 && s.manifest_list.is_none() {
            return Err(format!(
                "snapshot {id} has no manifest-list (required in format version {fv})"
            ));
        }
        if s.manifest_list.is_none() && s.manifests.is_empty() {
            return Err(format!(
                "snapshot {id} has neither manifest-list nor manifests"
            ));
        }
        if let Some(sid) = s.schema_id {
            if m.schema(sid).is_none() {
                return Err(format!(
                    "snapshot {id} has schema-id {sid}, which names no schema"
                ));
            }
        }
        if fv < 3 && (s.first_row_id.is_some() || s.added_rows.is_some()) {
            warn(Rule::NewerFeature, format!(
                "snapshot {id} has first-row-id/added-rows (row lineage, a format version 3 feature) in a format version {fv} table"
            ));
        }
        if let Some(first) = s.first_row_id {
            non_negative(first, &format!("first-row-id of snapshot {id}"))?;
            let added = s.added_rows.unwrap_or(0);
            non_negative(added, &format!("added-rows of snapshot {id}"))?;
            let end = add(
                first,
                added,
                &format!("first-row-id + added-rows of snapshot {id}"),
            )?;
            if let Some(next) = m.next_row_id.filter(|n| end > *n && fv >= 3) {
                warn(Rule::RowIdAssignment, format!(
                    "snapshot {id} assigns row ids up to {end}, beyond next-row-id {next} (spec: \"Row Lineage\", next-row-id is above every assigned row id)"
                ));
            }
        }
    }

    super::ancestry::check_ancestry(m)?;
    if let Some(id) = m.current_snapshot_id {
        if m.snapshot(id).is_none() {
            return Err(format!("current-snapshot-id {id} names no snapshot"));
        }
    }
    for (name, r) in &m.refs {
        if m.snapshot(r.snapshot_id).is_none() {
            return Err(format!(
                "ref {name:?} points at snapshot {}, which is not in the snapshot list",
                r.snapshot_id
            ));
        }
    }
    if let Some(main) = m.refs.get("main") {
        if m.current_snapshot_id != Some(main.snapshot_id) {
            return Err(format!(
                "refs.main points at snapshot {} but current-snapshot-id is {}",
                main.snapshot_id,
                m.current_snapshot_id
                    .map(|i| i.to_string())
                    .unwrap_or_else(|| "-1 (none)".into())
            ));
        }
    }
    Ok(())
}

/// Every field id of a schema was assigned from `last-column-id` (spec: "Table Metadata
/// Fields", last-column-id: "the highest assigned column ID for the table"; new columns take
/// the next unused id): an id above it, or a negative one, was never assigned, and would read
/// the column as null from every data file.
/// An id above it is a warning: Iceberg Java does not check it when reading, and columns are
/// still found by their ids.
fn check_ids_assigned(
    s: &crate::spec::Schema,
    last_column_id: i32,
    warn: &mut Warn<'_>,
) -> Result<(), String> {
    let mut ids: Vec<i32> = s.types_by_id().into_keys().collect();
    ids.sort_unstable();
    match (ids.first(), ids.last()) {
        (Some(&low), _) if low < 0 => Err(format!(
            "schema {}: field id {low} is negative; field ids are assigned upward from last-column-id",
            s.schema_id
        )),
        (_, Some(&high)) if high > last_column_id => {
            warn(Rule::LastColumnId, format!(
                "schema {}: field id {high} is above last-column-id {last_column_id}, the highest id ever assigned (spec: \"Table Metadata Fields\")",
                s.schema_id
            ));
            Ok(())
        }
        _ => Ok(()),
    }
}
