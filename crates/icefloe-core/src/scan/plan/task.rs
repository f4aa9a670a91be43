//! A file scan task: one data file to read and the delete files that apply to it, the unit
//! planning hands to reading.

use std::sync::Arc;

use crate::spec::DataFile;

pub use crate::delete::file_ref::DeleteFileRef;

/// One data file to read, with everything needed to read it as of the snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct FileScanTask {
    pub data_file: Arc<DataFile>,
    /// The data file's data sequence number (inherited `_last_updated_sequence_number`).
    pub sequence_number: i64,
    /// First `_row_id` of the file; `None` before the table had row ids.
    pub first_row_id: Option<i64>,
    /// The deletion vector that applies, if any (then `position_deletes` is empty).
    pub deletion_vector: Option<DeleteFileRef>,
    /// V2 position delete files that apply.
    pub position_deletes: Vec<DeleteFileRef>,
    /// Equality delete files that apply.
    pub equality_deletes: Vec<DeleteFileRef>,
}

impl FileScanTask {
    /// Whether any delete applies to this file.
    pub fn has_deletes(&self) -> bool {
        self.deletion_vector.is_some()
            || !self.position_deletes.is_empty()
            || !self.equality_deletes.is_empty()
    }

    /// The most rows this task can yield, known before reading: the data file's record count
    /// less its deletion vector's cardinality (position and equality deletes are only known
    /// once read). For progress estimates, never for results.
    pub fn max_live_rows(&self) -> u64 {
        let dv = self
            .deletion_vector
            .as_ref()
            .map_or(0, |dv| dv.file.record_count);
        (self.data_file.record_count - dv).max(0) as u64
    }
}
