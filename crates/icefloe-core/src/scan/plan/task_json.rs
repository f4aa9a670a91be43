//! File scan tasks as JSON, for handing them to another process (a distributed executor):
//! each task's data file and the delete files that apply, with their sequence numbers, first
//! row ids, partition values and metrics. The encoding is explicit (every field written by
//! name, nothing derived) and versioned ([`TASK_ENCODING_VERSION`]): a decoder refuses a
//! version it does not know instead of guessing. Floats are written as their bits (JSON has
//! no NaN), bytes as hex, 128-bit decimals as decimal text.
//!
//! A task carries file paths as the manifests record them, never a credential: the reader
//! resolves them through its own table's storage.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::task::{DeleteFileRef, FileScanTask};
use crate::spec::{DataContent, DataFile, FileFormat, Literal};

/// The version of the encoding [`encode_tasks`] writes and [`decode_tasks`] reads.
pub const TASK_ENCODING_VERSION: u64 = 1;

/// `groups` of tasks as one JSON value: `{"version": 1, "groups": [[task, …], …]}`.
pub fn encode_tasks(groups: &[Vec<FileScanTask>]) -> Value {
    let groups: Vec<Value> = groups
        .iter()
        .map(|g| Value::Array(g.iter().map(encode_task).collect()))
        .collect();
    json!({ "version": TASK_ENCODING_VERSION, "groups": groups })
}

/// The groups of tasks [`encode_tasks`] wrote. Errors: another version, a missing or
/// mistyped field ([`crate::Error::Decode`]).
pub fn decode_tasks(v: &Value) -> crate::Result<Vec<Vec<FileScanTask>>> {
    let version = v.get("version").and_then(Value::as_u64);
    if version != Some(TASK_ENCODING_VERSION) {
        return Err(bad(format!(
            "encoding version {version:?}, this reader knows {TASK_ENCODING_VERSION}"
        )));
    }
    array(v, "groups")?
        .iter()
        .map(|g| {
            g.as_array()
                .ok_or_else(|| bad("a group is not an array"))?
                .iter()
                .map(decode_task)
                .collect()
        })
        .collect()
}

/// [`encode_tasks`] as JSON text.
pub fn tasks_to_text(groups: &[Vec<FileScanTask>]) -> String {
    encode_tasks(groups).to_string()
}

/// [`decode_tasks`] of JSON text. Errors: text that is not JSON, and as [`decode_tasks`].
pub fn tasks_from_text(text: &str) -> crate::Result<Vec<Vec<FileScanTask>>> {
    let v: Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    decode_tasks(&v)
}

fn bad(reason: impl Into<String>) -> crate::Error {
    crate::Error::Decode {
        what: "file scan tasks",
        reason: reason.into(),
    }
}

fn encode_task(t: &FileScanTask) -> Value {
    json!({
        "data_file": encode_file(&t.data_file),
        "sequence_number": t.sequence_number,
        "first_row_id": t.first_row_id,
        "deletion_vector": t.deletion_vector.as_ref().map(encode_delete),
        "position_deletes": t.position_deletes.iter().map(encode_delete).collect::<Vec<_>>(),
        "equality_deletes": t.equality_deletes.iter().map(encode_delete).collect::<Vec<_>>(),
    })
}

fn decode_task(v: &Value) -> crate::Result<FileScanTask> {
    let deletes = |key: &str| -> crate::Result<Vec<DeleteFileRef>> {
        array(v, key)?.iter().map(decode_delete).collect()
    };
    Ok(FileScanTask {
        data_file: Arc::new(decode_file(field(v, "data_file")?)?),
        sequence_number: int(v, "sequence_number")?,
        first_row_id: opt_int(v, "first_row_id")?,
        deletion_vector: match v.get("deletion_vector") {
            None | Some(Value::Null) => None,
            Some(d) => Some(decode_delete(d)?),
        },
        position_deletes: deletes("position_deletes")?,
        equality_deletes: deletes("equality_deletes")?,
    })
}

fn encode_delete(d: &DeleteFileRef) -> Value {
    json!({ "file": encode_file(&d.file), "sequence_number": d.sequence_number })
}

fn decode_delete(v: &Value) -> crate::Result<DeleteFileRef> {
    Ok(DeleteFileRef {
        file: Arc::new(decode_file(field(v, "file")?)?),
        sequence_number: int(v, "sequence_number")?,
    })
}

