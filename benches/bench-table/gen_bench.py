#!/usr/bin/env python3
r"""Benchmark Iceberg v3 tables, written with Spark 3.5.9 + Apache Iceberg 1.10.2.

Usage: run it through benches/bench-table/make-bench-table, which sets up the Python packages and
jars first:

    benches/bench-table/make-bench-table [--rows N] [--out DIR] [--delete-fraction F] [--driver-memory 6g] [--write-tasks 1] [--check-duckdb]

    --rows N              rows per table (default 10,000,000)
    --out DIR             Hadoop-catalog warehouse to write (default /tmp/iceberg-bench-warehouse); the tables
                          DIR/db/bench and DIR/db/bench_nodel are replaced if they exist
    --delete-fraction F   fraction of rows the merge-on-read DELETE removes (default 0.1)
    --check-duckdb        also read both tables with DuckDB 1.5.5 (iceberg extension) and compare the aggregates
    --write-tasks T       parallel writer tasks for the INSERTs (default 1, so every data file but the last is
                          ~128 MiB; more tasks write faster but each task ends with a smaller file)

What it writes (catalog `x`, namespace `db`, Hadoop catalog layout: DIR/db/<table>/metadata/vN.metadata.json +
version-hint.text; every path inside is absolute, under DIR):

  db.bench        format-version 3, unpartitioned, write.target-file-size-bytes = 128 MiB (zstd Parquet), columns
                  id bigint, ts timestamp (timestamptz), category string (50 values), amount double,
                  qty int, note string (30 chars: 'note ' + 25 hex digits of md5(id)), flag boolean;
                  rows id = 0..N-1.
                  snapshot 1: INSERT of the N rows (one writer task by default, so data files roll at 128 MiB)
                  snapshot 2: merge-on-read DELETE WHERE pmod(id * 7919, 1000) < round(F * 1000): exactly F of
                              every 1000 consecutive ids, scattered, so every data file gets a deletion vector
                              (Puffin deletion-vector-v1; at F = 0.1 the roaring containers are bitmaps)
                  snapshot 3: merge-on-read UPDATE of ~1% of the rows (id % 100 = 42, minus the deleted ones):
                              qty = qty + 1, note = 'updated', amount = amount * 2 -> DVs merged + new data files
  db.bench_nodel  the same N rows, same layout and properties, one INSERT, no deletes.
  DIR/expected.json
                  per table and per snapshot of db.bench: Spark count(*), sum(qty), count(DISTINCT category),
                  min(id), max(id); file counts and sizes; the statements; timings.

It prints the elapsed time of each step and the total.
"""
import argparse
import json
import os
import shutil
import sys
import time

os.environ["TZ"] = "UTC"
time.tzset()
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# The shared Spark session of the generators (tests/gen/spark_session.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "gen"))
import spark_session  # noqa: E402


def duckdb_con():
    import duckdb
    import glob
    sp = os.path.dirname(os.path.dirname(duckdb.__file__))
    con = duckdb.connect()
    for e in ("avro", "iceberg"):
        p = glob.glob(os.path.join(sp, f"duckdb_extension_{e}", "extensions", "*", f"{e}.duckdb_extension"))[0]
        con.execute(f"LOAD '{p}'")
    return con, duckdb.__version__

COLUMNS = """id bigint, ts timestamp, category string, amount double, qty int, note string, flag boolean"""
SELECT = """SELECT id,
    timestamp_micros(1704067200000000 + id * 1000003) AS ts,
    concat('category_', lpad(CAST(pmod(id * 31, 50) AS string), 2, '0')) AS category,
    CAST(pmod(id * 2654435761, 100000000) AS double) / 100.0 AS amount,
    CAST(pmod(id * 7, 100) AS int) AS qty,
    concat('note ', substr(md5(CAST(id AS string)), 1, 25)) AS note,
    id % 3 = 0 AS flag
  FROM range(0, {rows}, 1, {parts})"""
PROPS = ("'format-version'='3', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
         "'write.merge.mode'='merge-on-read', 'write.target-file-size-bytes'='134217728', "
         "'write.parquet.compression-codec'='zstd', 'write.distribution-mode'='none'")


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


def make_spark(wh, driver_memory):
    return spark_session.make_spark("iceberg-bench", wh, cores=2, driver_memory=driver_memory,
                                     shuffle_partitions=4)


