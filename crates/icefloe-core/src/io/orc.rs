//! ORC data and delete files (spec: "ORC" in "Appendix A: Format-specific Requirements"),
//! decoded by `orc-rust`. Field ids are the `iceberg.id` attributes of the footer's types,
//! which orc-rust's schema leaves out, so the footer is decoded once more here. orc-rust builds
//! on the workspace's arrow, so its batches are used as they are.

use std::io::Read;

use arrow::datatypes::SchemaRef;
use bytes::Bytes;
use orc_rust::proto;
use orc_rust::schema::DataType as OrcType;
use orc_rust::{ArrowReaderBuilder, TimestampPrecision};
use prost::Message;

use super::field_ids::{schema_with_ids, with_field_ids, IdNode};
use super::row_batches::RowBatches;

/// The ORC type attribute that holds an Iceberg field id.
const ICEBERG_ID: &str = "iceberg.id";

/// An opened ORC file.
pub struct OrcFile {
    pub schema: SchemaRef,
    pub num_rows: u64,
    pub batches: RowBatches,
}

/// Decodes the ORC file `bytes` (named `shown` in errors) lazily, `batch_size` rows at a time.
pub fn open_orc(bytes: Bytes, shown: &str, batch_size: usize) -> crate::Result<OrcFile> {
    let err = |r: String| crate::Error::data_file(shown, format!("not a readable ORC file: {r}"));
    let builder = ArrowReaderBuilder::try_new(bytes.clone()).map_err(|e| err(e.to_string()))?;
    let meta = builder.file_metadata();
    let num_rows = meta.number_of_rows();
    let attrs = type_ids(&bytes, meta.compression()).map_err(err)?;
    let ids: Vec<IdNode> = meta
        .root_data_type()
        .children()
        .iter()
        .map(|c| node(c.data_type(), &attrs))
        .collect();
    let builder = builder
        .with_batch_size(batch_size)
        .with_timestamp_precision(TimestampPrecision::Microsecond);
    let schema = builder.schema();
    let schema = schema_with_ids(&schema, &ids).map_err(err)?;
    let reader = builder.build();
    let out_schema = schema.clone();
    let shown = shown.to_string();
    let batches = reader.map(move |b| {
        let e = |r: String| crate::Error::data_file(&shown, r);
        let b = b.map_err(|x| e(x.to_string()))?;
        with_field_ids(&b, &ids, &out_schema).map_err(e)
    });
    Ok(OrcFile {
        schema,
        num_rows,
        batches: Box::new(batches),
    })
}

fn node(t: &OrcType, attrs: &[Option<i32>]) -> IdNode {
    let children = match t {
        OrcType::Struct { children, .. } => children
            .iter()
            .map(|c| node(c.data_type(), attrs))
            .collect(),
        OrcType::List { child, .. } => vec![node(child, attrs)],
        OrcType::Map { key, value, .. } => vec![node(key, attrs), node(value, attrs)],
        _ => Vec::new(),
    };
    IdNode {
        id: attrs.get(t.column_index()).copied().flatten(),
        children,
        list_is_map: false,
    }
}

/// The `iceberg.id` of every type of the footer, by column index.
fn type_ids(
    bytes: &Bytes,
    compression: Option<orc_rust::compression::Compression>,
) -> Result<Vec<Option<i32>>, String> {
    let len = bytes.len();
    let ps_len = *bytes.last().ok_or("empty file")? as usize;
    let ps_start = len
        .checked_sub(1 + ps_len)
        .ok_or("postscript past the start")?;
    let ps = proto::PostScript::decode(&bytes[ps_start..len - 1]).map_err(|e| e.to_string())?;
    let footer_len = ps.footer_length.ok_or("no footer length")? as usize;
    let footer_start = ps_start
        .checked_sub(footer_len)
        .ok_or("footer past the start")?;
    let mut raw = Vec::new();
    orc_rust::compression::Decompressor::new(
        bytes.slice(footer_start..ps_start),
        compression,
        Vec::new(),
    )
    .read_to_end(&mut raw)
    .map_err(|e| format!("footer: {e}"))?;
    let footer = proto::Footer::decode(raw.as_slice()).map_err(|e| e.to_string())?;
    footer
        .types
        .iter()
        .map(|t| {
            match t
                .attributes
                .iter()
                .find(|a| a.key.as_deref() == Some(ICEBERG_ID))
            {
                Some(a) => a
                    .value
                    .as_deref()
                    .unwrap_or_default()
                    .parse()
                    .map(Some)
                    .map_err(|_| format!("{ICEBERG_ID} {:?} is not a field id", a.value)),
                None => Ok(None),
            }
        })
        .collect()
}
