#!/usr/bin/env python3
"""A fault-injecting HTTP proxy on 127.0.0.1 in front of an object-store server (test equipment).

Every request is forwarded to --upstream as it came (Host header and signature untouched), except
that faults are injected:

  --faults KIND,KIND,...   the n-th distinct request (method, path, Range) gets KIND number
                           n mod len; its first --repeat attempts fault, later ones pass, so a
                           client that retries reads everything. Kinds:
                             ok        forwarded untouched
                             drop      the connection is closed without a response
                             reset     the connection is reset (TCP RST)
                             503       503 Service Unavailable (S3's SlowDown-style error)
                             500       500 Internal Server Error
                             truncate  the response's headers promise the whole body, half is
                                       sent, then the connection is closed
                             slow      the response is held back --slow-ms before it is sent
  --fail REGEX             requests whose path matches fault on every attempt, with --fail-with
                           (drop, reset, 503, 500, truncate; default 503)
  --latency-ms N           every request waits N ms before it is forwarded (benchmarks)
  --expiring-keys          a request signed with access key "expiring-<epoch ms>" after that
                           time is refused 400 ExpiredToken, as S3 refuses expired session
                           credentials (the test catalog vends such keys)
  --log FILE               one line per request: "<kind> <method> <path> <access key id>"
                           (a bearer token as "bearer:<token>")
  --bandwidth-mbps N       each client connection gets response bodies no faster than N
                           megabytes (10^6 bytes, not megabits) per second: a token bucket per
                           connection, refilled at that rate and holding one 64 KiB chunk, with a
                           sleep before each chunk the bucket cannot pay for (benchmarks; the
                           bytes of concurrent connections add up, as S3's do)
  --stats FILE             on exit (SIGTERM, SIGINT) the counters below are written to FILE as
                           one JSON line
  --self-test              runs the proxy's own checks against a small upstream server in this
                           process (bandwidth, latency, counters, /__stats, --stats on SIGTERM)
                           and prints "self-test: N passed, N failed"

Counters, served as one JSON line at `GET /__stats` (answered by the proxy itself, neither
forwarded nor counted; `GET /__stats?reset` answers then sets them back to zero):
  requests          requests received (faulted ones included)
  bytes_sent        response body bytes written to clients
  connections       client connections that sent a request (/__stats aside); each is
                    forwarded over its own upstream connection
  peak_connections  most client (so upstream) connections open at once
  peak_in_flight    most requests being answered at once
  seconds           since the start, or since the last reset

Standard library only.
"""

import argparse
import http.client
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te"}
CHUNK = 64 * 1024  # bytes per write when --bandwidth-mbps is set (and the bucket's size)


class Stats:
    """The proxy's counters (see the module's doc), safe to update from every handler thread."""

    def __init__(self):
        self.lock = threading.Lock()
        self.open_connections = 0
        self.in_flight = 0
        self.reset()

    def reset(self):
        with self.lock:
            self.start = time.monotonic()
            self.requests = 0
            self.bytes_sent = 0
            self.connections = 0
            self.peak_connections = self.open_connections
            self.peak_in_flight = self.in_flight

    def connection(self, delta):
        with self.lock:
            self.open_connections += delta
            if delta > 0:
                self.connections += 1
                self.peak_connections = max(self.peak_connections, self.open_connections)

    def request(self, delta):
        with self.lock:
            self.in_flight += delta
            if delta > 0:
                self.requests += 1
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def sent(self, n):
        with self.lock:
            self.bytes_sent += n

    def snapshot(self):
        with self.lock:
            return {
                "requests": self.requests,
                "bytes_sent": self.bytes_sent,
                "connections": self.connections,
                "peak_connections": self.peak_connections,
                "peak_in_flight": self.peak_in_flight,
                "seconds": round(time.monotonic() - self.start, 3),
            }

    def json(self):
        return json.dumps(self.snapshot(), sort_keys=True)


