//! Finding a table field among a data file's Arrow fields: by field id, or by name through
//! the name mapping when the file carries no ids (spec: "Column Projection").

use arrow::datatypes::{Field, Fields};

use super::arrow_schema::field_id;
use super::name_mapping::{lookup, MappedField};

/// Where to find a table field among a file's fields: by field id, or by name through the
/// name mapping when the file carries no ids.
pub fn find_field(file_fields: &Fields, id: i32, mapping: Option<&[MappedField]>) -> Option<usize> {
    if let Some(i) = file_fields.iter().position(|f| field_id(f) == Some(id)) {
        return Some(i);
    }
    let has_ids = file_fields.iter().any(|f| field_id(f).is_some());
    match (has_ids, mapping) {
        (false, Some(m)) => file_fields
            .iter()
            .position(|f| lookup(m, f.name()).and_then(|mf| mf.field_id) == Some(id)),
        _ => None,
    }
}

/// The mapped children of a file field, for descending into nested types.
pub fn mapped_children<'a>(
    mapping: Option<&'a [MappedField]>,
    file_field: &Field,
) -> Option<&'a [MappedField]> {
    mapping
        .and_then(|m| lookup(m, file_field.name()))
        .map(|mf| mf.fields.as_slice())
}
