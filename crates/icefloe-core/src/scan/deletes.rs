//! The deletes of a file scan task, through the table's caches: its deleted positions (one
//! bitmap per data file, from its deletion vector or its position delete files) and its
//! equality delete sets. Decoding and checking are `delete/`'s; caching is the scan's, since
//! every read and view of a file needs them again.

use std::collections::HashMap;
use std::sync::Arc;

use roaring::RoaringTreemap;

use crate::cache::{get_or_load, get_or_load_checked};
use crate::delete::equality::{read_equality_deletes, EqualityDeleteSet};
use crate::delete::resolved::{check_in_range, load_deletion_vector, union_position_deletes};
use crate::scan::plan::task::FileScanTask;
use crate::spec::{DataFile, Type};
use crate::table::Table;

/// The positions deleted in the task's data file by its deletion vector or position delete
/// files, or `None` when neither applies. Errors: those of
/// [`load_deletion_vector`] and [`union_position_deletes`], and a deletion vector that deletes
/// positions past the end of the data file.
pub async fn deleted_positions(
    table: &Table,
    task: &FileScanTask,
) -> crate::Result<Option<Arc<RoaringTreemap>>> {
    let io = table.io();
    let caches = table.caches();
    if let Some(dv) = &task.deletion_vector {
        let f = &dv.file;
        let shown = io.shown(&f.file_path);
        let key = format!(
            "{shown}@{:?}+{:?}",
            f.content_offset, f.content_size_in_bytes
        );
        let bitmap = get_or_load_checked(
            &caches.delete_bitmaps,
            key,
            table.warnings(),
            load_deletion_vector(io, f),
        )
        .await?;
        check_in_range(&bitmap, &task.data_file, &shown)?;
        return Ok(Some(bitmap));
    }
    if task.position_deletes.is_empty() {
        return Ok(None);
    }
    let data_path = &task.data_file.file_path;
    let mut key = io.shown(data_path);
    for d in &task.position_deletes {
        key.push('|');
        key.push_str(&d.file.file_path);
    }
    let bitmap = get_or_load_checked(&caches.delete_bitmaps, key, table.warnings(), async {
        Ok((
            union_position_deletes(io, &task.position_deletes, data_path).await?,
            Vec::new(),
        ))
    })
    .await?;
    Ok(Some(bitmap))
}

/// The equality delete set of `delete_file`, from the table's cache or read (and cached); its
/// keys decoded to `types_by_id` (the reading schema's types of the delete columns, by field
/// id), found by their struct paths `paths_by_id`.
pub async fn load_equality_set(
    table: &Table,
    delete_file: &DataFile,
    types_by_id: &HashMap<i32, Type>,
    paths_by_id: &HashMap<i32, Vec<i32>>,
) -> crate::Result<Arc<EqualityDeleteSet>> {
    let io = table.io();
    let keys: Vec<(Option<&Type>, Option<&Vec<i32>>)> = delete_file
        .equality_ids
        .iter()
        .map(|id| (types_by_id.get(id), paths_by_id.get(id)))
        .collect();
    let key = format!("{}#{keys:?}", io.shown(&delete_file.file_path));
    get_or_load(&table.caches().equality_deletes, key, async {
        read_equality_deletes(io, delete_file, types_by_id, paths_by_id).await
    })
    .await
}
