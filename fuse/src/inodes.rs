//! Inode numbers and the kernel's lookup counts.
//!
//! The kernel holds an inode from the reply that names it (`lookup`) until it sends `forget`
//! with as many lookups as it got; until then its number must keep meaning the same node.
//! Numbers are never reused. An entry the kernel does not hold (named only by `readdir`, or
//! forgotten) is dropped, and with it what the mount keeps for the node (a view's offset
//! index, a snapshot's plan): memory follows what the kernel still knows, not everything ever
//! visited. When the table grows past its bound, [`Inodes::sweep`] drops every entry the
//! kernel does not hold and names the least recently used others for the file system to ask
//! the kernel to forget (a `FUSE_NOTIFY_INVAL_ENTRY`).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::locks::lock;
use crate::tree::Node;

/// The inode of the mount's root.
pub const ROOT: u64 = 1;

/// The snapshot a node's contents come from, read with a schema: `(table, snapshot, schema)`,
/// the key of its plan.
pub type PlanKey = (usize, i64, i32);

/// The plan a node needs, if any.
pub fn plan_key(node: &Node) -> Option<PlanKey> {
    match node {
        Node::Snapshot(t, s, c)
        | Node::SnapshotJson(t, s, c)
        | Node::FilesDir(t, s, c)
        | Node::PartitionDir(t, s, c, _) => Some((*t, *s, *c)),
        Node::View(k) => Some((k.table, k.snapshot, k.schema)),
        _ => None,
    }
}

struct Entry {
    node: Node,
    /// Lookups the kernel holds.
    lookups: u64,
    /// When last used (a tick of the table's clock).
    used: u64,
    /// The directory and name it was last looked up by (to ask the kernel to forget it).
    from: Option<(u64, Box<str>)>,
}

#[derive(Default)]
struct Map {
    by_node: HashMap<Node, u64>,
    by_ino: HashMap<u64, Entry>,
    /// Entries per plan key, so a plan goes with the last node that needs it.
    plans: HashMap<PlanKey, usize>,
    next: u64,
    clock: u64,
}

/// What dropping entries let go of: nodes and the plans no entry needs any more.
#[derive(Debug, Default, PartialEq)]
pub struct Dropped {
    pub nodes: Vec<Node>,
    pub plans: Vec<PlanKey>,
}

/// The inode table of a mount.
pub struct Inodes {
    map: Mutex<Map>,
    /// The size past which [`Inodes::sweep`] is due.
    max: usize,
}

impl Map {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// The inode of `node`, allocated (held by no lookup) if new.
    fn ino(&mut self, node: &Node) -> u64 {
        let used = self.tick();
        if let Some(&ino) = self.by_node.get(node) {
            if let Some(e) = self.by_ino.get_mut(&ino) {
                e.used = used;
            }
            return ino;
        }
        let ino = self.next;
        self.next += 1;
        self.by_node.insert(node.clone(), ino);
        if let Some(k) = plan_key(node) {
            *self.plans.entry(k).or_default() += 1;
        }
        self.by_ino.insert(
            ino,
            Entry {
                node: node.clone(),
                lookups: 0,
                used,
                from: None,
            },
        );
        ino
    }

    fn remove(&mut self, ino: u64, dropped: &mut Dropped) {
        let Some(e) = self.by_ino.remove(&ino) else {
            return;
        };
        self.by_node.remove(&e.node);
        if let Some(k) = plan_key(&e.node) {
            if let Some(n) = self.plans.get_mut(&k) {
                *n -= 1;
                if *n == 0 {
                    self.plans.remove(&k);
                    dropped.plans.push(k);
                }
            }
        }
        dropped.nodes.push(e.node);
    }
}

impl Inodes {
    /// A table with `root` as inode [`ROOT`], due a sweep past `max` entries.
    pub fn new(root: Node, max: usize) -> Inodes {
        let mut map = Map {
            next: ROOT,
            ..Map::default()
        };
        map.ino(&root);
        // The root is never forgotten: the kernel holds it for the life of the mount.
        map.by_ino.get_mut(&ROOT).expect("root").lookups = 1;
        Inodes {
            map: Mutex::new(map),
            max: max.max(16),
        }
    }

    /// The inode of `node` (allocated if new), for a reply that does not hand it to the kernel
    /// to hold (`readdir`).
    pub fn ino(&self, node: &Node) -> u64 {
        lock(&self.map).ino(node)
    }

    /// The inode of `node` for a `lookup` reply naming it as `name` in directory `parent`:
    /// counts one more lookup the kernel holds.
    pub fn looked_up(&self, node: &Node, parent: u64, name: &str) -> u64 {
        let mut map = lock(&self.map);
        let ino = map.ino(node);
        let e = map.by_ino.get_mut(&ino).expect("just allocated");
        e.lookups += 1;
        if e.from
            .as_ref()
            .is_none_or(|(p, n)| *p != parent || **n != *name)
        {
            e.from = Some((parent, name.into()));
        }
        ino
    }

    /// The node of inode `ino`, marked used.
    pub fn node(&self, ino: u64) -> Option<Node> {
        let mut map = lock(&self.map);
        let used = map.tick();
        let e = map.by_ino.get_mut(&ino)?;
        e.used = used;
        Some(e.node.clone())
    }

    /// The kernel forgets `n` lookups of `ino`; at none left the entry is dropped.
    pub fn forget(&self, ino: u64, n: u64, dropped: &mut Dropped) {
        if ino == ROOT {
            return;
        }
        let mut map = lock(&self.map);
        let Some(e) = map.by_ino.get_mut(&ino) else {
            return;
        };
        e.lookups = e.lookups.saturating_sub(n);
        if e.lookups == 0 {
            map.remove(ino, dropped);
        }
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        lock(&self.map).by_ino.len()
    }

