//! A snapshot's live row count from metadata alone, where metadata makes it exact: each data
//! file's `record_count` less its deletion vector's cardinality (spec: a DV's `record_count` is
//! its cardinality, and a data file has at most one DV). V2 position delete files may overlap
//! and name a row twice, and equality deletes match values: where either applies, only a read
//! tells, so there is no count.

use super::task::FileScanTask;

/// The live rows of `tasks` (a planned scan) from their metadata; `None` when a position
/// delete file or an equality delete applies to some data file, or a count is out of range
/// (negative or overflowing: a corrupt manifest is never turned into a number).
pub fn live_rows_from_metadata(tasks: &[FileScanTask]) -> Option<i64> {
    let mut total: i64 = 0;
    for t in tasks {
        if !t.position_deletes.is_empty() || !t.equality_deletes.is_empty() {
            return None;
        }
        let deleted = t
            .deletion_vector
            .as_ref()
            .map_or(0, |dv| dv.file.record_count);
        let live = t.data_file.record_count.checked_sub(deleted)?;
        if live < 0 {
            return None;
        }
        total = total.checked_add(live)?;
    }
    Some(total)
}
