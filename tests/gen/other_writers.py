#!/usr/bin/env python3
"""Writes the tables of tests/fixtures/other_writers/ with writers other than Spark (PyIceberg
0.12.0, DuckDB 1.5.5 and 1.5.3 through an Iceberg REST catalog, and the Iceberg 1.10.2 Java API
where no installable writer makes a shape other writers are known to write), then reads every
snapshot back with Spark 3.5.9 + Iceberg 1.10.2 (Iceberg Java's generic reader where Spark
cannot) and stores the rows as JSON Lines in the fixture encoding (tests/fixtures/README.md).

    tests/gen/gen-other-writers      # installs what is missing, then runs every stage below

Stages (each runs in the Python environment of its writer, under ~/.cache/icefloe-writers):
  duckdb     DuckDB 1.5.5 + iceberg/avro/httpfs extensions 1.5.5, through the project's test REST
             catalog (tests/rest-catalog, started --writable over the warehouse; OAuth2 client
             credentials): format versions 2 and 3, merge-on-read DELETE/UPDATE/MERGE, partition
             transforms and partition evolution, schema evolution, a write default (v3).
  duckdb153  DuckDB 1.5.3 (its deletion vectors are written without a Puffin footer).
  pyiceberg  PyIceberg 0.12.0 + pyiceberg-core, SqlCatalog (its own metadata JSON): format
             versions 1 and 2, every partition transform, copy-on-write deletes, upsert, schema
             and partition evolution, initial-default/write-default in v2, add_files of
             Hive-style Parquet files that do not store the partition column.
  spark      the Iceberg Java API tables (Hive-style files with partition metrics, a v1 manifest
             list with loose counts), the crafted refusal table, then the expected rows of every
             table, the manifests, and the copy of each table into tests/fixtures/other_writers.

Every table is written under /tmp/icefloe-other-writers-wh (its paths are recorded there).
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import time

os.environ["TZ"] = "UTC"
time.tzset()

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "tests", "fixtures", "other_writers")
WH = "/tmp/icefloe-other-writers-wh"
# The Hadoop-layout copies Spark reads (PyIceberg names its metadata files 00000-<uuid>, which
# a Hadoop catalog does not find): each holds the table's last metadata file as v1.
SPARK_WH = "/tmp/icefloe-other-writers-spark"
ENVS = os.path.expanduser(os.environ.get("ICEFLOE_WRITERS_HOME", "~/.cache/icefloe-writers"))
GEN_HOME = os.environ.get("ICEBERG_GEN_HOME", os.path.expanduser("~/.cache/iceberg-gen"))
CLIENT_ID, CLIENT_SECRET = "icefloe-gen", "icefloe-gen-secret"

# Writer environments: pip requirements, installed into ENVS/<name> when missing.
DUCKDB_EXT = ["duckdb-extension-iceberg", "duckdb-extension-avro", "duckdb-extension-httpfs"]
ENV_PACKAGES = {
    "pyiceberg": ["pyiceberg[sql-sqlite,pyarrow]==0.12.0", "pyiceberg-core==0.11.0"],
    "duckdb155": ["duckdb==1.5.5"] + [f"{e}==1.5.5" for e in DUCKDB_EXT],
    "duckdb153": ["duckdb==1.5.3"] + [f"{e}==1.5.3" for e in DUCKDB_EXT],
}

# What each table is: writer, format version, the class of other-writer behaviour it covers.
TABLES = {}


def table(name, writer, fv, covers):
    TABLES[name] = {"writer": writer, "format_version": fv, "covers": covers}


table("duckdb_v2", "DuckDB 1.5.5 + iceberg extension 1.5.5 (REST catalog)", 2,
      "merge-on-read DELETE/UPDATE/MERGE as V2 position delete files; bucket/day/month/identity "
      "partitions and partition evolution; ADD/RENAME/DROP COLUMN")
table("duckdb_v3", "DuckDB 1.5.5 + iceberg extension 1.5.5 (REST catalog)", 3,
      "deletion vectors; delete manifests with a first_row_id; row lineage after UPDATE and MERGE "
      "(first-row-id, manifest list first_row_id and next-row-id as DuckDB keeps them); a column "
      "added with a DEFAULT; partition evolution")
table("duckdb153_v3", "DuckDB 1.5.3 + iceberg extension 1.5.3 (REST catalog)", 3,
      "deletion vectors in files without a Puffin footer (the blob alone at content_offset)")
table("pyiceberg_v1", "PyIceberg 0.12.0 (SqlCatalog)", 1,
      "format version 1: appends, copy-on-write delete and overwrite, schema evolution, identity "
      "partition then partition evolution")
table("pyiceberg_v2", "PyIceberg 0.12.0 + pyiceberg-core 0.11.0 (SqlCatalog)", 2,
      "every partition transform (identity, bucket, truncate on string/decimal/binary, year, month, "
      "day, hour after evolution); "
      "copy-on-write delete, upsert, schema and partition evolution")
table("pyiceberg_defaults", "PyIceberg 0.12.0 (SqlCatalog)", 2,
      "initial-default/write-default in format-version 2 metadata, top level and inside a struct")
table("pyiceberg_add_files", "PyIceberg 0.12.0 (SqlCatalog)", 2,
      "add_files of Hive-style Parquet files without the partition column (PyIceberg 0.12 records "
      "a null partition value and no metrics for it) next to files that store it")
for _t in ("boolean", "int", "long", "float", "double", "decimal", "binary", "timestamp",
           "timestamptz", "time", "nested"):
    table(f"hive_{_t}", "Iceberg 1.10.2 Java API over Hive-style Parquet files (pyarrow)", 2,
          "identity partition on " + ("two columns in nested directories (a string and a date)"
                                      if _t == "nested" else f"a {_t} column")
          + " that the data files do not store; the manifest records value/null counts and "
          "bounds for it from the partition value (the shape of PyIceberg's add_files with "
          "Hive-path inference, which no PyIceberg release has)")
table("v1_loose_counts", "Iceberg 1.10.2 Java API (FastAppend.appendManifest)", 1,
      "format version 1 manifest list whose added_files_count/added_rows_count disagree with "
      "its manifest (optional in v1; no installable writer writes them wrong)")

# Tables read only to be refused: no expected rows.
REFUSED = {
    "snapshot_id_overflow": {
        "writer": "PyIceberg 0.12.0, then a crafted metadata file",
        "format_version": 2,
        "covers": "a snapshot-id (9223372036854775808) outside the range of a long",
        "expect": "refused: the snapshot id is not a long (Iceberg Java cannot parse it either)",
    },
}


# ---- driver ------------------------------------------------------------------------------------
def env_python(name):
    """The interpreter of writer environment `name`, installed (only what is missing)."""
    venv = os.path.join(ENVS, name)
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    pkgs = ENV_PACKAGES[name]
    have = subprocess.run([py, "-m", "pip", "freeze"], capture_output=True, text=True, check=True).stdout
    have = {line.lower().replace("_", "-") for line in have.split()}
    missing = [p for p in pkgs if p.split("[")[0].split("==")[0].lower() + "==" + p.split("==")[1] not in have]
    if missing:
        print("installing", " ".join(missing), "into", venv, flush=True)
        subprocess.run([py, "-m", "pip", "install", "-q"] + missing, check=True)
    return py


def iceberg_classpath():
    return subprocess.run(["bash", os.path.join(ROOT, "scripts", "iceberg-jars")], check=True,
                          capture_output=True, text=True).stdout.strip()


def start_catalog(cp, state):
    """The project's test REST catalog over WH, writable, on 127.0.0.1; returns (port, process)."""
    classes = os.path.join(state, "classes")
    os.makedirs(classes, exist_ok=True)
    src = sorted(glob.glob(os.path.join(ROOT, "tests", "rest-catalog", "org", "apache", "iceberg", "rest", "*.java")))
    subprocess.run(["javac", "-nowarn", "-d", classes, "-cp", cp] + src, check=True)
    port_file = os.path.join(state, "port")
    if os.path.exists(port_file):
        os.remove(port_file)
    log = open(os.path.join(state, "catalog.log"), "w")
    proc = subprocess.Popen(
        ["java", "-Xmx256m", "-cp", f"{classes}:{cp}", "org.apache.iceberg.rest.IcefloeTestCatalogServer",
         "--warehouse", WH, "--client-id", CLIENT_ID, "--client-secret", CLIENT_SECRET,
         "--writable", "true", "--port-file", port_file], stdout=log, stderr=log)
    for _ in range(300):
        if os.path.exists(port_file):
            return open(port_file).read().strip(), proc
        if proc.poll() is not None:
            raise SystemExit(f"the REST catalog exited; see {log.name}")
        time.sleep(0.1)
    raise SystemExit("the REST catalog did not start")


