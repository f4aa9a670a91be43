//! The columns a table offers to SQL, and how a DataFusion projection of them becomes the
//! core's scan columns.
//!
//! A table shows the columns of the schema it reads with (spec: "Schemas and Data Types"), as
//! `icefloe cat` prints them. DataFusion 55's `TableProvider` has no hidden columns (every
//! column of [`TableProvider::schema`](datafusion::catalog::TableProvider::schema) is in
//! `SELECT *`), so the lineage columns (spec: "Row Lineage") and the metadata columns (spec:
//! "Reserved Field IDs") are offered only when [`ExtraColumns`] asks for them: lineage first
//! (as `icefloe cat --lineage` puts them), metadata columns last.

use std::sync::Arc;

use arrow::datatypes::{Field, Schema as ArrowSchema, SchemaRef};
use icefloe_core::scan::metadata_columns::{metadata_column, METADATA_COLUMNS};
use icefloe_core::spec::arrow_schema::{field_to_arrow, lineage_fields};
use icefloe_core::spec::{Schema, TableMetadata};

/// Columns beyond the table's own that a table offers to SQL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExtraColumns {
    /// `_row_id` and `_last_updated_sequence_number` (both `long`; null for rows written
    /// before the table had row lineage), first.
    pub lineage: bool,
    /// `_file` (string), `_pos` (long, from 0), `_spec_id` (int) and `_partition` (the
    /// table's partition type as a struct), last.
    pub metadata: bool,
}

/// Where a column of the SQL table comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// Lineage column 0 (`_row_id`) or 1 (`_last_updated_sequence_number`).
    Lineage(usize),
    /// A table column or a metadata column, read by this name.
    Named(String),
}

/// The SQL table's columns: their Arrow schema and where each comes from.
#[derive(Debug, Clone)]
pub(crate) struct TableColumns {
    pub schema: SchemaRef,
    pub sources: Vec<Source>,
}

/// How a projection is read: the core scan's columns and lineage flag, and where each
/// projected column sits in the scan's batches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScanColumns {
    pub names: Vec<String>,
    pub lineage: bool,
    /// Index in the scan's batches of each output column.
    pub indices: Vec<usize>,
}

impl TableColumns {
    /// The columns of `schema` (the schema read) with `extra`. A lineage or metadata column
    /// whose name a table column already has is left out: the table's column wins, as in the
    /// core's scan.
    pub fn new(metadata: &TableMetadata, schema: &Schema, extra: ExtraColumns) -> Self {
        let mut fields: Vec<Field> = Vec::new();
        let mut sources = Vec::new();
        let taken = |name: &str| schema.column(name).is_some();
        if extra.lineage {
            for (i, f) in lineage_fields().into_iter().enumerate() {
                if !taken(f.name()) {
                    sources.push(Source::Lineage(i));
                    fields.push(f);
                }
            }
        }
        for f in schema.columns() {
            sources.push(Source::Named(f.name.clone()));
            fields.push(field_to_arrow(f));
        }
        if extra.metadata {
            for name in METADATA_COLUMNS {
                if taken(name) {
                    continue;
                }
                if let Some(f) = metadata_column(metadata, name) {
                    sources.push(Source::Named(name.to_string()));
                    fields.push(field_to_arrow(&f));
                }
            }
        }
        TableColumns {
            schema: Arc::new(ArrowSchema::new(fields)),
            sources,
        }
    }

    /// What the scan reads for `projection` (indices into [`Self::schema`]; `None`: all). An
    /// empty projection (`SELECT count(*)`) reads `_pos` alone, which no data file is read
    /// for, so every live row still counts.
    pub fn scan_columns(&self, projection: Option<&[usize]>) -> ScanColumns {
        let all: Vec<usize> = (0..self.sources.len()).collect();
        let projection = projection.unwrap_or(&all);
        let lineage = projection
            .iter()
            .any(|i| matches!(self.sources[*i], Source::Lineage(_)));
        let offset = if lineage { 2 } else { 0 };
        let mut names: Vec<String> = Vec::new();
        let mut indices = Vec::with_capacity(projection.len());
        for i in projection {
            match &self.sources[*i] {
                Source::Lineage(k) => indices.push(*k),
                Source::Named(n) => {
                    let at = match names.iter().position(|x| x == n) {
                        Some(at) => at,
                        None => {
                            names.push(n.clone());
                            names.len() - 1
                        }
                    };
                    indices.push(offset + at);
                }
            }
        }
        if names.is_empty() && !lineage {
            names.push("_pos".to_string());
        }
        ScanColumns {
            names,
            lineage,
            indices,
        }
    }

    /// The Arrow schema of `projection`.
    pub fn projected(&self, projection: Option<&[usize]>) -> SchemaRef {
        match projection {
            None => self.schema.clone(),
            Some(p) => Arc::new(ArrowSchema::new_with_metadata(
                p.iter()
                    .map(|i| self.schema.field(*i).clone())
                    .collect::<Vec<_>>(),
                self.schema.metadata().clone(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(sources: Vec<Source>) -> TableColumns {
        let fields: Vec<Field> = (0..sources.len())
            .map(|i| Field::new(format!("c{i}"), arrow::datatypes::DataType::Int64, true))
            .collect();
        TableColumns {
            schema: Arc::new(ArrowSchema::new(fields)),
            sources,
        }
    }

    #[test]
    fn projection_to_scan_columns() {
        let t = cols(vec![
            Source::Lineage(0),
            Source::Lineage(1),
            Source::Named("a".into()),
            Source::Named("b".into()),
            Source::Named("_pos".into()),
        ]);
        // b, _row_id: the scan reads lineage then [b]; b sits after the two lineage columns.
        assert_eq!(
            t.scan_columns(Some(&[3, 0])),
            ScanColumns {
                names: vec!["b".into()],
                lineage: true,
                indices: vec![2, 0],
            }
        );
        assert_eq!(
            t.scan_columns(Some(&[4, 2])),
            ScanColumns {
                names: vec!["_pos".into(), "a".into()],
                lineage: false,
                indices: vec![0, 1],
            }
        );
        // count(*): `_pos` alone, nothing output.
        assert_eq!(
            t.scan_columns(Some(&[])),
            ScanColumns {
                names: vec!["_pos".into()],
                lineage: false,
                indices: vec![],
            }
        );
        assert_eq!(t.scan_columns(None).indices, vec![0, 1, 2, 3, 4]);
    }
}
