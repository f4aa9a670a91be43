//! Snapshot ancestry (spec: "Snapshots", `parent-snapshot-id`): following parents from any
//! snapshot never comes back to a snapshot already passed. A snapshot that is its own parent,
//! or a longer loop, is a history with no first commit: every walk along it (a change feed's
//! range, time travel without a snapshot log, retention) would have no end, and what each
//! snapshot changed is undefined. A parent that is no longer in the metadata (expired) ends
//! the chain, as in Iceberg Java, and is fine.

use std::collections::{HashMap, HashSet};

use crate::spec::TableMetadata;

/// The snapshot ids on a parent loop, in walk order from the first one met, when there is one.
pub fn parent_cycle(m: &TableMetadata) -> Option<Vec<i64>> {
    let ids: HashSet<i64> = m.snapshots.iter().map(|s| s.snapshot_id).collect();
    let parent: HashMap<i64, i64> = m
        .snapshots
        .iter()
        .filter_map(|s| s.parent_snapshot_id.map(|p| (s.snapshot_id, p)))
        .filter(|(_, p)| ids.contains(p))
        .collect();
    // 0: not seen; 1: on the walk in progress; 2: known to end.
    let mut state: HashMap<i64, u8> = HashMap::with_capacity(m.snapshots.len());
    for s in &m.snapshots {
        let mut path = Vec::new();
        let mut cur = Some(s.snapshot_id);
        while let Some(id) = cur {
            match state.get(&id).copied().unwrap_or(0) {
                2 => break,
                1 => {
                    let start = path.iter().position(|p| *p == id).unwrap_or(0);
                    return Some(path[start..].to_vec());
                }
                _ => {
                    state.insert(id, 1);
                    path.push(id);
                    cur = parent.get(&id).copied();
                }
            }
        }
        for id in path {
            state.insert(id, 2);
        }
    }
    None
}

/// Checks that the snapshots' parents form no loop; the error names the snapshots on it.
pub fn check_ancestry(m: &TableMetadata) -> Result<(), String> {
    match parent_cycle(m) {
        None => Ok(()),
        Some(ids) if ids.len() == 1 => Err(format!(
            "snapshot {} names itself as parent-snapshot-id: its history has no beginning",
            ids[0]
        )),
        Some(ids) => Err(format!(
            "the parent-snapshot-id chain of snapshots {} loops back to snapshot {}: the history has no beginning",
            ids.iter().map(i64::to_string).collect::<Vec<_>>().join(" -> "),
            ids[0]
        )),
    }
}
