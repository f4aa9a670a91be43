//! SQL through icefloe-datafusion against the core's reads (what `icefloe cat` prints), in one
//! process: every fixture snapshot through `SELECT *` (with and without the lineage columns),
//! the metadata columns, a GROUP BY, a join of two snapshots on `_row_id` against the change
//! feed, time travel by id, time, tag and branch, and filters on every type against
//! unfiltered reads filtered in the test.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::physical_plan::displayable;
use futures::TryStreamExt;
use icefloe_core::encode::jsonl::JsonLinesWriter;
use icefloe_core::history::ChangeFeed;
use icefloe_core::{Scan, SnapshotSelector, Table};
use icefloe_datafusion::{ExtraColumns, IcefloeSession};
use icefloe_testkit::rows::{json_lines, sorted, without_commit_columns};
use icefloe_testkit::{all_snapshots, diff_rows, FixtureSnapshot};
use serde_json::Value;

/// Batches as JSON values, one per row, in the core's JSON Lines encoding (as `icefloe cat
/// --format jsonl` prints them).
fn jsonl(batches: &[RecordBatch]) -> Vec<Value> {
    let mut w = JsonLinesWriter::new(Vec::new());
    for b in batches {
        w.write_batch(b).unwrap();
    }
    json_lines(&String::from_utf8(w.finish().unwrap()).unwrap())
}

/// What `icefloe cat --snapshot ID [--lineage] [--columns …]` reads, through the core.
async fn cat(
    table: &Table,
    sel: SnapshotSelector,
    lineage: bool,
    columns: Option<Vec<String>>,
) -> (Vec<RecordBatch>, Vec<Value>) {
    let mut b = Scan::builder().snapshot(sel).lineage(lineage);
    if let Some(c) = columns {
        b = b.columns(c);
    }
    let scan = b.build(table).unwrap();
    let tasks = scan.plan_files().await.unwrap();
    scan.load_deletes(&tasks).await.unwrap();
    let batches: Vec<RecordBatch> = scan.read_tasks(tasks).try_collect().await.unwrap();
    let rows = jsonl(&batches);
    (batches, rows)
}

async fn query(session: &IcefloeSession, sql: &str) -> Vec<RecordBatch> {
    let df = session
        .sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    df.collect().await.unwrap_or_else(|e| panic!("{sql}: {e}"))
}

async fn rows(session: &IcefloeSession, sql: &str) -> Vec<Value> {
    jsonl(&query(session, sql).await)
}

/// A session with every fixture table registered under its name.
async fn session(extra: ExtraColumns) -> IcefloeSession {
    let s = IcefloeSession::new(extra);
    let mut seen = std::collections::HashSet::new();
    for f in all_snapshots() {
        if seen.insert(f.table.clone()) {
            s.register_table(&f.table, open(&f).await).unwrap();
        }
    }
    s
}

async fn open(f: &FixtureSnapshot) -> Table {
    Table::open(f.table_dir.to_str().unwrap()).await.unwrap()
}

