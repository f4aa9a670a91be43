//! Scans: choose a snapshot and columns, plan file tasks, and stream live rows as Arrow
//! record batches with bounded memory.

pub mod adapt;
pub mod arrow_schema;
pub mod lineage;
pub mod metadata_columns;
pub mod page_index;
pub mod plan;
pub mod positions;
pub mod preload;
pub mod prune;
pub mod read;
pub mod split;

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use futures::stream::BoxStream;
use futures::StreamExt;
use tokio::sync::mpsc;

use crate::spec::name_mapping::NameMapping;
use crate::spec::{NestedField, Schema, Snapshot};
use crate::table::{SnapshotSelector, Table};
pub use plan::FileScanTask;
use read::{ReadContext, TaskReader, DEFAULT_BATCH_SIZE};
use split::TaskSplit;

/// Builds a [`Scan`].
#[derive(Debug, Clone, Default)]
pub struct ScanBuilder {
    selector: SnapshotSelector,
    columns: Option<Vec<String>>,
    lineage: bool,
    batch_size: Option<usize>,
    concurrency: Option<usize>,
    row_group_filter: Vec<prune::Predicate>,
}

impl ScanBuilder {
    /// Skip the Parquet row groups whose column statistics prove that no row satisfies every
    /// predicate (file pruning is separate: [`prune::Pruner::prune`]). The predicates only
    /// decide what is read: rows that do not satisfy them may still be returned.
    pub fn row_group_filter(mut self, predicates: Vec<prune::Predicate>) -> Self {
        self.row_group_filter = predicates;
        self
    }

    /// Which snapshot to read (default: current snapshot of `main`).
    pub fn snapshot(mut self, sel: SnapshotSelector) -> Self {
        self.selector = sel;
        self
    }

    /// Read only these top-level columns, in this order (default: all, in schema order). The
    /// metadata columns `_file`, `_pos`, `_spec_id` and `_partition` can be named too (see
    /// [`metadata_columns`]); a table column of the same name wins.
    pub fn columns(mut self, names: Vec<String>) -> Self {
        self.columns = Some(names);
        self
    }

    /// Put `_row_id` and `_last_updated_sequence_number` first.
    pub fn lineage(mut self, on: bool) -> Self {
        self.lineage = on;
        self
    }

    /// Rows per batch (default 8192).
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = Some(n.max(1));
        self
    }

    /// How many data files are read at once (default: available cores).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = Some(n.max(1));
        self
    }

    /// Resolves the snapshot and the projection. Errors: no such snapshot or ref, unknown column,
    /// invalid name mapping.
    pub fn build(self, table: &Table) -> crate::Result<Scan> {
        if let Some(names) = &self.columns {
            let mut seen = std::collections::HashSet::new();
            if let Some(dup) = names.iter().find(|n| !seen.insert(n.as_str())) {
                return Err(crate::Error::InvalidArgument(format!(
                    "column {dup:?} is asked for twice; each column can be projected once"
                )));
            }
        }
        let (snapshot, schema) = table.resolve(&self.selector)?;
        let (snapshot, schema) = (snapshot.cloned(), schema.clone());
        let fields: Vec<NestedField> = match &self.columns {
            None => schema.columns().to_vec(),
            Some(names) => names
                .iter()
                .map(|n| {
                    let meta = || metadata_columns::metadata_column(table.metadata(), n);
                    schema.column(n).cloned().or_else(meta).ok_or_else(|| {
                        crate::Error::InvalidArgument(format!(
                            "no column {n:?} in schema {} (columns: {})",
                            schema.schema_id,
                            schema
                                .columns()
                                .iter()
                                .map(|f| f.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })
                })
                .collect::<crate::Result<_>>()?,
        };
        let m = table.metadata();
        let mut fields_by_id = HashMap::new();
        let mut types_by_id = HashMap::new();
        // Older schemas first, so the reading schema wins for ids it has.
        for s in m.schemas.iter().chain(std::iter::once(&schema)) {
            for f in s.columns() {
                fields_by_id.insert(f.id, f.clone());
            }
            types_by_id.extend(s.types_by_id());
        }
        let name_mapping = m
            .name_mapping()
            .map(|j| {
                NameMapping::parse(j).map_err(|e| crate::Error::metadata(table.metadata_file(), e))
            })
            .transpose()?;
        let out_schema = arrow_schema::scan_schema(&fields, self.lineage);
        let concurrency = self.concurrency.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
        });
        let row_group_filter = (!self.row_group_filter.is_empty())
            .then(|| prune::Pruner::new(m, &schema, self.row_group_filter.clone()))
            .filter(|p| !p.is_empty());
        Ok(Scan {
            table: table.clone(),
            snapshot,
            schema,
            ctx: Arc::new(ReadContext {
                fields,
                lineage: self.lineage,
                schema: out_schema,
                fields_by_id,
                types_by_id,
                name_mapping,
                batch_size: self.batch_size.unwrap_or(DEFAULT_BATCH_SIZE),
                row_group_filter,
            }),
            concurrency,
        })
    }
}

