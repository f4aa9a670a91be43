//! The columns a front-end names (a foreign table's columns, say), resolved for a read of one
//! snapshot (spec: "Column Projection", "Row Lineage", "Reserved Field IDs"): each is a row
//! lineage column, a column of the schema read, a metadata column, or a field that only other
//! schemas of the table have, which every row reads as its `initial-default` (or null). Where
//! the read ones sit in a scan's batches is [`super::projection`].

use super::metadata_columns::{metadata_column, PARTITION_FIELD_ID};
use crate::spec::arrow_schema::{LAST_UPDATED_SEQ, ROW_ID};
use crate::spec::{NestedField, Schema, TableMetadata};

/// One of the two row lineage columns (spec: "Row Lineage"), read with
/// [`super::ScanBuilder::lineage`], `long` both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineageColumn {
    /// `_row_id`.
    RowId,
    /// `_last_updated_sequence_number`.
    LastUpdatedSequenceNumber,
}

impl LineageColumn {
    /// The lineage column called `name`, if it is one.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            ROW_ID => Some(Self::RowId),
            LAST_UPDATED_SEQ => Some(Self::LastUpdatedSequenceNumber),
            _ => None,
        }
    }

    /// The column's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::RowId => ROW_ID,
            Self::LastUpdatedSequenceNumber => LAST_UPDATED_SEQ,
        }
    }

    /// Its position among the lineage columns, which lead the batches of a scan that reads
    /// them ([`crate::spec::arrow_schema::scan_schema`]): 0 for `_row_id`, 1 for
    /// `_last_updated_sequence_number`.
    pub fn index(self) -> usize {
        match self {
            Self::RowId => 0,
            Self::LastUpdatedSequenceNumber => 1,
        }
    }
}

/// Where the values of a column named by a front-end come from in a read of one snapshot.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnSource {
    /// A row lineage column; null for rows written before the table had row lineage.
    Lineage(LineageColumn),
    /// A top-level field of the schema read, projected by name
    /// ([`super::ScanBuilder::columns`]).
    Field(NestedField),
    /// A metadata column (`_file`, `_pos`, `_spec_id`, `_partition`: [`super::metadata_columns`]),
    /// projected by name.
    Metadata(NestedField),
    /// A field the schema read lacks that another schema of the table has (the newest schema
    /// with a field of that name gives it): no data file of the snapshot holds it, so every row
    /// reads its `initial-default`, or null without one, as Iceberg projects a field onto data
    /// written without it. Nothing is read for it.
    Absent(NestedField),
}

impl ColumnSource {
    /// Resolves the column `name` for a read with `schema` (one of the schemas of `metadata`),
    /// in this order: a lineage column's name (even where the table has a column of that
    /// name), a column of `schema`, a metadata column, the newest field of that name in the
    /// table's schemas (an absent field). `None` when no schema of the table has such a column.
    pub fn resolve(metadata: &TableMetadata, schema: &Schema, name: &str) -> Option<Self> {
        if let Some(l) = LineageColumn::from_name(name) {
            return Some(Self::Lineage(l));
        }
        if let Some(f) = schema.column(name) {
            return Some(Self::Field(f.clone()));
        }
        if let Some(f) = metadata_column(metadata, name) {
            return Some(Self::Metadata(f));
        }
        metadata
            .schemas
            .iter()
            .rev()
            .find_map(|s| s.column(name))
            .map(|f| Self::Absent(f.clone()))
    }

    /// Whether some row may read null: a lineage column (rows written before the table had
    /// row lineage), an optional field, `_partition` (the one optional metadata column, as
    /// Iceberg Java declares them; `_file`, `_pos` and `_spec_id` are set for every row), an
    /// absent field without an `initial-default`.
    pub fn may_read_null(&self) -> bool {
        match self {
            Self::Lineage(_) => true,
            Self::Field(f) => !f.required,
            Self::Metadata(f) => f.id == PARTITION_FIELD_ID,
            Self::Absent(f) => f.initial_default.is_none(),
        }
    }

