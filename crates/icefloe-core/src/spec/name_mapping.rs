//! Name mappings (spec: "Column Projection", table property `schema.name-mapping.default`):
//! field ids for data files written without them, matched by column name.

use serde_json::Value as Json;

/// One mapped field: the names it may appear under and its nested fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MappedField {
    pub field_id: Option<i32>,
    pub names: Vec<String>,
    pub fields: Vec<MappedField>,
}

/// A name mapping: the top-level mapped fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NameMapping {
    pub fields: Vec<MappedField>,
}

impl NameMapping {
    /// Parses the JSON of `schema.name-mapping.default`.
    pub fn parse(json: &str) -> Result<NameMapping, String> {
        let v: Json =
            serde_json::from_str(json).map_err(|e| format!("invalid name mapping: {e}"))?;
        let a = v.as_array().ok_or("name mapping is not a JSON array")?;
        Ok(NameMapping {
            fields: a.iter().map(parse_field).collect(),
        })
    }
}

fn parse_field(v: &Json) -> MappedField {
    MappedField {
        field_id: v.get("field-id").and_then(Json::as_i64).map(|i| i as i32),
        names: v
            .get("names")
            .and_then(Json::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|n| n.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        fields: v
            .get("fields")
            .and_then(Json::as_array)
            .map(|a| a.iter().map(parse_field).collect())
            .unwrap_or_default(),
    }
}

/// Finds the mapped field for `name` among `fields`.
pub fn lookup<'a>(fields: &'a [MappedField], name: &str) -> Option<&'a MappedField> {
    fields.iter().find(|f| f.names.iter().any(|n| n == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nested_mapping() {
        let m = NameMapping::parse(
            r#"[{"field-id":1,"names":["id","key"]},{"field-id":2,"names":["loc"],"fields":[{"field-id":3,"names":["lat"]}]}]"#,
        )
        .unwrap();
        assert_eq!(lookup(&m.fields, "key").unwrap().field_id, Some(1));
        let loc = lookup(&m.fields, "loc").unwrap();
        assert_eq!(lookup(&loc.fields, "lat").unwrap().field_id, Some(3));
        assert!(lookup(&m.fields, "nope").is_none());
    }
}
