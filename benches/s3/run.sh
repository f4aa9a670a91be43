#!/usr/bin/env bash
# `icefloe cat --format csv > /dev/null` of the 10M-row `bench` table (a) from local disk,
# (b) from an S3 server behind a proxy that adds latency per request and caps the bandwidth of
# each connection, and (c) DuckDB 1.5.5's iceberg_scan (iceberg + httpfs extensions from PyPI)
# over the same proxy, in one run; prints one line per reader: seconds (best of --runs), the
# ratio to (a), the proxy's request count, MB sent and peak connections and requests in flight
# during that run, the time to the first byte of stdout and the rows.
#
#   benches/s3/run.sh [OPTIONS] [WAREHOUSE]    (WAREHOUSE default ~/.cache/icefloe/bench)
#     --table DIR          time this table instead of WAREHOUSE/db/bench (a fixture, to try
#                          the plumbing: --table tests/fixtures/warehouse/db/v3_dv_large)
#     --latency-ms N       added to every request by the proxy (default 20, or $LATENCY_MS)
#     --bandwidth-mbps N   megabytes a second for each connection's response bodies (default 80;
#                          0: no cap)
#     --runs N             timed runs of each reader, the best counts (default 2)
#     --no-duckdb          only icefloe
#     --server s3s|moto    the S3 server (default s3s: s3s-fs, built once with cargo install)
#   ICEFLOE_BIN=PATH       time that binary instead of building the release one
#
# The bench table is not written here: build it first with
#   benches/bench-table/make-bench-table --out ~/.cache/icefloe/bench
# (Spark + Iceberg 1.10; about 80 s and 450 MB for 10M rows, and about 1 GB of tools once).
#
# The S3 server is s3s-fs (a Rust implementation of the S3 API over a directory, from crates.io;
# `cargo install`ed into $ICEFLOE_TOOLS the first time, a few minutes) or moto (scripts/servers
# install). s3s-fs is the default because moto reads a whole object for every ranged GET (about
# 100 ms per request on the bench table's 133 MB file, measured here), which no real object
# store does: it would time moto, not the readers. The latency and bandwidth come from
# tests/fault_proxy.py, both on 127.0.0.1 (the measuring is benches/s3/compare.py's). The
# table is uploaded as it is; both readers relocate its recorded local paths under the S3
# location (DuckDB with allow_moved_paths).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../../scripts/env.sh"
usage() { sed -n '9,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
WH="$HOME/.cache/icefloe/bench"
TABLE=""
LATENCY_MS="${LATENCY_MS:-20}"
BANDWIDTH_MBPS=80
RUNS=2
DUCKDB=1
SERVER=s3s
while [ $# -gt 0 ]; do
  case "$1" in
    --table) TABLE="${2:?--table needs a directory}"; shift 2 ;;
    --latency-ms) LATENCY_MS="${2:?}"; shift 2 ;;
    --bandwidth-mbps) BANDWIDTH_MBPS="${2:?}"; shift 2 ;;
    --runs) RUNS="${2:?}"; shift 2 ;;
    --no-duckdb) DUCKDB=0; shift ;;
    --server) SERVER="${2:?}"; shift 2 ;;
    -h | --help) usage ;;
    -*) echo "unknown option $1" >&2; usage ;;
    *) WH="$1"; shift ;;
  esac
done
if [ -z "$TABLE" ]; then
  TABLE="$WH/db/bench"
  if [ ! -f "$TABLE/metadata/version-hint.text" ]; then
    cat >&2 <<EOF
benches/s3/run.sh: no bench table at $TABLE.
Write it first (Spark + Iceberg 1.10; about 80 s and 450 MB of disk for 10M rows, and about
1 GB of tools in ~/.cache/iceberg-gen the first time):
  benches/bench-table/make-bench-table --out $WH
or time another table with --table DIR.
EOF
    exit 1
  fi
fi
[ -d "$TABLE/metadata" ] || { echo "benches/s3/run.sh: $TABLE is not an Iceberg table (no metadata/)" >&2; exit 1; }
TOOLS="${ICEFLOE_TOOLS:-$HOME/.cache/icefloe-tools}"
case "$SERVER" in
  moto)
    bash "$ROOT/scripts/servers" install >/dev/null
    SERVER_ARGS=(--moto "$TOOLS/bin/moto_server") ;;
  s3s)
    if [ ! -x "$TOOLS/bin/s3s-fs" ]; then
      echo "installing s3s-fs 0.14.1 into $TOOLS (cargo install, once)" >&2
      command -v curl >/dev/null 2>&1 || apt_install curl
      cargo install --quiet --locked s3s-fs@0.14.1 --features binary --root "$TOOLS" \
        --target-dir "$CARGO_TARGET_DIR/s3s-fs"
    fi
    SERVER_ARGS=(--s3s "$TOOLS/bin/s3s-fs") ;;
  *) echo "unknown --server $SERVER (s3s or moto)" >&2; usage ;;
esac
DUCK_ARGS=()
if [ "$DUCKDB" = 1 ]; then
  VENV="${ICEBERG_GEN_HOME:-$HOME/.cache/iceberg-gen}/venv"
  [ -x "$VENV/bin/pip" ] || {
    echo "benches/s3/run.sh: no virtualenv at $VENV for DuckDB: run benches/bench-table/make-bench-table --setup-only (or pass --no-duckdb)" >&2
    exit 1
  }
  "$VENV/bin/python" -c 'import duckdb, duckdb_extension_avro, duckdb_extension_iceberg, duckdb_extension_httpfs' 2>/dev/null ||
    "$VENV/bin/pip" install -q "duckdb==1.5.5" "duckdb-extension-avro==1.5.5" \
      "duckdb-extension-iceberg==1.5.5" "duckdb-extension-httpfs==1.5.5"
  DUCK_ARGS=(--duckdb-python "$VENV/bin/python")
fi
if [ -n "${ICEFLOE_BIN:-}" ]; then
  ICEFLOE="$ICEFLOE_BIN"
else
  cargo build --release --quiet -p icefloe-cli
  ICEFLOE="$CARGO_TARGET_DIR/release/icefloe"
fi
exec python3 "$HERE/compare.py" --icefloe "$ICEFLOE" \
  "${SERVER_ARGS[@]}" \
  --proxy "$ROOT/tests/fault_proxy.py" "${DUCK_ARGS[@]}" --table "$TABLE" \
  --latency-ms "$LATENCY_MS" --bandwidth-mbps "$BANDWIDTH_MBPS" --runs "$RUNS"
