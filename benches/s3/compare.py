#!/usr/bin/env python3
"""The measuring half of benches/s3/run.sh, which installs and builds what this needs and then
runs it (see run.sh for the options). Standard library only.

Starts an S3 server on 127.0.0.1 (s3s-fs with --s3s, else moto), uploads TABLE to
s3://bench/wh/db/<its directory name>/, starts tests/fault_proxy.py in front of it
(--latency-ms, --bandwidth-mbps), and times

  (a) icefloe cat TABLE --format csv > /dev/null                        local disk
  (b) icefloe cat s3://bench/wh/db/<name> --format csv > /dev/null      through the proxy
  (c) DuckDB: COPY (SELECT * FROM iceberg_scan('s3://...', allow_moved_paths => true))
      TO stdout (csv, header) > /dev/null                                through the proxy

each --runs times (the best counts; the proxy's counters are those of that run, read from its
GET /__stats), then once more with stdout on a pipe: the time to the first byte of stdout and
the number of lines come from that run.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

DUCKDB = r"""
import glob, os, sys
import duckdb
port, url, out = sys.argv[1], sys.argv[2], sys.argv[3]
sp = os.path.dirname(os.path.dirname(duckdb.__file__))
con = duckdb.connect()
for e in ("avro", "iceberg", "httpfs"):
    p = glob.glob(os.path.join(sp, f"duckdb_extension_{e}", "extensions", "*", f"{e}.duckdb_extension"))[0]
    con.execute(f"LOAD '{p}'")
con.execute(f'''CREATE SECRET s (TYPE s3, KEY_ID 'testing', SECRET 'testing', REGION 'us-east-1',
    ENDPOINT '127.0.0.1:{port}', URL_STYLE 'path', USE_SSL false)''')
con.execute(f'''COPY (SELECT * FROM iceberg_scan('{url}', allow_moved_paths => true))
    TO '{out}' (FORMAT csv, HEADER, USE_TMP_FILE false)''')
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, proc, name):
    for _ in range(600):
        if proc.poll() is not None:
            raise SystemExit(f"{name} exited ({proc.returncode}) before listening on port {port}")
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"{name} did not listen on port {port} within 60 s")


def upload(table, port, prefix, signed=False):
    """PUTs every file under `table` to bucket `bench` at `prefix`: unsigned (moto takes
    those), or `signed` with SigV4 by curl (s3s-fs checks signatures)."""

    def put(path, data=b""):
        if signed:
            subprocess.run(["curl", "-sSf", "-X", "PUT", "--aws-sigv4", "aws:amz:us-east-1:s3",
                            "--user", "testing:testing", "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD",
                            "--data-binary", "@-", f"http://127.0.0.1:{port}/{path}"],
                           input=data, check=True, stdout=subprocess.DEVNULL)
            return
        req = urllib.request.Request(f"http://127.0.0.1:{port}/{path}", data=data, method="PUT",
                                     headers={"Content-Type": "application/octet-stream"})
        urllib.request.urlopen(req, timeout=300).read()

    put("bench")
    files = [os.path.join(d, f) for d, _, fs in os.walk(table) for f in fs]

    def up(p):
        with open(p, "rb") as f:
            put(f"bench/{prefix}/" + os.path.relpath(p, table), f.read())

    with ThreadPoolExecutor(8) as ex:
        list(ex.map(up, files))
    return len(files), sum(os.path.getsize(p) for p in files)


def recorded_location(table):
    """The location the table's current metadata records (Hadoop catalog layout), or None."""
    meta = os.path.join(table, "metadata")
    try:
        hint = open(os.path.join(meta, "version-hint.text")).read().strip()
        with open(os.path.join(meta, f"v{hint}.metadata.json")) as f:
            return json.load(f).get("location")
    except (OSError, ValueError):
        return None


