#!/usr/bin/env bash
# Throughput of `cat data.csv` through an `icefloe mount` against `icefloe cat --format csv`,
# on the current snapshot of TABLE. Prints MB/s of each (MB = 10^6 bytes).
#
#   benches/fuse_throughput.sh TABLE [RUNS]
#
# Both sides write to /dev/null (`icefloe cat --output /dev/null`, `cat VIEW > /dev/null`): what
# is timed is producing the bytes, not the disk. Written to files, the second gigabyte waits on
# the writeback of the first, so whichever ran second looked slower. The bytes are checked
# once, untimed: the mount's view against a file the CLI wrote.
#
# The mount is fresh, so its first read includes the counting pass (sizes, offset index) and
# the rendering; a second read of the same view is served from the chunk cache (or the page
# cache), and is reported separately. Then the Parquet views, `ls -l current/` and the mount's
# RSS under 16 readers; last, the targets, each met or MISSED (ratios are the CLI's time
# over the mount's: above 1, the mount is faster).
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

# The CLI's CSV, once to a file (the bytes the mount must serve), then timed to /dev/null.
"$ICEFLOE" cat "$TABLE" --lineage --format csv --output "$WORK/cat.csv"
bytes=$(stat -c %s "$WORK/cat.csv")
best_cli=""
for _ in $(seq "$RUNS"); do
  t0=$(now)
  "$ICEFLOE" cat "$TABLE" --lineage --format csv --output /dev/null
  t1=$(now)
  t=$(python3 -c "print($t1 - $t0)")
  best_cli=$(python3 -c "print(min(float(x) for x in '$best_cli $t'.split()))")
done

best_cold=""
best_warm=""
for run in $(seq "$RUNS"); do
  # Cold: an empty on-disk index of its own.
  "$ICEFLOE" mount "$TABLE" "$MNT" --daemon --cache-dir "$WORK/index-cat-$(date +%s%N)" 2>/dev/null
  t0=$(now)
  cat "$MNT/current/data.csv" > /dev/null
  t1=$(now)
  cat "$MNT/current/data.csv" > /dev/null
  t2=$(now)
  if [ "$run" = 1 ]; then
    cmp -s "$WORK/cat.csv" "$MNT/current/data.csv" || { echo "mount and cat differ" >&2; exit 1; }
  fi
  fusermount3 -u "$MNT"
  cold=$(python3 -c "print($t1 - $t0)")
  warm=$(python3 -c "print($t2 - $t1)")
  best_cold=$(python3 -c "print(min(float(x) for x in '$best_cold $cold'.split()))")
  best_warm=$(python3 -c "print(min(float(x) for x in '$best_warm $warm'.split()))")
  sleep 0.2
done
rm -f "$WORK/cat.csv"

echo "table: $TABLE (best of $RUNS)"
echo "icefloe cat --format csv:          $(mbps "$bytes" "$best_cli")"
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
R_CSV_COLD=$(ratio "$best_cli" "$best_cold")
R_CSV_WARM=$(ratio "$best_cli" "$best_warm")
echo "cat MOUNT/current/data.csv, cold: $(mbps "$bytes" "$best_cold")  ${R_CSV_COLD}x the CLI's throughput"
echo "cat MOUNT/current/data.csv, warm: $(mbps "$bytes" "$best_warm")  ${R_CSV_WARM}x the CLI's throughput"

# --- Parquet views (data.parquet, files/*.parquet), `ls -l current/` cold, RSS -------------

# Seconds of the best of RUNS runs of "$@".
best_of() {
  local best=""
  for _ in $(seq "$RUNS"); do
    local t0 t1
    t0=$(now); "$@"; t1=$(now)
    best=$(python3 -c "print(min(float(x) for x in '$best $(python3 -c "print($t1 - $t0)")'.split()))")
  done
  echo "$best"
}

# Each mount has an empty on-disk index of its own (cold), unless INDEX_DIR names one.
fresh_mount() {
  local index="${INDEX_DIR:-$WORK/index-$(date +%s%N)}"
  "$ICEFLOE" mount "$TABLE" "$MNT" --daemon --cache-dir "$index" 2>/dev/null
}
unmount() { fusermount3 -u "$MNT"; sleep 0.2; }

