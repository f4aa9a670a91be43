//! Avro data and delete files (spec: "Avro" in "Appendix A: Format-specific Requirements"),
//! decoded by arrow-rs's `arrow-avro`. Field ids come from the writer schema's attributes.

use std::io::Cursor;

use arrow::datatypes::SchemaRef;
use arrow_avro::reader::{read_header_info, ReaderBuilder};
use bytes::Bytes;
use serde_json::Value as Json;

use super::field_ids::{schema_with_ids, with_field_ids, IdNode};
use super::row_batches::RowBatches;

/// An opened Avro object container file.
pub struct AvroFile {
    pub schema: SchemaRef,
    pub num_rows: u64,
    pub batches: RowBatches,
}

/// Decodes the Avro file `bytes` (named `shown` in errors) lazily, `batch_size` rows at a time.
pub fn open_avro(bytes: Bytes, shown: &str, batch_size: usize) -> crate::Result<AvroFile> {
    let err = |r: String| crate::Error::data_file(shown, format!("not a readable Avro file: {r}"));
    let info = read_header_info(Cursor::new(bytes.clone())).map_err(|e| err(e.to_string()))?;
    let num_rows = count_rows(&bytes, info.header_len(), info.sync()).map_err(err)?;
    let reader = ReaderBuilder::new()
        .with_batch_size(batch_size)
        .build(Cursor::new(bytes))
        .map_err(|e| err(e.to_string()))?;
    let writer_schema: Json = reader
        .avro_header()
        .get("avro.schema")
        .and_then(|s| serde_json::from_slice(s).ok())
        .ok_or_else(|| err("no readable avro.schema in the header".into()))?;
    let ids = type_ids(&writer_schema).children;
    let schema = schema_with_ids(&reader.schema(), &ids).map_err(err)?;
    let out_schema = schema.clone();
    let shown = shown.to_string();
    let batches = reader.map(move |b| {
        let b = b.map_err(|e| crate::Error::data_file(&shown, e.to_string()))?;
        with_field_ids(&b, &ids, &out_schema).map_err(|e| crate::Error::data_file(&shown, e))
    });
    Ok(AvroFile {
        schema,
        num_rows,
        batches: Box::new(batches),
    })
}

/// The ids of an Avro type: `field-id` of record fields, `element-id` of arrays, `key-id` and
/// `value-id` of maps (Iceberg's Avro schema attributes). A union with null is its other branch.
fn type_ids(t: &Json) -> IdNode {
    let id = |v: &Json| v.as_i64().map(|i| i as i32);
    match t {
        Json::Array(branches) => branches
            .iter()
            .find(|b| b.as_str() != Some("null"))
            .map(type_ids)
            .unwrap_or_default(),
        Json::Object(o) => match o.get("type").and_then(Json::as_str) {
            Some("record") => IdNode {
                id: None,
                children: record_field_ids(t),
                list_is_map: false,
            },
            Some("array") if o.get("logicalType").and_then(Json::as_str) == Some("map") => {
                let items = o.get("items").map(unwrap_union).unwrap_or(&Json::Null);
                IdNode {
                    id: None,
                    children: record_field_ids(items),
                    list_is_map: true,
                }
            }
            Some("array") => {
                let mut e = o.get("items").map(type_ids).unwrap_or_default();
                e.id = o.get("element-id").and_then(id);
                IdNode {
                    id: None,
                    children: vec![e],
                    list_is_map: false,
                }
            }
            Some("map") => {
                let mut v = o.get("values").map(type_ids).unwrap_or_default();
                v.id = o.get("value-id").and_then(id);
                let k = IdNode {
                    id: o.get("key-id").and_then(id),
                    ..Default::default()
                };
                IdNode {
                    id: None,
                    children: vec![k, v],
                    list_is_map: false,
                }
            }
            _ => IdNode::default(),
        },
        _ => IdNode::default(),
    }
}

fn unwrap_union(t: &Json) -> &Json {
    match t {
        Json::Array(b) => b.iter().find(|x| x.as_str() != Some("null")).unwrap_or(t),
        _ => t,
    }
}

fn record_field_ids(record: &Json) -> Vec<IdNode> {
    record
        .get("fields")
        .and_then(Json::as_array)
        .map(|fields| {
            fields
                .iter()
                .map(|f| {
                    let mut n = f.get("type").map(type_ids).unwrap_or_default();
                    n.id = f.get("field-id").and_then(Json::as_i64).map(|i| i as i32);
                    n
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Rows in the file: the sum of its blocks' object counts (each block: count, byte size, data,
/// sync marker), read without decoding.
fn count_rows(bytes: &[u8], header_len: u64, sync: [u8; 16]) -> Result<u64, String> {
    let mut at = header_len as usize;
    let mut rows = 0u64;
    while at < bytes.len() {
        let (count, n) = zigzag(&bytes[at..]).ok_or("truncated block header")?;
        at += n;
        let (size, n) = zigzag(&bytes[at..]).ok_or("truncated block header")?;
        at += n;
        if count < 0 || size < 0 {
            return Err(format!("block with {count} objects of {size} bytes"));
        }
        at = at
            .checked_add(size as usize)
            .filter(|e| e + 16 <= bytes.len())
            .ok_or("truncated block")?;
        if bytes[at..at + 16] != sync {
            return Err("block does not end with the file's sync marker".into());
        }
        at += 16;
        rows += count as u64;
    }
    Ok(rows)
}

/// An Avro `long`: zig-zag varint. Returns the value and the bytes it took.
fn zigzag(b: &[u8]) -> Option<(i64, usize)> {
    let mut v = 0u64;
    for (i, byte) in b.iter().enumerate().take(10) {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((((v >> 1) as i64) ^ -((v & 1) as i64), i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_of_iceberg_avro_schema() {
        let s: Json = serde_json::from_str(
            r#"{"type":"record","name":"r","fields":[
                {"name":"id","type":"long","field-id":1},
                {"name":"tags","type":["null",{"type":"array","items":"string","element-id":5}],"field-id":2},
                {"name":"m","type":{"type":"map","values":["null","int"],"key-id":6,"value-id":7},"field-id":3},
                {"name":"lm","type":{"type":"array","logicalType":"map","items":{"type":"record","name":"k8_v9",
                  "fields":[{"name":"key","type":"int","field-id":8},{"name":"value","type":"long","field-id":9}]}},"field-id":4}
            ]}"#,
        )
        .unwrap();
        let n = type_ids(&s);
        let ids: Vec<_> = n.children.iter().map(|c| c.id).collect();
        assert_eq!(ids, vec![Some(1), Some(2), Some(3), Some(4)]);
        assert_eq!(n.children[1].children[0].id, Some(5));
        assert_eq!(n.children[2].children[1].id, Some(7));
        assert!(n.children[3].list_is_map);
        assert_eq!(n.children[3].children[1].id, Some(9));
        assert_eq!(zigzag(&[0x03]), Some((-2, 1)));
        assert_eq!(zigzag(&[0x80, 0x01]), Some((64, 2)));
    }
}
