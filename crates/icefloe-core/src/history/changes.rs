//! The change feed between two snapshots, from row lineage (spec: "Row Lineage").
//!
//! Each commit after `from` up to `to` is compared with its parent, reading only what the
//! commit touched: data files it added (their live rows are the "after" side) or removed
//! (their rows live in the parent are the "before" side), and for data files live on both
//! sides only the positions its deletion vector or position deletes newly mark (or, when its
//! equality deletes differ, the file's rows whose liveness changed). Before and after rows
//! are matched by `_row_id`: only before is a delete, only after an insert, both with another
//! `_last_updated_sequence_number` an update (before and after images); both with the same
//! one is a row a copy-on-write commit only rewrote, which did not change. Rows without
//! lineage (format version 2, snapshots before the upgrade) are matched by key columns
//! instead, and then an update is a key whose other values changed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, Int32Array, Int64Array, StringArray};
use arrow::compute::{concat_batches, filter_record_batch, interleave};
use arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef};
use arrow::record_batch::RecordBatch;
use arrow::row::{RowConverter, SortField};
use futures::{StreamExt, TryStreamExt};
use roaring::RoaringTreemap;

use super::range::{commits_between, commits_since_creation};
use crate::scan::deletes::deleted_positions;
use crate::scan::plan::plan_files;
use crate::scan::task::FileScanTask;
use crate::scan::Scan;
use crate::spec::Snapshot;
use crate::table::{SnapshotSelector, Table};

/// Name of the change type column: `insert`, `delete`, `update_before`, `update_after`.
pub const CHANGE_TYPE: &str = "_change_type";
/// Name of the column holding the id of the snapshot that made the change.
pub const COMMIT_SNAPSHOT_ID: &str = "_commit_snapshot_id";
/// Name of the column holding the sequence number of that snapshot.
pub const CHANGE_SEQUENCE_NUMBER: &str = "_change_sequence_number";
/// Name of the column holding the commit's position in the range (0 = first commit).
pub const CHANGE_ORDINAL: &str = "_change_ordinal";

/// Iceberg's reserved field ids of the changelog columns (Java `MetadataColumns`).
const CHANGE_TYPE_FIELD_ID: i32 = i32::MAX - 104;
const CHANGE_ORDINAL_FIELD_ID: i32 = i32::MAX - 105;
const COMMIT_SNAPSHOT_ID_FIELD_ID: i32 = i32::MAX - 106;

/// What happened to a row in a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChangeType {
    /// The row is gone after the commit.
    Delete,
    /// The row as it was before an update.
    UpdateBefore,
    /// The row as it is after an update.
    UpdateAfter,
    /// The row is new in the commit.
    Insert,
}

impl ChangeType {
    /// The value of `_change_type`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeType::Insert => "insert",
            ChangeType::Delete => "delete",
            ChangeType::UpdateBefore => "update_before",
            ChangeType::UpdateAfter => "update_after",
        }
    }
}

/// Builds a [`ChangeFeed`].
#[derive(Debug, Clone, Default)]
pub struct ChangeFeedBuilder {
    from: Option<i64>,
    from_creation: bool,
    to: Option<i64>,
    key: Option<Vec<String>>,
    columns: Option<Vec<String>>,
    net: bool,
    concurrency: Option<usize>,
}

impl ChangeFeedBuilder {
    /// Changes after this snapshot (required; it must be an ancestor of `to`).
    pub fn from_snapshot(mut self, id: i64) -> Self {
        self.from = Some(id);
        self
    }

    /// Every change since the table's creation: the range starts before its first snapshot,
    /// whose rows are all inserts (instead of [`Self::from_snapshot`]).
    pub fn from_creation(mut self) -> Self {
        self.from_creation = true;
        self
    }

    /// Changes up to and including this snapshot (default: the current snapshot).
    pub fn to_snapshot(mut self, id: i64) -> Self {
        self.to = Some(id);
        self
    }

    /// Match rows by these columns instead of `_row_id` (for snapshots without lineage).
    pub fn key(mut self, columns: Vec<String>) -> Self {
        self.key = Some(columns);
        self
    }

    /// Output only these columns after the change and lineage columns.
    pub fn columns(mut self, names: Vec<String>) -> Self {
        self.columns = Some(names);
        self
    }

    /// One row per `_row_id` (or key) with its net effect over the range.
    pub fn net(mut self, on: bool) -> Self {
        self.net = on;
        self
    }

