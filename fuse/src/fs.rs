//! The `fuser` file system: each callback finds its node, then answers from a task on the
//! mount's tokio runtime (replies are `Send`), so slow work (planning a snapshot, a counting
//! pass, rendering a chunk) never blocks the kernel's other requests.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use fuser::{
    AccessFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation,
    INodeNo, LockOwner, Notifier, OpenAccMode, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate,
    ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite,
    ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use tokio::runtime::Handle;

use crate::catalog::MountCatalog;
use crate::changes;
use crate::error::{FuseError, Result};
use crate::fresh::FreshStore;
use crate::index::Index;
use crate::inodes::{Dropped, Inodes};
use crate::locks::lock;
use crate::meta;
use crate::parquet::{PqView, PqViews};
use crate::spill::{SpillFile, SpillStore};
use crate::tree::{self, Format, Kind, Node, Scope, ViewKey};
use crate::view::{CsvView, CsvViews, CursorSlot};

/// How long the kernel may cache what can change (table directories, symlinks,
/// `snapshots.csv`): new snapshots show up within this time after a refresh.
const MUTABLE_TTL: Duration = Duration::from_secs(1);
/// How long the kernel may cache what never changes (everything under `snapshots/<id>/`).
const IMMUTABLE_TTL: Duration = Duration::from_secs(60);
/// Block size reported to `stat`.
const BLOCK_SIZE: u32 = 4096;
/// The extended attribute of the mount's root holding the mount's counters (JSON).
pub const STATS_XATTR: &str = "user.icefloe.stats";

/// The read-only file system of a mount.
pub struct IcefloeFs {
    inner: Arc<Inner>,
    rt: Handle,
}

/// An open file: the node it was opened as, and what its reads are served from.
struct OpenHandle {
    node: Node,
    file: OpenFile,
}

/// What an open file's reads are served from.
enum OpenFile {
    /// A CSV view, with this open file's own batch cursor.
    Csv {
        view: Arc<CsvView>,
        cursor: CursorSlot,
    },
    /// A rendered file in the spill directory.
    Spill(Arc<SpillFile>),
    /// A Parquet view.
    Parquet(Arc<PqView>),
    /// A small file rendered whole at open.
    Bytes(Bytes),
}

struct Inner {
    catalog: Arc<MountCatalog>,
    inodes: Inodes,
    csv: CsvViews,
    spill: SpillStore,
    parquet: PqViews,
    fresh: Arc<FreshStore>,
    handles: Mutex<HashMap<u64, Arc<OpenHandle>>>,
    next_fh: AtomicU64,
    /// Asks the kernel to forget entries (set once the session is made).
    notifier: Arc<OnceLock<Notifier>>,
    /// Whether a sweep of the inode table runs.
    sweeping: AtomicBool,
    /// What sizing learned, kept on disk across mounts.
    index: Arc<Index>,
    /// The pool CSV views are sized on (the request runtime until [`IcefloeFs::with_parquet`]).
    render: Handle,
    uid: u32,
    gid: u32,
}

impl IcefloeFs {
    /// A file system over `catalog`, answering on `rt`, with a chunk cache of `cache_bytes`
    /// and Parquet spill files under `spill_parent` (default: the temporary directory).
    pub fn new(
        catalog: Arc<MountCatalog>,
        rt: Handle,
        cache_bytes: u64,
        spill_parent: Option<&Path>,
    ) -> Result<IcefloeFs> {
        let root = if catalog.is_warehouse() {
            Node::Warehouse
        } else {
            Node::Table(0)
        };
        let spill = SpillStore::new(spill_parent)?;
        tracing::debug!("spill directory {}", spill.path().display());
        let fresh = Arc::new(FreshStore::new(
            spill_parent,
            crate::DEFAULT_MAX_CACHE_BYTES,
        )?);
        Ok(IcefloeFs {
            inner: Arc::new(Inner {
                catalog,
                inodes: Inodes::new(root, crate::DEFAULT_MAX_INODES),
                csv: CsvViews::new(cache_bytes),
                spill,
                parquet: PqViews::new(fresh.clone(), rt.clone()),
                fresh,
                handles: Mutex::new(HashMap::new()),
                next_fh: AtomicU64::new(1),
                notifier: Arc::new(OnceLock::new()),
                sweeping: AtomicBool::new(false),
                index: Arc::new(Index::disabled()),
                render: rt.clone(),
                uid: nix::unistd::getuid().as_raw(),
                gid: nix::unistd::getgid().as_raw(),
            }),
            rt,
        })
    }

