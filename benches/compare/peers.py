#!/usr/bin/env python3
"""Times DuckDB's iceberg_scan and PyIceberg on the same snapshot as `icefloe cat`.

Usage: peers.py TABLE_DIR METADATA_FILE OUT_DIR
Prints one line per reader and task: `reader<TAB>task<TAB>seconds<TAB>rows`.
Tasks: `csv` (every live row of the current snapshot written as CSV to a file) and
`count` (the number of live rows, where the reader can count without materialising).
"""
import glob
import os
import sys
import time


def duckdb_con():
    import duckdb
    sp = os.path.dirname(os.path.dirname(duckdb.__file__))
    con = duckdb.connect()
    for e in ("avro", "iceberg"):
        p = glob.glob(os.path.join(sp, f"duckdb_extension_{e}", "extensions", "*", f"{e}.duckdb_extension"))[0]
        con.execute(f"LOAD '{p}'")
    return con


def main():
    table_dir, meta, out = sys.argv[1], sys.argv[2], sys.argv[3]
    con = duckdb_con()
    t = time.time()
    n = con.execute(f"SELECT count(*) FROM iceberg_scan('{meta}')").fetchone()[0]
    print(f"duckdb\tcount\t{time.time() - t:.3f}\t{n}", flush=True)
    t = time.time()
    con.execute(f"COPY (SELECT * FROM iceberg_scan('{meta}')) TO '{out}/duckdb.csv' (FORMAT csv, HEADER)")
    print(f"duckdb\tcsv\t{time.time() - t:.3f}\t{n}", flush=True)

    from pyiceberg.table import StaticTable
    import pyarrow.csv as pacsv
    t = time.time()
    tbl = StaticTable.from_metadata(meta)
    arrow = tbl.scan().to_arrow()
    pacsv.write_csv(arrow, f"{out}/pyiceberg.csv")
    print(f"pyiceberg\tcsv\t{time.time() - t:.3f}\t{arrow.num_rows}", flush=True)


if __name__ == "__main__":
    main()
