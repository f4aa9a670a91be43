//! `icefloe --catalog` against a real Iceberg REST catalog: Apache Iceberg Java's own
//! handlers over a copy of the fixture warehouse, started by `scripts/rest-catalog start`
//! (scripts/test does), which writes the servers' addresses to a file named by
//! `ICEFLOE_REST_ENV`. Configuration is given as users give PyIceberg theirs: a
//! `.pyiceberg.yaml` or `PYICEBERG_CATALOG__<NAME>__<KEY>` variables.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};

use icefloe_testkit::{all_snapshots, diff_rows, fixtures_dir};
use serde_json::Value;

/// The servers' settings, or `None` (with the reason printed) when no server was started.
fn servers() -> Option<HashMap<String, String>> {
    icefloe_testkit::servers::rest_catalog_env()
}

/// A user: a home directory holding `.pyiceberg.yaml` (when given), and environment variables.
struct User {
    home: tempfile::TempDir,
    env: Vec<(String, String)>,
}

impl User {
    fn with_yaml(yaml: &str) -> User {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(".pyiceberg.yaml"), yaml).unwrap();
        User {
            home,
            env: Vec::new(),
        }
    }

    fn with_env(env: &[(&str, &str)]) -> User {
        User {
            home: tempfile::tempdir().unwrap(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    /// Runs icefloe with only this user's environment (no AWS_* or PYICEBERG_* of the
    /// machine), in the home directory.
    fn icefloe(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_icefloe"))
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(self.home.path())
            .output()
            .expect("run icefloe")
    }

    fn ok(&self, args: &[&str]) -> String {
        let o = self.icefloe(args);
        assert!(
            o.status.success(),
            "icefloe {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }

    /// The one line icefloe prints when `args` fail.
    fn error(&self, args: &[&str]) -> String {
        let o = self.icefloe(args);
        assert!(!o.status.success(), "icefloe {args:?} succeeded");
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
        err.trim_end().to_string()
    }
}

fn yaml(name: &str, props: &[(&str, &str)]) -> String {
    let mut y = format!("catalog:\n  {name}:\n");
    for (k, v) in props {
        y.push_str(&format!("    {k}: \"{v}\"\n"));
    }
    y
}

/// Every fixture snapshot through `icefloe --catalog NAME cat db.<table>`, as the expected rows.
fn every_snapshot_matches(user: &User, name: &str) {
    let mut failures = Vec::new();
    let snaps = all_snapshots();
    for s in &snaps {
        let id = s.snapshot_id.to_string();
        let table = format!("db.{}", s.table);
        let o = user.icefloe(&[
            "--catalog",
            name,
            "cat",
            &table,
            "--snapshot",
            &id,
            "--format",
            "jsonl",
            "--lineage",
        ]);
        if !o.status.success() {
            failures.push(format!(
                "{table}@{id}: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ));
            continue;
        }
        let got: Vec<Value> = String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if let Some(d) = diff_rows(&got, &s.expected_rows()) {
            failures.push(format!("{table}@{id}: {d}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} snapshots differ:\n{}",
        failures.len(),
        snaps.len(),
        failures.join("\n")
    );
}

#[test]
fn every_snapshot_with_a_bearer_token() {
    let Some(s) = servers() else { return };
    let user = User::with_yaml(&yaml(
        "fixtures",
        &[
            ("uri", &s["ICEFLOE_REST_URI"]),
            ("warehouse", &s["ICEFLOE_REST_WAREHOUSE"]),
            ("token", &s["ICEFLOE_REST_TOKEN"]),
        ],
    ));
    every_snapshot_matches(&user, "fixtures");
}

#[test]
fn every_snapshot_with_oauth2_client_credentials() {
    let Some(s) = servers() else { return };
    let credential = format!(
        "{}:{}",
        s["ICEFLOE_REST_CLIENT_ID"], s["ICEFLOE_REST_CLIENT_SECRET"]
    );
    let user = User::with_yaml(&yaml(
        "Prod",
        &[
            ("uri", &s["ICEFLOE_REST_URI"]),
            ("warehouse", &s["ICEFLOE_REST_WAREHOUSE"]),
            ("credential", &credential),
            ("scope", "catalog"),
        ],
    ));
    every_snapshot_matches(&user, "prod");
}

/// The expiring catalog's tokens answer 419 after one request: every `cat` (config, then
/// loadTable) needs its token refreshed between its two requests, and a listing many times.
#[test]
fn every_snapshot_with_tokens_that_expire_between_requests() {
    let Some(s) = servers() else { return };
    let credential = format!(
        "{}:{}",
        s["ICEFLOE_REST_CLIENT_ID"], s["ICEFLOE_REST_CLIENT_SECRET"]
    );
    let uri = &s["ICEFLOE_REST_EXPIRING_URI"];
    // The token from an external OAuth2 server (oauth2-server-uri), here the same process.
    let token_uri = format!("{uri}/oauth2/token");
    let user = User::with_env(&[
        ("PYICEBERG_CATALOG__EXPIRING__URI", uri),
        ("PYICEBERG_CATALOG__EXPIRING__CREDENTIAL", &credential),
        ("PYICEBERG_CATALOG__EXPIRING__OAUTH2_SERVER_URI", &token_uri),
    ]);
    every_snapshot_matches(&user, "expiring");
    let listed = user.ok(&["--catalog", "expiring", "tables"]);
    assert_eq!(listed, expected_listing(), "listing with expiring tokens");
    // Without a way to renew (a static token), an expired token is an error, not a retry loop.
    let wrong = User::with_env(&[
        ("PYICEBERG_CATALOG__EXPIRING__URI", uri),
        ("PYICEBERG_CATALOG__EXPIRING__TOKEN", "stale"),
    ]);
    let e = wrong.error(&["--catalog", "expiring", "cat", "db.v3_basic"]);
    assert!(
        e.contains("catalog expiring") && e.contains("not authorized") && e.contains("401"),
        "{e}"
    );
}

/// Every table of the fixture warehouse copy the server serves, as `namespace.table` lines.
fn expected_listing() -> String {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir().join("warehouse/db"))
        .unwrap()
        .map(|e| format!("db.{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    names.push("nested.deep.v3_basic".into());
    names.sort();
    names.iter().map(|n| format!("{n}\n")).collect()
}

#[test]
fn listing_follows_pages_and_nested_namespaces() {
    let Some(s) = servers() else { return };
    let user = User::with_yaml(&yaml(
        "paged",
        &[
            ("uri", &s["ICEFLOE_REST_URI"]),
            ("warehouse", &s["ICEFLOE_REST_WAREHOUSE"]),
            ("token", &s["ICEFLOE_REST_TOKEN"]),
            ("rest-page-size", "2"),
        ],
    ));
    assert_eq!(
        user.ok(&["--catalog", "paged", "tables"]),
        expected_listing()
    );
    assert_eq!(
        user.ok(&["--catalog", "paged", "tables", "nested"]),
        "nested.deep.v3_basic\n"
    );
    assert_eq!(
        user.ok(&["--catalog", "paged", "tables", "nested.deep"]),
        "nested.deep.v3_basic\n"
    );
    // The nested table reads as its source does (the current snapshot of v3_basic).
    let current: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures_dir().join("expected/v3_basic/manifest.json")).unwrap(),
    )
    .unwrap();
    let snap = all_snapshots()
        .into_iter()
        .find(|x| {
            x.table == "v3_basic"
                && x.snapshot_id == current["current_snapshot_id"].as_i64().unwrap()
        })
        .expect("v3_basic's current snapshot");
    let out = user.ok(&[
        "--catalog",
        "paged",
        "cat",
        "nested.deep.v3_basic",
        "--format",
        "jsonl",
        "--lineage",
    ]);
    let got: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(diff_rows(&got, &snap.expected_rows()), None);
    // Other subcommands go through the catalog too.
    let snaps = user.ok(&[
        "--catalog",
        "paged",
        "snapshots",
        "db.v3_basic",
        "--format",
        "csv",
    ]);
    assert!(snaps.lines().count() > 2, "{snaps}");
    let e = user.error(&["--catalog", "paged", "tables", "nowhere"]);
    assert!(e.contains("catalog paged has no namespace nowhere"), "{e}");
}

#[test]
fn catalog_errors_are_one_line_naming_catalog_and_table() {
    let Some(s) = servers() else { return };
    let base = [
        ("uri", s["ICEFLOE_REST_URI"].as_str()),
        ("warehouse", s["ICEFLOE_REST_WAREHOUSE"].as_str()),
    ];
    let with = |extra: &[(&str, &str)]| {
        let mut p = base.to_vec();
        p.extend_from_slice(extra);
        User::with_yaml(&yaml("cat1", &p))
    };
    let ok = with(&[("token", &s["ICEFLOE_REST_TOKEN"])]);
    let e = ok.error(&["--catalog", "cat1", "cat", "db.nope"]);
    assert!(
        e.contains("catalog cat1 has no table db.nope") && e.contains("404"),
        "{e}"
    );
    let e = ok.error(&["--catalog", "cat1", "cat", "db.denied"]);
    assert!(
        e.contains("catalog cat1: table db.denied: not authorized: HTTP 403 ForbiddenException"),
        "{e}"
    );
    let e = ok.error(&["--catalog", "cat1", "cat", "db.broken"]);
    assert!(
        e.contains("catalog cat1: table db.broken: HTTP 503 ServiceFailureException"),
        "{e}"
    );
    let e = with(&[("token", "wrong")]).error(&["--catalog", "cat1", "cat", "db.v3_basic"]);
    assert!(
        e.contains("catalog cat1") && e.contains("401") && e.contains("not authorized"),
        "{e}"
    );
    let e = with(&[("credential", "icefloe-test:wrong-secret")]).error(&[
        "--catalog",
        "cat1",
        "cat",
        "db.v3_basic",
    ]);
    assert!(
        e.contains("catalog cat1: authenticating requests") && e.contains("invalid_client"),
        "{e}"
    );
    let cred = format!(
        "{}:{}",
        s["ICEFLOE_REST_CLIENT_ID"], s["ICEFLOE_REST_CLIENT_SECRET"]
    );
    let e = with(&[("credential", &cred), ("scope", "other")]).error(&[
        "--catalog",
        "cat1",
        "cat",
        "db.v3_basic",
    ]);
    assert!(e.contains("invalid_scope"), "{e}");
    let e = User::with_yaml(&yaml(
        "cat1",
        &[
            ("uri", &s["ICEFLOE_REST_URI"]),
            ("warehouse", "elsewhere"),
            ("token", &s["ICEFLOE_REST_TOKEN"]),
        ],
    ))
    .error(&["--catalog", "cat1", "tables"]);
    assert!(
        e.contains("catalog cat1: configuration") && e.contains("NoSuchWarehouseException"),
        "{e}"
    );
    let e = ok.error(&["--catalog", "nonesuch", "cat", "db.v3_basic"]);
    assert!(e.contains("no catalog named \"nonesuch\""), "{e}");
    let e = ok.error(&["--catalog", "cat1", "cat", "v3_basic"]);
    assert!(e.contains("not of the form namespace.table"), "{e}");
    let down = User::with_yaml(&yaml(
        "down",
        &[("uri", "http://127.0.0.1:9"), ("token", "t")],
    ));
    let e = down.error(&["--catalog", "down", "cat", "db.v3_basic"]);
    assert!(
        e.contains("catalog down") && e.contains("Connection refused"),
        "{e}"
    );
}

#[test]
fn sigv4_signatures_are_checked_by_botocore() {
    let Some(s) = servers() else { return };
    let sigv4 = |secret: &str| {
        let mut u = User::with_yaml(&yaml(
            "glue",
            &[
                ("uri", &s["ICEFLOE_REST_SIGV4_URI"]),
                ("warehouse", &s["ICEFLOE_REST_WAREHOUSE"]),
                ("rest.sigv4-enabled", "true"),
                ("rest.signing-name", "glue"),
                ("rest.signing-region", "us-east-1"),
            ],
        ));
        // The key pair comes from the environment, as boto3 would find it.
        u.env = vec![
            (
                "AWS_ACCESS_KEY_ID".into(),
                s["ICEFLOE_REST_SIGV4_ACCESS_KEY_ID"].clone(),
            ),
            ("AWS_SECRET_ACCESS_KEY".into(), secret.to_string()),
        ];
        u
    };
    let good = sigv4(&s["ICEFLOE_REST_SIGV4_SECRET_ACCESS_KEY"]);
    assert_eq!(
        good.ok(&["--catalog", "glue", "tables"]),
        expected_listing()
    );
    let snap = all_snapshots()
        .into_iter()
        .find(|x| x.table == "v3_dv_large")
        .unwrap();
    let id = snap.snapshot_id.to_string();
    let out = good.ok(&[
        "--catalog",
        "glue",
        "cat",
        "db.v3_dv_large",
        "--snapshot",
        &id,
        "--format",
        "jsonl",
        "--lineage",
    ]);
    let got: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(diff_rows(&got, &snap.expected_rows()), None);
    // Nested namespaces put 0x1F (%1F) in the signed path and in the query.
    assert_eq!(
        good.ok(&["--catalog", "glue", "tables", "nested.deep"]),
        "nested.deep.v3_basic\n"
    );
    let e = sigv4("not-the-secret").error(&["--catalog", "glue", "tables"]);
    assert!(
        e.contains("catalog glue") && e.contains("403") && e.contains("SignatureDoesNotMatch"),
        "{e}"
    );
    let mut unsigned = sigv4("x");
    unsigned.env.clear();
    let e = unsigned.error(&["--catalog", "glue", "tables"]);
    assert!(
        e.contains("rest.sigv4-enabled needs an AWS key pair"),
        "{e}"
    );
}

#[test]
fn the_server_serves_a_copy_of_the_fixtures() {
    let Some(s) = servers() else { return };
    let dir = Path::new(&s["ICEFLOE_REST_WAREHOUSE_DIR"]);
    assert!(
        dir.join("db/v3_basic/metadata/version-hint.text").is_file(),
        "{}",
        dir.display()
    );
    assert_ne!(
        dir.canonicalize().unwrap(),
        fixtures_dir().join("warehouse").canonicalize().unwrap()
    );
}

/// A catalog of its own over the warehouse uploaded to S3 (moto) behind the fault proxy with
/// 400 ms of latency per request, vending S3 credentials that expire 1 s after each
/// `loadTable` (the proxy then refuses them as S3 does) and OAuth2 tokens good for one request
/// each: a scan outlasts its first credentials and must fetch new ones (renewing its token on
/// the way), and read the expected rows.
#[test]
fn vended_credentials_and_tokens_that_expire_mid_scan_are_fetched_again() {
    use icefloe_testkit::servers;
    let Some(s) = servers() else { return };
    let wh = &s["ICEFLOE_REST_WAREHOUSE_DIR"];
    let s3 = servers::moto();
    servers::create_s3_bucket(&s3, "lake");
    servers::upload_dir(
        Path::new(wh),
        "s3://lake/",
        "warehouse",
        &servers::s3_options(&s3),
    );
    let proxy = servers::fault_proxy(&s3, &["--expiring-keys", "--latency-ms", "400"]);
    let (id, secret) = (
        &s["ICEFLOE_REST_CLIENT_ID"],
        &s["ICEFLOE_REST_CLIENT_SECRET"],
    );
    let endpoint = format!("s3.endpoint={}", proxy.url());
    let base = format!("{wh}=s3://lake/warehouse");
    let catalog = servers::rest_catalog(
        &s["ICEFLOE_REST_JAVA_CP"],
        &[
            "--warehouse",
            wh,
            "--client-id",
            id,
            "--client-secret",
            secret,
            "--token-uses",
            "1",
            "--vend-ttl-ms",
            "1000",
            "--vend-prefix",
            "s3://lake/warehouse",
            "--vend",
            "s3.secret-access-key=vended-secret",
            "--vend",
            &endpoint,
            "--vend",
            "s3.region=us-east-1",
            "--metadata-base",
            &base,
        ],
    );
    let user = User::with_yaml(&yaml(
        "expiring",
        &[
            ("uri", &catalog.url()),
            ("credential", &format!("{id}:{secret}")),
        ],
    ));
    let snap = all_snapshots()
        .into_iter()
        .rev()
        .find(|x| x.table == "v3_dv_large")
        .expect("v3_dv_large");
    let id = snap.snapshot_id.to_string();
    let args = [
        "--catalog",
        "expiring",
        "cat",
        "db.v3_dv_large",
        "--snapshot",
        &id,
    ];
    let out = user.ok(&[&args[..], &["--format", "jsonl", "--lineage"]].concat());
    let got: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    if let Some(d) = diff_rows(&got, &snap.expected_rows()) {
        panic!("db.v3_dv_large@{id} through expiring credentials: {d}");
    }
    // The data came from S3, signed with more than one vended key: the first expired mid-scan.
    let keys = proxy.get_signers(0);
    assert!(
        keys.len() >= 2 && keys.iter().all(|k| k.starts_with("expiring-")),
        "reads signed with {keys:?}"
    );
}

/// A catalog of its own over the warehouse served by a GCS server (fake-gcs-server) behind a
/// logging proxy, vending a GCS OAuth2 token (`gcs.oauth2.token`): every read of the table's
/// files carries that token (object_store takes bearer tokens only from a credential provider),
/// and the rows are the expected ones.
#[test]
fn a_vended_gcs_token_signs_every_read() {
    use icefloe_testkit::servers;
    let Some(s) = servers() else { return };
    let wh = &s["ICEFLOE_REST_WAREHOUSE_DIR"];
    let data = tempfile::tempdir().expect("data dir");
    let bucket = data.path().join("lake/warehouse");
    std::fs::create_dir_all(&bucket).expect("bucket dir");
    servers::copy_tree(Path::new(wh), &bucket);
    let port = servers::free_port();
    let gcs = servers::fake_gcs_reached_at(data.path(), Some(port));
    let proxy = servers::fault_proxy_on(port, &gcs, &[]);
    let base = format!("{wh}=gs://lake/warehouse");
    let catalog = servers::rest_catalog(
        &s["ICEFLOE_REST_JAVA_CP"],
        &[
            "--warehouse",
            wh,
            "--token",
            "gcs-catalog-token",
            "--vend",
            "gcs.oauth2.token=vended-gcs-token",
            "--vend-prefix",
            "gs://lake/warehouse",
            "--metadata-base",
            &base,
        ],
    );
    let user = User::with_yaml(&yaml(
        "gcs",
        &[("uri", &catalog.url()), ("token", "gcs-catalog-token")],
    ));
    let snap = all_snapshots()
        .into_iter()
        .rev()
        .find(|x| x.table == "v3_dv_large")
        .expect("v3_dv_large");
    let id = snap.snapshot_id.to_string();
    let base_url = format!("google_base_url={}", proxy.url());
    let out = user.ok(&[
        "--catalog",
        "gcs",
        "cat",
        "db.v3_dv_large",
        "--snapshot",
        &id,
        "--format",
        "jsonl",
        "--lineage",
        "--storage-option",
        &base_url,
        "--storage-option",
        "google_allow_http=true",
    ]);
    let got: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    if let Some(d) = diff_rows(&got, &snap.expected_rows()) {
        panic!("db.v3_dv_large@{id} through a vended GCS token: {d}");
    }
    assert_eq!(
        proxy.get_signers(0),
        ["bearer:vended-gcs-token".to_string()].into()
    );
}