    /// How many files are read at once (default: available cores).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = Some(n.max(1));
        self
    }

    /// Resolves the range and the columns. Errors: neither or both of `from` and
    /// `from_creation`, unknown snapshots, `from` not an ancestor of `to`, a range from
    /// creation whose oldest snapshot's parent was expired, unknown columns.
    pub fn build(self, table: &Table) -> crate::Result<ChangeFeed> {
        let m = table.metadata();
        let from = match (self.from, self.from_creation) {
            (Some(id), false) => Some(id),
            (None, true) => None,
            (None, false) => {
                return Err(crate::Error::InvalidArgument(
                    "the change feed needs a starting snapshot, or to start at the table's \
                     creation"
                        .into(),
                ))
            }
            (Some(_), true) => {
                return Err(crate::Error::InvalidArgument(
                    "the change feed starts at a snapshot or at the table's creation, not both"
                        .into(),
                ))
            }
        };
        let to = match self.to {
            Some(id) => id,
            None => m.current_snapshot_id.ok_or_else(|| {
                crate::Error::SnapshotNotFound(format!(
                    "{} has no current snapshot",
                    table.metadata_file()
                ))
            })?,
        };
        let commits: Vec<Snapshot> = match from {
            Some(from) => commits_between(m, from, to, table.metadata_file())?,
            None => commits_since_creation(m, to, table.metadata_file())?,
        }
        .into_iter()
        .cloned()
        .collect();
        let to_snapshot = m.snapshot(to).expect("checked by commits_between");
        let schema = m.snapshot_schema(to_snapshot);
        let names: Vec<String> = schema.columns().iter().map(|f| f.name.clone()).collect();
        if names.iter().any(|n| n == "_pos") {
            return Err(crate::Error::Unsupported(
                "the change feed of a table with a column named _pos".into(),
            ));
        }
        let unknown = |n: &String, what: &str| {
            crate::Error::InvalidArgument(format!(
                "no column {n:?} for {what} in schema {} (columns: {})",
                schema.schema_id,
                names.join(", ")
            ))
        };
        for c in self.columns.iter().flatten() {
            if !names.contains(c) {
                return Err(unknown(c, "--columns"));
            }
        }
        // Matched by `_row_id`, an update is told by `_last_updated_sequence_number`, so only
        // the columns asked for are read; matched by key, every column is compared.
        let read_names: Vec<String> = match (&self.columns, &self.key) {
            (Some(cols), None) => {
                let mut v: Vec<String> = Vec::new();
                for c in cols {
                    if !v.contains(c) {
                        v.push(c.clone());
                    }
                }
                v
            }
            _ => names.clone(),
        };
        let index_of = |n: &String, what: &str| {
            read_names
                .iter()
                .position(|x| x == n)
                .map(|i| i + 2)
                .ok_or_else(|| unknown(n, what))
        };
        let mut read = read_names.clone();
        read.push("_pos".into());
        let mut builder = Scan::builder()
            .snapshot(SnapshotSelector::Id(to))
            .lineage(true)
            .columns(read);
        if let Some(n) = self.concurrency {
            builder = builder.concurrency(n);
        }
        let scan = builder.build(table)?;
        let read_schema = scan.schema();
        let mut out_cols = vec![0, 1];
        match &self.columns {
            Some(cols) => {
                for c in cols {
                    out_cols.push(index_of(c, "--columns")?);
                }
            }
            None => out_cols.extend(2..2 + read_names.len()),
        }
        let key = match &self.key {
            Some(k) if k.is_empty() => {
                return Err(crate::Error::InvalidArgument(
                    "a key needs at least one column".into(),
                ))
            }
            Some(k) => Some(
                k.iter()
                    .map(|c| index_of(c, "the key"))
                    .collect::<crate::Result<Vec<_>>>()?,
            ),
            None => None,
        };
        let converter = |idx: &[usize]| {
            RowConverter::new(
                idx.iter()
                    .map(|i| SortField::new(read_schema.field(*i).data_type().clone()))
                    .collect(),
            )
            .map_err(|e| crate::Error::Unsupported(format!("comparing rows of these types: {e}")))
        };
        let data_cols: Vec<usize> = (2..2 + read_names.len()).collect();
        let matcher = match key {
            Some(k) => Matcher::Key {
                keys: converter(&k)?,
                values: converter(&data_cols)?,
                key: k,
                data: data_cols,
            },
            None => Matcher::RowId,
        };
        let mut fields: Vec<Arc<Field>> = vec![
            change_field(CHANGE_TYPE, DataType::Utf8, Some(CHANGE_TYPE_FIELD_ID)),
            change_field(
                COMMIT_SNAPSHOT_ID,
                DataType::Int64,
                Some(COMMIT_SNAPSHOT_ID_FIELD_ID),
            ),
            change_field(CHANGE_SEQUENCE_NUMBER, DataType::Int64, None),
            change_field(
                CHANGE_ORDINAL,
                DataType::Int32,
                Some(CHANGE_ORDINAL_FIELD_ID),
            ),
        ];
        fields.extend(out_cols.iter().map(|i| read_schema.fields()[*i].clone()));
        let concurrency = self.concurrency.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
        });
        // Matched by key, a row's lineage can change without a change (its file got
        // `first_row_id` at the upgrade to version 3, or an upsert kept its values); the net
        // view shows the lineage read at `to`, so it follows those too.
        let follow_lineage = self.net && matches!(matcher, Matcher::Key { .. });
        Ok(ChangeFeed {
            table: table.clone(),
            from,
            commits,
            pos_col: 2 + read_names.len(),
            scan,
            out_cols,
            schema: Arc::new(ArrowSchema::new(fields)),
            matcher,
            net: self.net,
            follow_lineage,
            concurrency,
        })
    }
}

