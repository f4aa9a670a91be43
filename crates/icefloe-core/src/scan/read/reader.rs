//! Reading one file scan task: the data file's rows (Parquet, Avro or ORC) → Arrow batches in
//! the reading schema, with deleted positions skipped (deletion vector or position deletes),
//! equality-deleted rows filtered, and lineage columns added.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, BooleanArray, Int64Array};
use arrow::compute::{cast, filter_record_batch};
use arrow::datatypes::SchemaRef;
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use arrow::row::RowConverter;
use futures::stream::BoxStream;
use futures::StreamExt;
use roaring::RoaringTreemap;

use super::adapt::{adapt, cast_exact, literal_array, missing_column};
use super::lineage::{last_updated, row_ids};
use super::metadata_columns;
use super::page_index::FilterLeaf;
use crate::delete::equality::{key_columns, EqualityDeleteSet};
use crate::io::file::FileReader;
use crate::scan::deletes::{deleted_positions, load_equality_set};
use crate::scan::plan::prune::{PartStats, Pruner};
use crate::scan::plan::task::FileScanTask;
use crate::spec::arrow_schema::{type_to_arrow, LAST_UPDATED_SEQ_FIELD_ID, ROW_ID_FIELD_ID};
use crate::spec::field_lookup::find_field;
use crate::spec::name_mapping::{MappedField, NameMapping};
use crate::spec::{Literal, NestedField, PrimitiveType, Transform, Type};
use crate::table::Table;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::statistics::Statistics as ParquetStatistics;

/// Rows per Arrow batch.
pub const DEFAULT_BATCH_SIZE: usize = 8192;

/// What every task of a scan reads: the projected fields and the output schema.
#[derive(Debug)]
pub struct ReadContext {
    /// Projected top-level fields, in output order.
    pub fields: Vec<NestedField>,
    /// Whether `_row_id` and `_last_updated_sequence_number` come first.
    pub lineage: bool,
    /// The output schema (see `arrow_schema::scan_schema`).
    pub schema: SchemaRef,
    /// Top-level fields of every schema of the table by id (equality delete columns may have
    /// been dropped from the reading schema).
    pub fields_by_id: HashMap<i32, NestedField>,
    /// Types of every field id in the table.
    pub types_by_id: HashMap<i32, Type>,
    /// Field-id path from a top-level column to every field reachable through structs.
    pub paths_by_id: HashMap<i32, Vec<i32>>,
    /// `schema.name-mapping.default`, for files without field ids.
    pub name_mapping: Option<NameMapping>,
    pub batch_size: usize,
    /// Conditions whose row groups may be skipped (by their column statistics), if any.
    pub row_group_filter: Option<Pruner>,
    /// Read local Parquet files in slices too ([`crate::scan::ScanBuilder::sliced_reads`]).
    pub sliced: bool,
    /// Bounds the slices read ahead ([`crate::scan::ScanBuilder::read_ahead_budget`]).
    pub read_ahead: Option<crate::io::readahead::ReadAheadBudget>,
}

impl ReadContext {
    /// Whether every read of a whole file wants its Parquet page index: for pruning row
    /// groups and pages, or for reading it in slices. (A read of some positions wants it too.)
    pub fn wants_page_index(&self) -> bool {
        self.row_group_filter.is_some() || self.sliced
    }

    /// The top-level column a field id belongs to (itself for a top-level field).
    fn root_of(&self, id: i32) -> i32 {
        self.paths_by_id.get(&id).map_or(id, |p| p[0])
    }
}

/// Reads one task batch by batch.
pub struct TaskReader {
    stream: Option<BoxStream<'static, crate::Result<RecordBatch>>>,
    ctx: Arc<ReadContext>,
    task: FileScanTask,
    path: String,
    /// Column index in the read batch of each needed field id.
    columns: HashMap<i32, usize>,
    /// Equality delete sets that apply, each with its key converter (built once per file).
    equality: Vec<(Arc<EqualityDeleteSet>, RowConverter)>,
    /// Values for fields the file lacks, by field id: identity partition values (spec:
    /// "Column Projection", first rule) and the metadata columns that are constant per file.
    constants: HashMap<i32, Option<Literal>>,
    /// The file has no field ids: identity partition values then win over columns found
    /// through the name mapping, as the projection rules order them.
    partition_first: bool,
    /// Whether rows need their file positions (lineage or `_pos`).
    positions: bool,
    cursor: PositionCursor,
}

