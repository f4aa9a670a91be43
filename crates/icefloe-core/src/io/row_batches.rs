//! The batches a format reader (Avro, ORC) decodes, as every reader of data files takes them.

use arrow::record_batch::RecordBatch;

/// Batches decoded by a format reader, in file order.
pub type RowBatches = Box<dyn Iterator<Item = crate::Result<RecordBatch>> + Send>;
