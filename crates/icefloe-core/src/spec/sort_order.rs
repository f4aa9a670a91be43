//! Sort orders (spec: "Sorting"). Kept for completeness; reading never depends on them.

use serde_json::Value as Json;

/// A sort order: fields as written, with transform, direction and null order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortOrder {
    pub order_id: i64,
    /// `(source-id, transform, direction, null-order)` per field.
    pub fields: Vec<(i32, String, String, String)>,
}

impl SortOrder {
    /// Parses a sort order object.
    pub fn from_json(v: &Json) -> SortOrder {
        let s = |f: &Json, k: &str| f.get(k).and_then(Json::as_str).unwrap_or("").to_string();
        SortOrder {
            order_id: v.get("order-id").and_then(Json::as_i64).unwrap_or(0),
            fields: v
                .get("fields")
                .and_then(Json::as_array)
                .map(|a| {
                    a.iter()
                        .map(|f| {
                            (
                                f.get("source-id").and_then(Json::as_i64).unwrap_or(-1) as i32,
                                s(f, "transform"),
                                s(f, "direction"),
                                s(f, "null-order"),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}