# cat current/data.parquet on a fresh mount (sizing included) against the CLI's export, both
# to /dev/null (the two files hold the same rows in different row groups, so they are not
# compared byte for byte; the FUSE tests compare their rows).
bench_parquet_cat() {
  local t_cli t_mnt bytes
  "$ICEFLOE" cat "$TABLE" --lineage --format parquet --output "$WORK/cat.parquet"
  t_cli=$(best_of "$ICEFLOE" cat "$TABLE" --lineage --format parquet --output /dev/null)
  # The view's size is noted once it is read (sized by then), not by another mount.
  mount_cat() {
    fresh_mount
    cat "$MNT/current/data.parquet" > /dev/null
    stat -c %s "$MNT/current/data.parquet" > "$WORK/view.bytes"
    unmount
  }
  t_mnt=$(best_of mount_cat)
  bytes=$(cat "$WORK/view.bytes")
  echo "icefloe cat --format parquet:         $(mbps "$(stat -c %s "$WORK/cat.parquet")" "$t_cli")"
  R_PQ=$(ratio "$t_cli" "$t_mnt")
  echo "cat MOUNT/current/data.parquet, cold: $(mbps "$bytes" "$t_mnt")  ${R_PQ}x the CLI's throughput"
  T_PQ_CLI="$t_cli"
  rm -f "$WORK/cat.parquet"
}

