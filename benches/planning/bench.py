#!/usr/bin/env python3
"""Planning at a million files: `icefloe files` time and peak RSS on metadata-only
tables of 10k, 100k and 1M data files (identity partition `part` with 1000 values, deletion
vectors for 1% of the files), with and without `--where part = 7`, beside DuckDB's
`iceberg_metadata` and PyIceberg's `plan_files` (with and without the same filter), for one
or both table shapes:
  unmerged  GenMetadataOnly.java: fast appends of 10 parts each, no manifest merging (100 data
            manifests), the deletion vectors in one row delta (metadata only: no Puffin file)
  merged    GenMergedMetadata.java: 100 appends of N/100 files each, merged as Iceberg Java's
            MergeAppend merges them by default (manifests of about 8 MB), then 10 row deltas
            adding the deletion vectors in real Puffin files (tables named gen1m_merged, ...)

Usage: benches/planning/bench.py [--warehouse DIR] [--sizes 10000,100000,1000000]
                                 [--shape unmerged|merged|unmerged,merged] [--generate] [--no-peers]
  --generate   (re)write the tables first (Iceberg Java API from the Spark runtime jar in
               ~/.cache/iceberg-gen, as benches/bench-table/make-bench-table installs it); a
               missing table is always written
Needs ~/.cache/iceberg-gen/venv (DuckDB 1.5.5 + iceberg extension, PyIceberg 0.12) and the
release binary ($CARGO_TARGET_DIR/release/icefloe, or ICEFLOE_BIN).
"""
import argparse
import glob
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.expanduser(os.environ.get("ICEBERG_GEN_HOME", "~/.cache/iceberg-gen"))
PY = os.path.join(GEN, "venv", "bin", "python")
TARGETS = {"files_s": 3.0, "files_mb": 256, "where_s": 0.5}


def icefloe_bin():
    if os.environ.get("ICEFLOE_BIN"):
        return os.environ["ICEFLOE_BIN"]
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(HERE, "..", "..", "target"))
    return os.path.join(target, "release", "icefloe")


SHAPES = {"unmerged": ("GenMetadataOnly.java", ""), "merged": ("GenMergedMetadata.java", "_merged")}


def name_of(n, shape="unmerged"):
    return {10_000: "gen10k", 100_000: "gen100k", 1_000_000: "gen1m"}.get(n, f"gen{n}") + SHAPES[shape][1]


def generate(warehouse, n, shape="unmerged"):
    cp = ":".join([
        os.path.join(GEN, "jars", "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"),
        os.path.join(GEN, "jars", "iceberg-shaded-jackson-2.18.2.jar"),
        glob.glob(os.path.join(GEN, "venv", "lib", "python3*", "site-packages", "pyspark", "jars"))[0] + "/*",
    ])
    subprocess.run(["nice", "-n", "10", "java", "-Xmx4g", "-cp", cp,
                    os.path.join(HERE, SHAPES[shape][0]), warehouse, name_of(n, shape), str(n)],
                   check=True, env={**os.environ, "TZ": "UTC"})


def timed(cmd, env=None):
    """(seconds, peak RSS in MB, stdout, stderr) of one run under /usr/bin/time."""
    p = subprocess.run(["/usr/bin/time", "-f", "@@ %e %M"] + cmd, capture_output=True, text=True,
                       env={**os.environ, **(env or {})})
    if p.returncode != 0:
        raise SystemExit(f"{cmd} failed: {p.stderr[-2000:]}")
    m = re.search(r"@@ ([0-9.]+) ([0-9]+)", p.stderr)
    return float(m.group(1)), int(m.group(2)) / 1024, p.stdout, p.stderr


def latest_metadata(table):
    hint = open(os.path.join(table, "metadata", "version-hint.text")).read().strip()
    return os.path.join(table, "metadata", f"v{hint}.metadata.json")


DUCKDB = r"""
import duckdb, glob, os, sys
sp = os.path.dirname(os.path.dirname(duckdb.__file__))
con = duckdb.connect()
for e in ("avro", "iceberg"):
    con.execute("LOAD '%s'" % glob.glob(os.path.join(sp, f"duckdb_extension_{e}", "extensions", "*", f"{e}.duckdb_extension"))[0])
print(con.execute("SELECT count(*) FROM iceberg_metadata(?) WHERE manifest_content = 'DATA'", [sys.argv[1]]).fetchone()[0])
"""