impl TaskReader {
    /// Prepares reading `task`: resolves its deletes (cached) and opens the data file.
    /// Errors: missing or corrupt data file, delete files or deletion vector; a data file
    /// whose row count differs from its manifest entry.
    /// With `rows`, only the live rows at those positions of the data file are read (a
    /// split of the task, [`crate::scan::plan::split`]).
    pub async fn open(
        table: &Table,
        task: FileScanTask,
        rows: Option<std::ops::Range<u64>>,
        ctx: Arc<ReadContext>,
    ) -> crate::Result<TaskReader> {
        Self::open_at(table, task, rows, None, ctx).await
    }

    /// Like [`TaskReader::open`], reading only the live rows at positions in `only` (when
    /// given): the change feed reads just the rows a commit's deletes newly mark.
    pub async fn open_at(
        table: &Table,
        task: FileScanTask,
        rows: Option<std::ops::Range<u64>>,
        only: Option<&RoaringTreemap>,
        ctx: Arc<ReadContext>,
    ) -> crate::Result<TaskReader> {
        Self::open_inner(table, task, rows, only, 0, ctx, None).await
    }

    /// Like [`TaskReader::open`], starting at file position `from`: a position
    /// [`TaskReader::next_positioned`] gave makes the read yield that batch first, then the
    /// same batches as a read from the start (see [`crate::scan::resume`]).
    pub async fn open_from(
        table: &Table,
        task: FileScanTask,
        rows: Option<std::ops::Range<u64>>,
        from: u64,
        ctx: Arc<ReadContext>,
    ) -> crate::Result<TaskReader> {
        Self::open_inner(table, task, rows, None, from, ctx, None).await
    }

    /// Like [`TaskReader::open_from`], the file sharing the table's read-ahead window from
    /// `place` ([`crate::io::ahead_window::AheadWindow`]).
    pub async fn open_placed(
        table: &Table,
        task: FileScanTask,
        rows: Option<std::ops::Range<u64>>,
        from: u64,
        ctx: Arc<ReadContext>,
        place: Option<crate::io::ahead_window::Place>,
    ) -> crate::Result<TaskReader> {
        Self::open_inner(table, task, rows, None, from, ctx, place).await
    }

