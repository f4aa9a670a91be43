//! Binding a parsed filter to the reading schema: column names become top-level primitive
//! columns (or the lineage columns `_row_id` and `_last_updated_sequence_number`), and every
//! value becomes a [`Literal`] in the units of its column's type.
//!
//! Values keep their exact meaning: an integer column compares with integers (as `long`, so
//! `i < 3000000000` is exact for an `int`), a float column with any number (as `double`, the
//! float widened exactly), a decimal with numbers that its scale holds exactly, temporal
//! columns with ISO-8601 text (a timestamp with `Z` or `±HH[:MM]` is converted to UTC; without
//! one it is read as UTC). A value the column's type cannot hold exactly is an error, never
//! rounded.

use chrono::{NaiveDate, NaiveTime, Timelike};

use super::parse::{ColumnRef, Expr, ExprError, Filter, TypedKeyword, ValueKind, ValueRef};
use super::predicate::CmpOp;
use crate::spec::arrow_schema::{
    LAST_UPDATED_SEQ, LAST_UPDATED_SEQ_FIELD_ID, ROW_ID, ROW_ID_FIELD_ID,
};
use crate::spec::{Literal, PrimitiveType, Schema, Type};

/// A column a bound filter reads.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundColumn {
    pub name: String,
    pub field_id: i32,
    pub ty: PrimitiveType,
    /// `_row_id` or `_last_updated_sequence_number`.
    pub lineage: bool,
}

/// A filter over the columns of [`BoundFilter::columns`] (by index), values typed.
#[derive(Debug, Clone, PartialEq)]
pub enum BoundExpr {
    Cmp {
        column: usize,
        op: CmpOp,
        value: Literal,
    },
    In {
        column: usize,
        values: Vec<Literal>,
    },
    IsNull {
        column: usize,
    },
    And(Box<BoundExpr>, Box<BoundExpr>),
    Or(Box<BoundExpr>, Box<BoundExpr>),
    Not(Box<BoundExpr>),
}

/// A filter bound to a schema.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundFilter {
    pub expr: BoundExpr,
    /// The columns it reads, each once.
    pub columns: Vec<BoundColumn>,
}

impl BoundFilter {
    /// Whether the filter reads a lineage column.
    pub fn uses_lineage(&self) -> bool {
        self.columns.iter().any(|c| c.lineage)
    }
}

/// Binds `filter` to `schema` (the reading schema). Errors name the unknown column or the
/// value that does not fit, with its position.
pub fn bind(filter: &Filter, schema: &Schema) -> Result<BoundFilter, ExprError> {
    let mut b = Binder {
        text: &filter.text,
        schema,
        columns: Vec::new(),
    };
    let expr = b.expr(&filter.expr)?;
    Ok(BoundFilter {
        expr,
        columns: b.columns,
    })
}

struct Binder<'a> {
    text: &'a str,
    schema: &'a Schema,
    columns: Vec<BoundColumn>,
}

