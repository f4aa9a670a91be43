//! A row filter ([`Filter`]) as JSON, for handing a scan's filter to another process (a
//! distributed executor). Explicit and versioned like [`crate::scan::plan::task_json`]: every
//! node written by name, values as they were written (their type comes from the column when
//! the filter is bound), [`FILTER_ENCODING_VERSION`] checked when decoding.

use serde_json::{json, Value};

use super::parse::{ColumnRef, Expr, Filter, TypedKeyword, ValueKind, ValueRef};
use super::predicate::CmpOp;

/// The version of the encoding [`encode_filter`] writes and [`decode_filter`] reads.
pub const FILTER_ENCODING_VERSION: u64 = 1;

/// `filter` as `{"version": 1, "text": …, "expr": …}`.
pub fn encode_filter(filter: &Filter) -> Value {
    json!({
        "version": FILTER_ENCODING_VERSION,
        "text": filter.text,
        "expr": expr(&filter.expr),
    })
}

/// The filter [`encode_filter`] wrote. Errors: another version, a malformed node
/// ([`crate::Error::Decode`]).
pub fn decode_filter(v: &Value) -> crate::Result<Filter> {
    let version = v.get("version").and_then(Value::as_u64);
    if version != Some(FILTER_ENCODING_VERSION) {
        return Err(bad(format!(
            "encoding version {version:?}, this reader knows {FILTER_ENCODING_VERSION}"
        )));
    }
    Ok(Filter {
        text: str_of(v, "text")?.to_string(),
        expr: decode_expr(get(v, "expr")?)?,
    })
}

fn bad(reason: impl Into<String>) -> crate::Error {
    crate::Error::Decode {
        what: "row filter",
        reason: reason.into(),
    }
}

fn get<'a>(v: &'a Value, key: &str) -> crate::Result<&'a Value> {
    v.get(key).ok_or_else(|| bad(format!("no {key}")))
}

fn str_of<'a>(v: &'a Value, key: &str) -> crate::Result<&'a str> {
    get(v, key)?
        .as_str()
        .ok_or_else(|| bad(format!("{key} is not text")))
}

fn bool_of(v: &Value, key: &str) -> crate::Result<bool> {
    get(v, key)?
        .as_bool()
        .ok_or_else(|| bad(format!("{key} is not a boolean")))
}

fn column(c: &ColumnRef) -> Value {
    json!({ "name": c.name, "pos": c.pos })
}

fn decode_column(v: &Value) -> crate::Result<ColumnRef> {
    Ok(ColumnRef {
        name: str_of(v, "name")?.to_string(),
        pos: pos(v)?,
    })
}

fn pos(v: &Value) -> crate::Result<usize> {
    get(v, "pos")?
        .as_u64()
        .and_then(|p| usize::try_from(p).ok())
        .ok_or_else(|| bad("pos"))
}

fn value(v: &ValueRef) -> Value {
    let (kind, x) = match &v.kind {
        ValueKind::Number(n) => ("number", json!(n)),
        ValueKind::String(s) => ("string", json!(s)),
        ValueKind::Boolean(b) => ("boolean", json!(b)),
        ValueKind::Typed(k, t) => (
            match k {
                TypedKeyword::Date => "date",
                TypedKeyword::Time => "time",
                TypedKeyword::Timestamp => "timestamp",
            },
            json!(t),
        ),
        ValueKind::Bytes(b) => ("bytes", json!(hex::encode(b))),
    };
    json!({ "kind": kind, "value": x, "pos": v.pos })
}

fn decode_value(v: &Value) -> crate::Result<ValueRef> {
    let kind = str_of(v, "kind")?;
    let text = || str_of(v, "value").map(str::to_string);
    let kind = match kind {
        "number" => ValueKind::Number(text()?),
        "string" => ValueKind::String(text()?),
        "boolean" => ValueKind::Boolean(bool_of(v, "value")?),
        "date" => ValueKind::Typed(TypedKeyword::Date, text()?),
        "time" => ValueKind::Typed(TypedKeyword::Time, text()?),
        "timestamp" => ValueKind::Typed(TypedKeyword::Timestamp, text()?),
        "bytes" => ValueKind::Bytes(hex::decode(text()?).map_err(|e| bad(e.to_string()))?),
        other => return Err(bad(format!("value kind {other:?}"))),
    };
    Ok(ValueRef { kind, pos: pos(v)? })
}