PYICEBERG = r"""
import sys
from pyiceberg.table import StaticTable
t = StaticTable.from_metadata(sys.argv[1])
scan = t.scan(row_filter=sys.argv[2]) if len(sys.argv) > 2 else t.scan()
print(sum(1 for _ in scan.plan_files()))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--warehouse", default="/tmp/icefloe-planning-bench")
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--shape", default="unmerged", help="unmerged, merged or unmerged,merged")
    ap.add_argument("--generate", action="store_true")
    ap.add_argument("--no-peers", action="store_true", help="only icefloe")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    shapes = a.shape.split(",")
    for shape in shapes:
        if shape not in SHAPES:
            ap.error(f"unknown shape {shape!r} (unmerged, merged)")
    bin_ = icefloe_bin()
    rows = []
    for n, shape in [(n, shape) for shape in shapes for n in sizes]:
        table = os.path.join(a.warehouse, "db", name_of(n, shape))
        if a.generate or not os.path.isdir(table):
            generate(a.warehouse, n, shape)
        s, mb, out, _ = timed([bin_, "files", table, "--format", "csv"])
        files = out.count("\n") - 1
        ws, wmb, wout, werr = timed([bin_, "files", table, "--format", "csv", "--where", "part = 7"],
                                    env={"ICEFLOE_LOG": "icefloe_core::scan::plan=debug"})
        wfiles = wout.count("\n") - 1
        m = re.search(r"manifests_read=(\d+) manifests_skipped=(\d+)", werr)
        read, skipped = (int(m.group(1)), int(m.group(2))) if m else (None, None)
        row = {"shape": shape, "n": n, "files": files, "s": s, "mb": mb, "where_files": wfiles, "where_s": ws,
               "where_mb": wmb, "manifests_read": read, "manifests_skipped": skipped}
        if not a.no_peers:
            meta = latest_metadata(table)
            ds, dmb, dout, _ = timed([PY, "-c", DUCKDB, meta])
            ps, pmb, pout, _ = timed([PY, "-c", PYICEBERG, meta])
            pws, pwmb, pwout, _ = timed([PY, "-c", PYICEBERG, meta, "part = 7"])
            row.update(duck_s=ds, duck_mb=dmb, duck_files=int(dout.strip()), py_s=ps, py_mb=pmb,
                       py_files=int(pout.strip()), pyw_s=pws, pyw_mb=pwmb, pyw_files=int(pwout.strip()))
        rows.append(row)
        print(row, file=sys.stderr, flush=True)
    print(f"{'shape':>8} | {'files':>9} | {'icefloe files':>17} | {'--where part = 7':>28} | {'DuckDB iceberg_metadata':>23} | "
          f"{'PyIceberg plan_files':>20} | {'PyIceberg, part = 7':>20}")
    for r in rows:
        mf = f"{r['manifests_read']}/{(r['manifests_read'] or 0) + (r['manifests_skipped'] or 0)} mf"
        line = (f"{r['shape']:>8} | {r['n']:>9} | {r['s']:>6.2f} s {r['mb']:>6.0f} MB | {r['where_s']:>6.2f} s {r['where_mb']:>5.0f} MB "
                f"{mf:>9} |")
        if "duck_s" in r:
            line += (f" {r['duck_s']:>8.2f} s {r['duck_mb']:>6.0f} MB | {r['py_s']:>6.2f} s {r['py_mb']:>6.0f} MB |"
                     f" {r['pyw_s']:>6.2f} s {r['pyw_mb']:>6.0f} MB")
        print(line)
        assert r["files"] == r["n"], r
        if "py_files" in r:
            assert r["py_files"] == r["n"] and r["pyw_files"] == r["where_files"], r
    big = [r for r in rows if r["n"] == 1_000_000]
    for r in big:
        print(f"targets at 1M ({r['shape']}): files {r['s']:.2f} s (< {TARGETS['files_s']}) {r['mb']:.0f} MB (< {TARGETS['files_mb']}): "
              f"{'met' if r['s'] < TARGETS['files_s'] and r['mb'] < TARGETS['files_mb'] else 'NOT met'}; "
              f"--where {r['where_s']:.2f} s (< {TARGETS['where_s']}): {'met' if r['where_s'] < TARGETS['where_s'] else 'NOT met'}")


if __name__ == "__main__":
    main()
