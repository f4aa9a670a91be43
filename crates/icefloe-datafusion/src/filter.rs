//! DataFusion's pushed-down filters as the core's row filter ([`icefloe_core::expr`], the
//! expression type of `icefloe cat --where`), which prunes manifests, data files, row groups
//! and pages and drops rows while reading.
//!
//! Every filter given to the core is [`Inexact`](TableProviderFilterPushDown::Inexact):
//! DataFusion evaluates it again over the rows the scan returns. So the core only has to keep
//! every row DataFusion keeps (it may keep more); a filter is handed over only where the core's
//! semantics are DataFusion's for every value:
//!
//! - comparisons (`=`, `!=`, `<`, `<=`, `>`, `>=`), `IN`, `BETWEEN`, `IS [NOT] NULL`, `AND`,
//!   `OR`, `NOT`, between a top-level column (or `_row_id`, `_last_updated_sequence_number`)
//!   and literals of the column's own Arrow type (an integer or `float` column widened by a
//!   cast too);
//! - over boolean, integer, `float`, `double`, decimal, string, binary, fixed, date, time and
//!   timestamp columns (with or without zone, micro- or nanoseconds). Floats compare alike in
//!   both: `-0.0` equals `0.0`, NaN equals NaN and is above every other value.
//!
//! Not handed over (DataFusion filters them alone): `uuid`, variant, geometry and geography
//! columns, nested columns, metadata columns, functions, `LIKE`, and anything the core's
//! binder refuses (a value its column cannot hold exactly).

use arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator, TableProviderFilterPushDown};
use icefloe_core::encode::format::{push_date, push_decimal, push_time, push_timestamp};
use icefloe_core::expr::parse::{
    ColumnRef, Expr as CoreExpr, Filter, TypedKeyword, ValueKind, ValueRef,
};
use icefloe_core::expr::predicate::CmpOp;
use icefloe_core::spec::Schema;

/// The core's filter for `expr`, when it can take it (see the module docs). `column_type`
/// gives the Arrow type of a column the SQL table shows (`None` for names it does not show
/// or that are not filterable: metadata columns).
pub(crate) fn to_core(
    expr: &Expr,
    column_type: &dyn Fn(&str) -> Option<DataType>,
) -> Option<CoreExpr> {
    let t = Translator { column_type };
    t.expr(expr)
}

/// Whether the core can take `expr`: translated, and bound to `schema` (the schema read) without
/// error.
pub(crate) fn pushdown(
    expr: &Expr,
    column_type: &dyn Fn(&str) -> Option<DataType>,
    schema: &Schema,
) -> TableProviderFilterPushDown {
    match to_core(expr, column_type).map(|e| filter(vec![(expr, e)])) {
        Some(f) if icefloe_core::expr::bind(&f, schema).is_ok() => {
            TableProviderFilterPushDown::Inexact
        }
        _ => TableProviderFilterPushDown::Unsupported,
    }
}

/// The conjunction of translated filters, with DataFusion's text of them (for messages).
pub(crate) fn filter(parts: Vec<(&Expr, CoreExpr)>) -> Filter {
    let text = parts
        .iter()
        .map(|(e, _)| format!("({e})"))
        .collect::<Vec<_>>()
        .join(" AND ");
    let expr = parts
        .into_iter()
        .map(|(_, c)| c)
        .reduce(|a, b| CoreExpr::And(Box::new(a), Box::new(b)))
        .expect("at least one filter");
    Filter { text, expr }
}

struct Translator<'a> {
    column_type: &'a dyn Fn(&str) -> Option<DataType>,
}

/// A column reference, with the Arrow type its values are compared in (a widening cast's
/// target).
struct Col {
    name: String,
    ty: DataType,
}

