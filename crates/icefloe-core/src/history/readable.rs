//! How many rows deleted or overwritten on the current branch stay readable through older
//! snapshots an expiry keeps, and until when: the row versions the change feed of the
//! current snapshot's history shows as removed (`delete`, `update_before`) that a kept
//! snapshot still reads.

use std::collections::BTreeMap;

use arrow::array::{Array, Int64Array, StringArray};

use super::changes::ChangeFeed;
use super::range::ancestors;
use super::retention::{ExpiryRun, ReadableRemoved, ReadableRows};
use crate::table::Table;

/// The row versions that commits of the current snapshot's history deleted or overwrote and
/// that a snapshot `run` keeps still reads, grouped by when the last such snapshot expires
/// (soonest first, never last); empty when no older snapshot of that history is kept.
/// `Ok(None)`: that history has snapshots without row lineage (format version 2, or before
/// the upgrade to 3), whose rows cannot be told apart by `_row_id`.
pub(crate) async fn readable_removed(
    table: &Table,
    run: &ExpiryRun,
) -> crate::Result<Option<Vec<ReadableRows>>> {
    let m = table.metadata();
    let Some(current) = m.current_snapshot_id else {
        return Ok(Some(Vec::new()));
    };
    if m.format_version < 3 {
        return Ok(None);
    }
    let mut chain = ancestors(m, current);
    chain.reverse();
    // Kept snapshots of the history, oldest first: (sequence number, expires at).
    let kept: Vec<(i64, Option<i64>)> = chain
        .iter()
        .filter(|s| run.kept.snapshots.contains(&s.snapshot_id))
        .map(|s| {
            let at = run.expiry.snapshots.get(&s.snapshot_id).copied().flatten();
            (s.sequence_number, at)
        })
        .collect();
    let Some(oldest) = chain
        .iter()
        .find(|s| run.kept.snapshots.contains(&s.snapshot_id))
    else {
        return Ok(Some(Vec::new()));
    };
    if oldest.snapshot_id == current {
        return Ok(Some(Vec::new()));
    }
    let feed = ChangeFeed::builder()
        .from_snapshot(oldest.snapshot_id)
        .to_snapshot(current)
        .columns(Vec::new())
        .build(table)?;
    let batches = match feed.batches().await {
        Ok(b) => b,
        // Rows without lineage: the feed cannot match them by _row_id.
        Err(crate::Error::InvalidArgument(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    // (never, expires at) -> versions; `never` sorts after every instant.
    let mut groups: BTreeMap<(bool, i64), u64> = BTreeMap::new();
    for b in &batches {
        let types = b
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("_change_type is Utf8");
        let int = |i: usize| {
            b.column(i)
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("Int64 change column")
        };
        let (commit_seq, made_seq) = (int(2), int(5));
        for r in 0..b.num_rows() {
            if !matches!(types.value(r), "delete" | "update_before") {
                continue;
            }
            // The version is read in the snapshots from the one that made it up to (not
            // including) the commit that removed it.
            let made = if made_seq.is_null(r) {
                i64::MIN
            } else {
                made_seq.value(r)
            };
            let removed = commit_seq.value(r);
            let mut until: Option<Option<i64>> = None;
            for &(seq, at) in &kept {
                if seq < made || seq >= removed {
                    continue;
                }
                until = Some(match (until, at) {
                    (Some(None), _) | (_, None) => None,
                    (Some(Some(a)), Some(b)) => Some(a.max(b)),
                    (None, Some(b)) => Some(b),
                });
            }
            if let Some(u) = until {
                *groups
                    .entry((u.is_none(), u.unwrap_or(i64::MAX)))
                    .or_default() += 1;
            }
        }
    }
    Ok(Some(
        groups
            .into_iter()
            .map(|((never, at), rows)| ReadableRows {
                until_ms: (!never).then_some(at),
                rows,
            })
            .collect(),
    ))
}

impl ExpiryRun {
    /// This run with [`readable_removed`] evaluated: how many rows deleted or overwritten in
    /// the current snapshot's history stay readable through the snapshots it keeps, and until
    /// when. Reads the change feed since the oldest kept snapshot of that history.
    pub async fn with_readable_rows(mut self, table: &Table) -> crate::Result<ExpiryRun> {
        self.readable_removed = match readable_removed(table, &self).await? {
            None => ReadableRemoved::NoLineage,
            Some(v) => ReadableRemoved::Rows(v),
        };
        Ok(self)
    }
}
