#!/usr/bin/env bash
# Throughput of `cat data.csv` through an `icefloe mount` against `icefloe cat --format csv`
# writing a file, on the current snapshot of TABLE. Prints MB/s of each (MB = 10^6 bytes).
#
#   benches/fuse_throughput.sh TABLE [RUNS]
#
# The mount is fresh, so its first read includes the counting pass (sizes, offset index) and
# the rendering; a second read of the same view is served from the chunk cache (or the page
# cache), and is reported separately.
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
TABLE="$(cd "${1:?usage: $0 TABLE [RUNS]}" && pwd)"
RUNS="${2:-3}"
cd "$ROOT"
apt_install fuse3
cargo build --release --quiet -p icefloe-cli
ICEFLOE="$CARGO_TARGET_DIR/release/icefloe"
WORK="$(mktemp -d)"
MNT="$WORK/mnt"
mkdir -p "$MNT"
cleanup() {
  fusermount3 -u "$MNT" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

now() { date +%s.%N; }
mbps() { python3 -c "import sys; b, t = int(sys.argv[1]), float(sys.argv[2]); print(f'{b / t / 1e6:8.1f} MB/s  ({b} bytes in {t:.3f} s)')" "$1" "$2"; }

best_cli=""
for _ in $(seq "$RUNS"); do
  t0=$(now)
  "$ICEFLOE" cat "$TABLE" --lineage --format csv --output "$WORK/cat.csv"
  t1=$(now)
  t=$(python3 -c "print($t1 - $t0)")
  best_cli=$(python3 -c "print(min(float(x) for x in '$best_cli $t'.split()))")
done
bytes=$(stat -c %s "$WORK/cat.csv")

best_cold=""
best_warm=""
for _ in $(seq "$RUNS"); do
  "$ICEFLOE" mount "$TABLE" "$MNT" --daemon 2>/dev/null
  t0=$(now)
  cat "$MNT/current/data.csv" > "$WORK/mount.csv"
  t1=$(now)
  cat "$MNT/current/data.csv" > "$WORK/mount2.csv"
  t2=$(now)
  fusermount3 -u "$MNT"
  cmp -s "$WORK/cat.csv" "$WORK/mount.csv" || { echo "mount and cat differ" >&2; exit 1; }
  cold=$(python3 -c "print($t1 - $t0)")
  warm=$(python3 -c "print($t2 - $t1)")
  best_cold=$(python3 -c "print(min(float(x) for x in '$best_cold $cold'.split()))")
  best_warm=$(python3 -c "print(min(float(x) for x in '$best_warm $warm'.split()))")
  sleep 0.2
done

echo "table: $TABLE (best of $RUNS)"
echo "icefloe cat --format csv > file:  $(mbps "$bytes" "$best_cli")"
echo "cat MOUNT/current/data.csv, cold: $(mbps "$bytes" "$best_cold")"
echo "cat MOUNT/current/data.csv, warm: $(mbps "$bytes" "$best_warm")"
