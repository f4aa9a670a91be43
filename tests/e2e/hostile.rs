//! Hostile metadata and endpoints through the CLI and the mount: a snapshot history that loops
//! is refused at once (never an endless walk), a storage or catalog endpoint's reply never
//! reaches the error, files read whole stop at their caps, Ctrl-C stops a command.

use icefloe_testkit::fake_http;
use icefloe_testkit::run;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use fake_http::{FakeHttp, Reply};
use icefloe_testkit::{copy_table, fixtures_dir};
use run::path_str;
use serde_json::Value;

const ICEFLOE: &str = env!("CARGO_BIN_EXE_icefloe");
/// What a fake internal service answers: credentials that must never reach a message.
const SECRET: &str =
    r#"{"Code": "Success", "AccessKeyId": "ASIASECRETKEY", "SecretAccessKey": "hush-hush"}"#;

/// Runs `icefloe args` (with `env`), killing it after 60 s: a run that has not ended by then
/// is a hang, and fails the test.
fn run_bounded(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(ICEFLOE)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run icefloe");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("icefloe {args:?} did not end within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// The one-line error of a run that must fail with status 1.
fn error_of(args: &[&str], env: &[(&str, &str)]) -> String {
    let o = run_bounded(args, env);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{args:?} should fail: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(!err.contains(".rs:") && !err.contains("backtrace"), "{err}");
    err
}

/// A copy of fixture table `name` whose current metadata file is `edit`ed; returns the copy
/// and the metadata as edited.
fn edited(name: &str, edit: impl FnOnce(&mut Value)) -> (tempfile::TempDir, Value) {
    let dir = copy_table(&fixtures_dir().join("warehouse/db").join(name));
    let meta = dir.path().join("metadata");
    let v = std::fs::read_to_string(meta.join("version-hint.text")).unwrap();
    let file = meta.join(format!("v{}.metadata.json", v.trim()));
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    edit(&mut m);
    std::fs::write(&file, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    (dir, m)
}

fn snapshot_ids(m: &Value) -> Vec<i64> {
    m["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["snapshot-id"].as_i64().unwrap())
        .collect()
}

/// Makes the snapshot at index `i` the parent of the one at index `of`.
fn set_parent(m: &mut Value, of: usize, i: usize) {
    let id = m["snapshots"][i]["snapshot-id"].clone();
    m["snapshots"][of]["parent-snapshot-id"] = id;
}

#[test]
fn a_snapshot_that_is_its_own_parent_is_refused_at_once() {
    let (dir, m) = edited("v3_lineage", |m| {
        let last = m["snapshots"].as_array().unwrap().len() - 1;
        set_parent(m, last, last);
    });
    let ids = snapshot_ids(&m);
    let current = m["current-snapshot-id"].as_i64().unwrap().to_string();
    let first = ids[0].to_string();
    let t = path_str(dir.path());
    let want = format!("snapshot {current} names itself as parent-snapshot-id");
    let ts = m["snapshots"][2]["timestamp-ms"].to_string();
    for args in [
        vec!["snapshots", t.as_str()],
        vec!["cat", t.as_str()],
        vec!["changes", t.as_str(), "--from", &first, "--to", &current],
        vec!["cat", t.as_str(), "--as-of", &ts],
    ] {
        let e = error_of(&args, &[]);
        assert!(e.contains(&want) && e.contains("metadata"), "{args:?}: {e}");
    }
    // Without a snapshot log, time travel would walk main's parents: refused all the same.
    let (dir, _) = edited("v3_lineage", |m| {
        let last = m["snapshots"].as_array().unwrap().len() - 1;
        set_parent(m, last, last);
        m["snapshot-log"] = Value::Array(vec![]);
    });
    let e = error_of(&["cat", &path_str(dir.path()), "--as-of", &ts], &[]);
    assert!(e.contains(&want), "{e}");
}

#[test]
fn a_longer_parent_loop_is_refused_naming_its_snapshots() {
    let (dir, m) = edited("v3_lineage", |m| set_parent(m, 1, 3));
    let ids = snapshot_ids(&m);
    let e = error_of(&["snapshots", &path_str(dir.path())], &[]);
    assert!(e.contains("loops back"), "{e}");
    for id in &ids[1..4] {
        assert!(e.contains(&id.to_string()), "{id} not named: {e}");
    }
    assert!(!e.contains(&ids[0].to_string()), "{e}");
}

#[test]
fn a_parent_no_longer_in_the_metadata_still_reads() {
    // The first snapshot expired: its child names a parent the metadata no longer holds.
    let (dir, m) = edited("v3_lineage", |m| {
        let gone = m["snapshots"][0]["snapshot-id"].clone();
        m["snapshots"].as_array_mut().unwrap().remove(0);
        m["snapshot-log"]
            .as_array_mut()
            .unwrap()
            .retain(|e| e["snapshot-id"] != gone);
    });
    let t = path_str(dir.path());
    let o = run_bounded(&["snapshots", &t, "--format", "json"], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let listed: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        listed["snapshots"].as_array().unwrap().len(),
        snapshot_ids(&m).len()
    );
    let o = run_bounded(&["cat", &t, "--format", "jsonl"], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = run_bounded(
        &[
            "cat",
            &path_str(&fixtures_dir().join("warehouse/db/v3_lineage")),
            "--format",
            "jsonl",
        ],
        &[],
    );
    assert_eq!(o.stdout, want.stdout);
}

/// Storage options that send every request of an `s3://` table to `endpoint`.
fn endpoint_args(endpoint: &str, extra: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for kv in [
        format!("aws_endpoint={endpoint}"),
        "aws_allow_http=true".into(),
        "aws_region=us-east-1".into(),
        "aws_access_key_id=test".into(),
        "aws_secret_access_key=test".into(),
        "max_retries=0".into(),
    ]
    .into_iter()
    .chain(extra.iter().map(|s| s.to_string()))
    {
        out.push("--storage-option".into());
        out.push(kv);
    }
    out
}

#[test]
fn storage_replies_never_reach_the_error() {
    for status in [200u16, 403, 404, 500] {
        let svc = FakeHttp::start(move |_, _| Reply::new(status, SECRET));
        for style in [&[][..], &["aws_virtual_hosted_style_request=true"][..]] {
            let mut args = vec!["snapshots".to_string(), "s3://bucket/db/t".to_string()];
            args.extend(endpoint_args(
                &format!("{}/latest/meta-data", svc.url()),
                style,
            ));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let e = error_of(&args, &[]);
            assert!(
                !e.contains("ASIASECRET") && !e.contains("hush") && !e.contains("AccessKeyId"),
                "{status}: the reply reached the error: {e}"
            );
            assert!(e.contains("s3://bucket"), "{status}: names no object: {e}");
            if status != 200 {
                assert!(
                    e.contains(&format!("HTTP {status}")) || e.contains("not found"),
                    "{status}: no status: {e}"
                );
            }
        }
        assert!(
            !svc.requests.lock().unwrap().is_empty(),
            "no request was sent"
        );
    }
}

#[test]
fn catalog_replies_never_reach_the_error() {
    for status in [200u16, 400, 403, 500] {
        let svc = FakeHttp::start(move |_, _| Reply::new(status, SECRET));
        let uri = svc.url();
        let env = [
            ("PYICEBERG_CATALOG__FAKE__URI", uri.as_str()),
            ("PYICEBERG_HOME", "/nonexistent"),
        ];
        for args in [
            vec!["tables", "--catalog", "fake"],
            vec!["snapshots", "--catalog", "fake", "db.t"],
        ] {
            // A 200 answer may happen to parse as an empty one: whatever the outcome, the
            // reply's text shows nowhere; an error answer is an error with its status.
            let o = run_bounded(&args, &env);
            let all = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            assert!(
                !all.contains("ASIASECRET")
                    && !all.contains("hush")
                    && !all.contains("AccessKeyId"),
                "{status} {args:?}: the reply reached the output: {all}"
            );
            if status != 200 {
                let e = error_of(&args, &env);
                assert!(e.contains(&format!("HTTP {status}")), "{status}: {e}");
            }
        }
    }
}

/// An Iceberg error answer (`ErrorModel`) is named by its type when that is an identifier; its
/// message shows only when `ICEFLOE_REPLY_EXCERPTS=1` asks for it.
#[test]
fn catalog_error_messages_show_only_when_asked() {
    for (kind, shown) in [
        ("NoSuchNamespaceException", true),
        ("ASIASECRET hush {AccessKeyId}", false),
    ] {
        let body = serde_json::json!({
            "error": {"message": "hush ASIASECRET", "type": kind, "code": 404}
        })
        .to_string();
        let svc = FakeHttp::start(move |_, _| Reply::new(404, body.clone()));
        let uri = svc.url();
        let mut env = vec![
            ("PYICEBERG_CATALOG__FAKE__URI", uri.as_str()),
            ("PYICEBERG_HOME", "/nonexistent"),
        ];
        let args = ["tables", "--catalog", "fake"];
        let e = error_of(&args, &env);
        assert!(e.contains("HTTP 404") && !e.contains("hush"), "{e}");
        assert_eq!(
            e.contains("HTTP 404 NoSuchNamespaceException"),
            shown,
            "{e}"
        );
        assert!(!e.contains("ASIASECRET"), "{e}");
        env.push(("ICEFLOE_REPLY_EXCERPTS", "1"));
        let e = error_of(&args, &env);
        assert!(e.contains("hush ASIASECRET"), "asked for excerpts: {e}");
    }
}

/// A table directory whose only metadata file is `name` with `bytes`.
fn table_with_metadata(name: &str, bytes: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("metadata")).unwrap();
    std::fs::write(dir.path().join("metadata").join(name), bytes).unwrap();
    dir
}

#[test]
fn an_oversized_metadata_file_stops_at_its_cap() {
    let cap = ["--storage-option", "max_metadata_bytes=1000000"];
    let spaces = vec![b' '; 20 << 20];
    let dir = table_with_metadata("v1.metadata.json", &spaces);
    let t = path_str(dir.path());
    let e = error_of(&[&["snapshots", t.as_str()][..], &cap[..]].concat(), &[]);
    assert!(
        e.contains("v1.metadata.json")
            && e.contains("1000000 bytes")
            && e.contains("max_metadata_bytes"),
        "{e}"
    );
    // A small gzip file that inflates past the cap stops there too.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&spaces).unwrap();
    let gz = gz.finish().unwrap();
    assert!(gz.len() < 1_000_000);
    let dir = table_with_metadata("v1.gz.metadata.json", &gz);
    let e = error_of(
        &[&["snapshots", &path_str(dir.path())][..], &cap[..]].concat(),
        &[],
    );
    assert!(
        e.contains("v1.gz.metadata.json") && e.contains("max_metadata_bytes"),
        "{e}"
    );
    // Without the option the default cap (1 GiB) lets the file through to the JSON parser.
    let e = error_of(&["snapshots", &t], &[]);
    assert!(e.contains("not valid JSON"), "{e}");
}

#[test]
fn a_3_gb_metadata_file_from_an_endpoint_is_refused_without_reading_it() {
    // A listing that names one metadata file, which is 3 GB of spaces.
    let svc = FakeHttp::start(|method, path| {
        if path.contains("list-type=2") {
            let xml = "<?xml version=\"1.0\"?><ListBucketResult><Name>bucket</Name><Prefix>t/metadata/</Prefix><KeyCount>1</KeyCount><IsTruncated>false</IsTruncated>\
                <Contents><Key>t/metadata/v1.metadata.json</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified><ETag>\"e\"</ETag><Size>3000000000</Size></Contents></ListBucketResult>";
            return Reply::new(200, xml);
        }
        let _ = method;
        Reply {
            status: 200,
            body: Vec::new(),
            spaces: Some(3_000_000_000),
        }
    });
    let mut args = vec!["snapshots".to_string(), "s3://bucket/t".to_string()];
    args.extend(endpoint_args(&svc.url(), &[]));
    // Under a 2 GB address-space limit: reading the file whole could not even start.
    let script = "ulimit -v 2000000; exec \"$0\" \"$@\"";
    let start = Instant::now();
    let o = Command::new("sh")
        .args(["-c", script, ICEFLOE])
        .args(&args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("v1.metadata.json") && err.contains("max_metadata_bytes"),
        "{err}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn version_hint_listing_and_footer_caps() {
    // A version hint of 2 MB (the default cap is 1 MiB).
    let dir = copy_table(&fixtures_dir().join("warehouse/db/v3_basic"));
    let hint = dir.path().join("metadata/version-hint.text");
    let mut text = std::fs::read(&hint).unwrap();
    text.extend(std::iter::repeat_n(b' ', 2 << 20));
    std::fs::write(&hint, text).unwrap();
    let t = path_str(dir.path());
    let e = error_of(&["snapshots", &t], &[]);
    assert!(
        e.contains("version-hint.text") && e.contains("max_version_hint_bytes"),
        "{e}"
    );
    // More names in metadata/ than the listing cap.
    let base = path_str(&fixtures_dir().join("warehouse/db/v3_basic"));
    let e = error_of(
        &[
            "snapshots",
            &base,
            "--storage-option",
            "max_listing_entries=3",
        ],
        &[],
    );
    assert!(
        e.contains("max_listing_entries") && e.contains("metadata"),
        "{e}"
    );
    // A Puffin footer (a deletion vector's file) and a Parquet footer past the cap: the scan
    // fails naming the file.
    let e = error_of(
        &["cat", &base, "--storage-option", "max_footer_bytes=10"],
        &[],
    );
    assert!(
        e.contains(".puffin") && e.contains("footer") && e.contains("max_footer_bytes"),
        "{e}"
    );
    let cow = path_str(&fixtures_dir().join("warehouse/db/v3_lineage_cow"));
    let e = error_of(
        &["cat", &cow, "--storage-option", "max_footer_bytes=10"],
        &[],
    );
    assert!(
        e.contains(".parquet") && e.contains("footer") && e.contains("max_footer_bytes"),
        "{e}"
    );
    // The caps are positive whole numbers.
    let e = error_of(
        &[
            "snapshots",
            &base,
            "--storage-option",
            "max_metadata_bytes=0",
        ],
        &[],
    );
    assert!(e.contains("max_metadata_bytes"), "{e}");
}

#[test]
fn ctrl_c_stops_a_command_waiting_on_an_endpoint() {
    let svc = FakeHttp::start(|_, _| {
        std::thread::sleep(Duration::from_secs(120));
        Reply::new(500, "late")
    });
    let mut args = vec!["snapshots".to_string(), "s3://bucket/t".to_string()];
    args.extend(endpoint_args(&svc.url(), &["timeout=300s"]));
    let mut child = Command::new(ICEFLOE)
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while svc.requests.lock().unwrap().is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no request was sent"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = Instant::now();
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    while child.try_wait().unwrap().is_none() {
        assert!(
            sent.elapsed() < Duration::from_secs(10),
            "Ctrl-C did not stop icefloe"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
}

#[test]
fn the_mount_refuses_a_looping_history_without_hanging() {
    let (dir, m) = edited("v3_lineage", |m| {
        let last = m["snapshots"].as_array().unwrap().len() - 1;
        set_parent(m, last, last);
    });
    let mnt = tempfile::tempdir().unwrap();
    let e = error_of(
        &["mount", &path_str(dir.path()), &path_str(mnt.path())],
        &[],
    );
    let current = m["current-snapshot-id"].to_string();
    assert!(
        e.contains(&format!("snapshot {current} names itself")),
        "{e}"
    );
    assert!(!Path::new(&mnt.path().join("x")).exists());
}
