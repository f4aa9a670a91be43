#!/usr/bin/env bash
# SQL on the 10M-row `bench` table, side by side in one run: `icefloe sql` (DataFusion in one
# process), DuckDB 1.5.5's iceberg_scan (in one process), and `icefloe sql --cluster` on a
# Ballista scheduler with two executors started here on 127.0.0.1 (when the binary is built
# with the `cluster` feature). Queries: an aggregate by category (a GROUP BY that shuffles on a
# cluster) and a selective filter on `id`. Prints seconds (best of --runs), the ratio to DuckDB,
# and whether each reader's answer equals the others' and Spark's (expected.json).
#
#   benches/sql/run.sh [OPTIONS] [WAREHOUSE]    (WAREHOUSE default ~/.cache/icefloe/bench)
#     --runs N        timed runs of each reader and query, the best counts (default 3)
#     --no-cluster    skip the two-executor cluster
#     --no-duckdb     skip DuckDB
#   ICEFLOE_BIN=PATH  time that binary instead of building the release one (with `cluster`)
#
# The bench table is not written here: build it first with
#   benches/bench-table/make-bench-table --out ~/.cache/icefloe/bench
# (Spark + Iceberg 1.10; about 80 s and 450 MB for 10M rows, and about 1 GB of tools once).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../../scripts/env.sh"
usage() { sed -n '9,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
WH="$HOME/.cache/icefloe/bench"
RUNS=3
CLUSTER=1
DUCKDB=1
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS="${2:?--runs needs a number}"; shift 2 ;;
    --no-cluster) CLUSTER=0; shift ;;
    --no-duckdb) DUCKDB=0; shift ;;
    -h | --help) usage ;;
    -*) echo "unknown option $1" >&2; usage ;;
    *) WH="$1"; shift ;;
  esac
done
TABLE="$WH/db/bench"
if [ ! -f "$TABLE/metadata/version-hint.text" ]; then
  cat >&2 <<EOF
benches/sql/run.sh: no bench table at $TABLE.
Write it first (Spark + Iceberg 1.10; about 80 s and 450 MB of disk for 10M rows, and about
1 GB of tools in ~/.cache/iceberg-gen the first time):
  benches/bench-table/make-bench-table --out $WH
EOF
  exit 1
fi
ARGS=(--table "$TABLE" --runs "$RUNS")
[ -f "$WH/expected.json" ] && ARGS+=(--expected "$WH/expected.json")
if [ "$DUCKDB" = 1 ]; then
  VENV="${ICEBERG_GEN_HOME:-$HOME/.cache/iceberg-gen}/venv"
  [ -x "$VENV/bin/pip" ] || {
    echo "benches/sql/run.sh: no virtualenv at $VENV for DuckDB: run benches/bench-table/make-bench-table --setup-only (or pass --no-duckdb)" >&2
    exit 1
  }
  "$VENV/bin/python" -c 'import duckdb, duckdb_extension_avro, duckdb_extension_iceberg' 2>/dev/null ||
    "$VENV/bin/pip" install -q "duckdb==1.5.5" "duckdb-extension-avro==1.5.5" "duckdb-extension-iceberg==1.5.5"
  ARGS+=(--duckdb-python "$VENV/bin/python")
fi
if [ -n "${ICEFLOE_BIN:-}" ]; then
  ICEFLOE="$ICEFLOE_BIN"
else
  cargo build --release --quiet -p icefloe-cli --features cluster
  ICEFLOE="$CARGO_TARGET_DIR/release/icefloe"
fi
[ "$CLUSTER" = 1 ] && ARGS+=(--cluster)
exec python3 "$HERE/compare.py" --icefloe "$ICEFLOE" "${ARGS[@]}"
