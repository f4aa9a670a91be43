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

Standard library only.
"""

import argparse
import http.client
import re
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--upstream", required=True, help="host:port")
    ap.add_argument("--faults", default="ok")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--fail")
    ap.add_argument("--fail-with", default="503")
    ap.add_argument("--slow-ms", type=int, default=1500)
    ap.add_argument("--latency-ms", type=int, default=0)
    ap.add_argument("--expiring-keys", action="store_true")
    ap.add_argument("--log")
    args = ap.parse_args()
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

        def log_message(self, *a):
            pass

        def forward(self):
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
                self.wfile.write(msg)
                return
            if kind == "slow":
                time.sleep(args.slow_ms / 1000)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
            for attempt in range(2):
                conn = upstream()
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
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
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                # The client gave up (a timeout of its own): nothing to answer.
                self.close_connection = True

        do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = forward

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    srv = Server(("127.0.0.1", args.port), Handler)
    print(f"fault_proxy on 127.0.0.1:{args.port} -> {args.upstream}", file=sys.stderr, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
