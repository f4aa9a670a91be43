//! Iceberg field ids on Arrow columns decoded from Avro and ORC files. Parquet readers put a
//! column's id in its field metadata (`PARQUET:field_id`); Avro files keep ids as schema
//! attributes (`field-id`, `element-id`, `key-id`, `value-id`) and ORC files as type attributes
//! (`iceberg.id`), which the decoders drop. Each format builds an [`IdNode`] tree from its own
//! schema, and [`with_field_ids`] relabels the decoded batch so that one adaption path (match by
//! id, promote, default) serves every format.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, ListArray, MapArray, StructArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};

use crate::spec::arrow_schema::FIELD_ID_KEY;

/// The field id of a column and of its nested fields, parallel to its Arrow type: a struct's
/// fields, a list's element, or a map's key and value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IdNode {
    pub id: Option<i32>,
    pub children: Vec<IdNode>,
    /// An Avro array of key/value records that Iceberg writes for a map whose keys are not
    /// strings: read back as an Arrow map.
    pub list_is_map: bool,
}

/// The Arrow schema of `schema`'s columns with their ids (for matching before any row is read).
pub fn schema_with_ids(schema: &Schema, ids: &[IdNode]) -> Result<SchemaRef, String> {
    let fields = schema
        .fields()
        .iter()
        .zip(ids)
        .map(|(f, n)| {
            Ok(labelled(
                f.name(),
                relabel_type(f.data_type(), n)?,
                f.is_nullable(),
                n,
            ))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Arc::new(Schema::new(fields)))
}

/// `batch` with the ids of `ids` (one node per column) on its fields, in `schema` (from
/// [`schema_with_ids`]).
pub fn with_field_ids(
    batch: &RecordBatch,
    ids: &[IdNode],
    schema: &SchemaRef,
) -> Result<RecordBatch, String> {
    let columns = batch
        .columns()
        .iter()
        .zip(ids)
        .map(|(c, n)| relabel(c, n))
        .collect::<Result<Vec<_>, String>>()?;
    RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )
    .map_err(|e| e.to_string())
}

fn labelled(name: &str, ty: DataType, nullable: bool, n: &IdNode) -> Field {
    let f = Field::new(name, ty, nullable);
    match n.id {
        Some(id) => f.with_metadata(HashMap::from([(FIELD_ID_KEY.to_string(), id.to_string())])),
        None => f,
    }
}

fn child(n: &IdNode, i: usize) -> &IdNode {
    static NONE: IdNode = IdNode {
        id: None,
        children: Vec::new(),
        list_is_map: false,
    };
    n.children.get(i).unwrap_or(&NONE)
}

/// The Arrow type of a column after relabelling.
fn relabel_type(ty: &DataType, n: &IdNode) -> Result<DataType, String> {
    Ok(match ty {
        DataType::Struct(fields) => DataType::Struct(Fields::from(
            fields
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let c = child(n, i);
                    Ok(labelled(
                        f.name(),
                        relabel_type(f.data_type(), c)?,
                        f.is_nullable(),
                        c,
                    ))
                })
                .collect::<Result<Vec<_>, String>>()?,
        )),
        DataType::List(item) | DataType::LargeList(item) if n.list_is_map => {
            let DataType::Struct(kv) = item.data_type() else {
                return Err(format!("a map written as a list of {}", item.data_type()));
            };
            if kv.len() != 2 {
                return Err("a map written as a list of records without key and value".into());
            }
            map_type(&kv[0], &kv[1], n)?
        }
        DataType::List(item) | DataType::LargeList(item) => {
            let c = child(n, 0);
            DataType::List(Arc::new(labelled(
                item.name(),
                relabel_type(item.data_type(), c)?,
                item.is_nullable(),
                c,
            )))
        }
        DataType::Map(entries, _) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(format!("map entries of type {}", entries.data_type()));
            };
            map_type(&kv[0], &kv[1], n)?
        }
        other => other.clone(),
    })
}

fn map_type(key: &Field, value: &Field, n: &IdNode) -> Result<DataType, String> {
    let (k, v) = (child(n, 0), child(n, 1));
    let entries = Field::new(
        "key_value",
        DataType::Struct(Fields::from(vec![
            labelled("key", relabel_type(key.data_type(), k)?, false, k),
            labelled(
                "value",
                relabel_type(value.data_type(), v)?,
                value.is_nullable(),
                v,
            ),
        ])),
        false,
    );
    Ok(DataType::Map(Arc::new(entries), false))
}