fn encode_file(f: &DataFile) -> Value {
    let counts = |m: &HashMap<i32, i64>| {
        let mut kv: Vec<_> = m.iter().map(|(k, v)| json!([k, v])).collect();
        kv.sort_by_key(|p| p[0].as_i64());
        Value::Array(kv)
    };
    let bounds = |m: &HashMap<i32, Vec<u8>>| {
        let mut kv: Vec<_> = m.iter().map(|(k, v)| json!([k, hex::encode(v)])).collect();
        kv.sort_by_key(|p| p[0].as_i64());
        Value::Array(kv)
    };
    json!({
        "content": match f.content {
            DataContent::Data => "data",
            DataContent::PositionDeletes => "position_deletes",
            DataContent::EqualityDeletes => "equality_deletes",
        },
        "file_path": f.file_path,
        "file_format": match f.file_format {
            FileFormat::Parquet => "parquet",
            FileFormat::Avro => "avro",
            FileFormat::Orc => "orc",
            FileFormat::Puffin => "puffin",
        },
        "spec_id": f.spec_id,
        "partition": f.partition.iter().map(encode_opt_literal).collect::<Vec<_>>(),
        "record_count": f.record_count,
        "file_size_in_bytes": f.file_size_in_bytes,
        "value_counts": counts(&f.value_counts),
        "null_value_counts": counts(&f.null_value_counts),
        "nan_value_counts": counts(&f.nan_value_counts),
        "lower_bounds": bounds(&f.lower_bounds),
        "upper_bounds": bounds(&f.upper_bounds),
        "equality_ids": f.equality_ids,
        "first_row_id": f.first_row_id,
        "referenced_data_file": f.referenced_data_file,
        "content_offset": f.content_offset,
        "content_size_in_bytes": f.content_size_in_bytes,
    })
}

fn decode_file(v: &Value) -> crate::Result<DataFile> {
    let counts = |key: &str| -> crate::Result<HashMap<i32, i64>> {
        array(v, key)?
            .iter()
            .map(|p| Ok((pair_key(p)?, p[1].as_i64().ok_or_else(|| bad(key))?)))
            .collect()
    };
    let bounds = |key: &str| -> crate::Result<HashMap<i32, Vec<u8>>> {
        array(v, key)?
            .iter()
            .map(|p| {
                let h = p[1].as_str().ok_or_else(|| bad(key))?;
                Ok((
                    pair_key(p)?,
                    hex::decode(h).map_err(|e| bad(format!("{key}: {e}")))?,
                ))
            })
            .collect()
    };
    Ok(DataFile {
        content: match text(v, "content")? {
            "data" => DataContent::Data,
            "position_deletes" => DataContent::PositionDeletes,
            "equality_deletes" => DataContent::EqualityDeletes,
            other => return Err(bad(format!("content {other:?}"))),
        },
        file_path: text(v, "file_path")?.to_string(),
        file_format: match text(v, "file_format")? {
            "parquet" => FileFormat::Parquet,
            "avro" => FileFormat::Avro,
            "orc" => FileFormat::Orc,
            "puffin" => FileFormat::Puffin,
            other => return Err(bad(format!("file format {other:?}"))),
        },
        spec_id: i32_of(int(v, "spec_id")?)?,
        partition: array(v, "partition")?
            .iter()
            .map(decode_opt_literal)
            .collect::<crate::Result<_>>()?,
        record_count: int(v, "record_count")?,
        file_size_in_bytes: int(v, "file_size_in_bytes")?,
        value_counts: counts("value_counts")?,
        null_value_counts: counts("null_value_counts")?,
        nan_value_counts: counts("nan_value_counts")?,
        lower_bounds: bounds("lower_bounds")?,
        upper_bounds: bounds("upper_bounds")?,
        equality_ids: array(v, "equality_ids")?
            .iter()
            .map(|i| {
                i.as_i64()
                    .ok_or_else(|| bad("equality_ids"))
                    .and_then(i32_of)
            })
            .collect::<crate::Result<_>>()?,
        first_row_id: opt_int(v, "first_row_id")?,
        referenced_data_file: match v.get("referenced_data_file") {
            None | Some(Value::Null) => None,
            Some(s) => Some(
                s.as_str()
                    .ok_or_else(|| bad("referenced_data_file"))?
                    .to_string(),
            ),
        },
        content_offset: opt_int(v, "content_offset")?,
        content_size_in_bytes: opt_int(v, "content_size_in_bytes")?,
    })
}

