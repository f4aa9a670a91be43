//! A scan's row filter: the columns it needs beside the projection, and applying it to each
//! read batch after deletes and lineage, so that filtered rows keep the `_row_id` and
//! `_last_updated_sequence_number` of an unfiltered read.

use arrow::array::ArrayRef;
use arrow::compute::filter_record_batch;
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;

use crate::expr::{eval::evaluate, BoundFilter};
use crate::spec::arrow_schema::field_id;

/// A bound filter placed in the read batches' schema.
#[derive(Debug)]
pub struct RowFilter {
    pub filter: BoundFilter,
    /// Index in the read batch of each filter column.
    columns: Vec<usize>,
    /// Index in the read batch of each output column.
    projection: Vec<usize>,
    /// The output schema (the read schema without the columns only the filter needs).
    pub schema: SchemaRef,
}

impl RowFilter {
    /// Places `filter` in `read` (the schema of read batches, which holds every filter column
    /// by field id) and projects to `output` (a subset of `read`, by field id and position).
    pub fn new(filter: BoundFilter, read: &SchemaRef, output: SchemaRef) -> crate::Result<Self> {
        let ids: Vec<Option<i32>> = read.fields().iter().map(|f| field_id(f)).collect();
        let find = |id: i32| {
            ids.iter().position(|x| *x == Some(id)).ok_or_else(|| {
                crate::Error::InvalidArgument(format!("the filter needs field {id}, not read"))
            })
        };
        let columns = filter
            .columns
            .iter()
            .map(|c| find(c.field_id))
            .collect::<crate::Result<_>>()?;
        let projection = output
            .fields()
            .iter()
            .map(|f| match field_id(f) {
                Some(id) => find(id),
                None => read.index_of(f.name()).map_err(|e| {
                    crate::Error::InvalidArgument(format!("output column {}: {e}", f.name()))
                }),
            })
            .collect::<crate::Result<_>>()?;
        Ok(RowFilter {
            filter,
            columns,
            projection,
            schema: output,
        })
    }

    /// The rows of `batch` where the filter is true, in the output columns.
    pub fn apply(&self, batch: &RecordBatch, path: &str) -> crate::Result<RecordBatch> {
        let arrow = |e: arrow::error::ArrowError| {
            crate::Error::data_file(path, format!("cannot apply the filter: {e}"))
        };
        let cols: Vec<ArrayRef> = self
            .columns
            .iter()
            .map(|i| batch.column(*i).clone())
            .collect();
        let keep = evaluate(&self.filter, &cols).map_err(arrow)?;
        let kept = filter_record_batch(batch, &keep).map_err(arrow)?;
        let out = kept.project(&self.projection).map_err(arrow)?;
        // The projection keeps the read schema's metadata; the output schema is the one the
        // scan announces.
        RecordBatch::try_new(self.schema.clone(), out.columns().to_vec()).map_err(arrow)
    }
}