def driver():
    shutil.rmtree(WH, ignore_errors=True)
    os.makedirs(os.path.join(WH, "db"))
    cp = iceberg_classpath()
    state = os.path.join(ENVS, "catalog")
    os.makedirs(state, exist_ok=True)
    port, proc = start_catalog(cp, state)
    me = os.path.abspath(__file__)
    try:
        subprocess.run([env_python("duckdb155"), me, "duckdb", port], check=True)
        subprocess.run([env_python("duckdb153"), me, "duckdb153", port], check=True)
    finally:
        proc.terminate()
        proc.wait()
    subprocess.run([env_python("pyiceberg"), me, "pyiceberg"], check=True)
    spark_py = os.path.join(GEN_HOME, "venv", "bin", "python")
    subprocess.run(["nice", "-n", "10", spark_py, me, "spark"], check=True)


# ---- DuckDB ------------------------------------------------------------------------------------
def duckdb_connect(port):
    import duckdb
    import site
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    sp = site.getsitepackages()[0]
    for e in ("avro", "httpfs", "iceberg"):
        f = glob.glob(f"{sp}/duckdb_extension_{e}/extensions/*/{e}.duckdb_extension")[0]
        con.execute(f"LOAD '{f}'")
    url = f"http://127.0.0.1:{port}"
    con.execute(f"CREATE SECRET s (TYPE iceberg, CLIENT_ID '{CLIENT_ID}', CLIENT_SECRET '{CLIENT_SECRET}', "
                f"ENDPOINT '{url}')")
    con.execute(f"ATTACH 'wh' AS c (TYPE iceberg, SECRET s, ENDPOINT '{url}', ACCESS_DELEGATION_MODE 'none')")
    return con