    async fn open_inner(
        table: &Table,
        task: FileScanTask,
        rows: Option<std::ops::Range<u64>>,
        only: Option<&RoaringTreemap>,
        from: u64,
        ctx: Arc<ReadContext>,
        place: Option<crate::io::ahead_window::Place>,
    ) -> crate::Result<TaskReader> {
        let io = table.io();
        let path = io.shown(&task.data_file.file_path);
        let deleted = deleted_positions(table, &task).await?;
        let mut equality = Vec::new();
        for d in &task.equality_deletes {
            let set = load_equality_set(table, &d.file, &ctx.types_by_id, &ctx.paths_by_id).await?;
            let converter = set.converter()?;
            equality.push((set, converter));
        }
        // The page index serves pruning and the reads of parts of a file.
        let file = FileReader::open_cached(
            io,
            &table.caches().parquet_footers,
            &task.data_file,
            ctx.batch_size,
            ctx.wants_page_index() || rows.is_some() || only.is_some(),
        )
        .await?
        .sliced(ctx.sliced)
        .read_ahead_budget(ctx.read_ahead.clone())
        .window_place(place);
        let num_rows = file.num_rows();
        if num_rows != task.data_file.record_count as u64 {
            return Err(crate::Error::data_file(
                &path,
                format!(
                    "has {num_rows} rows but its manifest entry records {}",
                    task.data_file.record_count
                ),
            ));
        }
        // The positions wanted (split, `only`, pruning) first, the deleted ones removed last:
        // a deletion vector is then walked only inside the wanted ranges, not over the file.
        let mut runs = if num_rows > 0 {
            vec![(0, num_rows)]
        } else {
            Vec::new()
        };
        let mut select = deleted.as_deref().is_some_and(|d| !d.is_empty());
        let file_fields = file.schema().fields().clone();
        let mapping = ctx.name_mapping.as_ref().map(|m| m.fields.as_slice());
        if let Some(r) = &rows {
            // Positions outside the split.
            let outside = [
                (0, r.start.min(num_rows)),
                (r.end, num_rows.saturating_sub(r.end)),
            ];
            let outside: Vec<(u64, u64)> = outside.into_iter().filter(|(_, l)| *l > 0).collect();
            runs = subtract(runs, &outside);
            select = true;
        }
        if let Some(only) = only {
            runs = intersect(runs, only);
            select = true;
        }
        // Positions before a restart point. The file is opened as for a read from the start
        // (same page index, so the same slices): batches then break where that read's do.
        if from > 0 {
            runs = subtract(runs, &[(0, from.min(num_rows))]);
            select = true;
        }
        if let Some(filter) = &ctx.row_group_filter {
            if let Some(meta) = file.parquet_metadata() {
                let skips = pruned_positions(filter, meta, &file_fields, mapping);
                if !skips.is_empty() {
                    runs = subtract(runs, &skips);
                    select = true;
                }
            }
        }
        let runs: Arc<[(u64, u64)]> = without_deleted(runs, deleted.as_deref()).into();
        // Columns without ids can only be matched through a name mapping; guessing by name or
        // position could return another column's values.
        let has_ids = file_fields
            .iter()
            .any(|f| crate::spec::arrow_schema::field_id(f).is_some());
        if !has_ids && mapping.is_none() && !file_fields.is_empty() {
            return Err(crate::Error::data_file(
                &path,
                "has no field ids and the table sets no schema.name-mapping.default, so its columns cannot be matched",
            ));
        }

        let file_ids = match file.parquet_metadata() {
            Some(m) => {
                crate::validate::field_ids::parquet_field_ids(m.file_metadata().schema_descr())
            }
            None => arrow_field_ids(file.schema().fields()),
        };
        let mut constants = HashMap::new();
        let metadata = table.metadata();
        if let Some(spec) = metadata.partition_spec(task.data_file.spec_id) {
            for (pf, value) in spec.fields.iter().zip(&task.data_file.partition) {
                if pf.transform == Transform::Identity {
                    constants.insert(pf.source_id, value.clone());
                }
            }
        }
        crate::validate::field_ids::check_field_ids(
            &file_ids,
            &task.data_file,
            |id| ctx.types_by_id.contains_key(&id),
            &constants.keys().copied().collect::<Vec<_>>(),
            &path,
            table.warnings(),
        )?;
        for f in &ctx.fields {
            if let Some(v) = metadata_columns::constant(f, &task, metadata) {
                constants.insert(f.id, v);
            }
        }
        let positions = ctx.lineage
            || ctx
                .fields
                .iter()
                .any(|f| f.id == metadata_columns::POS_FIELD_ID);

        let mut needed: Vec<i32> = ctx.fields.iter().map(|f| f.id).collect();
        for (set, _) in &equality {
            needed.extend(set.equality_ids.iter().map(|id| ctx.root_of(*id)));
        }
        if ctx.lineage {
            needed.extend([ROW_ID_FIELD_ID, LAST_UPDATED_SEQ_FIELD_ID]);
        }
        let mut roots: Vec<(i32, usize)> = needed
            .iter()
            .filter_map(|id| find_field(&file_fields, *id, mapping).map(|i| (*id, i)))
            .collect();
        crate::validate::column_type::check_data_file(
            file.parquet_metadata()
                .map(|m| m.file_metadata().schema_descr()),
            &file_fields,
            &roots,
            |id| match id {
                ROW_ID_FIELD_ID | LAST_UPDATED_SEQ_FIELD_ID => {
                    Some(Type::Primitive(crate::spec::PrimitiveType::Long))
                }
                _ => ctx.types_by_id.get(&id).cloned(),
            },
            mapping,
            table.metadata().format_version,
            &path,
        )?;
        roots.sort_by_key(|(_, i)| *i);
        let mut indices: Vec<usize> = roots.iter().map(|(_, i)| *i).collect();
        indices.dedup();
        let columns = roots
            .iter()
            .map(|(id, i)| {
                (
                    *id,
                    indices.iter().position(|x| x == i).expect("index kept"),
                )
            })
            .collect();

        let mut reader = TaskReader {
            stream: None,
            ctx: ctx.clone(),
            path: path.clone(),
            columns,
            equality,
            constants,
            partition_first: !has_ids,
            positions,
            cursor: PositionCursor::new(runs.clone()),
            task,
        };
        if runs.is_empty() {
            return Ok(reader); // every row is deleted
        }
        // One copy of the runs (a deletion vector's can be a million), shared by the cursor
        // and the file's stream.
        let runs = select.then_some(runs);
        reader.stream = Some(file.stream(indices, runs)?);
        Ok(reader)
    }