class Bucket:
    """A token bucket of one connection: `rate` bytes a second, at most one chunk banked."""

    def __init__(self, rate):
        self.rate = rate
        self.tokens = float(CHUNK)
        self.last = time.monotonic()

    def take(self, n):
        """Waits until `n` more bytes may be sent."""
        now = time.monotonic()
        self.tokens = min(float(CHUNK), self.tokens + (now - self.last) * self.rate)
        self.last = now
        self.tokens -= n
        if self.tokens < 0:
            time.sleep(-self.tokens / self.rate)


def parse_args(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int)
    ap.add_argument("--upstream", help="host:port")
    ap.add_argument("--faults", default="ok")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--fail")
    ap.add_argument("--fail-with", default="503")
    ap.add_argument("--slow-ms", type=int, default=1500)
    ap.add_argument("--latency-ms", type=int, default=0)
    ap.add_argument("--expiring-keys", action="store_true")
    ap.add_argument("--log")
    ap.add_argument("--bandwidth-mbps", type=float, default=0)
    ap.add_argument("--stats")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args(argv)
    if not args.self_test and (args.port is None or args.upstream is None):
        ap.error("the following arguments are required: --port, --upstream")
    if args.bandwidth_mbps < 0:
        ap.error("--bandwidth-mbps must not be negative")
    return args


