//! The mounted tables: their current metadata (re-read by the refresher) and their planned
//! snapshots.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use icefloe_core::spec::Snapshot;
use icefloe_core::Table;
use tokio::sync::OnceCell;

use crate::error::Result;
use crate::locks::{lock, read, write};
use crate::plan::SnapshotPlan;
use crate::source::{self, TableSource};

/// Every table of the mount. Tables are only ever added (a warehouse gaining a table), so a
/// table's index is a stable id.
pub struct Catalog {
    location: String,
    warehouse: bool,
    tables: RwLock<Vec<Arc<MountedTable>>>,
}

impl Catalog {
    /// Opens the table or warehouse at `location`. In a warehouse, a table that cannot be
    /// opened is logged and left out; a single table that cannot be opened is an error.
    pub async fn open(location: &str) -> Result<Catalog> {
        let sources = source::discover(location)?;
        let warehouse = !(sources.len() == 1 && sources[0].path.is_empty());
        let catalog = Catalog {
            location: location.to_string(),
            warehouse,
            tables: RwLock::new(Vec::new()),
        };
        for s in sources {
            match Table::open(&s.location).await {
                Ok(t) => catalog.add(s, t),
                Err(e) if warehouse => tracing::warn!("skipping table {}: {e}", s.location),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(catalog)
    }

    /// Whether the mount root is a warehouse (`<namespace>/<table>/` below it).
    pub fn is_warehouse(&self) -> bool {
        self.warehouse
    }

    /// All tables, in id order.
    pub fn tables(&self) -> Vec<Arc<MountedTable>> {
        read(&self.tables).clone()
    }

    /// The table with this id.
    pub fn table(&self, id: usize) -> Option<Arc<MountedTable>> {
        read(&self.tables).get(id).cloned()
    }

    fn add(&self, source: TableSource, table: Table) {
        let mut tables = write(&self.tables);
        let id = tables.len();
        tables.push(Arc::new(MountedTable {
            id,
            path: source.path,
            location: source.location,
            table: RwLock::new(table),
            plans: Mutex::new(HashMap::new()),
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
            let known: Vec<String> = self.tables().iter().map(|t| t.location.clone()).collect();
            if let Ok(sources) = source::discover(&self.location) {
                for s in sources.into_iter().filter(|s| !known.contains(&s.location)) {
                    match Table::open(&s.location).await {
                        Ok(t) => {
                            tracing::info!("new table {}", s.location);
                            self.add(s, t);
                            changed += 1;
                        }
                        Err(e) => tracing::debug!("not yet a table {}: {e}", s.location),
                    }
                }
            }
        }
        changed
    }
}

/// One mounted table.
pub struct MountedTable {
    /// Index in the catalog.
    pub id: usize,
    /// Where the table sits in the mount (empty: at the root).
    pub path: Vec<String>,
    /// The location the core opens.
    pub location: String,
    table: RwLock<Table>,
    plans: Mutex<HashMap<i64, Arc<OnceCell<Arc<SnapshotPlan>>>>>,
}

impl MountedTable {
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
        let fresh = Table::open(&self.location).await?;
        let mut cur = write(&self.table);
        if cur.metadata_file() == fresh.metadata_file() {
            return Ok(false);
        }
        tracing::info!("{}: now at {}", self.location, fresh.metadata_file());
        *cur = fresh;
        Ok(true)
    }

    /// The plan of a snapshot, made once (concurrent callers wait for the same plan; a failed
    /// plan is retried by the next caller).
    pub async fn plan(&self, snapshot_id: i64) -> Result<Arc<SnapshotPlan>> {
        let cell = lock(&self.plans).entry(snapshot_id).or_default().clone();
        let plan = cell
            .get_or_try_init(|| async {
                SnapshotPlan::new(self.id, &self.table(), snapshot_id)
                    .await
                    .map(Arc::new)
            })
            .await?;
        Ok(plan.clone())
    }
}