    /// Sizes CSV views, renders and encodes Parquet views on `render` (a pool of its own, so
    /// `ls`, `stat` and reads never wait behind them), keeping the Parquet views' fresh parts
    /// under the spill directory, at most `max_cache_bytes` of them.
    pub fn with_parquet(mut self, render: Handle, max_cache_bytes: u64) -> Result<IcefloeFs> {
        let inner = Arc::get_mut(&mut self.inner).expect("not shared yet");
        let fresh = Arc::new(FreshStore::new(
            inner.spill.path().parent(),
            max_cache_bytes,
        )?);
        inner.fresh.clear();
        inner.parquet = PqViews::new(fresh.clone(), render.clone()).with_index(inner.index.clone());
        inner.render = render;
        inner.fresh = fresh;
        Ok(self)
    }

    /// Keeps at most about `max` inodes: past it, the least recently used entries are dropped
    /// (those the kernel holds once it forgets them, which it is asked to).
    pub fn with_max_inodes(mut self, max: usize) -> IcefloeFs {
        let inner = Arc::get_mut(&mut self.inner).expect("not shared yet");
        inner.inodes = Inodes::new(inner.inodes.node(crate::inodes::ROOT).expect("root"), max);
        self
    }

    /// Takes and keeps what sizing learns (CSV layouts, Parquet views' parts) in `index`.
    pub fn with_index(mut self, index: Arc<Index>) -> IcefloeFs {
        let inner = Arc::get_mut(&mut self.inner).expect("not shared yet");
        let csv = std::mem::replace(&mut inner.csv, CsvViews::new(0));
        inner.csv = csv.with_index(index.clone());
        let pq = std::mem::replace(
            &mut inner.parquet,
            PqViews::new(inner.fresh.clone(), inner.render.clone()),
        );
        inner.parquet = pq.with_index(index.clone());
        inner.index = index;
        self
    }

    /// Where the session's notifier goes once the session is made: it asks the kernel to
    /// forget entries when the inode table is past its bound.
    pub fn notifier_slot(&self) -> Arc<OnceLock<Notifier>> {
        self.inner.notifier.clone()
    }

    /// The store of the Parquet views' fresh parts.
    pub fn fresh_store(&self) -> Arc<FreshStore> {
        self.inner.fresh.clone()
    }

    /// Runs `f` on the runtime; its result (or errno) is handed to `reply`.
    fn spawn<T, F>(
        &self,
        f: impl FnOnce(Arc<Inner>) -> F + Send + 'static,
        reply: impl FnOnce(Result<T, Errno>) + Send + 'static,
    ) where
        F: std::future::Future<Output = Result<T, Errno>> + Send + 'static,
        T: Send + 'static,
    {
        let inner = self.inner.clone();
        self.rt.spawn(async move { reply(f(inner).await) });
    }

    fn node(&self, ino: INodeNo) -> Result<Node, Errno> {
        self.inner.inodes.node(ino.0).ok_or(Errno::ENOENT)
    }
}

fn ttl(node: &Node) -> Duration {
    if node.snapshot().is_some() {
        IMMUTABLE_TTL
    } else {
        MUTABLE_TTL
    }
}