def duckdb_dv_note(table):
    """(run DuckDB?, a note or None). DuckDB's allow_moved_paths moves data files and manifests
    under the S3 location but not deletion vectors: it opens their Puffin files at the paths
    the table records."""
    puffins = [f for _, _, fs in os.walk(table) for f in fs if f.endswith(".puffin")]
    loc = recorded_location(table) or ""
    if not puffins or "://" in loc.replace("file://", "", 1):
        return True, None
    local = loc.replace("file://", "", 1)
    if os.path.exists(local):
        return True, (f"DuckDB reads deletion vectors ({len(puffins)} Puffin file(s)) at their "
                      f"recorded paths under {local}, from local disk, not through the proxy "
                      f"(allow_moved_paths does not move them)")
    return False, (f"DuckDB skipped: it opens deletion vectors at their recorded paths, and "
                   f"{local} does not exist here")


def proxy_stats(port, reset=False):
    url = f"http://127.0.0.1:{port}/__stats" + ("?reset" if reset else "")
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def run_to_devnull(cmd, env, errlog):
    """Wall-clock seconds of one run with stdout on /dev/null."""
    with open(errlog, "wb") as err:
        t = time.monotonic()
        rc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                            env=env).returncode
        took = time.monotonic() - t
    if rc != 0:
        raise SystemExit(f"{cmd[0]} failed ({rc}):\n{open(errlog, errors='replace').read()[-3000:]}")
    return took


