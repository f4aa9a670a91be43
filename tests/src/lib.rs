//! Test helpers: the fixture tables (real tables written by Spark and the Iceberg Java API,
//! with every snapshot's rows as that engine reads them) and a multiset comparison of rows
//! that follows `fixtures/README.md`'s value encoding.

pub mod alloc;
pub mod cat;
pub mod fake_http;
pub mod mount;
pub mod rewrite;
pub mod rng;
pub mod rows;
pub mod run;
pub mod servers;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The fixtures folder inside the repository (`tests/fixtures`).
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// One snapshot of a fixture table and the rows expected from it.
#[derive(Debug, Clone)]
pub struct FixtureSnapshot {
    pub table: String,
    pub table_dir: PathBuf,
    pub snapshot_id: i64,
    pub operation: String,
    pub expected_columns: Vec<String>,
    pub expected_file: PathBuf,
    pub refs: Vec<String>,
}

impl FixtureSnapshot {
    /// The expected rows, one JSON object each.
    pub fn expected_rows(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.expected_file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", self.expected_file.display()))
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).expect("expected rows are JSON"))
            .collect()
    }
}

/// Every snapshot of every fixture table, in index order.
pub fn all_snapshots() -> Vec<FixtureSnapshot> {
    let out = snapshots_in(&fixtures_dir());
    assert!(
        out.len() >= 78,
        "fixture index lists {} snapshots",
        out.len()
    );
    out
}

/// Every snapshot of the tables of a fixture folder laid out as `fixtures/` is (`index.json`,
/// `expected/<table>/manifest.json`), such as `fixtures/formats`.
pub fn snapshots_in(root: &Path) -> Vec<FixtureSnapshot> {
    let index: Value = read_json(&root.join("index.json"));
    let mut out = Vec::new();
    for t in index["tables"].as_array().expect("tables") {
        let m: Value = read_json(&root.join(t["manifest"].as_str().expect("manifest")));
        let table = m["table"].as_str().expect("table").to_string();
        let table_dir = root.join(m["table_dir"].as_str().expect("table_dir"));
        for s in m["snapshots"].as_array().expect("snapshots") {
            out.push(FixtureSnapshot {
                table: table.clone(),
                table_dir: table_dir.clone(),
                snapshot_id: s["snapshot_id"].as_i64().expect("snapshot id"),
                operation: s["operation"].as_str().unwrap_or("").to_string(),
                expected_columns: s["expected_columns"]
                    .as_array()
                    .expect("columns")
                    .iter()
                    .map(|c| c.as_str().expect("column").to_string())
                    .collect(),
                expected_file: root.join(s["expected_file"].as_str().expect("expected file")),
                refs: s["refs"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|r| r.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default(),
            });
        }
    }
    out
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Copies a fixture table to a fresh temporary directory (for tests that corrupt it).
pub fn copy_table(table_dir: &Path) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    copy_dir(table_dir, tmp.path());
    tmp
}

/// Copies directory `from` (recursively) to `to`, creating it.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let dest = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).expect("copy");
        }
    }
}

/// Normalises a value for comparison: maps (arrays of `{key, value}`) become sorted.
fn norm(v: &Value) -> Value {
    match v {
        Value::Array(a) => {
            let items: Vec<Value> = a.iter().map(norm).collect();
            let is_map = !items.is_empty()
                && items.iter().all(|e| {
                    e.as_object().is_some_and(|o| {
                        o.len() == 2 && o.contains_key("key") && o.contains_key("value")
                    })
                });
            if is_map {
                let mut s = items;
                s.sort_by_key(|e| e.to_string());
                Value::Array(s)
            } else {
                Value::Array(items)
            }
        }
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), norm(v))).collect()),
        other => other.clone(),
    }
}

/// Whether two values are equal under the fixture rules: numbers equal as f64 with the same
/// sign (so -0.0 ≠ 0.0), or equal after rounding both to f32 where the expected value is an
/// f32; objects with the same keys (any order) and equal values.
pub fn same(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) => {
            if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
                return x == y;
            }
            let (x, y) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            if x == y {
                return x.is_sign_negative() == y.is_sign_negative();
            }
            (y as f32) as f64 == y && x as f32 == y as f32
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same(v, w)))
        }
        _ => got == want,
    }
}