impl Binder<'_> {
    fn err(&self, pos: usize, m: String) -> ExprError {
        ExprError::new(self.text, pos, m)
    }

    fn expr(&mut self, e: &Expr) -> Result<BoundExpr, ExprError> {
        Ok(match e {
            Expr::Cmp { column, op, value } => {
                let (c, ty) = self.column(column)?;
                let value = self.value(value, &ty, column)?;
                let cmp = |op| BoundExpr::Cmp {
                    column: c,
                    op,
                    value: value.clone(),
                };
                match op {
                    // a != b is NOT (a = b): null stays null.
                    CmpOp::NotEq => BoundExpr::Not(Box::new(cmp(CmpOp::Eq))),
                    op => cmp(*op),
                }
            }
            Expr::In {
                column,
                values,
                negated,
            } => {
                let (c, ty) = self.column(column)?;
                let values = values
                    .iter()
                    .map(|v| self.value(v, &ty, column))
                    .collect::<Result<_, _>>()?;
                negate(BoundExpr::In { column: c, values }, *negated)
            }
            Expr::IsNull { column, negated } => {
                let (c, _) = self.column(column)?;
                negate(BoundExpr::IsNull { column: c }, *negated)
            }
            Expr::Between {
                column,
                low,
                high,
                negated,
            } => {
                let (c, ty) = self.column(column)?;
                let low = self.value(low, &ty, column)?;
                let high = self.value(high, &ty, column)?;
                let range = BoundExpr::And(
                    Box::new(BoundExpr::Cmp {
                        column: c,
                        op: CmpOp::GtEq,
                        value: low,
                    }),
                    Box::new(BoundExpr::Cmp {
                        column: c,
                        op: CmpOp::LtEq,
                        value: high,
                    }),
                );
                negate(range, *negated)
            }
            Expr::And(a, b) => BoundExpr::And(Box::new(self.expr(a)?), Box::new(self.expr(b)?)),
            Expr::Or(a, b) => BoundExpr::Or(Box::new(self.expr(a)?), Box::new(self.expr(b)?)),
            Expr::Not(a) => BoundExpr::Not(Box::new(self.expr(a)?)),
        })
    }

    /// The index of a column in `self.columns` (added on first use) and its type.
    fn column(&mut self, c: &ColumnRef) -> Result<(usize, PrimitiveType), ExprError> {
        let bound = match self.schema.column(&c.name) {
            Some(f) => match &f.field_type {
                Type::Primitive(
                    p @ (PrimitiveType::Variant
                    | PrimitiveType::Geometry(_)
                    | PrimitiveType::Geography(_)
                    | PrimitiveType::Unknown),
                ) => {
                    return Err(self.err(
                        c.pos,
                        format!("column {:?} is {p}, which a filter cannot compare", c.name),
                    ))
                }
                Type::Primitive(p) => BoundColumn {
                    name: f.name.clone(),
                    field_id: f.id,
                    ty: p.clone(),
                    lineage: false,
                },
                t => {
                    return Err(self.err(
                        c.pos,
                        format!(
                            "column {:?} is {t}; a filter compares top-level primitive columns",
                            c.name
                        ),
                    ))
                }
            },
            None if c.name == ROW_ID || c.name == LAST_UPDATED_SEQ => BoundColumn {
                name: c.name.clone(),
                field_id: if c.name == ROW_ID {
                    ROW_ID_FIELD_ID
                } else {
                    LAST_UPDATED_SEQ_FIELD_ID
                },
                ty: PrimitiveType::Long,
                lineage: true,
            },
            None => {
                let mut names: Vec<&str> = self
                    .schema
                    .columns()
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect();
                names.extend([ROW_ID, LAST_UPDATED_SEQ]);
                return Err(self.err(
                    c.pos,
                    format!(
                        "no column {:?} in schema {} (columns: {})",
                        c.name,
                        self.schema.schema_id,
                        names.join(", ")
                    ),
                ));
            }
        };
        let ty = bound.ty.clone();
        let i = match self
            .columns
            .iter()
            .position(|b| b.field_id == bound.field_id)
        {
            Some(i) => i,
            None => {
                self.columns.push(bound);
                self.columns.len() - 1
            }
        };
        Ok((i, ty))
    }

    fn value(
        &self,
        v: &ValueRef,
        ty: &PrimitiveType,
        column: &ColumnRef,
    ) -> Result<Literal, ExprError> {
        to_literal(&v.kind, ty)
            .map_err(|why| self.err(v.pos, format!("{why} (column {:?} is {ty})", column.name)))
    }
}

fn negate(e: BoundExpr, negated: bool) -> BoundExpr {
    if negated {
        BoundExpr::Not(Box::new(e))
    } else {
        e
    }
}

