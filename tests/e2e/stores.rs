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

/// Every fixture snapshot read through a proxy shaped like a real S3 connection (20 ms before
/// each response, 80 MB/s for each connection): with the default request sizes (the fixtures'
/// files mostly come whole with the footer's tail read), and in slices of 4 KiB fetched as
/// requests of at most 8 KiB within 16 KiB in flight (a tail of 8 KiB: every file larger is
/// read in ranged GETs), then with row groups whole (split into several requests). How bytes
/// arrive never changes which rows come out.
#[test]
fn every_fixture_snapshot_through_a_latency_and_bandwidth_capped_proxy() {
    let s3: Server = servers::moto();
    servers::create_s3_bucket(&s3, "lake");
    upload_warehouse("s3://lake/", "warehouse", &servers::s3_options(&s3));
    let proxy = servers::fault_proxy(&s3, &["--latency-ms", "20", "--bandwidth-mbps", "80"]);
    let mut opts = servers::s3_options(&proxy);
    every_snapshot_matches("s3://lake", &opts);
    for (k, v) in [
        ("read_slice_bytes", "4096"),
        ("read_part_bytes", "8192"),
        ("read_bytes_in_flight", "16384"),
    ] {
        opts.push((k.into(), v.into()));
    }
    every_snapshot_matches("s3://lake", &opts);
    opts.push(("read_slice_bytes".into(), "0".into()));
    every_snapshot_matches("s3://lake", &opts);
    let one = &all_snapshots()[0];
    for bad in ["read_part_bytes", "read_bytes_in_flight"] {
        for value in ["0", "lots"] {
            let mut o = opts.clone();
            o.push((bad.into(), value.into()));
            let err = cat("s3://lake", one, &o).expect_err("a bad request size");
            assert!(err.contains(bad), "{bad}={value}: {err}");
        }
    }
}

