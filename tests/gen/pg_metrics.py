#!/usr/bin/env python3
"""Writes tests/fixtures/pg_edge/metrics and tests/fixtures/pg_edge/no_metrics, for the FDW's
ANALYZE test (null fractions and histogram ends from Iceberg column metrics).

metrics: 8,000 rows in four data files of 2,000 (ids ascending, so each file holds a range),
format version 2, no deletes. Row i (0..7999):
  id long (required)  i
  maybe long          NULL when i % 9 == 4, else 10*i - 30000
  d date              2000-01-01 + i days
  ts timestamptz      2020-01-01T00:00:00Z + i minutes + i microseconds
  amount decimal(12,2)  1.25*i - 100
  score double        NULL when i % 13 == 0, else i / 3
  name string         'name-' + i (bounds may be truncated: never used)
  nometrics long      NULL when i % 7 == 1, else 2*i; metrics mode `none` for this column
no_metrics: the first 2,000 of those rows in one file, every column's metrics mode `none`.

Written with PyIceberg 0.12 + PyArrow (in ~/.cache/iceberg-gen/venv), whose metrics modes
follow write.metadata.metrics.default / write.metadata.metrics.column.<name>. The rows follow
from these formulas (the test computes them; no expected-rows file).

    PYTHONPATH=<dir with sqlalchemy> ~/.cache/iceberg-gen/venv/bin/python tests/gen/pg_metrics.py
"""
import datetime
import decimal
import os
import shutil
import tempfile

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import (DateType, DecimalType, DoubleType, LongType, NestedField, StringType,
                             TimestamptzType)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fixtures", "pg_edge")
N = 8_000
FILE_ROWS = 2_000


def rows(lo, hi):
    ids = list(range(lo, hi))
    epoch = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
    return {
        "id": ids,
        "maybe": [None if i % 9 == 4 else 10 * i - 30000 for i in ids],
        "d": [datetime.date(2000, 1, 1) + datetime.timedelta(days=i) for i in ids],
        "ts": [epoch + datetime.timedelta(minutes=i, microseconds=i) for i in ids],
        "amount": [decimal.Decimal(i) * decimal.Decimal("1.25") - 100 for i in ids],
        "score": [None if i % 13 == 0 else i / 3 for i in ids],
        "name": [f"name-{i}" for i in ids],
        "nometrics": [None if i % 7 == 1 else 2 * i for i in ids],
    }


ARROW = pa.schema([
    pa.field("id", pa.int64(), nullable=False), pa.field("maybe", pa.int64()),
    pa.field("d", pa.date32()), pa.field("ts", pa.timestamp("us", tz="UTC")),
    pa.field("amount", pa.decimal128(12, 2)), pa.field("score", pa.float64()),
    pa.field("name", pa.string()), pa.field("nometrics", pa.int64()),
])

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "maybe", LongType(), required=False),
    NestedField(3, "d", DateType(), required=False),
    NestedField(4, "ts", TimestamptzType(), required=False),
    NestedField(5, "amount", DecimalType(12, 2), required=False),
    NestedField(6, "score", DoubleType(), required=False),
    NestedField(7, "name", StringType(), required=False),
    NestedField(8, "nometrics", LongType(), required=False),
)


def write(cat, tmp, name, props, batches):
    loc = os.path.join(tmp, name)
    t = cat.create_table(f"pg_edge.{name}", SCHEMA, location=f"file://{loc}",
                         properties={"format-version": "2", **props})
    for lo, hi in batches:
        t.append(pa.table(rows(lo, hi), schema=ARROW))
    dst = os.path.join(OUT, name)
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(loc, dst)
    print("wrote", dst)


def main():
    tmp = tempfile.mkdtemp(prefix="pg-metrics-")
    cat = SqlCatalog("gen", uri=f"sqlite:///{tmp}/catalog.db", warehouse=f"file://{tmp}")
    cat.create_namespace("pg_edge")
    os.makedirs(OUT, exist_ok=True)
    write(cat, tmp, "metrics", {"write.metadata.metrics.column.nometrics": "none"},
          [(lo, lo + FILE_ROWS) for lo in range(0, N, FILE_ROWS)])
    write(cat, tmp, "no_metrics", {"write.metadata.metrics.default": "none"}, [(0, FILE_ROWS)])
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