    /// The next batch of live rows, or `None` at the end of the file.
    pub async fn next_batch(&mut self) -> crate::Result<Option<RecordBatch>> {
        Ok(self.next_positioned().await?.map(|(_, b)| b))
    }

    /// The next batch of live rows with the file position to restart at
    /// ([`TaskReader::open_from`]) for it to come first: the position of the first row the
    /// data file's read gave for it (equality deletes may have removed that row since).
    pub async fn next_positioned(&mut self) -> crate::Result<Option<(u64, RecordBatch)>> {
        loop {
            let Some(stream) = self.stream.as_mut() else {
                return Ok(None);
            };
            crate::cancel::check(|| format!("reading {}", self.path))?;
            let Some(batch) = stream.next().await else {
                self.stream = None;
                return Ok(None);
            };
            let batch = batch?;
            let at = self.cursor.position();
            let out = self.convert(&batch)?;
            if out.num_rows() > 0 {
                return Ok(Some((at, out)));
            }
        }
    }

    /// The column of field `f` for `batch`, whose rows are at file `positions` (needed only
    /// for `_pos`). Follows the spec's column projection rules, in order.
    fn column(
        &self,
        batch: &RecordBatch,
        f: &NestedField,
        positions: &[u64],
    ) -> crate::Result<ArrayRef> {
        let mapping = self.ctx.name_mapping.as_ref().map(|m| m.fields.as_slice());
        let n = batch.num_rows();
        let in_file = self.columns.get(&f.id);
        let constant = self.constants.get(&f.id);
        match (in_file, constant) {
            (Some(i), c) if c.is_none() || !self.partition_first => {
                let children = mapping.and_then(|m| child_mapping(m, f.id));
                let col = batch.column(*i);
                adapt(col, &f.field_type, children, &self.path)
            }
            (_, Some(value)) => constant_column(value.as_ref(), f, n, &self.path),
            (None, None) if f.id == metadata_columns::POS_FIELD_ID => Ok(Arc::new(
                Int64Array::from_iter_values(positions.iter().map(|p| *p as i64)),
            )),
            _ => missing_column(f, n, &self.path),
        }
    }

