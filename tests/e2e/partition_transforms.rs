//! `bucket[N]` and `truncate[W]` partition pruning, over tables Spark 3.5.9 +
//! Iceberg 1.10.2 partitioned by those transforms (`tests/gen/pg_bucket_truncate.py`): the
//! core's bucket hash agrees with Spark's on every row, pruning keeps every file holding a
//! matching row (sound), and equality on a transformed column skips files (effective).

use std::collections::HashMap;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{Date32Type, Decimal128Type, Int32Type, Int64Type};
use futures::TryStreamExt;
use icefloe_core::scan::prune::{CmpOp, Predicate, Pruner};
use icefloe_core::spec::{bucket, Literal, PrimitiveType, Transform};
use icefloe_core::{FileScanTask, Scan, Table};
use icefloe_testkit::fixtures_dir;

/// A row's values by column name (None = NULL).
type Row = HashMap<String, Option<Literal>>;

/// A predicate and whether a row satisfies it (evaluated here, independently of the core).
type Case = (Predicate, Box<dyn Fn(&Row) -> bool>);

/// Every data file of a fixture table with its rows, and the table.
async fn files_and_rows(name: &str) -> (Table, Vec<(FileScanTask, Vec<Row>)>) {
    let dir = fixtures_dir().join("pg_edge").join(name);
    let table = Table::open(dir.to_str().unwrap()).await.unwrap();
    let scan = Scan::builder().build(&table).unwrap();
    let tasks = scan.plan_files().await.unwrap();
    let schema = scan.schema();
    let mut out = Vec::new();
    for t in tasks {
        let batches: Vec<_> = scan.read_task(t.clone()).try_collect().await.unwrap();
        let mut rows = Vec::new();
        for b in batches {
            for i in 0..b.num_rows() {
                let mut row = Row::new();
                for (c, f) in b.columns().iter().zip(schema.fields()) {
                    let v = (!c.is_null(i)).then(|| match f.name().as_str() {
                        "id" => Literal::Long(c.as_primitive::<Int64Type>().value(i)),
                        "n" => Literal::Int(c.as_primitive::<Int32Type>().value(i)),
                        "s" => Literal::String(c.as_string::<i32>().value(i).to_string()),
                        "d" => Literal::Decimal(c.as_primitive::<Decimal128Type>().value(i)),
                        "dt" => Literal::Date(c.as_primitive::<Date32Type>().value(i)),
                        "b" => Literal::Binary(c.as_binary::<i32>().value(i).to_vec()),
                        other => panic!("unexpected column {other}"),
                    });
                    row.insert(f.name().clone(), v);
                }
                rows.push(row);
            }
        }
        out.push((t, rows));
    }
    (table, out)
}

fn column_type(table: &Table, name: &str) -> (i32, PrimitiveType) {
    let f = table.metadata().current_schema().column(name).unwrap();
    (f.id, f.field_type.as_primitive().unwrap().clone())
}

/// Checks soundness of each predicate over every file, and returns how many files in all the
/// predicates skipped.
fn check_pruning(table: &Table, files: &[(FileScanTask, Vec<Row>)], cases: &[Case]) -> usize {
    let schema = table.metadata().current_schema().clone();
    let mut skipped = 0;
    for (p, holds) in cases {
        let pruner = Pruner::new(table.metadata(), &schema, vec![p.clone()]);
        for (t, rows) in files {
            let may = pruner.may_match(&t.data_file);
            if rows.iter().any(holds) {
                assert!(
                    may,
                    "{p:?} skipped {} which holds a matching row",
                    t.data_file.file_path
                );
            } else if !may {
                skipped += 1;
            }
        }
    }
    skipped
}

fn cmp(id: i32, op: CmpOp, value: Literal) -> Predicate {
    Predicate::Cmp {
        field_id: id,
        op,
        value,
    }
}

