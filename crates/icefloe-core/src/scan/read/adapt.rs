//! Schema evolution at read time (spec: "Schema Evolution", "Column Projection"): a column of a
//! data file, found by field id (or through the name mapping for files without ids), is
//! reshaped to the type the reading schema gives it: type promotion, nested fields added
//! (filled with `initial-default` or null), removed, renamed or reordered.

use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, BinaryArray, ListArray, MapArray, StructArray, UInt32Array,
};
use arrow::compute::take;
use arrow::datatypes::{DataType, Fields};

use crate::spec::arrow_schema::{field_to_arrow, primitive_to_arrow, type_to_arrow};
use crate::spec::field_lookup::{find_field, mapped_children};
use crate::spec::name_mapping::{lookup, MappedField};
use crate::spec::{NestedField, PrimitiveType, Type};

/// Reshapes `arr` (a file column) to `target`'s type. `path` names the data file for errors.
pub fn adapt(
    arr: &ArrayRef,
    ty: &Type,
    mapping: Option<&[MappedField]>,
    path: &str,
) -> crate::Result<ArrayRef> {
    let err = |r: String| crate::Error::data_file(path, r);
    match ty {
        Type::Primitive(PrimitiveType::Unknown) => Ok(new_null_array(&DataType::Null, arr.len())),
        Type::Primitive(PrimitiveType::Variant) => variant_to_json(arr, path),
        Type::Primitive(p) => {
            let target = primitive_to_arrow(p);
            if arr.data_type() == &target {
                Ok(arr.clone())
            } else {
                cast_exact(arr, &target)
                    .map_err(|e| err(format!("cannot read {} as {p}: {e}", arr.data_type())))
            }
        }
        Type::Struct(st) => {
            let s = arr
                .as_any()
                .downcast_ref::<StructArray>()
                .ok_or_else(|| err(format!("expected a struct, found {}", arr.data_type())))?;
            let file_fields = s.fields().clone();
            let mut fields = Vec::with_capacity(st.fields.len());
            let mut children = Vec::with_capacity(st.fields.len());
            for f in &st.fields {
                let child = match find_field(&file_fields, f.id, mapping) {
                    Some(i) => adapt(
                        s.column(i),
                        &f.field_type,
                        mapped_children(mapping, &file_fields[i]),
                        path,
                    )?,
                    None => missing_column(f, s.len(), path)?,
                };
                fields.push(Arc::new(field_to_arrow(f)));
                children.push(child);
            }
            Ok(Arc::new(
                StructArray::try_new(Fields::from(fields), children, s.nulls().cloned())
                    .map_err(|e| err(e.to_string()))?,
            ))
        }
        Type::List(l) => {
            let arr = if matches!(arr.data_type(), DataType::List(_)) {
                arr.clone()
            } else {
                let DataType::LargeList(f) = arr.data_type() else {
                    return Err(err(format!("expected a list, found {}", arr.data_type())));
                };
                cast_exact(arr, &DataType::List(f.clone())).map_err(|e| err(e.to_string()))?
            };
            let list = arr
                .as_any()
                .downcast_ref::<ListArray>()
                .expect("checked list");
            let elem_map = mapping
                .and_then(|m| lookup(m, "element"))
                .map(|m| m.fields.as_slice());
            let values = adapt(list.values(), &l.element, elem_map.or(mapping), path)?;
            let DataType::List(target_field) = type_to_arrow(ty) else {
                unreachable!()
            };
            Ok(Arc::new(
                ListArray::try_new(
                    target_field,
                    list.offsets().clone(),
                    values,
                    list.nulls().cloned(),
                )
                .map_err(|e| err(e.to_string()))?,
            ))
        }
        Type::Map(m) => {
            let map = arr
                .as_any()
                .downcast_ref::<MapArray>()
                .ok_or_else(|| err(format!("expected a map, found {}", arr.data_type())))?;
            let sub = |name: &str| {
                mapping
                    .and_then(|mm| lookup(mm, name))
                    .map(|x| x.fields.as_slice())
            };
            let keys = adapt(map.keys(), &m.key, sub("key"), path)?;
            let values = adapt(map.values(), &m.value, sub("value"), path)?;
            let DataType::Map(entries_field, _) = type_to_arrow(ty) else {
                unreachable!()
            };
            let DataType::Struct(entry_fields) = entries_field.data_type() else {
                unreachable!()
            };
            let entries = StructArray::try_new(entry_fields.clone(), vec![keys, values], None)
                .map_err(|e| err(e.to_string()))?;
            Ok(Arc::new(
                MapArray::try_new(
                    entries_field.clone(),
                    map.offsets().clone(),
                    entries,
                    map.nulls().cloned(),
                    false,
                )
                .map_err(|e| err(e.to_string()))?,
            ))
        }
    }
}

