//! Real object-store servers on 127.0.0.1 for the storage tests, each started on a free port
//! and stopped when dropped: moto (S3), Azurite (Azure Blob), fake-gcs-server (GCS).
//! `scripts/servers install` puts them in `$ICEFLOE_TOOLS/bin` (default
//! `~/.cache/icefloe-tools/bin`).

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Azurite's well-known development account and key.
pub const AZURITE_ACCOUNT: &str = "devstoreaccount1";
/// The key of [`AZURITE_ACCOUNT`].
pub const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// A server process; killed when dropped.
pub struct Server {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Server {
    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A tool installed by `scripts/servers install`.
pub fn tool(name: &str) -> PathBuf {
    let dir = std::env::var_os("ICEFLOE_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/icefloe-tools")
        });
    let p = dir.join("bin").join(name);
    assert!(
        p.exists(),
        "{} is missing: run scripts/servers install",
        p.display()
    );
    p
}

/// A port free at the time of asking.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn start(mut cmd: Command, port: u16, dir: tempfile::TempDir, name: &str) -> Server {
    let log = std::fs::File::create(dir.path().join("server.log")).expect("log file");
    let child = cmd
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
    let mut server = Server {
        child,
        port,
        _dir: dir,
    };
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = server.child.try_wait() {
            let log =
                std::fs::read_to_string(server._dir.path().join("server.log")).unwrap_or_default();
            panic!("{name} exited ({status}) before listening:\n{log}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{name} did not listen on port {port} within 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// moto's S3 server (any access key is accepted).
pub fn moto() -> Server {
    let port = free_port();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new(tool("moto_server"));
    cmd.args(["-H", "127.0.0.1", "-p", &port.to_string()]);
    start(cmd, port, dir, "moto_server")
}

/// Azurite's Blob service, in memory, account [`AZURITE_ACCOUNT`].
pub fn azurite() -> Server {
    let port = free_port();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new(tool("azurite-blob"));
    cmd.args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string()])
        .args(["--inMemoryPersistence", "--skipApiVersionCheck", "--silent"]);
    start(cmd, port, dir, "azurite-blob")
}

/// fake-gcs-server over plain HTTP, serving copies of the directories under `data` as
/// buckets (`data/<bucket>/<object path>`).
pub fn fake_gcs(data: &Path) -> Server {
    fake_gcs_reached_at(data, None)
}

/// Like [`fake_gcs`]; its XML API answers requests addressed (`Host`) to `127.0.0.1:<public>`
/// when given: a proxy on that port ([`fault_proxy_on`]) forwards `Host` as it came.
pub fn fake_gcs_reached_at(data: &Path, public: Option<u16>) -> Server {
    let port = free_port();
    let public = public.unwrap_or(port);
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new(tool("fake-gcs-server"));
    cmd.args([
        "-scheme",
        "http",
        "-host",
        "127.0.0.1",
        "-port",
        &port.to_string(),
    ])
    .args(["-backend", "memory", "-log-level", "warn", "-data"])
    .arg(data)
    .arg("-external-url")
    .arg(format!("http://127.0.0.1:{port}"))
    // The XML API (which object_store speaks) is served on the public host only.
    .arg("-public-host")
    .arg(format!("127.0.0.1:{public}"));
    start(cmd, port, dir, "fake-gcs-server")
}