/// The literal a written value denotes in type `ty`; the error says why it does not fit.
pub fn to_literal(v: &ValueKind, ty: &PrimitiveType) -> Result<Literal, String> {
    use PrimitiveType as P;
    let text = match v {
        ValueKind::Number(n) | ValueKind::String(n) => Some(n.as_str()),
        ValueKind::Typed(_, s) => Some(s.as_str()),
        _ => None,
    };
    let shown = match v {
        ValueKind::Number(n) => n.clone(),
        ValueKind::String(s) => format!("'{s}'"),
        ValueKind::Boolean(b) => b.to_string().to_uppercase(),
        ValueKind::Typed(k, s) => format!("{k:?} '{s}'").to_uppercase(),
        ValueKind::Bytes(_) => "X'…'".into(),
    };
    let keyword = match v {
        ValueKind::Typed(k, _) => Some(*k),
        _ => None,
    };
    let temporal_ok = |want: TypedKeyword| keyword.is_none_or(|k| k == want);
    let wrong = || format!("{shown} is not a value of this column");
    match ty {
        P::Boolean => match v {
            ValueKind::Boolean(b) => Ok(Literal::Boolean(*b)),
            ValueKind::String(s) if s.eq_ignore_ascii_case("true") => Ok(Literal::Boolean(true)),
            ValueKind::String(s) if s.eq_ignore_ascii_case("false") => Ok(Literal::Boolean(false)),
            _ => Err(wrong()),
        },
        P::Int | P::Long => {
            let (ValueKind::Number(n) | ValueKind::String(n)) = v else {
                return Err(wrong());
            };
            let x: i64 = n
                .parse()
                .map_err(|_| format!("{shown} is not an integer that a long holds"))?;
            Ok(match (ty, i32::try_from(x)) {
                (P::Int, Ok(x)) => Literal::Int(x),
                _ => Literal::Long(x),
            })
        }
        P::Float | P::Double => {
            let (ValueKind::Number(n) | ValueKind::String(n)) = v else {
                return Err(wrong());
            };
            parse_float(n)
                .map(Literal::Double)
                .ok_or_else(|| format!("{shown} is not a number"))
        }
        P::Decimal { scale, .. } => {
            let (ValueKind::Number(n) | ValueKind::String(n)) = v else {
                return Err(wrong());
            };
            // Trailing zeros of the fraction do not change the value.
            let n = match n.split_once('.') {
                Some((i, f)) => {
                    let f = f.trim_end_matches('0');
                    if f.is_empty() {
                        i.to_string()
                    } else {
                        format!("{i}.{f}")
                    }
                }
                None => n.clone(),
            };
            crate::spec::literal::parse_decimal(&n, *scale)
                .map(Literal::Decimal)
                .ok_or_else(|| {
                    format!("{shown} is not a decimal number with at most {scale} fraction digits")
                })
        }
        P::Date if temporal_ok(TypedKeyword::Date) => {
            let s = text.filter(|_| !matches!(v, ValueKind::Number(_)));
            let d = s
                .and_then(|s| NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d").ok())
                .ok_or_else(|| format!("{shown} is not a date (YYYY-MM-DD)"))?;
            let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch");
            Ok(Literal::Date((d - epoch).num_days() as i32))
        }
        P::Time if temporal_ok(TypedKeyword::Time) => {
            let s = text.filter(|_| !matches!(v, ValueKind::Number(_)));
            let t = s
                .and_then(|s| NaiveTime::parse_from_str(s.trim(), "%H:%M:%S%.f").ok())
                .ok_or_else(|| format!("{shown} is not a time (HH:MM:SS[.ffffff])"))?;
            let nanos =
                t.num_seconds_from_midnight() as i64 * 1_000_000_000 + t.nanosecond() as i64;
            if nanos % 1000 != 0 {
                return Err(format!("{shown} is more precise than microseconds"));
            }
            Ok(Literal::Time(nanos / 1000))
        }
        P::Timestamp | P::Timestamptz | P::TimestampNs | P::TimestamptzNs
            if temporal_ok(TypedKeyword::Timestamp) =>
        {
            let s = text.filter(|_| !matches!(v, ValueKind::Number(_)));
            let nanos = s
                .and_then(|s| crate::instant::parse_instant_ns(s).ok())
                .ok_or_else(|| {
                    format!(
                    "{shown} is not a timestamp (YYYY-MM-DD[ HH:MM[:SS[.fffffffff]]][Z|±HH:MM])"
                )
                })?;
            let v = if matches!(ty, P::TimestampNs | P::TimestamptzNs) {
                nanos
            } else if nanos % 1000 != 0 {
                return Err(format!("{shown} is more precise than microseconds"));
            } else {
                nanos / 1000
            };
            i64::try_from(v)
                .map(Literal::Timestamp)
                .map_err(|_| format!("{shown} is out of range"))
        }
        P::String => match v {
            ValueKind::String(s) => Ok(Literal::String(s.clone())),
            _ => Err(format!("{shown} is not a string: quote it")),
        },
        P::Uuid => match v {
            ValueKind::String(s) => crate::spec::literal::parse_uuid(s.trim())
                .map(Literal::Uuid)
                .ok_or_else(|| format!("{shown} is not a UUID")),
            _ => Err(wrong()),
        },
        P::Binary => match v {
            ValueKind::Bytes(b) => Ok(Literal::Binary(b.clone())),
            _ => Err(format!("{shown} is not a byte string: write X'hex'")),
        },
        P::Fixed(n) => match v {
            ValueKind::Bytes(b) if b.len() as u64 == *n => Ok(Literal::Binary(b.clone())),
            ValueKind::Bytes(b) => Err(format!("X'…' holds {} bytes, not {n}", b.len())),
            _ => Err(format!("{shown} is not a byte string: write X'hex'")),
        },
        _ => Err(wrong()),
    }
}

/// A float from its text: decimal or exponent notation, `NaN`, `Infinity`, `-Infinity`.
fn parse_float(s: &str) -> Option<f64> {
    let t = s.trim();
    match t.to_ascii_lowercase().as_str() {
        "nan" => Some(f64::NAN),
        "infinity" | "+infinity" | "inf" => Some(f64::INFINITY),
        "-infinity" | "-inf" => Some(f64::NEG_INFINITY),
        _ if t.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c)) => t.parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::parse::parse;
    use crate::spec::{NestedField, StructType};

    fn schema() -> Schema {
        let f = |id, name: &str, p| NestedField::optional(id, name, Type::Primitive(p));
        Schema {
            schema_id: 3,
            fields: StructType {
                fields: vec![
                    f(1, "i", PrimitiveType::Int),
                    f(
                        2,
                        "d",
                        PrimitiveType::Decimal {
                            precision: 9,
                            scale: 2,
                        },
                    ),
                    f(3, "ts", PrimitiveType::Timestamptz),
                    f(4, "ns", PrimitiveType::TimestampNs),
                    f(5, "s", PrimitiveType::String),
                    f(6, "x", PrimitiveType::Float),
                    f(7, "day", PrimitiveType::Date),
                ],
            },
            identifier_field_ids: vec![],
        }
    }

    fn one(text: &str) -> Result<BoundFilter, ExprError> {
        bind(&parse(text).unwrap(), &schema())
    }

    fn value_of(text: &str) -> Literal {
        match one(text).unwrap().expr {
            BoundExpr::Cmp { value, .. } => value,
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn values_take_the_column_type() {
        assert_eq!(value_of("i = 7"), Literal::Int(7));
        assert_eq!(value_of("i < 3000000000"), Literal::Long(3_000_000_000));
        assert_eq!(value_of("d = 1.50"), Literal::Decimal(150));
        assert_eq!(value_of("d = '-2'"), Literal::Decimal(-200));
        assert_eq!(value_of("x = -0"), Literal::Double(-0.0));
        assert!(matches!(value_of("x = NaN"), Literal::Double(v) if v.is_nan()));
        assert!(matches!(value_of("x = 'NaN'"), Literal::Double(v) if v.is_nan()));
        assert_eq!(value_of("day = DATE '1970-01-03'"), Literal::Date(2));
        let hour = 3_600_000_000i64;
        assert_eq!(
            value_of("ts = '1970-01-01T02:00:00+02:00'"),
            Literal::Timestamp(0)
        );
        assert_eq!(
            value_of("ts = '1970-01-01 01:00'"),
            Literal::Timestamp(hour)
        );
        assert_eq!(
            value_of("ts = '1970-01-01T00:00:00-0130'"),
            Literal::Timestamp(hour * 3 / 2)
        );
        assert_eq!(
            value_of("ts = TIMESTAMP '1970-01-02Z'"),
            Literal::Timestamp(hour * 24)
        );
        assert_eq!(value_of("ts = '1970-01-02'"), Literal::Timestamp(hour * 24));
        assert_eq!(
            value_of("ns = '1970-01-01T00:00:00.000000001Z'"),
            Literal::Timestamp(1)
        );
        assert_eq!(value_of("s = 'é'"), Literal::String("é".into()));
        // `5 > i` is `i < 5`.
        assert!(matches!(
            one("5 > i").unwrap().expr,
            BoundExpr::Cmp { op: CmpOp::Lt, .. }
        ));
    }

    #[test]
    fn columns_are_bound_once_lineage_included() {
        let f = one("i = 1 OR i = 2 AND _row_id > 3").unwrap();
        assert_eq!(f.columns.len(), 2);
        assert!(f.uses_lineage());
        assert_eq!(f.columns[1].field_id, ROW_ID_FIELD_ID);
    }

    #[test]
    fn errors_name_the_column_or_value() {
        let e = one("i = 1 AND nope = 2").unwrap_err();
        assert_eq!(e.pos, 10);
        assert!(
            e.message
                .contains("no column \"nope\" in schema 3 (columns: i, d"),
            "{e}"
        );
        let bad = |t: &str, pos: usize, want: &str| {
            let e = one(t).unwrap_err();
            assert_eq!(e.pos, pos, "{t}: {e}");
            assert!(e.message.contains(want), "{t}: {e}");
        };
        bad("i = 1.5", 4, "not an integer");
        bad("d = 1.234", 4, "at most 2 fraction digits");
        bad("s = 5", 4, "quote it");
        bad("ts = DATE '2020-01-01'", 5, "not a value of this column");
        bad(
            "ts = '2020-01-01T00:00:00.0000001Z'",
            5,
            "more precise than microseconds",
        );
        bad("ts = 'yesterday'", 5, "not a timestamp");
        bad("ts = '2020-01-01T00:00:00+25:00'", 5, "not a timestamp");
        bad("i IN (1, 'a')", 9, "column \"i\" is int");
    }
}
