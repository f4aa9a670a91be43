//! Table schemas (spec: "Schemas"), with lookups by field id, the key of schema evolution.

use std::collections::HashMap;

use serde_json::Value as Json;

use super::types::{NestedField, StructType, Type};

/// A schema: a struct with an id. Fields are matched to data files by field id, never by name.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    pub schema_id: i32,
    pub fields: StructType,
    pub identifier_field_ids: Vec<i32>,
}

impl Schema {
    /// Parses a schema object. `path` names the metadata file for errors.
    pub fn from_json(v: &Json, path: &str) -> crate::Result<Schema> {
        Ok(Schema {
            schema_id: match v.get("schema-id").and_then(Json::as_i64) {
                None => 0,
                Some(id) => i32::try_from(id).map_err(|_| {
                    crate::Error::metadata(path, format!("schema-id {id} is not an int"))
                })?,
            },
            fields: StructType::from_json(v, path)?,
            identifier_field_ids: v
                .get("identifier-field-ids")
                .and_then(Json::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_i64().map(|x| x as i32))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    /// Top-level fields in schema order.
    pub fn columns(&self) -> &[NestedField] {
        &self.fields.fields
    }

    /// A top-level field by exact name.
    pub fn column(&self, name: &str) -> Option<&NestedField> {
        self.fields.fields.iter().find(|f| f.name == name)
    }

    /// Every field id in the schema (nested included) mapped to its type; list elements and map
    /// keys/values are included by their ids.
    pub fn types_by_id(&self) -> HashMap<i32, Type> {
        fn walk(t: &Type, out: &mut HashMap<i32, Type>) {
            match t {
                Type::Struct(s) => {
                    for f in &s.fields {
                        out.insert(f.id, f.field_type.clone());
                        walk(&f.field_type, out);
                    }
                }
                Type::List(l) => {
                    out.insert(l.element_id, (*l.element).clone());
                    walk(&l.element, out);
                }
                Type::Map(m) => {
                    out.insert(m.key_id, (*m.key).clone());
                    out.insert(m.value_id, (*m.value).clone());
                    walk(&m.key, out);
                    walk(&m.value, out);
                }
                Type::Primitive(_) => {}
            }
        }
        let mut out = HashMap::new();
        walk(&Type::Struct(self.fields.clone()), &mut out);
        out
    }

    /// Dotted name (`info.x`) of every nested struct field, by id.
    pub fn names_by_id(&self) -> HashMap<i32, String> {
        fn walk(s: &StructType, prefix: &str, out: &mut HashMap<i32, String>) {
            for f in &s.fields {
                let name = if prefix.is_empty() {
                    f.name.clone()
                } else {
                    format!("{prefix}.{}", f.name)
                };
                if let Type::Struct(inner) = &f.field_type {
                    walk(inner, &name, out);
                }
                out.insert(f.id, name);
            }
        }
        let mut out = HashMap::new();
        walk(&self.fields, "", &mut out);
        out
    }

    /// The path of field ids from a top-level column down to every field reachable through
    /// structs only (the fields an equality delete may key on), by id: `[s, k]` for `s.k`.
    pub fn struct_paths(&self) -> HashMap<i32, Vec<i32>> {
        fn walk(s: &StructType, prefix: &[i32], out: &mut HashMap<i32, Vec<i32>>) {
            for f in &s.fields {
                let mut path = prefix.to_vec();
                path.push(f.id);
                if let Type::Struct(inner) = &f.field_type {
                    walk(inner, &path, out);
                }
                out.insert(f.id, path);
            }
        }
        let mut out = HashMap::new();
        walk(&self.fields, &[], &mut out);
        out
    }
}