# cat of every files/*.parquet on a fresh mount against the CLI's export of the snapshot.
bench_parquet_files() {
  local t_mnt
  mount_files() { fresh_mount; cat "$MNT"/current/files/*.parquet > /dev/null; unmount; }
  t_mnt=$(best_of mount_files)
  R_PQ_FILES=$(ratio "$T_PQ_CLI" "$t_mnt")
  echo "cat MOUNT/current/files/*.parquet, cold: $(python3 -c "print(f'{$t_mnt:.3f} s, CLI export {$T_PQ_CLI:.3f} s, ratio {$T_PQ_CLI / $t_mnt:.2f}x')")"
}

# The smallest of RUNS runs of "$@", each printing its seconds first.
best_reported() {
  local best=""
  for _ in $(seq "$RUNS"); do
    local secs
    read -r secs _ < <("$@")
    best=$(python3 -c "print(min(float(x) for x in '$best $secs'.split()))")
  done
  echo "$best"
}

# Seconds of one `ls -l current/` on a fresh mount (the mount's start is not timed).
ls_fresh() {
  fresh_mount > /dev/null
  local t0 t1; t0=$(now); ls -l "$MNT/current/" > /dev/null; t1=$(now)
  unmount > /dev/null
  python3 -c "print($t1 - $t0)"
}

# ls -l current/ on a fresh mount (sizes every view of the snapshot).
bench_ls_cold() {
  local best
  best=$(best_reported ls_fresh)
  T_LS_COLD=$(python3 -c "print(f'{$best * 1000:.0f}')")
  # The floor under any exact size of data.csv without an index: the length of a value needs
  # the value, so every page of every live data file is read and decompressed (no decoding).
  cargo build --release --quiet -p icefloe-benches --bin page_floor
  local files floor
  mapfile -t files < <("$ICEFLOE" files "$TABLE" --format csv | python3 -c "
import csv, os, sys
for r in csv.DictReader(sys.stdin):
    f = r['data_file']
    print(f if os.path.isabs(f) else os.path.join(sys.argv[1], f))" "$TABLE")
  floor=$(best_reported "$CARGO_TARGET_DIR/release/page_floor" "${files[@]}")
  echo "ls -l MOUNT/current/, cold: ${T_LS_COLD} ms (floor: reading and decompressing every page of the ${#files[@]} data files takes $(python3 -c "print(f'{$floor * 1000:.0f}')") ms)"
}

# `ls -l current/` of a fresh mount whose on-disk index a first mount filled (a remount).
bench_ls_index() {
  INDEX_DIR="$WORK/index"
  fresh_mount
  ls -l "$MNT/current/" > /dev/null
  unmount
  local best
  best=$(best_reported ls_fresh)
  unset INDEX_DIR
  T_LS_INDEX=$(python3 -c "print(f'{$best * 1000:.0f}')")
  echo "ls -l MOUNT/current/, remount with the on-disk index: ${T_LS_INDEX} ms ($(du -sh "$WORK/index" | cut -f1) of index)"
}

# RSS of the mount after 16 parallel readers of different views (default cache): every view of
# the current snapshot (data.csv, data.jsonl, data.parquet, files/*), then those of the other
# snapshots (snapshots/<id>/..., in the order `ls` sorts them) until there are 16. Each reader
# must read its view's size in bytes. Prints the views read, their bytes, the peak RSS (VmHWM) and the RSS
# once they are done (VmRSS).
RSS_READERS="${RSS_READERS:-16}"
bench_rss() {
  fresh_mount
  local pid views=() v
  pid=$(pgrep -n -f "icefloe mount $TABLE $MNT" || true)
  local current
  current=$(basename "$(readlink "$MNT/current")")
  # Names only (readdir, no stat: a stat sizes the view).
  views_of() {
    ls "$MNT/snapshots/$1" | grep -E '^data\.(csv|jsonl|parquet)$' | sed "s|^|snapshots/$1/|"
    ls "$MNT/snapshots/$1/files" | sed "s|^|snapshots/$1/files/|"
  }
  mapfile -t views < <({
    views_of "$current"
    ls "$MNT/snapshots" | grep -vx "$current" | while read -r s; do views_of "$s"; done
  } | head -"$RSS_READERS")
  local i=0
  for v in "${views[@]}"; do
    (cat "$MNT/$v" | wc -c > "$WORK/rss-$i.bytes") &
    i=$((i + 1))
  done
  wait
  local rss_kb now_kb total=0 b want
  rss_kb=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
  now_kb=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
  RSS_MB=$((rss_kb / 1024))
  echo "mount RSS with ${#views[@]} parallel readers of different views:"
  i=0
  for v in "${views[@]}"; do
    b=$(cat "$WORK/rss-$i.bytes")
    want=$(stat -c %s "$MNT/$v")
    [ "$b" = "$want" ] || { echo "reader of $v read $b bytes, its size is $want" >&2; exit 1; }
    printf '  %12d bytes  %s\n' "$b" "$v"
    total=$((total + b))
    i=$((i + 1))
  done
  echo "  $(python3 -c "print(f'{$total / 1e9:.2f}')") GB read; peak RSS ${RSS_MB} MB, ${now_kb} kB after"
  unmount
}

echo "machine load: $(cut -d' ' -f1-3 /proc/loadavg)"
bench_parquet_cat
bench_parquet_files
bench_ls_cold
bench_ls_index
bench_rss

# The targets, from the figures above.
target() { if python3 -c "import sys; sys.exit(0 if $2 else 1)"; then echo "  met     $1"; else echo "  MISSED  $1"; fi; }
echo "targets:"
target "cold CSV cat >= 0.8x the CLI (${R_CSV_COLD}x)" "$R_CSV_COLD >= 0.8"
target "warm CSV cat >= 0.9x the CLI (${R_CSV_WARM}x)" "$R_CSV_WARM >= 0.9"
target "cat data.parquet >= 0.8x the CLI's Parquet export (${R_PQ}x)" "$R_PQ >= 0.8"
target "cat files/*.parquet >= 0.8x the CLI's Parquet export (${R_PQ_FILES}x)" "$R_PQ_FILES >= 0.8"
target "cold ls -l current/ under 300 ms without an index (${T_LS_COLD} ms)" "$T_LS_COLD < 300"
if [ -n "${T_LS_INDEX:-}" ]; then
  target "ls -l current/ under 50 ms with the on-disk index (${T_LS_INDEX} ms)" "$T_LS_INDEX < 50"
fi
target "mount RSS under 512 MB after ${RSS_READERS} readers of different views (${RSS_MB} MB)" "$RSS_MB < 512"
