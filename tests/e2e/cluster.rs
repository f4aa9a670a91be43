//! `icefloe scheduler`, `icefloe executor` and `icefloe sql --cluster` (built with `--features
//! cluster`): one scheduler and two executors started as processes of the built binary on
//! 127.0.0.1 (free ports, killed when dropped), queried through `icefloe sql --cluster`, and
//! compared with `icefloe cat` and `icefloe changes`: every fixture snapshot through `SELECT *`
//! with and without lineage, a GROUP BY that is shuffled between stages, a join of two
//! snapshots on `_row_id`, time travel; an executor killed mid-query; and no credential in the
//! plans the cluster is sent (tables on moto's S3, each process with its own credentials).

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use icefloe_testkit::rows::{json_lines, sorted, without_commit_columns};
use icefloe_testkit::run::{bin, icefloe_with, stdout};
use icefloe_testkit::servers::{self, free_port};
use icefloe_testkit::{all_snapshots, FixtureSnapshot};
use serde_json::Value;

/// Environment for every process: in debug builds, AWS variables that keep the AWS SDK's
/// profile loader (run for remote locations and catalogs) from its debug-only assertion that an
/// HTTP client is configured; they are no table's credentials (storage options win).
fn debug_env() -> Vec<(&'static str, &'static str)> {
    if cfg!(debug_assertions) {
        vec![
            ("AWS_ACCESS_KEY_ID", "unused"),
            ("AWS_SECRET_ACCESS_KEY", "unused"),
            ("AWS_REGION", "us-east-1"),
        ]
    } else {
        vec![]
    }
}

/// `icefloe args…`.
fn icefloe(args: &[&str]) -> Output {
    icefloe_with(args, &debug_env())
}

/// A process of the cluster, killed when dropped; its output in a log file.
struct Proc {
    child: Child,
    log: PathBuf,
}

