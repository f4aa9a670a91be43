//! Row lineage (spec: "Row Lineage"): `_row_id` is the file's value, or when null
//! `first_row_id + _pos`; `_last_updated_sequence_number` is the file's value, or when null the
//! data file's data sequence number. A data file without a `first_row_id` (a table that had no
//! row ids yet) reads both as null.

use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, Int64Array};
use arrow::datatypes::DataType;

/// The `_row_id` column for rows at `positions` of a file.
pub fn row_ids(
    file_values: Option<&Int64Array>,
    first_row_id: Option<i64>,
    positions: &[u64],
) -> ArrayRef {
    let Some(first) = first_row_id else {
        return new_null_array(&DataType::Int64, positions.len());
    };
    let inherited = positions.iter().map(|p| first + *p as i64);
    match file_values {
        Some(vals) if vals.null_count() < vals.len() => Arc::new(
            inherited
                .enumerate()
                .map(|(i, v)| Some(if vals.is_valid(i) { vals.value(i) } else { v }))
                .collect::<Int64Array>(),
        ),
        _ => Arc::new(Int64Array::from_iter_values(inherited)),
    }
}

/// The `_last_updated_sequence_number` column for `len` rows of a file.
pub fn last_updated(
    file_values: Option<&Int64Array>,
    first_row_id: Option<i64>,
    sequence_number: i64,
    len: usize,
) -> ArrayRef {
    if first_row_id.is_none() {
        return new_null_array(&DataType::Int64, len);
    }
    match file_values {
        Some(vals) if vals.null_count() < vals.len() => Arc::new(
            (0..len)
                .map(|i| {
                    Some(if vals.is_valid(i) {
                        vals.value(i)
                    } else {
                        sequence_number
                    })
                })
                .collect::<Int64Array>(),
        ),
        _ => Arc::new(Int64Array::from_value(sequence_number, len)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inherits_where_null() {
        let file = Int64Array::from(vec![Some(7), None]);
        let ids = row_ids(Some(&file), Some(100), &[0, 5]);
        let ids = ids.as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(ids.values().to_vec(), vec![7, 105]);
        let seq = last_updated(Some(&file), Some(100), 3, 2);
        let seq = seq.as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(seq.values().to_vec(), vec![7, 3]);
        assert_eq!(row_ids(None, None, &[0, 1]).null_count(), 2);
    }
}