/// The bytes requested from the store and not yet received never exceed the table's budget
/// (`read_bytes_in_flight`) while a Parquet file of several MB (far larger than the tail read
/// with its footer) is read in slices of 16 KiB, several ahead at once; the values read are
/// those written.
#[test]
fn bytes_in_flight_never_exceed_the_budget() {
    use arrow::array::{Array, Int64Array, StringArray};
    use futures::TryStreamExt;
    use icefloe_core::io::{parquet::open_parquet_with, readahead, TableIo};
    use parquet::arrow::{ArrowWriter, ProjectionMask};

    let s3: Server = servers::moto();
    servers::create_s3_bucket(&s3, "lake");
    let mut opts = servers::s3_options(&s3);
    // 300,000 rows of two columns, uncompressed, in pages of 2,000 rows (an offset index).
    let rows = 300_000i64;
    let ids = Int64Array::from_iter_values(0..rows);
    let names = StringArray::from_iter_values((0..rows).map(|i| format!("name-{i:08}")));
    let batch = arrow::record_batch::RecordBatch::try_from_iter([
        ("id", std::sync::Arc::new(ids) as std::sync::Arc<dyn Array>),
        (
            "name",
            std::sync::Arc::new(names) as std::sync::Arc<dyn Array>,
        ),
    ])
    .unwrap();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_data_page_row_count_limit(2_000)
        .set_write_batch_size(2_000)
        .build();
    let dir = tempfile::tempdir().unwrap();
    let mut w = ArrowWriter::try_new(
        std::fs::File::create(dir.path().join("big.parquet")).unwrap(),
        batch.schema(),
        Some(props),
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let size = std::fs::metadata(dir.path().join("big.parquet"))
        .unwrap()
        .len();
    assert!(size > 4 << 20, "{size} bytes");
    servers::upload_dir(dir.path(), "s3://lake/", "files", &opts);

    let budget: u64 = 64 << 10;
    opts.extend([
        ("read_part_bytes".to_string(), "65536".to_string()),
        ("read_bytes_in_flight".to_string(), budget.to_string()),
    ]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (io, _) = TableIo::open_with_options("s3://lake/files", &opts).expect("store");
    let written = "s3://lake/files/big.parquet";
    let batches = rt.block_on(async {
        let file = open_parquet_with(&io, written, size as i64, false)
            .await
            .expect("open");
        let mask = ProjectionMask::all();
        let slices = readahead::slices(file.metadata.metadata(), &mask, 16 << 10);
        assert!(slices.len() > 20, "{} slices", slices.len());
        readahead::stream(file, mask, 4096, slices, None, written.into(), None, None)
            .try_collect::<Vec<_>>()
            .await
            .expect("read")
    });
    let mut next = 0i64;
    for b in &batches {
        let ids = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        let names = b.column(1).as_any().downcast_ref::<StringArray>().unwrap();
        for i in 0..b.num_rows() {
            assert_eq!(ids.value(i), next);
            assert_eq!(names.value(i), format!("name-{next:08}"));
            next += 1;
        }
    }
    assert_eq!(next, rows, "rows read");
    let fetch = io.ranged_fetch();
    assert_eq!(fetch.budget.bytes(), budget);
    assert!(
        fetch.budget.requests() > 20,
        "{} ranged GETs",
        fetch.budget.requests()
    );
    assert!(
        fetch.budget.peak() <= budget,
        "{} bytes in flight at once, over the budget of {budget}",
        fetch.budget.peak()
    );
    // Several requests were in flight at once: more than one part's worth.
    assert!(
        fetch.budget.peak() > 16 << 10,
        "peak {}",
        fetch.budget.peak()
    );
    assert_eq!(fetch.budget.in_flight(), 0, "bytes still counted in flight");
}

/// The files of a table in S3 read at once (more of them than cores), each reading ahead as far
/// as its share of the table's window allows (slices of 4 KiB in a window of 64 KiB): the bytes
/// read ahead never exceed the window, nor the bytes in flight the budget, and the rows come
/// out as a local read gives them, in the same order.
#[test]
fn files_read_ahead_together_stay_within_the_window_in_order() {
    use futures::TryStreamExt;
    use icefloe_core::{Scan, Table};

    let s3: Server = servers::moto();
    servers::create_s3_bucket(&s3, "lake");
    let mut opts = servers::s3_options(&s3);
    upload_warehouse("s3://lake/", "warehouse", &opts);
    let window: u64 = 64 << 10;
    for (k, v) in [
        ("read_slice_bytes", "4096".to_string()),
        ("read_part_bytes", "8192".to_string()),
        ("read_bytes_in_flight", window.to_string()),
    ] {
        opts.push((k.to_string(), v));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    async fn read(t: &Table) -> arrow::record_batch::RecordBatch {
        let scan = Scan::builder().lineage(true).build(t).expect("scan");
        let tasks = scan.plan_files().await.expect("plan");
        let batches: Vec<_> = scan.read_tasks(tasks).try_collect().await.expect("read");
        arrow::compute::concat_batches(&scan.schema(), &batches).expect("concat")
    }
    for name in ["partitioned", "v3_basic", "v3_dv_large"] {
        let dir = fixtures_dir().join("warehouse/db").join(name);
        rt.block_on(async {
            let local = Table::open(dir.to_str().unwrap()).await.expect("local");
            let caches = std::sync::Arc::new(icefloe_core::cache::Caches::new(64 << 20));
            let remote =
                Table::open_with_storage(&format!("s3://lake/warehouse/db/{name}"), caches, &opts)
                    .await
                    .expect("remote");
            let want = read(&local).await;
            let got = read(&remote).await;
            assert!(want.num_rows() > 0, "{name}");
            assert!(
                got == want,
                "{name}: the rows from S3 differ from the local read"
            );
            let fetch = remote.io().ranged_fetch();
            assert_eq!(fetch.ahead.bytes(), window);
            assert!(
                fetch.ahead.peak() <= window,
                "{name}: {} bytes read ahead at once, over the window of {window}",
                fetch.ahead.peak()
            );
            assert!(fetch.budget.peak() <= window, "{name}: over the budget");
            assert_eq!(fetch.ahead.in_use(), 0, "{name}: room kept after the read");
            if name == "v3_dv_large" {
                // Its large file is read far ahead: more than two slices at once.
                assert!(
                    fetch.ahead.peak() > 8192,
                    "{name}: peak {}",
                    fetch.ahead.peak()
                );
            }
        });
    }
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

/// AWS profiles (`~/.aws/credentials` and `~/.aws/config`, `AWS_PROFILE`, `credential_process`)
/// are the user's ambient credentials: reads from S3 are signed with the selected profile's
/// key (as the request log of a proxy in front of the server shows), `AWS_*` variables win
/// over a profile, and a named profile that does not exist is an error naming it.
#[test]
fn aws_profiles_sign_the_requests() {
    let s3: Server = servers::moto();
    servers::create_s3_bucket(&s3, "lake");
    let opts = servers::s3_options(&s3);
    upload_warehouse("s3://lake/", "warehouse", &opts);
    let proxy = servers::fault_proxy(&s3, &[]);
    let home = tempfile::tempdir().expect("home");
    let aws = home.path().join(".aws");
    std::fs::create_dir_all(&aws).unwrap();
    std::fs::write(
        aws.join("credentials"),
        "[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = d\n\
         [lake]\naws_access_key_id = AKIALAKE\naws_secret_access_key = l\naws_session_token = t\n",
    )
    .unwrap();
    let process = home.path().join("creds.sh");
    std::fs::write(
        &process,
        "echo '{\"Version\": 1, \"AccessKeyId\": \"AKIAPROC\", \"SecretAccessKey\": \"p\"}'\n",
    )
    .unwrap();
    std::fs::write(
        aws.join("config"),
        format!(
            "[profile lake]\nregion = us-east-1\n\
             [profile proc]\ncredential_process = /bin/sh {}\n",
            process.display()
        ),
    )
    .unwrap();
    let snap = all_snapshots()
        .into_iter()
        .find(|s| s.table == "v3_basic")
        .expect("v3_basic");
    let rel = snap.table_dir.strip_prefix(fixtures_dir()).unwrap();
    let location = format!("s3://lake/{}", rel.to_str().unwrap());
    let run = |env: &[(&str, &str)]| {
        let before = std::fs::read_to_string(proxy.log_file())
            .unwrap_or_default()
            .len();
        let mut cmd = std::process::Command::new(ICEFLOE);
        cmd.args(["cat", &location, "--format", "jsonl", "--lineage"])
            .args(["--snapshot", &snap.snapshot_id.to_string()])
            .args(["--storage-option", &format!("aws_endpoint={}", proxy.url())])
            .args(["--storage-option", "aws_allow_http=true"])
            .env("HOME", home.path());
        for k in [
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_PROFILE",
            "AWS_DEFAULT_PROFILE",
            "AWS_CONFIG_FILE",
            "AWS_SHARED_CREDENTIALS_FILE",
            "AWS_ENDPOINT",
            "AWS_REGION",
            "AWS_DEFAULT_REGION",
        ] {
            cmd.env_remove(k);
        }
        cmd.env("AWS_REGION", "us-east-1");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run icefloe");
        (out, proxy.get_signers(before))
    };
    let rows = |out: &std::process::Output| -> Vec<Value> {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    for (env, key) in [
        (vec![], "AKIADEFAULT"),
        (vec![("AWS_PROFILE", "lake")], "AKIALAKE"),
        (vec![("AWS_PROFILE", "proc")], "AKIAPROC"),
        (
            vec![
                ("AWS_PROFILE", "lake"),
                ("AWS_ACCESS_KEY_ID", "AKIAENV"),
                ("AWS_SECRET_ACCESS_KEY", "e"),
            ],
            "AKIAENV",
        ),
    ] {
        let (out, keys) = run(&env);
        if let Some(d) = diff_rows(&rows(&out), &snap.expected_rows()) {
            panic!("{env:?}: {d}");
        }
        assert_eq!(keys, [key.to_string()].into(), "{env:?}");
    }
    let (out, _) = run(&[("AWS_PROFILE", "nosuch")]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("AWS profile \"nosuch\""), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
