//! Every fixture snapshot read by `icefloe cat` from real object-store servers on 127.0.0.1
//! (moto for S3, Azurite for Azure Blob, fake-gcs-server for GCS), equal to the rows the
//! writing engine reads back. The fixture warehouse is uploaded as it is: its metadata records
//! local absolute paths, which the reader relocates under the location it was opened at.
//!
//! The servers come from `scripts/servers install`; without them these tests fail, never pass
//! silently.

use icefloe_testkit::servers::{self, upload_warehouse, Server};
use icefloe_testkit::{all_snapshots, diff_rows, fixtures_dir, FixtureSnapshot};
use serde_json::Value;

const ICEFLOE: &str = env!("CARGO_BIN_EXE_icefloe");

/// Reads one snapshot from `<base>/<table dir relative to tests/fixtures>` with `icefloe cat`.
fn cat(base: &str, s: &FixtureSnapshot, opts: &[(String, String)]) -> Result<Vec<Value>, String> {
    icefloe_testkit::cat::cat_at(ICEFLOE, base, s, opts)
}

/// Reads every fixture snapshot from `base` (four `icefloe` processes at a time) and asserts
/// each equals its expected rows.
fn every_snapshot_matches(base: &str, opts: &[(String, String)]) {
    let snaps = all_snapshots();
    let failures: Vec<String> = std::thread::scope(|scope| {
        let chunks: Vec<_> = snaps
            .chunks(snaps.len().div_ceil(4))
            .map(|chunk| {
                scope.spawn(move || {
                    let mut failed = Vec::new();
                    for s in chunk {
                        let what = format!("{}@{}", s.table, s.snapshot_id);
                        match cat(base, s, opts) {
                            Ok(rows) => {
                                if let Some(d) = diff_rows(&rows, &s.expected_rows()) {
                                    failed.push(format!("{what}: {d}"));
                                }
                            }
                            Err(e) => failed.push(format!("{what}: icefloe failed: {e}")),
                        }
                    }
                    failed
                })
            })
            .collect();
        chunks
            .into_iter()
            .flat_map(|h| h.join().expect("reader thread"))
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} snapshots differ when read from {base}:\n{}",
        failures.len(),
        snaps.len(),
        failures.join("\n")
    );
}

#[test]
fn every_fixture_snapshot_from_s3() {
    let s3: Server = servers::moto();
    servers::create_s3_bucket(&s3, "lake");
    let opts = servers::s3_options(&s3);
    upload_warehouse("s3://lake/", "warehouse", &opts);
    every_snapshot_matches("s3://lake", &opts);
    // s3a:// is the same store.
    let one = &all_snapshots()[0];
    assert!(cat("s3a://lake", one, &opts).is_ok());
}

/// The same through read-ahead slices of 4 KiB (the fixtures' data files are cut into many;
/// `read_slice_bytes=0` reads row groups whole): deletes, lineage and positions are those of
/// whole-file reads.
#[test]
fn every_fixture_snapshot_from_s3_in_small_read_ahead_slices() {
    let s3: Server = servers::moto();
    servers::create_s3_bucket(&s3, "lake");
    let mut opts = servers::s3_options(&s3);
    upload_warehouse("s3://lake/", "warehouse", &opts);
    opts.push(("read_slice_bytes".into(), "4096".into()));
    every_snapshot_matches("s3://lake", &opts);
    opts.push(("read_slice_bytes".into(), "0".into()));
    every_snapshot_matches("s3://lake", &opts);
    opts.push(("read_slice_bytes".into(), "lots".into()));
    let one = &all_snapshots()[0];
    let err = cat("s3://lake", one, &opts).expect_err("a bad slice size");
    assert!(err.contains("read_slice_bytes"), "{err}");
}

#[test]
fn every_fixture_snapshot_from_azure_blob() {
    let az = servers::azurite();
    servers::create_azure_container(&az, "lake");
    let opts = servers::azure_options(&az);
    upload_warehouse("az://lake/", "warehouse", &opts);
    every_snapshot_matches("az://lake", &opts);
}

#[test]
fn every_fixture_snapshot_from_gcs() {
    let data = tempfile::tempdir().expect("data dir");
    let bucket = data.path().join("lake/warehouse");
    std::fs::create_dir_all(&bucket).expect("bucket dir");
    servers::copy_tree(&fixtures_dir().join("warehouse"), &bucket);
    let gcs = servers::fake_gcs(data.path());
    every_snapshot_matches("gs://lake", &servers::gcs_options(&gcs));
}

#[test]
fn a_missing_bucket_is_an_error_naming_it() {
    let s3 = servers::moto();
    servers::create_s3_bucket(&s3, "lake");
    let opts = servers::s3_options(&s3);
    upload_warehouse("s3://lake/", "warehouse", &opts);
    let one = &all_snapshots()[0];
    // A bucket that does not exist.
    let err = cat("s3://nolake", one, &opts).expect_err("no such bucket");
    assert!(err.contains("s3://nolake/"), "{err}");
}