    fn convert(&mut self, batch: &RecordBatch) -> crate::Result<RecordBatch> {
        let n = batch.num_rows();
        let positions = if self.positions {
            self.cursor.take(n)
        } else {
            // Still counted: restart points are positions.
            self.cursor.skip(n);
            Vec::new()
        };
        let keep = self.equality_keep(batch)?;
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(self.ctx.schema.fields().len());
        if self.ctx.lineage {
            let file_col = |id: i32| {
                self.columns.get(&id).and_then(|i| {
                    cast(batch.column(*i), &arrow::datatypes::DataType::Int64)
                        .ok()
                        .and_then(|a| a.as_any().downcast_ref::<Int64Array>().cloned())
                })
            };
            let first = self.task.first_row_id;
            cols.push(row_ids(
                file_col(ROW_ID_FIELD_ID).as_ref(),
                first,
                &positions,
            ));
            cols.push(last_updated(
                file_col(LAST_UPDATED_SEQ_FIELD_ID).as_ref(),
                first,
                self.task.sequence_number,
                n,
            ));
        }
        for f in &self.ctx.fields {
            cols.push(self.column(batch, f, &positions)?);
        }
        let out = RecordBatch::try_new_with_options(
            self.ctx.schema.clone(),
            cols,
            &RecordBatchOptions::new().with_row_count(Some(n)),
        )
        .map_err(|e| crate::Error::data_file(&self.path, e.to_string()))?;
        match keep {
            Some(mask) => filter_record_batch(&out, &mask)
                .map_err(|e| crate::Error::data_file(&self.path, e.to_string())),
            None => Ok(out),
        }
    }

    /// `None` when no equality delete matches any row of the batch, else the rows to keep.
    fn equality_keep(&self, batch: &RecordBatch) -> crate::Result<Option<BooleanArray>> {
        if self.equality.is_empty() {
            return Ok(None);
        }
        let n = batch.num_rows();
        let mut keep = vec![true; n];
        for (set, converter) in &self.equality {
            let mut keys = Vec::with_capacity(set.types.len());
            for id in &set.equality_ids {
                let missing = || {
                    crate::Error::delete_file(
                        &self.path,
                        format!("equality field id {id} is in no schema"),
                    )
                };
                let path = self.ctx.paths_by_id.get(id).ok_or_else(missing)?;
                let f = self.ctx.fields_by_id.get(&path[0]).ok_or_else(missing)?;
                let col = self.column(batch, f, &[])?;
                let mut key = key_columns(&col, &path[1..])
                    .map_err(|e| crate::Error::data_file(&self.path, e))?
                    .ok_or_else(missing)?;
                let leaf = key.pop().expect("a leaf");
                keys.extend(key);
                let ty = &set.types[keys.len()];
                keys.push(
                    cast_exact(&leaf, ty)
                        .map_err(|e| crate::Error::data_file(&self.path, e.to_string()))?,
                );
            }
            for (k, deleted) in keep.iter_mut().zip(set.matches(converter, &keys)?) {
                *k &= !deleted;
            }
        }
        if keep.iter().all(|k| *k) {
            return Ok(None);
        }
        Ok(Some(BooleanArray::from(keep)))
    }
}

/// `value` (a partition or metadata value; `None` = null) repeated for `len` rows as `f`'s type.
fn constant_column(
    value: Option<&Literal>,
    f: &NestedField,
    len: usize,
    path: &str,
) -> crate::Result<ArrayRef> {
    let one = match value {
        Some(v) => literal_array(v, &f.field_type).map_err(|r| {
            crate::Error::data_file(path, format!("partition value of {}: {r}", f.name))
        })?,
        None => return Ok(new_null_array(&type_to_arrow(&f.field_type), len)),
    };
    let idx = arrow::array::UInt32Array::from(vec![0u32; len]);
    arrow::compute::take(&one, &idx, None).map_err(|e| crate::Error::data_file(path, e.to_string()))
}

/// The name-mapping children of a top-level field id.
fn child_mapping(mapping: &[MappedField], id: i32) -> Option<&[MappedField]> {
    mapping
        .iter()
        .find(|m| m.field_id == Some(id))
        .map(|m| m.fields.as_slice())
}

/// Runs `(start, len)` of positions that are not deleted, in order.
/// The row ranges `(start, len)` of the row groups whose column statistics prove that no row
/// satisfies `filter` (only top-level primitive columns with usable statistics take part).
/// Every field id of an Arrow schema (Avro and ORC files), at every level.
fn arrow_field_ids(fields: &arrow::datatypes::Fields) -> std::collections::HashSet<i32> {
    use arrow::datatypes::DataType;
    fn walk(f: &arrow::datatypes::Field, out: &mut std::collections::HashSet<i32>) {
        if let Some(id) = crate::spec::arrow_schema::field_id(f) {
            out.insert(id);
        }
        match f.data_type() {
            DataType::Struct(children) => children.iter().for_each(|c| walk(c, out)),
            DataType::List(c) | DataType::LargeList(c) | DataType::Map(c, _) => walk(c, out),
            _ => {}
        }
    }
    let mut out = std::collections::HashSet::new();
    fields.iter().for_each(|f| walk(f, &mut out));
    out
}