def run_statements(con, name, statements):
    done = []
    for s in statements:
        s = " ".join(s.split())
        print(f"  {name}: {s[:110]}", flush=True)
        con.execute(s)
        done.append(s)
    with open(os.path.join(WH, "db", name, "statements.json"), "w") as out:
        json.dump(done, out, indent=1)


def duckdb_tables(port):
    import duckdb
    con = duckdb_connect(port)
    con.execute("CREATE SCHEMA IF NOT EXISTS c.db")
    for fv in (2, 3):
        name = f"duckdb_v{fv}"
        t = f"c.db.{name}"
        default = " DEFAULT 7" if fv == 3 else ""
        run_statements(con, name, [
            f"CREATE TABLE {t} (id BIGINT, name VARCHAR, ts TIMESTAMP, d DATE, amount DECIMAL(9,2), flag BOOLEAN) "
            f"PARTITIONED BY (bucket(4, id), day(ts)) WITH ('format-version'='{fv}')",
            f"""INSERT INTO {t} VALUES (1, 'one', TIMESTAMP '2024-01-01 10:00:00', DATE '2024-01-01', 1.50, true),
                (2, 'two', TIMESTAMP '2024-01-01 11:00:00', DATE '2024-01-02', -2.25, false),
                (3, NULL, TIMESTAMP '2024-01-02 00:00:00', NULL, NULL, NULL),
                (4, 'vier ünï', TIMESTAMP '1969-12-31 23:59:59.999999', DATE '1969-12-31', 99999.99, true)""",
            f"INSERT INTO {t} SELECT range + 10, 'gen' || range, TIMESTAMP '2024-02-01 00:00:00' + "
            f"INTERVAL (range) HOUR, DATE '2024-02-01' + CAST(range AS INTEGER), range / 4, range % 2 = 0 FROM range(12)",
            f"DELETE FROM {t} WHERE id IN (2, 11, 15)",
            f"UPDATE {t} SET name = 'updated', amount = amount + 100 WHERE id IN (1, 12)",
            f"""MERGE INTO {t} AS t USING (SELECT * FROM (VALUES (3, 'three'), (30, 'new')) AS s(id, name)) AS s
                ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = s.name
                WHEN NOT MATCHED THEN INSERT (id, name, ts) VALUES (s.id, s.name, TIMESTAMP '2024-03-01 00:00:00')""",
            f"MERGE INTO {t} AS t USING (SELECT 13 AS id) AS s ON t.id = s.id WHEN MATCHED THEN DELETE",
            f"ALTER TABLE {t} ADD COLUMN extra INTEGER{default}",
            f"ALTER TABLE {t} RENAME COLUMN name TO label",
            f"ALTER TABLE {t} DROP COLUMN flag",
            f"INSERT INTO {t} (id, label, ts, d, amount) VALUES (40, 'after evolution', TIMESTAMP '2024-04-01 12:00:00', "
            f"DATE '2024-04-01', 4.00)",
            f"INSERT INTO {t} VALUES (41, 'explicit', TIMESTAMP '2024-04-02 00:00:00', DATE '2024-04-02', 4.10, 41)",
            f"ALTER TABLE {t} SET PARTITIONED BY (month(d), label)",
            f"INSERT INTO {t} VALUES (50, 'p2', TIMESTAMP '2024-05-01 00:00:00', DATE '2024-05-01', 5.00, 50), "
            f"(51, 'p2', TIMESTAMP '2024-05-02 00:00:00', DATE '2024-05-02', 5.10, NULL)",
            f"DELETE FROM {t} WHERE id IN (10, 50)",
            f"UPDATE {t} SET extra = -1 WHERE id IN (4, 51)",
        ])
    print("duckdb", duckdb.__version__, flush=True)


def duckdb153_tables(port):
    con = duckdb_connect(port)
    con.execute("CREATE SCHEMA IF NOT EXISTS c.db")
    name = "duckdb153_v3"
    t = f"c.db.{name}"
    run_statements(con, name, [
        f"CREATE TABLE {t} (id BIGINT, v VARCHAR) WITH ('format-version'='3')",
        f"INSERT INTO {t} SELECT range, 'v' || range FROM range(20)",
        f"DELETE FROM {t} WHERE id % 5 = 1",
        f"UPDATE {t} SET v = v || '!' WHERE id IN (2, 7)",
        f"INSERT INTO {t} VALUES (100, 'late')",
        f"DELETE FROM {t} WHERE id IN (3, 100)",
    ])


