//! The metrics statistics of every snapshot of every fixture table against the snapshot's
//! expected rows, and the rules on files built here (deletes, missing metrics, truncation).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::*;
use crate::scan::plan::planner::plan_files;
use crate::scan::plan::task::DeleteFileRef;
use crate::spec::Type;
use crate::table::{SnapshotSelector, Table};

fn fixtures() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures"))
}

/// Types whose expected JSON is comparable with counts and bounds (variant-null reads as null,
/// geometry is a hex string; none of them has bounds).
fn comparable_nulls(ty: &PrimitiveType) -> bool {
    !matches!(
        ty,
        PrimitiveType::Variant
            | PrimitiveType::Unknown
            | PrimitiveType::Geometry(_)
            | PrimitiveType::Geography(_)
    )
}

fn is_nan(l: &Literal) -> bool {
    matches!(l, Literal::Float(x) if x.is_nan()) || matches!(l, Literal::Double(x) if x.is_nan())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_statistics_match_every_fixture_snapshot() {
    let (mut fractions, mut exact_bounds, mut enclosing_bounds, mut with_deletes) = (0, 0, 0, 0);
    let mut tables = 0;
    for entry in std::fs::read_dir(fixtures().join("expected")).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(text) = std::fs::read_to_string(dir.join("manifest.json")) else {
            continue;
        };
        let m: serde_json::Value = serde_json::from_str(&text).unwrap();
        let name = m["table"].as_str().unwrap();
        let table_dir = fixtures().join("warehouse/db").join(name);
        let table = Table::open(table_dir.to_str().unwrap())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        tables += 1;
        for s in m["snapshots"].as_array().unwrap() {
            let id = s["snapshot_id"].as_i64().unwrap();
            let sel = SnapshotSelector::Id(id);
            let snapshot = table.select(&sel).unwrap().unwrap().clone();
            let schema = table.read_schema(&sel, Some(&snapshot)).clone();
            let tasks = plan_files(&table, &snapshot).await.unwrap();
            let deletes = tasks.iter().any(FileScanTask::has_deletes);
            with_deletes += deletes as usize;
            let expected = fixtures().join(s["expected_file"].as_str().unwrap());
            let rows: Vec<serde_json::Value> = std::fs::read_to_string(&expected)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            for f in schema.columns() {
                let Type::Primitive(ty) = &f.field_type else {
                    continue;
                };
                let what = format!("{name} snapshot {id} column {}", f.name);
                let got = column_stats(&tasks, f.id, ty);
                if !comparable_nulls(ty) {
                    assert!(
                        got.lower.is_none() && got.upper.is_none(),
                        "{what}: {got:?}"
                    );
                    continue;
                }
                let values: Vec<Option<Literal>> = rows
                    .iter()
                    .map(|r| match &r[&f.name] {
                        serde_json::Value::Null => None,
                        v => Some(Literal::from_json(v, &f.field_type).unwrap()),
                    })
                    .collect();
                if let Some(frac) = got.null_fraction {
                    assert!(!deletes, "{what}: a null fraction despite deletes");
                    let nulls = values.iter().filter(|v| v.is_none()).count();
                    assert_eq!(frac, nulls as f64 / rows.len() as f64, "{what}");
                    fractions += 1;
                }
                if !bounds_are_values(ty) {
                    assert!(
                        got.lower.is_none() && got.upper.is_none(),
                        "{what}: {got:?}"
                    );
                    continue;
                }
                let live: Vec<&Literal> = values.iter().flatten().filter(|v| !is_nan(v)).collect();
                let min = live.iter().copied().reduce(|a, b| {
                    if compare(b, a) == Some(Ordering::Less) {
                        b
                    } else {
                        a
                    }
                });
                let max = live.iter().copied().reduce(|a, b| {
                    if compare(b, a) == Some(Ordering::Greater) {
                        b
                    } else {
                        a
                    }
                });
                for (bound, extreme, side) in [
                    (&got.lower, min, Ordering::Less),
                    (&got.upper, max, Ordering::Greater),
                ] {
                    let (Some(b), Some(x)) = (bound, extreme) else {
                        // Without live values a bound encloses nothing; deletes may leave one.
                        assert!(bound.is_none() || deletes || extreme.is_some(), "{what}");
                        continue;
                    };
                    let o = compare(b, x).unwrap_or_else(|| panic!("{what}: {b:?} vs {x:?}"));
                    if deletes {
                        assert!(o == side || o == Ordering::Equal, "{what}: {b:?} vs {x:?}");
                        enclosing_bounds += 1;
                    } else {
                        assert_eq!(o, Ordering::Equal, "{what}: bound {b:?}, extreme {x:?}");
                        exact_bounds += 1;
                    }
                }
            }
        }
    }
    assert!(tables >= 10, "{tables} fixture tables");
    assert!(with_deletes >= 10, "{with_deletes} snapshots with deletes");
    assert!(
        fractions >= 100 && exact_bounds >= 100 && enclosing_bounds >= 20,
        "{fractions} null fractions, {exact_bounds} exact and {enclosing_bounds} enclosing bounds"
    );
}

