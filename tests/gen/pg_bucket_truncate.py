#!/usr/bin/env python3
"""Writes tests/fixtures/pg_edge/bucket_parts and truncate_parts: small format-version 2
tables partitioned by bucket and truncate transforms, for the core's partition pruning of
those transforms and the FDW's pruning tests. 40 rows each:

  bucket_parts:   id bigint, s string, d decimal(9,2), dt date, PARTITIONED BY
                  (bucket(4, id), bucket(3, s), bucket(2, d), bucket(2, dt))
  truncate_parts: id bigint, s string, d decimal(9,2), n int, b binary, PARTITIONED BY
                  (truncate(2, s), truncate(100, d), truncate(10, n), truncate(2, b))

Rows (i = 0..39): s = one of 'apple', 'apricot', 'banana', 'blueberry', 'cherry' plus i,
d = i * 0.37, dt = 2024-01-01 + i days, n = i * 7 - 100, b = bytes of 'b' + i, plus one row of
NULLs in every column but id. Spark 3.5.9 + Iceberg 1.10.2 writes them (set up by
`benches/bench-table/make-bench-table --setup-only`, in ~/.cache/iceberg-gen) and reads them back into
tests/fixtures/pg_edge/<table>.jsonl (b as hex).

    TZ=UTC nice ~/.cache/iceberg-gen/venv/bin/python tests/gen/pg_bucket_truncate.py
"""
import json
import os
import shutil
import tempfile

import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spark_session import make_spark  # noqa: E402  (tests/gen/spark_session.py)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fixtures", "pg_edge")
ROWS = ("SELECT id, concat(element_at(array('apple', 'apricot', 'banana', 'blueberry', 'cherry'), "
        "CAST(id % 5 AS int) + 1), CAST(id AS string)) AS s, CAST(id * 0.37 AS decimal(9,2)) AS d, {extra} "
        "FROM range(0, 40, 1, 1)")
TABLES = {
    "bucket_parts": ("id bigint, s string, d decimal(9,2), dt date",
                     "bucket(4, id), bucket(3, s), bucket(2, d), bucket(2, dt)",
                     "date_add(DATE '2024-01-01', CAST(id AS int)) AS dt",
                     "(40, NULL, NULL, NULL)"),
    "truncate_parts": ("id bigint, s string, d decimal(9,2), n int, b binary",
                       "truncate(2, s), truncate(100, d), truncate(10, n), truncate(2, b)",
                       "CAST(id * 7 - 100 AS int) AS n, CAST(concat('b', CAST(id AS string)) AS binary) AS b",
                       "(40, NULL, NULL, NULL, NULL)"),
}


def main():
    wh = tempfile.mkdtemp(prefix="pg-bt-")
    spark = make_spark("pg-bucket-truncate", wh)
    os.makedirs(OUT, exist_ok=True)
    for name, (cols, parts, extra, nulls) in TABLES.items():
        spark.sql(f"CREATE TABLE x.db.{name} ({cols}) USING iceberg PARTITIONED BY ({parts}) "
                  "TBLPROPERTIES ('format-version'='2', 'write.distribution-mode'='hash')")
        spark.sql(f"INSERT INTO x.db.{name} " + ROWS.format(extra=extra))
        spark.sql(f"INSERT INTO x.db.{name} VALUES {nulls}")
        rows = []
        for r in spark.sql(f"SELECT * FROM x.db.{name} ORDER BY id").collect():
            d = r.asDict()
            for k, v in d.items():
                if isinstance(v, (bytes, bytearray)):
                    d[k] = bytes(v).hex()
                elif v is not None and not isinstance(v, (int, str, float)):
                    d[k] = str(v)
            rows.append(d)
        assert len(rows) == 41, len(rows)
        out = os.path.join(OUT, name)
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(os.path.join(wh, "db", name), out)
        for root, _, files in os.walk(out):
            for f in files:
                if f.endswith(".crc"):
                    os.remove(os.path.join(root, f))
        with open(os.path.join(OUT, f"{name}.jsonl"), "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        print("wrote", out)
    spark.stop()
    shutil.rmtree(wh)


if __name__ == "__main__":
    main()