/// `arr` rebuilt with the type [`relabel_type`] gives it (same values).
fn relabel(arr: &ArrayRef, n: &IdNode) -> Result<ArrayRef, String> {
    let target = relabel_type(arr.data_type(), n)?;
    if &target == arr.data_type() {
        return Ok(arr.clone());
    }
    let e = |e: arrow::error::ArrowError| e.to_string();
    Ok(match (arr.data_type(), &target) {
        (DataType::Struct(_), DataType::Struct(fields)) => {
            let s = arr.as_any().downcast_ref::<StructArray>().expect("struct");
            let cols = s
                .columns()
                .iter()
                .enumerate()
                .map(|(i, c)| relabel(c, child(n, i)))
                .collect::<Result<Vec<_>, String>>()?;
            Arc::new(StructArray::try_new(fields.clone(), cols, s.nulls().cloned()).map_err(e)?)
        }
        (DataType::LargeList(f), _) => {
            let small = cast(arr, &DataType::List(f.clone())).map_err(e)?;
            relabel(&small, n)?
        }
        (DataType::List(_), DataType::Map(entries, _)) => {
            let l = arr.as_any().downcast_ref::<ListArray>().expect("list");
            let kv = l
                .values()
                .as_any()
                .downcast_ref::<StructArray>()
                .ok_or("a map written as a list of non-records")?;
            map_array(entries, kv, l.offsets().clone(), l.nulls().cloned(), n)?
        }
        (DataType::List(_), DataType::List(item)) => {
            let l = arr.as_any().downcast_ref::<ListArray>().expect("list");
            let values = relabel(l.values(), child(n, 0))?;
            Arc::new(
                ListArray::try_new(
                    item.clone(),
                    l.offsets().clone(),
                    values,
                    l.nulls().cloned(),
                )
                .map_err(e)?,
            )
        }
        (DataType::Map(..), DataType::Map(entries, _)) => {
            let m = arr.as_any().downcast_ref::<MapArray>().expect("map");
            map_array(
                entries,
                m.entries(),
                m.offsets().clone(),
                m.nulls().cloned(),
                n,
            )?
        }
        (from, to) => return Err(format!("cannot relabel {from} as {to}")),
    })
}

fn map_array(
    entries: &Arc<Field>,
    kv: &StructArray,
    offsets: arrow::buffer::OffsetBuffer<i32>,
    nulls: Option<arrow::buffer::NullBuffer>,
    n: &IdNode,
) -> Result<ArrayRef, String> {
    let DataType::Struct(fields) = entries.data_type() else {
        unreachable!("map entries are a struct")
    };
    let keys = relabel(kv.column(0), child(n, 0))?;
    let values = relabel(kv.column(1), child(n, 1))?;
    let e = |e: arrow::error::ArrowError| e.to_string();
    let kv = StructArray::try_new(fields.clone(), vec![keys, values], None).map_err(e)?;
    Ok(Arc::new(
        MapArray::try_new(entries.clone(), offsets, kv, nulls, false).map_err(e)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::arrow_schema::field_id;
    use arrow::array::{Int32Array, StringArray};

    #[test]
    fn ids_reach_nested_fields_and_lists_become_maps() {
        let kv = Fields::from(vec![
            Field::new("key", DataType::Int32, false),
            Field::new("value", DataType::Utf8, true),
        ]);
        let entries = StructArray::new(
            kv.clone(),
            vec![
                Arc::new(Int32Array::from(vec![1, 2])),
                Arc::new(StringArray::from(vec![Some("a"), None])),
            ],
            None,
        );
        let list = ListArray::new(
            Arc::new(Field::new("item", DataType::Struct(kv), false)),
            arrow::buffer::OffsetBuffer::from_lengths([2]),
            Arc::new(entries),
            None,
        );
        let schema = Schema::new(vec![Field::new("m", list.data_type().clone(), true)]);
        let ids = vec![IdNode {
            id: Some(7),
            children: vec![
                IdNode {
                    id: Some(8),
                    ..Default::default()
                },
                IdNode {
                    id: Some(9),
                    ..Default::default()
                },
            ],
            list_is_map: true,
        }];
        let out_schema = schema_with_ids(&schema, &ids).unwrap();
        let batch = RecordBatch::try_new(Arc::new(schema), vec![Arc::new(list)]).unwrap();
        let out = with_field_ids(&batch, &ids, &out_schema).unwrap();
        assert_eq!(field_id(out.schema().field(0)), Some(7));
        let m = out.column(0).as_any().downcast_ref::<MapArray>().unwrap();
        assert_eq!(m.value_length(0), 2);
        let DataType::Map(e, _) = out.schema().field(0).data_type().clone() else {
            panic!()
        };
        let DataType::Struct(f) = e.data_type() else {
            panic!()
        };
        assert_eq!(field_id(&f[1]), Some(9));
    }
}
