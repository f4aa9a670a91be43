//! Evaluating a bound filter over Arrow columns, with SQL's three-valued logic: a comparison
//! with a null is null, `NOT null` is null, `false AND null` is false, `true OR null` is true,
//! and a row is kept only where the filter is true.
//!
//! Orderings: integers and decimals numerically, strings by UTF-8 bytes, binary by unsigned
//! bytes, temporal values by instant. Floats as Spark and Postgres order them: `-0.0` equals
//! `0.0`, NaN equals NaN and is greater than every other value (infinity included).

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, FixedSizeBinaryArray,
    Float64Array, Int64Array, Scalar, StringArray, Time64MicrosecondArray,
    TimestampMicrosecondArray, TimestampNanosecondArray,
};
use arrow::compute::kernels::{boolean, cmp};
use arrow::compute::{cast, is_null};
use arrow::datatypes::{DataType, Float64Type, TimeUnit};
use arrow::error::ArrowError;

use super::bind::{BoundExpr, BoundFilter};
use super::predicate::CmpOp;
use crate::spec::Literal;

/// Evaluates `filter` over `columns` (one array per [`BoundFilter::columns`] entry, equal
/// lengths): true, false or null per row.
pub fn evaluate(filter: &BoundFilter, columns: &[ArrayRef]) -> Result<BooleanArray, ArrowError> {
    let mut normalized: Vec<Option<ArrayRef>> = vec![None; columns.len()];
    eval(&filter.expr, columns, &mut normalized)
}

fn eval(
    e: &BoundExpr,
    columns: &[ArrayRef],
    norm: &mut Vec<Option<ArrayRef>>,
) -> Result<BooleanArray, ArrowError> {
    let mut column = |i: usize| -> Result<ArrayRef, ArrowError> {
        if norm[i].is_none() {
            norm[i] = Some(normalize(&columns[i])?);
        }
        Ok(norm[i].clone().expect("set"))
    };
    match e {
        BoundExpr::Cmp {
            column: i,
            op,
            value,
        } => {
            let arr = column(*i)?;
            compare(&arr, *op, value)
        }
        BoundExpr::In { column: i, values } => {
            let arr = column(*i)?;
            let mut acc: Option<BooleanArray> = None;
            for v in values {
                let one = compare(&arr, CmpOp::Eq, v)?;
                acc = Some(match acc {
                    None => one,
                    Some(a) => boolean::or_kleene(&a, &one)?,
                });
            }
            Ok(acc.unwrap_or_else(|| BooleanArray::from(vec![false; arr.len()])))
        }
        BoundExpr::IsNull { column: i } => is_null(columns[*i].as_ref()),
        BoundExpr::And(a, b) => {
            let a = eval(a, columns, norm)?;
            let b = eval(b, columns, norm)?;
            boolean::and_kleene(&a, &b)
        }
        BoundExpr::Or(a, b) => {
            let a = eval(a, columns, norm)?;
            let b = eval(b, columns, norm)?;
            boolean::or_kleene(&a, &b)
        }
        BoundExpr::Not(a) => boolean::not(&eval(a, columns, norm)?),
    }
}

/// The column in the type its comparisons use: integers as `Int64`, floats as `Float64` with
/// `-0.0` made `0.0` and every NaN the same NaN (Arrow's kernels order floats by IEEE total
/// order, which then gives the documented ordering), decimals at precision 38.
fn normalize(arr: &ArrayRef) -> Result<ArrayRef, ArrowError> {
    Ok(match arr.data_type() {
        DataType::Int8 | DataType::Int16 | DataType::Int32 => cast(arr, &DataType::Int64)?,
        DataType::Float16 | DataType::Float32 | DataType::Float64 => {
            let wide = cast(arr, &DataType::Float64)?;
            let f = wide
                .as_any()
                .downcast_ref::<Float64Array>()
                .expect("cast to Float64");
            Arc::new(f.unary::<_, Float64Type>(normalize_float))
        }
        DataType::Decimal128(_, s) => cast(arr, &DataType::Decimal128(38, *s))?,
        _ => arr.clone(),
    })
}

