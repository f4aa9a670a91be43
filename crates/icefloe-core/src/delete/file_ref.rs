//! A delete file as it applies to a data file: the file and the data sequence number it
//! applies with (spec: "Scan Planning", delete file scoping by sequence number).

use std::sync::Arc;

use crate::spec::DataFile;

/// A delete file with the data sequence number it applies with.
#[derive(Debug, Clone, PartialEq)]
pub struct DeleteFileRef {
    pub file: Arc<DataFile>,
    pub sequence_number: i64,
}
