//! What a scan reads for a front-end's resolved columns ([`super::column_source`]), and where
//! each read one sits in the scan's batches: the lineage columns first when any is read, then
//! the projected columns, each once, in the order first named
//! ([`crate::spec::arrow_schema::scan_schema`]).

use super::column_source::ColumnSource;
use super::ScanBuilder;
use crate::spec::arrow_schema::lineage_fields;

/// The columns and lineage a scan of some [`ColumnSource`]s reads, and their batch layout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Projection {
    columns: Vec<String>,
    lineage: bool,
}

impl Projection {
    /// The projection that reads `sources`: every projected name once, in first-use order, and
    /// the lineage columns when a source is one. Absent fields read nothing.
    pub fn new<'a>(sources: impl IntoIterator<Item = &'a ColumnSource>) -> Self {
        let mut p = Self::default();
        for s in sources {
            if let ColumnSource::Lineage(_) = s {
                p.lineage = true;
            }
            if let Some(n) = s.projected_name() {
                if !p.columns.iter().any(|c| c == n) {
                    p.columns.push(n.to_string());
                }
            }
        }
        p
    }

    /// The names the scan projects ([`ScanBuilder::columns`]).
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Whether the scan reads the lineage columns ([`ScanBuilder::lineage`]).
    pub fn lineage(&self) -> bool {
        self.lineage
    }

    /// `builder` set to read this projection: its columns and its lineage.
    pub fn apply(&self, builder: ScanBuilder) -> ScanBuilder {
        builder.columns(self.columns.clone()).lineage(self.lineage)
    }

    /// The index of `source`'s column in the batches of a scan built with
    /// [`Projection::apply`]; `None` for an absent field (nothing is read for it) or a source
    /// this projection was not made with.
    pub fn batch_index(&self, source: &ColumnSource) -> Option<usize> {
        if let ColumnSource::Lineage(l) = source {
            return self.lineage.then_some(l.index());
        }
        let offset = if self.lineage {
            lineage_fields().len()
        } else {
            0
        };
        let name = source.projected_name()?;
        Some(offset + self.columns.iter().position(|c| c == name)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::column_source::LineageColumn;
    use crate::spec::arrow_schema::scan_schema;
    use crate::spec::{NestedField, PrimitiveType, Type};

    fn field(id: i32, name: &str) -> NestedField {
        NestedField::optional(id, name, Type::Primitive(PrimitiveType::Long))
    }

    #[test]
    fn lineage_first_then_each_projected_column_once() {
        let name = ColumnSource::Field(field(2, "name"));
        let file = ColumnSource::Metadata(field(2147483646, "_file"));
        let seq = ColumnSource::Lineage(LineageColumn::LastUpdatedSequenceNumber);
        let absent = ColumnSource::Absent(field(9, "added"));
        let sources = [
            name.clone(),
            seq.clone(),
            absent.clone(),
            file.clone(),
            name.clone(),
        ];
        let p = Projection::new(&sources);
        assert_eq!(p.columns(), ["name", "_file"]);
        assert!(p.lineage());
        // The positions agree with the scan's Arrow schema.
        let schema = scan_schema(&[field(2, "name"), field(2147483646, "_file")], true);
        for (source, want) in [
            (&name, "name"),
            (&seq, "_last_updated_sequence_number"),
            (&file, "_file"),
        ] {
            let i = p.batch_index(source).expect("read");
            assert_eq!(schema.field(i).name(), want);
        }
        assert_eq!(p.batch_index(&seq), Some(1));
        assert_eq!(p.batch_index(&file), Some(3));
        assert_eq!(p.batch_index(&absent), None);
    }

    #[test]
    fn without_lineage_columns_start_at_zero() {
        let id = ColumnSource::Field(field(1, "id"));
        let p = Projection::new([&id]);
        assert!(!p.lineage());
        assert_eq!(p.batch_index(&id), Some(0));
        let row_id = ColumnSource::Lineage(LineageColumn::RowId);
        assert_eq!(p.batch_index(&row_id), None, "not read");
        assert_eq!(p.batch_index(&ColumnSource::Field(field(3, "x"))), None);
    }
}