# ---- PyIceberg ---------------------------------------------------------------------------------
def pyiceberg_tables():
    import datetime
    import decimal
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import EqualTo, In, LessThan
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import (BucketTransform, DayTransform, HourTransform, IdentityTransform,
                                      MonthTransform, TruncateTransform, YearTransform)
    from pyiceberg.types import (BinaryType, DateType, DecimalType, DoubleType, IntegerType, LongType,
                                 NestedField, StringType, StructType, TimestampType, TimestamptzType)

    pywh = os.path.join(WH, "pyiceberg")
    os.makedirs(pywh, exist_ok=True)
    cat = SqlCatalog("gen", uri=f"sqlite:///{pywh}/catalog.db", warehouse=f"file://{pywh}")
    cat.create_namespace("db")
    log = {}

    def step(name, what, fn):
        print(f"  {name}: {what}", flush=True)
        log.setdefault(name, []).append(what)
        fn()

    def ts(s):
        return datetime.datetime.fromisoformat(s)

    def tstz(s):
        return datetime.datetime.fromisoformat(s).replace(tzinfo=datetime.timezone.utc)

    # pyiceberg_v1 ------------------------------------------------------------------------------
    s1 = Schema(NestedField(1, "id", LongType()), NestedField(2, "name", StringType()),
                NestedField(3, "amount", DecimalType(10, 2)), NestedField(4, "ts", TimestampType()))
    t = cat.create_table("db.pyiceberg_v1", schema=s1,
                         partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "name")),
                         properties={"format-version": "1"})
    arrow1 = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.decimal128(10, 2)),
                        ("ts", pa.timestamp("us"))])

    def rows1(ids, name):
        return pa.Table.from_pylist([{"id": i, "name": name, "amount": decimal.Decimal(i) / 4,
                                      "ts": ts("2024-01-01T00:00:00") + datetime.timedelta(hours=i)} for i in ids],
                                    schema=arrow1)

    step("pyiceberg_v1", "append ids 1-4 (name a)", lambda: t.append(rows1([1, 2, 3, 4], "a")))
    step("pyiceberg_v1", "append ids 5-7 (name b) and 8 (name NULL)",
         lambda: t.append(pa.concat_tables([rows1([5, 6, 7], "b"), rows1([8], None)])))
    step("pyiceberg_v1", "delete id = 2 (copy-on-write)", lambda: t.delete(EqualTo("id", 2)))
    step("pyiceberg_v1", "overwrite name = 'b' with ids 60, 61",
         lambda: t.overwrite(rows1([60, 61], "b"), overwrite_filter=EqualTo("name", "b")))
    step("pyiceberg_v1", "add column note string; rename amount to price",
         lambda: t.update_schema().add_column("note", StringType()).rename_column("amount", "price").commit())
    arrow1b = pa.schema([("id", pa.int64()), ("name", pa.string()), ("price", pa.decimal128(10, 2)),
                         ("ts", pa.timestamp("us")), ("note", pa.string())])
    step("pyiceberg_v1", "partition evolution: add day(ts)",
         lambda: t.update_spec().add_field("ts", DayTransform(), "ts_day").commit())
    step("pyiceberg_v1", "append ids 70, 71 with note", lambda: t.append(pa.Table.from_pylist(
        [{"id": 70, "name": "c", "price": decimal.Decimal("7.00"), "ts": ts("2024-03-01T10:00:00"), "note": "n70"},
         {"id": 71, "name": "c", "price": None, "ts": None, "note": None}], schema=arrow1b)))
    step("pyiceberg_v1", "delete id < 4", lambda: t.delete(LessThan("id", 4)))

    # pyiceberg_v2: every transform -------------------------------------------------------------
    s2 = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "name", StringType()),
                NestedField(3, "n", IntegerType()), NestedField(4, "ts", TimestampType()),
                NestedField(5, "tstz", TimestamptzType()), NestedField(6, "d", DateType()),
                NestedField(7, "amount", DecimalType(9, 2)), NestedField(8, "bin", BinaryType()),
                identifier_field_ids=[1])
    spec2 = PartitionSpec(
        PartitionField(2, 1000, TruncateTransform(2), "name_trunc"),
        PartitionField(1, 1001, BucketTransform(4), "id_bucket"),
        PartitionField(3, 1002, IdentityTransform(), "n"),
        PartitionField(6, 1003, YearTransform(), "d_year"),
        PartitionField(4, 1004, MonthTransform(), "ts_month"),
        PartitionField(5, 1005, DayTransform(), "tstz_day"),
        PartitionField(7, 1006, TruncateTransform(100), "amount_trunc"),
        PartitionField(8, 1007, TruncateTransform(2), "bin_trunc"),
    )
    t2 = cat.create_table("db.pyiceberg_v2", schema=s2, partition_spec=spec2,
                          properties={"format-version": "2"})
    arrow2 = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("n", pa.int32()),
                        ("ts", pa.timestamp("us")), ("tstz", pa.timestamp("us", tz="UTC")), ("d", pa.date32()),
                        ("amount", pa.decimal128(9, 2)), ("bin", pa.binary())])

    def rows2(specs):
        out = []
        for i, name, when in specs:
            out.append({"id": i, "name": name, "n": None if name is None else i * 3,
                        "ts": None if when is None else ts(when), "tstz": None if when is None else tstz(when),
                        "d": None if when is None else ts(when).date(),
                        "amount": None if when is None else decimal.Decimal(i * 37) / 4,
                        "bin": None if name is None else name.encode()})
        return pa.Table.from_pylist(out, schema=arrow2)

    step("pyiceberg_v2", "append 5 rows", lambda: t2.append(rows2([
        (1, "alpha", "2024-01-01T10:15:00"), (2, "alpha", "2024-01-01T10:45:00"), (3, "beta", "2023-12-31T23:59:59.999999"),
        (4, "gamma ünï", "1969-12-31T23:00:00"), (5, None, None)])))
    step("pyiceberg_v2", "delete id = 2 (copy-on-write)", lambda: t2.delete(EqualTo("id", 2)))
    step("pyiceberg_v2", "upsert ids 3 (changed) and 6 (new) on id", lambda: t2.upsert(rows2([
        (3, "beta2", "2024-06-01T00:00:00"), (6, "delta", "2025-02-03T04:05:06")])))
    step("pyiceberg_v2", "add column extra long; rename n to num",
         lambda: t2.update_schema().add_column("extra", LongType()).rename_column("n", "num").commit())
    step("pyiceberg_v2", "partition evolution: remove ts_month and bin_trunc, add hour(ts) and bucket(2, extra)",
         lambda: t2.update_spec().remove_field("ts_month").remove_field("bin_trunc")
         .add_field("ts", HourTransform(), "ts_hour").add_field("extra", BucketTransform(2), "extra_bucket").commit())
    arrow2b = pa.schema(list(arrow2)[:2] + [pa.field("num", pa.int32())] + list(arrow2)[3:]
                        + [pa.field("extra", pa.int64())])
    step("pyiceberg_v2", "append ids 7, 8 with extra", lambda: t2.append(pa.Table.from_pylist([
        {"id": 7, "name": "eps", "num": 7, "ts": ts("2024-07-07T07:07:07"), "tstz": tstz("2024-07-07T07:07:07"),
         "d": datetime.date(2024, 7, 7), "amount": decimal.Decimal("7.77"), "bin": b"\x00\xff", "extra": 70},
        {"id": 8, "name": "alpha", "num": None, "ts": None, "tstz": None, "d": None, "amount": None, "bin": None,
         "extra": None}], schema=arrow2b)))
    step("pyiceberg_v2", "delete id in (1, 7)", lambda: t2.delete(In("id", [1, 7])))

    # pyiceberg_defaults ------------------------------------------------------------------------
    s3 = Schema(NestedField(1, "id", LongType()), NestedField(2, "s", StructType(NestedField(3, "a", IntegerType()))))
    t3 = cat.create_table("db.pyiceberg_defaults", schema=s3, properties={"format-version": "2"})
    step("pyiceberg_defaults", "append ids 1-3 (s NULL for id 3)", lambda: t3.append(pa.Table.from_pylist(
        [{"id": 1, "s": {"a": 10}}, {"id": 2, "s": {"a": None}}, {"id": 3, "s": None}],
        schema=pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int32())]))]))))
    step("pyiceberg_defaults", "add columns c_int default 42, c_str default 'dflt', c_dbl default 2.5, "
         "c_date default 2024-02-29 and s.b default 'inner'",
         lambda: t3.update_schema().add_column("c_int", IntegerType(), default_value=42)
         .add_column("c_str", StringType(), default_value="dflt")
         .add_column("c_dbl", DoubleType(), default_value=2.5)
         .add_column("c_date", DateType(), default_value=datetime.date(2024, 2, 29))
         .add_column(("s", "b"), StringType(), default_value="inner").commit())
    full3 = pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int32()), ("b", pa.string())])),
                       ("c_int", pa.int32()), ("c_str", pa.string()), ("c_dbl", pa.float64()), ("c_date", pa.date32())])
    step("pyiceberg_defaults", "append id 4 with values, id 5 with NULLs", lambda: t3.append(pa.Table.from_pylist(
        [{"id": 4, "s": {"a": 4, "b": "four"}, "c_int": 4, "c_str": "x", "c_dbl": 0.5, "c_date": datetime.date(2000, 1, 1)},
         {"id": 5, "s": {"a": 5, "b": None}, "c_int": None, "c_str": None, "c_dbl": None, "c_date": None}],
        schema=full3)))
    step("pyiceberg_defaults", "append id 6 without the new columns (PyIceberg writes them as NULL)",
         lambda: t3.append(pa.Table.from_pylist([{"id": 6, "s": {"a": 6}}],
                                                schema=pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int32())]))]))))

    # pyiceberg_add_files -----------------------------------------------------------------------
    s4 = Schema(NestedField(1, "id", LongType()), NestedField(2, "v", StringType()), NestedField(3, "p", IntegerType()))
    t4 = cat.create_table("db.pyiceberg_add_files", schema=s4,
                          partition_spec=PartitionSpec(PartitionField(3, 1000, IdentityTransform(), "p")),
                          properties={"format-version": "2"})
    data4 = t4.location().replace("file://", "") + "/data"

    def hive(p, ids, with_p):
        d = f"{data4}/p={p}"
        os.makedirs(d, exist_ok=True)
        cols = {"id": pa.array(ids, pa.int64()), "v": pa.array([f"v{i}" for i in ids])}
        if with_p:
            cols["p"] = pa.array([p] * len(ids), pa.int32())
        f = f"{d}/hive-{'with' if with_p else 'without'}-p-{ids[0]}.parquet"
        pq.write_table(pa.table(cols), f)
        return "file://" + f

    step("pyiceberg_add_files", "add_files p=1/ (ids 1, 2) and p=2/ (id 3) without the column p",
         lambda: t4.add_files([hive(1, [1, 2], False), hive(2, [3], False)]))
    step("pyiceberg_add_files", "add_files p=3/ (ids 4, 5) storing p",
         lambda: t4.add_files([hive(3, [4, 5], True)]))
    step("pyiceberg_add_files", "append id 6 (p 1)", lambda: t4.append(pa.Table.from_pylist(
        [{"id": 6, "v": "v6", "p": 1}], schema=pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.int32())]))))
    step("pyiceberg_add_files", "delete id = 2 (copy-on-write of a Hive-style file)", lambda: t4.delete(EqualTo("id", 2)))

    # snapshot_id_overflow (crafted from a one-snapshot PyIceberg table) -----------------------
    t5 = cat.create_table("db.snapshot_id_overflow", schema=Schema(NestedField(1, "id", LongType())),
                          properties={"format-version": "2"})
    t5.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    log["snapshot_id_overflow"] = ["append ids 1, 2", "crafted: the snapshot's id rewritten to 9223372036854775808"]
    meta = t5.metadata_location.replace("file://", "")
    sid = str(cat.load_table("db.snapshot_id_overflow").metadata.current_snapshot_id)
    text = open(meta).read()
    assert text.count(sid) >= 3, text
    crafted = os.path.join(os.path.dirname(meta), "00002-crafted-snapshot-id.metadata.json")
    with open(crafted, "w") as out:
        out.write(text.replace(sid, "9223372036854775808"))

    for name, steps in log.items():
        with open(os.path.join(pywh, f"{name}.statements.json"), "w") as out:
            json.dump(steps, out, indent=1)
    import pyiceberg
    print("pyiceberg", pyiceberg.__version__, flush=True)