fn change_field(name: &str, ty: DataType, id: Option<i32>) -> Arc<Field> {
    let f = Field::new(name, ty, false);
    Arc::new(match id {
        Some(id) => f.with_metadata(HashMap::from([(
            crate::spec::arrow_schema::FIELD_ID_KEY.to_string(),
            id.to_string(),
        )])),
        None => f,
    })
}

/// How before and after rows are matched.
enum Matcher {
    /// By `_row_id`; an update is another `_last_updated_sequence_number`.
    RowId,
    /// By key columns; an update is a key whose data columns changed.
    Key {
        key: Vec<usize>,
        data: Vec<usize>,
        keys: RowConverter,
        values: RowConverter,
    },
}

/// The changes of a range of commits.
pub struct ChangeFeed {
    table: Table,
    /// The start of the range; `None`: before the first snapshot.
    from: Option<i64>,
    commits: Vec<Snapshot>,
    /// Reads any snapshot's tasks in `to`'s schema: `_row_id`, `_last_updated_sequence_number`,
    /// every column, `_pos`.
    scan: Scan,
    pos_col: usize,
    /// Columns of the read kept in the output, in order.
    out_cols: Vec<usize>,
    schema: SchemaRef,
    matcher: Matcher,
    net: bool,
    /// Whether rows whose lineage changed without a change are collected (net view by key).
    follow_lineage: bool,
    concurrency: usize,
}

/// An output row: (batch or side, row, change type).
type Pick = (usize, usize, ChangeType);

/// The rows a commit's read jobs give: before (live in the parent), after (live in the
/// commit), and rows whose lineage the commit may have changed without changing them (live in
/// the commit, in a data file the parent also holds; read only with `follow_lineage`).
#[derive(Default)]
struct Sides {
    before: Vec<RecordBatch>,
    after: Vec<RecordBatch>,
    relineaged: Vec<RecordBatch>,
}

impl ChangeFeed {
    /// Starts building a change feed.
    pub fn builder() -> ChangeFeedBuilder {
        ChangeFeedBuilder::default()
    }

    /// The Arrow schema of every batch: the change columns, `_row_id`,
    /// `_last_updated_sequence_number`, then the columns.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The commits of the range, oldest first.
    pub fn commits(&self) -> &[Snapshot] {
        &self.commits
    }

    /// Every change: one batch per commit, or with `net` one batch of net changes.
    pub async fn batches(&self) -> crate::Result<Vec<RecordBatch>> {
        let mut out = Vec::with_capacity(self.commits.len());
        let mut lineage = Vec::with_capacity(self.commits.len());
        for i in 0..self.commits.len() {
            crate::cancel::check(|| format!("reading the changes of commit {i}"))?;
            let (changes, relineaged) = self.commit_rows(i).await?;
            out.push(changes);
            lineage.push(relineaged);
        }
        if self.net {
            return Ok(vec![self.net_changes(&out, &lineage)?]);
        }
        Ok(out)
    }

    /// The changes of the commit at `ordinal` in the range, ordered by `_row_id` (or key),
    /// each update's before image first.
    pub async fn commit_changes(&self, ordinal: usize) -> crate::Result<RecordBatch> {
        Ok(self.commit_rows(ordinal).await?.0)
    }