    /// The name a scan projects for this column ([`super::ScanBuilder::columns`]): a field's
    /// or a metadata column's; `None` for lineage columns (read with
    /// [`super::ScanBuilder::lineage`]) and absent fields (not read).
    pub fn projected_name(&self) -> Option<&str> {
        match self {
            Self::Field(f) | Self::Metadata(f) => Some(&f.name),
            Self::Lineage(_) | Self::Absent(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Literal, PrimitiveType, Type};

    /// A v3 table with three schemas: 0 (`id`, `name`), 1 drops `name` and adds `added`
    /// (initial-default 7) and `gone`, 2 (current) drops `gone` and adds a new `gone`.
    fn metadata() -> TableMetadata {
        let json = serde_json::json!({
            "format-version": 3, "table-uuid": "u", "location": "/t",
            "last-sequence-number": 0, "last-updated-ms": 0, "last-column-id": 7,
            "current-schema-id": 2, "next-row-id": 0,
            "schemas": [
                {"type": "struct", "schema-id": 0, "fields": [
                    {"id": 1, "name": "id", "required": true, "type": "long"},
                    {"id": 2, "name": "name", "required": false, "type": "string"}]},
                {"type": "struct", "schema-id": 1, "fields": [
                    {"id": 1, "name": "id", "required": true, "type": "long"},
                    {"id": 5, "name": "added", "required": false, "type": "int",
                     "initial-default": 7},
                    {"id": 6, "name": "gone", "required": false, "type": "string"}]},
                {"type": "struct", "schema-id": 2, "fields": [
                    {"id": 1, "name": "id", "required": true, "type": "long"},
                    {"id": 5, "name": "added", "required": false, "type": "int",
                     "initial-default": 7},
                    {"id": 7, "name": "gone", "required": false, "type": "date"}]}],
            "partition-specs": [{"spec-id": 0, "fields": []}], "default-spec-id": 0,
            "last-partition-id": 999, "default-sort-order-id": 0,
            "sort-orders": [{"order-id": 0, "fields": []}],
        });
        TableMetadata::from_json(&json, "m.json").expect("metadata")
    }

    #[test]
    fn resolves_in_order_lineage_schema_metadata_other_schemas() {
        let m = metadata();
        let old = m.schema(0).expect("schema 0");
        let resolve = |name: &str| ColumnSource::resolve(&m, old, name);
        assert_eq!(
            resolve("_row_id"),
            Some(ColumnSource::Lineage(LineageColumn::RowId))
        );
        assert_eq!(
            resolve("_last_updated_sequence_number"),
            Some(ColumnSource::Lineage(
                LineageColumn::LastUpdatedSequenceNumber
            ))
        );
        let Some(ColumnSource::Field(name)) = resolve("name") else {
            panic!("name is a column of schema 0");
        };
        assert_eq!(
            (name.id, &name.field_type),
            (2, &Type::Primitive(PrimitiveType::String))
        );
        let Some(ColumnSource::Metadata(file)) = resolve("_file") else {
            panic!("_file is a metadata column");
        };
        assert_eq!(file.id, 2147483646);
        // Fields the old schema lacks: the newest schema's field of that name.
        let Some(ColumnSource::Absent(added)) = resolve("added") else {
            panic!("added is absent from schema 0");
        };
        assert_eq!(added.initial_default, Some(Literal::Int(7)));
        let Some(ColumnSource::Absent(gone)) = resolve("gone") else {
            panic!("gone is absent from schema 0");
        };
        assert_eq!(gone.id, 7);
        assert_eq!(resolve("nope"), None);
        // Read with the current schema, `added` is a column.
        let current = m.current_schema();
        assert!(matches!(
            ColumnSource::resolve(&m, current, "added"),
            Some(ColumnSource::Field(f)) if f.id == 5
        ));
    }

    #[test]
    fn which_columns_may_read_null() {
        let m = metadata();
        let old = m.schema(0).expect("schema 0");
        let may = |name: &str| {
            ColumnSource::resolve(&m, old, name)
                .expect("resolved")
                .may_read_null()
        };
        assert!(may("_row_id") && may("_last_updated_sequence_number"));
        assert!(!may("id"), "required");
        assert!(may("name"), "optional");
        assert!(!may("_file") && !may("_spec_id") && may("_partition"));
        assert!(!may("added"), "absent with an initial-default");
        assert!(may("gone"), "absent without an initial-default");
    }

    #[test]
    fn projected_names() {
        let m = metadata();
        let old = m.schema(0).expect("schema 0");
        let name = |n: &str| {
            ColumnSource::resolve(&m, old, n)
                .expect("resolved")
                .projected_name()
                .map(str::to_string)
        };
        assert_eq!(name("name").as_deref(), Some("name"));
        assert_eq!(name("_spec_id").as_deref(), Some("_spec_id"));
        assert_eq!(name("_row_id"), None);
        assert_eq!(name("added"), None);
    }
}