impl Translator<'_> {
    fn expr(&self, e: &Expr) -> Option<CoreExpr> {
        match e {
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
                Operator::And => Some(CoreExpr::And(
                    Box::new(self.expr(left)?),
                    Box::new(self.expr(right)?),
                )),
                Operator::Or => Some(CoreExpr::Or(
                    Box::new(self.expr(left)?),
                    Box::new(self.expr(right)?),
                )),
                _ => {
                    let op = cmp_op(*op)?;
                    // column op value, or value op column (the operator commuted).
                    let (col, value, op) = match (self.column(left), self.column(right)) {
                        (Some(c), None) => (c, right, op),
                        (None, Some(c)) => (c, left, op.commute()),
                        _ => return None,
                    };
                    if !comparable(&col.ty) {
                        return None;
                    }
                    let value = literal(value, &col.ty)?;
                    Some(CoreExpr::Cmp {
                        column: column_ref(col.name),
                        op,
                        value,
                    })
                }
            },
            Expr::Not(inner) => Some(CoreExpr::Not(Box::new(self.expr(inner)?))),
            Expr::IsNull(inner) | Expr::IsNotNull(inner) => {
                let col = self.column(inner)?;
                Some(CoreExpr::IsNull {
                    column: column_ref(col.name),
                    negated: matches!(e, Expr::IsNotNull(_)),
                })
            }
            Expr::InList(list) => {
                let col = self.column(&list.expr)?;
                if !comparable(&col.ty) || list.list.is_empty() {
                    return None;
                }
                let values = list
                    .list
                    .iter()
                    .map(|v| literal(v, &col.ty))
                    .collect::<Option<Vec<_>>>()?;
                Some(CoreExpr::In {
                    column: column_ref(col.name),
                    values,
                    negated: list.negated,
                })
            }
            Expr::Between(b) => {
                let col = self.column(&b.expr)?;
                if !comparable(&col.ty) {
                    return None;
                }
                Some(CoreExpr::Between {
                    low: literal(&b.low, &col.ty)?,
                    high: literal(&b.high, &col.ty)?,
                    column: column_ref(col.name),
                    negated: b.negated,
                })
            }
            _ => None,
        }
    }

    /// `e` as a column of the table (unqualified name: the scan has one table), or as an
    /// integer column widened by a cast.
    fn column(&self, e: &Expr) -> Option<Col> {
        match e {
            Expr::Column(c) => {
                let ty = (self.column_type)(&c.name)?;
                Some(Col {
                    name: c.name.clone(),
                    ty,
                })
            }
            Expr::Cast(cast) => {
                let inner = self.column(&cast.expr)?;
                let to = cast.field.data_type();
                let widening = int_width(&inner.ty)
                    .zip(int_width(to))
                    .is_some_and(|(from, to)| from.1 == to.1 && from.0 <= to.0);
                widening.then(|| Col {
                    name: inner.name,
                    ty: to.clone(),
                })
            }
            _ => None,
        }
    }
}

/// Bits and kind (integer: true, float: false) of a numeric type whose values a wider type of
/// the same kind holds exactly.
fn int_width(t: &DataType) -> Option<(u32, bool)> {
    Some(match t {
        DataType::Int8 => (8, true),
        DataType::Int16 => (16, true),
        DataType::Int32 => (32, true),
        DataType::Int64 => (64, true),
        // Floats as their own kind: `float` widens to `double` exactly.
        DataType::Float32 => (32, false),
        DataType::Float64 => (64, false),
        _ => return None,
    })
}

/// Whether the core orders values of Arrow type `t` as DataFusion does.
fn comparable(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Boolean
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Decimal128(..)
            | DataType::Utf8
            | DataType::Binary
            | DataType::Date32
            | DataType::Time64(TimeUnit::Microsecond)
            | DataType::Timestamp(TimeUnit::Microsecond | TimeUnit::Nanosecond, _)
    )
}

fn cmp_op(op: Operator) -> Option<CmpOp> {
    Some(match op {
        Operator::Eq => CmpOp::Eq,
        Operator::NotEq => CmpOp::NotEq,
        Operator::Lt => CmpOp::Lt,
        Operator::LtEq => CmpOp::LtEq,
        Operator::Gt => CmpOp::Gt,
        Operator::GtEq => CmpOp::GtEq,
        _ => return None,
    })
}

fn column_ref(name: String) -> ColumnRef {
    ColumnRef { name, pos: 0 }
}

