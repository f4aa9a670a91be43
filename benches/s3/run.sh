#!/usr/bin/env bash
# `icefloe cat --format csv` of the 10M-row `bench` table read from an S3 server with 20 ms of
# added latency per request, against the same from local disk and against DuckDB 1.5.5
# (iceberg + httpfs extensions from PyPI) over the same server, in one run; prints the times and
# the ratios (targets: S3 within 1.5x of local, faster than DuckDB).
#
#   benches/s3/run.sh [WAREHOUSE]     (default ~/.cache/icefloe/bench)
#
# The S3 server is moto (scripts/servers install), the latency comes from tests/fault_proxy.py
# (--latency-ms, every request delayed before it is forwarded), both on 127.0.0.1. The table is
# uploaded as it is; both readers relocate its recorded local paths under the S3 location
# (DuckDB with allow_moved_paths). Each reader runs once after one warm-up (best of 2).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../../scripts/env.sh"
WH="${1:-$HOME/.cache/icefloe/bench}"
LATENCY_MS="${LATENCY_MS:-20}"
unset AWS_ENDPOINT AWS_ENDPOINT_URL
GEN="$ROOT/benches/bench-table/make-bench-table"
VENV="${ICEBERG_GEN_HOME:-$HOME/.cache/iceberg-gen}/venv"
if [ ! -f "$WH/db/bench/metadata/version-hint.text" ]; then
  [ -x "$GEN" ] || { echo "no bench table in $WH and no $GEN to write it" >&2; exit 1; }
  "$GEN" --rows "${ROWS:-10000000}" --out "$WH"
fi
bash "$ROOT/scripts/servers" install >/dev/null
"$VENV/bin/python" -c 'import duckdb_extension_httpfs' 2>/dev/null ||
  "$VENV/bin/pip" install -q "duckdb-extension-httpfs==1.5.5"
cargo build --release --quiet -p icefloe-cli
ICEFLOE="$CARGO_TARGET_DIR/release/icefloe"
OUT="$(mktemp -d)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$OUT"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 300); do python3 -c "import socket; socket.create_connection(('127.0.0.1',$1),1)" 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 not up" >&2; exit 1; }

S3_PORT=$(free_port)
"${ICEFLOE_TOOLS:-$HOME/.cache/icefloe-tools}/bin/moto_server" -H 127.0.0.1 -p "$S3_PORT" >"$OUT/moto.log" 2>&1 &
PIDS+=($!)
wait_port "$S3_PORT"
# Upload db/bench to s3://bench/wh/db/bench (moto takes unsigned PUTs).
python3 - "$WH/db/bench" "$S3_PORT" <<'PY'
import os, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
root, port = sys.argv[1], sys.argv[2]
def put(path, data=b""):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/{path}", data=data, method="PUT",
                                 headers={"Content-Type": "application/octet-stream"})
    urllib.request.urlopen(req, timeout=300).read()
put("bench")
files = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]
def up(p):
    with open(p, "rb") as f:
        put("bench/wh/db/bench/" + os.path.relpath(p, root), f.read())
with ThreadPoolExecutor(8) as ex:
    list(ex.map(up, files))
print(f"uploaded {len(files)} files", file=sys.stderr)
PY
PROXY_PORT=$(free_port)
python3 "$ROOT/tests/fault_proxy.py" --port "$PROXY_PORT" --upstream "127.0.0.1:$S3_PORT" \
  --latency-ms "$LATENCY_MS" >"$OUT/proxy.log" 2>&1 &
PIDS+=($!)
wait_port "$PROXY_PORT"
S3_OPTS=(--storage-option "aws_endpoint=http://127.0.0.1:$PROXY_PORT" --storage-option aws_allow_http=true
  --storage-option aws_region=us-east-1 --storage-option aws_access_key_id=testing
  --storage-option aws_secret_access_key=testing)

secs() { # wall-clock seconds of a command, best of 2
  local b=""
  for _ in 1 2; do
    local s e
    s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N)
    b=$(python3 -c "t=$e-$s; b='$b'; print(t if not b else min(t, float(b)))")
  done
  printf '%.3f' "$b"
}
rows() { tail -n +2 "$1" | wc -l; }

local_s=$(secs "$ICEFLOE" cat "$WH/db/bench" --format csv --output "$OUT/local.csv")
local_rows=$(rows "$OUT/local.csv")
s3_s=$(secs "$ICEFLOE" cat s3://bench/wh/db/bench --format csv --output "$OUT/s3.csv" "${S3_OPTS[@]}")
s3_rows=$(rows "$OUT/s3.csv")
duck() {
  "$VENV/bin/python" - "$PROXY_PORT" "$OUT/duckdb.csv" <<'PY'
import glob, os, sys
import duckdb
port, out = sys.argv[1], sys.argv[2]
sp = os.path.dirname(os.path.dirname(duckdb.__file__))
con = duckdb.connect()
for e in ("avro", "iceberg", "httpfs"):
    p = glob.glob(os.path.join(sp, f"duckdb_extension_{e}", "extensions", "*", f"{e}.duckdb_extension"))[0]
    con.execute(f"LOAD '{p}'")
con.execute(f"""CREATE SECRET s (TYPE s3, KEY_ID 'testing', SECRET 'testing', REGION 'us-east-1',
    ENDPOINT '127.0.0.1:{port}', URL_STYLE 'path', USE_SSL false)""")
con.execute(f"""COPY (SELECT * FROM iceberg_scan('s3://bench/wh/db/bench', allow_moved_paths => true))
    TO '{out}' (FORMAT csv, HEADER)""")
PY
}
duck_s=$(secs duck)
duck_rows=$(rows "$OUT/duckdb.csv")
printf 'reader\tsource\tseconds\trows\n'
printf 'icefloe\tlocal disk\t%s\t%s\n' "$local_s" "$local_rows"
printf 'icefloe\tS3 (moto) +%sms/request\t%s\t%s\n' "$LATENCY_MS" "$s3_s" "$s3_rows"
printf 'duckdb 1.5.5\tS3 (moto) +%sms/request\t%s\t%s\n' "$LATENCY_MS" "$duck_s" "$duck_rows"
python3 -c "print(f'icefloe S3 / icefloe local: {$s3_s/$local_s:.2f}x (target <= 1.5x)'); print(f'duckdb S3 / icefloe S3: {$duck_s/$s3_s:.2f}x (target > 1x)')"
[ "$local_rows" = "$s3_rows" ] || { echo "row counts differ: local $local_rows, S3 $s3_rows" >&2; exit 1; }