    /// The changes of the commit at `ordinal`, and (with `follow_lineage`, else empty) the
    /// rows whose lineage it changed without changing them, as `update_after` rows.
    async fn commit_rows(&self, ordinal: usize) -> crate::Result<(RecordBatch, RecordBatch)> {
        let commit = &self.commits[ordinal];
        let parent_id = match ordinal {
            0 => self.from,
            _ => Some(self.commits[ordinal - 1].snapshot_id),
        };
        let m = self.table.metadata();
        let parent = parent_id.map(|id| m.snapshot(id).expect("range checked"));
        let sides = self.sides(parent, commit).await?;
        let read_schema = self.scan.schema();
        let before = concat_batches(&read_schema, &sides.before).map_err(arrow_err)?;
        let after = concat_batches(&read_schema, &sides.after).map_err(arrow_err)?;
        let relineaged = concat_batches(&read_schema, &sides.relineaged).map_err(arrow_err)?;
        // Before the first snapshot there are no rows (and no snapshot id to name).
        let parent_id = parent_id.unwrap_or_default();
        let b = self.idents(&before, parent_id)?;
        let a = self.idents(&after, commit.snapshot_id)?;
        let by_ident =
            |ids: &[Box<[u8]>], snapshot: i64| -> crate::Result<HashMap<Box<[u8]>, usize>> {
                let mut map = HashMap::with_capacity(ids.len());
                for (i, k) in ids.iter().enumerate() {
                    if map.insert(k.clone(), i).is_some() {
                        return Err(self.duplicate(k, snapshot));
                    }
                }
                Ok(map)
            };
        let bmap = by_ident(&b, parent_id)?;
        let amap = by_ident(&a, commit.snapshot_id)?;
        let changed = self.changed(&before, &after)?;
        let mut keys: Vec<&Box<[u8]>> = bmap.keys().chain(amap.keys()).collect();
        keys.sort();
        keys.dedup();
        let mut picks: Vec<Pick> = Vec::new();
        // Rows on both sides that did not change, whose lineage did (followed by key only).
        let mut lineage: Vec<Pick> = Vec::new();
        let lineage_changed = self.lineage_changed(&before, &after);
        for k in keys {
            match (bmap.get(k), amap.get(k)) {
                (Some(&i), None) => picks.push((0, i, ChangeType::Delete)),
                (None, Some(&j)) => picks.push((1, j, ChangeType::Insert)),
                (Some(&i), Some(&j)) if changed(i, j) => {
                    picks.push((0, i, ChangeType::UpdateBefore));
                    picks.push((1, j, ChangeType::UpdateAfter));
                }
                (Some(&i), Some(&j)) if self.follow_lineage && lineage_changed(i, j) => {
                    lineage.push((1, j, ChangeType::UpdateAfter));
                }
                _ => {}
            }
        }
        lineage.extend((0..relineaged.num_rows()).map(|r| (2, r, ChangeType::UpdateAfter)));
        let sides = [&before, &after, &relineaged];
        Ok((
            self.emit(&sides, &picks, commit, ordinal)?,
            self.emit(&sides, &lineage, commit, ordinal)?,
        ))
    }