def du(path):
    total = 0
    for root, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--out", default="/tmp/iceberg-bench-warehouse")
    ap.add_argument("--delete-fraction", type=float, default=0.1)
    ap.add_argument("--driver-memory", default="6g")
    ap.add_argument("--check-duckdb", action="store_true")
    ap.add_argument("--write-tasks", type=int, default=1,
                    help="parallel writer tasks for the INSERTs (default 1: every data file but the last is ~128 MiB)")
    a = ap.parse_args()
    if not 0 <= a.delete_fraction <= 1:
        ap.error("--delete-fraction must be within [0, 1]")
    wh = os.path.abspath(a.out)
    k = round(a.delete_fraction * 1000)
    parts = a.write_tasks  # one writer task per input partition; each rolls files at the 128 MiB target
    t_all = time.time()
    for t in ("bench", "bench_nodel"):
        shutil.rmtree(os.path.join(wh, "db", t), ignore_errors=True)
    os.makedirs(os.path.join(wh, "db"), exist_ok=True)
    spark = make_spark(wh, a.driver_memory)
    log("spark", spark.version, "iceberg", spark.sql("SELECT x.system.iceberg_version()").collect()[0][0])

    steps = []

    def run(table, sql):
        t0 = time.time()
        spark.sql(sql).collect()
        dt = round(time.time() - t0, 1)
        steps.append({"table": table, "statement": " ".join(sql.split()), "seconds": dt})
        log(f"{dt:7.1f}s  {' '.join(sql.split())[:110]}")

    sel = SELECT.format(rows=a.rows, parts=parts)
    for t in ("bench", "bench_nodel"):
        run(t, f"CREATE TABLE x.db.{t} ({COLUMNS}) USING iceberg TBLPROPERTIES ({PROPS})")
    run("bench", f"INSERT INTO x.db.bench {sel}")
    if k > 0:
        run("bench", f"DELETE FROM x.db.bench WHERE pmod(id * 7919, 1000) < {k}")
    run("bench", "UPDATE x.db.bench SET qty = qty + 1, note = 'updated', amount = amount * 2 WHERE id % 100 = 42")
    run("bench_nodel", f"INSERT INTO x.db.bench_nodel {sel}")
    t_write = time.time() - t_all

    def aggregates(ref):
        t0 = time.time()
        r = spark.sql(f"""SELECT count(*) AS count, sum(qty) AS sum_qty, count(DISTINCT category) AS count_distinct_category,
                          min(id) AS min_id, max(id) AS max_id FROM {ref}""").collect()[0].asDict()
        r["seconds"] = round(time.time() - t0, 1)
        return r

    out = {"generator": "gen_bench.py", "spark": spark.version,
           "iceberg": spark.sql("SELECT x.system.iceberg_version()").collect()[0][0],
           "warehouse": wh, "rows": a.rows, "delete_fraction": a.delete_fraction,
           "delete_predicate": f"pmod(id * 7919, 1000) < {k}" if k > 0 else None,
           "update_predicate": "id % 100 = 42", "columns": COLUMNS, "insert_select": " ".join(sel.split()),
           "table_properties": PROPS, "tables": {}}
    for t in ("bench", "bench_nodel"):
        tdir = os.path.join(wh, "db", t)
        hint = open(os.path.join(tdir, "metadata", "version-hint.text")).read().strip()
        md = json.load(open(os.path.join(tdir, "metadata", f"v{hint}.metadata.json")))
        files = spark.sql(f"""SELECT content, count(*) AS files, sum(record_count) AS records,
                              sum(file_size_in_bytes) AS bytes FROM x.db.{t}.files GROUP BY content ORDER BY content""").collect()
        per_file = spark.sql(f"""SELECT content, file_path, record_count, file_size_in_bytes, referenced_data_file
                                 FROM x.db.{t}.files ORDER BY content, file_path""").collect()
        entry = {"table_dir": tdir, "current_metadata": f"metadata/v{hint}.metadata.json",
                 "current_snapshot_id": md.get("current-snapshot-id"), "bytes_on_disk": du(tdir),
                 "live_files": [r.asDict() for r in files],
                 "live_file_list": [{**r.asDict(), "file_path": r["file_path"].replace("file:", "").replace(tdir + "/", ""),
                                     "referenced_data_file": (r["referenced_data_file"] or "").replace(tdir + "/", "")
                                     or None} for r in per_file], "current": aggregates(f"x.db.{t}"), "snapshots": []}
        for s in md.get("snapshots", []):
            summ = s.get("summary", {})
            entry["snapshots"].append({
                "snapshot_id": s["snapshot-id"], "sequence_number": s["sequence-number"],
                "operation": summ.get("operation"),
                "summary": {k2: summ.get(k2) for k2 in ("added-data-files", "added-records", "added-dvs",
                                                        "added-position-deletes", "removed-dvs", "total-records",
                                                        "total-data-files", "total-delete-files", "total-files-size",
                                                        "total-position-deletes")},
                "aggregates": aggregates(f"x.db.{t} VERSION AS OF {s['snapshot-id']}")})
        out["tables"][t] = entry
        log(f"{t}: {entry['current']}  {entry['bytes_on_disk'] / 1e6:.1f} MB on disk, live files "
            f"{[r.asDict() for r in files]}")
    spark.stop()

    if a.check_duckdb:
        import duckdb
        con, ver = duckdb_con()
        for t, entry in out["tables"].items():
            t0 = time.time()
            meta = os.path.join(entry["table_dir"], entry["current_metadata"])
            r = con.execute(f"""SELECT count(*), sum(qty), count(DISTINCT category), min(id), max(id)
                                FROM iceberg_scan('{meta}')""").fetchone()
            got = dict(zip(("count", "sum_qty", "count_distinct_category", "min_id", "max_id"), [int(x) for x in r]))
            exp = {k2: entry["current"][k2] for k2 in got}
            entry["duckdb_check"] = {"duckdb": ver, "result": "match" if got == exp else got,
                                     "seconds": round(time.time() - t0, 1)}
            log(f"duckdb {t}: {entry['duckdb_check']}")
        del duckdb

    out["steps"] = steps
    out["seconds_write"] = round(t_write, 1)
    out["seconds_total"] = round(time.time() - t_all, 1)
    with open(os.path.join(wh, "expected.json"), "w") as f:
        json.dump(out, f, indent=1)
    log(f"elapsed: write {t_write:.1f}s, total {out['seconds_total']:.1f}s; "
        f"warehouse {du(wh) / 1e6:.1f} MB at {wh}; aggregates in {wh}/expected.json")


if __name__ == "__main__":
    main()
