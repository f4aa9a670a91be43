//! Partition specs and transforms (spec: "Partitioning", "Partition Transforms").

use serde_json::Value as Json;

/// A partition transform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transform {
    Identity,
    Bucket(u32),
    Truncate(u32),
    Year,
    Month,
    Day,
    Hour,
    Void,
    /// A transform this reader does not know; such fields are never used for pruning.
    Other(String),
}

impl Transform {
    /// Parses `identity`, `bucket[N]`, `truncate[W]`, `year`, `month`, `day`, `hour`, `void`.
    pub fn parse(s: &str) -> Transform {
        let arg = |p: &str| {
            s.strip_prefix(p)
                .and_then(|r| r.strip_suffix(']'))
                .and_then(|n| n.trim().parse().ok())
        };
        match s {
            "identity" => Transform::Identity,
            "year" => Transform::Year,
            "month" => Transform::Month,
            "day" => Transform::Day,
            "hour" => Transform::Hour,
            "void" => Transform::Void,
            _ => {
                if let Some(n) = arg("bucket[") {
                    Transform::Bucket(n)
                } else if let Some(w) = arg("truncate[") {
                    Transform::Truncate(w)
                } else {
                    Transform::Other(s.to_string())
                }
            }
        }
    }
}

impl std::fmt::Display for Transform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Transform::Identity => f.write_str("identity"),
            Transform::Bucket(n) => write!(f, "bucket[{n}]"),
            Transform::Truncate(w) => write!(f, "truncate[{w}]"),
            Transform::Year => f.write_str("year"),
            Transform::Month => f.write_str("month"),
            Transform::Day => f.write_str("day"),
            Transform::Hour => f.write_str("hour"),
            Transform::Void => f.write_str("void"),
            Transform::Other(s) => f.write_str(s),
        }
    }
}

/// One field of a partition spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionField {
    pub source_id: i32,
    pub field_id: i32,
    pub name: String,
    pub transform: Transform,
}

/// A partition spec: how a data file's partition tuple derives from its rows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionSpec {
    pub spec_id: i32,
    pub fields: Vec<PartitionField>,
}

impl PartitionSpec {
    /// Parses a spec object, or (v1 `partition-spec`) a bare array of fields. Fields without a
    /// `field-id` (v1) get ids from 1000 up, as the spec assigns them.
    pub fn from_json(v: &Json, spec_id: i32) -> PartitionSpec {
        let (spec_id, fields) = match v {
            Json::Array(a) => (spec_id, a.as_slice()),
            _ => (
                v.get("spec-id")
                    .and_then(Json::as_i64)
                    .unwrap_or(spec_id as i64) as i32,
                v.get("fields")
                    .and_then(Json::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or(&[]),
            ),
        };
        let fields = fields
            .iter()
            .enumerate()
            .map(|(i, f)| PartitionField {
                source_id: f.get("source-id").and_then(Json::as_i64).unwrap_or(-1) as i32,
                field_id: f
                    .get("field-id")
                    .and_then(Json::as_i64)
                    .unwrap_or(1000 + i as i64) as i32,
                name: f
                    .get("name")
                    .and_then(Json::as_str)
                    .unwrap_or("")
                    .to_string(),
                transform: Transform::parse(
                    f.get("transform").and_then(Json::as_str).unwrap_or(""),
                ),
            })
            .collect();
        PartitionSpec { spec_id, fields }
    }

    /// A spec with no fields: every file in one partition.
    pub fn is_unpartitioned(&self) -> bool {
        self.fields.iter().all(|f| f.transform == Transform::Void)
    }
}