# ---- Spark: Java API tables, expected rows, fixtures ------------------------------------------
def spark_stage():
    sys.path.insert(0, HERE)
    from gen_formats import spark_session
    spark = spark_session(warehouse=SPARK_WH, jars=[helper_jar(iceberg_classpath().split(":"))])
    jvm = spark._jvm
    catalog = jvm.org.apache.iceberg.hadoop.HadoopCatalog(spark._jsc.hadoopConfiguration(), WH)
    java_tables(spark, catalog)
    shutil.rmtree(SPARK_WH, ignore_errors=True)
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(os.path.join(OUT, "expected"))
    index = []
    for name in TABLES:
        print(time.strftime("%H:%M:%S"), "reading", name, flush=True)
        index.append(dump(spark, name))
    refused = [dump_refused(name) for name in REFUSED]
    with open(os.path.join(OUT, "index.json"), "w") as out:
        json.dump({"warehouse_original_path": WH, "tables": index, "refused": refused}, out, indent=1)
    spark.stop()


def helper_jar(cp):
    import tempfile
    d = tempfile.mkdtemp(prefix="icefloe-other-writers-")
    subprocess.run(["javac", "-nowarn", "-cp", ":".join(cp), "-d", d, os.path.join(HERE, "java", "OtherWritersGen.java")],
                   check=True)
    jar = os.path.join(d, "other-writers-gen.jar")
    classes = [os.path.basename(c) for c in glob.glob(os.path.join(d, "OtherWritersGen*.class"))]
    subprocess.run(["jar", "cf", jar] + [x for c in classes for x in ("-C", d, c)], check=True)
    return jar