#[tokio::test]
async fn bucket_hash_agrees_with_spark_and_prunes() {
    let (table, files) = files_and_rows("bucket_parts").await;
    assert!(files.len() > 8, "{} files", files.len());
    // Every row's bucket, by the core's hash, is its file's partition value as Spark wrote it.
    let mut checked = 0;
    for (t, rows) in &files {
        let spec = table
            .metadata()
            .partition_spec(t.data_file.spec_id)
            .unwrap();
        for (pf, value) in spec.fields.iter().zip(&t.data_file.partition) {
            let Transform::Bucket(n) = pf.transform else {
                panic!("{:?}", pf.transform)
            };
            let col = table
                .metadata()
                .current_schema()
                .fields
                .field_by_id(pf.source_id)
                .unwrap();
            let ty = col.field_type.as_primitive().unwrap();
            for r in rows {
                let want = r[&col.name]
                    .as_ref()
                    .map(|v| Literal::Int(bucket::bucket(v, ty, n).unwrap()));
                assert_eq!(
                    value, &want,
                    "{} of {:?} in {}",
                    pf.name, r[&col.name], t.data_file.file_path
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 41 * 4);
    // Equality and IN on each bucketed column keep the files of matching rows, skip others.
    let all: Vec<Row> = files.iter().flat_map(|(_, r)| r.clone()).collect();
    let mut cases: Vec<Case> = Vec::new();
    for name in ["id", "s", "d", "dt"] {
        let (id, _) = column_type(&table, name);
        for r in all.iter().step_by(7) {
            let Some(v) = r[name].clone() else { continue };
            let (n, w) = (name.to_string(), v.clone());
            cases.push((
                cmp(id, CmpOp::Eq, v),
                Box::new(move |row: &Row| row[&n].as_ref() == Some(&w)),
            ));
        }
        let vals: Vec<Literal> = all
            .iter()
            .skip(3)
            .step_by(13)
            .filter_map(|r| r[name].clone())
            .collect();
        let (n, w) = (name.to_string(), vals.clone());
        cases.push((
            Predicate::In {
                field_id: id,
                values: vals,
            },
            Box::new(move |row: &Row| row[&n].as_ref().is_some_and(|v| w.contains(v))),
        ));
    }
    let skipped = check_pruning(&table, &files, &cases);
    // Each equality keeps only the files of its row's four buckets.
    assert!(
        skipped > cases.len() * (files.len() / 2),
        "skipped {skipped} of {}",
        cases.len() * files.len()
    );
}

#[tokio::test]
async fn truncate_partitions_prune_soundly() {
    let (table, files) = files_and_rows("truncate_parts").await;
    assert!(files.len() > 8, "{} files", files.len());
    let all: Vec<Row> = files.iter().flat_map(|(_, r)| r.clone()).collect();
    let ord = |a: &Literal, b: &Literal| match (a, b) {
        (Literal::String(x), Literal::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Literal::Binary(x), Literal::Binary(y)) => x.cmp(y),
        (Literal::Decimal(x), Literal::Decimal(y)) => x.cmp(y),
        (Literal::Int(x), Literal::Int(y)) => x.cmp(y),
        (Literal::Long(x), Literal::Long(y)) => x.cmp(y),
        _ => panic!("{a:?} {b:?}"),
    };
    let mut cases: Vec<Case> = Vec::new();
    let mut probes: Vec<(&str, Literal)> = Vec::new();
    for r in all.iter().step_by(3) {
        for name in ["s", "d", "n", "b"] {
            if let Some(v) = r[name].clone() {
                probes.push((name, v));
            }
        }
    }
    // Values between and around the rows' too.
    for s in [
        "a", "ap", "apr", "b", "bz", "c", "cherry39", "cherry4", "d", "",
    ] {
        probes.push(("s", Literal::String(s.into())));
    }
    for b in [&b"b"[..], b"b1", b"b2", b"b39", b"c", b""] {
        probes.push(("b", Literal::Binary(b.to_vec())));
    }
    for d in [-1i128, 0, 99, 100, 1443, 1500] {
        probes.push(("d", Literal::Decimal(d)));
    }
    for (name, v) in probes {
        let (id, _) = column_type(&table, name);
        for op in [CmpOp::Eq, CmpOp::Lt, CmpOp::LtEq, CmpOp::Gt, CmpOp::GtEq] {
            let (n, w) = (name.to_string(), v.clone());
            let holds = move |row: &Row| {
                row[&n].as_ref().is_some_and(|x| {
                    let o = ord(x, &w);
                    match op {
                        CmpOp::Eq => o.is_eq(),
                        CmpOp::Lt => o.is_lt(),
                        CmpOp::LtEq => o.is_le(),
                        CmpOp::Gt => o.is_gt(),
                        CmpOp::GtEq => o.is_ge(),
                        CmpOp::NotEq => o.is_ne(),
                    }
                })
            };
            cases.push((cmp(id, op, v.clone()), Box::new(holds)));
        }
    }
    let skipped = check_pruning(&table, &files, &cases);
    assert!(
        skipped > cases.len() * files.len() / 3,
        "skipped {skipped} of {}",
        cases.len() * files.len()
    );
}