/// The positions of a Parquet file that `filter` rules out by row group statistics and the
/// page index, as sorted, disjoint `(start, len)` runs.
pub(crate) fn pruned_positions(
    filter: &Pruner,
    meta: &ParquetMetaData,
    file_fields: &arrow::datatypes::Fields,
    mapping: Option<&[MappedField]>,
) -> Vec<(u64, u64)> {
    let leaves = filter_leaves(filter, meta, file_fields, mapping);
    let skipped = skipped_row_groups(filter, meta, &leaves);
    let pages = super::page_index::skipped_pages(filter, meta, &leaves, &skipped, &column_stats);
    if pages.is_empty() {
        return skipped;
    }
    let mut all = [skipped, pages].concat();
    all.sort_unstable();
    all
}

fn skipped_row_groups(
    filter: &Pruner,
    meta: &ParquetMetaData,
    leaves: &[FilterLeaf],
) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    if leaves.is_empty() {
        return out;
    }
    let mut start = 0u64;
    for rg in meta.row_groups() {
        let rows = rg.num_rows().max(0) as u64;
        let stats: HashMap<i32, PartStats> = leaves
            .iter()
            .filter_map(|(id, leaf, ty)| {
                let col = rg.column(*leaf);
                Some((*id, column_stats(col.statistics()?, col.column_descr(), ty)))
            })
            .collect();
        if !filter.may_match_stats(&stats, rows) {
            out.push((start, rows));
        }
        start += rows;
    }
    out
}

/// The filter's columns that are top-level primitive leaves of the file.
fn filter_leaves(
    filter: &Pruner,
    meta: &ParquetMetaData,
    file_fields: &arrow::datatypes::Fields,
    mapping: Option<&[MappedField]>,
) -> Vec<FilterLeaf> {
    let descr = meta.file_metadata().schema_descr();
    let mut leaves = Vec::new();
    for id in filter.field_ids() {
        let (Some(ty), Some(root)) = (filter.field_type(id), find_field(file_fields, id, mapping))
        else {
            continue;
        };
        let leaf = (0..descr.num_columns()).find(|&i| {
            descr.get_column_root_idx(i) == root && descr.column(i).path().parts().len() == 1
        });
        if let Some(leaf) = leaf {
            leaves.push((id, leaf, ty.clone()));
        }
    }
    leaves
}

/// A row group column's statistics as bounds of the column's Iceberg type; bounds that
/// cannot be read exactly in that type (other physical types or units, deprecated byte-array
/// orderings, invalid UTF-8) are left unknown.
fn column_stats(
    stats: &ParquetStatistics,
    descr: &parquet::schema::types::ColumnDescriptor,
    ty: &PrimitiveType,
) -> PartStats {
    use parquet::basic::ConvertedType;
    use Literal as L;
    use ParquetStatistics as S;
    use PrimitiveType as P;
    fn pair<T, F: Fn(&T) -> Option<Literal>>(
        v: &parquet::file::statistics::ValueStatistics<T>,
        f: F,
    ) -> (Option<Literal>, Option<Literal>) {
        (v.min_opt().and_then(&f), v.max_opt().and_then(&f))
    }
    let micros = descr.converted_type() == ConvertedType::TIMESTAMP_MICROS;
    let text = |b: &parquet::data_type::ByteArray| {
        std::str::from_utf8(b.data())
            .ok()
            .map(|s| L::String(s.to_string()))
    };
    let (lower, upper) = match (stats, ty) {
        (S::Int32(v), P::Int) => pair(v, |x| Some(L::Int(*x))),
        (S::Int32(v), P::Long) => pair(v, |x| Some(L::Long(*x as i64))),
        (S::Int64(v), P::Long) => pair(v, |x| Some(L::Long(*x))),
        (S::Int32(v), P::Date) => pair(v, |x| Some(L::Date(*x))),
        (S::Int64(v), P::Timestamp | P::Timestamptz) if micros => {
            pair(v, |x| Some(L::Timestamp(*x)))
        }
        (S::Float(v), P::Float) => pair(v, |x| Some(L::Float(*x))),
        (S::Float(v), P::Double) => pair(v, |x| Some(L::Double(*x as f64))),
        (S::Double(v), P::Double) => pair(v, |x| Some(L::Double(*x))),
        (S::Boolean(v), P::Boolean) => pair(v, |x| Some(L::Boolean(*x))),
        (S::ByteArray(v), P::String) if !stats.is_min_max_deprecated() => pair(v, text),
        _ => (None, None),
    };
    PartStats {
        lower,
        upper,
        null_count: stats.null_count_opt(),
    }
}

