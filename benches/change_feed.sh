#!/usr/bin/env bash
# The change feed between the last two snapshots of TABLE (on the bench table: its
# merge-on-read UPDATE of 1% of the rows) against a full read of the table: wall time of
# `icefloe changes --from PARENT --to CURRENT --format csv` and of `icefloe cat --format csv`,
# both to /dev/null, best of RUNS; prints both and their ratio (the target: under 10%),
# and the same change feed with only NARROW_COLUMNS (default id) read. It also times the floor
# under any reader of those changes: reading the data files the range touches (added, removed,
# or given new deletes) and decompressing every page of them (benches/page_floor), as a ratio to
# the same full cat. Deleted rows spread over every page put that floor above a 10% target.
#
#   benches/change_feed.sh [TABLE] [RUNS]      # TABLE default ~/.cache/icefloe/bench/db/bench
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
TABLE="${1:-$HOME/.cache/icefloe/bench/db/bench}"
RUNS="${2:-3}"
cd "$ROOT"
cargo build --release --quiet -p icefloe-cli
cargo build --release --quiet -p icefloe-benches --bin page_floor
ICEFLOE="$CARGO_TARGET_DIR/release/icefloe"
read -r FROM TO < <("$ICEFLOE" snapshots "$TABLE" --format csv | tail -n 2 | cut -d, -f1 | paste -sd' ')
best() {
  local best=""
  for _ in $(seq "$RUNS"); do
    local t0 t1
    t0=$(date +%s.%N)
    "$@" > /dev/null
    t1=$(date +%s.%N)
    best=$(python3 -c "print(min(float(x) for x in '$best $(python3 -c "print($t1 - $t0)")'.split()))")
  done
  echo "$best"
}
changes=$(best "$ICEFLOE" changes "$TABLE" --from "$FROM" --to "$TO" --format csv)
narrow=$(best "$ICEFLOE" changes "$TABLE" --from "$FROM" --to "$TO" --format csv --columns "${NARROW_COLUMNS:-id}")
full=$(best "$ICEFLOE" cat "$TABLE" --format csv)
# Data files whose entry (deletes included) differs between FROM and TO: the ones a change
# feed must read. Paths in `icefloe files` are relative to a local table's root.
mapfile -t touched < <(python3 - "$TABLE" \
  <("$ICEFLOE" files "$TABLE" --snapshot "$FROM" --format csv) \
  <("$ICEFLOE" files "$TABLE" --snapshot "$TO" --format csv) <<'PY'
import csv, os, sys
table, a, b = sys.argv[1], *(dict((r["data_file"], r["deletes"]) for r in csv.DictReader(open(p))) for p in sys.argv[2:])
for f in sorted(set(a) | set(b)):
    if a.get(f) != b.get(f):
        print(f if os.path.isabs(f) else os.path.join(table, f))
PY
)
floor_best=""
for _ in $(seq "$RUNS"); do
  read -r secs _ < <("$CARGO_TARGET_DIR/release/page_floor" "${touched[@]}")
  floor_best=$(python3 -c "print(min(float(x) for x in '$floor_best $secs'.split()))")
done
rows=$("$ICEFLOE" changes "$TABLE" --from "$FROM" --to "$TO" --format csv | tail -n +2 | wc -l)
python3 - "$changes" "$full" "$rows" "$FROM" "$TO" "$narrow" "${NARROW_COLUMNS:-id}" "$floor_best" "${#touched[@]}" <<'PY'
import sys
c, f, rows, a, b = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
n, ncols = float(sys.argv[6]), sys.argv[7]
floor, nfiles = float(sys.argv[8]), int(sys.argv[9])
print(f"changes {a}..{b}: {c:.2f} s ({rows} change rows)")
print(f"  with --columns {ncols}: {n:.2f} s")
print(f"full cat:         {f:.2f} s")
print(f"ratio:            {100 * c / f:.1f}% of a full cat ({100 * n / f:.1f}% with --columns {ncols})")
print(f"floor:            {floor:.2f} s to read and decompress every page of the {nfiles} data files the range touches ({100 * floor / f:.1f}% of a full cat)")
PY