/// Every fixture snapshot: `SELECT *` of it equals `icefloe cat --snapshot ID` (same columns in
/// the same order, same rows), with and without the lineage columns; with them, the rows are
/// also the writer's (the fixture's expected rows).
#[tokio::test(flavor = "multi_thread")]
async fn select_star_equals_cat_for_every_snapshot() {
    let mut failures = Vec::new();
    let snaps = all_snapshots();
    for lineage in [false, true] {
        let s = session(ExtraColumns {
            lineage,
            metadata: false,
        })
        .await;
        for f in &snaps {
            let table = open(f).await;
            let (_, want) = cat(&table, SnapshotSelector::Id(f.snapshot_id), lineage, None).await;
            let sql = format!(
                "SELECT * FROM icefloe_snapshot('{}', {})",
                f.table, f.snapshot_id
            );
            let got = rows(&s, &sql).await;
            if sorted(&got) != sorted(&want) {
                failures.push(format!(
                    "{}@{} lineage={lineage}: {} rows by SQL, {} by cat; {:?}",
                    f.table,
                    f.snapshot_id,
                    got.len(),
                    want.len(),
                    diff_rows(&got, &want)
                ));
            }
            if lineage {
                if let Some(d) = diff_rows(&got, &f.expected_rows()) {
                    failures.push(format!("{}@{} vs the writer: {d}", f.table, f.snapshot_id));
                }
                for r in &got {
                    let keys: Vec<&String> = r.as_object().unwrap().keys().collect();
                    assert_eq!(keys, f.expected_columns.iter().collect::<Vec<_>>());
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} reads differ:\n{}",
        failures.len(),
        2 * snaps.len(),
        failures.join("\n")
    );
    assert!(snaps.len() >= 78);
}

/// The current snapshot by the table's name (no function) equals `icefloe cat`, and the
/// metadata columns by name equal `icefloe cat --columns _file,_pos,_spec_id,_partition`.
#[tokio::test(flavor = "multi_thread")]
async fn current_snapshot_and_metadata_columns() {
    let s = session(ExtraColumns {
        lineage: true,
        metadata: true,
    })
    .await;
    let mut tables: Vec<String> = all_snapshots().into_iter().map(|f| f.table).collect();
    tables.dedup();
    for name in &tables {
        let f = all_snapshots()
            .into_iter()
            .find(|f| &f.table == name)
            .unwrap();
        let table = open(&f).await;
        let meta: Vec<String> = ["_file", "_pos", "_spec_id", "_partition"]
            .map(String::from)
            .to_vec();
        let (_, want) = cat(&table, SnapshotSelector::Current, true, Some(meta)).await;
        let got = rows(
            &s,
            &format!(
                "SELECT _row_id, _last_updated_sequence_number, _file, _pos, _spec_id, _partition FROM {name}"
            ),
        )
        .await;
        assert_eq!(sorted(&got), sorted(&want), "{name}");
        // SELECT * has the lineage columns first, the metadata columns last.
        let star = query(&s, &format!("SELECT * FROM {name} LIMIT 1")).await;
        let schema = star[0].schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(
            &names[..2],
            ["_row_id", "_last_updated_sequence_number"],
            "{name}"
        );
        assert_eq!(
            &names[names.len() - 4..],
            ["_file", "_pos", "_spec_id", "_partition"],
            "{name}"
        );
        // count(*) (no column read) equals cat's row count.
        let n = rows(&s, &format!("SELECT count(*) AS n FROM {name}")).await;
        assert_eq!(n[0]["n"], Value::from(want.len()), "{name}");
    }
}

/// GROUP BY with aggregates equals the same sums computed from cat's rows.
#[tokio::test(flavor = "multi_thread")]
async fn group_by_equals_cat_rows_aggregated() {
    let s = session(ExtraColumns::default()).await;
    for f in all_snapshots()
        .into_iter()
        .filter(|f| f.table == "v3_basic" || f.table == "equality_deletes_v3")
    {
        let table = open(&f).await;
        let (_, want_rows) = cat(&table, SnapshotSelector::Id(f.snapshot_id), false, None).await;
        let (group, value) = if f.table == "v3_basic" {
            ("category", "id")
        } else {
            ("category", "val")
        };
        // group -> (count, sum of the value, count of non-null values).
        let mut want: BTreeMap<String, (i64, i64, i64)> = BTreeMap::new();
        for r in &want_rows {
            let g = r[group].to_string();
            let e = want.entry(g).or_default();
            e.0 += 1;
            if let Some(v) = r[value].as_i64() {
                e.1 += v;
                e.2 += 1;
            }
        }
        let got_rows = rows(
            &s,
            &format!(
                "SELECT {group} AS g, count(*) AS n, sum({value}) AS total, count({value}) AS nv \
                 FROM icefloe_snapshot('{}', {}) GROUP BY {group}",
                f.table, f.snapshot_id
            ),
        )
        .await;
        let got: BTreeMap<String, (i64, i64, i64)> = got_rows
            .iter()
            .map(|r| {
                (
                    r["g"].to_string(),
                    (
                        r["n"].as_i64().unwrap(),
                        r["total"].as_i64().unwrap_or(0),
                        r["nv"].as_i64().unwrap(),
                    ),
                )
            })
            .collect();
        assert_eq!(got, want, "{}@{}", f.table, f.snapshot_id);
    }
}

/// A join of two snapshots on `_row_id` (one commit apart, same schema) gives the change
/// feed's rows for that commit: only before is a delete, only after an insert, both with
/// another `_last_updated_sequence_number` an update.
#[tokio::test(flavor = "multi_thread")]
async fn join_of_two_snapshots_equals_the_change_feed() {
    let s = session(ExtraColumns {
        lineage: true,
        metadata: false,
    })
    .await;
    let mut compared = 0;
    for name in [
        "v3_lineage",
        "v3_lineage_cow",
        "v3_basic",
        "equality_deletes_v3",
    ] {
        let f = all_snapshots()
            .into_iter()
            .find(|f| f.table == name)
            .unwrap();
        let table = open(&f).await;
        let m = table.metadata();
        for child in &m.snapshots {
            let Some(parent) = child.parent_snapshot_id.and_then(|p| m.snapshot(p)) else {
                continue;
            };
            if m.snapshot_schema(parent).schema_id != m.snapshot_schema(child).schema_id {
                continue;
            }
            let (p, c) = (parent.snapshot_id, child.snapshot_id);
            // Every row of both has lineage (else the feed matches by key, not by _row_id).
            let nulls = rows(
                &s,
                &format!(
                    "SELECT count(*) AS n FROM (SELECT _row_id FROM icefloe_snapshot('{name}', {p}) \
                     UNION ALL SELECT _row_id FROM icefloe_snapshot('{name}', {c})) WHERE _row_id IS NULL"
                ),
            )
            .await;
            if nulls[0]["n"] != 0 {
                continue;
            }
            let sql = format!(
                "WITH a AS (SELECT * FROM icefloe_snapshot('{name}', {p})), \
                      b AS (SELECT * FROM icefloe_snapshot('{name}', {c})) \
                 SELECT 'delete' AS _change_type, a.* FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b._row_id = a._row_id) \
                 UNION ALL SELECT 'insert', b.* FROM b WHERE NOT EXISTS (SELECT 1 FROM a WHERE a._row_id = b._row_id) \
                 UNION ALL SELECT 'update_before', a.* FROM a JOIN b ON a._row_id = b._row_id \
                   WHERE a._last_updated_sequence_number <> b._last_updated_sequence_number \
                 UNION ALL SELECT 'update_after', b.* FROM a JOIN b ON a._row_id = b._row_id \
                   WHERE a._last_updated_sequence_number <> b._last_updated_sequence_number"
            );
            let got = rows(&s, &sql).await;
            // The core's change feed, as `icefloe changes --from P --to C` prints it, less the
            // commit columns.
            let feed = ChangeFeed::builder()
                .from_snapshot(p)
                .to_snapshot(c)
                .build(&table)
                .unwrap();
            let want: Vec<Value> = without_commit_columns(jsonl(&feed.batches().await.unwrap()));
            assert_eq!(sorted(&got), sorted(&want), "{name} {p} -> {c}");
            // The same feed through SQL.
            let by_sql = rows(
                &s,
                &format!(
                    "SELECT * EXCLUDE (_change_ordinal, _commit_snapshot_id, _change_sequence_number) \
                     FROM icefloe_changes('{name}', {p}, {c})"
                ),
            )
            .await;
            assert_eq!(sorted(&by_sql), sorted(&want), "{name} {p} -> {c} by SQL");
            compared += 1;
        }
    }
    eprintln!("{compared} commits compared with the change feed");
    assert!(compared >= 10, "only {compared} commits compared");
}

/// Time travel by snapshot id, by time (the snapshot log's instants), by tag and by branch,
/// each equal to `icefloe cat` with the same selector.
#[tokio::test(flavor = "multi_thread")]
async fn time_travel_by_id_time_tag_and_branch() {
    let s = session(ExtraColumns {
        lineage: true,
        metadata: false,
    })
    .await;
    let f = all_snapshots()
        .into_iter()
        .find(|f| f.table == "v3_basic")
        .unwrap();
    let table = open(&f).await;
    let m = table.metadata();
    let mut checked = 0;
    for entry in &m.snapshot_log {
        let ts = entry.timestamp_ms;
        let (_, want) = cat(&table, SnapshotSelector::AsOf(ts), true, None).await;
        for arg in [
            ts.to_string(),
            format!("'{}'", iso_ms(ts)),
            format!("arrow_cast({}, 'Timestamp(Millisecond, None)')", ts),
        ] {
            let got = rows(
                &s,
                &format!("SELECT * FROM icefloe_as_of('v3_basic', {arg})"),
            )
            .await;
            assert_eq!(sorted(&got), sorted(&want), "as of {arg}");
        }
        // One millisecond earlier is the previous snapshot (or an error before the first).
        checked += 1;
    }
    assert!(checked >= 8, "{checked} log entries");
    let first = m.snapshot_log.iter().map(|e| e.timestamp_ms).min().unwrap();
    let err = s
        .sql(&format!(
            "SELECT * FROM icefloe_as_of('v3_basic', {})",
            first - 1
        ))
        .await
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(err.contains("no snapshot of main was current"), "{err}");
    for (r, _) in m.refs.iter() {
        let (_, want) = cat(&table, SnapshotSelector::Ref(r.clone()), true, None).await;
        let got = rows(&s, &format!("SELECT * FROM icefloe_ref('v3_basic', '{r}')")).await;
        assert_eq!(sorted(&got), sorted(&want), "ref {r}");
    }
    assert!(m.refs.contains_key("after_update") && m.refs.contains_key("audit"));
    let err = s
        .sql("SELECT * FROM icefloe_ref('v3_basic', 'nope')")
        .await
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(err.contains("no branch or tag named \"nope\""), "{err}");
    let err = s
        .sql("SELECT * FROM icefloe_snapshot('nope', 1)")
        .await
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(err.contains("icefloe_snapshot: no table \"nope\""), "{err}");
}

/// `2026-01-31T12:00:00.123Z` for milliseconds since the epoch.
fn iso_ms(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// A SQL literal of the JSON value `v` for a column of Arrow type `ty` (as the core encodes
/// it), typed exactly as the column is, so that the filter can be pushed to the core.
fn literal(v: &Value, ty: &arrow::datatypes::DataType) -> Option<String> {
    use arrow::datatypes::DataType as D;
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => return None,
    };
    let quoted = format!("'{}'", text.replace('\'', "''"));
    Some(match ty {
        D::Binary => format!("X'{text}'"),
        D::FixedSizeBinary(_) if text.len() == 32 || text.contains('-') => return None,
        D::FixedSizeBinary(_) => format!("arrow_cast(X'{text}', '{ty}')"),
        D::Utf8 => quoted,
        D::Float32 | D::Float64 => format!("arrow_cast({quoted}, '{ty}')"),
        _ => format!("arrow_cast({quoted}, '{ty}')"),
    })
}

/// Filters on every top-level primitive column of the tables with every type (NULLs, NaN,
/// -0.0, ±Infinity, pre-1970 and far-future timestamps, with and without zone, nanoseconds):
/// for each value a column holds and each comparison, `WHERE` over the table (pushed to the
/// core where it can be) equals the same `WHERE` over the unfiltered rows held in memory
/// (nothing pushed: DataFusion alone filters).
#[tokio::test(flavor = "multi_thread")]
async fn filters_on_every_type_equal_unfiltered_reads_filtered() {
    let s = session(ExtraColumns {
        lineage: true,
        metadata: false,
    })
    .await;
    let mut queries = 0;
    let mut pushed = 0;
    for name in ["v3_types", "v3_basic", "v3_timestamp_ns", "v3_defaults"] {
        let f = all_snapshots()
            .into_iter()
            .find(|f| f.table == name)
            .unwrap();
        let table = open(&f).await;
        let (batches, cat_rows) = cat(&table, SnapshotSelector::Current, true, None).await;
        let schema = batches[0].schema();
        let mem = MemTable::try_new(schema.clone(), vec![batches.clone()]).unwrap();
        let plain = format!("{name}_in_memory");
        s.context().register_table(&plain, Arc::new(mem)).unwrap();
        for field in schema.fields() {
            let col = field.name();
            let ty = field.data_type();
            if ty.is_nested() {
                continue;
            }
            let mut values: Vec<&Value> = cat_rows.iter().map(|r| &r[col.as_str()]).collect();
            values.sort_by_key(|v| v.to_string());
            values.dedup();
            // A few values per column: the ends, quartiles, and every special float.
            let n = values.len();
            let special = |v: &Value| {
                matches!(v.as_str(), Some("NaN" | "Infinity" | "-Infinity"))
                    || v.as_f64().is_some_and(|x| x == 0.0)
            };
            let values: Vec<&Value> = values
                .iter()
                .enumerate()
                .filter(|(i, v)| {
                    n <= 6 || [0, n / 4, n / 2, 3 * n / 4, n - 1].contains(i) || special(v)
                })
                .map(|(_, v)| *v)
                .collect();
            let mut conditions = vec![
                format!("\"{col}\" IS NULL"),
                format!("\"{col}\" IS NOT NULL"),
            ];
            let lits: Vec<String> = values.iter().filter_map(|v| literal(v, ty)).collect();
            for lit in &lits {
                for op in ["=", "<>", "<", "<=", ">", ">="] {
                    conditions.push(format!("\"{col}\" {op} {lit}"));
                }
                conditions.push(format!("NOT (\"{col}\" > {lit})"));
            }
            if lits.len() >= 2 {
                conditions.push(format!("\"{col}\" IN ({}, {})", lits[0], lits[1]));
                conditions.push(format!("\"{col}\" NOT IN ({}, {})", lits[0], lits[1]));
                conditions.push(format!(
                    "\"{col}\" BETWEEN {} AND {} OR \"{col}\" IS NULL",
                    lits[0],
                    lits[lits.len() - 1]
                ));
            }
            for c in conditions {
                let over_table = format!("SELECT * FROM {name} WHERE {c}");
                let df = s
                    .sql(&over_table)
                    .await
                    .unwrap_or_else(|e| panic!("{over_table}: {e}"));
                let plan = df.clone().create_physical_plan().await.unwrap();
                if displayable(plan.as_ref())
                    .indent(true)
                    .to_string()
                    .contains("filter=")
                {
                    pushed += 1;
                }
                let got = jsonl(&df.collect().await.unwrap());
                let want = rows(&s, &format!("SELECT * FROM {plain} WHERE {c}")).await;
                assert_eq!(sorted(&got), sorted(&want), "{over_table}");
                queries += 1;
            }
        }
    }
    eprintln!("{queries} filters compared, {pushed} of them given to the core");
    assert!(queries > 500, "{queries} filters");
    assert!(
        pushed > 300,
        "{pushed} of {queries} filters pushed to the core"
    );
}

/// The semantics the pushed filters keep, with the rows they select named from the
/// unfiltered read: NULL matches no comparison; NaN equals NaN and is above +Infinity; -0.0
/// equals 0.0 (DataFusion's order, and the core's); a timestamp with zone compares by instant,
/// whatever offset the literal was written with. Each filter is given to the core.
#[tokio::test(flavor = "multi_thread")]
async fn nulls_nan_negative_zero_and_zones() {
    let s = session(ExtraColumns::default()).await;
    let all = rows(&s, "SELECT id, f, d, tstz FROM v3_types").await;
    let by = |pred: &dyn Fn(&Value) -> bool| -> Vec<i64> {
        let mut v: Vec<i64> = all
            .iter()
            .filter(|r| pred(r))
            .map(|r| r["id"].as_i64().unwrap())
            .collect();
        v.sort();
        v
    };
    let f32_of = |r: &Value| r["f"].as_f64();
    let is_nan = |r: &Value| r["f"] == "NaN";
    let at = "2024-01-15T12:34:56.789012";
    let ts_type = "'Timestamp(Microsecond, Some(\"+00:00\"))'";
    let cases: Vec<(String, Vec<i64>)> = vec![
        ("f = arrow_cast('NaN', 'Float32')".into(), by(&is_nan)),
        ("f > arrow_cast('Infinity', 'Float32')".into(), by(&is_nan)),
        (
            "f = arrow_cast('0.0', 'Float32')".into(),
            by(&|r| f32_of(r) == Some(0.0)),
        ),
        (
            "f = arrow_cast('-0.0', 'Float32')".into(),
            by(&|r| f32_of(r) == Some(0.0)),
        ),
        (
            "f < arrow_cast('0.0', 'Float32')".into(),
            by(&|r| f32_of(r).is_some_and(|x| x < 0.0)),
        ),
        (
            "f >= arrow_cast('-0.0', 'Float32')".into(),
            by(&|r| f32_of(r).is_some_and(|x| x >= 0.0) || is_nan(r)),
        ),
        ("f IS NULL".into(), by(&|r| r["f"].is_null())),
        (
            "NOT (f < arrow_cast('2.0', 'Float32'))".into(),
            by(&|r| f32_of(r).is_some_and(|x| x >= 2.0) || is_nan(r)),
        ),
        (
            format!("tstz = arrow_cast('{at}+00:00', {ts_type})"),
            by(&|r| r["tstz"] == format!("{at}+00:00").as_str()),
        ),
        (
            format!("tstz = arrow_cast('2024-01-15T14:34:56.789012+02:00', {ts_type})"),
            by(&|r| r["tstz"] == format!("{at}+00:00").as_str()),
        ),
        (
            format!("tstz < arrow_cast('1970-01-01T00:00:00+00:00', {ts_type})"),
            by(&|r| r["tstz"].as_str().is_some_and(|t| t < "1970")),
        ),
    ];
    assert!(!cases[0].1.is_empty() && !cases[2].1.is_empty() && !cases[8].1.is_empty());
    assert!(all.iter().any(|r| r["f"]
        .as_f64()
        .is_some_and(|x| x == 0.0 && x.is_sign_negative())));
    for (cond, want) in cases {
        let sql = format!("SELECT id FROM v3_types WHERE {cond}");
        let df = s.sql(&sql).await.unwrap();
        let plan = df.clone().create_physical_plan().await.unwrap();
        let shown = displayable(plan.as_ref()).indent(true).to_string();
        assert!(
            shown.contains("filter="),
            "not given to the core: {sql}\n{shown}"
        );
        let mut got: Vec<i64> = jsonl(&df.collect().await.unwrap())
            .iter()
            .map(|r| r["id"].as_i64().unwrap())
            .collect();
        got.sort();
        assert_eq!(got, want, "{sql}");
    }
}

/// The plan: `count(*)` answered from the exact live count where metadata gives it (deletion
/// vectors only) and read where it does not (equality deletes), both equal to cat's count;
/// `LIMIT` given to the scan; the file scan tasks spread over the session's partitions.
#[tokio::test(flavor = "multi_thread")]
async fn statistics_limit_and_partitions() {
    let config = datafusion::prelude::SessionConfig::new().with_target_partitions(4);
    let s = IcefloeSession::with_config(config, ExtraColumns::default());
    for name in ["v3_basic", "equality_deletes_v3"] {
        let f = all_snapshots()
            .into_iter()
            .find(|f| f.table == name)
            .unwrap();
        s.register_table(name, open(&f).await).unwrap();
    }
    let plan = |sql: String| {
        let s = &s;
        async move {
            let df = s.sql(&sql).await.unwrap();
            let p = df.create_physical_plan().await.unwrap();
            let shown = displayable(p.as_ref()).indent(true).to_string();
            shown
        }
    };
    for (name, from_metadata) in [("v3_basic", true), ("equality_deletes_v3", false)] {
        let f = all_snapshots()
            .into_iter()
            .find(|f| f.table == name)
            .unwrap();
        let (_, want) = cat(&open(&f).await, SnapshotSelector::Current, false, None).await;
        let shown = plan(format!("SELECT count(*) FROM {name}")).await;
        assert_eq!(!shown.contains("IcefloeScanExec"), from_metadata, "{shown}");
        let n = rows(&s, &format!("SELECT count(*) AS n FROM {name}")).await;
        assert_eq!(n[0]["n"], Value::from(want.len()), "{name}");
    }
    let shown = plan("SELECT * FROM v3_basic LIMIT 3".into()).await;
    assert!(shown.contains("limit=3"), "{shown}");
    assert_eq!(rows(&s, "SELECT * FROM v3_basic LIMIT 3").await.len(), 3);
    // v3_basic's current snapshot has more data files than partitions: four partitions.
    let shown = plan("SELECT * FROM v3_basic".into()).await;
    assert!(shown.contains("partitions=4"), "{shown}");
}