/// Compares rows as a multiset. Returns a description of the difference, or `None`.
pub fn diff_rows(got: &[Value], want: &[Value]) -> Option<String> {
    let mut remaining: HashMap<String, Vec<Value>> = HashMap::new();
    for w in want {
        let w = norm(w);
        remaining.entry(key(&w)).or_default().push(w);
    }
    let mut unmatched_got = Vec::new();
    for g in got {
        let g = norm(g);
        match remaining.get_mut(&key(&g)).and_then(|v| v.pop()) {
            Some(_) => {}
            None => unmatched_got.push(g),
        }
    }
    let mut left: Vec<Value> = remaining.into_values().flatten().collect();
    let mut extra = Vec::new();
    for g in unmatched_got {
        match left.iter().position(|w| same(&g, w)) {
            Some(i) => {
                left.swap_remove(i);
            }
            None => extra.push(g),
        }
    }
    if left.is_empty() && extra.is_empty() {
        return None;
    }
    Some(format!(
        "{} rows, want {}; {} expected rows missing (first: {}), {} unexpected (first: {})",
        got.len(),
        want.len(),
        left.len(),
        left.first().map(|v| v.to_string()).unwrap_or_default(),
        extra.len(),
        extra.first().map(|v| v.to_string()).unwrap_or_default()
    ))
}

fn key(v: &Value) -> String {
    // serde_json with preserve_order keeps insertion order; sort keys for a canonical key.
    fn canon(v: &Value) -> Value {
        match v {
            Value::Object(o) => {
                let mut keys: Vec<_> = o.keys().cloned().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), canon(&o[&k])))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(canon).collect()),
            other => other.clone(),
        }
    }
    canon(v).to_string()
}

/// Parses RFC 4180 CSV, keeping for each field whether it was quoted (so NULL, an empty
/// unquoted field, differs from the empty string `""`).
pub fn parse_csv(text: &str) -> Vec<Vec<(String, bool)>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut in_quotes = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if in_quotes {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    in_quotes = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' => {
                in_quotes = true;
                quoted = true;
            }
            ',' => {
                row.push((std::mem::take(&mut field), quoted));
                quoted = false;
            }
            '\n' => {
                row.push((std::mem::take(&mut field), quoted));
                quoted = false;
                rows.push(std::mem::take(&mut row));
            }
            '\r' => {}
            c => field.push(c),
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push((field, quoted));
        rows.push(row);
    }
    rows
}

/// Turns CSV records (header first) back into JSON rows using the expected rows' shapes:
/// an unquoted empty field is null; a field whose expected column holds numbers, booleans or
/// nested values is parsed as JSON (`NaN`/`Infinity` become the fixture's strings); anything
/// else stays text.
pub fn csv_to_rows(records: &[Vec<(String, bool)>], want: &[Value]) -> Vec<Value> {
    let header: Vec<String> = records[0].iter().map(|(f, _)| f.clone()).collect();
    // The JSON kind of each column, from any non-null expected value.
    let kind = |col: &str| -> Option<&'static str> {
        want.iter().find_map(|r| match r.get(col)? {
            Value::Null => None,
            Value::String(_) => Some("string"),
            _ => Some("json"),
        })
    };
    let kinds: Vec<Option<&str>> = header.iter().map(|h| kind(h)).collect();
    records[1..]
        .iter()
        .map(|rec| {
            let mut o = serde_json::Map::new();
            for ((name, (text, quoted)), k) in header.iter().zip(rec).zip(&kinds) {
                let v = if text.is_empty() && !quoted {
                    Value::Null
                } else if *k == Some("json") {
                    match text.as_str() {
                        "NaN" | "Infinity" | "-Infinity" => Value::String(text.clone()),
                        _ => serde_json::from_str(text)
                            .unwrap_or_else(|_| Value::String(text.clone())),
                    }
                } else {
                    Value::String(text.clone())
                };
                o.insert(name.clone(), v);
            }
            Value::Object(o)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn multiset_comparison_detects_differences() {
        let want = vec![
            json!({"a": 1, "m": [{"key": "x", "value": 1}, {"key": "a", "value": 2}]}),
            json!({"a": -0.0}),
        ];
        let got = vec![
            json!({"a": -0.0}),
            json!({"m": [{"key": "a", "value": 2}, {"key": "x", "value": 1}], "a": 1}),
        ];
        assert_eq!(diff_rows(&got, &want), None);
        assert!(diff_rows(&[json!({"a": 0.0}), got[1].clone()], &want).is_some());
        assert!(diff_rows(&got[..1], &want).is_some());
        assert!(same(&json!(1.100000023841858), &json!(1.100000023841858)));
        assert!(same(&json!(1.1), &json!(1.100000023841858)));
    }

    #[test]
    fn csv_keeps_quoting() {
        let r = parse_csv("a,b\n\"\",\n\"x,\"\"y\"\"\",2\n");
        assert_eq!(r[1], vec![(String::new(), true), (String::new(), false)]);
        assert_eq!(r[2][0].0, "x,\"y\"");
    }
}
