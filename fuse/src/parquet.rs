//! Parquet views (`data.parquet`, `files/*.parquet`, `partitions/…/data.parquet`): the core's
//! [`ParquetView`] says which bytes come from the data files and which are fresh; this module
//! serves them. Fresh parts (lineage chunks of copied row groups, re-encoded row groups) live
//! in the [`FreshStore`] on local disk, bounded in size; a part evicted is encoded again when
//! read, and must come out byte for byte as before (length and CRC checked).

use std::sync::Arc;

use bytes::Bytes;
use icefloe_core::scan::parquet_view::{Fresh, Group, Layout, ParquetView};
use icefloe_core::FileScanTask;
use tokio::runtime::Handle;

use crate::built::{Built, ViewSize};
use crate::error::{FuseError, Result};
use crate::fresh::{FreshKey, FreshStore};
use crate::plan::SnapshotPlan;
use crate::tree::ViewKey;

/// One Parquet view with its layout.
pub struct PqView {
    name: String,
    plan: Arc<SnapshotPlan>,
    view: ParquetView,
    /// The view's tasks, and each one's index in the plan.
    tasks: Vec<FileScanTask>,
    plan_tasks: Vec<usize>,
    groups: Vec<(Group, Fresh)>,
    layout: Layout,
    store: Arc<FreshStore>,
    render: Handle,
}

impl PqView {
    /// The exact size in bytes.
    pub fn size(&self) -> u64 {
        self.layout.len
    }

    fn key(&self, g: usize) -> FreshKey {
        let group = &self.groups[g].0;
        FreshKey {
            table: self.plan.table_id,
            snapshot: self.plan.snapshot.snapshot_id,
            schema: self.plan.scan.table_schema().schema_id,
            task: self.plan_tasks[group.task],
            row_group: group.row_group,
        }
    }

    /// Reads up to `size` bytes at `offset`: only the pieces covering them (a read anywhere
    /// in the file touches only its row group's parts).
    pub async fn read(self: &Arc<Self>, offset: u64, size: u32) -> Result<Vec<u8>> {
        let end = self.layout.len.min(offset.saturating_add(u64::from(size)));
        if offset >= end {
            return Ok(Vec::new());
        }
        let this = self.clone();
        let fresh = move |g: usize, off: u64, n: u64| {
            let this = this.clone();
            async move {
                this.fresh(g, off, n)
                    .await
                    .map_err(|e| icefloe_core::Error::Output(e.to_string()))
            }
        };
        Ok(self
            .layout
            .read(&self.plan.scan, &self.tasks, offset..end, fresh)
            .await?)
    }

    /// Bytes of fresh part `g`, encoded again (on the render pool) if it was evicted.
    async fn fresh(self: &Arc<Self>, g: usize, off: u64, n: u64) -> Result<Bytes> {
        let key = self.key(g);
        if let Some(b) = self.store.read(&key, off, n)? {
            return Ok(b);
        }
        let this = self.clone();
        self.render
            .spawn(async move { this.make(g).await })
            .await??;
        self.store
            .read(&key, off, n)?
            .ok_or_else(|| FuseError::Inconsistent {
                view: self.name.clone(),
                reason: format!("fresh part {g} evicted while being read"),
            })
    }

    /// Encodes part `g` again into the store, checking it is the one first sized.
    async fn make(&self, g: usize) -> Result<()> {
        let key = self.key(g);
        let _guard = self.store.making(&key).await;
        if self.store.contains(&key) {
            return Ok(());
        }
        let (group, first) = &self.groups[g];
        let file = self.store.create(&key)?;
        let (file, fresh) = self
            .view
            .encode(&self.tasks[group.task], group, file)
            .await?;
        if fresh.len != first.len || fresh.crc != first.crc {
            self.store.discard(file);
            return Err(FuseError::Inconsistent {
                view: self.name.clone(),
                reason: format!(
                    "row group {} of {} encoded to other bytes than when sized",
                    group.row_group, self.tasks[group.task].data_file.file_path
                ),
            });
        }
        tracing::debug!("{}: part {g} encoded again after eviction", self.name);
        self.store.insert(key, file, fresh.len)
    }
}

