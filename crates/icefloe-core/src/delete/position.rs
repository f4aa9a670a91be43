//! V2 position delete files (spec: "Position Delete Files"): Parquet rows of
//! (`file_path`, `pos`), sorted by path then position.

use arrow::array::{Array, Int64Array, StringArray};
use futures::TryStreamExt;
use parquet::arrow::ProjectionMask;
use roaring::RoaringTreemap;

use crate::io::parquet::open_parquet;
use crate::io::TableIo;
use crate::scan::arrow_schema::{field_id, DELETE_FILE_PATH_FIELD_ID, DELETE_POS_FIELD_ID};
use crate::spec::DataFile;

/// Adds to `out` the positions that `delete_file` deletes in the data file written at
/// `data_path`. Errors: unreadable file, missing or mistyped `file_path`/`pos` columns.
pub async fn read_position_deletes(
    io: &TableIo,
    delete_file: &DataFile,
    data_path: &str,
    out: &mut RoaringTreemap,
) -> crate::Result<()> {
    let shown = io.display(&io.resolve(&delete_file.file_path));
    let err = |r: String| crate::Error::delete_file(&shown, r);
    let builder = open_parquet(io, &delete_file.file_path, delete_file.file_size_in_bytes).await?;
    let schema = builder.schema().clone();
    let find = |id: i32, name: &str| {
        schema
            .fields()
            .iter()
            .position(|f| field_id(f) == Some(id) || (field_id(f).is_none() && f.name() == name))
    };
    let (Some(path_idx), Some(pos_idx)) = (
        find(DELETE_FILE_PATH_FIELD_ID, "file_path"),
        find(DELETE_POS_FIELD_ID, "pos"),
    ) else {
        return Err(err("no file_path and pos columns".into()));
    };
    let mask = ProjectionMask::roots(builder.parquet_schema(), [path_idx, pos_idx]);
    let mut stream = builder
        .with_projection(mask)
        .build()
        .map_err(|e| err(e.to_string()))?;
    let (pi, si) = if path_idx < pos_idx { (0, 1) } else { (1, 0) };
    while let Some(batch) = stream.try_next().await.map_err(|e| err(e.to_string()))? {
        let paths = batch
            .column(pi)
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| err("file_path is not a string column".into()))?;
        let pos = batch
            .column(si)
            .as_any()
            .downcast_ref::<Int64Array>()
            .ok_or_else(|| err("pos is not a long column".into()))?;
        for i in 0..batch.num_rows() {
            if paths.is_valid(i) && paths.value(i) == data_path {
                if !pos.is_valid(i) || pos.value(i) < 0 {
                    return Err(err(format!("row {i} has an invalid pos")));
                }
                out.insert(pos.value(i) as u64);
            }
        }
    }
    Ok(())
}