fn op(o: CmpOp) -> &'static str {
    match o {
        CmpOp::Eq => "=",
        CmpOp::NotEq => "!=",
        CmpOp::Lt => "<",
        CmpOp::LtEq => "<=",
        CmpOp::Gt => ">",
        CmpOp::GtEq => ">=",
    }
}

fn decode_op(s: &str) -> crate::Result<CmpOp> {
    Ok(match s {
        "=" => CmpOp::Eq,
        "!=" => CmpOp::NotEq,
        "<" => CmpOp::Lt,
        "<=" => CmpOp::LtEq,
        ">" => CmpOp::Gt,
        ">=" => CmpOp::GtEq,
        other => return Err(bad(format!("operator {other:?}"))),
    })
}

fn expr(e: &Expr) -> Value {
    match e {
        Expr::Cmp {
            column: c,
            op: o,
            value: v,
        } => {
            json!({ "node": "cmp", "column": column(c), "op": op(*o), "value": value(v) })
        }
        Expr::In {
            column: c,
            values,
            negated,
        } => json!({
            "node": "in",
            "column": column(c),
            "values": values.iter().map(value).collect::<Vec<_>>(),
            "negated": negated,
        }),
        Expr::IsNull { column: c, negated } => {
            json!({ "node": "is_null", "column": column(c), "negated": negated })
        }
        Expr::Between {
            column: c,
            low,
            high,
            negated,
        } => json!({
            "node": "between",
            "column": column(c),
            "low": value(low),
            "high": value(high),
            "negated": negated,
        }),
        Expr::And(a, b) => json!({ "node": "and", "left": expr(a), "right": expr(b) }),
        Expr::Or(a, b) => json!({ "node": "or", "left": expr(a), "right": expr(b) }),
        Expr::Not(a) => json!({ "node": "not", "operand": expr(a) }),
    }
}

fn decode_expr(v: &Value) -> crate::Result<Expr> {
    let sub = |key: &str| -> crate::Result<Box<Expr>> { Ok(Box::new(decode_expr(get(v, key)?)?)) };
    Ok(match str_of(v, "node")? {
        "cmp" => Expr::Cmp {
            column: decode_column(get(v, "column")?)?,
            op: decode_op(str_of(v, "op")?)?,
            value: decode_value(get(v, "value")?)?,
        },
        "in" => Expr::In {
            column: decode_column(get(v, "column")?)?,
            values: get(v, "values")?
                .as_array()
                .ok_or_else(|| bad("values is not an array"))?
                .iter()
                .map(decode_value)
                .collect::<crate::Result<_>>()?,
            negated: bool_of(v, "negated")?,
        },
        "is_null" => Expr::IsNull {
            column: decode_column(get(v, "column")?)?,
            negated: bool_of(v, "negated")?,
        },
        "between" => Expr::Between {
            column: decode_column(get(v, "column")?)?,
            low: decode_value(get(v, "low")?)?,
            high: decode_value(get(v, "high")?)?,
            negated: bool_of(v, "negated")?,
        },
        "and" => Expr::And(sub("left")?, sub("right")?),
        "or" => Expr::Or(sub("left")?, sub("right")?),
        "not" => Expr::Not(sub("operand")?),
        other => return Err(bad(format!("node {other:?}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_come_back_as_they_went() {
        for text in [
            "a = 1 AND NOT (b IN ('x', 'y') OR c IS NOT NULL)",
            "d BETWEEN DATE '2024-01-01' AND DATE '2024-12-31' OR e != X'00ff'",
            "f NOT BETWEEN -1.5e3 AND NaN AND g = TRUE AND h >= TIMESTAMP '2024-01-01T00:00:00Z'",
        ] {
            let f = crate::expr::parse::parse(text).unwrap();
            let json = encode_filter(&f).to_string();
            let back = decode_filter(&serde_json::from_str(&json).unwrap()).unwrap();
            assert_eq!(back, f);
        }
    }
}
