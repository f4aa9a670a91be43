//! Equality delete files (spec: "Equality Delete Files"): a row is deleted when its values
//! equal all delete columns of some delete row. NULL equals NULL here, as the spec requires.
//! A delete column may be a field nested in structs (`s.k`). As in Iceberg Java (whose struct
//! projection keeps a NULL struct NULL), a NULL struct above the field differs from a present
//! struct whose field is NULL: the key holds each struct's presence, then the field.

use std::collections::{HashMap, HashSet};

use arrow::array::{Array, ArrayRef, BooleanArray, StructArray};
use arrow::compute::{is_null, nullif};
use arrow::datatypes::DataType;
use arrow::row::{RowConverter, SortField};
use futures::TryStreamExt;

use crate::io::file::FileReader;
use crate::io::TableIo;
use crate::spec::arrow_schema::cast_exact;
use crate::spec::arrow_schema::{field_id, type_to_arrow};
use crate::spec::{DataFile, Type};

/// The delete keys of one equality delete file, in Arrow's row format.
pub struct EqualityDeleteSet {
    /// Field ids of the delete columns, in key order.
    pub equality_ids: Vec<i32>,
    /// Arrow type of each key column: for each delete column, a presence flag per struct above
    /// it (see [`key_columns`]), then the table's type for that field id.
    pub types: Vec<DataType>,
    keys: HashSet<Box<[u8]>>,
    bytes: usize,
}

impl EqualityDeleteSet {
    /// Approximate memory held, in bytes.
    pub fn size_bytes(&self) -> usize {
        self.bytes + self.keys.len() * 24
    }

    /// Number of distinct delete keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the set has no keys.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// A converter for key columns of this set.
    pub fn converter(&self) -> crate::Result<RowConverter> {
        RowConverter::new(
            self.types
                .iter()
                .map(|t| SortField::new(t.clone()))
                .collect(),
        )
        .map_err(|e| crate::Error::Unsupported(format!("equality delete key types: {e}")))
    }

    /// For each row of `columns` (key columns already cast to `types`), whether it is deleted.
    pub fn matches(
        &self,
        converter: &RowConverter,
        columns: &[ArrayRef],
    ) -> crate::Result<Vec<bool>> {
        let rows = converter
            .convert_columns(columns)
            .map_err(|e| crate::Error::Unsupported(format!("equality delete keys: {e}")))?;
        Ok(rows
            .iter()
            .map(|r| self.keys.contains(r.as_ref()))
            .collect())
    }
}

/// Rows decoded per batch of an equality delete file.
const BATCH_ROWS: usize = 8192;

/// The key columns of the field at `path` (field ids below the struct column `arr`): whether
/// each struct on the way is present (`arr` first), then the field, NULL below a NULL struct.
/// `arr` itself when `path` is empty. `None` when a field on the path is absent.
pub fn key_columns(arr: &ArrayRef, path: &[i32]) -> Result<Option<Vec<ArrayRef>>, String> {
    let mut out = Vec::new();
    let mut cur = arr.clone();
    for id in path {
        let s = cur.as_any().downcast_ref::<StructArray>().ok_or_else(|| {
            format!(
                "expected a struct above field {id}, found {}",
                cur.data_type()
            )
        })?;
        let Some(i) = s.fields().iter().position(|f| field_id(f) == Some(*id)) else {
            return Ok(None);
        };
        let present: BooleanArray = (0..s.len()).map(|r| Some(s.is_valid(r))).collect();
        out.push(std::sync::Arc::new(present) as ArrayRef);
        let mut child = s.column(i).clone();
        if s.null_count() > 0 {
            let nulls = is_null(s).map_err(|e| e.to_string())?;
            child = nullif(&child, &nulls).map_err(|e| e.to_string())?;
        }
        cur = child;
    }
    out.push(cur);
    Ok(Some(out))
}

/// The file field at `path` (field ids) below struct field `top`, if the file has it.
fn field_at<'a>(
    top: &'a arrow::datatypes::Field,
    path: &[i32],
) -> Option<&'a arrow::datatypes::Field> {
    let mut cur = top;
    for id in path {
        let DataType::Struct(children) = cur.data_type() else {
            return None;
        };
        cur = children.iter().find(|f| field_id(f) == Some(*id))?;
    }
    Some(cur)
}

