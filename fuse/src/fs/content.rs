//! What the files of the mount hold: the views of a snapshot (CSV and JSON Lines sized on
//! the render pool, Parquet), the change files, `retention.csv`, the small metadata files and
//! the symlinks' targets; and how a failure to read them is logged.

use std::sync::Arc;

use bytes::Bytes;

use super::{FsError, MountFs, LOG_TARGET};
use crate::changes;
use crate::error::{FuseError, Result};
use crate::meta;
use crate::parquet::PqView;
use crate::spill::SpillFile;
use crate::tree::{self, Node, Scope, ViewKey};
use crate::view::CsvView;

impl MountFs {
    /// Logs `e` for `node` and turns it into the failure of the request.
    pub(super) fn fail(&self, node: &Node, e: FuseError) -> FsError {
        tracing::error!(target: LOG_TARGET, "{}: {e}", self.display(node));
        FsError::Failed(e)
    }

    /// A path-like name of a node for logs.
    pub(super) fn display(&self, node: &Node) -> String {
        let table = node
            .table()
            .and_then(|t| self.catalog.table(t))
            .map(|t| t.location.clone())
            .unwrap_or_default();
        match node {
            Node::View(k) => {
                let file = match k.scope {
                    Scope::All => tree::DATA.to_string(),
                    Scope::File(i) => format!("{}/task {i}", tree::FILES),
                    Scope::Partition(p) => format!("{}/dir {p}/{}", tree::PARTITIONS, tree::DATA),
                };
                format!(
                    "{table} snapshots/{}/{file}.{}",
                    k.snapshot,
                    k.format.extension()
                )
            }
            n => format!("{table} {n:?}"),
        }
    }

    /// The CSV view `key`; its first sizing runs on the render pool.
    pub(super) async fn csv_view(self: &Arc<Self>, key: &ViewKey) -> Result<Arc<CsvView>> {
        if let Some(v) = self.csv.views().built(key) {
            return Ok(v);
        }
        let plan = self.plan(key).await?;
        let name = self.display(&Node::View(key.clone()));
        let (this, key) = (self.clone(), key.clone());
        self.render
            .spawn(async move {
                #[cfg(feature = "test-hooks")]
                super::test_hooks::gate();
                this.csv.get(&key, &plan, &name).await
            })
            .await?
    }

    /// The Parquet view `key`.
    pub(super) async fn parquet_view(&self, key: &ViewKey) -> Result<Arc<PqView>> {
        let plan = self.plan(key).await?;
        let name = self.display(&Node::View(key.clone()));
        self.parquet.get(key, &plan, &name).await
    }

    /// A file of `changes/<from>..<to>/`, rendered on first use.
    pub(super) async fn change_file(&self, node: &Node) -> Result<Arc<SpillFile>, FsError> {
        let Node::Change(t, from, to, file) = node else {
            return Err(FsError::NotFound);
        };
        let table = self.catalog.table(*t).ok_or(FsError::NotFound)?.table();
        changes::change_file(&self.spill, &table, *t, (*from, *to), *file)
            .await
            .map_err(|e| self.fail(node, e))
    }

    /// `retention.csv` as of now.
    pub(super) async fn retention_csv(&self, node: &Node) -> Result<Bytes, FsError> {
        let table = node
            .table()
            .and_then(|t| self.catalog.table(t))
            .ok_or(FsError::NotFound)?
            .table();
        changes::retention_csv(&table)
            .await
            .map_err(|e| self.fail(node, e))
    }

    async fn plan(&self, key: &ViewKey) -> Result<Arc<crate::plan::SnapshotPlan>> {
        let table = self.catalog.table(key.table).ok_or_else(|| {
            icefloe_core::Error::SnapshotNotFound(format!("no table {}", key.table))
        })?;
        table.plan(key.snapshot, key.schema).await
    }

    /// The bytes of a small metadata file.
    pub(super) fn small_file(&self, node: &Node) -> Option<Bytes> {
        let table = self.catalog.table(node.table()?)?.table();
        let m = table.metadata();
        match node {
            Node::SnapshotsCsv(_) => Some(meta::snapshots_csv(m)),
            Node::SnapshotJson(_, s, schema) => {
                Some(meta::snapshot_json(m, m.snapshot(*s)?, m.schema(*schema)?))
            }
            _ => None,
        }
    }

    /// The target of a symlink.
    pub fn link_target(&self, node: &Node) -> Option<String> {
        let table = self.catalog.table(node.table()?)?.table();
        match node {
            Node::Current(_) => meta::current_target(&table),
            Node::Ref(_, name) => meta::ref_target(&table, name),
            _ => None,
        }
    }
}
