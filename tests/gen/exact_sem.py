#!/usr/bin/env python3
r"""Writes the Spark tables behind the "exact semantics" tests (tests/e2e/exact.rs).

Run with the Spark 3.5.9 + Iceberg 1.10.2 virtualenv that
`benches/bench-table/make-bench-table --setup-only` sets up:

    TZ=UTC nice -n 10 ~/.cache/iceberg-gen/venv/bin/python tests/gen/exact_sem.py

It writes the tables at /tmp/icefloe-exact-wh (Hadoop catalog `x`, namespace `db`; paths in
the metadata are absolute under that directory), reads every snapshot back with Spark, and
copies tables and expected rows to tests/fixtures/exact/{warehouse,expected}/.

Tables:
  lineage_v2_cow      format 2, one INSERT writing 3 files (one manifest), a second INSERT,
                      upgrade to format 3, then copy-on-write DELETEs: the rewritten manifest
                      has a DELETED entry before EXISTING ones (row lineage inheritance).
  add_files_identity  Hive-style Parquet (partition columns p, region only in the directory
                      names) added with `system.add_files` to a table partitioned by
                      identity(p), identity(region); then a normal INSERT.
  schema_rule         a tag and a branch, then ADD COLUMN and RENAME COLUMN with no new
                      snapshot: current/branch reads use the current schema, snapshot id /
                      timestamp / tag reads use the snapshot's schema.
  promote_delete      format 2, identity(p int) partitioned; p promoted int -> long; then a
                      merge-on-read DELETE (a position delete file in partition p=1).
  meta_columns        format 3, identity(cat) then days(ts) added; a merge-on-read DELETE;
                      _file, _pos, _spec_id, _partition read back per snapshot.
  cast_edges          format 3, a date 9999-12-31 and binary bytes that are not UTF-8; the tests
                      edit its schema (date -> timestamp_ns, binary -> string) to check that a
                      promotion or cast that does not fit is an error.

Expected rows: one JSON object per line, fixtures/README.md's encoding.
"""
import datetime
import decimal
import json
import os
import shutil
import sys

os.environ["TZ"] = "UTC"
import time  # noqa: E402

time.tzset()
WH = "/tmp/icefloe-exact-wh"
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "fixtures", "exact")
sys.path.insert(0, HERE)
from spark_session import make_spark  # noqa: E402  (tests/gen/spark_session.py)


def spark_session():
    return make_spark("icefloe-exact", WH, cores=2)


def enc(v):
    """fixtures/README.md's JSON encoding of a Spark value."""
    if v is None:
        return None
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:  # TimestampType comes back naive in session time (UTC)
            return v.strftime("%Y-%m-%dT%H:%M:%S.%f") + "+00:00"
        return v.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f") + "+00:00"
    if isinstance(v, datetime.date):
        return v.strftime("%Y-%m-%d")
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    if hasattr(v, "asDict"):
        return {k: enc(x) for k, x in v.asDict(recursive=False).items()}
    if isinstance(v, list):
        return [enc(x) for x in v]
    return v


def rows(spark, sql):
    df = spark.sql(sql)
    out = [{c: enc(r[c]) for c in df.columns} for r in df.collect()]
    out.sort(key=lambda r: (r.get("id") is None, r.get("id"), json.dumps(r)))
    return df.columns, out


def snapshots(spark, t):
    return [(r.snapshot_id, r.committed_at, r.operation)
            for r in spark.sql(f"SELECT * FROM x.db.{t}.snapshots ORDER BY committed_at").collect()]


class Recorder:
    """Collects the reads of one table into expected/<table>/."""

    def __init__(self, spark, table):
        self.spark, self.table, self.reads = spark, table, []

    def read(self, name, sql, **info):
        try:
            cols, rs = rows(self.spark, sql)
        except Exception as e:  # noqa: BLE001 - recorded: Spark cannot read every snapshot
            msg = str(e).split("\n")
            err = next((m for m in msg if "Exception" in m), msg[0])[:400]
            self.reads.append(dict(name=name, sql=sql, spark_read_error=err, **info))
            print(f"  {self.table}/{name}: Spark fails: {err}", flush=True)
            return
        d = os.path.join(OUT, "expected", self.table)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"{name}.jsonl"), "w") as f:
            for r in rs:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        self.reads.append(dict(name=name, sql=sql, columns=cols, rows=len(rs), **info))
        print(f"  {self.table}/{name}: {len(rs)} rows  ({sql})", flush=True)

    def every_snapshot(self, select):
        for sid, _, op in snapshots(self.spark, self.table):
            self.read(f"snapshot-{sid}", f"SELECT {select} FROM x.db.{self.table} VERSION AS OF {sid}",
                      selector={"snapshot": sid}, operation=op)

    def save(self, statements):
        d = os.path.join(OUT, "expected", self.table)
        with open(os.path.join(d, "manifest.json"), "w") as f:
            json.dump({"table": self.table, "table_dir": f"warehouse/db/{self.table}",
                       "statements": statements, "reads": self.reads}, f, indent=1)


