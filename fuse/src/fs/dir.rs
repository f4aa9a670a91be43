//! Directories: looking up an entry (which the kernel then holds) and listing the entries.

use std::ffi::OsStr;
use std::sync::Arc;
use std::time::Duration;

use super::{ttl, Attr, FsError, MountFs};
use crate::inodes::Dropped;
use crate::tree::{self, Kind, Node};

impl MountFs {
    /// The entry `name` of the directory `parent` (inode `parent_ino`): its attributes, and
    /// how long the kernel may cache them. The kernel holds the entry's inode from then on.
    pub async fn lookup(
        self: &Arc<Self>,
        parent: &Node,
        parent_ino: u64,
        name: &OsStr,
    ) -> Result<(Duration, Attr), FsError> {
        let node = self.entry(parent, name).await?.ok_or(FsError::NotFound)?;
        let shown = name.to_str().unwrap_or_default();
        let ino = self.inodes.looked_up(&node, parent_ino, shown);
        let attr = match self.attr(&node, ino).await {
            Ok(a) => a,
            Err(e) => {
                // Not handed to the kernel after all.
                let mut dropped = Dropped::default();
                self.inodes.forget(ino, 1, &mut dropped);
                self.release(dropped);
                return Err(e);
            }
        };
        self.sweep();
        Ok((ttl(&node), attr))
    }

    /// The node named `name` in directory `parent`, if there is one.
    async fn entry(&self, parent: &Node, name: &OsStr) -> Result<Option<Node>, FsError> {
        let name = name.to_str().ok_or(FsError::NotFound)?;
        tree::lookup(&self.catalog, parent, name)
            .await
            .map_err(|e| self.fail(parent, e))
    }

    /// The entries of the directory `node` (inode `ino`), `.` and `..` first: inode number,
    /// kind and name of each.
    pub async fn readdir(
        &self,
        node: &Node,
        ino: u64,
    ) -> Result<Vec<(u64, Kind, String)>, FsError> {
        if node.kind() != Kind::Dir {
            return Err(FsError::NotDir);
        }
        let children = tree::children(&self.catalog, node)
            .await
            .map_err(|e| self.fail(node, e))?
            .ok_or(FsError::NotFound)?;
        let mut entries = vec![
            (ino, Kind::Dir, ".".to_string()),
            (ino, Kind::Dir, "..".to_string()),
        ];
        entries.extend(
            children
                .into_iter()
                .map(|(name, n)| (self.inodes.ino(&n), n.kind(), name)),
        );
        Ok(entries)
    }
}
