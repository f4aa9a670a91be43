//! The attributes of a node (`stat`): size, times, kind and permissions (nothing is writable),
//! and how long the kernel may cache them.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{FsError, MountFs};
use crate::tree::{self, Format, Kind, Node};

/// How long the kernel may cache what can change (table directories, symlinks,
/// `snapshots.csv`): new snapshots show up within this time after a refresh.
const MUTABLE_TTL: Duration = Duration::from_secs(1);
/// How long the kernel may cache what never changes (everything under `snapshots/<id>/`).
const IMMUTABLE_TTL: Duration = Duration::from_secs(60);
/// Block size reported to `stat` (and `statfs`).
pub const BLOCK_SIZE: u32 = 4096;

/// What `stat` says of a node. Its access, change and creation times are its modification
/// time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    /// The inode number.
    pub ino: u64,
    /// The size in bytes (of a symlink: its target's length; of a directory: 0).
    pub size: u64,
    /// The size in 512-byte blocks.
    pub blocks: u64,
    /// The modification time.
    pub mtime: SystemTime,
    /// Directory, regular file or symlink.
    pub kind: Kind,
    /// The permission bits: read (and search) for everyone, write for no one.
    pub perm: u16,
    /// The link count.
    pub nlink: u32,
    /// The owner: the user who mounted.
    pub uid: u32,
    /// The group of the user who mounted.
    pub gid: u32,
    /// The preferred I/O block size.
    pub blksize: u32,
}

/// How long the kernel may cache the attributes and entry of `node`.
pub fn ttl(node: &Node) -> Duration {
    if node.snapshot().is_some() {
        IMMUTABLE_TTL
    } else {
        MUTABLE_TTL
    }
}

fn time(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

impl MountFs {
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
    pub async fn attr(self: &Arc<Self>, node: &Node, ino: u64) -> Result<Attr, FsError> {
        if !tree::exists(&self.catalog, node) {
            return Err(FsError::NotFound);
        }
        let size = match node {
            Node::View(k) => match k.format {
                Format::Csv | Format::Jsonl => self.csv_view(k).await.map(|v| v.size()),
                Format::Parquet => self.parquet_view(k).await.map(|v| v.size()),
            }
            .map_err(|e| self.fail(node, e))?,
            Node::SnapshotsCsv(_) | Node::SnapshotJson(..) => {
                self.small_file(node).ok_or(FsError::NotFound)?.len() as u64
            }
            Node::Change(..) => self.change_file(node).await?.len(),
            Node::RetentionCsv(_) => self.retention_csv(node).await?.len() as u64,
            Node::Current(_) | Node::Ref(..) => {
                self.link_target(node).ok_or(FsError::NotFound)?.len() as u64
            }
            _ => 0,
        };
        let kind = node.kind();
        Ok(Attr {
            ino,
            size,
            blocks: size.div_ceil(512),
            mtime: self.mtime(node),
            kind,
            perm: match kind {
                Kind::Dir => 0o555,
                Kind::File => 0o444,
                Kind::Symlink => 0o777,
            },
            nlink: if kind == Kind::Dir { 2 } else { 1 },
            uid: self.uid,
            gid: self.gid,
            blksize: BLOCK_SIZE,
        })
    }
}