def run(spark, stmts):
    for s in stmts:
        print("   ", s, flush=True)
        spark.sql(s)
    return list(stmts)


LINEAGE = "_row_id, _last_updated_sequence_number, *"


def lineage_v2_cow(spark):
    t = "lineage_v2_cow"
    st = run(spark, [
        f"CREATE TABLE x.db.{t} (id bigint, v string) USING iceberg TBLPROPERTIES ("
        "'format-version'='2', 'write.delete.mode'='copy-on-write', 'write.update.mode'='copy-on-write', "
        "'write.distribution-mode'='none')",
    ])
    # One INSERT, three writer tasks: three data files in one manifest (ids 0-9, 10-19, 20-29).
    (spark.range(0, 30, 1, 3).selectExpr("id", "concat('v', CAST(id AS string)) AS v")
     .writeTo(f"x.db.{t}").append())
    st.append("INSERT ids 0..29 as three files (spark.range(0, 30, 1, 3))")
    st += run(spark, [
        f"INSERT INTO x.db.{t} VALUES (100, 'v100'), (101, 'v101')",
        f"ALTER TABLE x.db.{t} SET TBLPROPERTIES ('format-version'='3')",
        f"DELETE FROM x.db.{t} WHERE id < 3",
        f"DELETE FROM x.db.{t} WHERE id = 15",
        f"INSERT INTO x.db.{t} VALUES (200, 'v200')",
    ])
    r = Recorder(spark, t)
    r.every_snapshot(LINEAGE)
    r.save(st)


def add_files_identity(spark):
    t = "add_files_identity"
    st = run(spark, [
        f"CREATE TABLE x.db.{t} (id bigint, name string, p int, region string) USING iceberg "
        "PARTITIONED BY (p, region) TBLPROPERTIES ('format-version'='2')",
    ])
    src = os.path.join(WH, "db", t, "hive_src")
    (spark.range(0, 12, 1, 1)
     .selectExpr("id", "concat('n', CAST(id AS string)) AS name", "CAST(id % 3 AS int) AS p",
                 "CASE WHEN id % 2 = 0 THEN 'eu' ELSE 'us west' END AS region")
     .write.partitionBy("p", "region").parquet(src))
    st.append(f"Hive-style Parquet under {src} (partitionBy p, region: the files hold id, name only)")
    st += run(spark, [
        f"CALL x.system.add_files(table => 'db.{t}', source_table => '`parquet`.`{src}`')",
        f"INSERT INTO x.db.{t} VALUES (100, 'n100', 1, 'eu')",
    ])
    r = Recorder(spark, t)
    r.every_snapshot("*")
    r.save(st)