# hive_<type>: (Iceberg type, the two partition values as a Hive path spells them).
HIVE_TYPES = {
    "boolean": ("BooleanType", ["true", "false"]),
    "int": ("IntegerType", ["-7", "2147483647"]),
    "long": ("LongType", ["-9000000000", "42"]),
    "float": ("FloatType", ["1.5", "-0.25"]),
    "double": ("DoubleType", ["3.141592653589793", "-1.0E300"]),
    "decimal": ("decimal", ["12.34", "-0.01"]),
    "binary": ("BinaryType", ["abc", "x%20y"]),
    "timestamp": ("TimestampType.withoutZone", ["2024-01-15T12%3A34%3A56.789012", "1969-12-31T23%3A59%3A59.999999"]),
    "timestamptz": ("TimestampType.withZone", ["2024-01-15T12%3A34%3A56.789012%2B00%3A00",
                                               "1970-01-01T00%3A00%3A00%2B00%3A00"]),
    "time": ("TimeType", ["12%3A34%3A56.789012", "00%3A00%3A00"]),
}
HIVE_NESTED = [("eu", "2024-01-01"), ("eu", "2024-01-02"), ("us%20west", "2024-01-01")]


def java_table_files():
    """The Parquet files of the Java API tables (written with pyarrow, in the PyIceberg
    environment): per table, (partition path, file path, ids). Hive-style files store only id
    and v, without field ids; v1_loose_counts' files have field ids."""
    files = {}
    for suffix, (_, values) in HIVE_TYPES.items():
        files[f"hive_{suffix}"] = [(f"p={v}", f"{WH}/db/hive_{suffix}/data/p={v}/part-{k}.parquet", [10 * k + 1, 10 * k + 2])
                                   for k, v in enumerate(values)]
    files["hive_nested"] = [(f"region={r}/day={d}", f"{WH}/db/hive_nested/data/region={r}/day={d}/part-{k}.parquet",
                             [10 * k + 1, 10 * k + 2]) for k, (r, d) in enumerate(HIVE_NESTED)]
    files["v1_loose_counts"] = [("", f"{WH}/db/v1_loose_counts/data/{n}.parquet", ids)
                                for n, ids in (("a", [1, 2, 3]), ("b", [4, 5]), ("c", [6]), ("d", [7, 8]))]
    return files


