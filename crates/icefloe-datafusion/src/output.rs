//! A query result made writable by the core's encoders (CSV, JSON Lines, Parquet): SQL can
//! make Arrow types that no Iceberg table has (intervals, durations, dictionaries, `Date64`,
//! `Float16`, `Decimal256`); each top-level column of such a type is cast to one the encoders
//! write, keeping its value: dictionaries to their values, `Float16` to `Float32`, `Date64`
//! to a millisecond timestamp, the others to their text (Arrow's display of them).

use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef, TimeUnit};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};

use crate::error::SqlError;

/// The type a column of type `t` is written as (`t` itself when the encoders write it).
pub fn writable_type(t: &DataType) -> DataType {
    match t {
        DataType::Dictionary(_, v) => writable_type(v),
        DataType::Float16 => DataType::Float32,
        DataType::Date64 => DataType::Timestamp(TimeUnit::Millisecond, None),
        DataType::Decimal256(..)
        | DataType::Interval(_)
        | DataType::Duration(_)
        | DataType::Time32(TimeUnit::Microsecond | TimeUnit::Nanosecond)
        | DataType::Time64(TimeUnit::Second | TimeUnit::Millisecond)
        | DataType::Union(..)
        | DataType::RunEndEncoded(..) => DataType::Utf8,
        other => other.clone(),
    }
}

/// The schema `schema`'s batches are written with ([`writable_type`] of each column; field
/// metadata kept).
pub fn writable_schema(schema: &SchemaRef) -> SchemaRef {
    if schema
        .fields()
        .iter()
        .all(|f| &writable_type(f.data_type()) == f.data_type())
    {
        return schema.clone();
    }
    Arc::new(ArrowSchema::new_with_metadata(
        schema
            .fields()
            .iter()
            .map(|f| {
                Field::new(f.name(), writable_type(f.data_type()), f.is_nullable())
                    .with_metadata(f.metadata().clone())
            })
            .collect::<Vec<_>>(),
        schema.metadata().clone(),
    ))
}

/// `batch` in `schema` (from [`writable_schema`] of its schema). Errors: a value Arrow cannot
/// cast (a union or run-end encoded column of a type without text).
pub fn writable_batch(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, SqlError> {
    if batch.schema_ref() == schema {
        return Ok(batch.clone());
    }
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| {
            if c.data_type() == f.data_type() {
                return Ok(c.clone());
            }
            arrow::compute::cast(c, f.data_type()).map_err(|_| SqlError::Output {
                column: f.name().clone(),
                data_type: c.data_type().to_string(),
                what: "CSV, JSON Lines or Parquet",
            })
        })
        .collect::<Result<Vec<ArrayRef>, _>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(schema.clone(), columns, &options).map_err(|e| {
        SqlError::Output {
            column: String::new(),
            data_type: e.to_string(),
            what: "a batch",
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{DurationSecondArray, Int32Array};

    #[test]
    fn durations_become_text() {
        let schema = Arc::new(ArrowSchema::new(vec![
            Field::new("d", DataType::Duration(TimeUnit::Second), true),
            Field::new("i", DataType::Int32, true),
        ]));
        let b = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(DurationSecondArray::from(vec![Some(90), None])),
                Arc::new(Int32Array::from(vec![1, 2])),
            ],
        )
        .unwrap();
        let out_schema = writable_schema(&schema);
        assert_eq!(out_schema.field(0).data_type(), &DataType::Utf8);
        let out = writable_batch(&b, &out_schema).unwrap();
        assert_eq!(out.num_rows(), 2);
        assert!(out.column(0).is_null(1));
    }
}