/// A planned read of one snapshot.
#[derive(Clone)]
pub struct Scan {
    table: Table,
    snapshot: Option<Snapshot>,
    schema: Schema,
    ctx: Arc<ReadContext>,
    concurrency: usize,
}

impl Scan {
    /// Starts building a scan.
    pub fn builder() -> ScanBuilder {
        ScanBuilder::default()
    }

    /// The snapshot read (`None` for a table without snapshots: no rows).
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    /// The Iceberg schema the snapshot reads with.
    pub fn table_schema(&self) -> &Schema {
        &self.schema
    }

    /// The Arrow schema of every batch this scan yields.
    pub fn schema(&self) -> SchemaRef {
        self.ctx.schema.clone()
    }

    /// The table being read.
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// One task per live data file of the snapshot, with the deletes that apply.
    pub async fn plan_files(&self) -> crate::Result<Vec<FileScanTask>> {
        match &self.snapshot {
            Some(s) => plan::plan_files(&self.table, s).await,
            None => Ok(Vec::new()),
        }
    }

    /// Streams the live rows of one task.
    pub fn read_task(&self, task: FileScanTask) -> BoxStream<'static, crate::Result<RecordBatch>> {
        self.read_split(TaskSplit { task, rows: None })
    }

    /// Streams the live rows of one split of a task (its positions `split.rows`).
    pub fn read_split(&self, split: TaskSplit) -> BoxStream<'static, crate::Result<RecordBatch>> {
        let table = self.table.clone();
        let ctx = self.ctx.clone();
        let TaskSplit { task, rows } = split;
        futures::stream::once(async move { TaskReader::open(&table, task, rows, ctx).await })
            .flat_map(|opened| match opened {
                Err(e) => futures::stream::once(async { Err(e) }).boxed(),
                Ok(reader) => futures::stream::unfold(Some(reader), |state| async move {
                    let mut reader = state?;
                    match reader.next_batch().await {
                        Ok(Some(b)) => Some((Ok(b), Some(reader))),
                        Ok(None) => None,
                        Err(e) => Some((Err(e), None)),
                    }
                })
                .boxed(),
            })
            .boxed()
    }

    /// Streams the live rows of `tasks` in order, reading up to `concurrency` files at once on
    /// the tokio runtime; at most two batches per file are buffered. Must be polled inside a
    /// tokio runtime. Stops at the first error.
    pub fn read_tasks(
        &self,
        tasks: Vec<FileScanTask>,
    ) -> BoxStream<'static, crate::Result<RecordBatch>> {
        self.read_splits(
            tasks
                .into_iter()
                .map(|task| TaskSplit { task, rows: None })
                .collect(),
        )
    }

    /// Like [`Scan::read_tasks`], for splits of tasks ([`split`]).
    pub fn read_splits(
        &self,
        splits: Vec<TaskSplit>,
    ) -> BoxStream<'static, crate::Result<RecordBatch>> {
        let scan = self.clone();
        let per_file = futures::stream::iter(splits).map(move |split| {
            let (tx, rx) = mpsc::channel::<crate::Result<RecordBatch>>(2);
            let s = scan.clone();
            let handle = tokio::spawn(async move {
                let path = split.task.data_file.file_path.clone();
                let forward = {
                    let tx = tx.clone();
                    async move {
                        let mut st = s.read_split(split);
                        while let Some(item) = st.next().await {
                            let stop = item.is_err();
                            if tx.send(item).await.is_err() || stop {
                                break;
                            }
                        }
                    }
                };
                // A panic while reading must not look like the end of the file (rows would be
                // silently missing): it becomes this file's error.
                if let Err(what) = crate::guard::guarded(forward).await {
                    let _ = tx
                        .send(Err(crate::Error::data_file(
                            &path,
                            format!("reader panicked: {what}"),
                        )))
                        .await;
                }
            });
            futures::future::ready(ReceiverStream {
                rx,
                _handle: AbortOnDrop(handle),
            })
        });
        let mut failed = false;
        per_file
            .buffered(self.concurrency)
            .flatten()
            .take_while(move |item| {
                let go = !failed;
                failed |= item.is_err();
                futures::future::ready(go)
            })
            .boxed()
    }

    /// Plans and streams every live row of the snapshot.
    pub async fn stream(&self) -> crate::Result<BoxStream<'static, crate::Result<RecordBatch>>> {
        let tasks = self.plan_files().await?;
        Ok(self.read_tasks(tasks))
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

struct ReceiverStream {
    rx: mpsc::Receiver<crate::Result<RecordBatch>>,
    _handle: AbortOnDrop,
}

impl futures::Stream for ReceiverStream {
    type Item = crate::Result<RecordBatch>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}