def make_server(args):
    """The proxy's server (not yet serving) and its counters."""
    stats = Stats()
    rate = args.bandwidth_mbps * 1e6
    kinds = args.faults.split(",")
    fail = re.compile(args.fail) if args.fail else None
    up_host, up_port = args.upstream.rsplit(":", 1)
    lock = threading.Lock()
    seen = {}  # request key -> [kind, attempts]
    log = open(args.log, "a", buffering=1) if args.log else None
    local = threading.local()

    def decide(method, path, rng):
        with lock:
            if fail and fail.search(path.split("?", 1)[0]):
                return args.fail_with
            key = (method, path, rng)
            if key not in seen:
                seen[key] = [kinds[len(seen) % len(kinds)], 0]
            entry = seen[key]
            entry[1] += 1
            return entry[0] if entry[1] <= args.repeat else "ok"

    def upstream():
        c = getattr(local, "conn", None)
        if c is None:
            c = local.conn = http.client.HTTPConnection(up_host, int(up_port), timeout=120)
        return c

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body are separate writes: with Nagle's algorithm the body waits for the
        # client's delayed ACK of the headers (up to 40 ms a response on Linux), latency no
        # store adds and --latency-ms does not account for.
        disable_nagle_algorithm = True

        def log_message(self, *a):
            pass

        def setup(self):
            super().setup()
            self.bucket = Bucket(rate) if rate else None
            self.counted = False  # a connection counts from its first request (not /__stats) on

        def finish(self):
            try:
                super().finish()
            finally:
                if self.counted:
                    stats.connection(-1)

        def send_body(self, data):
            """Writes a response body, at the connection's --bandwidth-mbps when it has one.
            Bytes are counted before they are written: a client that has them (and asks for
            the counters next) finds them counted."""
            if self.bucket is None:
                stats.sent(len(data))
                self.wfile.write(data)
                return
            view = memoryview(data)
            for off in range(0, len(view), CHUNK):
                chunk = view[off : off + CHUNK]
                self.bucket.take(len(chunk))
                stats.sent(len(chunk))
                self.wfile.write(chunk)

        def serve_stats(self):
            body = (stats.json() + "\n").encode()
            query = self.path.partition("?")[2]
            if "reset" in (q.partition("=")[0] for q in query.split("&")):
                stats.reset()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def forward(self):
            if self.command == "GET" and self.path.split("?", 1)[0] == "/__stats":
                self.serve_stats()
                return
            if not self.counted:
                self.counted = True
                stats.connection(1)
            stats.request(1)
            try:
                self.forward_counted()
            finally:
                stats.request(-1)

        def forward_counted(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else None
            kind = decide(self.command, self.path, self.headers.get("Range", ""))
            auth = self.headers.get("Authorization", "")
            m = re.search(r"Credential=([^/,\s]+)", auth)
            bearer = re.fullmatch(r"Bearer (\S+)", auth)
            akid = m.group(1) if m else f"bearer:{bearer.group(1)}" if bearer else "-"
            e = re.fullmatch(r"expiring-(\d+)", akid)
            if args.expiring_keys and e and time.time() * 1000 > int(e.group(1)):
                kind = "expired"
            if log:
                log.write(f"{kind} {self.command} {self.path} {akid}\n")
            if args.latency_ms:
                time.sleep(args.latency_ms / 1000)
            if kind == "drop":
                self.close_connection = True
                return
            if kind == "reset":
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.close_connection = True
                return
            if kind in ("503", "500", "expired"):
                code = {"503": b"SlowDown", "500": b"InternalError", "expired": b"ExpiredToken"}
                msg = (
                    b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>"
                    + code[kind]
                    + b"</Code><Message>injected by fault_proxy</Message></Error>"
                )
                self.send_response(400 if kind == "expired" else int(kind))
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(msg)))
                self.end_headers()
                stats.sent(len(msg))
                self.wfile.write(msg)
                return
            if kind == "slow":
                time.sleep(args.slow_ms / 1000)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
            for attempt in range(2):
                conn = upstream()
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    # The same stall the other way: an upstream that writes a body in pieces
                    # waits for this side's delayed ACK unless it is sent at once.
                    if conn.sock is not None and hasattr(socket, "TCP_QUICKACK"):
                        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
                    resp = conn.getresponse()
                    data = resp.read()
                    break
                except (http.client.HTTPException, OSError):
                    conn.close()
                    local.conn = None
                    if attempt:
                        raise
            try:
                self.send_response(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in HOP and k.lower() != "content-length":
                        self.send_header(k, v)
                if self.command == "HEAD":
                    self.send_header("Content-Length", resp.getheader("Content-Length", "0"))
                else:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command == "HEAD":
                    return
                if kind == "truncate" and len(data) > 1:
                    self.send_body(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.send_body(data)
            except (BrokenPipeError, ConnectionResetError):
                # The client gave up (a timeout of its own): nothing to answer.
                self.close_connection = True

        do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = forward

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    return Server(("127.0.0.1", args.port), Handler), stats


def main():
    args = parse_args()
    if args.self_test:
        sys.exit(self_test())
    srv, stats = make_server(args)

    def write_stats():
        if args.stats:
            with open(args.stats, "w") as f:
                f.write(stats.json() + "\n")

    if args.stats:
        # SIGTERM ends serve_forever through SystemExit, so that the counters are written.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"fault_proxy on 127.0.0.1:{args.port} -> {args.upstream}", file=sys.stderr, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        if not args.stats:
            raise
    finally:
        write_stats()


def self_test():
    """The proxy's own checks, against an upstream server in this process; returns the exit code."""
    seen = []  # paths the upstream server was asked for

    class Upstream(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_GET(self):
            seen.append(self.path)
            size = int(self.path.rsplit("/", 1)[1])  # GET /bucket/<size>: <size> bytes
            body = bytes(i % 251 for i in range(size))
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            self.wfile.write(body)

    up = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    up.daemon_threads = True
    threading.Thread(target=up.serve_forever, daemon=True).start()
    upstream = f"127.0.0.1:{up.server_address[1]}"

    def proxy(*argv):
        srv, _ = make_server(parse_args(["--port", "0", "--upstream", upstream, *argv]))
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        return srv.server_address[1]

    def get(port, path, conn=None):
        c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        if conn is None:
            c.close()
        return r.status, body

    def stats_of(port, reset=False):
        status, body = get(port, "/__stats?reset" if reset else "/__stats")
        assert status == 200, status
        return json.loads(body)

    def expect(size, body):
        assert body == bytes(i % 251 for i in range(size)), f"body of {len(body)} bytes, not {size}"

    MiB = 1 << 20
    checks = []

    def check(fn):
        checks.append(fn)
        return fn

    @check
    def plain_proxy_forwards_and_counts():
        port = proxy()
        status, body = get(port, f"/b/{MiB}")
        assert status == 200
        expect(MiB, body)
        st = stats_of(port)
        assert st["requests"] == 1 and st["bytes_sent"] == MiB and st["connections"] == 1, st
        assert not any(p.startswith("/__stats") for p in seen), seen

    @check
    def bandwidth_paces_each_connection():
        port = proxy("--bandwidth-mbps", "4")
        t = time.monotonic()
        status, body = get(port, f"/b/{MiB}")
        one = time.monotonic() - t
        expect(MiB, body)
        # 1 MiB at 4 MB/s with one 64 KiB chunk banked: at least 0.245 s.
        assert one >= (MiB - CHUNK) / 4e6, f"1 MiB in {one:.3f} s at 4 MB/s"
        stats_of(port, reset=True)
        # Three connections at once each get 4 MB/s: together well under the 0.74 s that 3 MiB
        # would take through one connection.
        go = threading.Barrier(3)
        bodies = []

        def fetch():
            go.wait()
            bodies.append(get(port, f"/b/{MiB}")[1])

        t = time.monotonic()
        threads = [threading.Thread(target=fetch) for _ in range(3)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        three = time.monotonic() - t
        for b in bodies:
            expect(MiB, b)
        assert (MiB - CHUNK) / 4e6 <= three < (3 * MiB - CHUNK) / 4e6, f"3 x 1 MiB in {three:.3f} s"
        st = stats_of(port)
        assert st["requests"] == 3 and st["bytes_sent"] == 3 * MiB, st
        assert st["peak_in_flight"] == 3 and st["peak_connections"] == 3, st

    @check
    def latency_is_per_request():
        port = proxy("--latency-ms", "100", "--bandwidth-mbps", "100")
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        t = time.monotonic()
        for _ in range(3):
            expect(1000, get(port, "/b/1000", c)[1])
        took = time.monotonic() - t
        c.close()
        assert took >= 0.3, f"3 requests in {took:.3f} s with 100 ms each"
        st = stats_of(port)
        assert st["requests"] == 3 and st["connections"] == 1 and st["peak_in_flight"] == 1, st

    @check
    def stats_reset_and_not_forwarded():
        port = proxy()
        get(port, "/b/10")
        before = len(seen)
        assert stats_of(port, reset=True)["requests"] == 1
        st = stats_of(port)
        assert st["requests"] == 0 and st["bytes_sent"] == 0, st
        assert len(seen) == before, seen[before:]

    @check
    def faults_still_apply_with_bandwidth():
        port = proxy("--faults", "truncate", "--bandwidth-mbps", "50")
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("GET", "/b/200000")
        r = c.getresponse()
        try:
            r.read()
            raise AssertionError("a truncated body read whole")
        except http.client.IncompleteRead as e:
            assert len(e.partial) == 100000, len(e.partial)
        c.close()
        expect(200000, get(port, "/b/200000")[1])  # the retry passes
        st = stats_of(port)
        assert st["requests"] == 2 and st["bytes_sent"] == 300000, st

    @check
    def stats_file_written_on_sigterm():
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "stats.json")
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            s.close()
            p = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--port", str(port),
                 "--upstream", upstream, "--stats", out],
                stderr=subprocess.DEVNULL,
            )
            try:
                for _ in range(200):
                    try:
                        socket.create_connection(("127.0.0.1", port), 1).close()
                        break
                    except OSError:
                        time.sleep(0.05)
                get(port, "/b/5000")
                get(port, "/b/7")
            finally:
                p.send_signal(signal.SIGTERM)
                rc = p.wait(30)
            assert rc == 0, rc
            lines = open(out).read().splitlines()
            assert len(lines) == 1, lines
            st = json.loads(lines[0])
            assert st["requests"] == 2 and st["bytes_sent"] == 5007, st

    failed = 0
    for fn in checks:
        try:
            fn()
            print(f"ok    {fn.__name__}")
        except Exception as e:  # noqa: BLE001 - every check runs, each failure is reported
            failed += 1
            print(f"FAIL  {fn.__name__}: {type(e).__name__}: {e}")
    print(f"self-test: {len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    main()