/// A literal as `{"type": …, "value": …}`; `null` for none.
fn encode_opt_literal(l: &Option<Literal>) -> Value {
    l.as_ref().map_or(Value::Null, encode_literal)
}

fn encode_literal(l: &Literal) -> Value {
    let (t, v) = match l {
        Literal::Boolean(b) => ("boolean", json!(b)),
        Literal::Int(i) => ("int", json!(i)),
        Literal::Long(i) => ("long", json!(i)),
        Literal::Float(f) => ("float_bits", json!(f.to_bits())),
        Literal::Double(f) => ("double_bits", json!(f.to_bits())),
        Literal::Decimal(d) => ("decimal", json!(d.to_string())),
        Literal::Date(d) => ("date", json!(d)),
        Literal::Time(t) => ("time", json!(t)),
        Literal::Timestamp(t) => ("timestamp", json!(t)),
        Literal::String(s) => ("string", json!(s)),
        Literal::Uuid(u) => ("uuid", json!(hex::encode(u))),
        Literal::Binary(b) => ("binary", json!(hex::encode(b))),
        Literal::Struct(fields) => (
            "struct",
            Value::Array(
                fields
                    .iter()
                    .map(|(id, v)| json!([id, encode_opt_literal(v)]))
                    .collect(),
            ),
        ),
        Literal::List(items) => (
            "list",
            Value::Array(items.iter().map(encode_opt_literal).collect()),
        ),
        Literal::Map(entries) => (
            "map",
            Value::Array(
                entries
                    .iter()
                    .map(|(k, v)| json!([encode_literal(k), encode_opt_literal(v)]))
                    .collect(),
            ),
        ),
    };
    let mut m = Map::new();
    m.insert("type".into(), json!(t));
    m.insert("value".into(), v);
    Value::Object(m)
}

fn decode_opt_literal(v: &Value) -> crate::Result<Option<Literal>> {
    match v {
        Value::Null => Ok(None),
        v => decode_literal(v).map(Some),
    }
}

fn decode_literal(v: &Value) -> crate::Result<Literal> {
    let t = text(v, "type")?;
    let x = field(v, "value")?;
    let wrong = || bad(format!("a {t} literal"));
    let i64_ = || x.as_i64().ok_or_else(wrong);
    let i32_ = || i64_().and_then(i32_of);
    let hex_ = || {
        x.as_str()
            .and_then(|s| hex::decode(s).ok())
            .ok_or_else(wrong)
    };
    let items = || x.as_array().ok_or_else(wrong);
    Ok(match t {
        "boolean" => Literal::Boolean(x.as_bool().ok_or_else(wrong)?),
        "int" => Literal::Int(i32_()?),
        "long" => Literal::Long(i64_()?),
        "float_bits" => Literal::Float(f32::from_bits(
            x.as_u64()
                .and_then(|b| u32::try_from(b).ok())
                .ok_or_else(wrong)?,
        )),
        "double_bits" => Literal::Double(f64::from_bits(x.as_u64().ok_or_else(wrong)?)),
        "decimal" => Literal::Decimal(x.as_str().and_then(|s| s.parse().ok()).ok_or_else(wrong)?),
        "date" => Literal::Date(i32_()?),
        "time" => Literal::Time(i64_()?),
        "timestamp" => Literal::Timestamp(i64_()?),
        "string" => Literal::String(x.as_str().ok_or_else(wrong)?.to_string()),
        "uuid" => Literal::Uuid(hex_()?.try_into().map_err(|_| wrong())?),
        "binary" => Literal::Binary(hex_()?),
        "struct" => Literal::Struct(
            items()?
                .iter()
                .map(|p| Ok((pair_key(p)?, decode_opt_literal(&p[1])?)))
                .collect::<crate::Result<_>>()?,
        ),
        "list" => Literal::List(
            items()?
                .iter()
                .map(decode_opt_literal)
                .collect::<crate::Result<_>>()?,
        ),
        "map" => Literal::Map(
            items()?
                .iter()
                .map(|p| Ok((decode_literal(&p[0])?, decode_opt_literal(&p[1])?)))
                .collect::<crate::Result<_>>()?,
        ),
        other => return Err(bad(format!("literal type {other:?}"))),
    })
}

