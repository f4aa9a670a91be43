//! Reads from S3 (moto) through a fault-injecting proxy (`tests/fault_proxy.py`) on 127.0.0.1:
//! dropped and reset connections, 500/503 answers, bodies cut short and responses slower than
//! the client's timeout. The reader retries with backoff and must then return every snapshot's
//! expected rows; when an object keeps failing, the scan must fail with an error naming that
//! object, never return fewer (or, for a delete file, more) rows.

use icefloe_testkit::cat::cat_at;
use icefloe_testkit::servers::{self, Server};
use icefloe_testkit::{all_snapshots, diff_rows, FixtureSnapshot};

const ICEFLOE: &str = env!("CARGO_BIN_EXE_icefloe");

/// moto with the fixture warehouse uploaded at `s3://lake/warehouse/` (directly, not through a
/// proxy).
fn s3_with_warehouse() -> Server {
    let s3 = servers::moto();
    servers::create_s3_bucket(&s3, "lake");
    servers::upload_warehouse("s3://lake/", "warehouse", &servers::s3_options(&s3));
    s3
}

/// Every snapshot of the fixture tables `tables`.
fn snapshots_of(tables: &[&str]) -> Vec<FixtureSnapshot> {
    let snaps: Vec<_> = all_snapshots()
        .into_iter()
        .filter(|s| tables.iter().any(|t| s.table.ends_with(t)))
        .collect();
    assert!(!snaps.is_empty(), "no fixture table among {tables:?}");
    snaps
}

/// Options reaching moto through `proxy`, with a short request timeout (so that slow
/// responses time out and are retried) and the retry policy `retry`.
fn through(proxy: &Server, retry: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut opts = servers::s3_options(proxy);
    opts.extend(retry.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    opts
}

#[test]
fn every_snapshot_reads_its_rows_through_dropped_connections_5xx_cut_bodies_and_slow_responses() {
    let s3 = s3_with_warehouse();
    // Each distinct request gets the next kind; its first two attempts fault.
    let kinds = "ok,drop,503,truncate,ok,reset,500,ok,drop,503,truncate,slow";
    let proxy = servers::fault_proxy(
        &s3,
        &["--faults", kinds, "--repeat", "2", "--slow-ms", "1500"],
    );
    let opts = through(
        &proxy,
        &[
            ("timeout", "1s"),
            ("backoff_config.init_backoff", "10ms"),
            ("backoff_config.max_backoff", "200ms"),
        ],
    );
    let snaps = snapshots_of(&[
        "v3_basic",
        "equality_deletes_v2",
        "v2_upgraded",
        "v3_dv_large",
    ]);
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = snaps
            .chunks(snaps.len().div_ceil(3))
            .map(|chunk| {
                let opts = &opts;
                scope.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|s| {
                            let what = format!("{}@{}", s.table, s.snapshot_id);
                            match cat_at(ICEFLOE, "s3://lake", s, opts) {
                                Ok(rows) => diff_rows(&rows, &s.expected_rows())
                                    .map(|d| format!("{what}: {d}")),
                                Err(e) => Some(format!("{what}: icefloe failed: {e}")),
                            }
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("reader thread"))
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} snapshots wrong through the fault proxy:\n{}",
        failures.len(),
        snaps.len(),
        failures.join("\n")
    );
    // The faults really happened, each kind on reads.
    let log = std::fs::read_to_string(proxy.log_file()).expect("proxy log");
    for kind in ["drop", "reset", "503", "500", "truncate", "slow"] {
        let n = log
            .lines()
            .filter(|l| l.starts_with(&format!("{kind} GET ")))
            .count();
        assert!(n > 0, "no GET got fault {kind}:\n{log}");
    }
}

/// Reads every snapshot of `table` while each request for an object matching `pattern` fails
/// with `fault` on every attempt: each snapshot either reads exactly its expected rows (it
/// needs none of those objects) or fails naming one of them; at least one fails.
fn persistent_failure(s3: &Server, table: &str, pattern: &str, fault: &str, suffix: &str) {
    // `--fail=` keeps a pattern that starts with `-` a value.
    let fail = format!("--fail={pattern}");
    let proxy = servers::fault_proxy(s3, &[&fail, "--fail-with", fault]);
    let opts = through(
        &proxy,
        &[
            ("max_retries", "2"),
            ("retry_timeout", "20s"),
            ("backoff_config.init_backoff", "10ms"),
        ],
    );
    let mut failed = 0;
    for s in snapshots_of(&[table]) {
        let what = format!(
            "{}@{} with {pattern} failing ({fault})",
            s.table, s.snapshot_id
        );
        match cat_at(ICEFLOE, "s3://lake", &s, &opts) {
            Ok(rows) => {
                if let Some(d) = diff_rows(&rows, &s.expected_rows()) {
                    panic!("{what}: read rows that differ: {d}");
                }
            }
            Err(e) => {
                failed += 1;
                let named = e
                    .split_whitespace()
                    .any(|w| w.contains("s3://lake/warehouse/") && w.contains(suffix));
                assert!(named, "{what}: the error names no {suffix} object: {e}");
            }
        }
    }
    assert!(
        failed > 0,
        "{table}: no snapshot needed an object matching {pattern}"
    );
}

#[test]
fn a_delete_file_or_dv_that_cannot_be_fetched_fails_the_scan_naming_it() {
    let s3 = s3_with_warehouse();
    for (table, pattern, fault, suffix) in [
        (
            "equality_deletes_v2",
            r"eq-deletes\.parquet$",
            "503",
            "eq-deletes.parquet",
        ),
        (
            "equality_deletes_v2",
            r"pos-deletes\.parquet$",
            "drop",
            "pos-deletes.parquet",
        ),
        (
            "v2_upgraded",
            r"-deletes\.puffin$",
            "truncate",
            "-deletes.puffin",
        ),
        (
            "v2_upgraded",
            r"-deletes\.parquet$",
            "reset",
            "-deletes.parquet",
        ),
        ("v3_basic", r"-deletes\.puffin$", "500", "-deletes.puffin"),
    ] {
        persistent_failure(&s3, table, pattern, fault, suffix);
    }
}

#[test]
fn a_data_file_or_manifest_that_cannot_be_fetched_fails_the_scan_naming_it() {
    let s3 = s3_with_warehouse();
    persistent_failure(
        &s3,
        "v3_basic",
        r"/data/[^/]*-00001\.parquet$",
        "503",
        ".parquet",
    );
    persistent_failure(&s3, "v3_lineage", r"-m0\.avro$", "drop", "-m0.avro");
}