/// A column the file does not have: its `initial-default` repeated, or nulls. A required
/// field without a default cannot be read from such a file.
pub fn missing_column(f: &NestedField, len: usize, path: &str) -> crate::Result<ArrayRef> {
    match &f.initial_default {
        Some(lit) => {
            let one = literal_array(lit, &f.field_type).map_err(|r| {
                crate::Error::data_file(path, format!("initial-default of {}: {r}", f.name))
            })?;
            repeat(&one, len).map_err(|e| crate::Error::data_file(path, e))
        }
        None if f.required => Err(crate::Error::data_file(
            path,
            format!(
                "required field {} (id {}) is missing from the file and has no initial-default",
                f.name, f.id
            ),
        )),
        None => Ok(new_null_array(&type_to_arrow(&f.field_type), len)),
    }
}

fn repeat(one: &ArrayRef, len: usize) -> Result<ArrayRef, String> {
    let idx = UInt32Array::from(vec![0u32; len]);
    take(one, &idx, None).map_err(|e| e.to_string())
}

pub use crate::spec::arrow_schema::cast_exact;
pub use crate::spec::literal_array::literal_array;

/// Renders a Parquet variant group (`metadata`, `value` binaries) as JSON text.
fn variant_to_json(arr: &ArrayRef, path: &str) -> crate::Result<ArrayRef> {
    let err = |r: String| crate::Error::data_file(path, r);
    let s = arr.as_any().downcast_ref::<StructArray>().ok_or_else(|| {
        err(format!(
            "variant column is {}, not a metadata/value group",
            arr.data_type()
        ))
    })?;
    // A shredded variant (`typed_value`, Parquet VariantShredding) is first merged back into
    // its binary encoding, so that it reads as the same value as an unshredded one.
    let unshredded;
    let s = if s.column_by_name("typed_value").is_some() {
        let va = parquet_variant_compute::VariantArray::try_new(s)
            .and_then(|v| parquet_variant_compute::unshred_variant(&v))
            .map_err(|e| err(format!("shredded variant: {e}")))?;
        unshredded = va.into_inner();
        &unshredded
    } else {
        s
    };
    let child = |name: &str| -> crate::Result<BinaryArray> {
        let c = s
            .column_by_name(name)
            .ok_or_else(|| err(format!("variant column has no {name} field")))?;
        let c = cast_exact(c, &DataType::Binary).map_err(|e| err(e.to_string()))?;
        Ok(c.as_any()
            .downcast_ref::<BinaryArray>()
            .expect("cast to binary")
            .clone())
    };
    let (metadata, value) = (child("metadata")?, child("value")?);
    let out = crate::encode::variant::variant_array_to_json(&metadata, &value, s.nulls())
        .map_err(|e| err(format!("variant: {e}")))?;
    Ok(Arc::new(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::name_mapping::NameMapping;
    use crate::spec::Literal;
    use arrow::array::AsArray;
    use arrow::array::Float32Array;
    use arrow::datatypes::Field;
    use std::collections::HashMap;

    #[test]
    fn name_mapping_matches_files_without_ids() {
        let m = NameMapping::parse(
            r#"[{"field-id":1,"names":["id"]},{"field-id":2,"names":["loc","location"],"fields":[{"field-id":3,"names":["lat"]}]}]"#,
        )
        .unwrap();
        let inner = Fields::from(vec![Field::new("lat", DataType::Float32, true)]);
        let file = Fields::from(vec![
            Field::new("location", DataType::Struct(inner.clone()), true),
            Field::new("id", DataType::Int32, true),
        ]);
        assert_eq!(find_field(&file, 1, Some(&m.fields)), Some(1));
        assert_eq!(find_field(&file, 2, Some(&m.fields)), Some(0));
        assert_eq!(find_field(&file, 1, None), None);
        // A nested field found through the mapping, promoted float -> double.
        let loc = StructArray::new(inner, vec![Arc::new(Float32Array::from(vec![1.5]))], None);
        let table_type = Type::Struct(crate::spec::StructType {
            fields: vec![NestedField::optional(
                3,
                "latitude",
                Type::Primitive(PrimitiveType::Double),
            )],
        });
        let out = adapt(
            &(Arc::new(loc) as ArrayRef),
            &table_type,
            mapped_children(Some(&m.fields), &file[0]),
            "f",
        )
        .unwrap();
        let out = out.as_struct();
        assert_eq!(
            out.column(0)
                .as_primitive::<arrow::datatypes::Float64Type>()
                .value(0),
            1.5
        );
        // Files with ids ignore the mapping.
        let with_ids = Fields::from(vec![Field::new("id", DataType::Int32, true).with_metadata(
            HashMap::from([("PARQUET:field_id".to_string(), "9".to_string())]),
        )]);
        assert_eq!(find_field(&with_ids, 1, Some(&m.fields)), None);
    }

    #[test]
    fn struct_and_map_defaults_and_empty_structs_become_arrays() {
        let empty = Type::Struct(crate::spec::StructType::default());
        let a = literal_array(&Literal::Struct(vec![]), &empty).unwrap();
        assert_eq!(a.len(), 1);
        let map = Type::from_json(
            &serde_json::json!({"type": "map", "key-id": 1, "key": "string", "value-id": 2,
                "value": "long", "value-required": false}),
            "t",
        )
        .unwrap();
        let lit = Literal::from_json(
            &serde_json::json!({"keys": ["a", "b"], "values": [1, null]}),
            &map,
        )
        .unwrap();
        let a = literal_array(&lit, &map).unwrap();
        let m = a.as_map();
        assert_eq!(m.value_length(0), 2);
        assert!(m.values().is_null(1));
    }

    #[test]
    fn failing_casts_are_errors() {
        let big = arrow::array::UInt64Array::from(vec![u64::MAX]);
        assert!(cast_exact(&big, &DataType::Int64).is_err());
        let days = arrow::array::Date32Array::from(vec![2_932_896]); // 9999-12-31
        let ns = DataType::Timestamp(arrow::datatypes::TimeUnit::Nanosecond, None);
        assert!(cast_exact(&days, &ns).is_err());
        let bad = BinaryArray::from(vec![&[0xffu8, 0x00][..]]);
        assert!(cast_exact(&bad, &DataType::Utf8).is_err());
    }

    #[test]
    fn missing_columns_take_initial_default_or_fail_when_required() {
        let mut f = NestedField {
            id: 5,
            name: "c".into(),
            required: true,
            field_type: Type::Primitive(PrimitiveType::Long),
            doc: None,
            initial_default: None,
            write_default: None,
        };
        assert!(missing_column(&f, 2, "f")
            .unwrap_err()
            .to_string()
            .contains("no initial-default"));
        f.initial_default = Some(Literal::Long(42));
        let a = missing_column(&f, 3, "f").unwrap();
        assert_eq!(
            a.as_primitive::<arrow::datatypes::Int64Type>()
                .values()
                .to_vec(),
            vec![42, 42, 42]
        );
    }
}
