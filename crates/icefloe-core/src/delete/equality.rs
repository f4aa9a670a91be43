//! Equality delete files (spec: "Equality Delete Files"): a row is deleted when its values
//! equal all delete columns of some delete row. NULL equals NULL here, as the spec requires.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::DataType;
use arrow::row::{RowConverter, SortField};
use futures::TryStreamExt;
use parquet::arrow::ProjectionMask;

use crate::io::parquet::open_parquet;
use crate::io::TableIo;
use crate::scan::adapt::cast_exact;
use crate::scan::arrow_schema::{field_id, type_to_arrow};
use crate::spec::{DataFile, Type};

/// The delete keys of one equality delete file, in Arrow's row format.
pub struct EqualityDeleteSet {
    /// Field ids of the delete columns, in key order.
    pub equality_ids: Vec<i32>,
    /// Arrow type of each key column (the table's type for that field id).
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

/// Reads an equality delete file. `types_by_id` gives the table type of each field id (so the
/// delete keys compare with data values after type promotion). Errors: unreadable file, a
/// delete column missing from the file, a nested delete column.
pub async fn read_equality_deletes(
    io: &TableIo,
    delete_file: &DataFile,
    types_by_id: &HashMap<i32, Type>,
) -> crate::Result<EqualityDeleteSet> {
    let shown = io.display(&io.resolve(&delete_file.file_path));
    let err = |r: String| crate::Error::delete_file(&shown, r);
    if delete_file.equality_ids.is_empty() {
        return Err(err("equality delete file without equality_ids".into()));
    }
    let builder = open_parquet(io, &delete_file.file_path, delete_file.file_size_in_bytes).await?;
    let schema = builder.schema().clone();
    let mut roots = Vec::new();
    let mut types = Vec::new();
    for id in &delete_file.equality_ids {
        let idx = schema
            .fields()
            .iter()
            .position(|f| field_id(f) == Some(*id))
            .ok_or_else(|| {
                err(format!(
                    "delete column with field id {id} is not in the file"
                ))
            })?;
        let ty = types_by_id
            .get(id)
            .ok_or_else(|| err(format!("field id {id} is in no schema of the table")))?;
        crate::validate::column_type::check_column(
            &schema.fields()[idx],
            *id,
            ty,
            None,
            crate::validate::column_type::Rules {
                format_version: 3,
                has_int96: false,
            },
        )
        .map_err(&err)?;
        if ty.is_nested() {
            return Err(crate::Error::Unsupported(format!(
                "{shown}: equality delete on nested field {id}"
            )));
        }
        roots.push(idx);
        types.push(type_to_arrow(ty));
    }
    let mut sorted = roots.clone();
    sorted.sort_unstable();
    let mask = ProjectionMask::roots(builder.parquet_schema(), sorted.iter().copied());
    let converter = RowConverter::new(types.iter().map(|t| SortField::new(t.clone())).collect())
        .map_err(|e| err(e.to_string()))?;
    let mut stream = builder
        .with_projection(mask)
        .build()
        .map_err(|e| err(e.to_string()))?;
    let mut keys = HashSet::new();
    let mut bytes = 0;
    while let Some(batch) = stream.try_next().await.map_err(|e| err(e.to_string()))? {
        let cols = roots
            .iter()
            .zip(&types)
            .map(|(root, t)| {
                let at = sorted
                    .iter()
                    .position(|r| r == root)
                    .expect("root is projected");
                cast_exact(batch.column(at), t).map_err(|e| err(e.to_string()))
            })
            .collect::<crate::Result<Vec<_>>>()?;
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

/// The equality delete set of `delete_file`, from the table's cache or read (and cached).
pub async fn load_equality_set(
    table: &crate::table::Table,
    delete_file: &DataFile,
    types_by_id: &HashMap<i32, Type>,
) -> crate::Result<Arc<EqualityDeleteSet>> {
    let io = table.io();
    // The keys are decoded to the table's current types of the delete columns.
    let types: Vec<Option<&Type>> = delete_file
        .equality_ids
        .iter()
        .map(|id| types_by_id.get(id))
        .collect();
    let key = format!(
        "{}#{types:?}",
        io.display(&io.resolve(&delete_file.file_path))
    );
    crate::cache::get_or_load(&table.caches().equality_deletes, key, async {
        read_equality_deletes(io, delete_file, types_by_id).await
    })
    .await
}

/// Shared handle to a loaded set.
pub type SharedEqualityDeletes = Arc<EqualityDeleteSet>;