    /// Whether before row `i` and after row `j` have other lineage (`_row_id` or
    /// `_last_updated_sequence_number`, null or not).
    fn lineage_changed<'a>(
        &self,
        before: &'a RecordBatch,
        after: &'a RecordBatch,
    ) -> impl Fn(usize, usize) -> bool + 'a {
        let col = |b: &'a RecordBatch, c: usize| {
            b.column(c)
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("lineage column is Int64")
        };
        let (ib, sb) = (col(before, 0), col(before, 1));
        let (ia, sa) = (col(after, 0), col(after, 1));
        let value = |a: &Int64Array, i: usize| a.is_valid(i).then(|| a.value(i));
        move |i, j| value(ib, i) != value(ia, j) || value(sb, i) != value(sa, j)
    }

    /// Whether before row `i` and after row `j` (same identity) differ.
    fn changed<'a>(
        &'a self,
        before: &'a RecordBatch,
        after: &'a RecordBatch,
    ) -> crate::Result<Box<dyn Fn(usize, usize) -> bool + 'a>> {
        match &self.matcher {
            Matcher::RowId => {
                let seq = |b: &'a RecordBatch| {
                    b.column(1)
                        .as_any()
                        .downcast_ref::<Int64Array>()
                        .expect("lineage column is Int64")
                };
                let (sb, sa) = (seq(before), seq(after));
                Ok(Box::new(move |i, j| {
                    sb.is_null(i) != sa.is_null(j) || sb.value(i) != sa.value(j)
                }))
            }
            Matcher::Key { data, values, .. } => {
                let rows = |b: &RecordBatch| {
                    let cols: Vec<ArrayRef> = data.iter().map(|i| b.column(*i).clone()).collect();
                    values.convert_columns(&cols).map_err(arrow_err)
                };
                let (rb, ra) = (rows(before)?, rows(after)?);
                Ok(Box::new(move |i, j| rb.row(i) != ra.row(j)))
            }
        }
    }

    /// The identity of every row of `batch` (read from `snapshot`): its `_row_id`, or its key.
    fn idents(&self, batch: &RecordBatch, snapshot: i64) -> crate::Result<Vec<Box<[u8]>>> {
        match &self.matcher {
            Matcher::RowId => {
                let ids = batch
                    .column(0)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .expect("_row_id is Int64");
                if ids.null_count() > 0 {
                    return Err(crate::Error::InvalidArgument(format!(
                        "rows of snapshot {snapshot} have no row lineage (_row_id is null: the \
                         table was format version 2 then, or its files predate the upgrade to \
                         version 3), so they cannot be matched by _row_id; give --key COLUMNS \
                         to match rows by those columns"
                    )));
                }
                Ok(ids.values().iter().map(|v| row_id_key(*v)).collect())
            }
            Matcher::Key { key, keys, .. } => {
                let cols: Vec<ArrayRef> = key.iter().map(|i| batch.column(*i).clone()).collect();
                let rows = keys.convert_columns(&cols).map_err(arrow_err)?;
                Ok(rows.iter().map(|r| r.as_ref().into()).collect())
            }
        }
    }

    fn duplicate(&self, ident: &[u8], snapshot: i64) -> crate::Error {
        match &self.matcher {
            Matcher::RowId => crate::Error::metadata(
                self.table.metadata_file(),
                format!(
                    "_row_id {} is read twice in snapshot {snapshot}; row ids are unique in a \
                     snapshot (spec: Row Lineage)",
                    row_id_of(ident)
                ),
            ),
            Matcher::Key { .. } => crate::Error::InvalidArgument(format!(
                "the key is not unique: two rows of snapshot {snapshot} have the same key, so \
                 changes cannot be matched by it"
            )),
        }
    }

    /// The output rows `picks` (side, row, type) of one commit.
    fn emit(
        &self,
        sides: &[&RecordBatch],
        picks: &[Pick],
        commit: &Snapshot,
        ordinal: usize,
    ) -> crate::Result<RecordBatch> {
        let n = picks.len();
        let idx: Vec<(usize, usize)> = picks.iter().map(|(s, r, _)| (*s, *r)).collect();
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(
                picks.iter().map(|(_, _, t)| t.as_str()),
            )),
            Arc::new(Int64Array::from_value(commit.snapshot_id, n)),
            Arc::new(Int64Array::from_value(commit.sequence_number, n)),
            Arc::new(Int32Array::from_value(ordinal as i32, n)),
        ];
        for c in &self.out_cols {
            let arrays: Vec<&dyn Array> = sides.iter().map(|s| s.column(*c).as_ref()).collect();
            cols.push(interleave(&arrays, &idx).map_err(arrow_err)?);
        }
        RecordBatch::try_new(self.schema.clone(), cols).map_err(arrow_err)
    }

    /// One row per identity over the per-commit `batches`: its last state (`insert` when it
    /// did not exist at `from`, else `update_after`), with its lineage as read at `to`; or
    /// `delete` when it is gone at `to`, with the row as it was at `from` (what was deleted),
    /// named by the commit that deleted it; nothing for a row inserted and deleted inside the
    /// range. `lineage[i]` are the rows whose lineage commit `i` changed without a change.
    fn net_changes(
        &self,
        batches: &[RecordBatch],
        lineage: &[RecordBatch],
    ) -> crate::Result<RecordBatch> {
        // identity -> (its first change, its last change that is not a before image).
        let mut rows: BTreeMap<Box<[u8]>, (Pick, Pick)> = BTreeMap::new();
        for (bi, b) in batches.iter().enumerate() {
            let ids = self.output_idents(b)?;
            let types = b
                .column(0)
                .as_any()
                .downcast_ref::<StringArray>()
                .expect("_change_type is Utf8");
            for (ri, id) in ids.into_iter().enumerate() {
                let t = match types.value(ri) {
                    "insert" => ChangeType::Insert,
                    "delete" => ChangeType::Delete,
                    "update_before" => ChangeType::UpdateBefore,
                    _ => ChangeType::UpdateAfter,
                };
                let entry = rows.entry(id).or_insert(((bi, ri, t), (bi, ri, t)));
                if t != ChangeType::UpdateBefore {
                    entry.1 = (bi, ri, t);
                }
            }
        }
        // identity -> its latest lineage-only change (batch in `lineage`, row).
        let mut relineaged: HashMap<Box<[u8]>, (usize, usize)> = HashMap::new();
        for (bi, b) in lineage.iter().enumerate() {
            for (ri, id) in self.output_idents(b)?.into_iter().enumerate() {
                relineaged.insert(id, (bi, ri));
            }
        }
        let n = batches.len();
        // Per output row, where its change columns, lineage and values come from (indices
        // into `batches` then `lineage`).
        let (mut change, mut lineage_of, mut values) = (Vec::new(), Vec::new(), Vec::new());
        let mut types = Vec::new();
        for (id, ((fb, fr, first), (lb, lr, last))) in rows {
            let existed = matches!(first, ChangeType::Delete | ChangeType::UpdateBefore);
            let (t, from) = match (last, existed) {
                (ChangeType::Delete, false) => continue,
                (ChangeType::Delete, true) => (ChangeType::Delete, (fb, fr)),
                (_, true) => (ChangeType::UpdateAfter, (lb, lr)),
                (_, false) => (ChangeType::Insert, (lb, lr)),
            };
            let lin = match relineaged.get(&id) {
                Some(&(rb, rr)) if t != ChangeType::Delete && rb > lb => (n + rb, rr),
                _ => from,
            };
            change.push((lb, lr));
            lineage_of.push(lin);
            values.push(from);
            types.push(t.as_str());
        }
        let arrays = |c: usize| -> Vec<&dyn Array> {
            batches
                .iter()
                .chain(lineage)
                .map(|b| b.column(c).as_ref())
                .collect()
        };
        let mut cols = Vec::with_capacity(self.schema.fields().len());
        cols.push(Arc::new(StringArray::from(types)) as ArrayRef);
        for c in 1..self.schema.fields().len() {
            // Change columns (type, commit, sequence number, ordinal), then `_row_id` and
            // `_last_updated_sequence_number`, then the table's columns.
            let idx = match c {
                ..=3 => &change,
                4 | 5 => &lineage_of,
                _ => &values,
            };
            cols.push(interleave(&arrays(c), idx).map_err(arrow_err)?);
        }
        RecordBatch::try_new(self.schema.clone(), cols).map_err(arrow_err)
    }

    /// Identities of output rows (for the net view): `_row_id`, or the key columns, which
    /// are read in every output even when `--columns` leaves them out.
    fn output_idents(&self, b: &RecordBatch) -> crate::Result<Vec<Box<[u8]>>> {
        match &self.matcher {
            Matcher::RowId => {
                let ids = b
                    .column(4)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .expect("_row_id is Int64");
                Ok(ids.values().iter().map(|v| row_id_key(*v)).collect())
            }
            Matcher::Key { key, keys, .. } => {
                let cols = key
                    .iter()
                    .map(|k| {
                        self.out_cols
                            .iter()
                            .position(|c| c == k)
                            .map(|p| b.column(4 + p).clone())
                            .ok_or_else(|| {
                                crate::Error::InvalidArgument(
                                    "--net with --key needs the key columns among --columns".into(),
                                )
                            })
                    })
                    .collect::<crate::Result<Vec<_>>>()?;
                let rows = keys.convert_columns(&cols).map_err(arrow_err)?;
                Ok(rows.iter().map(|r| r.as_ref().into()).collect())
            }
        }
    }

    /// The rows live in `parent` that `commit` removed (before) and the rows live in
    /// `commit` that were not in `parent` (after), reading only what the commit touched; no
    /// `parent`: the commit is the table's first snapshot, and every row it holds is after.
    async fn sides(&self, parent: Option<&Snapshot>, commit: &Snapshot) -> crate::Result<Sides> {
        let (p_tasks, c_tasks) = futures::try_join!(
            async {
                match parent {
                    Some(p) => plan_files(&self.table, p).await,
                    None => Ok(Vec::new()),
                }
            },
            plan_files(&self.table, commit)
        )?;
        let mut c_by_path: HashMap<String, FileScanTask> = c_tasks
            .into_iter()
            .map(|t| (t.data_file.file_path.clone(), t))
            .collect();
        let mut jobs = Vec::new();
        for p in p_tasks {
            let Some(c) = c_by_path.remove(&p.data_file.file_path) else {
                jobs.push(Job::Removed(p));
                continue;
            };
            if self.follow_lineage && p.first_row_id != c.first_row_id {
                // The file's rows got other row ids (at the upgrade to version 3, when its
                // manifest is given a `first_row_id`), without changing.
                jobs.push(Job::Relineaged(c.clone()));
            }
            if !same_deletes(&p, &c) {
                jobs.push(Job::Both(p, c));
            }
        }
        jobs.extend(c_by_path.into_values().map(Job::Added));
        // Files in both with other deletion vectors or position deletes: their deleted
        // positions first (small), then the rows they name, in windows read in parallel.
        let table = &self.table;
        let jobs: Vec<Vec<Job>> = futures::stream::iter(jobs)
            .map(|job| async move {
                match job {
                    Job::Both(p, c) if same_equality_deletes(&p, &c) => {
                        position_jobs(table, p, c).await
                    }
                    other => Ok(vec![other]),
                }
            })
            .buffered(self.concurrency)
            .try_collect()
            .await?;
        let pos_col = self.pos_col;
        let results: Vec<Sides> = futures::stream::iter(jobs.into_iter().flatten())
            .map(|job| {
                let scan = self.scan.clone();
                tokio::spawn(async move { job.run(&scan, pos_col).await })
            })
            .buffered(self.concurrency)
            .map(|joined| {
                joined.map_err(|e| crate::Error::Unsupported(format!("change feed reader: {e}")))?
            })
            .try_collect()
            .await?;
        let mut all = Sides::default();
        for r in results {
            all.before.extend(r.before);
            all.after.extend(r.after);
            all.relineaged.extend(r.relineaged);
        }
        Ok(all)
    }
}

