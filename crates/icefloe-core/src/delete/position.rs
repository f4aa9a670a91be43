//! V2 position delete files (spec: "Position Delete Files"): rows of (`file_path`, `pos`),
//! sorted by path then position, in any data file format. `file_path` is read whatever Arrow
//! layout the file decodes to (string, large string, string view, dictionary).

use arrow::array::{Array, Int64Array, StringArray};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use futures::TryStreamExt;
use roaring::RoaringTreemap;

use crate::io::file::FileReader;
use crate::io::TableIo;
use crate::spec::arrow_schema::{field_id, DELETE_FILE_PATH_FIELD_ID, DELETE_POS_FIELD_ID};
use crate::spec::DataFile;

/// Rows decoded per batch of a position delete file.
const BATCH_ROWS: usize = 8192;

/// The indices of the `file_path` (string) and `pos` (long) columns of a position delete
/// file: by their reserved field ids, or by name in a file without ids. Anything else is not
/// a position delete file, whatever its manifest entry says.
pub fn delete_columns(
    schema: &arrow::datatypes::Schema,
    shown: &str,
) -> crate::Result<(usize, usize)> {
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
        return Err(crate::Error::delete_file(
            shown,
            "is not a position delete file: a position delete file must have the file_path and pos columns",
        ));
    };
    let path_type = schema.field(path_idx).data_type();
    if !is_string_like(path_type) {
        return Err(crate::Error::delete_file(
            shown,
            format!("file_path is {path_type}, not a string column"),
        ));
    }
    let pos_type = schema.field(pos_idx).data_type();
    if pos_type != &DataType::Int64 {
        return Err(crate::Error::delete_file(
            shown,
            format!("pos is {pos_type}, not a long column"),
        ));
    }
    Ok((path_idx, pos_idx))
}

/// Checks that a position delete file that applies to no data file of a scan is one: it
/// opens and has the `file_path` and `pos` columns.
pub async fn check_position_delete_file(io: &TableIo, delete_file: &DataFile) -> crate::Result<()> {
    let file = FileReader::open(io, delete_file, BATCH_ROWS).await?;
    delete_columns(file.schema(), file.shown()).map(|_| ())
}

/// Adds to `out` the positions that `delete_file` deletes in the data file written at
/// `data_path`. Errors: unreadable file, missing or mistyped `file_path`/`pos` columns.
pub async fn read_position_deletes(
    io: &TableIo,
    delete_file: &DataFile,
    data_path: &str,
    out: &mut RoaringTreemap,
) -> crate::Result<()> {
    let file = FileReader::open(io, delete_file, BATCH_ROWS).await?;
    let shown = file.shown().to_string();
    let err = |r: String| crate::Error::delete_file(&shown, r);
    let (path_idx, pos_idx) = delete_columns(file.schema(), &shown)?;
    let mut roots = vec![path_idx, pos_idx];
    roots.sort_unstable();
    let mut stream = file.stream(roots, None)?;
    let (pi, si) = if path_idx < pos_idx { (0, 1) } else { (1, 0) };
    while let Some(batch) = stream.try_next().await? {
        let paths = batch.column(pi);
        if !is_string_like(paths.data_type()) {
            return Err(err(format!(
                "file_path is {}, not a string column",
                paths.data_type()
            )));
        }
        let paths = cast(paths, &DataType::Utf8).map_err(|e| err(format!("file_path: {e}")))?;
        let paths = paths
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("cast to Utf8");
        let pos = batch
            .column(si)
            .as_any()
            .downcast_ref::<Int64Array>()
            .ok_or_else(|| {
                err(format!(
                    "pos is {}, not a long column",
                    batch.column(si).data_type()
                ))
            })?;
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

/// Whether an Arrow type holds strings (any offset width, views, or dictionary-encoded).
fn is_string_like(t: &DataType) -> bool {
    match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, v) => is_string_like(v),
        _ => false,
    }
}
