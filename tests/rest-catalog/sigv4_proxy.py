#!/usr/bin/env python3
"""A SigV4-checking front for the test REST catalog, as AWS Glue's and S3 Tables' endpoints are.

Every request must carry an AWS Signature Version 4 `Authorization` header; the signature is
recomputed with botocore's own signer (botocore.auth.SigV4Auth) from the request as received and
the one known key pair. A request whose signature does not match is refused with 403 and an
Iceberg error body; one that matches is forwarded to the catalog with the catalog's bearer token.

    sigv4_proxy.py --port-file F --upstream http://127.0.0.1:P --token T \
        --access-key-id AK --secret-access-key SK --region R --service S
"""
import argparse
import http.client
import http.server
import json
import os
import re
import urllib.parse

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, ?SignedHeaders=(?P<signed>[^,]+), ?Signature=(?P<sig>[0-9a-f]{64})$"
)


def expected_signature(args, method, url, headers, body, signed, amz_date):
    """The signature botocore computes for this request, over the headers the client signed."""
    creds = Credentials(args.access_key_id, args.secret_access_key, headers.get("x-amz-security-token"))
    req = AWSRequest(method=method, url=url, data=body,
                     headers={k: v for k, v in headers.items() if k in signed})
    req.context["timestamp"] = amz_date
    auth = SigV4Auth(creds, args.service, args.region)
    canonical = auth.canonical_request(req)
    return auth.signature(auth.string_to_sign(req, canonical), req), canonical


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def refuse(self, status, message):
        body = json.dumps({"error": {"message": message, "type": "SignatureDoesNotMatch",
                                     "code": status}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self):
        args = self.server.args
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        m = AUTH.match(headers.get("authorization", ""))
        if not m:
            return self.refuse(403, "missing or malformed SigV4 Authorization header")
        if m["key"] != args.access_key_id or m["region"] != args.region or m["service"] != args.service:
            return self.refuse(403, f"credential scope {m['key']}/{m['region']}/{m['service']} is not accepted")
        amz_date = headers.get("x-amz-date", "")
        if not amz_date.startswith(m["date"]):
            return self.refuse(403, "x-amz-date does not match the credential scope's date")
        signed = m["signed"].split(";")
        url = f"http://{headers.get('host', '')}{self.path}"
        sig, canonical = expected_signature(args, self.command, url, headers, body, signed, amz_date)
        if sig != m["sig"]:
            return self.refuse(403, "SigV4 signature does not match; canonical request:\n" + canonical)
        up = urllib.parse.urlsplit(args.upstream)
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=30)
        fwd = {k: v for k, v in self.headers.items()
               if k.lower() not in ("authorization", "host", "content-length")}
        fwd["Authorization"] = f"Bearer {args.token}"
        conn.request(self.command, self.path, body=body or None, headers=fwd)
        resp = conn.getresponse()
        data = resp.read()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_HEAD = do_DELETE = do_PUT = handle_any


def main():
    p = argparse.ArgumentParser()
    for name in ("port-file", "upstream", "token", "access-key-id", "secret-access-key", "region", "service"):
        p.add_argument("--" + name, required=True)
    args = p.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.args = args
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{server.server_address[1]}\n")
    os.replace(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