/// The Parquet views of the mount, each built once.
pub struct PqViews {
    store: Arc<FreshStore>,
    render: Handle,
    views: Built<PqView>,
}

impl PqViews {
    /// Views keeping fresh parts in `store`, encoding on `render`.
    pub fn new(store: Arc<FreshStore>, render: Handle) -> PqViews {
        PqViews {
            store,
            render,
            views: Built::default(),
        }
    }

    /// The views built so far (to forget one, count them, sum their sizes).
    pub fn views(&self) -> &Built<PqView> {
        &self.views
    }

    /// The view `key` of `plan`, sized on first use (on the render pool).
    pub async fn get(
        &self,
        key: &ViewKey,
        plan: &Arc<SnapshotPlan>,
        name: &str,
    ) -> Result<Arc<PqView>> {
        self.views
            .get_or_build(key, || {
                let (key, plan, name) = (key.clone(), plan.clone(), name.to_string());
                let (store, render) = (self.store.clone(), self.render.clone());
                async move {
                    self.render
                        .spawn(build(key, plan, name, store, render))
                        .await?
                }
            })
            .await
    }
}

impl ViewSize for PqView {
    fn size(&self) -> u64 {
        self.size()
    }
}

async fn build(
    key: ViewKey,
    plan: Arc<SnapshotPlan>,
    name: String,
    store: Arc<FreshStore>,
    render: Handle,
) -> Result<PqView> {
    let plan_tasks = plan.tasks_of(key.scope);
    let tasks: Vec<FileScanTask> = plan_tasks.iter().map(|&t| plan.tasks[t].clone()).collect();
    let view = ParquetView::open(&plan.scan, &tasks).await?;
    let mut groups = Vec::new();
    for (t, task) in tasks.iter().enumerate() {
        groups.extend(view.groups(t, task).await?);
    }
    // Encode the fresh parts (their sizes make the layout), a few at once.
    let view = Arc::new(view);
    let tasks = Arc::new(tasks);
    let mut made = Vec::with_capacity(groups.len());
    let mut running = tokio::task::JoinSet::new();
    let mut queue = groups.into_iter().enumerate();
    loop {
        while running.len() < 2 {
            let Some((i, g)) = queue.next() else { break };
            let key = FreshKey {
                table: plan.table_id,
                snapshot: plan.snapshot.snapshot_id,
                schema: plan.scan.table_schema().schema_id,
                task: plan_tasks[g.task],
                row_group: g.row_group,
            };
            let (view, tasks, store) = (view.clone(), tasks.clone(), store.clone());
            running.spawn(async move {
                let _guard = store.making(&key).await;
                let file = store.create(&key)?;
                let (file, fresh) = view.encode(&tasks[g.task], &g, file).await?;
                store.insert(key, file, fresh.len)?;
                Ok::<_, FuseError>((i, g, fresh))
            });
        }
        match running.join_next().await {
            Some(r) => made.push(r??),
            None => break,
        }
    }
    made.sort_by_key(|(i, _, _)| *i);
    let made: Vec<Result<(Group, Fresh)>> = made.into_iter().map(|(_, g, f)| Ok((g, f))).collect();
    let groups = made.into_iter().collect::<Result<Vec<_>>>()?;
    let layout = view.assemble(&groups)?;
    let copied = groups.iter().filter(|(g, _)| g.copied).count();
    tracing::debug!(
        "{name}: {} bytes, {copied} of {} row groups copied",
        layout.len,
        groups.len()
    );
    let view = Arc::into_inner(view).expect("encoders done");
    let tasks = Arc::into_inner(tasks).expect("encoders done");
    Ok(PqView {
        name,
        plan,
        view,
        tasks,
        plan_tasks,
        groups,
        layout,
        store,
        render,
    })
}