/// A data file of `rows` rows with metrics for field 1: (nulls, nans, lower, upper) where given.
fn file(rows: i64, nulls: Option<i64>, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) -> DataFile {
    let mut f = DataFile::for_test("f.parquet", 0, vec![], rows);
    f.value_counts = HashMap::from([(1, rows)]);
    if let Some(n) = nulls {
        f.null_value_counts = HashMap::from([(1, n)]);
    }
    if let Some(b) = lower {
        f.lower_bounds = HashMap::from([(1, b)]);
    }
    if let Some(b) = upper {
        f.upper_bounds = HashMap::from([(1, b)]);
    }
    f
}

fn task(f: DataFile) -> FileScanTask {
    FileScanTask {
        data_file: Arc::new(f),
        sequence_number: 1,
        first_row_id: None,
        deletion_vector: None,
        position_deletes: vec![],
        equality_deletes: vec![],
    }
}

fn long(v: i64) -> Option<Vec<u8>> {
    Some(v.to_le_bytes().to_vec())
}

#[test]
fn counts_and_bounds_aggregate_over_files() {
    let tasks = vec![
        task(file(10, Some(2), long(5), long(50))),
        // All null: rightly no bounds.
        task(file(5, Some(5), None, None)),
        // Written before a promotion from int: 4-byte bounds.
        task(file(
            5,
            Some(0),
            Some((-7i32).to_le_bytes().to_vec()),
            long(9),
        )),
    ];
    let got = column_stats(&tasks, 1, &PrimitiveType::Long);
    assert_eq!(got.null_fraction, Some(7.0 / 20.0));
    assert_eq!(got.lower, Some(Literal::Long(-7)));
    assert_eq!(got.upper, Some(Literal::Long(50)));
    // Another field has no metrics at all.
    assert_eq!(
        column_stats(&tasks, 2, &PrimitiveType::Long),
        ColumnStats::default()
    );
}

#[test]
fn deletes_drop_the_null_fraction_but_bounds_still_enclose() {
    let mut t = task(file(10, Some(2), long(5), long(50)));
    let mut dv = DataFile::for_test("dv.puffin", 0, vec![], 3);
    dv.content = crate::spec::DataContent::PositionDeletes;
    t.deletion_vector = Some(DeleteFileRef {
        file: Arc::new(dv),
        sequence_number: 2,
    });
    let got = column_stats(
        &[t, task(file(4, Some(0), long(1), long(2)))],
        1,
        &PrimitiveType::Long,
    );
    assert_eq!(got.null_fraction, None);
    assert_eq!(
        (got.lower, got.upper),
        (Some(Literal::Long(1)), Some(Literal::Long(50)))
    );
}

#[test]
fn a_file_without_metrics_leaves_the_column_without_statistics() {
    // No null count (metrics mode none, or written before the field existed).
    let tasks = vec![
        task(file(10, Some(0), long(1), long(9))),
        task(file(3, None, None, None)),
    ];
    assert_eq!(
        column_stats(&tasks, 1, &PrimitiveType::Long),
        ColumnStats::default()
    );
    // Counts but no bounds (metrics mode counts) in a file with values: no bounds.
    let tasks = vec![
        task(file(10, Some(0), long(1), long(9))),
        task(file(3, Some(1), None, None)),
    ];
    let got = column_stats(&tasks, 1, &PrimitiveType::Long);
    assert_eq!(got.null_fraction, Some(1.0 / 13.0));
    assert_eq!((got.lower, got.upper), (None, None));
    // A bound that does not decode in the type.
    let tasks = vec![task(file(3, Some(0), Some(vec![1, 2, 3]), long(9)))];
    assert_eq!(column_stats(&tasks, 1, &PrimitiveType::Long).lower, None);
}

#[test]
fn strings_uuids_and_nan_bounds_give_no_bounds() {
    let s = |v: &str| Some(v.as_bytes().to_vec());
    let tasks = vec![task(file(3, Some(0), s("abc"), s("abd")))];
    let got = column_stats(&tasks, 1, &PrimitiveType::String);
    assert_eq!(
        (got.null_fraction, got.lower, got.upper),
        (Some(0.0), None, None)
    );
    let tasks = vec![task(file(3, Some(0), Some(vec![0; 16]), Some(vec![1; 16])))];
    assert_eq!(column_stats(&tasks, 1, &PrimitiveType::Uuid).upper, None);
    let nan = Some(f64::NAN.to_le_bytes().to_vec());
    let tasks = vec![task(file(
        3,
        Some(0),
        Some(1.5f64.to_le_bytes().to_vec()),
        nan,
    ))];
    let got = column_stats(&tasks, 1, &PrimitiveType::Double);
    assert_eq!((got.lower, got.upper), (Some(Literal::Double(1.5)), None));
    // A file of NaNs and nulls only needs no bounds.
    let mut only_nan = file(4, Some(1), None, None);
    only_nan.nan_value_counts = HashMap::from([(1, 3)]);
    let one = Some(1.0f64.to_le_bytes().to_vec());
    let tasks = vec![task(only_nan), task(file(2, Some(0), one.clone(), one))];
    let got = column_stats(&tasks, 1, &PrimitiveType::Double);
    assert_eq!(
        (got.lower, got.upper),
        (Some(Literal::Double(1.0)), Some(Literal::Double(1.0)))
    );
}