/// `runs` (sorted, disjoint `(start, len)`) without the rows of `skips` (sorted, disjoint).
fn subtract(runs: Vec<(u64, u64)>, skips: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(runs.len());
    let mut k = 0;
    for (start, len) in runs {
        let (mut s, e) = (start, start + len);
        while k < skips.len() && skips[k].0 + skips[k].1 <= s {
            k += 1;
        }
        let mut j = k;
        while s < e {
            if j >= skips.len() || skips[j].0 >= e {
                out.push((s, e - s));
                break;
            }
            let (ks, ke) = (skips[j].0, skips[j].0 + skips[j].1);
            if ks > s {
                out.push((s, ks - s));
            }
            s = s.max(ke);
            j += 1;
        }
    }
    out
}

/// The positions of `runs` that are in `only`, as runs.
fn intersect(runs: Vec<(u64, u64)>, only: &RoaringTreemap) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut k = 0;
    for p in only.iter() {
        while k < runs.len() && runs[k].0 + runs[k].1 <= p {
            k += 1;
        }
        if k == runs.len() {
            break;
        }
        if p < runs[k].0 {
            continue;
        }
        match out.last_mut() {
            Some((s, l)) if *s + *l == p => *l += 1,
            _ => out.push((p, 1)),
        }
    }
    out
}

/// The positions of `runs` (sorted, disjoint `(start, len)`) not in `deleted`, as runs; the
/// deleted positions are visited only inside `runs`.
fn without_deleted(runs: Vec<(u64, u64)>, deleted: Option<&RoaringTreemap>) -> Vec<(u64, u64)> {
    let Some(deleted) = deleted.filter(|d| !d.is_empty()) else {
        return runs;
    };
    let mut out = Vec::with_capacity(runs.len());
    let mut it = deleted.iter();
    let mut next = it.next();
    for (start, len) in runs {
        let end = start + len;
        if next.is_some_and(|p| p < start) {
            it.advance_to(start);
            next = it.next();
        }
        let mut cur = start;
        while let Some(p) = next.filter(|&p| p < end) {
            if p > cur {
                out.push((cur, p - cur));
            }
            cur = p + 1;
            next = it.next();
        }
        if cur < end {
            out.push((cur, end - cur));
        }
    }
    out
}

/// Hands out the file positions of successive output rows.
struct PositionCursor {
    runs: Arc<[(u64, u64)]>,
    run: usize,
    offset: u64,
}

impl PositionCursor {
    fn new(runs: Arc<[(u64, u64)]>) -> Self {
        PositionCursor {
            runs,
            run: 0,
            offset: 0,
        }
    }

    /// The position of the next row (past the last run at the end).
    fn position(&self) -> u64 {
        match self.runs.get(self.run) {
            Some((start, _)) => start + self.offset,
            None => self.runs.last().map_or(0, |(s, l)| s + l),
        }
    }

