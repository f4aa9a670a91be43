//! The mounted tables: their current metadata (re-read by the refresher) and their planned
//! snapshots. Which tables there are, and where, is the core's catalog layer's answer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use icefloe_core::catalog::{self as core_catalog, TableIdent};
use icefloe_core::spec::Snapshot;
use icefloe_core::{OpenOptions, Table};
use tokio::sync::OnceCell;

use crate::error::{FuseError, Result};
use crate::locks::{lock, read, write};
use crate::plan::SnapshotPlan;

/// Every table of the mount. A table's index is a stable id: a table that disappears from the
/// warehouse is marked gone (no longer listed or found), and one that comes back is added
/// again under a new id.
pub struct MountCatalog {
    source: Arc<dyn core_catalog::Catalog>,
    warehouse: bool,
    tables: RwLock<Vec<Arc<MountedTable>>>,
}

impl MountCatalog {
    /// Opens the table or warehouse at `location` through the core's catalog layer. In a
    /// warehouse, a table that cannot be opened is logged and left out; a single table that
    /// cannot be opened is an error, and so is a warehouse without tables.
    /// Every table is opened with `open` (storage, metadata file selection, path map).
    pub async fn open(location: &str, open: OpenOptions) -> Result<MountCatalog> {
        let source =
            core_catalog::open(location, open, icefloe_core::cache::Caches::global()).await?;
        MountCatalog::from_catalog(source).await
    }

    /// Mounts the tables of a catalog (a table on its own at the root, or every table of
    /// every namespace as `<namespace>/.../<table>/`).
    pub async fn from_catalog(source: Arc<dyn core_catalog::Catalog>) -> Result<MountCatalog> {
        let single = source.single_table();
        let catalog = MountCatalog {
            warehouse: single.is_none(),
            source,
            tables: RwLock::new(Vec::new()),
        };
        if let Some(ident) = single {
            let t = catalog.source.load_table(&ident).await?;
            catalog.add(ident, Vec::new(), t);
            return Ok(catalog);
        }
        for ident in core_catalog::all_tables(catalog.source.as_ref()).await? {
            match catalog.source.load_table(&ident).await {
                Ok(t) => catalog.add(ident.clone(), ident.path(), t),
                Err(e) => tracing::warn!("skipping table {ident}: {e}"),
            }
        }
        if catalog.tables().is_empty() {
            return Err(FuseError::NoTables(catalog.source.name().to_string()));
        }
        Ok(catalog)
    }

    /// Whether the mount root is a warehouse (`<namespace>/<table>/` below it).
    pub fn is_warehouse(&self) -> bool {
        self.warehouse
    }

    /// All tables that are there, in id order.
    pub fn tables(&self) -> Vec<Arc<MountedTable>> {
        read(&self.tables)
            .iter()
            .filter(|t| !t.is_gone())
            .cloned()
            .collect()
    }

    /// The table with this id, unless it is gone.
    pub fn table(&self, id: usize) -> Option<Arc<MountedTable>> {
        read(&self.tables).get(id).filter(|t| !t.is_gone()).cloned()
    }

    /// The table with this id, gone or not (to tell a gone table's open files why they fail).
    pub fn any_table(&self, id: usize) -> Option<Arc<MountedTable>> {
        read(&self.tables).get(id).cloned()
    }

    fn add(&self, ident: TableIdent, path: Vec<String>, table: Table) {
        let mut tables = write(&self.tables);
        let id = tables.len();
        let location = if path.is_empty() {
            self.source.name().to_string()
        } else {
            format!("{}/{}", self.source.name(), path.join("/"))
        };
        log_warnings(&table, &location);
        tables.push(Arc::new(MountedTable {
            id,
            path,
            location,
            ident,
            source: self.source.clone(),
            table: RwLock::new(table),
            plans: Mutex::new(HashMap::new()),
            gone: AtomicBool::new(false),
        }));
    }