fn field<'a>(v: &'a Value, key: &str) -> crate::Result<&'a Value> {
    v.get(key).ok_or_else(|| bad(format!("no {key}")))
}

fn array<'a>(v: &'a Value, key: &str) -> crate::Result<&'a Vec<Value>> {
    field(v, key)?
        .as_array()
        .ok_or_else(|| bad(format!("{key} is not an array")))
}

fn text<'a>(v: &'a Value, key: &str) -> crate::Result<&'a str> {
    field(v, key)?
        .as_str()
        .ok_or_else(|| bad(format!("{key} is not text")))
}

fn int(v: &Value, key: &str) -> crate::Result<i64> {
    field(v, key)?
        .as_i64()
        .ok_or_else(|| bad(format!("{key} is not an integer")))
}

fn opt_int(v: &Value, key: &str) -> crate::Result<Option<i64>> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => int(v, key).map(Some),
    }
}

fn i32_of(i: i64) -> crate::Result<i32> {
    i32::try_from(i).map_err(|_| bad(format!("{i} is not a 32-bit integer")))
}

/// The key of a `[id, value]` pair.
fn pair_key(p: &Value) -> crate::Result<i32> {
    p.get(0)
        .and_then(Value::as_i64)
        .ok_or_else(|| bad("a [field id, value] pair"))
        .and_then(i32_of)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(content: DataContent, path: &str) -> DataFile {
        DataFile {
            content,
            file_path: path.to_string(),
            file_format: FileFormat::Parquet,
            spec_id: 1,
            partition: vec![
                Some(Literal::Double(f64::NAN)),
                None,
                Some(Literal::Decimal(i128::MIN)),
                Some(Literal::Struct(vec![
                    (3, Some(Literal::Float(-0.0))),
                    (4, None),
                ])),
                Some(Literal::Map(vec![(
                    Literal::Uuid([7; 16]),
                    Some(Literal::List(vec![
                        Some(Literal::Binary(vec![0, 255])),
                        None,
                    ])),
                )])),
            ],
            record_count: 10,
            file_size_in_bytes: 1234,
            value_counts: HashMap::from([(1, 10), (2, 3)]),
            null_value_counts: HashMap::from([(1, 0)]),
            nan_value_counts: HashMap::new(),
            lower_bounds: HashMap::from([(1, vec![1, 2, 3])]),
            upper_bounds: HashMap::from([(1, vec![9])]),
            equality_ids: vec![1, 2],
            first_row_id: Some(100),
            referenced_data_file: Some("s3://b/d.parquet".into()),
            content_offset: Some(4),
            content_size_in_bytes: Some(40),
        }
    }

    #[test]
    fn tasks_come_back_as_they_went() {
        let task = FileScanTask {
            data_file: Arc::new(file(DataContent::Data, "s3://b/d.parquet")),
            sequence_number: 7,
            first_row_id: Some(100),
            deletion_vector: Some(DeleteFileRef {
                file: Arc::new(file(DataContent::PositionDeletes, "s3://b/dv.puffin")),
                sequence_number: 8,
            }),
            position_deletes: vec![],
            equality_deletes: vec![DeleteFileRef {
                file: Arc::new(file(DataContent::EqualityDeletes, "s3://b/eq.parquet")),
                sequence_number: 9,
            }],
        };
        let groups = vec![vec![task.clone(), task], vec![]];
        let text = encode_tasks(&groups).to_string();
        let back = decode_tasks(&serde_json::from_str(&text).unwrap()).unwrap();
        // NaN != NaN: compare the encodings.
        assert_eq!(encode_tasks(&back), encode_tasks(&groups));
        assert_eq!(back[0].len(), 2);
        assert!(matches!(
            back[0][0].data_file.partition[0],
            Some(Literal::Double(d)) if d.is_nan()
        ));
    }

    #[test]
    fn another_version_is_refused() {
        let v = json!({"version": 2, "groups": []});
        let e = decode_tasks(&v).unwrap_err().to_string();
        assert!(e.contains("version"), "{e}");
    }
}