    /// Moves past `n` rows.
    fn skip(&mut self, mut n: usize) {
        while n > 0 && self.run < self.runs.len() {
            let (_, len) = self.runs[self.run];
            let k = ((len - self.offset) as usize).min(n);
            self.offset += k as u64;
            n -= k;
            if self.offset == len {
                self.run += 1;
                self.offset = 0;
            }
        }
    }

    fn take(&mut self, mut n: usize) -> Vec<u64> {
        let mut out = Vec::with_capacity(n);
        while n > 0 && self.run < self.runs.len() {
            let (start, len) = self.runs[self.run];
            let avail = (len - self.offset) as usize;
            let k = avail.min(n);
            out.extend((0..k as u64).map(|i| start + self.offset + i));
            self.offset += k as u64;
            n -= k;
            if self.offset == len {
                self.run += 1;
                self.offset = 0;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_positions() {
        let mut d = RoaringTreemap::new();
        d.extend([0u64, 3, 4, 9]);
        let runs = without_deleted(vec![(0, 10)], Some(&d));
        assert_eq!(runs, vec![(1, 2), (5, 4)]);
        let mut c = PositionCursor::new(runs.clone().into());
        assert_eq!(c.take(3), vec![1, 2, 5]);
        assert_eq!(c.position(), 6);
        assert_eq!(c.take(5), vec![6, 7, 8]);
        assert_eq!(c.position(), 9);
        let mut c = PositionCursor::new(runs.into());
        c.skip(2);
        assert_eq!(c.position(), 5);
        c.skip(1);
        assert_eq!(c.take(1), vec![6]);
    }

    #[test]
    fn only_positions_intersect_the_runs() {
        let mut only = RoaringTreemap::new();
        only.extend([0u64, 1, 2, 7, 8, 20]);
        assert_eq!(
            intersect(vec![(1, 5), (7, 10)], &only),
            vec![(1, 2), (7, 2)]
        );
        assert_eq!(intersect(vec![(3, 3)], &only), vec![]);
    }

    #[test]
    fn skipped_row_groups_leave_the_runs() {
        // Rows 0..30 in three row groups of 10; deleted: 3, 4, 25; row group 10..20 skipped.
        let mut d = RoaringTreemap::new();
        d.extend([3u64, 4, 25]);
        let runs = without_deleted(vec![(0, 30)], Some(&d));
        assert_eq!(
            subtract(runs.clone(), &[(10, 10)]),
            vec![(0, 3), (5, 5), (20, 5), (26, 4)]
        );
        assert_eq!(subtract(runs.clone(), &[]), runs);
        assert_eq!(
            subtract(vec![(0, 30)], &[(0, 10), (20, 10)]),
            vec![(10, 10)]
        );
        assert_eq!(subtract(vec![(0, 30)], &[(0, 30)]), vec![]);
        assert_eq!(
            subtract(vec![(0, 5), (8, 10), (25, 5)], &[(2, 10), (26, 2)]),
            vec![(0, 2), (12, 6), (25, 1), (28, 2)]
        );
    }

    #[test]
    fn deleted_positions_leave_only_wanted_runs() {
        // Against a position-by-position model: random runs and deleted sets, with deleted
        // positions before, between, after the runs and above 2^32 (another treemap key).
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for case in 0..500 {
            let base = if case % 5 == 0 { (1u64 << 32) - 40 } else { 0 };
            let mut runs = Vec::new();
            let mut at = base + next(5);
            for _ in 0..next(6) {
                let len = 1 + next(12);
                runs.push((at, len));
                at += len + 1 + next(8);
            }
            let mut d = RoaringTreemap::new();
            for _ in 0..next(40) {
                d.insert(base + next(at - base + 10));
            }
            let got: Vec<u64> = without_deleted(runs.clone(), Some(&d))
                .iter()
                .flat_map(|&(s, l)| s..s + l)
                .collect();
            let want: Vec<u64> = runs
                .iter()
                .flat_map(|&(s, l)| s..s + l)
                .filter(|p| !d.contains(*p))
                .collect();
            assert_eq!(got, want, "case {case}: runs {runs:?}, deleted {d:?}");
            assert_eq!(without_deleted(runs.clone(), None), runs);
        }
    }
}