def write_java_table_files():
    import pyarrow as pa
    import pyarrow.parquet as pq
    for name, files in java_table_files().items():
        for _, path, ids in files:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if name == "v1_loose_counts":
                schema = pa.schema([pa.field("id", pa.int64(), metadata={"PARQUET:field_id": "1"}),
                                    pa.field("v", pa.string(), metadata={"PARQUET:field_id": "2"})])
            else:
                schema = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.string())])
            pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids]}, schema=schema),
                           path)


def java_tables(spark, catalog):
    """The tables built with the Iceberg Java API (see TABLES), over java_table_files()."""
    jvm = spark._jvm
    T = jvm.org.apache.iceberg.types.Types
    gen = jvm.OtherWritersGen
    files = java_table_files()

    def jlist(xs):
        lst = jvm.java.util.ArrayList()
        for x in xs:
            lst.add(x)
        return lst

    def create(name, fields, part_cols, props):
        schema = jvm.org.apache.iceberg.Schema(jlist(fields))
        b = jvm.org.apache.iceberg.PartitionSpec.builderFor(schema)
        for c in part_cols:
            b = b.identity(c)
        m = jvm.java.util.HashMap()
        for k, v in props.items():
            m.put(k, v)
        # A rerun of this stage starts the table again over the same files.
        shutil.rmtree(os.path.join(WH, "db", name, "metadata"), ignore_errors=True)
        return catalog.createTable(jvm.org.apache.iceberg.catalog.TableIdentifier.parse(f"db.{name}"), schema,
                                   b.build(), m)

    def steps_file(name, steps):
        with open(os.path.join(WH, "db", name, "statements.json"), "w") as out:
            json.dump(steps, out, indent=1)

    def id_v():
        return [T.NestedField.optional(1, "id", T.LongType.get()), T.NestedField.optional(2, "v", T.StringType.get())]

    def hive_appends(name, t, steps):
        for part, path, ids in files[name]:
            t.newAppend().appendFile(gen.hiveFile(t, path, part)).commit()
            steps.append(f"append Hive-style file data/{part}/{os.path.basename(path)} (ids {ids}; "
                         "the partition columns are not stored in it)")
        steps_file(name, steps)

    for suffix, (tname, _) in HIVE_TYPES.items():
        name = f"hive_{suffix}"
        if tname == "decimal":
            ptype = T.DecimalType.of(9, 2)
        elif "." in tname:
            cls, meth = tname.split(".")
            ptype = getattr(getattr(T, cls), meth)()
        else:
            ptype = getattr(T, tname).get()
        t = create(name, id_v() + [T.NestedField.optional(3, "p", ptype)], ["p"], {"format-version": "2"})
        gen.setNameMapping(t)
        hive_appends(name, t, [f"create table (id long, v string, p {ptype.toString()}) partitioned by identity(p)",
                               "set schema.name-mapping.default"])

    t = create("hive_nested", id_v() + [T.NestedField.optional(3, "region", T.StringType.get()),
                                        T.NestedField.optional(4, "day", T.DateType.get())],
               ["region", "day"], {"format-version": "2"})
    gen.setNameMapping(t)
    hive_appends("hive_nested", t, ["create table (id long, v string, region string, day date) partitioned by "
                                    "identity(region), identity(day)", "set schema.name-mapping.default"])

    t = create("v1_loose_counts", id_v(), [], {"format-version": "1",
                                               "compatibility.snapshot-id-inheritance.enabled": "true"})
    steps = ["create table (id long, v string), format-version 1, compatibility.snapshot-id-inheritance.enabled"]

    def data_file(path):
        inp = t.io().newInputFile(path)
        metrics = jvm.org.apache.iceberg.parquet.ParquetUtil.fileMetrics(
            inp, jvm.org.apache.iceberg.MetricsConfig.forTable(t))
        return (jvm.org.apache.iceberg.DataFiles.builder(t.spec()).withPath(path)
                .withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET)
                .withFileSizeInBytes(inp.getLength()).withMetrics(metrics).build())

    a, b, c, d = [data_file(path) for _, path, _ in files["v1_loose_counts"]]
    gen.appendWithCounts(t, jlist([a, b]), 1, 3)
    steps.append("append a.parquet (3 rows) and b.parquet (2 rows) in one manifest listed with "
                 "added_files_count 1, added_rows_count 3")
    t.newAppend().appendFile(c).commit()
    steps.append("append c.parquet (1 row) with Iceberg's own counts")
    gen.appendWithCounts(t, jlist([d]), 2, 9)
    steps.append("append d.parquet (2 rows) in a manifest listed with added_files_count 2, added_rows_count 9")
    steps_file("v1_loose_counts", steps)


def spark_view(name, meta_file):
    """A Hadoop-layout directory whose only metadata file is a copy of `meta_file`."""
    d = os.path.join(SPARK_WH, "db", name, "metadata")
    os.makedirs(d, exist_ok=True)
    shutil.copy(meta_file, os.path.join(d, "v1.metadata.json"))
    with open(os.path.join(d, "version-hint.text"), "w") as out:
        out.write("1")