fn normalize_float(v: f64) -> f64 {
    if v == 0.0 {
        0.0
    } else if v.is_nan() {
        f64::NAN
    } else {
        v
    }
}

fn compare(arr: &ArrayRef, op: CmpOp, value: &Literal) -> Result<BooleanArray, ArrowError> {
    let lit = Scalar::new(scalar(value, arr.data_type())?);
    match op {
        CmpOp::Eq => cmp::eq(arr, &lit),
        CmpOp::NotEq => cmp::neq(arr, &lit),
        CmpOp::Lt => cmp::lt(arr, &lit),
        CmpOp::LtEq => cmp::lt_eq(arr, &lit),
        CmpOp::Gt => cmp::gt(arr, &lit),
        CmpOp::GtEq => cmp::gt_eq(arr, &lit),
    }
}

/// A one-row array of `value` in the normalized column type `dt`.
fn scalar(value: &Literal, dt: &DataType) -> Result<ArrayRef, ArrowError> {
    let bad =
        || ArrowError::InvalidArgumentError(format!("cannot compare a {dt} column with {value:?}"));
    Ok(match (value, dt) {
        (Literal::Boolean(b), DataType::Boolean) => Arc::new(BooleanArray::from(vec![*b])),
        (Literal::Int(v), DataType::Int64) => Arc::new(Int64Array::from(vec![*v as i64])),
        (Literal::Long(v), DataType::Int64) => Arc::new(Int64Array::from(vec![*v])),
        (Literal::Float(v), DataType::Float64) => {
            Arc::new(Float64Array::from(vec![normalize_float(*v as f64)]))
        }
        (Literal::Double(v), DataType::Float64) => {
            Arc::new(Float64Array::from(vec![normalize_float(*v)]))
        }
        (Literal::Decimal(v), DataType::Decimal128(p, s)) => {
            Arc::new(Decimal128Array::from(vec![*v]).with_precision_and_scale(*p, *s)?)
        }
        (Literal::Date(v), DataType::Date32) => Arc::new(Date32Array::from(vec![*v])),
        (Literal::Time(v), DataType::Time64(TimeUnit::Microsecond)) => {
            Arc::new(Time64MicrosecondArray::from(vec![*v]))
        }
        (Literal::Timestamp(v), DataType::Timestamp(TimeUnit::Microsecond, tz)) => {
            Arc::new(TimestampMicrosecondArray::from(vec![*v]).with_timezone_opt(tz.clone()))
        }
        (Literal::Timestamp(v), DataType::Timestamp(TimeUnit::Nanosecond, tz)) => {
            Arc::new(TimestampNanosecondArray::from(vec![*v]).with_timezone_opt(tz.clone()))
        }
        (Literal::String(s), DataType::Utf8) => Arc::new(StringArray::from(vec![s.as_str()])),
        (Literal::Uuid(u), DataType::FixedSizeBinary(16)) => Arc::new(
            FixedSizeBinaryArray::try_from_iter(std::iter::once(u.as_slice()))?,
        ),
        (Literal::Binary(b), DataType::FixedSizeBinary(n)) if b.len() == *n as usize => Arc::new(
            FixedSizeBinaryArray::try_from_iter(std::iter::once(b.as_slice()))?,
        ),
        (Literal::Binary(b), DataType::Binary) => Arc::new(BinaryArray::from(vec![b.as_slice()])),
        _ => return Err(bad()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::bind::bind;
    use crate::expr::parse::parse;
    use crate::spec::{NestedField, PrimitiveType, Schema, StructType, Type};
    use arrow::array::Float32Array;

    fn schema() -> Schema {
        let f = |id, name: &str, p| NestedField::optional(id, name, Type::Primitive(p));
        Schema {
            schema_id: 0,
            fields: StructType {
                fields: vec![
                    f(1, "x", PrimitiveType::Float),
                    f(2, "s", PrimitiveType::String),
                ],
            },
            identifier_field_ids: vec![],
        }
    }

    /// The filter's value per row, in the order of `x` then `s` columns given.
    fn run(text: &str, x: Vec<Option<f32>>, s: Vec<Option<&str>>) -> Vec<Option<bool>> {
        let f = bind(&parse(text).unwrap(), &schema()).unwrap();
        let arrays: Vec<ArrayRef> = f
            .columns
            .iter()
            .map(|c| match c.name.as_str() {
                "x" => Arc::new(Float32Array::from(x.clone())) as ArrayRef,
                _ => Arc::new(StringArray::from(s.clone())) as ArrayRef,
            })
            .collect();
        evaluate(&f, &arrays).unwrap().iter().collect()
    }

    #[test]
    fn three_valued_logic() {
        let x = vec![Some(1.0), None, Some(3.0)];
        let s = vec![None, None, Some("a")];
        let t = Some(true);
        let f = Some(false);
        assert_eq!(run("x = 1", x.clone(), s.clone()), vec![t, None, f]);
        assert_eq!(run("x != 1", x.clone(), s.clone()), vec![f, None, t]);
        assert_eq!(run("NOT x = 1", x.clone(), s.clone()), vec![f, None, t]);
        assert_eq!(
            run("x = 1 OR s = 'a'", x.clone(), s.clone()),
            vec![t, None, t]
        );
        assert_eq!(
            run("x = 3 AND s = 'a'", x.clone(), s.clone()),
            vec![f, None, t]
        );
        assert_eq!(
            run("x > 9 AND s = 'b'", x.clone(), s.clone()),
            vec![f, None, f]
        );
        assert_eq!(run("x IS NULL", x.clone(), s.clone()), vec![f, t, f]);
        assert_eq!(run("s IS NOT NULL", x.clone(), s.clone()), vec![f, f, t]);
        assert_eq!(
            run("x NOT IN (1, 2)", x.clone(), s.clone()),
            vec![f, None, t]
        );
        assert_eq!(
            run("x NOT BETWEEN 2 AND 3", x.clone(), s.clone()),
            vec![t, None, f]
        );
        assert_eq!(run("x BETWEEN 3 AND 2", x, s), vec![f, None, f]);
    }

    #[test]
    fn floats_order_nan_last_and_zeros_equal() {
        let x = vec![
            Some(-0.0),
            Some(0.0),
            Some(f32::NAN),
            Some(f32::INFINITY),
            Some(-1.0),
        ];
        let s = vec![None; 5];
        let t = Some(true);
        let f = Some(false);
        assert_eq!(run("x = 0", x.clone(), s.clone()), vec![t, t, f, f, f]);
        assert_eq!(run("x = -0.0", x.clone(), s.clone()), vec![t, t, f, f, f]);
        assert_eq!(run("x < 0", x.clone(), s.clone()), vec![f, f, f, f, t]);
        assert_eq!(run("x = NaN", x.clone(), s.clone()), vec![f, f, t, f, f]);
        assert_eq!(
            run("x > Infinity", x.clone(), s.clone()),
            vec![f, f, t, f, f]
        );
        assert_eq!(run("x < NaN", x.clone(), s.clone()), vec![t, t, f, t, t]);
        assert_eq!(run("x >= 1e300", x, s), vec![f, f, t, t, f]);
    }

    #[test]
    fn strings_compare_bytewise() {
        // U+FFFD (EF BF BD) sorts below U+10000 (F0 90 80 80) by bytes, above it by UTF-16.
        let s = vec![Some("\u{FFFD}"), Some("\u{10000}"), Some("Z"), Some("a")];
        let x = vec![None; 4];
        let t = Some(true);
        let f = Some(false);
        assert_eq!(
            run("s < '\u{10000}'", x.clone(), s.clone()),
            vec![t, f, t, t]
        );
        assert_eq!(run("s > 'Z'", x, s), vec![t, t, f, t]);
    }
}
