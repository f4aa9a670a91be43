//! The mount's file system, in two parts: what it answers, independent of `fuser`
//! ([`MountFs`]: lookups, attributes, opening and reading files, directory listings, the
//! mount's counters), and the thin `fuser::Filesystem` adapter that hands it the kernel's
//! requests and turns its answers into replies ([`IcefloeFs`]). Requests that take time
//! (planning a snapshot, a counting pass, rendering a chunk) are answered from tasks on the
//! mount's tokio runtime, so they never block the kernel's other requests.

mod adapter;
mod attr;
mod content;
mod dir;
mod error;
mod forget;
mod open;
mod stats;
#[cfg(feature = "test-hooks")]
mod test_hooks;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};

use tokio::runtime::Handle;

use crate::catalog::MountCatalog;
use crate::error::Result;
use crate::fresh::FreshStore;
use crate::index::Index;
use crate::inodes::Inodes;
use crate::parquet::PqViews;
use crate::spill::SpillStore;
use crate::tree::Node;
use crate::view::CsvViews;

pub use adapter::IcefloeFs;
pub use attr::{ttl, Attr, BLOCK_SIZE};
pub use error::FsError;
pub use open::{Caching, Reading};
pub use stats::{Usage, STATS_XATTR};

use open::OpenHandle;

/// Asks the kernel to forget the entry `name` of the directory of inode `parent` (the inode
/// table is past its bound).
pub type Invalidate = Box<dyn Fn(u64, &str) + Send + Sync>;

/// The target of the file system's log lines (as when it was one module, for log filters).
const LOG_TARGET: &str = "icefloe_fuse::fs";

/// The read-only file system of a mount, as it answers the kernel's requests (nodes by inode
/// number, open files by handle).
pub struct MountFs {
    catalog: Arc<MountCatalog>,
    inodes: Inodes,
    csv: CsvViews,
    spill: SpillStore,
    parquet: PqViews,
    fresh: Arc<FreshStore>,
    handles: Mutex<HashMap<u64, Arc<OpenHandle>>>,
    next_fh: AtomicU64,
    /// Asks the kernel to forget entries.
    invalidate: Option<Invalidate>,
    /// Whether a sweep of the inode table runs.
    sweeping: AtomicBool,
    /// What sizing learned, kept on disk across mounts.
    index: Arc<Index>,
    /// The runtime requests are answered on.
    requests: Handle,
    /// The pool CSV views are sized on (the request runtime until [`MountFs::with_parquet`]).
    render: Handle,
    uid: u32,
    gid: u32,
}

impl MountFs {
    /// A file system over `catalog`, answering on `rt`, with a chunk cache of `cache_bytes`
    /// and Parquet spill files under `spill_parent` (default: the temporary directory).
    pub fn new(
        catalog: Arc<MountCatalog>,
        rt: Handle,
        cache_bytes: u64,
        spill_parent: Option<&Path>,
    ) -> Result<MountFs> {
        let root = if catalog.is_warehouse() {
            Node::Warehouse
        } else {
            Node::Table(0)
        };
        let spill = SpillStore::new(spill_parent)?;
        tracing::debug!(target: LOG_TARGET, "spill directory {}", spill.path().display());
        let fresh = Arc::new(FreshStore::new(
            spill_parent,
            crate::DEFAULT_MAX_CACHE_BYTES,
        )?);
        Ok(MountFs {
            catalog,
            inodes: Inodes::new(root, crate::DEFAULT_MAX_INODES),
            csv: CsvViews::new(cache_bytes),
            spill,
            parquet: PqViews::new(fresh.clone(), rt.clone()),
            fresh,
            handles: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            invalidate: None,
            sweeping: AtomicBool::new(false),
            index: Arc::new(Index::disabled()),
            requests: rt.clone(),
            render: rt,
            uid: nix::unistd::getuid().as_raw(),
            gid: nix::unistd::getgid().as_raw(),
        })
    }

    /// Sizes CSV views, renders and encodes Parquet views on `render` (a pool of its own, so
    /// `ls`, `stat` and reads never wait behind them), keeping the Parquet views' fresh parts
    /// under the spill directory, at most `max_cache_bytes` of them.
    pub fn with_parquet(mut self, render: Handle, max_cache_bytes: u64) -> Result<MountFs> {
        let fresh = Arc::new(FreshStore::new(
            self.spill.path().parent(),
            max_cache_bytes,
        )?);
        self.fresh.clear();
        self.parquet = PqViews::new(fresh.clone(), render.clone()).with_index(self.index.clone());
        self.render = render;
        self.fresh = fresh;
        Ok(self)
    }

    /// Keeps at most about `max` inodes: past it, the least recently used entries are dropped
    /// (those the kernel holds once it forgets them, which it is asked to).
    pub fn with_max_inodes(mut self, max: usize) -> MountFs {
        self.inodes = Inodes::new(self.inodes.node(crate::inodes::ROOT).expect("root"), max);
        self
    }

    /// Takes and keeps what sizing learns (CSV layouts, Parquet views' parts) in `index`.
    pub fn with_index(mut self, index: Arc<Index>) -> MountFs {
        let csv = std::mem::replace(&mut self.csv, CsvViews::new(0));
        self.csv = csv.with_index(index.clone());
        let pq = std::mem::replace(
            &mut self.parquet,
            PqViews::new(self.fresh.clone(), self.render.clone()),
        );
        self.parquet = pq.with_index(index.clone());
        self.index = index;
        self
    }

    /// Asks the kernel to forget entries through `invalidate` when the inode table is past its
    /// bound.
    pub fn with_invalidate(mut self, invalidate: Invalidate) -> MountFs {
        self.invalidate = Some(invalidate);
        self
    }

    /// The store of the Parquet views' fresh parts.
    pub fn fresh_store(&self) -> Arc<FreshStore> {
        self.fresh.clone()
    }

    /// The runtime requests are answered on.
    pub fn requests(&self) -> &Handle {
        &self.requests
    }

    /// The node of inode `ino`.
    pub fn node(&self, ino: u64) -> Result<Node, FsError> {
        self.inodes.node(ino).ok_or(FsError::NotFound)
    }

    /// Deletes the spill files and the Parquet views' fresh parts (the mount is going away).
    pub fn remove_files(&self) {
        self.spill.clear();
        self.fresh.clear();
    }
}