/// Positions per read job: a window this long of a data file's positions is read by one
/// job, so the positions of one large file are read by several workers at once (each
/// decodes only the pages of its window).
const POSITION_WINDOW: u64 = 1 << 20;

/// What to read of one data file for a commit.
enum Job {
    /// In the parent only: its live rows there are the before side.
    Removed(FileScanTask),
    /// In the commit only: its live rows are the after side.
    Added(FileScanTask),
    /// In both with other deletes (parent's task, commit's task); read whole and compared
    /// by position, which is right for any change of deletes and needed when equality
    /// deletes changed.
    Both(FileScanTask, FileScanTask),
    /// Rows at these positions of the parent's task were live there and are deleted in the
    /// commit (before side).
    Deleted(FileScanTask, RoaringTreemap),
    /// Rows at these positions of the commit's task were deleted in the parent and are live
    /// again in the commit (a rewrite of deletes; after side).
    Revived(FileScanTask, RoaringTreemap),
    /// In both, with another `first_row_id` in the commit: its live rows there may have
    /// other lineage without having changed.
    Relineaged(FileScanTask),
}

/// The read jobs of a data file live on both sides with the same equality deletes: the
/// positions its deletes newly mark (before) and no longer mark (after), in windows of
/// [`POSITION_WINDOW`] positions.
async fn position_jobs(table: &Table, p: FileScanTask, c: FileScanTask) -> crate::Result<Vec<Job>> {
    let empty = RoaringTreemap::new();
    let dp = deleted_positions(table, &p).await?;
    let dc = deleted_positions(table, &c).await?;
    let dp = dp.as_deref().unwrap_or(&empty);
    let dc = dc.as_deref().unwrap_or(&empty);
    let mut jobs: Vec<Job> = windows(&(dc - dp))
        .into_iter()
        .map(|w| Job::Deleted(p.clone(), w))
        .collect();
    jobs.extend(
        windows(&(dp - dc))
            .into_iter()
            .map(|w| Job::Revived(c.clone(), w)),
    );
    Ok(jobs)
}

