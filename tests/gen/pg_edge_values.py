#!/usr/bin/env python3
"""Writes tests/fixtures/pg_edge/edge_values: values a Postgres column cannot hold as they are,
for the FDW's regression tests (pg_ext/tests/regress.py).

Written with PyIceberg 0.12 + PyArrow (in ~/.cache/iceberg-gen/venv, which
`benches/bench-table/make-bench-table --setup-only` sets up), because Spark cannot write them: a string holding a NUL byte, and a date after
Postgres' last date (5874897-12-31; Iceberg dates run to about 5.88 million years AD). Three
appends, one data file each, so a condition on `id` reads one file:

  snapshot 1: id 1, s 'plain', d 2024-01-01        (every value fits)
  snapshot 2: id 2, s 'a<NUL>b', d 2024-01-02      (the NUL)
  snapshot 3: id 3, s 'late', d 2147000000 days after 1970-01-01 (beyond Postgres' dates)

The expected rows (what the table holds, in the fixtures' JSON encoding, dates as day numbers)
go to tests/fixtures/pg_edge/edge_values.jsonl. Paths inside the metadata are absolute under
the directory it was written to; the reader relocates them.

    ~/.cache/iceberg-gen/venv/bin/python tests/gen/pg_edge_values.py
"""
import json
import os
import shutil
import tempfile

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import DateType, LongType, NestedField, StringType

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fixtures", "pg_edge")
ROWS = [(1, "plain", 19723), (2, "a\x00b", 19724), (3, "late", 2_147_000_000)]


def main():
    tmp = tempfile.mkdtemp(prefix="pg-edge-")
    loc = os.path.join(tmp, "edge_values")
    cat = SqlCatalog("gen", uri=f"sqlite:///{tmp}/catalog.db", warehouse=f"file://{tmp}")
    cat.create_namespace("pg_edge")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "s", StringType(), required=False),
        NestedField(3, "d", DateType(), required=False),
    )
    t = cat.create_table("pg_edge.edge_values", schema, location=f"file://{loc}",
                         properties={"format-version": "2",
                                     # Python dates end at 9999: no bounds for d.
                                     "write.metadata.metrics.column.d": "none"})
    arrow_schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False),
        pa.field("s", pa.string()),
        pa.field("d", pa.date32()),
    ])
    for row in ROWS:
        t.append(pa.table([[row[0]], [row[1]], [row[2]]], schema=arrow_schema))
    os.makedirs(OUT, exist_ok=True)
    dst = os.path.join(OUT, "edge_values")
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(loc, dst)
    with open(os.path.join(OUT, "edge_values.jsonl"), "w") as f:
        for i, s, d in ROWS:
            f.write(json.dumps({"id": i, "s": s, "d_days": d}) + "\n")
    shutil.rmtree(tmp)
    print("wrote", dst)


if __name__ == "__main__":
    main()
