//! Schema rules (spec: "Schemas and Data Types", "Reserved Field IDs"): field ids unique in a
//! schema and outside the reserved range, sibling names unique, no top-level name that a
//! metadata column uses, and no V3-only type or default in a format version 1 or 2 table.

use std::collections::HashSet;

use super::Warn;
use super::{MAX_USER_FIELD_ID, RESERVED_COLUMN_NAMES};
use crate::spec::{PrimitiveType, Schema, StructType, Type};
use crate::warning::Rule;

/// Checks one schema of a table with this `format_version`. The error text names the schema,
/// the field and the rule. A V3 type or default value in an older table is a warning: Iceberg
/// Java reads such schemas (PyIceberg writes defaults into format version 2 metadata), and
/// they read the same.
pub fn check_schema(
    schema: &Schema,
    format_version: i64,
    warn: &mut Warn<'_>,
) -> Result<(), String> {
    let mut ids = HashSet::new();
    let sid = schema.schema_id;
    for f in schema.columns() {
        if RESERVED_COLUMN_NAMES.contains(&f.name.as_str()) {
            return Err(format!(
                "schema {sid}: column name {:?} is reserved for a metadata column",
                f.name
            ));
        }
    }
    let mut newer = |what: String| warn(Rule::NewerFeature, format!("schema {sid}: {what}"));
    check_struct(&schema.fields, "", format_version, &mut ids, &mut newer)
        .map_err(|e| format!("schema {sid}: {e}"))
}

fn check_id(id: i32, name: &str, ids: &mut HashSet<i32>) -> Result<(), String> {
    if id > MAX_USER_FIELD_ID {
        return Err(format!(
            "field {name} uses id {id}, reserved for metadata columns (ids above {MAX_USER_FIELD_ID})"
        ));
    }
    if !ids.insert(id) {
        return Err(format!(
            "field id {id} ({name}) is used twice; field ids must be unique"
        ));
    }
    Ok(())
}

/// Reports what is newer than the table's format version.
type Newer<'a> = dyn FnMut(String) + 'a;

fn check_struct(
    s: &StructType,
    prefix: &str,
    fv: i64,
    ids: &mut HashSet<i32>,
    newer: &mut Newer<'_>,
) -> Result<(), String> {
    let mut names = HashSet::new();
    for f in &s.fields {
        let name = format!("{prefix}{}", f.name);
        if !names.insert(f.name.as_str()) {
            return Err(format!("column name {name:?} is used twice in one struct"));
        }
        check_id(f.id, &name, ids)?;
        if fv < 3 && (f.initial_default.is_some() || f.write_default.is_some()) {
            newer(format!(
                "field {name} has a default value, a format version 3 feature, in a format version {fv} table"
            ));
        }
        check_type(&f.field_type, &name, fv, ids, newer)?;
    }
    Ok(())
}

fn check_type(
    t: &Type,
    name: &str,
    fv: i64,
    ids: &mut HashSet<i32>,
    newer: &mut Newer<'_>,
) -> Result<(), String> {
    match t {
        Type::Primitive(p) => {
            let v3_only = matches!(
                p,
                PrimitiveType::Variant
                    | PrimitiveType::TimestampNs
                    | PrimitiveType::TimestamptzNs
                    | PrimitiveType::Geometry(_)
                    | PrimitiveType::Geography(_)
                    | PrimitiveType::Unknown
            );
            if v3_only && fv < 3 {
                newer(format!(
                    "field {name} has type {p}, a format version 3 type, in a format version {fv} table"
                ));
            }
            Ok(())
        }
        Type::Struct(s) => check_struct(s, &format!("{name}."), fv, ids, newer),
        Type::List(l) => {
            let n = format!("{name}.element");
            check_id(l.element_id, &n, ids)?;
            check_type(&l.element, &n, fv, ids, newer)
        }
        Type::Map(m) => {
            let k = format!("{name}.key");
            let v = format!("{name}.value");
            check_id(m.key_id, &k, ids)?;
            check_id(m.value_id, &v, ids)?;
            check_type(&m.key, &k, fv, ids, newer)?;
            check_type(&m.value, &v, fv, ids, newer)
        }
    }
}
