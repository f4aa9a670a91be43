//! Schema types read from their JSON form (spec: "Schemas and Data Types", Appendix C), with
//! field defaults decoded by the field's type.

use serde_json::Value as Json;

use super::literal::Literal;
use super::literal_decode::DefaultKind;
use super::types::{ListType, MapType, NestedField, PrimitiveType, StructType, Type};

impl Type {
    /// Parses a type from its JSON form. Errors name the offending text; `path` is the metadata
    /// file being read.
    pub fn from_json(v: &Json, path: &str) -> crate::Result<Type> {
        let unknown = |s: &str| crate::Error::UnknownType {
            path: path.to_string(),
            type_name: s.to_string(),
        };
        match v {
            Json::String(s) => PrimitiveType::parse(s)
                .map(Type::Primitive)
                .ok_or_else(|| unknown(s)),
            Json::Object(o) => match o.get("type").and_then(Json::as_str) {
                Some("struct") => Ok(Type::Struct(StructType::from_json(v, path)?)),
                Some("list") => {
                    let element = o
                        .get("element")
                        .ok_or_else(|| unknown("list without element"))?;
                    Ok(Type::List(ListType {
                        element_id: int_field(o, "element-id", path)?,
                        element_required: o
                            .get("element-required")
                            .and_then(Json::as_bool)
                            .unwrap_or(false),
                        element: Box::new(Type::from_json(element, path)?),
                    }))
                }
                Some("map") => {
                    let key = o.get("key").ok_or_else(|| unknown("map without key"))?;
                    let value = o.get("value").ok_or_else(|| unknown("map without value"))?;
                    Ok(Type::Map(MapType {
                        key_id: int_field(o, "key-id", path)?,
                        key: Box::new(Type::from_json(key, path)?),
                        value_id: int_field(o, "value-id", path)?,
                        value_required: o
                            .get("value-required")
                            .and_then(Json::as_bool)
                            .unwrap_or(false),
                        value: Box::new(Type::from_json(value, path)?),
                    }))
                }
                _ => Err(unknown(&v.to_string())),
            },
            other => Err(unknown(&other.to_string())),
        }
    }
}

fn int_field(o: &serde_json::Map<String, Json>, key: &str, path: &str) -> crate::Result<i32> {
    o.get(key)
        .and_then(Json::as_i64)
        .and_then(|v| i32::try_from(v).ok())
        .ok_or_else(|| crate::Error::metadata(path, format!("missing or invalid {key:?}")))
}

impl StructType {
    /// Parses `{"type": "struct", "fields": [...]}`.
    pub fn from_json(v: &Json, path: &str) -> crate::Result<StructType> {
        let fields = v
            .get("fields")
            .and_then(Json::as_array)
            .ok_or_else(|| crate::Error::metadata(path, "struct without fields"))?;
        let fields = fields
            .iter()
            .map(|f| NestedField::from_json(f, path))
            .collect::<crate::Result<Vec<_>>>()?;
        Ok(StructType { fields })
    }
}

impl NestedField {
    /// Parses one struct field, including its `initial-default` and `write-default`.
    pub fn from_json(v: &Json, path: &str) -> crate::Result<NestedField> {
        let o = v
            .as_object()
            .ok_or_else(|| crate::Error::metadata(path, format!("field is not an object: {v}")))?;
        let id = int_field(o, "id", path)?;
        let name = o
            .get("name")
            .and_then(Json::as_str)
            .ok_or_else(|| crate::Error::metadata(path, format!("field {id} has no name")))?
            .to_string();
        let ty = o
            .get("type")
            .ok_or_else(|| crate::Error::metadata(path, format!("field {name} has no type")))?;
        let field_type = Type::from_json(ty, path)?;
        let default = |key: &str, kind: DefaultKind| -> crate::Result<Option<Literal>> {
            match o.get(key) {
                None | Some(Json::Null) => Ok(None),
                Some(d) => Literal::default_from_json(d, &field_type, kind)
                    .map(Some)
                    .map_err(|e| {
                        crate::Error::metadata(path, format!("{key} of field {name}: {e}"))
                    }),
            }
        };
        Ok(NestedField {
            id,
            required: o.get("required").and_then(Json::as_bool).unwrap_or(false),
            doc: o.get("doc").and_then(Json::as_str).map(str::to_string),
            initial_default: default("initial-default", DefaultKind::Initial)?,
            write_default: default("write-default", DefaultKind::Write)?,
            name,
            field_type,
        })
    }
}