/// The key types of a delete column `depth` structs deep: a presence flag per struct, then the
/// field's type.
pub fn key_types(depth: usize, leaf: DataType) -> Vec<DataType> {
    let mut t = vec![DataType::Boolean; depth];
    t.push(leaf);
    t
}

/// Reads an equality delete file. `types_by_id` gives the table type of each field id (so the
/// delete keys compare with data values after type promotion), `paths_by_id` the struct path
/// to each field. Errors: unreadable file, a delete column missing from the file, a delete
/// column that is not a primitive reachable through structs.
pub async fn read_equality_deletes(
    io: &TableIo,
    delete_file: &DataFile,
    types_by_id: &HashMap<i32, Type>,
    paths_by_id: &HashMap<i32, Vec<i32>>,
) -> crate::Result<EqualityDeleteSet> {
    let file = FileReader::open(io, delete_file, BATCH_ROWS).await?;
    let shown = file.shown().to_string();
    let err = |r: String| crate::Error::delete_file(&shown, r);
    if delete_file.equality_ids.is_empty() {
        return Err(err("equality delete file without equality_ids".into()));
    }
    let schema = file.schema().clone();
    // (index of the top-level column in the file, path below it, key type) per delete column.
    let mut keys_at = Vec::new();
    let mut types = Vec::new();
    for id in &delete_file.equality_ids {
        let ty = types_by_id
            .get(id)
            .ok_or_else(|| err(format!("field id {id} is in no schema of the table")))?;
        let path = paths_by_id.get(id).ok_or_else(|| {
            crate::Error::Unsupported(format!(
                "{shown}: equality delete on field {id}, which is inside a list or map"
            ))
        })?;
        if ty.is_nested() {
            return Err(crate::Error::Unsupported(format!(
                "{shown}: equality delete on nested field {id}"
            )));
        }
        let idx = schema
            .fields()
            .iter()
            .position(|f| field_id(f) == Some(path[0]))
            .ok_or_else(|| {
                err(format!(
                    "delete column with field id {} is not in the file",
                    path[0]
                ))
            })?;
        if let Some(field) = field_at(&schema.fields()[idx], &path[1..]) {
            crate::validate::column_type::check_column(
                field,
                *id,
                ty,
                None,
                crate::validate::column_type::Rules {
                    format_version: 3,
                    has_int96: false,
                },
            )
            .map_err(&err)?;
        }
        keys_at.push((idx, &path[1..], types.len() + path.len() - 1));
        types.extend(key_types(path.len() - 1, type_to_arrow(ty)));
    }
    let mut roots: Vec<usize> = keys_at.iter().map(|(i, _, _)| *i).collect();
    roots.sort_unstable();
    roots.dedup();
    let converter = RowConverter::new(types.iter().map(|t| SortField::new(t.clone())).collect())
        .map_err(|e| err(e.to_string()))?;
    let mut stream = file.stream(roots.clone(), None)?;
    let mut keys = HashSet::new();
    let mut bytes = 0;
    while let Some(batch) = stream.try_next().await? {
        let mut cols = Vec::with_capacity(types.len());
        for ((root, below, leaf_at), id) in keys_at.iter().zip(&delete_file.equality_ids) {
            let at = roots
                .iter()
                .position(|r| r == root)
                .expect("root is projected");
            let mut key = key_columns(batch.column(at), below)
                .map_err(&err)?
                .ok_or_else(|| {
                    err(format!(
                        "delete column with field id {id} is not in the file"
                    ))
                })?;
            let leaf = key.pop().expect("a leaf");
            cols.extend(key);
            cols.push(cast_exact(&leaf, &types[*leaf_at]).map_err(|e| err(e.to_string()))?);
        }
        let rows = converter
            .convert_columns(&cols)
            .map_err(|e| err(e.to_string()))?;
        for r in rows.iter() {
            let k: Box<[u8]> = r.as_ref().into();
            bytes += k.len();
            keys.insert(k);
        }
    }
    Ok(EqualityDeleteSet {
        equality_ids: delete_file.equality_ids.clone(),
        types,
        keys,
        bytes,
    })
}