def schema_rule(spark):
    t = "schema_rule"
    st = run(spark, [
        f"CREATE TABLE x.db.{t} (id bigint, a string) USING iceberg TBLPROPERTIES ('format-version'='3')",
        f"INSERT INTO x.db.{t} VALUES (1, 'a1'), (2, 'a2')",
        f"ALTER TABLE x.db.{t} CREATE TAG `before_b`",
        f"ALTER TABLE x.db.{t} CREATE BRANCH `dev`",
        f"INSERT INTO x.db.{t}.branch_dev VALUES (10, 'dev10')",
        f"INSERT INTO x.db.{t} VALUES (3, 'a3')",
    ])
    time.sleep(0.05)
    as_of = int(time.time() * 1000)
    time.sleep(0.05)
    st += run(spark, [
        f"ALTER TABLE x.db.{t} ADD COLUMN c int",
        f"ALTER TABLE x.db.{t} RENAME COLUMN a TO a_renamed",
    ])
    r = Recorder(spark, t)
    r.every_snapshot(LINEAGE)
    r.read("current", f"SELECT {LINEAGE} FROM x.db.{t}", selector={"current": True})
    r.read("branch-dev", f"SELECT {LINEAGE} FROM x.db.{t} VERSION AS OF 'dev'", selector={"ref": "dev"})
    r.read("branch-dev-ident", f"SELECT {LINEAGE} FROM x.db.{t}.branch_dev", selector={"ref": "dev"})
    r.read("branch-main", f"SELECT {LINEAGE} FROM x.db.{t} VERSION AS OF 'main'", selector={"ref": "main"})
    r.read("tag-before_b", f"SELECT {LINEAGE} FROM x.db.{t} VERSION AS OF 'before_b'",
           selector={"ref": "before_b"})
    ts = datetime.datetime.fromtimestamp(as_of / 1000, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
    r.read("as-of", f"SELECT {LINEAGE} FROM x.db.{t} TIMESTAMP AS OF '{ts}'", selector={"as_of_ms": as_of})
    r.save(st)


def promote_delete(spark):
    t = "promote_delete"
    st = run(spark, [
        f"CREATE TABLE x.db.{t} (id bigint, p int, v string) USING iceberg PARTITIONED BY (p) "
        "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', "
        "'write.update.mode'='merge-on-read')",
        f"INSERT INTO x.db.{t} VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 1, 'c'), (4, 2, 'd'), (5, 1, 'e')",
        f"ALTER TABLE x.db.{t} ALTER COLUMN p TYPE bigint",
        f"DELETE FROM x.db.{t} WHERE id = 3",
        f"INSERT INTO x.db.{t} VALUES (6, 3000000000, 'f')",
        f"DELETE FROM x.db.{t} WHERE id = 2",
    ])
    r = Recorder(spark, t)
    r.every_snapshot("*")
    r.read("current", f"SELECT * FROM x.db.{t}", selector={"current": True})
    r.save(st)


def meta_columns(spark):
    t = "meta_columns"
    st = run(spark, [
        f"CREATE TABLE x.db.{t} (id bigint, cat string, ts timestamp) USING iceberg PARTITIONED BY (cat) "
        "TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read', "
        "'write.distribution-mode'='none')",
        f"INSERT INTO x.db.{t} VALUES (1, 'a', TIMESTAMP '2024-01-01 10:00:00'), "
        "(2, 'b', TIMESTAMP '2024-01-02 10:00:00'), (3, 'a', TIMESTAMP '2024-01-03 10:00:00'), "
        "(4, NULL, TIMESTAMP '2024-01-04 10:00:00')",
        f"ALTER TABLE x.db.{t} ADD PARTITION FIELD days(ts)",
        f"INSERT INTO x.db.{t} VALUES (5, 'a', TIMESTAMP '2024-02-01 10:00:00'), "
        "(6, 'c', TIMESTAMP '2024-02-02 10:00:00')",
        f"DELETE FROM x.db.{t} WHERE id = 1",
    ])
    r = Recorder(spark, t)
    r.every_snapshot("_file, _pos, _spec_id, _partition, *")
    r.save(st)


def cast_edges(spark):
    t = "cast_edges"
    st = run(spark, [
        f"CREATE TABLE x.db.{t} (id bigint, d date, raw binary) USING iceberg TBLPROPERTIES ('format-version'='3')",
        f"INSERT INTO x.db.{t} VALUES (1, DATE '2024-01-01', X'6869'), (2, DATE '9999-12-31', X'ff00fe')",
    ])
    r = Recorder(spark, t)
    r.every_snapshot("*")
    r.save(st)


def main():
    only = set(sys.argv[1:])
    for g in only or ["."]:
        shutil.rmtree(os.path.join(WH, "db", g), ignore_errors=True)
    os.makedirs(os.path.join(WH, "db"), exist_ok=True)
    spark = spark_session()
    print("spark", spark.version, "iceberg", spark.sql("SELECT x.system.iceberg_version()").collect()[0][0])
    gens = [lineage_v2_cow, add_files_identity, schema_rule, promote_delete, meta_columns, cast_edges]
    for g in gens:
        if only and g.__name__ not in only:
            continue
        print(g.__name__, flush=True)
        shutil.rmtree(os.path.join(OUT, "expected", g.__name__), ignore_errors=True)
        g(spark)
        dest = os.path.join(OUT, "warehouse", "db", g.__name__)
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(os.path.join(WH, "db", g.__name__), dest,
                        ignore=shutil.ignore_patterns(".*.crc", "_SUCCESS"))
    spark.stop()
    print("exit 0")


if __name__ == "__main__":
    main()
