#!/usr/bin/env bash
# Side-by-side: `icefloe cat` against DuckDB 1.5.5 (iceberg_scan) and PyIceberg 0.12 on the
# 10M-row benchmark tables (`bench` with deletion vectors, `bench_nodel` without).
#
#   benches/compare/run.sh [WAREHOUSE]     (default /tmp/iceberg-bench-warehouse)
#
# Writes the tables first if they are missing, with benches/bench-table/make-bench-table
# (Spark + Iceberg 1.10; it also installs DuckDB and PyIceberg into its virtualenv).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../../scripts/env.sh"
WH="${1:-/tmp/iceberg-bench-warehouse}"
GEN="$ROOT/benches/bench-table/make-bench-table"
VENV="${ICEBERG_GEN_HOME:-$HOME/.cache/iceberg-gen}/venv"
if [ ! -f "$WH/db/bench/metadata/version-hint.text" ]; then
  [ -x "$GEN" ] || { echo "no bench tables in $WH and no $GEN to write them" >&2; exit 1; }
  "$GEN" --rows "${ROWS:-10000000}" --out "$WH"
fi
cargo build --release --quiet -p icefloe-cli
ICEFLOE="$CARGO_TARGET_DIR/release/icefloe"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
best() { # best of 3 wall-clock seconds of a command
  local b=""
  for _ in 1 2 3; do
    local s e
    s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N)
    b=$(python3 -c "import sys; t=$e-$s; b='$b'; print(t if not b else min(t, float(b)))")
  done
  printf '%.3f' "$b"
}
printf 'table\treader\ttask\tseconds\trows\n'
for t in bench bench_nodel; do
  dir="$WH/db/$t"
  meta="$dir/metadata/v$(cat "$dir/metadata/version-hint.text").metadata.json"
  rows=$("$ICEFLOE" cat "$dir" --format csv --columns id | tail -n +2 | wc -l)
  printf '%s\ticefloe\tcsv\t%s\t%s\n' "$t" "$(best "$ICEFLOE" cat "$dir" --format csv --output "$OUT/icefloe.csv")" "$rows"
  printf '%s\ticefloe\tjsonl\t%s\t%s\n' "$t" "$(best "$ICEFLOE" cat "$dir" --format jsonl --output "$OUT/icefloe.jsonl")" "$rows"
  printf '%s\ticefloe\tparquet\t%s\t%s\n' "$t" "$(best "$ICEFLOE" cat "$dir" --format parquet --output "$OUT/icefloe.parquet")" "$rows"
  "$VENV/bin/python" "$HERE/peers.py" "$dir" "$meta" "$OUT" | sed "s/^/$t\t/"
done