/// `positions` split into runs of at most [`POSITION_WINDOW`] consecutive positions (empty
/// windows left out), in order.
fn windows(positions: &RoaringTreemap) -> Vec<RoaringTreemap> {
    let mut out: Vec<RoaringTreemap> = Vec::new();
    let mut current = u64::MAX;
    for pos in positions.iter() {
        let w = pos / POSITION_WINDOW;
        if w != current || out.is_empty() {
            out.push(RoaringTreemap::new());
            current = w;
        }
        if let Some(last) = out.last_mut() {
            last.insert(pos);
        }
    }
    out
}

impl Job {
    async fn run(self, scan: &Scan, pos_col: usize) -> crate::Result<Sides> {
        let before = |before| Sides {
            before,
            ..Sides::default()
        };
        let after = |after| Sides {
            after,
            ..Sides::default()
        };
        match self {
            Job::Removed(t) => Ok(before(scan.read_whole(t).await?)),
            Job::Added(t) => Ok(after(scan.read_whole(t).await?)),
            Job::Deleted(t, positions) => Ok(before(scan.read_positions(t, &positions).await?)),
            Job::Revived(t, positions) => Ok(after(scan.read_positions(t, &positions).await?)),
            Job::Relineaged(t) => Ok(Sides {
                relineaged: scan.read_whole(t).await?,
                ..Sides::default()
            }),
            Job::Both(p, c) => {
                // Equality deletes changed (`sides` turned the others into position jobs):
                // which rows they hit is only known by reading both whole.
                let before = scan.read_whole(p).await?;
                let after = scan.read_whole(c).await?;
                let live = |bs: &[RecordBatch]| -> HashSet<i64> {
                    bs.iter()
                        .flat_map(|b| positions(b, pos_col).values().to_vec())
                        .collect()
                };
                let (lp, lc) = (live(&before), live(&after));
                let only = |bs: Vec<RecordBatch>, other: &HashSet<i64>| {
                    bs.into_iter()
                        .map(|b| {
                            let keep: BooleanArray = positions(&b, pos_col)
                                .values()
                                .iter()
                                .map(|p| Some(!other.contains(p)))
                                .collect();
                            filter_record_batch(&b, &keep).map_err(arrow_err)
                        })
                        .collect::<crate::Result<Vec<_>>>()
                };
                Ok(Sides {
                    before: only(before, &lc)?,
                    after: only(after, &lp)?,
                    relineaged: Vec::new(),
                })
            }
        }
    }
}

