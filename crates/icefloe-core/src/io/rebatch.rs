//! Batches of a fixed number of rows from batches of any size. A slice read over its span and
//! filtered ([`super::row_selection::span_filter`]) gives batches of whatever rows survived
//! each span batch, while every other read gives `batch_size` selected rows a batch, and a read
//! restarted at a batch ([`crate::scan::resume`]) relies on those boundaries: cut again here,
//! the filtered slice's batches are the reader's.

use std::collections::VecDeque;

use arrow::record_batch::RecordBatch;
use futures::stream::BoxStream;
use futures::StreamExt;

/// The rows of `batches`, in order, as batches of exactly `size` rows (at least 1) but the
/// last; empty batches are dropped. A batch made of pieces of several is a copy of them (a
/// batch within one is a slice of it, without a copy). An error ends the stream; `shown`
/// names the data file in errors.
pub fn rebatch(
    batches: BoxStream<'static, crate::Result<RecordBatch>>,
    size: usize,
    shown: String,
) -> BoxStream<'static, crate::Result<RecordBatch>> {
    let state = Rebatch {
        batches,
        pending: VecDeque::new(),
        rows: 0,
        size: size.max(1),
        done: false,
        shown,
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            if st.rows >= st.size {
                let n = st.size;
                return Some((st.take(n), st));
            }
            if st.done {
                let n = st.rows;
                return (n > 0).then(|| (st.take(n), st));
            }
            match st.batches.next().await {
                Some(Ok(b)) if b.num_rows() > 0 => {
                    st.rows += b.num_rows();
                    st.pending.push_back(b);
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    st.done = true;
                    st.pending.clear();
                    st.rows = 0;
                    return Some((Err(e), st));
                }
                None => st.done = true,
            }
        }
    })
    .boxed()
}

/// Rows received and not yet handed on.
struct Rebatch {
    batches: BoxStream<'static, crate::Result<RecordBatch>>,
    pending: VecDeque<RecordBatch>,
    /// The rows of `pending`.
    rows: usize,
    size: usize,
    /// Whether `batches` has ended.
    done: bool,
    shown: String,
}

impl Rebatch {
    /// The first `n` pending rows (`n <= self.rows`) as one batch.
    fn take(&mut self, n: usize) -> crate::Result<RecordBatch> {
        let mut parts = Vec::new();
        let mut need = n;
        while need > 0 {
            let Some(b) = self.pending.pop_front() else {
                break;
            };
            if b.num_rows() <= need {
                need -= b.num_rows();
                parts.push(b);
            } else {
                parts.push(b.slice(0, need));
                self.pending.push_front(b.slice(need, b.num_rows() - need));
                need = 0;
            }
        }
        self.rows -= n - need;
        match parts.len() {
            1 => Ok(parts.pop().expect("one part")),
            _ => {
                let schema = parts
                    .first()
                    .map(RecordBatch::schema)
                    .ok_or_else(|| crate::Error::data_file(&self.shown, "no rows to batch"))?;
                arrow::compute::concat_batches(&schema, &parts).map_err(|e| {
                    crate::Error::data_file(&self.shown, format!("batching rows: {e}"))
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Array, Int64Array};
    use arrow::datatypes::{DataType, Field, Schema};
    use futures::TryStreamExt;

    use super::*;

    fn batch(values: std::ops::Range<i64>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from_iter_values(values))]).unwrap()
    }

    fn values(b: &RecordBatch) -> Vec<i64> {
        let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        a.values().to_vec()
    }

    #[tokio::test]
    async fn batches_of_exactly_size_rows_in_order_whatever_came_in() {
        // Pieces of 3, 0, 7, 1, 10 and 2 rows (23 in all) in batches of 5: 5, 5, 5, 5, 3.
        let mut input = Vec::new();
        let mut at = 0;
        for n in [3, 0, 7, 1, 10, 2] {
            input.push(Ok(batch(at..at + n)));
            at += n;
        }
        let out: Vec<RecordBatch> = rebatch(futures::stream::iter(input).boxed(), 5, "f".into())
            .try_collect()
            .await
            .unwrap();
        let sizes: Vec<usize> = out.iter().map(RecordBatch::num_rows).collect();
        assert_eq!(sizes, [5, 5, 5, 5, 3]);
        let all: Vec<i64> = out.iter().flat_map(values).collect();
        assert_eq!(all, (0..23).collect::<Vec<_>>());
        // Nothing in, nothing out; a size of 0 is taken as 1.
        let none: Vec<RecordBatch> = rebatch(futures::stream::empty().boxed(), 5, "f".into())
            .try_collect()
            .await
            .unwrap();
        assert!(none.is_empty());
        let ones: Vec<RecordBatch> = rebatch(
            futures::stream::iter([Ok(batch(0..3))]).boxed(),
            0,
            "f".into(),
        )
        .try_collect()
        .await
        .unwrap();
        assert_eq!(ones.len(), 3);
    }

    #[tokio::test]
    async fn an_error_ends_the_stream_after_the_rows_before_it() {
        let input = vec![
            Ok(batch(0..7)),
            Err(crate::Error::data_file("f", "broken page")),
            Ok(batch(7..9)),
        ];
        let out: Vec<crate::Result<RecordBatch>> =
            rebatch(futures::stream::iter(input).boxed(), 5, "f".into())
                .collect()
                .await;
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(values(out[0].as_ref().unwrap()), [0, 1, 2, 3, 4]);
        assert!(out[1]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("broken page"));
    }
}
