#!/usr/bin/env python3
"""Writes tests/fixtures/pg_edge/row_groups: one data file of 20,000 rows in ten row groups of
2,000 (ids ascending), for the FDW's row-group pruning test (a point lookup
reads one row group). Columns: id long (0..19999), name string ('n' + zero-padded id), grp int
(id / 2000), maybe long (NULL in row group 3, else id).

Written with PyIceberg 0.12 + PyArrow (in ~/.cache/iceberg-gen/venv), whose
`write.parquet.row-group-limit` sets the rows per row group; one append, format version 2.
The rows follow from these formulas (no expected-rows file: it would be 1 MB).

    PYTHONPATH=<dir with sqlalchemy> ~/.cache/iceberg-gen/venv/bin/python tests/gen/pg_row_groups.py
"""
import os
import shutil
import tempfile

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, LongType, NestedField, StringType

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fixtures", "pg_edge")
N = 20_000
GROUP = 2_000


def main():
    tmp = tempfile.mkdtemp(prefix="pg-rg-")
    loc = os.path.join(tmp, "row_groups")
    cat = SqlCatalog("gen", uri=f"sqlite:///{tmp}/catalog.db", warehouse=f"file://{tmp}")
    cat.create_namespace("pg_edge")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType(), required=False),
        NestedField(3, "grp", IntegerType(), required=False),
        NestedField(4, "maybe", LongType(), required=False),
    )
    t = cat.create_table("pg_edge.row_groups", schema, location=f"file://{loc}",
                         properties={"format-version": "2", "write.parquet.row-group-limit": str(GROUP)})
    ids = list(range(N))
    rows = {
        "id": ids,
        "name": [f"n{i:05d}" for i in ids],
        "grp": [i // GROUP for i in ids],
        "maybe": [None if i // GROUP == 3 else i for i in ids],
    }
    arrow_schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
        pa.field("grp", pa.int32()), pa.field("maybe", pa.int64()),
    ])
    t.append(pa.table(rows, schema=arrow_schema))
    import pyarrow.parquet as pq
    files = [os.path.join(r, f) for r, _, fs in os.walk(os.path.join(loc, "data")) for f in fs]
    assert len(files) == 1 and pq.ParquetFile(files[0]).num_row_groups == N // GROUP, files
    os.makedirs(OUT, exist_ok=True)
    dst = os.path.join(OUT, "row_groups")
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(loc, dst)
    shutil.rmtree(tmp)
    print("wrote", dst)


if __name__ == "__main__":
    main()