def run_to_pipe(cmd, env, errlog):
    """(seconds to the first byte of stdout, lines of stdout) of one run with stdout on a pipe."""
    with open(errlog, "wb") as err:
        t = time.monotonic()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                             env=env)
        first, lines = None, 0
        fd = p.stdout.fileno()
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            if first is None:
                first = time.monotonic() - t
            lines += chunk.count(b"\n")
        p.stdout.close()
        rc = p.wait()
    if rc != 0:
        raise SystemExit(f"{cmd[0]} failed ({rc}):\n{open(errlog, errors='replace').read()[-3000:]}")
    return first, lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--icefloe", required=True)
    ap.add_argument("--moto", help="moto_server")
    ap.add_argument("--s3s", help="s3s-fs (serves the table instead of moto)")
    ap.add_argument("--proxy", required=True, help="tests/fault_proxy.py")
    ap.add_argument("--duckdb-python", help="a Python with duckdb and its avro, iceberg and "
                    "httpfs extension packages (no DuckDB row without it)")
    ap.add_argument("--table", required=True)
    ap.add_argument("--latency-ms", type=int, default=20)
    ap.add_argument("--bandwidth-mbps", type=float, default=80)
    ap.add_argument("--runs", type=int, default=2)
    a = ap.parse_args()
    if not (a.moto or a.s3s):
        ap.error("give --moto or --s3s")
    server_name = "s3s-fs" if a.s3s else "moto"
    table = os.path.abspath(a.table)
    name = os.path.basename(table.rstrip("/"))
    url = f"s3://bench/wh/db/{name}"
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_ENDPOINT", "AWS_ENDPOINT_URL")}
    procs = []
    with tempfile.TemporaryDirectory(prefix="icefloe-s3-bench-") as out:
        try:
            s3_port = free_port()
            if a.s3s:
                root = os.path.join(out, "s3s-root")
                os.mkdir(root)
                cmd = [a.s3s, "--host", "127.0.0.1", "--port", str(s3_port), "--access-key",
                       "testing", "--secret-key", "testing", root]
            else:
                cmd = [a.moto, "-H", "127.0.0.1", "-p", str(s3_port)]
            server = subprocess.Popen(cmd, stdout=open(os.path.join(out, "s3.log"), "wb"),
                                      stderr=subprocess.STDOUT)
            procs.append(server)
            wait_port(s3_port, server, server_name)
            n, size = upload(table, s3_port, f"wh/db/{name}", signed=bool(a.s3s))
            print(f"uploaded {n} files ({size / 1e6:.1f} MB) of {table} to {url}", file=sys.stderr)
            proxy_port = free_port()
            shaping = [f"--latency-ms={a.latency_ms}", f"--bandwidth-mbps={a.bandwidth_mbps:g}"]
            proxy = subprocess.Popen(
                [sys.executable, a.proxy, "--port", str(proxy_port), "--upstream",
                 f"127.0.0.1:{s3_port}", *shaping, "--stats", os.path.join(out, "proxy-stats.json")],
                stdout=open(os.path.join(out, "proxy.log"), "wb"), stderr=subprocess.STDOUT)
            procs.append(proxy)
            wait_port(proxy_port, proxy, "fault_proxy.py")
            s3_opts = []
            for kv in (f"aws_endpoint=http://127.0.0.1:{proxy_port}", "aws_allow_http=true",
                       "aws_region=us-east-1", "aws_access_key_id=testing",
                       "aws_secret_access_key=testing"):
                s3_opts += ["--storage-option", kv]
            # DuckDB writes its CSV through a link to its own stdout (never to a temporary file
            # beside it: USE_TMP_FILE false).
            duck_out = os.path.join(out, "duckdb-stdout.csv")
            os.symlink("/proc/self/fd/1", duck_out)
            via = "S3 via proxy"
            readers = [
                ("icefloe", "local disk", [a.icefloe, "cat", table, "--format", "csv"], False),
                ("icefloe", via, [a.icefloe, "cat", url, "--format", "csv", *s3_opts], True),
            ]
            run_duck, note = duckdb_dv_note(table) if a.duckdb_python else (False, None)
            if run_duck:
                readers.append(("duckdb 1.5.5", via,
                                [a.duckdb_python, "-c", DUCKDB, str(proxy_port), url, duck_out], True))
            results = []
            for i, (reader, source, cmd, proxied) in enumerate(readers):
                errlog = os.path.join(out, f"reader{i}.err")
                best, best_stats = None, None
                for _ in range(a.runs):
                    if proxied:
                        proxy_stats(proxy_port, reset=True)
                    took = run_to_devnull(cmd, env, errlog)
                    st = proxy_stats(proxy_port) if proxied else None
                    if best is None or took < best:
                        best, best_stats = took, st
                first, lines = run_to_pipe(cmd, env, errlog)
                r = {"reader": reader, "source": source, "seconds": best, "first_byte": first,
                     "rows": max(lines - 1, 0), "proxy": best_stats}
                results.append(r)
                print(json.dumps(r), file=sys.stderr, flush=True)
        finally:
            for p in reversed(procs):
                p.terminate()
            for p in procs:
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
    local = results[0]["seconds"]
    head = ("reader", "source", "seconds", "x local", "requests", "MB sent", "peak conns",
            "peak in flight", "first byte s", "rows")
    rows = []
    for r in results:
        st = r["proxy"]
        rows.append((r["reader"], r["source"], f"{r['seconds']:.3f}", f"{r['seconds'] / local:.2f}",
                     str(st["requests"]) if st else "-",
                     f"{st['bytes_sent'] / 1e6:.1f}" if st else "-",
                     str(st["peak_connections"]) if st else "-",
                     str(st["peak_in_flight"]) if st else "-",
                     f"{r['first_byte']:.3f}" if r["first_byte"] is not None else "-",
                     str(r["rows"])))
    widths = [max(len(x[i]) for x in [head] + rows) for i in range(len(head))]
    for x in [head] + rows:
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(x, widths))))
    cap = f"{a.bandwidth_mbps:g} MB/s per connection" if a.bandwidth_mbps else "no bandwidth cap"
    print(f"table {table}; S3: {server_name} on 127.0.0.1 behind tests/fault_proxy.py, +{a.latency_ms} ms "
          f"per request, {cap}; seconds: best of {a.runs} runs with stdout on /dev/null; "
          f"requests, MB sent, peaks: the proxy's counters during that run; first byte: one more "
          f"run with stdout on a pipe")
    if results[1]["rows"] != results[0]["rows"]:
        raise SystemExit(f"row counts differ: local {results[0]['rows']}, S3 {results[1]['rows']}")
    if note:
        print(f"note: {note}")
    if len(results) > 2 and results[2]["rows"] != results[0]["rows"]:
        print(f"note: DuckDB printed {results[2]['rows']} rows, icefloe {results[0]['rows']}")


if __name__ == "__main__":
    main()
