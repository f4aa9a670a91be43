//! An estimate of a snapshot's live rows from its summary alone (spec: "Snapshots", the
//! optional summary fields `total-records`, `total-position-deletes` and
//! `total-equality-deletes`), for a planner that must guess a row count before any manifest is
//! read. Where metadata makes the count exact, [`super::live_count`] gives it from the plan.

use crate::spec::Snapshot;

/// Live rows of `snapshot` estimated from its summary: `total-records` less
/// `total-position-deletes` (deletion vectors included) and `total-equality-deletes` (an upper
/// bound of the rows they remove), in rows, never below 0. A missing delete count counts as 0;
/// `None` when the summary has no numeric `total-records` (the summary is optional).
pub fn live_rows_from_summary(snapshot: &Snapshot) -> Option<u64> {
    let records = snapshot.summary_i64("total-records")?;
    let deleted = snapshot
        .summary_i64("total-position-deletes")
        .unwrap_or(0)
        .saturating_add(snapshot.summary_i64("total-equality-deletes").unwrap_or(0));
    Some(records.saturating_sub(deleted).max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(summary: &[(&str, &str)]) -> Snapshot {
        Snapshot {
            snapshot_id: 1,
            parent_snapshot_id: None,
            sequence_number: 1,
            timestamp_ms: 0,
            manifest_list: None,
            manifests: Vec::new(),
            summary: summary
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            schema_id: None,
            first_row_id: None,
            added_rows: None,
        }
    }

    #[test]
    fn records_less_deletes() {
        let s = snapshot(&[
            ("operation", "delete"),
            ("total-records", "1000"),
            ("total-position-deletes", "30"),
            ("total-equality-deletes", "7"),
        ]);
        assert_eq!(live_rows_from_summary(&s), Some(963));
        // Delete counts are optional.
        let s = snapshot(&[("total-records", "1000")]);
        assert_eq!(live_rows_from_summary(&s), Some(1000));
        // Equality deletes may name more rows than remain: never below 0.
        let s = snapshot(&[("total-records", "5"), ("total-equality-deletes", "9")]);
        assert_eq!(live_rows_from_summary(&s), Some(0));
    }

    #[test]
    fn no_estimate_without_total_records() {
        assert_eq!(live_rows_from_summary(&snapshot(&[])), None);
        let s = snapshot(&[("total-records", "many"), ("total-position-deletes", "1")]);
        assert_eq!(live_rows_from_summary(&s), None);
    }
}
