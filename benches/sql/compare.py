#!/usr/bin/env python3
"""Times SQL on the `bench` table: `icefloe sql` in one process, DuckDB's iceberg_scan in one
process, and `icefloe sql --cluster` on a Ballista scheduler with two executors (processes of
the same binary on 127.0.0.1). Every reader runs as a fresh process per run (start-up counted
for all); the best of --runs counts. Each answer is compared with the others and, for the
aggregate, with Spark's count and sum(qty) from the generator's expected.json.

Run by benches/sql/run.sh, which builds the binary and finds DuckDB's Python.
"""
import argparse
import csv
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

QUERIES = [
    ("group by category",
     "SELECT category, count(*) AS n, sum(qty) AS sum_qty FROM bench GROUP BY category ORDER BY category"),
    ("filter id range",
     "SELECT count(*) AS n, sum(qty) AS sum_qty, min(amount) AS min_amount, max(ts) AS max_ts "
     "FROM bench WHERE id BETWEEN 5000000 AND 5009999"),
]

DUCKDB = r"""
import csv, glob, os, sys
import duckdb
meta, sql = sys.argv[1], sys.argv[2]
sp = os.path.dirname(os.path.dirname(duckdb.__file__))
con = duckdb.connect()
for e in ("avro", "iceberg"):
    p = glob.glob(os.path.join(sp, f"duckdb_extension_{e}", "extensions", "*", f"{e}.duckdb_extension"))[0]
    con.execute(f"LOAD '{p}'")
con.execute("SET TimeZone = 'UTC'")
con.execute(f"CREATE VIEW bench AS SELECT * FROM iceberg_scan('{meta}')")
cur = con.execute(sql)
w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow([d[0] for d in cur.description])
for row in cur.fetchall():
    w.writerow(["" if v is None else v for v in row])
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, proc, name):
    for _ in range(600):
        if proc.poll() is not None:
            raise SystemExit(f"{name} exited ({proc.returncode}) before listening on port {port}")
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"{name} did not listen on port {port} within 60 s")


def normalise(text):
    """CSV text as a list of rows of canonical cells: numbers as floats rounded to 9 significant
    digits (the engines sum doubles in different orders), timestamps without their zone suffix
    and separator differences."""
    rows = list(csv.reader(io.StringIO(text)))
    out = []
    for row in rows[1:]:
        cells = []
        for c in row:
            try:
                cells.append(f"{float(c):.9g}")
            except ValueError:
                cells.append(c.replace("T", " ").removesuffix("Z").removesuffix("+00:00"))
        out.append(tuple(cells))
    return out


def timed(cmd):
    t = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    took = time.time() - t
    if p.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    return took, p.stdout


class Cluster:
    """A Ballista scheduler and two executors, processes of the icefloe binary on 127.0.0.1."""

    def __init__(self, icefloe, logdir):
        self.procs = []
        self.port = free_port()
        self.start(icefloe, logdir, "scheduler", ["scheduler", "--bind", f"127.0.0.1:{self.port}"], self.port)
        for i in (1, 2):
            p = free_port()
            self.start(icefloe, logdir, f"executor{i}",
                       ["executor", "--scheduler", f"127.0.0.1:{self.port}", "--bind", f"127.0.0.1:{p}"], p)

    def start(self, icefloe, logdir, name, args, port):
        log = open(os.path.join(logdir, f"{name}.log"), "w")
        proc = subprocess.Popen([icefloe, *args], stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        wait_port(port, proc, f"icefloe {name}")

    def stop(self):
        for p in self.procs:
            p.kill()
            p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--icefloe", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--expected", help="the generator's expected.json (Spark's aggregates)")
    ap.add_argument("--duckdb-python", help="a Python with duckdb and its avro and iceberg extensions")
    ap.add_argument("--cluster", action="store_true", help="also time a two-executor cluster")
    a = ap.parse_args()

    hint = open(os.path.join(a.table, "metadata", "version-hint.text")).read().strip()
    meta = os.path.join(a.table, "metadata", f"v{hint}.metadata.json")
    logdir = tempfile.mkdtemp(prefix="icefloe-sql-bench-")
    cluster = None
    readers = [("icefloe sql", lambda q: [a.icefloe, "sql", "--table", f"bench={a.table}", "--format", "csv", q])]
    if a.duckdb_python:
        readers.append(("duckdb 1.5.5", lambda q: [a.duckdb_python, "-c", DUCKDB, meta, q]))
    if a.cluster:
        probe = subprocess.run([a.icefloe, "scheduler", "--help"], capture_output=True)
        if probe.returncode != 0:
            print(f"note: {a.icefloe} has no `scheduler` (build with --features cluster); no cluster line",
                  file=sys.stderr)
        else:
            cluster = Cluster(a.icefloe, logdir)
            readers.append(("icefloe sql --cluster (2 executors)",
                            lambda q: [a.icefloe, "sql", "--cluster", f"127.0.0.1:{cluster.port}",
                                       "--table", f"bench={a.table}", "--format", "csv", q]))
    expected = None
    if a.expected:
        expected = json.load(open(a.expected))["tables"]["bench"]["current"]

    print(f"# table {a.table} (current snapshot); {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}; "
          f"seconds: best of {a.runs}, each a fresh process; logs in {logdir}")
    print(f"{'query':<18} {'reader':<36} {'seconds':>8} {'× duckdb':>9}  answer")
    failed = False
    try:
        for qname, sql in QUERIES:
            times, answers = {}, {}
            for name, cmd in readers:
                best = None
                for _ in range(a.runs):
                    took, out = timed(cmd(sql))
                    best = took if best is None else min(best, took)
                times[name], answers[name] = best, normalise(out)
            first = readers[0][0]
            for name, _ in readers:
                verdict = "equal to icefloe sql" if answers[name] == answers[first] else f"DIFFERS: {answers[name][:3]}"
                if name == first:
                    verdict = f"{len(answers[name])} row(s)"
                    if expected and qname == "group by category":
                        n = sum(int(float(r[1])) for r in answers[name])
                        s = sum(int(float(r[2])) for r in answers[name])
                        ok = (n, s) == (expected["count"], expected["sum_qty"])
                        verdict += (", totals equal Spark's" if ok else
                                    f", totals {n}, {s} DIFFER from Spark's {expected['count']}, {expected['sum_qty']}")
                        failed |= not ok
                else:
                    failed |= answers[name] != answers[first]
                duck = times.get("duckdb 1.5.5")
                ratio = f"{times[name] / duck:.2f}" if duck else "-"
                print(f"{qname:<18} {name:<36} {times[name]:8.3f} {ratio:>9}  {verdict}", flush=True)
    finally:
        if cluster:
            cluster.stop()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