fn time(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

fn file_type(kind: Kind) -> FileType {
    match kind {
        Kind::Dir => FileType::Directory,
        Kind::File => FileType::RegularFile,
        Kind::Symlink => FileType::Symlink,
    }
}

impl Inner {
    /// Logs `e` for `node` and turns it into the errno of the call.
    fn fail(&self, node: &Node, e: FuseError) -> Errno {
        tracing::error!("{}: {e}", self.display(node));
        e.errno()
    }

    /// A path-like name of a node for logs.
    fn display(&self, node: &Node) -> String {
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

    /// The entry `name` of directory `parent`.
    async fn lookup(&self, parent: &Node, name: &OsStr) -> Result<Option<Node>, Errno> {
        let name = name.to_str().ok_or(Errno::ENOENT)?;
        tree::lookup(&self.catalog, parent, name)
            .await
            .map_err(|e| self.fail(parent, e))
    }

    /// The CSV view `key`; its first sizing runs on the render pool.
    async fn csv_view(self: &Arc<Self>, key: &ViewKey) -> Result<Arc<CsvView>> {
        if let Some(v) = self.csv.views().built(key) {
            return Ok(v);
        }
        let plan = self.plan(key).await?;
        let name = self.display(&Node::View(key.clone()));
        let (this, key) = (self.clone(), key.clone());
        self.render
            .spawn(async move {
                test_gate();
                this.csv.get(&key, &plan, &name).await
            })
            .await?
    }

    async fn parquet_view(&self, key: &ViewKey) -> Result<Arc<PqView>> {
        let plan = self.plan(key).await?;
        let name = self.display(&Node::View(key.clone()));
        self.parquet.get(key, &plan, &name).await
    }

    /// A file of `changes/<from>..<to>/`, rendered on first use.
    async fn change_file(&self, node: &Node) -> Result<Arc<SpillFile>, Errno> {
        let Node::Change(t, from, to, file) = node else {
            return Err(Errno::ENOENT);
        };
        let table = self.catalog.table(*t).ok_or(Errno::ENOENT)?.table();
        changes::change_file(&self.spill, &table, *t, (*from, *to), *file)
            .await
            .map_err(|e| self.fail(node, e))
    }

    /// `retention.csv` as of now.
    async fn retention_csv(&self, node: &Node) -> Result<Bytes, Errno> {
        let table = node
            .table()
            .and_then(|t| self.catalog.table(t))
            .ok_or(Errno::ENOENT)?
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
    fn small_file(&self, node: &Node) -> Option<Bytes> {
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
    fn link_target(&self, node: &Node) -> Option<String> {
        let table = self.catalog.table(node.table()?)?.table();
        match node {
            Node::Current(_) => meta::current_target(&table),
            Node::Ref(_, name) => meta::ref_target(&table, name),
            _ => None,
        }
    }

    /// The modification time of a node: the snapshot's time below a snapshot, else the time
    /// of the table's (or tables') latest metadata.
    fn mtime(&self, node: &Node) -> SystemTime {
        let tables = match node.table() {
            Some(t) => self.catalog.table(t).into_iter().collect(),
            None => self.catalog.tables(),
        };
        let ms = tables
            .iter()
            .filter(|t| match node {
                Node::Namespace(ns) => t.path.starts_with(ns),
                _ => true,
            })
            .map(|t| {
                let table = t.table();
                let m = table.metadata();
                node.snapshot()
                    .and_then(|s| m.snapshot(s))
                    .map(|s| s.timestamp_ms)
                    .unwrap_or(m.last_updated_ms)
            })
            .max()
            .unwrap_or(0);
        time(ms)
    }

    /// The attributes of a node (inode `ino`); sizes of views are computed (and cached) on
    /// first use.
    async fn attr(self: &Arc<Self>, node: &Node, ino: u64) -> Result<FileAttr, Errno> {
        if !tree::exists(&self.catalog, node) {
            return Err(Errno::ENOENT);
        }
        let size = match node {
            Node::View(k) => match k.format {
                Format::Csv | Format::Jsonl => self.csv_view(k).await.map(|v| v.size()),
                Format::Parquet => self.parquet_view(k).await.map(|v| v.size()),
            }
            .map_err(|e| self.fail(node, e))?,
            Node::SnapshotsCsv(_) | Node::SnapshotJson(..) => {
                self.small_file(node).ok_or(Errno::ENOENT)?.len() as u64
            }
            Node::Change(..) => self.change_file(node).await?.len(),
            Node::RetentionCsv(_) => self.retention_csv(node).await?.len() as u64,
            Node::Current(_) | Node::Ref(..) => {
                self.link_target(node).ok_or(Errno::ENOENT)?.len() as u64
            }
            _ => 0,
        };
        let kind = node.kind();
        let t = self.mtime(node);
        Ok(FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: t,
            mtime: t,
            ctime: t,
            crtime: t,
            kind: file_type(kind),
            perm: match kind {
                Kind::Dir => 0o555,
                Kind::File => 0o444,
                Kind::Symlink => 0o777,
            },
            nlink: if kind == Kind::Dir { 2 } else { 1 },
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: BLOCK_SIZE,
            flags: 0,
        })
    }

    /// Opens a regular file.
    async fn open(self: &Arc<Self>, node: &Node) -> Result<(OpenFile, FopenFlags), Errno> {
        if !tree::exists(&self.catalog, node) {
            return Err(Errno::ENOENT);
        }
        match node {
            Node::View(k) => {
                let file = match k.format {
                    Format::Csv | Format::Jsonl => {
                        self.csv_view(k).await.map(|view| OpenFile::Csv {
                            view,
                            cursor: CursorSlot::default(),
                        })
                    }
                    Format::Parquet => self.parquet_view(k).await.map(OpenFile::Parquet),
                }
                .map_err(|e| self.fail(node, e))?;
                Ok((file, FopenFlags::FOPEN_KEEP_CACHE))
            }
            Node::SnapshotJson(..) => Ok((
                OpenFile::Bytes(self.small_file(node).ok_or(Errno::ENOENT)?),
                FopenFlags::FOPEN_KEEP_CACHE,
            )),
            Node::Change(..) => Ok((
                OpenFile::Spill(self.change_file(node).await?),
                FopenFlags::FOPEN_KEEP_CACHE,
            )),
            // Changes with the clock: always read through, as it was at open.
            Node::RetentionCsv(_) => Ok((
                OpenFile::Bytes(self.retention_csv(node).await?),
                FopenFlags::FOPEN_DIRECT_IO,
            )),
            // Changes with the table: always read through, as it was at open.
            Node::SnapshotsCsv(_) => Ok((
                OpenFile::Bytes(self.small_file(node).ok_or(Errno::ENOENT)?),
                FopenFlags::FOPEN_DIRECT_IO,
            )),
            _ => Err(Errno::EISDIR),
        }
    }

    fn handle(&self, fh: FileHandle) -> Result<Arc<OpenHandle>, Errno> {
        lock(&self.handles).get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    /// Lets go of what dropped inodes held: the views' offset indexes and layouts, and the
    /// plans no inode needs (open files keep theirs).
    fn release(&self, dropped: Dropped) {
        for node in &dropped.nodes {
            if let Node::View(k) = node {
                self.csv.views().forget(k);
                self.parquet.views().forget(k);
            }
        }
        for (t, s, schema) in dropped.plans {
            if let Some(table) = self.catalog.table(t) {
                table.forget_plan(s, schema);
            }
        }
    }

    /// Past the inode bound, sweeps the table (once at a time, off the request threads) and
    /// asks the kernel to forget the entries it names.
    fn sweep(self: &Arc<Self>, rt: &Handle) {
        if !self.inodes.over() || self.sweeping.swap(true, Ordering::AcqRel) {
            return;
        }
        let inner = self.clone();
        rt.spawn_blocking(move || {
            let mut dropped = Dropped::default();
            let victims = inner.inodes.sweep(&mut dropped);
            tracing::debug!(
                "inode sweep: {} dropped, {} to be forgotten",
                dropped.nodes.len(),
                victims.len()
            );
            inner.release(dropped);
            if let Some(n) = inner.notifier.get() {
                for (parent, name) in victims {
                    // Fails harmlessly if the kernel no longer has the entry.
                    let _ = n.inval_entry(INodeNo(parent), OsStr::new(&name));
                }
            }
            inner.sweeping.store(false, Ordering::Release);
        });
    }

    /// The mount's counters, as JSON.
    fn stats(&self) -> String {
        let (hits, rejected, written) = self.index.counters();
        serde_json::json!({
            "index": self.index.enabled(),
            "index_hits": hits,
            "index_rejected": rejected,
            "index_written": written,
            "inodes": self.inodes.len(),
            "plans": self.catalog.tables().iter().map(|t| t.plans()).sum::<usize>(),
            "csv_views": self.csv.views().len(),
            "parquet_views": self.parquet.views().len(),
            "open_files": lock(&self.handles).len(),
        })
        .to_string()
    }
}

/// Test hook: with `ICEFLOE_FUSE_TEST_GATE=PATH` in the environment, every CSV sizing first
/// creates `PATH.started-N` and then holds its thread until `PATH` exists (a render that
/// keeps a render thread busy, for the tests of what must answer meanwhile).
fn test_gate() {
    static STARTED: AtomicU64 = AtomicU64::new(0);
    let Some(gate) = std::env::var_os("ICEFLOE_FUSE_TEST_GATE") else {
        return;
    };
    let n = STARTED.fetch_add(1, Ordering::Relaxed);
    let mut started = gate.clone();
    started.push(format!(".started-{n}"));
    let _ = std::fs::write(&started, b"");
    while !Path::new(&gate).exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn slice(b: &[u8], offset: u64, size: u32) -> &[u8] {
    let start = usize::try_from(offset).unwrap_or(usize::MAX).min(b.len());
    let end = start.saturating_add(size as usize).min(b.len());
    &b[start..end]
}

impl Filesystem for IcefloeFs {
    fn destroy(&mut self) {
        self.inner.spill.clear();
        self.inner.fresh.clear();
    }

    // `batch_forget` (fuser's default) calls this for each inode.
    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        let mut dropped = Dropped::default();
        self.inner.inodes.forget(ino.0, nlookup, &mut dropped);
        self.inner.release(dropped);
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let parent_ino = parent.0;
        let parent = match self.node(parent) {
            Ok(n) => n,
            Err(e) => return reply.error(e),
        };
        let name = name.to_owned();
        let rt = self.rt.clone();
        self.spawn(
            move |inner| async move {
                let node = inner.lookup(&parent, &name).await?.ok_or(Errno::ENOENT)?;
                let shown = name.to_str().unwrap_or_default();
                let ino = inner.inodes.looked_up(&node, parent_ino, shown);
                let attr = match inner.attr(&node, ino).await {
                    Ok(a) => a,
                    Err(e) => {
                        // Not handed to the kernel after all.
                        let mut dropped = Dropped::default();
                        inner.inodes.forget(ino, 1, &mut dropped);
                        inner.release(dropped);
                        return Err(e);
                    }
                };
                inner.sweep(&rt);
                Ok((ttl(&node), attr))
            },
            move |r| match r {
                Ok((ttl, attr)) => reply.entry(&ttl, &attr, Generation(0)),
                Err(e) => reply.error(e),
            },
        );
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let node = match self.node(ino) {
            Ok(n) => n,
            Err(e) => return reply.error(e),
        };
        self.spawn(
            move |inner| async move { Ok((ttl(&node), inner.attr(&node, ino.0).await?)) },
            move |r| match r {
                Ok((ttl, attr)) => reply.attr(&ttl, &attr),
                Err(e) => reply.error(e),
            },
        );
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self.node(ino).map(|n| self.inner.link_target(&n)) {
            Ok(Some(target)) => reply.data(target.as_bytes()),
            Ok(None) => reply.error(Errno::ENOENT),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if flags.acc_mode() != OpenAccMode::O_RDONLY {
            return reply.error(Errno::EROFS);
        }
        let node = match self.node(ino) {
            Ok(n) => n,
            Err(e) => return reply.error(e),
        };
        self.spawn(
            move |inner| async move {
                let (file, flags) = inner.open(&node).await?;
                let fh = inner.next_fh.fetch_add(1, Ordering::Relaxed);
                lock(&inner.handles).insert(fh, Arc::new(OpenHandle { node, file }));
                Ok((fh, flags))
            },
            move |r| match r {
                Ok((fh, flags)) => reply.opened(FileHandle(fh), flags),
                Err(e) => reply.error(e),
            },
        );
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let handle = match self.inner.handle(fh) {
            Ok(h) => h,
            Err(e) => return reply.error(e),
        };
        // A table gone from the warehouse: its open files fail, rather than serve stale bytes.
        if let Some(t) = handle.node.table() {
            if self.inner.catalog.table(t).is_none() {
                let shown = self.inner.catalog.any_table(t).map(|t| t.location.clone());
                tracing::error!(
                    "{}: read of an open file of a table that is gone: ESTALE",
                    shown.unwrap_or_default()
                );
                return reply.error(Errno::ESTALE);
            }
        }
        match &handle.file {
            OpenFile::Bytes(b) => reply.data(slice(b, offset, size)),
            OpenFile::Spill(f) => match f.read_at(offset, size) {
                Ok(buf) => reply.data(&buf),
                Err(e) => reply.error(self.inner.fail(&handle.node, e)),
            },
            OpenFile::Parquet(view) => {
                let (view, handle) = (view.clone(), handle.clone());
                self.spawn(
                    move |inner| async move {
                        view.read(offset, size)
                            .await
                            .map_err(|e| inner.fail(&handle.node, e))
                    },
                    move |r| match r {
                        Ok(buf) => reply.data(&buf),
                        Err(e) => reply.error(e),
                    },
                );
            }
            OpenFile::Csv { view, cursor } => {
                let (view, cursor, handle) = (view.clone(), cursor.clone(), handle.clone());
                self.spawn(
                    move |inner| async move {
                        view.read(offset, size, &cursor)
                            .await
                            .map_err(|e| inner.fail(&handle.node, e))
                    },
                    move |r| match r {
                        Ok(buf) => reply.data(&buf),
                        Err(e) => reply.error(e),
                    },
                );
            }
        }
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        lock(&self.inner.handles).remove(&fh.0);
        reply.ok();
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let node = match self.node(ino) {
            Ok(n) => n,
            Err(e) => return reply.error(e),
        };
        self.spawn(
            move |inner| async move {
                if node.kind() != Kind::Dir {
                    return Err(Errno::ENOTDIR);
                }
                let children = tree::children(&inner.catalog, &node)
                    .await
                    .map_err(|e| inner.fail(&node, e))?
                    .ok_or(Errno::ENOENT)?;
                let mut entries = vec![
                    (ino.0, FileType::Directory, ".".to_string()),
                    (ino.0, FileType::Directory, "..".to_string()),
                ];
                entries.extend(
                    children
                        .into_iter()
                        .map(|(name, n)| (inner.inodes.ino(&n), file_type(n.kind()), name)),
                );
                Ok(entries)
            },
            move |r| match r {
                Ok(entries) => {
                    for (i, (ino, kind, name)) in
                        entries.into_iter().enumerate().skip(offset as usize)
                    {
                        if reply.add(INodeNo(ino), (i + 1) as u64, kind, name) {
                            break;
                        }
                    }
                    reply.ok()
                }
                Err(e) => reply.error(e),
            },
        );
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        if ino.0 != crate::inodes::ROOT || name != STATS_XATTR {
            return reply.error(Errno::NO_XATTR);
        }
        let stats = self.inner.stats();
        if size == 0 {
            reply.size(stats.len() as u32)
        } else if (size as usize) < stats.len() {
            reply.error(Errno::ERANGE)
        } else {
            reply.data(stats.as_bytes())
        }
    }

    /// The views sized so far as the used blocks (nothing is free: the mount is read-only),
    /// and the inodes the mount holds as its files.
    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let inner = &self.inner;
        let bytes = inner.csv.views().known_bytes() + inner.parquet.views().known_bytes();
        let blocks = bytes.div_ceil(u64::from(BLOCK_SIZE));
        let files = inner.inodes.len() as u64;
        reply.statfs(blocks, 0, 0, files, 0, BLOCK_SIZE, 255, BLOCK_SIZE);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, size: u32, reply: ReplyXattr) {
        if size == 0 {
            reply.size(0)
        } else {
            reply.data(&[])
        }
    }

    fn access(&self, _req: &Request, _ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        if mask.contains(AccessFlags::W_OK) {
            reply.error(Errno::EROFS)
        } else {
            reply.ok()
        }
    }

    // Everything that would change the tree is refused: the mount is read-only.

    fn setattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        _size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        reply.error(Errno::EROFS);
    }

    fn mknod(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EROFS);
    }

    fn mkdir(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EROFS);
    }

    fn unlink(&self, _req: &Request, _parent: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn rmdir(&self, _req: &Request, _parent: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn symlink(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _link_name: &OsStr,
        _target: &Path,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EROFS);
    }

    fn rename(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _newparent: INodeNo,
        _newname: &OsStr,
        _flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EROFS);
    }

    fn link(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _newparent: INodeNo,
        _newname: &OsStr,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EROFS);
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        reply.error(Errno::EROFS);
    }

    fn create(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        reply.error(Errno::EROFS);
    }

    fn setxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EROFS);
    }

    fn removexattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _length: u64,
        _mode: i32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EROFS);
    }
}
