#!/usr/bin/env python3
"""Writes tests/fixtures/pg_edge/dup_pos_deletes: a format-version 2 table where two position
delete files name the same row, for the FDW's count(*) test (metadata alone cannot count such a table; position deletes may overlap, so the row must be counted once).

Spark 3.5.9 + Iceberg 1.10.2 (set up by `benches/bench-table/make-bench-table --setup-only`, in
~/.cache/iceberg-gen):
  snapshot 1: INSERT of ids 0..9 (one data file)
  snapshot 2: merge-on-read DELETE WHERE id IN (3, 4): one position delete file
  snapshot 3: the Iceberg Java API (RowDelta) adds a byte copy of that delete file under
              another name: two position delete files now name rows 3 and 4.
Spark then reads it back; its rows go to tests/fixtures/pg_edge/dup_pos_deletes.jsonl.

    TZ=UTC nice ~/.cache/iceberg-gen/venv/bin/python tests/gen/pg_dup_position_deletes.py
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


def main():
    wh = tempfile.mkdtemp(prefix="pg-dup-")
    spark = make_spark("pg-dup", wh)
    spark.sql("CREATE TABLE x.db.dup_pos_deletes (id bigint, v string) USING iceberg TBLPROPERTIES "
              "('format-version'='2', 'write.delete.mode'='merge-on-read', 'write.delete.granularity'='file')")
    spark.sql("INSERT INTO x.db.dup_pos_deletes SELECT id, concat('v', id) FROM range(0, 10, 1, 1)")
    spark.sql("DELETE FROM x.db.dup_pos_deletes WHERE id IN (3, 4)")
    jvm = spark._jvm
    t = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, "x.db.dup_pos_deletes")
    deletes = list(t.currentSnapshot().addedDeleteFiles(t.io()))
    assert len(deletes) == 1, deletes
    d = deletes[0]
    src = str(d.location()).replace("file:", "", 1)
    dst = src.replace(".parquet", "-copy.parquet")
    shutil.copyfile(src, dst)
    copy = (jvm.org.apache.iceberg.FileMetadata.deleteFileBuilder(t.spec()).copy(d)
            .withPath(dst).build())
    t.newRowDelta().addDeletes(copy).commit()
    rows = [r.asDict() for r in spark.sql("SELECT * FROM x.db.dup_pos_deletes ORDER BY id").collect()]
    assert [r["id"] for r in rows] == [0, 1, 2, 5, 6, 7, 8, 9], rows
    spark.stop()
    os.makedirs(OUT, exist_ok=True)
    out = os.path.join(OUT, "dup_pos_deletes")
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(os.path.join(wh, "db", "dup_pos_deletes"), out)
    for root, _, files in os.walk(out):
        for f in files:
            if f.endswith(".crc"):
                os.remove(os.path.join(root, f))
    with open(os.path.join(OUT, "dup_pos_deletes.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    shutil.rmtree(wh)
    print("wrote", out)


if __name__ == "__main__":
    main()