    /// Whether only the root is there.
    pub fn is_empty(&self) -> bool {
        self.len() <= 1
    }

    /// How many plan keys some entry needs.
    pub fn plans(&self) -> usize {
        lock(&self.map).plans.len()
    }

    /// Whether the table is past its bound.
    pub fn over(&self) -> bool {
        self.len() > self.max
    }

    /// Past the bound: drops every entry the kernel does not hold, then, if still past three
    /// quarters of the bound, names the least recently used of the others (as `(directory
    /// inode, name)`) down to half the bound, for the kernel to be asked to forget them.
    pub fn sweep(&self, dropped: &mut Dropped) -> Vec<(u64, String)> {
        let mut map = lock(&self.map);
        if map.by_ino.len() <= self.max {
            return Vec::new();
        }
        let unheld: Vec<u64> = map
            .by_ino
            .iter()
            .filter(|(_, e)| e.lookups == 0)
            .map(|(&ino, _)| ino)
            .collect();
        for ino in unheld {
            map.remove(ino, dropped);
        }
        if map.by_ino.len() <= self.max * 3 / 4 {
            return Vec::new();
        }
        let mut held: Vec<(u64, u64, u64, &str)> = map
            .by_ino
            .iter()
            .filter(|(&ino, _)| ino != ROOT)
            .filter_map(|(&ino, e)| {
                let (parent, name) = e.from.as_ref()?;
                Some((e.used, ino, *parent, &**name))
            })
            .collect();
        held.sort_unstable();
        let n = map.by_ino.len().saturating_sub(self.max / 2);
        held.into_iter()
            .take(n)
            .map(|(_, _, parent, name)| (parent, name.to_string()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{Format, Scope, ViewKey};

    fn view(s: i64) -> Node {
        Node::View(ViewKey {
            table: 0,
            snapshot: s,
            schema: 0,
            scope: Scope::All,
            format: Format::Csv,
        })
    }

    #[test]
    fn numbers_are_stable_while_held_and_never_reused() {
        let inodes = Inodes::new(Node::Table(0), 100);
        assert_eq!(inodes.ino(&Node::Table(0)), ROOT);
        let a = inodes.looked_up(&Node::Snapshot(0, 42, 1), ROOT, "42");
        let b = inodes.ino(&Node::SnapshotsDir(0));
        assert_eq!((a, b), (2, 3));
        assert_eq!(inodes.looked_up(&Node::Snapshot(0, 42, 1), ROOT, "42"), 2);
        assert_eq!(inodes.node(2), Some(Node::Snapshot(0, 42, 1)));
        assert_eq!(inodes.node(0), None);
        assert_eq!(inodes.node(4), None);
        let mut dropped = Dropped::default();
        // Two lookups held: one forget keeps it.
        inodes.forget(2, 1, &mut dropped);
        assert_eq!(inodes.node(2), Some(Node::Snapshot(0, 42, 1)));
        assert!(dropped.nodes.is_empty());
        inodes.forget(2, 1, &mut dropped);
        assert_eq!(inodes.node(2), None);
        assert_eq!(dropped.nodes, [Node::Snapshot(0, 42, 1)]);
        assert_eq!(dropped.plans, [(0, 42, 1)]);
        // Looked up again: a new number.
        assert_eq!(inodes.looked_up(&Node::Snapshot(0, 42, 1), ROOT, "42"), 4);
        // The root is never dropped.
        inodes.forget(ROOT, 5, &mut dropped);
        assert_eq!(inodes.node(ROOT), Some(Node::Table(0)));
    }

    #[test]
    fn a_plan_goes_with_the_last_node_needing_it() {
        let inodes = Inodes::new(Node::Table(0), 100);
        let dir = inodes.looked_up(&Node::Snapshot(0, 7, 0), ROOT, "7");
        let v = inodes.looked_up(&view(7), dir, "data.csv");
        let mut dropped = Dropped::default();
        inodes.forget(v, 1, &mut dropped);
        assert_eq!(dropped.nodes, [view(7)]);
        assert!(dropped.plans.is_empty(), "the snapshot directory needs it");
        inodes.forget(dir, 1, &mut dropped);
        assert_eq!(dropped.plans, [(0, 7, 0)]);
        assert_eq!(inodes.plans(), 0);
    }

    #[test]
    fn a_sweep_drops_unheld_entries_then_names_the_least_recently_used() {
        let inodes = Inodes::new(Node::Table(0), 16);
        for s in 0..20 {
            inodes.ino(&view(s));
        }
        let held: Vec<u64> = (100..120)
            .map(|s| inodes.looked_up(&view(s), ROOT, &s.to_string()))
            .collect();
        // The oldest held entries become the most recently used ones.
        inodes.node(held[0]);
        inodes.node(held[1]);
        assert!(inodes.over());
        let mut dropped = Dropped::default();
        let victims = inodes.sweep(&mut dropped);
        assert_eq!(dropped.nodes.len(), 20, "every entry readdir named");
        // 21 left (root and 20 held), down to 8: the 13 least recently used.
        let names: Vec<String> = victims.iter().map(|(_, n)| n.clone()).collect();
        let want: Vec<String> = (102..115).map(|s: i64| s.to_string()).collect();
        assert_eq!(names, want);
        assert!(victims.iter().all(|(p, _)| *p == ROOT));
        // Nothing is dropped before the kernel forgets.
        assert_eq!(inodes.len(), 21);
    }
}