def table_dir(name):
    pyi = os.path.join(WH, "pyiceberg", "db", name)
    return pyi if os.path.isdir(pyi) else os.path.join(WH, "db", name)


def last_metadata(tdir):
    files = sorted(glob.glob(os.path.join(tdir, "metadata", "*.metadata.json")))
    hint = os.path.join(tdir, "metadata", "version-hint.text")
    if os.path.exists(hint):
        return os.path.join(tdir, "metadata", f"v{open(hint).read().strip()}.metadata.json")
    return files[-1]


def steps_of(name, tdir):
    for f in (os.path.join(tdir, "statements.json"), os.path.join(WH, "pyiceberg", f"{name}.statements.json")):
        if os.path.exists(f):
            return json.load(open(f))
    return []


def dump(spark, name):
    # Spark's read of a snapshot in the fixture encoding, as the formats tables use it.
    from gen_formats import snapshot_rows
    tdir = table_dir(name)
    meta_file = last_metadata(tdir)
    meta = json.load(open(meta_file))
    spark_view(name, meta_file)
    exp_dir = os.path.join(OUT, "expected", name)
    os.makedirs(exp_dir, exist_ok=True)
    snaps = []
    jt = None
    for s in sorted(meta.get("snapshots", []), key=lambda s: s["sequence-number"] if "sequence-number" in s
                    else s["timestamp-ms"]):
        sid = s["snapshot-id"]
        entry = {"snapshot_id": sid, "parent_snapshot_id": s.get("parent-snapshot-id"),
                 "sequence_number": s.get("sequence-number"), "operation": s["summary"]["operation"],
                 "schema_id": s.get("schema-id"), "first_row_id": s.get("first-row-id"),
                 "added_rows": s.get("added-rows"), "summary": s["summary"], "refs": []}
        try:
            cols, rows = snapshot_rows(spark, name, sid)
            entry["expected_from"] = "spark"
        except Exception as e:  # noqa: BLE001  Spark cannot read it: Iceberg Java's generic reader
            entry["spark_read_error"] = str(e).splitlines()[0][:300]
            if jt is None:
                jt = spark._jvm.org.apache.iceberg.hadoop.HadoopTables(spark._jsc.hadoopConfiguration()).load(
                    os.path.join(SPARK_WH, "db", name))
            rows = [json.loads(r, object_pairs_hook=dict) for r in spark._jvm.OtherWritersGen.genericRows(jt, sid)]
            schema = next(x for x in meta["schemas"] if x["schema-id"] == s.get("schema-id", meta.get("current-schema-id")))
            cols = ["_row_id", "_last_updated_sequence_number"] + [f["name"] for f in schema["fields"]]
            rows.sort(key=lambda r: (r.get("id") is None, r.get("id") or 0, json.dumps(r)))
            entry["expected_from"] = "iceberg-java-generics"
        f = f"expected/{name}/{sid}.jsonl"
        with open(os.path.join(OUT, f), "w") as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
        entry.update({"expected_columns": cols, "expected_file": f, "rows": len(rows)})
        snaps.append(entry)
    for ref, r in meta.get("refs", {}).items():
        for e in snaps:
            if e["snapshot_id"] == r["snapshot-id"]:
                e["refs"].append(f"{r['type']}:{ref}")
    info = TABLES[name]
    manifest = {"table": name, "table_dir": f"warehouse/db/{name}", "original_location": meta["location"],
                "format_version": meta["format-version"], "writer": info["writer"], "covers": info["covers"],
                "current_metadata": os.path.relpath(meta_file, tdir), "statements": steps_of(name, tdir),
                "snapshots": snaps}
    with open(os.path.join(exp_dir, "manifest.json"), "w") as out:
        json.dump(manifest, out, indent=1, ensure_ascii=False)
    copy_table(tdir, os.path.join(OUT, "warehouse", "db", name))
    assert meta["format-version"] == info["format_version"], (name, meta["format-version"])
    return {"table": name, "format_version": meta["format-version"], "snapshots": len(snaps),
            "writer": info["writer"], "manifest": f"expected/{name}/manifest.json"}


def copy_table(src, dst):
    # Hadoop's .crc side files and the generator's notes are not part of the table.
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.crc", "statements.json"))


def dump_refused(name):
    tdir = table_dir(name)
    copy_table(tdir, os.path.join(OUT, "warehouse", "db", name))
    info = REFUSED[name]
    return {"table": name, "table_dir": f"warehouse/db/{name}", "format_version": info["format_version"],
            "writer": info["writer"], "covers": info["covers"], "expect": info["expect"],
            "statements": steps_of(name, tdir)}


if __name__ == "__main__":
    stage = sys.argv[1] if len(sys.argv) > 1 else ""
    if stage == "duckdb":
        duckdb_tables(sys.argv[2])
    elif stage == "duckdb153":
        duckdb153_tables(sys.argv[2])
    elif stage == "pyiceberg":
        pyiceberg_tables()
        write_java_table_files()
    elif stage == "spark":
        spark_stage()
    else:
        driver()