impl Proc {
    fn start(args: &[String], log: PathBuf) -> Proc {
        let f = std::fs::File::create(&log).unwrap();
        let child = Command::new(bin())
            .args(args)
            .env("ICEFLOE_LOG", "info")
            .envs(debug_env())
            .stdin(Stdio::null())
            .stdout(f.try_clone().unwrap())
            .stderr(f)
            .spawn()
            .unwrap();
        Proc { child, log }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One scheduler and two executors.
struct Cluster {
    scheduler: Proc,
    executors: Vec<Proc>,
    address: String,
    _dir: tempfile::TempDir,
}

fn wait_listening(port: u16, p: &mut Proc, what: &str) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = p.child.try_wait() {
            panic!("{what} exited ({status}):\n{}", p.log_text());
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{what} did not listen on {port}:\n{}",
            p.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Cluster {
    /// A cluster whose processes take `storage` options each (their own credentials).
    fn start(scheduler_storage: &[String], executor_storage: &[String]) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let address = format!("127.0.0.1:{port}");
        let mut args: Vec<String> = vec![
            "scheduler".into(),
            "--bind".into(),
            address.clone(),
            "--executor-timeout".into(),
            "6".into(),
        ];
        args.extend(scheduler_storage.iter().cloned());
        let mut scheduler = Proc::start(&args, dir.path().join("scheduler.log"));
        wait_listening(port, &mut scheduler, "the scheduler");
        let mut executors = Vec::new();
        for i in 0..2 {
            let (flight, grpc) = (free_port(), free_port());
            let work = dir.path().join(format!("work{i}"));
            std::fs::create_dir_all(&work).unwrap();
            let mut args: Vec<String> = vec![
                "executor".into(),
                "--scheduler".into(),
                address.clone(),
                "--bind".into(),
                format!("127.0.0.1:{flight}"),
                "--grpc-port".into(),
                grpc.to_string(),
                "--concurrent-tasks".into(),
                "2".into(),
                "--heartbeat-interval".into(),
                "1".into(),
                "--work-dir".into(),
                work.to_str().unwrap().into(),
            ];
            args.extend(executor_storage.iter().cloned());
            let mut e = Proc::start(&args, dir.path().join(format!("executor{i}.log")));
            wait_listening(flight, &mut e, "an executor");
            executors.push(e);
        }
        // Registered: the scheduler has heard from both.
        std::thread::sleep(Duration::from_millis(1500));
        Cluster {
            scheduler,
            executors,
            address,
            _dir: dir,
        }
    }

    /// `icefloe sql --cluster ADDRESS args…`.
    fn sql(&self, args: &[&str]) -> Output {
        icefloe(&[&["sql", "--cluster", &self.address], args].concat())
    }

    /// The logs of every process (for failure messages).
    fn logs(&self) -> String {
        let mut s = format!("scheduler:\n{}", self.scheduler.log_text());
        for (i, e) in self.executors.iter().enumerate() {
            s += &format!("\nexecutor {i}:\n{}", e.log_text());
        }
        s
    }
}

fn ok(o: &Output, what: &str, cluster: &Cluster) -> String {
    assert!(
        o.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        cluster.logs()
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// `icefloe cat DIR --snapshot ID --format jsonl [--lineage]`.
fn cat(f: &FixtureSnapshot, lineage: bool) -> Vec<Value> {
    let dir = f.table_dir.to_str().unwrap();
    let id = f.snapshot_id.to_string();
    let mut args = vec!["cat", dir, "--snapshot", &id, "--format", "jsonl"];
    if lineage {
        args.push("--lineage");
    }
    json_lines(&stdout(&icefloe(&args)))
}

/// Every fixture snapshot, `SELECT *` with and without lineage, equals `icefloe cat` (one
/// `icefloe sql` run per table, one statement per snapshot, their results cut apart by
/// cat's row counts); then a shuffled GROUP BY, a join of snapshots against `icefloe
/// changes`, time travel, and the change feed refused on a cluster.
#[test]
fn cluster_reads_as_cat() {
    let cluster = Cluster::start(&[], &[]);
    let snaps = all_snapshots();
    let mut by_table: BTreeMap<String, Vec<&FixtureSnapshot>> = BTreeMap::new();
    for f in &snaps {
        by_table.entry(f.table.clone()).or_default().push(f);
    }
    let mut failures = Vec::new();
    let mut compared = 0;
    for lineage in [false, true] {
        for (name, fs) in &by_table {
            let arg = format!("t={}", fs[0].table_dir.to_str().unwrap());
            let query: String = fs
                .iter()
                .map(|f| format!("SELECT * FROM icefloe_snapshot('t', {});\n", f.snapshot_id))
                .collect();
            let mut args = vec!["--table", &arg, "--format", "jsonl"];
            if lineage {
                args.push("--lineage");
            }
            args.push(&query);
            let got = json_lines(&ok(&cluster.sql(&args), name, &cluster));
            let mut at = 0;
            for f in fs {
                let want = cat(f, lineage);
                let end = (at + want.len()).min(got.len());
                if sorted(&got[at..end]) != sorted(&want) {
                    failures.push(format!(
                        "{name}@{} lineage={lineage}: differs from cat ({} rows)",
                        f.snapshot_id,
                        want.len()
                    ));
                }
                at = end;
                compared += 1;
            }
            if at != got.len() {
                failures.push(format!(
                    "{name} lineage={lineage}: {} rows too many",
                    got.len() - at
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(compared, 2 * snaps.len());
    assert!(snaps.len() >= 78);

    group_by_is_shuffled(&cluster);
    join_equals_changes(&cluster);
    time_travel(&cluster);
    change_feed_is_refused(&cluster);
}

/// A GROUP BY planned in more than one stage (a hash repartition between the partial and
/// final aggregates), its values those of cat's rows aggregated.
fn group_by_is_shuffled(cluster: &Cluster) {
    let f = all_snapshots()
        .into_iter()
        .rfind(|f| f.table == "v3_basic")
        .unwrap();
    let arg = format!("t={}", f.table_dir.to_str().unwrap());
    let query = format!(
        "SELECT category AS g, count(*) AS n, sum(id) AS total FROM icefloe_snapshot('t', {}) GROUP BY category",
        f.snapshot_id
    );
    let explain = ok(
        &cluster.sql(&[
            "--table",
            &arg,
            "--format",
            "csv",
            &format!("EXPLAIN {query}"),
        ]),
        "explain",
        cluster,
    );
    assert!(
        explain.contains("RepartitionExec") || explain.contains("ShuffleWriterExec"),
        "no shuffle in the plan:\n{explain}"
    );
    let got = json_lines(&ok(
        &cluster.sql(&["--table", &arg, "--format", "jsonl", &query]),
        "group by",
        cluster,
    ));
    let mut want: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for r in cat(&f, false) {
        let e = want.entry(r["category"].to_string()).or_default();
        e.0 += 1;
        e.1 += r["id"].as_i64().unwrap_or(0);
    }
    let got: BTreeMap<String, (i64, i64)> = got
        .iter()
        .map(|r| {
            (
                r["g"].to_string(),
                (r["n"].as_i64().unwrap(), r["total"].as_i64().unwrap_or(0)),
            )
        })
        .collect();
    assert!(!want.is_empty());
    assert_eq!(got, want);
}

/// Two snapshots joined on `_row_id` give `icefloe changes` for the commit between them.
fn join_equals_changes(cluster: &Cluster) {
    let mut compared = 0;
    for name in ["v3_lineage", "v3_basic"] {
        let fs: Vec<FixtureSnapshot> = all_snapshots()
            .into_iter()
            .filter(|f| f.table == name)
            .collect();
        let dir = fs[0].table_dir.to_str().unwrap().to_string();
        let arg = format!("t={dir}");
        for w in fs.windows(2) {
            let (p, c) = (w[0].snapshot_id, w[1].snapshot_id);
            let want_out = icefloe(&[
                "changes",
                &dir,
                "--from",
                &p.to_string(),
                "--to",
                &c.to_string(),
                "--format",
                "jsonl",
            ]);
            if !want_out.status.success() {
                continue; // Another schema, or rows without lineage: not this comparison.
            }
            let want: Vec<Value> = without_commit_columns(json_lines(&stdout(&want_out)));
            let sql = format!(
                "WITH a AS (SELECT * FROM icefloe_snapshot('t', {p})), \
                      b AS (SELECT * FROM icefloe_snapshot('t', {c})) \
                 SELECT 'delete' AS _change_type, a.* FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b._row_id = a._row_id) \
                 UNION ALL SELECT 'insert', b.* FROM b WHERE NOT EXISTS (SELECT 1 FROM a WHERE a._row_id = b._row_id) \
                 UNION ALL SELECT 'update_before', a.* FROM a JOIN b ON a._row_id = b._row_id \
                   WHERE a._last_updated_sequence_number <> b._last_updated_sequence_number \
                 UNION ALL SELECT 'update_after', b.* FROM a JOIN b ON a._row_id = b._row_id \
                   WHERE a._last_updated_sequence_number <> b._last_updated_sequence_number"
            );
            let o = cluster.sql(&["--table", &arg, "--lineage", "--format", "jsonl", &sql]);
            let got = json_lines(&ok(&o, "join", cluster));
            if want.iter().any(|r| r["_row_id"].is_null()) {
                continue;
            }
            assert_eq!(sorted(&got), sorted(&want), "{name} {p} -> {c}");
            compared += 1;
        }
    }
    assert!(compared >= 3, "only {compared} commits compared");
}

/// `icefloe_as_of` and `icefloe_ref` equal `icefloe cat --as-of` and `--ref`.
fn time_travel(cluster: &Cluster) {
    let fs: Vec<FixtureSnapshot> = all_snapshots()
        .into_iter()
        .filter(|f| f.table == "v3_basic")
        .collect();
    let dir = fs[0].table_dir.to_str().unwrap().to_string();
    let arg = format!("t={dir}");
    let snapshots = icefloe_testkit::run::json(&["snapshots", &dir, "--format", "json"]);
    let mut checked = 0;
    for s in snapshots["snapshots"].as_array().unwrap() {
        let ms = s["timestamp_ms"].as_i64().unwrap();
        let want = json_lines(&stdout(&icefloe(&[
            "cat",
            &dir,
            "--as-of",
            &ms.to_string(),
            "--format",
            "jsonl",
        ])));
        let got = json_lines(&ok(
            &cluster.sql(&[
                "--table",
                &arg,
                "--format",
                "jsonl",
                &format!("SELECT * FROM icefloe_as_of('t', {ms})"),
            ]),
            "as of",
            cluster,
        ));
        assert_eq!(sorted(&got), sorted(&want), "as of {ms}");
        checked += 1;
    }
    for r in snapshots["refs"].as_object().unwrap().keys() {
        let want = json_lines(&stdout(&icefloe(&[
            "cat", &dir, "--ref", r, "--format", "jsonl",
        ])));
        let got = json_lines(&ok(
            &cluster.sql(&[
                "--table",
                &arg,
                "--format",
                "jsonl",
                &format!("SELECT * FROM icefloe_ref('t', '{r}')"),
            ]),
            "ref",
            cluster,
        ));
        assert_eq!(sorted(&got), sorted(&want), "ref {r}");
        checked += 1;
    }
    assert!(checked >= 2, "{snapshots}");
}

/// The change feed is computed in the client: on a cluster it is an error on one line.
fn change_feed_is_refused(cluster: &Cluster) {
    let f = all_snapshots()
        .into_iter()
        .find(|f| f.table == "v3_lineage")
        .unwrap();
    let arg = format!("t={}", f.table_dir.to_str().unwrap());
    let o = cluster.sql(&[
        "--table",
        &arg,
        "SELECT count(*) FROM icefloe_changes('t', NULL)",
    ]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(e.contains("cannot run on a cluster"), "{e}");
}

/// When the executor is killed after the query started (it runs for seconds: 100 reads of
/// the table, shuffled).
const KILL_AFTER_MS: u64 = 500;

/// An executor killed while a query runs: the query is retried (its rows exactly cat's) or
/// fails with an error; never rows missing or extra.
#[test]
fn executor_killed_mid_query() {
    let mut cluster = Cluster::start(&[], &[]);
    let f = all_snapshots()
        .into_iter()
        .rfind(|f| f.table == "v3_basic")
        .unwrap();
    let arg = format!("t={}", f.table_dir.to_str().unwrap());
    let want = cat(&f, true);
    // Many tasks: the snapshot read many times over, each copy's rows counted and their
    // row ids summed after a shuffle.
    let copies = 100;
    let union: Vec<String> = (0..copies)
        .map(|i| {
            format!(
                "SELECT {i} AS copy, _row_id FROM icefloe_snapshot('t', {})",
                f.snapshot_id
            )
        })
        .collect();
    let query = format!(
        "SELECT copy, count(*) AS n, sum(_row_id) AS s FROM ({}) GROUP BY copy",
        union.join(" UNION ALL ")
    );
    let child = Command::new(bin())
        .envs(debug_env())
        .args([
            "sql",
            "--cluster",
            &cluster.address,
            "--table",
            &arg,
            "--lineage",
            "--format",
            "jsonl",
            &query,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = child;
    std::thread::sleep(Duration::from_millis(KILL_AFTER_MS));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the query ended before the executor was killed: make it longer"
    );
    cluster.executors[0].kill();
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        let got = json_lines(&String::from_utf8(out.stdout).unwrap());
        let n = want.len() as i64;
        let s: i64 = want
            .iter()
            .map(|r| r["_row_id"].as_i64().unwrap_or(0))
            .sum();
        let mut got: Vec<(i64, i64, i64)> = got
            .iter()
            .map(|r| {
                (
                    r["copy"].as_i64().unwrap(),
                    r["n"].as_i64().unwrap(),
                    r["s"].as_i64().unwrap_or(0),
                )
            })
            .collect();
        got.sort();
        let expect: Vec<(i64, i64, i64)> = (0..copies).map(|i| (i, n, s)).collect();
        assert_eq!(got, expect, "the retried query's rows");
        eprintln!("the query was retried without the killed executor");
    } else {
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
        assert!(e.starts_with("icefloe: "), "{e}");
        eprintln!("the query failed: {e}");
    }
    // The cluster still answers with the executor left.
    let got = json_lines(&ok(
        &cluster.sql(&[
            "--table",
            &arg,
            "--lineage",
            "--format",
            "jsonl",
            &format!("SELECT * FROM icefloe_snapshot('t', {})", f.snapshot_id),
        ]),
        "after the kill",
        &cluster,
    ));
    assert_eq!(sorted(&got), sorted(&want));
}

/// No credential in the plans: a table on moto's S3, read by a client, scheduler and
/// executors each with their own secret; the client's secret is in neither the logical nor the
/// physical plan its codecs encode, and the cluster reads the table with its own.
#[test]
fn plans_carry_no_credential() {
    use datafusion_proto::bytes::{
        logical_plan_to_bytes_with_extension_codec, physical_plan_from_bytes_with_extension_codec,
        physical_plan_to_bytes_with_extension_codec,
    };
    use datafusion_proto::logical_plan::DefaultLogicalExtensionCodec;
    use datafusion_proto::physical_plan::DefaultPhysicalExtensionCodec;
    use icefloe_core::io::{Ambient, StorageConfig};
    use icefloe_datafusion::codec::{IcefloeLogicalCodec, IcefloePhysicalCodec};
    use icefloe_datafusion::{ExtraColumns, IcefloeSession, IcefloeTable, TableOpener};

    let s3 = servers::moto();
    let base = servers::s3_options(&s3);
    servers::create_s3_bucket(&s3, "lake");
    servers::upload_warehouse("s3://lake/", "warehouse", &base);
    let with_secret = |secret: &str| -> Vec<(String, String)> {
        base.iter()
            .map(|(k, v)| match k.as_str() {
                "aws_secret_access_key" => (k.clone(), secret.to_string()),
                "aws_access_key_id" => (k.clone(), format!("id-{secret}")),
                _ => (k.clone(), v.clone()),
            })
            .collect()
    };
    let client_secret = "client-Secret-6f1d2c";
    let location = "s3://lake/warehouse/db/v3_basic";

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = StorageConfig::new(with_secret(client_secret), Ambient::Refuse);
        let table = icefloe_core::Table::open_with_options(
            location,
            icefloe_core::cache::Caches::global(),
            &icefloe_core::OpenOptions::from(client.clone()),
        )
        .await
        .unwrap();
        let session = IcefloeSession::new(ExtraColumns {
            lineage: true,
            metadata: false,
        });
        session.register_table("t", table.clone()).unwrap();
        let df = session.sql("SELECT * FROM t WHERE id > 0").await.unwrap();
        let client_opener = Arc::new(TableOpener::new(client));
        let logical = IcefloeLogicalCodec::new(
            Arc::new(DefaultLogicalExtensionCodec {}),
            client_opener.clone(),
        );
        let plan = df.logical_plan().clone();
        let bytes = logical_plan_to_bytes_with_extension_codec(&plan, &logical).unwrap();
        let physical =
            IcefloePhysicalCodec::new(Arc::new(DefaultPhysicalExtensionCodec {}), client_opener);
        let exec = df.clone().create_physical_plan().await.unwrap();
        let exec_bytes = physical_plan_to_bytes_with_extension_codec(exec, &physical).unwrap();
        for (what, b) in [("logical", &bytes), ("physical", &exec_bytes)] {
            assert!(
                !contains(b, client_secret.as_bytes()),
                "the client's secret is in the {what} plan"
            );
            assert!(
                !contains(b, format!("id-{client_secret}").as_bytes()),
                "the client's key id is in the {what} plan"
            );
        }
        // The endpoint (no credential) does travel with the table.
        assert!(
            contains(&bytes, s3.url().as_bytes()),
            "the plan names no endpoint"
        );
        // Decoded elsewhere, with another credential, the scan reads the same rows.
        let executor = Arc::new(TableOpener::new(StorageConfig::new(
            with_secret("executor-secret"),
            Ambient::Refuse,
        )));
        let decoder =
            IcefloePhysicalCodec::new(Arc::new(DefaultPhysicalExtensionCodec {}), executor);
        let ctx = datafusion::prelude::SessionContext::new();
        let decoded =
            physical_plan_from_bytes_with_extension_codec(&exec_bytes, &ctx.task_ctx(), &decoder)
                .unwrap();
        let got = datafusion::physical_plan::collect(decoded, ctx.task_ctx())
            .await
            .unwrap();
        let want = df.collect().await.unwrap();
        let n =
            |b: &[arrow::record_batch::RecordBatch]| b.iter().map(|b| b.num_rows()).sum::<usize>();
        assert_eq!(n(&got), n(&want));
        assert!(n(&want) > 0);
        // A process that sets no endpoint of its own takes the plan's only under a prefix it
        // allows (--allowed-endpoint); otherwise the read fails naming the option, never
        // sending its requests (and credentials) where the plan says.
        let no_endpoint: Vec<(String, String)> = with_secret("executor-secret")
            .into_iter()
            .filter(|(k, _)| !icefloe_core::io::destination::is_destination_key(k))
            .collect();
        for allowed in [
            vec![],
            vec!["http://127.0.0.1:1/".to_string()],
            vec![s3.url()],
        ] {
            let opener = Arc::new(
                TableOpener::new(StorageConfig::new(no_endpoint.clone(), Ambient::Refuse))
                    .with_allowed_endpoints(allowed.clone()),
            );
            // The client's logical plan (it names the endpoint), as the scheduler decodes it.
            let decoder =
                IcefloeLogicalCodec::new(Arc::new(DefaultLogicalExtensionCodec {}), opener);
            let read = async {
                let plan = datafusion_proto::bytes::logical_plan_from_bytes_with_extension_codec(
                    &bytes,
                    &ctx.task_ctx(),
                    &decoder,
                )?;
                ctx.execute_logical_plan(plan).await?.collect().await
            }
            .await;
            if allowed.contains(&s3.url()) {
                assert_eq!(n(&read.expect("an allowed endpoint")), n(&want));
            } else {
                let e = read.expect_err("an endpoint not allowed").to_string();
                assert!(
                    e.contains("aws_endpoint") && e.contains("refused") && e.contains(&s3.url()),
                    "{allowed:?}: {e}"
                );
            }
        }
        let _ = IcefloeTable::new(table);
    });

    // The cluster: scheduler and executors with their own credentials, the client with its.
    let opt = |v: &[(String, String)]| -> Vec<String> {
        v.iter()
            .flat_map(|(k, v)| ["--storage-option".to_string(), format!("{k}={v}")])
            .collect()
    };
    let cluster = Cluster::start(
        &opt(&with_secret("scheduler-secret")),
        &opt(&with_secret("executor-secret")),
    );
    let arg = format!("t={location}");
    let mut args: Vec<String> = opt(&with_secret(client_secret));
    args.extend([
        "--table".into(),
        arg,
        "--lineage".into(),
        "--format".into(),
        "jsonl".into(),
        "SELECT * FROM t".into(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let got = json_lines(&ok(&cluster.sql(&args), "S3 on the cluster", &cluster));
    let mut cat_args: Vec<String> = ["cat", location, "--lineage", "--format", "jsonl"]
        .map(String::from)
        .to_vec();
    cat_args.extend(opt(&with_secret(client_secret)));
    let cat_args: Vec<&str> = cat_args.iter().map(String::as_str).collect();
    let want = json_lines(&stdout(&icefloe(&cat_args)));
    assert!(!want.is_empty());
    assert_eq!(sorted(&got), sorted(&want));
    assert!(
        !cluster.logs().contains(client_secret),
        "a process logged the client's secret"
    );
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
