//! Metadata columns (spec: "Reserved Field IDs"): `_file`, `_pos`, `_spec_id` and `_partition`,
//! selectable by name in a scan's columns like table columns. A table column of the same name
//! wins. `_partition` is the table's partition type: every field of every partition spec, by
//! partition field id, named as the newest spec names it; a file's fields that its own spec
//! lacks are null.

use std::collections::BTreeMap;

use crate::scan::plan::planner::partition_field_type;
use crate::scan::plan::task::FileScanTask;
use crate::spec::{Literal, NestedField, PrimitiveType, StructType, TableMetadata, Type};

/// Reserved field id of `_file` (the data file's location as its manifest records it).
pub const FILE_FIELD_ID: i32 = 2147483646;
/// Reserved field id of `_pos` (the row's position in its data file, from 0).
pub const POS_FIELD_ID: i32 = 2147483645;
/// Reserved field id of `_spec_id` (the data file's partition spec id).
pub const SPEC_ID_FIELD_ID: i32 = 2147483643;
/// Reserved field id of `_partition` (the data file's partition tuple).
pub const PARTITION_FIELD_ID: i32 = 2147483642;

/// Names of the metadata columns a scan can select, in spec order.
pub const METADATA_COLUMNS: [&str; 4] = ["_file", "_pos", "_spec_id", "_partition"];

/// The metadata column called `name`, as a field to project (`None` for other names).
pub fn metadata_column(metadata: &TableMetadata, name: &str) -> Option<NestedField> {
    let (id, field_type) = match name {
        "_file" => (FILE_FIELD_ID, Type::Primitive(PrimitiveType::String)),
        "_pos" => (POS_FIELD_ID, Type::Primitive(PrimitiveType::Long)),
        "_spec_id" => (SPEC_ID_FIELD_ID, Type::Primitive(PrimitiveType::Int)),
        "_partition" => (PARTITION_FIELD_ID, Type::Struct(partition_type(metadata))),
        _ => return None,
    };
    Some(NestedField::optional(id, name, field_type))
}

/// Whether `id` is one of the metadata columns this module provides.
pub fn is_metadata_column(id: i32) -> bool {
    matches!(
        id,
        FILE_FIELD_ID | POS_FIELD_ID | SPEC_ID_FIELD_ID | PARTITION_FIELD_ID
    )
}

/// The table's partition type (Iceberg Java's `Partitioning.partitionType`): the union of the
/// fields of all specs, ordered by partition field id; names and types from the newest spec
/// that has the field (a `void` field takes its type from a spec where it is not void).
pub fn partition_type(metadata: &TableMetadata) -> StructType {
    let mut types_by_id = std::collections::HashMap::new();
    for s in &metadata.schemas {
        types_by_id.extend(s.types_by_id());
    }
    types_by_id.extend(metadata.current_schema().types_by_id());
    let mut specs: Vec<_> = metadata.partition_specs.iter().collect();
    specs.sort_by_key(|s| std::cmp::Reverse(s.spec_id));
    let mut fields: BTreeMap<i32, (String, PrimitiveType, bool)> = BTreeMap::new();
    for spec in specs {
        for f in &spec.fields {
            let ty = partition_field_type(&f.transform, types_by_id.get(&f.source_id));
            let void = f.transform == crate::spec::Transform::Void;
            match fields.get_mut(&f.field_id) {
                None => {
                    fields.insert(f.field_id, (f.name.clone(), ty, void));
                }
                Some(e) if e.2 && !void => {
                    e.1 = ty;
                    e.2 = false;
                }
                Some(_) => {}
            }
        }
    }
    StructType {
        fields: fields
            .into_iter()
            .map(|(id, (name, ty, _))| NestedField::optional(id, name, Type::Primitive(ty)))
            .collect(),
    }
}

/// The constant value of a metadata column (all but `_pos`) for the rows of `task`'s file.
/// `metadata` gives the file's partition spec.
pub fn constant(
    f: &NestedField,
    task: &FileScanTask,
    metadata: &TableMetadata,
) -> Option<Option<Literal>> {
    let df = &task.data_file;
    Some(Some(match f.id {
        FILE_FIELD_ID => Literal::String(df.file_path.clone()),
        SPEC_ID_FIELD_ID => Literal::Int(df.spec_id),
        PARTITION_FIELD_ID => {
            let Type::Struct(st) = &f.field_type else {
                return None;
            };
            let spec = metadata.partition_spec(df.spec_id);
            let values = st
                .fields
                .iter()
                .map(|pf| {
                    let v = spec
                        .and_then(|s| s.fields.iter().position(|x| x.field_id == pf.id))
                        .and_then(|i| df.partition.get(i).cloned().flatten());
                    (pf.id, v)
                })
                .collect();
            Literal::Struct(values)
        }
        _ => return None,
    }))
}
