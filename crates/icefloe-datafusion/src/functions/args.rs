//! Reading a table function's arguments: each is a constant expression (a literal, `-1`,
//! `TIMESTAMP '…'`, `now() - INTERVAL '1 day'`), evaluated once when the query is planned.

use std::sync::Arc;

use arrow::datatypes::Schema as ArrowSchema;
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::catalog::Session;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, Expr};

use crate::error::SqlError;

/// How a table function is called, for its errors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Signature {
    pub name: &'static str,
    pub usage: &'static str,
    /// Fewest and most arguments (`None`: no most).
    pub min: usize,
    pub max: Option<usize>,
}

impl Signature {
    pub fn error(&self, reason: impl Into<String>) -> SqlError {
        SqlError::Arguments {
            function: self.name,
            reason: reason.into(),
            usage: self.usage,
        }
    }

    /// The arguments' values; errors when their count is out of range or one is not constant.
    pub fn values(&self, exprs: &[Expr], session: &dyn Session) -> Result<Vec<ScalarValue>> {
        let n = exprs.len();
        if n < self.min || self.max.is_some_and(|m| n > m) {
            return Err(self
                .error(format!(
                    "{n} argument{} given",
                    if n == 1 { "" } else { "s" }
                ))
                .into());
        }
        exprs
            .iter()
            .map(|e| {
                constant(e, session).map_err(|err| {
                    self.error(format!("argument {e} is not a constant: {err}"))
                        .into()
                })
            })
            .collect()
    }

    /// A text argument.
    pub fn text(&self, v: &ScalarValue, what: &str) -> Result<String, SqlError> {
        match v {
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)) => Ok(s.clone()),
            other => Err(self.error(format!("{what} must be text, not {other:?}"))),
        }
    }

    /// An integer argument.
    pub fn int(&self, v: &ScalarValue, what: &str) -> Result<i64, SqlError> {
        integer(v).ok_or_else(|| self.error(format!("{what} must be an integer, not {v:?}")))
    }

    /// An instant in milliseconds since the epoch: an integer (milliseconds), ISO-8601 text
    /// (`2026-01-31T12:00:00Z`; UTC without an offset), or a timestamp (one without a zone is
    /// read as UTC; sub-millisecond parts rounded down).
    pub fn instant_ms(&self, v: &ScalarValue, what: &str) -> Result<i64, SqlError> {
        if let Some(ms) = integer(v) {
            return Ok(ms);
        }
        let ts = |v: &Option<i64>, per_ms: i64| v.map(|x| x.div_euclid(per_ms));
        let ms = match v {
            ScalarValue::TimestampSecond(s, _) => s.and_then(|s| s.checked_mul(1000)),
            ScalarValue::TimestampMillisecond(m, _) => *m,
            ScalarValue::TimestampMicrosecond(u, _) => ts(u, 1000),
            ScalarValue::TimestampNanosecond(n, _) => ts(n, 1_000_000),
            other => {
                let text = self.text(other, what)?;
                return Ok(icefloe_core::instant::parse_instant_ms(&text)?);
            }
        };
        ms.ok_or_else(|| self.error(format!("{what} must not be NULL")))
    }
}

/// An integer scalar's value (`None` for NULL and other types).
pub(crate) fn integer(v: &ScalarValue) -> Option<i64> {
    match v {
        ScalarValue::Int8(x) => x.map(i64::from),
        ScalarValue::Int16(x) => x.map(i64::from),
        ScalarValue::Int32(x) => x.map(i64::from),
        ScalarValue::Int64(x) => *x,
        ScalarValue::UInt8(x) => x.map(i64::from),
        ScalarValue::UInt16(x) => x.map(i64::from),
        ScalarValue::UInt32(x) => x.map(i64::from),
        ScalarValue::UInt64(x) => x.and_then(|x| i64::try_from(x).ok()),
        _ => None,
    }
}

/// Evaluates a constant expression.
fn constant(e: &Expr, session: &dyn Session) -> Result<ScalarValue> {
    let physical = session.create_physical_expr(e.clone(), &DFSchema::empty())?;
    let one_row = RecordBatch::try_new_with_options(
        Arc::new(ArrowSchema::empty()),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )?;
    match physical.evaluate(&one_row)? {
        ColumnarValue::Scalar(s) => Ok(s),
        ColumnarValue::Array(a) => ScalarValue::try_from_array(&a, 0),
    }
}
