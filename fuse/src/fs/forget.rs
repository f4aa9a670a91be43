//! Forgetting inodes: the kernel's `forget`, and the sweep of the inode table past its bound;
//! what the dropped entries held (views' offset indexes and layouts, plans) is let go.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{MountFs, LOG_TARGET};
use crate::inodes::Dropped;
use crate::tree::Node;

impl MountFs {
    /// The kernel forgets `nlookup` lookups of inode `ino`.
    pub fn forget(&self, ino: u64, nlookup: u64) {
        let mut dropped = Dropped::default();
        self.inodes.forget(ino, nlookup, &mut dropped);
        self.release(dropped);
    }

    /// Lets go of what dropped inodes held: the views' offset indexes and layouts, and the
    /// plans no inode needs (open files keep theirs).
    pub(super) fn release(&self, dropped: Dropped) {
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
    pub(super) fn sweep(self: &Arc<Self>) {
        if !self.inodes.over() || self.sweeping.swap(true, Ordering::AcqRel) {
            return;
        }
        let fs = self.clone();
        self.requests.spawn_blocking(move || {
            let mut dropped = Dropped::default();
            let victims = fs.inodes.sweep(&mut dropped);
            tracing::debug!(
                target: LOG_TARGET,
                "inode sweep: {} dropped, {} to be forgotten",
                dropped.nodes.len(),
                victims.len()
            );
            fs.release(dropped);
            if let Some(invalidate) = &fs.invalidate {
                for (parent, name) in victims {
                    invalidate(parent, &name);
                }
            }
            fs.sweeping.store(false, Ordering::Release);
        });
    }
}