fn positions(b: &RecordBatch, col: usize) -> &Int64Array {
    b.column(col)
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("_pos is Int64")
}

/// Whether both tasks of one data file apply the same delete files.
fn same_deletes(p: &FileScanTask, c: &FileScanTask) -> bool {
    let dv = |t: &FileScanTask| {
        t.deletion_vector.as_ref().map(|d| {
            (
                d.file.file_path.clone(),
                d.file.content_offset,
                d.file.content_size_in_bytes,
            )
        })
    };
    dv(p) == dv(c)
        && sorted_paths(&p.position_deletes) == sorted_paths(&c.position_deletes)
        && same_equality_deletes(p, c)
}

fn same_equality_deletes(p: &FileScanTask, c: &FileScanTask) -> bool {
    sorted_paths(&p.equality_deletes) == sorted_paths(&c.equality_deletes)
}

fn sorted_paths(v: &[crate::scan::task::DeleteFileRef]) -> Vec<&str> {
    let mut p: Vec<&str> = v.iter().map(|d| d.file.file_path.as_str()).collect();
    p.sort_unstable();
    p
}

/// A row id as bytes that sort as the numbers do.
fn row_id_key(id: i64) -> Box<[u8]> {
    ((id as u64) ^ (1 << 63)).to_be_bytes().into()
}

fn row_id_of(key: &[u8]) -> i64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&key[..8]);
    (u64::from_be_bytes(b) ^ (1 << 63)) as i64
}

fn arrow_err(e: arrow::error::ArrowError) -> crate::Error {
    crate::Error::Unsupported(format!("change feed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_id_keys_sort_as_numbers() {
        let mut ids = vec![5i64, -3, 0, i64::MAX, i64::MIN, 42];
        let mut keys: Vec<Box<[u8]>> = ids.iter().map(|i| row_id_key(*i)).collect();
        keys.sort();
        ids.sort();
        let back: Vec<i64> = keys.iter().map(|k| row_id_of(k)).collect();
        assert_eq!(back, ids);
    }

    #[test]
    fn position_windows_partition_the_positions_in_order() {
        let w = POSITION_WINDOW;
        let all: RoaringTreemap = [0, 5, w - 1, w, w + 3, 5 * w + 7, 1 << 40]
            .into_iter()
            .collect();
        let got: Vec<Vec<u64>> = windows(&all).iter().map(|b| b.iter().collect()).collect();
        assert_eq!(
            got,
            vec![
                vec![0, 5, w - 1],
                vec![w, w + 3],
                vec![5 * w + 7],
                vec![1 << 40]
            ]
        );
        assert!(windows(&RoaringTreemap::new()).is_empty());
    }
}