    /// Re-reads every table's metadata and, for a warehouse, picks up new tables. Failures are
    /// logged; the tables keep their last good metadata. Returns how many tables changed.
    pub async fn refresh(&self) -> usize {
        let mut changed = 0;
        for t in self.tables() {
            match t.refresh().await {
                Ok(true) => changed += 1,
                Ok(false) => {}
                Err(e) => tracing::warn!("cannot refresh {}: {e}", t.location),
            }
        }
        if self.warehouse {
            let known: Vec<TableIdent> = self.tables().iter().map(|t| t.ident.clone()).collect();
            match core_catalog::all_tables(self.source.as_ref()).await {
                Ok(idents) => {
                    for t in self.tables().iter().filter(|t| !idents.contains(&t.ident)) {
                        tracing::warn!(
                            "{}: the table is gone from {}",
                            t.location,
                            self.source.name()
                        );
                        t.gone.store(true, Ordering::Release);
                        changed += 1;
                    }
                    for ident in idents.into_iter().filter(|i| !known.contains(i)) {
                        match self.source.load_table(&ident).await {
                            Ok(t) => {
                                tracing::info!("new table {ident}");
                                self.add(ident.clone(), ident.path(), t);
                                changed += 1;
                            }
                            Err(e) => tracing::debug!("not yet a table {ident}: {e}"),
                        }
                    }
                }
                Err(e) => tracing::warn!("cannot list {}: {e}", self.source.name()),
            }
        }
        changed
    }
}

/// A snapshot plan made once, shared by its concurrent callers.
type PlanCell = Arc<OnceCell<Arc<SnapshotPlan>>>;

/// One mounted table.
pub struct MountedTable {
    /// Index in the catalog.
    pub id: usize,
    /// Where the table sits in the mount (empty: at the root).
    pub path: Vec<String>,
    /// How logs name the table: its catalog and identifier.
    pub location: String,
    /// The table's identifier in its catalog.
    pub ident: TableIdent,
    source: Arc<dyn core_catalog::Catalog>,
    table: RwLock<Table>,
    /// Plans by snapshot id and schema id.
    plans: Mutex<HashMap<(i64, i32), PlanCell>>,
    /// No longer in the warehouse's listing.
    gone: AtomicBool,
}

impl MountedTable {
    /// Whether the table disappeared from the warehouse.
    pub fn is_gone(&self) -> bool {
        self.gone.load(Ordering::Acquire)
    }

    /// The table as of its latest metadata read (cheap clone).
    pub fn table(&self) -> Table {
        read(&self.table).clone()
    }

    /// A snapshot of the latest metadata.
    pub fn snapshot(&self, id: i64) -> Option<Snapshot> {
        self.table().metadata().snapshot(id).cloned()
    }

    /// Re-reads the table's metadata; returns whether a newer metadata file was found.
    pub async fn refresh(&self) -> Result<bool> {
        let fresh = self.source.load_table(&self.ident).await?;
        log_warnings(&fresh, &self.location);
        let mut cur = write(&self.table);
        if cur.metadata_file() == fresh.metadata_file() {
            return Ok(false);
        }
        tracing::info!("{}: now at {}", self.location, fresh.metadata_file());
        *cur = fresh;
        Ok(true)
    }

    /// Forgets the plan of a snapshot read with a schema (made again on next use; views
    /// keep theirs).
    pub fn forget_plan(&self, snapshot_id: i64, schema_id: i32) {
        lock(&self.plans).remove(&(snapshot_id, schema_id));
    }

    /// How many plans are kept.
    pub fn plans(&self) -> usize {
        lock(&self.plans).len()
    }

    /// The plan of a snapshot read with a schema, made once (concurrent callers wait for the same plan; a failed
    /// plan is retried by the next caller).
    pub async fn plan(&self, snapshot_id: i64, schema_id: i32) -> Result<Arc<SnapshotPlan>> {
        let cell = lock(&self.plans)
            .entry((snapshot_id, schema_id))
            .or_default()
            .clone();
        let plan = cell
            .get_or_try_init(|| async {
                SnapshotPlan::new(self.id, &self.table(), snapshot_id, schema_id)
                    .await
                    .map(Arc::new)
            })
            .await?;
        Ok(plan.clone())
    }
}

/// Logs each rule of the spec `table` breaks without changing what it reads (the core reads it
/// as Iceberg Java does), once per table, as it is found: the mount's warnings.
fn log_warnings(table: &Table, location: &str) {
    let location = location.to_string();
    table
        .warnings()
        .set_sink(Box::new(move |w| tracing::warn!("{location}: {w}")));
}
