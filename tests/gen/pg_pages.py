#!/usr/bin/env python3
"""Writes tests/fixtures/pg_edge/pages: one data file of 5,000 rows in one row group of ten
pages of 500 rows (Iceberg's write.parquet.page-row-limit), with Parquet's page index (column
and offset indexes, as Spark writes them), for page pruning (a point lookup reads one
page). Columns: id long (0..4999 ascending), name string ('n' + zero-padded id),
then a merge-on-read DELETE of ids 4240..4244 (a deletion vector, format version 3).

Spark 3.5.9 + Iceberg 1.10.2 (set up by `benches/bench-table/make-bench-table --setup-only`, in
~/.cache/iceberg-gen); the rows follow from the formulas (no expected-rows file).

    TZ=UTC nice ~/.cache/iceberg-gen/venv/bin/python tests/gen/pg_pages.py
"""
import os
import shutil
import tempfile

import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spark_session import make_spark  # noqa: E402  (tests/gen/spark_session.py)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fixtures", "pg_edge")


def main():
    wh = tempfile.mkdtemp(prefix="pg-pages-")
    spark = make_spark("pg-pages", wh)
    spark.sql("CREATE TABLE x.db.pages (id bigint, name string) USING iceberg TBLPROPERTIES "
              "('format-version'='3', 'write.parquet.page-row-limit'='500', 'write.delete.mode'='merge-on-read')")
    spark.sql("INSERT INTO x.db.pages SELECT id, concat('n', lpad(CAST(id AS string), 5, '0')) FROM range(0, 5000, 1, 1)")
    spark.sql("DELETE FROM x.db.pages WHERE id BETWEEN 4240 AND 4244")
    n = spark.sql("SELECT count(*) FROM x.db.pages").collect()[0][0]
    assert n == 4995, n
    spark.stop()
    out = os.path.join(OUT, "pages")
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(os.path.join(wh, "db", "pages"), out)
    for root, _, files in os.walk(out):
        for f in files:
            if f.endswith(".crc"):
                os.remove(os.path.join(root, f))
    shutil.rmtree(wh)
    print("wrote", out)


if __name__ == "__main__":
    main()