/// Sends one HTTP/1.1 request with an empty body; returns the status code. A connection the
/// server closes before answering (a server just started, on a loaded machine) is tried
/// again, a few times.
fn http_put_empty(port: u16, path: &str, headers: &[(&str, String)]) -> u16 {
    use std::io::{Read, Write};
    let mut req = format!(
        "PUT {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n"
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let mut resp = String::new();
    for attempt in 0..5 {
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.write_all(req.as_bytes()).expect("send");
        resp.clear();
        let _ = s.read_to_string(&mut resp);
        if let Some(code) = resp.split_whitespace().nth(1).and_then(|c| c.parse().ok()) {
            return code;
        }
    }
    panic!("no HTTP status in {resp:?} after 5 attempts")
}

/// Creates an S3 bucket on moto (which accepts unsigned requests).
pub fn create_s3_bucket(server: &Server, bucket: &str) {
    let status = http_put_empty(server.port, &format!("/{bucket}"), &[]);
    assert_eq!(status, 200, "create bucket {bucket}");
}

/// Creates a container on Azurite, signed with the development account's Shared Key (the
/// Blob service has no anonymous writes, and object_store cannot create containers). The
/// request is made by Python's standard library (`hmac`, `http.client`), test equipment.
pub fn create_azure_container(server: &Server, container: &str) {
    const SCRIPT: &str = r#"
import base64, hashlib, hmac, http.client, sys
from email.utils import formatdate
port, account, key, container = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
date, version = formatdate(usegmt=True), "2021-08-06"
to_sign = ("PUT" + "\n" * 12 + f"x-ms-date:{date}\nx-ms-version:{version}\n"
           f"/{account}/{account}/{container}\nrestype:container")
sig = base64.b64encode(hmac.new(base64.b64decode(key), to_sign.encode(), hashlib.sha256).digest()).decode()
c = http.client.HTTPConnection("127.0.0.1", int(port))
c.request("PUT", f"/{account}/{container}?restype=container", headers={
    "x-ms-date": date, "x-ms-version": version, "Content-Length": "0",
    "Authorization": f"SharedKey {account}:{sig}"})
r = c.getresponse()
sys.exit(0 if r.status == 201 else f"create container: {r.status} {r.read()[:300]!r}")
"#;
    let out = Command::new("python3")
        .args([
            "-c",
            SCRIPT,
            &server.port.to_string(),
            AZURITE_ACCOUNT,
            AZURITE_KEY,
            container,
        ])
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The `--storage-option`s that reach `server` as moto's S3.
pub fn s3_options(server: &Server) -> Vec<(String, String)> {
    [
        ("aws_endpoint", server.url()),
        ("aws_allow_http", "true".into()),
        ("aws_region", "us-east-1".into()),
        ("aws_access_key_id", "testing".into()),
        ("aws_secret_access_key", "testing".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The `--storage-option`s that reach `server` as Azurite's Blob service.
pub fn azure_options(server: &Server) -> Vec<(String, String)> {
    [
        ("azure_storage_account_name", AZURITE_ACCOUNT.to_string()),
        ("azure_storage_account_key", AZURITE_KEY.to_string()),
        (
            "azure_storage_endpoint",
            format!("{}/{AZURITE_ACCOUNT}", server.url()),
        ),
        ("azure_allow_http", "true".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The `--storage-option`s that reach `server` as fake-gcs-server (no OAuth).
pub fn gcs_options(server: &Server) -> Vec<(String, String)> {
    [
        ("google_base_url", server.url()),
        ("google_skip_signature", "true".into()),
        ("google_allow_http", "true".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Copies the files under `local` into a directory tree (for fake-gcs-server's `-data`).
pub fn copy_tree(local: &Path, dest: &Path) {
    for entry in std::fs::read_dir(local).expect("read dir") {
        let entry = entry.expect("entry");
        let to = dest.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            std::fs::create_dir_all(&to).expect("mkdir");
            copy_tree(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), &to).expect("copy");
        }
    }
}

/// Every file under `local`, as (path relative to `local` with `/`, bytes).
pub fn files_under(local: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pending = vec![local.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir") {
            let entry = entry.expect("entry");
            if entry.file_type().expect("type").is_dir() {
                pending.push(entry.path());
            } else {
                let rel = entry
                    .path()
                    .strip_prefix(local)
                    .expect("under")
                    .to_path_buf();
                let rel = rel.to_str().expect("UTF-8 path").replace('\\', "/");
                out.push((rel, std::fs::read(entry.path()).expect("read")));
            }
        }
    }
    out.sort();
    out
}

/// Uploads the fixture warehouse (`tests/fixtures/warehouse`) to `<url>/<prefix>/`, keys as
/// Iceberg writes them (file names taken literally: partition directories such as
/// `cat=x+y%2Fz` are not encoded again).
pub fn upload_warehouse(url: &str, prefix: &str, opts: &[(String, String)]) {
    upload_dir(&crate::fixtures_dir().join("warehouse"), url, prefix, opts)
}

/// Uploads every file under `local` to `<url>/<prefix>/`.
pub fn upload_dir(local: &Path, url: &str, prefix: &str, opts: &[(String, String)]) {
    use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
    let url = url::Url::parse(url).expect("URL");
    let (store, base) = object_store::parse_url_opts(&url, opts.to_vec()).expect("store");
    let files = files_under(local);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let store: &dyn ObjectStore = store.as_ref();
        let puts = files.into_iter().map(|(rel, bytes)| {
            let key = [base.as_ref(), prefix, &rel]
                .iter()
                .filter(|p| !p.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join("/");
            let path = object_store::path::Path::parse(&key).expect("object key");
            async move {
                store
                    .put(&path, PutPayload::from(bytes))
                    .await
                    .unwrap_or_else(|e| panic!("upload {path}: {e}"));
            }
        });
        futures::future::join_all(puts).await;
    });
}

/// The fault-injecting proxy `tests/fault_proxy.py` in front of `upstream` (see the script for
/// `args`: `--faults`, `--fail`, `--latency-ms`, ...), logging one line per request to the file
/// [`Server::log_file`] returns.
pub fn fault_proxy(upstream: &Server, args: &[&str]) -> Server {
    fault_proxy_on(free_port(), upstream, args)
}

/// [`fault_proxy`] on loopback port `port`.
pub fn fault_proxy_on(port: u16, upstream: &Server, args: &[&str]) -> Server {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new("python3");
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("fault_proxy.py"))
        .args(["--port", &port.to_string()])
        .args(["--upstream", &format!("127.0.0.1:{}", upstream.port)])
        .arg("--log")
        .arg(dir.path().join("requests.log"))
        .args(args);
    start(cmd, port, dir, "fault_proxy.py")
}

impl Server {
    /// The request log of a [`fault_proxy`]: one `<fault> <method> <path>` line per request.
    pub fn log_file(&self) -> PathBuf {
        self._dir.path().join("requests.log")
    }

    /// The credentials (an access key id, or `bearer:<token>`) that the GETs a
    /// [`fault_proxy`] forwarded untouched were signed with, from byte `from` of its log on.
    pub fn get_signers(&self, from: usize) -> std::collections::BTreeSet<String> {
        let log = std::fs::read_to_string(self.log_file()).unwrap_or_default();
        log.get(from..)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("ok GET "))
            .filter_map(|l| l.split(' ').nth(3).map(str::to_string))
            .collect()
    }
}

/// The test REST catalog (`tests/rest-catalog`, Iceberg Java's handlers) on a free port, with
/// the compiled classes and jars `classpath` (`ICEFLOE_REST_JAVA_CP` of the file
/// `scripts/rest-catalog start` writes) and `args` (see the server's source).
pub fn rest_catalog(classpath: &str, args: &[&str]) -> Server {
    let port = free_port();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new("java");
    cmd.args(["-Xmx256m", "-cp", classpath])
        .arg("org.apache.iceberg.rest.IcefloeTestCatalogServer")
        .args(["--port", &port.to_string()])
        .arg("--port-file")
        .arg(dir.path().join("port"))
        .args(args);
    start(cmd, port, dir, "the test REST catalog")
}

/// The settings `scripts/rest-catalog start` wrote for the test REST catalogs (the file named by
/// `ICEFLOE_REST_ENV`, else `~/.cache/icefloe/rest-catalog/env`), or `None` (with the reason
/// printed) when no catalog was started and `ICEFLOE_REST_ENV` is unset.
pub fn rest_catalog_env() -> Option<std::collections::HashMap<String, String>> {
    let path = match std::env::var_os("ICEFLOE_REST_ENV") {
        Some(p) => PathBuf::from(p),
        None => {
            let p =
                PathBuf::from(std::env::var_os("HOME")?).join(".cache/icefloe/rest-catalog/env");
            if !p.is_file() {
                eprintln!(
                    "skipped: no REST catalog running (scripts/rest-catalog start, then ICEFLOE_REST_ENV={})",
                    p.display()
                );
                return None;
            }
            p
        }
    };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "ICEFLOE_REST_ENV={}: {e} (did scripts/rest-catalog start fail?)",
            path.display()
        )
    });
    Some(
        text.lines()
            .filter_map(|l| l.strip_prefix("export ")?.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}
