//! `--where` filters rows exactly. At every snapshot of every fixture table, for
//! every top-level primitive column and the lineage columns, a set of expressions (built from
//! the column's own values, NULLs, NaN, -0.0, timestamps written in other zones, strings that
//! UTF-16 and UTF-8 order differently) is applied by the core, and the rows it returns must be
//! the unfiltered read's rows, lineage included, that the test's own evaluator keeps. The
//! CLI's `--where` is tested in `where_cli.rs`.

use std::cmp::Ordering;
use std::collections::HashMap;

use arrow::record_batch::RecordBatch;
use futures::TryStreamExt;
use icefloe_core::encode::jsonl::JsonLinesWriter;
use icefloe_core::spec::{PrimitiveType, Type};
use icefloe_core::{Scan, SnapshotSelector, Table};
use icefloe_testkit::all_snapshots;
use serde_json::Value;

fn lines(batches: &[RecordBatch]) -> Vec<String> {
    let mut w = JsonLinesWriter::new(Vec::new());
    for b in batches {
        w.write_batch(b).unwrap();
    }
    let mut out: Vec<String> = String::from_utf8(w.finish().unwrap())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    out.sort();
    out
}

/// One condition of the test's expression language: the text the reader parses and the
/// test's own evaluation of it.
#[derive(Debug, Clone)]
enum Cond {
    Cmp(&'static str, Lit),
    In(Vec<Lit>, bool),
    IsNull(bool),
    Between(Lit, Lit, bool),
}

/// A value: how it is written in the expression, and its JSON encoding (as the reader prints
/// it) for the test's comparison.
#[derive(Debug, Clone)]
struct Lit {
    text: String,
    json: Value,
}

#[derive(Debug, Clone)]
enum E {
    Leaf(String, PrimitiveType, Box<Cond>),
    And(Box<E>, Box<E>),
    Or(Box<E>, Box<E>),
    Not(Box<E>),
}

impl E {
    fn text(&self) -> String {
        match self {
            E::Leaf(c, _, cond) => {
                let c = format!("\"{}\"", c.replace('"', "\"\""));
                match &**cond {
                    Cond::Cmp(op, l) => format!("{c} {op} {}", l.text),
                    Cond::In(ls, neg) => format!(
                        "{c} {}IN ({})",
                        if *neg { "NOT " } else { "" },
                        ls.iter()
                            .map(|l| l.text.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    Cond::IsNull(neg) => format!("{c} IS {}NULL", if *neg { "NOT " } else { "" }),
                    Cond::Between(a, b, neg) => format!(
                        "{c} {}BETWEEN {} AND {}",
                        if *neg { "NOT " } else { "" },
                        a.text,
                        b.text
                    ),
                }
            }
            E::And(a, b) => format!("({}) AND ({})", a.text(), b.text()),
            E::Or(a, b) => format!("({}) OR ({})", a.text(), b.text()),
            E::Not(a) => format!("NOT ({})", a.text()),
        }
    }

    /// SQL three-valued evaluation on a row as JSON.
    fn eval(&self, row: &Value) -> Option<bool> {
        match self {
            E::Leaf(c, ty, cond) => {
                let v = &row[c.as_str()];
                match &**cond {
                    Cond::IsNull(neg) => Some(v.is_null() != *neg),
                    _ if v.is_null() => None,
                    Cond::Cmp(op, l) => {
                        let o = order(ty, v, &l.json);
                        Some(match *op {
                            "=" => o == Ordering::Equal,
                            "!=" | "<>" => o != Ordering::Equal,
                            "<" => o == Ordering::Less,
                            "<=" => o != Ordering::Greater,
                            ">" => o == Ordering::Greater,
                            ">=" => o != Ordering::Less,
                            _ => unreachable!(),
                        })
                    }
                    Cond::In(ls, neg) => {
                        Some(ls.iter().any(|l| order(ty, v, &l.json) == Ordering::Equal) != *neg)
                    }
                    Cond::Between(a, b, neg) => Some(
                        (order(ty, v, &a.json) != Ordering::Less
                            && order(ty, v, &b.json) != Ordering::Greater)
                            != *neg,
                    ),
                }
            }
            E::And(a, b) => match (a.eval(row), b.eval(row)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            E::Or(a, b) => match (a.eval(row), b.eval(row)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            E::Not(a) => a.eval(row).map(|b| !b),
        }
    }
}

/// A float as the reader prints it: a number, or "NaN"/"Infinity"/"-Infinity"; numbers as
/// their raw text (see [`raw_fields`]).
fn float_of(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap(),
        Value::String(s) => match s.as_str() {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            s => s.parse().unwrap_or_else(|_| panic!("float {s}")),
        },
        v => panic!("float {v}"),
    }
}

/// The raw text of each top-level value of a JSON object line. serde_json's default float
/// parsing is not exact (it can be one unit in the last place off), so float columns are
/// compared by their text, parsed with Rust's exact parser.
fn raw_fields(line: &str) -> HashMap<String, String> {
    let b = line.as_bytes();
    let (mut depth, mut in_str, mut esc) = (0, false, false);
    let mut out = HashMap::new();
    let (mut key, mut start) = (String::new(), None);
    let mut key_start = 0;
    for (i, &c) in b.iter().enumerate() {
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => {
                    in_str = false;
                    if depth == 1 && start.is_none() {
                        key = serde_json::from_str(&line[key_start..=i]).unwrap();
                    }
                }
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => {
                in_str = true;
                key_start = i;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth > 1 => depth -= 1,
            b':' if depth == 1 && start.is_none() => start = Some(i + 1),
            b',' | b'}' if depth == 1 => {
                if let Some(st) = start.take() {
                    out.insert(std::mem::take(&mut key), line[st..i].trim().to_string());
                }
            }
            _ => {}
        }
    }
    out
}

/// The unscaled value of a decimal string with `scale` fraction digits.
fn decimal_of(v: &Value, scale: u32) -> i128 {
    let s = v.as_str().unwrap();
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let neg = int.starts_with('-');
    let frac = format!("{frac:0<width$}", width = scale as usize);
    let digits = format!("{}{frac}", int.trim_start_matches('-'));
    let v: i128 = digits.parse().unwrap();
    if neg {
        -v
    } else {
        v
    }
}

/// The documented orderings: numbers numerically, floats with -0.0 = 0.0 and NaN above all
/// (equal to itself), strings by UTF-8 bytes, binary by bytes (its lowercase hex orders
/// alike), temporal values by instant (fixed-width ISO text in UTC orders alike).
fn order(ty: &PrimitiveType, a: &Value, b: &Value) -> Ordering {
    use PrimitiveType as P;
    match ty {
        P::Boolean => a.as_bool().unwrap().cmp(&b.as_bool().unwrap()),
        P::Int | P::Long => a.as_i64().unwrap().cmp(&b.as_i64().unwrap()),
        P::Float | P::Double => {
            let (x, y) = (float_of(a), float_of(b));
            match (x.is_nan(), y.is_nan()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                _ => x.partial_cmp(&y).unwrap(),
            }
        }
        P::Decimal { scale, .. } => decimal_of(a, *scale).cmp(&decimal_of(b, *scale)),
        P::Date | P::Time | P::Timestamp | P::Timestamptz | P::TimestampNs | P::TimestamptzNs => {
            let (x, y) = (a.as_str().unwrap(), b.as_str().unwrap());
            assert_eq!(x.len(), y.len(), "{x} vs {y}");
            x.cmp(y)
        }
        P::String | P::Uuid | P::Fixed(_) | P::Binary => a
            .as_str()
            .unwrap()
            .as_bytes()
            .cmp(b.as_str().unwrap().as_bytes()),
        t => panic!("no ordering for {t}"),
    }
}

/// How a value read from the table is written as a literal.
fn literal(ty: &PrimitiveType, v: &Value) -> Lit {
    use PrimitiveType as P;
    let quoted = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let text = match ty {
        P::Boolean => v.as_bool().unwrap().to_string().to_uppercase(),
        P::Int | P::Long => v.to_string(),
        P::Float | P::Double => match v {
            Value::String(s) => s.clone(),
            n => n.to_string(),
        },
        P::Decimal { .. } => v.as_str().unwrap().to_string(),
        P::Date => format!("DATE {}", quoted(v.as_str().unwrap())),
        P::Time => format!("TIME {}", quoted(v.as_str().unwrap())),
        P::Timestamp | P::TimestampNs => format!("TIMESTAMP {}", quoted(v.as_str().unwrap())),
        P::Timestamptz | P::TimestamptzNs => quoted(v.as_str().unwrap()),
        P::String | P::Uuid => quoted(v.as_str().unwrap()),
        P::Fixed(_) | P::Binary => format!("X'{}'", v.as_str().unwrap()),
        t => panic!("no literal for {t}"),
    };
    Lit {
        text,
        json: v.clone(),
    }
}

/// A timestamptz value (`…+00:00`) written at offset +02:00 (and, for a second form, -05:30):
/// the same instant.
fn shifted(v: &Value) -> Vec<Lit> {
    let s = v.as_str().unwrap();
    let utc = chrono::DateTime::parse_from_rfc3339(s).unwrap();
    [
        (2 * 3600, "%Y-%m-%dT%H:%M:%S%.f+02:00"),
        (-(5 * 3600 + 1800), "%Y-%m-%d %H:%M:%S%.f-0530"),
    ]
    .iter()
    .map(|(off, fmt)| {
        let local = utc.naive_utc() + chrono::Duration::seconds(*off);
        Lit {
            text: format!("'{}'", local.format(fmt)),
            json: v.clone(),
        }
    })
    .collect()
}

/// Up to three distinct non-null values of a column, spread over its order, plus the special
/// values of its type.
fn values(ty: &PrimitiveType, col: &str, rows: &[Value]) -> Vec<Lit> {
    use PrimitiveType as P;
    let mut vals: Vec<Value> = rows
        .iter()
        .map(|r| r[col].clone())
        .filter(|v| !v.is_null())
        .collect();
    vals.sort_by(|a, b| order(ty, a, b));
    vals.dedup_by(|a, b| order(ty, a, b) == Ordering::Equal);
    let picked: Vec<Value> = match vals.len() {
        0..=3 => vals.clone(),
        n => vec![vals[0].clone(), vals[n / 2].clone(), vals[n - 1].clone()],
    };
    let mut out: Vec<Lit> = picked.iter().map(|v| literal(ty, v)).collect();
    match ty {
        P::Float | P::Double => {
            for (text, json) in [
                ("NaN", Value::from("NaN")),
                ("-0.0", serde_json::json!(-0.0)),
                ("0", serde_json::json!(0.0)),
                ("-Infinity", Value::from("-Infinity")),
            ] {
                out.push(Lit {
                    text: text.into(),
                    json,
                });
            }
        }
        P::String => {
            // U+FFFD sorts below U+10000 by UTF-8 bytes and above it by UTF-16 units.
            for s in ["\u{FFFD}", "\u{10000}", "", "a"] {
                out.push(literal(ty, &Value::from(s)));
            }
        }
        P::Timestamptz | P::TimestamptzNs => {
            if let Some(v) = picked.first() {
                out.extend(shifted(v));
            }
        }
        _ => {}
    }
    out
}

fn leaf(c: &str, ty: &PrimitiveType, cond: Cond) -> E {
    E::Leaf(c.to_string(), ty.clone(), Box::new(cond))
}

/// The expressions tried on one column.
fn expressions(c: &str, ty: &PrimitiveType, rows: &[Value]) -> Vec<E> {
    let vals = values(ty, c, rows);
    let mut out = vec![
        leaf(c, ty, Cond::IsNull(false)),
        leaf(c, ty, Cond::IsNull(true)),
    ];
    for v in &vals {
        for op in ["=", "!=", "<", "<=", ">", ">="] {
            out.push(leaf(c, ty, Cond::Cmp(op, v.clone())));
        }
        out.push(E::Not(Box::new(leaf(c, ty, Cond::Cmp("<", v.clone())))));
    }
    if vals.len() >= 2 {
        let (a, b) = (vals[0].clone(), vals[vals.len() - 1].clone());
        out.push(leaf(c, ty, Cond::In(vec![a.clone(), b.clone()], false)));
        out.push(leaf(c, ty, Cond::In(vec![a.clone(), b.clone()], true)));
        out.push(leaf(c, ty, Cond::Between(a.clone(), b.clone(), false)));
        out.push(leaf(c, ty, Cond::Between(a.clone(), b.clone(), true)));
        out.push(E::Or(
            Box::new(leaf(c, ty, Cond::Cmp("=", a.clone()))),
            Box::new(leaf(c, ty, Cond::IsNull(false))),
        ));
        out.push(E::And(
            Box::new(leaf(c, ty, Cond::Cmp(">", a))),
            Box::new(E::Not(Box::new(leaf(c, ty, Cond::Cmp("=", b))))),
        ));
    }
    out
}

/// Lineage conditions combined with a column condition (lineage values must be those of an
/// unfiltered read).
fn with_lineage(e: E, rows: &[Value]) -> Vec<E> {
    let long = PrimitiveType::Long;
    let ids = values(&long, "_row_id", rows);
    let Some(mid) = ids.get(ids.len() / 2).cloned() else {
        return vec![];
    };
    vec![
        E::And(
            Box::new(e.clone()),
            Box::new(leaf("_row_id", &long, Cond::Cmp(">=", mid))),
        ),
        E::Or(
            Box::new(e),
            Box::new(leaf(
                "_last_updated_sequence_number",
                &long,
                Cond::Cmp(
                    "=",
                    Lit {
                        text: "1".into(),
                        json: Value::from(1),
                    },
                ),
            )),
        ),
    ]
}

fn filterable(ty: &Type) -> Option<&PrimitiveType> {
    match ty {
        Type::Primitive(
            PrimitiveType::Variant
            | PrimitiveType::Geometry(_)
            | PrimitiveType::Geography(_)
            | PrimitiveType::Unknown,
        ) => None,
        Type::Primitive(p) => Some(p),
        _ => None,
    }
}

#[tokio::test]
async fn where_keeps_exactly_the_rows_the_expression_holds_for() {
    let (mut snapshots, mut checked, mut nonempty) = (0, 0, 0);
    let mut types_seen = std::collections::BTreeSet::new();
    for s in all_snapshots() {
        let table = Table::open(s.table_dir.to_str().unwrap()).await.unwrap();
        let at = SnapshotSelector::Id(s.snapshot_id);
        let base = Scan::builder().snapshot(at.clone()).lineage(true);
        let Ok(scan) = base.clone().build(&table) else {
            continue;
        };
        let Ok(batches) = scan.stream().await.unwrap().try_collect::<Vec<_>>().await else {
            continue; // a snapshot the fixture tests cover as an error
        };
        snapshots += 1;
        let all = lines(&batches);
        let floats: Vec<&str> = scan
            .table_schema()
            .columns()
            .iter()
            .filter(|f| {
                matches!(
                    f.field_type,
                    Type::Primitive(PrimitiveType::Float | PrimitiveType::Double)
                )
            })
            .map(|f| f.name.as_str())
            .collect();
        let rows: Vec<Value> = all
            .iter()
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).unwrap();
                let raw = raw_fields(l);
                for c in &floats {
                    if v[*c].is_number() {
                        v[*c] = Value::String(raw[*c].clone());
                    }
                }
                v
            })
            .collect();
        let mut exprs = Vec::new();
        let long = PrimitiveType::Long;
        for c in ["_row_id", "_last_updated_sequence_number"] {
            if scan.table_schema().column(c).is_none() {
                exprs.extend(expressions(c, &long, &rows));
            }
        }
        for f in scan.table_schema().columns() {
            let Some(ty) = filterable(&f.field_type) else {
                continue;
            };
            types_seen.insert(ty.to_string());
            let es = expressions(&f.name, ty, &rows);
            if let Some(first) = es.get(2).cloned() {
                exprs.extend(with_lineage(first, &rows));
            }
            exprs.extend(es);
        }
        // Every expression at the head of main, a sample elsewhere and in large snapshots
        // (the 54k-row deletion vector table), to keep the test quick.
        let head = s.refs.iter().any(|r| r == "branch:main");
        let step = match (head, rows.len() > 5000) {
            (true, false) => 1,
            (false, false) => 4,
            (true, true) => 8,
            (false, true) => 32,
        };
        for e in exprs.into_iter().step_by(step) {
            let text = e.text();
            let filter =
                icefloe_core::expr::parse(&text).unwrap_or_else(|err| panic!("{text}: {err}"));
            let scan = base
                .clone()
                .filter(filter)
                .build(&table)
                .unwrap_or_else(|err| panic!("{} @ {}: {text}: {err}", s.table, s.snapshot_id));
            let got = lines(
                &scan
                    .stream()
                    .await
                    .unwrap()
                    .try_collect::<Vec<_>>()
                    .await
                    .unwrap_or_else(|err| panic!("{text}: {err}")),
            );
            let want: Vec<String> = all
                .iter()
                .zip(&rows)
                .filter(|(_, r)| e.eval(r) == Some(true))
                .map(|(l, _)| l.clone())
                .collect();
            assert!(
                got == want,
                "{} @ {}: {text}: got {} rows, want {}\ngot:  {:?}\nwant: {:?}",
                s.table,
                s.snapshot_id,
                got.len(),
                want.len(),
                got,
                want
            );
            checked += 1;
            nonempty += usize::from(!want.is_empty() && want.len() < all.len());
        }
    }
    assert!(snapshots >= 70, "{snapshots} snapshots read");
    eprintln!("{checked} expressions at {snapshots} snapshots");
    assert!(checked > 5000, "{checked} expressions");
    assert!(
        nonempty > checked / 4,
        "{nonempty} of {checked} select a proper subset"
    );
    for t in [
        "boolean",
        "int",
        "long",
        "float",
        "double",
        "date",
        "time",
        "timestamp",
        "timestamptz",
        "timestamp_ns",
        "timestamptz_ns",
        "string",
        "uuid",
        "binary",
    ] {
        assert!(
            types_seen.contains(t),
            "no fixture column of type {t}: {types_seen:?}"
        );
    }
}