/// A literal of exactly Arrow type `ty` as the core's written value (NULL: none; DataFusion
/// folds comparisons with NULL itself).
fn literal(e: &Expr, ty: &DataType) -> Option<ValueRef> {
    let Expr::Literal(v, _) = e else {
        return None;
    };
    if &v.data_type() != ty || v.is_null() {
        return None;
    }
    let text = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut out = Vec::new();
        f(&mut out);
        String::from_utf8(out).ok()
    };
    let kind = match v {
        ScalarValue::Boolean(Some(b)) => ValueKind::Boolean(*b),
        ScalarValue::Int8(Some(x)) => ValueKind::Number(x.to_string()),
        ScalarValue::Int16(Some(x)) => ValueKind::Number(x.to_string()),
        ScalarValue::Int32(Some(x)) => ValueKind::Number(x.to_string()),
        ScalarValue::Int64(Some(x)) => ValueKind::Number(x.to_string()),
        // The float's exact value (a `float` widened to `double`), in the shortest text that
        // reads back as it.
        ScalarValue::Float32(Some(x)) => ValueKind::Number(float_text(f64::from(*x))),
        ScalarValue::Float64(Some(x)) => ValueKind::Number(float_text(*x)),
        ScalarValue::Decimal128(Some(x), _, scale) => {
            ValueKind::Number(text(&|o| push_decimal(o, *x, *scale))?)
        }
        ScalarValue::Utf8(Some(s)) => ValueKind::String(s.clone()),
        ScalarValue::Binary(Some(b)) | ScalarValue::FixedSizeBinary(_, Some(b)) => {
            ValueKind::Bytes(b.clone())
        }
        ScalarValue::Date32(Some(d)) => {
            ValueKind::Typed(TypedKeyword::Date, text(&|o| push_date(o, i64::from(*d)))?)
        }
        ScalarValue::Time64Microsecond(Some(t)) => ValueKind::Typed(
            TypedKeyword::Time,
            text(&|o| push_time(o, *t, TimeUnit::Microsecond))?,
        ),
        // The instant in UTC with its offset: the core converts it to the column's units,
        // with or without zone alike.
        ScalarValue::TimestampMicrosecond(Some(t), _) => ValueKind::Typed(
            TypedKeyword::Timestamp,
            text(&|o| push_timestamp(o, *t, TimeUnit::Microsecond, true))?,
        ),
        ScalarValue::TimestampNanosecond(Some(t), _) => ValueKind::Typed(
            TypedKeyword::Timestamp,
            text(&|o| push_timestamp(o, *t, TimeUnit::Nanosecond, true))?,
        ),
        _ => return None,
    };
    Some(ValueRef { kind, pos: 0 })
}

/// A double as the core's filter reads it back exactly (`NaN`, `Infinity`, `-Infinity`).
fn float_text(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        format!("{x:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::{col, lit};

    fn types(name: &str) -> Option<DataType> {
        match name {
            "i" => Some(DataType::Int32),
            "x" => Some(DataType::Float64),
            "s" => Some(DataType::Utf8),
            "ts" => Some(DataType::Timestamp(
                TimeUnit::Microsecond,
                Some("+00:00".into()),
            )),
            _ => None,
        }
    }

    #[test]
    fn what_is_handed_to_the_core() {
        let t = |e: Expr| to_core(&e, &types);
        assert!(matches!(
            t(col("i").eq(lit(5i32))),
            Some(CoreExpr::Cmp { op: CmpOp::Eq, .. })
        ));
        // 5 > i is i < 5.
        assert!(matches!(
            t(lit(5i32).gt(col("i"))),
            Some(CoreExpr::Cmp { op: CmpOp::Lt, .. })
        ));
        // A literal of another type, floats, unknown columns, functions: not handed over.
        assert!(t(col("i").eq(lit(5i64))).is_none());
        assert!(t(col("x").is_null()).is_some());
        match t(col("x").lt(lit(0.1f32))) {
            None => {}
            Some(other) => panic!("a float literal of another type: {other:?}"),
        }
        match t(col("x").lt(lit(f64::from(0.1f32)))) {
            Some(CoreExpr::Cmp { value, .. }) => {
                assert_eq!(value.kind, ValueKind::Number("0.10000000149011612".into()))
            }
            other => panic!("{other:?}"),
        }
        assert!(t(col("nope").eq(lit(1i32))).is_none());
        assert!(t(col("s").like(lit("a%"))).is_none());
        // An OR is handed over only whole.
        assert!(t(col("i").eq(lit(1i32)).or(col("nope").lt(lit(0.0f64)))).is_none());
        assert!(t(col("i").eq(lit(1i32)).or(col("s").eq(lit("a")))).is_some());
        let ts = ScalarValue::TimestampMicrosecond(Some(-1), Some("+00:00".into()));
        match t(col("ts").gt_eq(Expr::Literal(ts, None))) {
            Some(CoreExpr::Cmp { value, .. }) => assert_eq!(
                value.kind,
                ValueKind::Typed(
                    TypedKeyword::Timestamp,
                    "1969-12-31T23:59:59.999999+00:00".into()
                )
            ),
            other => panic!("{other:?}"),
        }
    }
}
