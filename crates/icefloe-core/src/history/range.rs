//! The commits between two snapshots: `to`'s ancestors back to (not including) `from`
//! (spec: "Snapshots", `parent-snapshot-id`).

use crate::spec::{Snapshot, TableMetadata};

/// The snapshots committed after `from` up to and including `to`, oldest first. Errors when
/// either id is not in the metadata, or `from` is not an ancestor of `to` (then no range of
/// commits leads from one to the other).
pub fn commits_between<'a>(
    m: &'a TableMetadata,
    from: i64,
    to: i64,
    metadata_file: &str,
) -> crate::Result<Vec<&'a Snapshot>> {
    let find = |id: i64| {
        m.snapshot(id).ok_or_else(|| {
            crate::Error::SnapshotNotFound(format!("snapshot {id} not found in {metadata_file}"))
        })
    };
    find(from)?;
    let mut chain = Vec::new();
    let mut cur = Some(find(to)?);
    while let Some(s) = cur {
        if s.snapshot_id == from {
            chain.reverse();
            return Ok(chain);
        }
        chain.push(s);
        // A parent loop (refused when the metadata is read) must not make this endless.
        if chain.len() > m.snapshots.len() {
            break;
        }
        cur = s.parent_snapshot_id.and_then(|p| m.snapshot(p));
    }
    Err(crate::Error::InvalidArgument(format!(
        "snapshot {from} is not an ancestor of snapshot {to}: changes are read along one line of \
         commits, from an older snapshot to a later one on the same branch (an ancestor of \
         --to must be --from)"
    )))
}

/// The ancestors of `id`, itself first, as far as the metadata still holds them.
pub fn ancestors(m: &TableMetadata, id: i64) -> Vec<&Snapshot> {
    let mut out = Vec::new();
    let mut cur = m.snapshot(id);
    while let Some(s) = cur {
        out.push(s);
        cur = s.parent_snapshot_id.and_then(|p| m.snapshot(p));
        if out.len() > m.snapshots.len() {
            break; // a parent cycle; validation rejects it, this only bounds the walk
        }
    }
    out
}

/// Every snapshot from the table's creation up to and including `to`, oldest first: `to`'s
/// ancestors down to the first snapshot, the one without a parent. Errors when `to` is not in
/// the metadata, or when the oldest ancestor the metadata holds still names a parent (that
/// parent was expired, so what the table held before it cannot be read).
pub fn commits_since_creation<'a>(
    m: &'a TableMetadata,
    to: i64,
    metadata_file: &str,
) -> crate::Result<Vec<&'a Snapshot>> {
    if m.snapshot(to).is_none() {
        return Err(crate::Error::SnapshotNotFound(format!(
            "snapshot {to} not found in {metadata_file}"
        )));
    }
    let mut chain = ancestors(m, to);
    let oldest = chain.last().expect("to is in the metadata");
    if let Some(parent) = oldest.parent_snapshot_id {
        let first = oldest.snapshot_id;
        if m.snapshot(parent).is_some() {
            return Err(crate::Error::metadata(
                metadata_file,
                format!("the parents of snapshot {to} form a cycle through snapshot {parent}"),
            ));
        }
        return Err(crate::Error::InvalidArgument(format!(
            "changes since the table's creation: the oldest ancestor of snapshot {to} in \
             {metadata_file}, snapshot {first}, names parent {parent}, which was expired, so what \
             the table held before {first} cannot be read; give --from {first} for the changes \
             after it"
        )));
    }
    chain.reverse();
    Ok(chain)
}
