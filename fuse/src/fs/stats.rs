//! What the mount tells of itself: its counters (an extended attribute of its root) and its
//! usage (`statfs`).

use super::{FsError, MountFs, BLOCK_SIZE};
use crate::inodes::ROOT;
use crate::locks::lock;

/// The extended attribute of the mount's root holding the mount's counters (JSON).
pub const STATS_XATTR: &str = "user.icefloe.stats";

/// What `statfs` reports: the views sized so far as the used blocks (nothing is free: the
/// mount is read-only), and the inodes the mount holds as its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Blocks of [`BLOCK_SIZE`] bytes.
    pub blocks: u64,
    /// Inodes held.
    pub files: u64,
}

impl MountFs {
    /// The value of the extended attribute `name` of inode `ino`: only the root has one,
    /// [`STATS_XATTR`].
    pub fn xattr(&self, ino: u64, name: &std::ffi::OsStr) -> Result<String, FsError> {
        if ino != ROOT || name != STATS_XATTR {
            return Err(FsError::NoXattr);
        }
        Ok(self.stats())
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

    /// The blocks of the views sized so far and the inodes held.
    pub fn usage(&self) -> Usage {
        let bytes = self.csv.views().known_bytes() + self.parquet.views().known_bytes();
        Usage {
            blocks: bytes.div_ceil(u64::from(BLOCK_SIZE)),
            files: self.inodes.len() as u64,
        }
    }
}
