#!/usr/bin/env python3
"""SQL regression tests of icefloe_fdw against a running Postgres with the extension installed.

Drives `psql` (no Python driver needed). Every fixture table and snapshot is imported with
IMPORT FOREIGN SCHEMA ... OPTIONS (snapshot_id ...) and its rows, read through the wrapper, are
compared as a multiset with `tests/fixtures/expected/<table>/<snapshot>.jsonl`, after turning
both sides into the same canonical values under the wrapper's type mapping (pg_ext/README.md).
Then: time travel by ref and as_of, IMPORT with LIMIT TO / EXCEPT, NOT NULL and DEFAULTs,
pushdown (EXPLAIN and results), the local-file permission rule, secrets, errors on corrupt
input, and query cancel.

Usage: regress.py --fixtures DIR --warehouse DIR [--host H] [--port P] [--user U] [-k FILTER]
The warehouse directory must be a copy of tests/fixtures/warehouse readable by the server;
corruption tests write scratch copies next to it.
Prints one line per test and a closing "N passed, N failed" line; exits 1 on any failure.
"""

import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter
from decimal import Decimal

ARGS = None
PG_ENV = None


# ---------------------------------------------------------------------------------------------
# psql


class Skip(Exception):
    """A test that cannot run here (reported, not counted as passed or failed)."""


# The core's variant decoding is being finished on main; until it is merged, reading a variant
# column fails with this placeholder message and the variant fixture is skipped.
VARIANT_PLACEHOLDER = "variant: cannot write output: not yet"


class SqlError(Exception):
    def __init__(self, stderr, sqlstate=None):
        super().__init__(stderr.strip())
        self.stderr = stderr
        self.sqlstate = sqlstate


def psql(sql, user=None, db="icefloe_regress", timeout=300):
    """Runs SQL with psql; returns stdout. Raises SqlError (with the SQLSTATE) on error."""
    cmd = [
        "psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose",
        "-h", ARGS.host, "-p", str(ARGS.port), "-U", user or ARGS.user, "-d", db,
    ]
    p = subprocess.run(cmd, input=sql, capture_output=True, text=True, env=PG_ENV, timeout=timeout)
    if p.returncode != 0:
        m = re.search(r"ERROR:\s+([0-9A-Z]{5}):", p.stderr)
        raise SqlError(p.stderr, m.group(1) if m else None)
    return p.stdout


def expect_error(sql, sqlstate=None, contains=None, user=None):
    try:
        out = psql(sql, user=user)
    except SqlError as e:
        if sqlstate and e.sqlstate != sqlstate:
            raise AssertionError(f"want SQLSTATE {sqlstate}, got {e.sqlstate}: {e}")
        for c in [contains] if isinstance(contains, str) else (contains or []):
            if c not in str(e):
                raise AssertionError(f"error does not mention {c!r}: {e}")
        return str(e)
    raise AssertionError(f"expected an error, got: {out[:500]}")


def copy_rows(query):
    """Rows of a query through COPY ... TO STDOUT (text format): lists of str or None."""
    out = psql(f"COPY ({query}) TO STDOUT")
    rows = []
    for line in out.split("\n"):
        if line == "":
            continue
        rows.append([None if f == r"\N" else unescape(f) for f in line.split("\t")])
    return rows


def unescape(f):
    if "\\" not in f:
        return f
    out, i = [], 0
    table = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}
    while i < len(f):
        c = f[i]
        if c == "\\" and i + 1 < len(f):
            n = f[i + 1]
            if n in table:
                out.append(table[n])
                i += 2
                continue
        out.append(c)
        i += 1
    return "".join(out)


def quote_ident(s):
    return '"' + s.replace('"', '""') + '"'


def quote_lit(s):
    return "'" + s.replace("'", "''") + "'"


# ---------------------------------------------------------------------------------------------
# canonical values: the expected JSON and Postgres' text become the same Python values


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def float_of(v):
    if isinstance(v, str):
        return float({"Infinity": "inf", "-Infinity": "-inf", "NaN": "nan"}.get(v, v))
    return float(v)


def canon_float(x, single):
    x = f32(x) if single else x
    if x != x:
        return ("float", "nan")
    return ("float", repr(x))


def norm_time(s):
    """'HH:MM:SS[.f*]' -> 'HH:MM:SS.ffffff' (truncated to microseconds)."""
    base, _, frac = s.partition(".")
    return f"{base}.{(frac + '000000')[:6]}"


TS_RE = re.compile(r"^(\d{4,}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d(?::?\d\d)?)?( BC)?$")


def norm_ts(s):
    m = TS_RE.match(s)
    if not m:
        raise AssertionError(f"unparsable timestamp {s!r}")
    date, time_, frac, tz, bc = m.groups()
    tz = tz or ""
    if tz in ("+00", "+00:00", "Z", "+0000"):
        tz = "+00:00"
    return f"{date}T{time_}.{((frac or '') + '000000')[:6]}{tz}{bc or ''}"


def json_canon(v):
    """Canonical JSON value: exact decimals for numbers, maps ({key,value} arrays) sorted."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float, Decimal)):
        d = Decimal(str(v)) if not isinstance(v, Decimal) else v
        return ("num", str(d.normalize()) if d == d else "nan")
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        items = [json_canon(x) for x in v]
        if items and all(isinstance(x, tuple) and x and x[0] == "obj" and sorted(k for k, _ in x[1]) == ["key", "value"] for x in items):
            items.sort(key=repr)
        return ("arr", tuple(items))
    if isinstance(v, dict):
        return ("obj", tuple(sorted((k, json_canon(x)) for k, x in v.items())))
    raise AssertionError(f"unexpected JSON {v!r}")


def canon(pgtype, v, from_pg):
    """The canonical value of column type `pgtype`: `v` is Postgres text (from_pg) or the
    expected JSON value."""
    if v is None:
        return None
    if pgtype.endswith("[]"):
        elem = pgtype[:-2]
        arr = json.loads(v, parse_float=Decimal) if from_pg else v
        return ("arr", tuple(canon(elem, x if (x is None or not from_pg) else json_text(x), from_pg) for x in arr))
    if pgtype in ("bigint", "integer", "smallint"):
        return int(v)
    if pgtype in ("real", "double precision"):
        return canon_float(float_of(v), pgtype == "real")
    if pgtype.startswith("numeric"):
        return ("num", str(Decimal(str(v))))
    if pgtype == "boolean":
        if from_pg:
            return v in ("t", "true")
        return bool(v)
    if pgtype in ("text", "character varying", "uuid", "date"):
        return v
    if pgtype == "bytea":
        return v[2:] if from_pg and v.startswith("\\x") else v
    if pgtype.startswith("time without") or pgtype == "time":
        return norm_time(v)
    if pgtype.startswith("timestamp"):
        return norm_ts(v)
    if pgtype in ("jsonb", "json"):
        return json_canon(json.loads(v, parse_float=Decimal) if from_pg else v)
    raise AssertionError(f"no canonical form for type {pgtype}")


def json_text(x):
    """An element of to_json(array) as the text Postgres would print for it."""
    if isinstance(x, bool):
        return "t" if x else "f"
    if isinstance(x, (int, Decimal, float)):
        return str(x)
    return x


# ---------------------------------------------------------------------------------------------
# fixtures


def load_fixtures():
    idx = json.load(open(os.path.join(ARGS.fixtures, "index.json")))
    tables = []
    for t in idx["tables"]:
        m = json.load(open(os.path.join(ARGS.fixtures, t["manifest"])))
        tables.append(m)
    return tables


def expected_rows(snap):
    path = os.path.join(ARGS.fixtures, snap["expected_file"])
    with open(path) as f:
        return [json.loads(l, parse_float=Decimal) for l in f if l.strip()]


def column_types(schema, table):
    out = psql(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
        f"WHERE a.attrelid = '{quote_ident(schema)}.{quote_ident(table)}'::regclass AND a.attnum > 0 "
        "AND NOT a.attisdropped ORDER BY a.attnum"
    )
    return [tuple(l.split("|", 1)) for l in out.splitlines() if l]


def select_list(cols):
    return ", ".join(
        f"to_json({quote_ident(c)})" if t.endswith("[]") else quote_ident(c) for c, t in cols
    )


def compare_snapshot(schema, table, snap, want_rows=None):
    """Reads schema.table and compares it with the snapshot's expected rows; returns a list of
    problems (empty if equal)."""
    cols = column_types(schema, table)
    names = [c for c, _ in cols]
    if names != snap["expected_columns"]:
        return [f"columns {names} != expected {snap['expected_columns']}"]
    got = copy_rows(f"SELECT {select_list(cols)} FROM {quote_ident(schema)}.{quote_ident(table)}")
    want = expected_rows(snap) if want_rows is None else want_rows
    g = Counter(repr(tuple(canon(t, r[i], True) for i, (_, t) in enumerate(cols))) for r in got)
    w = Counter(repr(tuple(canon(t, row.get(c), False) for c, t in cols)) for row in want)
    if g == w:
        return []
    missing = list((w - g).elements())
    extra = list((g - w).elements())
    return [
        f"{len(got)} rows, want {len(want)}; {len(missing)} expected rows missing "
        f"(first: {missing[:1]}), {len(extra)} unexpected (first: {extra[:1]})"
    ]


# ---------------------------------------------------------------------------------------------
# tests

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def fixture_snapshot_tests():
    """One test per fixture table: every snapshot, imported at that snapshot."""
    for m in load_fixtures():
        def run(m=m):
            table = m["table"]
            problems = []
            for i, snap in enumerate(m["snapshots"]):
                schema = f"t_{table}_{i}"
                psql(
                    f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema};"
                    f"IMPORT FOREIGN SCHEMA db LIMIT TO ({quote_ident(table)}) FROM SERVER lake INTO {schema} "
                    f"OPTIONS (snapshot_id '{snap['snapshot_id']}')"
                )
                try:
                    found = compare_snapshot(schema, table, snap)
                except SqlError as e:
                    if VARIANT_PLACEHOLDER in str(e):
                        raise Skip("the core cannot decode variants yet (encoder not merged from main)")
                    raise
                for p in found:
                    problems.append(f"snapshot {snap['snapshot_id']} ({snap['operation']}): {p}")
                psql(f"DROP SCHEMA {schema} CASCADE")
            assert not problems, "\n".join(problems)
        run.__name__ = f"fixture_{m['table']}_all_snapshots"
        TESTS.append(run)


@test
def current_snapshot_via_plain_import():
    """IMPORT without options (done by setup into schema cur) reads every table's current
    snapshot."""
    problems = []
    for m in load_fixtures():
        snap = next(s for s in m["snapshots"] if s["snapshot_id"] == m["current_snapshot_id"])
        try:
            problems += [f"{m['table']}: {p}" for p in compare_snapshot("cur", m["table"], snap)]
        except SqlError as e:
            if VARIANT_PLACEHOLDER not in str(e):
                raise
            print(f"     ({m['table']} skipped: the core cannot decode variants yet)")
    assert not problems, "\n".join(problems)


@test
def import_lists_every_table_with_limit_and_except():
    n = len(load_fixtures())
    tables = psql("SELECT count(*) FROM information_schema.foreign_tables WHERE foreign_table_schema = 'cur'").strip()
    assert int(tables) == n, f"{tables} tables imported, want {n}"
    psql("DROP SCHEMA IF EXISTS lim CASCADE; CREATE SCHEMA lim;"
         "IMPORT FOREIGN SCHEMA db LIMIT TO (v3_types, v3_basic) FROM SERVER lake INTO lim")
    got = psql("SELECT string_agg(foreign_table_name::text, ',' ORDER BY 1) FROM information_schema.foreign_tables WHERE foreign_table_schema = 'lim'").strip()
    assert got == "v3_basic,v3_types", got
    psql("DROP SCHEMA IF EXISTS exc CASCADE; CREATE SCHEMA exc;"
         "IMPORT FOREIGN SCHEMA db EXCEPT (v3_types, v3_basic) FROM SERVER lake INTO exc")
    got = int(psql("SELECT count(*) FROM information_schema.foreign_tables WHERE foreign_table_schema = 'exc'"))
    assert got == n - 2, got
    psql("DROP SCHEMA lim CASCADE; DROP SCHEMA exc CASCADE")


@test
def import_declares_not_null_and_write_defaults():
    out = psql(
        "SELECT a.attname, a.attnotnull, pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a "
        "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
        "WHERE a.attrelid = 'cur.v3_defaults'::regclass AND a.attnum > 0 ORDER BY a.attnum"
    )
    cols = {l.split("|")[0]: l.split("|")[1:] for l in out.splitlines() if l}
    assert cols["_row_id"][0] == "f" and cols["_row_id"][1] == ""
    # Every field of the table's current schema: NOT NULL iff required, DEFAULT iff write-default.
    meta = current_metadata("v3_defaults")
    schema = next(s for s in meta["schemas"] if s["schema-id"] == meta["current-schema-id"])
    with_default = 0
    for f in schema["fields"]:
        notnull, default = cols[f["name"]]
        assert (notnull == "t") == bool(f.get("required")), f"{f['name']}: NOT NULL {notnull}"
        if f.get("write-default") is not None and not isinstance(f["type"], dict):
            with_default += 1
            assert default != "", f"{f['name']} has write-default {f['write-default']!r} but no DEFAULT"
            # The DEFAULT evaluates to the write-default under the type mapping.
            val = psql(f"SELECT ({default})::text").strip()
            pgtype = dict(column_types("cur", "v3_defaults"))[f["name"]]
            want = f["write-default"]
            if pgtype == "bytea":
                assert val == "\\x" + want.lower(), (f["name"], val, want)
            else:
                assert canon(pgtype, val, True) == canon(pgtype, want, False), (f["name"], val, want)
        elif f.get("write-default") is None:
            assert default == "", f"{f['name']}: unexpected DEFAULT {default}"
    assert with_default >= 5, f"only {with_default} defaults checked"


def current_metadata(table):
    d = os.path.join(ARGS.warehouse, "db", table, "metadata")
    v = open(os.path.join(d, "version-hint.text")).read().strip()
    return json.load(open(os.path.join(d, f"v{v}.metadata.json")))


@test
def time_travel_by_ref_and_as_of():
    m = next(m for m in load_fixtures() if m["table"] == "v3_basic")
    by_id = {s["snapshot_id"]: s for s in m["snapshots"]}
    cur_cols = column_types("cur", "v3_basic")
    coldefs = ", ".join(f"{quote_ident(c)} {t}" for c, t in cur_cols)
    problems = []
    for ref, r in m["refs"].items():
        snap = by_id[r["snapshot-id"]]
        psql(f"DROP FOREIGN TABLE IF EXISTS tt_ref; CREATE FOREIGN TABLE tt_ref ({coldefs}) SERVER lake "
             f"OPTIONS (\"table\" 'db.v3_basic', ref {quote_lit(ref)})")
        if [c for c, _ in cur_cols] == snap["expected_columns"]:
            problems += [f"ref {ref}: {p}" for p in compare_snapshot("public", "tt_ref", snap)]
    # as_of: each snapshot on main, by its commit time (ms since the epoch, and as a timestamp).
    main = [s for s in m["snapshots"] if s.get("on_main_branch", True)]
    for i, snap in enumerate(main):
        if [c for c, _ in cur_cols] != snap["expected_columns"]:
            continue
        for value in (str(snap["timestamp_ms"]), ts_text(snap["timestamp_ms"])):
            psql(f"DROP FOREIGN TABLE IF EXISTS tt_asof; CREATE FOREIGN TABLE tt_asof ({coldefs}) SERVER lake "
                 f"OPTIONS (\"table\" 'db.v3_basic', as_of {quote_lit(value)})")
            problems += [f"as_of {value}: {p}" for p in compare_snapshot("public", "tt_asof", snap)]
    assert not problems, "\n".join(problems)
    expect_error("ALTER FOREIGN TABLE tt_asof OPTIONS (SET as_of '1970-01-01 00:00:00+00'); SELECT count(*) FROM tt_asof",
                 contains="no snapshot")
    expect_error("ALTER FOREIGN TABLE tt_ref OPTIONS (SET ref 'nope'); SELECT count(*) FROM tt_ref", contains="nope")
    expect_error("ALTER FOREIGN TABLE tt_ref OPTIONS (DROP ref, ADD snapshot_id '1', ADD as_of '5')", sqlstate="HV024")
    psql("DROP FOREIGN TABLE tt_ref, tt_asof")


def ts_text(ms):
    t = time.gmtime(ms // 1000)
    return time.strftime("%Y-%m-%d %H:%M:%S", t) + f".{ms % 1000:03d}+00"


@test
def snapshots_function_lists_snapshots():
    m = next(m for m in load_fixtures() if m["table"] == "v3_basic")
    out = psql("SELECT snapshot_id, sequence_number, operation, array_to_string(refs, ';'), is_current, total_records "
               "FROM icefloe_snapshots('db.v3_basic')")
    rows = [l.split("|") for l in out.splitlines() if l]
    assert [int(r[0]) for r in rows] == [s["snapshot_id"] for s in sorted(m["snapshots"], key=lambda s: (s["sequence_number"], s["timestamp_ms"]))]
    cur = [r for r in rows if r[4] == "t"]
    assert len(cur) == 1 and int(cur[0][0]) == m["current_snapshot_id"]
    tagged = [r for r in rows if "after_update" in r[3].split(";")]
    assert len(tagged) == 1 and int(tagged[0][0]) == m["refs"]["after_update"]["snapshot-id"]
    by_server = psql("SELECT count(*) FROM icefloe_snapshots('db.v3_basic', 'lake')").strip()
    assert int(by_server) == len(rows)


@test
def projection_and_count():
    n = psql("SELECT count(*) FROM cur.v3_dv_large").strip()
    m = next(m for m in load_fixtures() if m["table"] == "v3_dv_large")
    snap = next(s for s in m["snapshots"] if s["snapshot_id"] == m["current_snapshot_id"])
    assert int(n) == snap["rows"], (n, snap["rows"])
    # A single column, a lineage column, and a whole-row reference.
    ids = psql("SELECT sum(id), count(_row_id), count(*) FILTER (WHERE t IS NOT NULL) FROM cur.v3_dv_large t").strip()
    want_sum = sum(r["id"] for r in expected_rows(snap))
    assert ids.split("|")[0] == str(want_sum), ids
    assert ids.split("|")[1] == str(snap["rows"]), ids


@test
def column_name_option_and_absent_columns():
    """Columns map by the column_name option; a column of another schema of the table reads
    NULL at a snapshot whose schema lacks it."""
    psql("DROP FOREIGN TABLE IF EXISTS cn; CREATE FOREIGN TABLE cn (ident bigint OPTIONS (column_name 'id'), "
         "label text OPTIONS (column_name 'name')) SERVER lake OPTIONS (\"table\" 'db.v3_basic')")
    got = copy_rows("SELECT ident, label FROM cn ORDER BY 1, 2")
    want = copy_rows("SELECT id, name FROM cur.v3_basic ORDER BY 1, 2")
    assert got == want and len(got) > 100, (len(got), len(want))
    # schema_evolution: the current schema read at the first snapshot.
    m = next(m for m in load_fixtures() if m["table"] == "schema_evolution")
    first = m["snapshots"][0]
    cols = column_types("cur", "schema_evolution")
    # A column re-added under an old name with another type is another column: declaring it
    # with the new type is an error at the old snapshot; such columns are left out.
    left_out = []
    for _ in range(len(cols)):
        coldefs = ", ".join(f"{quote_ident(c)} {t}" for c, t in cols)
        psql(f"DROP FOREIGN TABLE IF EXISTS se_first; CREATE FOREIGN TABLE se_first ({coldefs}) SERVER lake "
             f"OPTIONS (\"table\" 'db.schema_evolution', snapshot_id '{first['snapshot_id']}')")
        try:
            rows = copy_rows(f"SELECT {select_list(cols)} FROM se_first")
            break
        except SqlError as e:
            m_col = re.search(r'column "([^"]+)" of foreign table "se_first" is declared', str(e))
            assert e.sqlstate == "HV004" and m_col, e
            left_out.append(m_col.group(1))
            cols = [(c, t) for c, t in cols if c != m_col.group(1)]
    absent = [c for c, _ in cols if c not in first["expected_columns"]]
    widened = [c for c, t in cols if c == "id" and t == "bigint"]
    assert absent and widened and len(left_out) <= 2, (absent, widened, left_out)
    want = expected_rows(first)
    assert len(rows) == len(want), (len(rows), len(want))
    for i, (c, t) in enumerate(cols):
        got_col = Counter(repr(canon(t, r[i], True)) for r in rows)
        if c in first["expected_columns"]:
            want_col = Counter(repr(canon(t, w.get(c), False)) for w in want)
        else:
            want_col = Counter({repr(None): len(want)})
        assert got_col == want_col, f"column {c}: {list(got_col.items())[:3]} != {list(want_col.items())[:3]}"
    psql("DROP FOREIGN TABLE cn, se_first")


def explain(query):
    plan = json.loads(psql(f"EXPLAIN (FORMAT JSON) {query}"))[0]["Plan"]
    while plan.get("Node Type") != "Foreign Scan":
        plan = plan["Plans"][0]
    return plan


@test
def pushdown_prunes_files_and_keeps_results():
    """Conditions prune files (visible in EXPLAIN) and the rows equal those of an unpruned scan."""
    cases = [
        ("cur.partitioned", "id = 7"),
        ("cur.partitioned", "id < 20"),
        ("cur.partitioned", "id >= 250 AND id <= 260"),
        ("cur.partitioned", "id IN (3, 150, 299)"),
        ("cur.partitioned", "cat = 'a'"),
        ("cur.partitioned", "cat = 'x y/z=1%'"),
        ("cur.partitioned", "cat IS NULL"),
        ("cur.partitioned", "cat IS NOT NULL AND id > 100"),
        ("cur.partitioned", "cat IN ('b', 'c')"),
        ("cur.partitioned", "ts < '2024-01-03 00:00:00+00'"),
        ("cur.partitioned", "ts >= '2024-02-01 00:00:00+00'"),
        ("cur.partitioned", "name = 'abcdef'"),
        ("cur.partitioned", "v > 5"),
        ("cur.v3_basic", "id = 10"),
        ("cur.v3_basic", "id > 990"),
        ("cur.v3_basic", "amount IS NULL"),
        ("cur.v3_types", "d > 1.0"),
        ("cur.v3_types", "dt = '2024-03-06'"),
        ("cur.v3_types", "ts < '2024-03-05'"),
        ("cur.v3_types", "tstz >= '2024-03-07 00:00:00+00'"),
        ("cur.v3_types", "dec9 = 6.05"),
        ("cur.v3_types", "b"),
        ("cur.v3_types", "NOT b"),
        ("cur.v3_dv_large", "id BETWEEN 100 AND 200"),
    ]
    pruned_any = 0
    for table, cond in cases:
        cols = column_types(table.split(".")[0], table.split(".")[1])
        p = explain(f"SELECT * FROM {table} WHERE {cond}")
        scanned, skipped = p.get("Files Scanned"), p.get("Files Skipped")
        assert scanned is not None and skipped is not None, f"{table} WHERE {cond}: EXPLAIN lacks file counts: {p}"
        if skipped > 0:
            pruned_any += 1
            assert "Pruning Filters" in p, p
        sel = select_list(cols)
        got = sorted(map(repr, copy_rows(f"SELECT {sel} FROM {table} WHERE {cond}")))
        # OFFSET 0 and a volatile-free rewrite that pushdown cannot see: (cond) IS TRUE over a subquery.
        want = sorted(map(repr, copy_rows(f"SELECT {sel} FROM (SELECT * FROM {table} OFFSET 0) t WHERE ({cond}) IS TRUE")))
        assert got == want, f"{table} WHERE {cond}: {len(got)} rows, want {len(want)}"
    assert pruned_any >= 5, f"only {pruned_any} of {len(cases)} conditions pruned any file"
    # EXPLAIN shows the snapshot read.
    p = explain("SELECT * FROM cur.v3_basic")
    m = next(m for m in load_fixtures() if m["table"] == "v3_basic")
    assert str(p.get("Snapshot")) == str(m["current_snapshot_id"]), p
    assert p.get("Files Skipped") == 0


@test
def row_estimate_comes_from_snapshot_summary():
    p = explain("SELECT * FROM cur.v3_dv_large")
    m = next(m for m in load_fixtures() if m["table"] == "v3_dv_large")
    snap = next(s for s in m["snapshots"] if s["snapshot_id"] == m["current_snapshot_id"])
    total = int(re.search(r"'total-records': '(\d+)'", snap["summary"]).group(1)) if isinstance(snap["summary"], str) else int(snap["summary"]["total-records"])
    assert p["Plan Rows"] == total, (p["Plan Rows"], total)


@test
def local_files_need_privileges():
    psql("DROP ROLE IF EXISTS alice; DROP ROLE IF EXISTS bob; CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN;"
         "GRANT pg_read_server_files TO bob; GRANT USAGE ON FOREIGN DATA WRAPPER icefloe TO alice, bob;"
         "GRANT USAGE ON SCHEMA cur TO alice, bob; GRANT SELECT ON cur.v3_types TO alice, bob;"
         "GRANT CREATE ON SCHEMA public TO alice, bob;")
    expect_error(f"CREATE SERVER alice_lake FOREIGN DATA WRAPPER icefloe OPTIONS (warehouse 'file://{ARGS.warehouse}')",
                 sqlstate="42501", contains="pg_read_server_files", user="alice")
    expect_error("SELECT count(*) FROM cur.v3_types", sqlstate="42501", user="alice")
    # A member of pg_read_server_files may create and use local servers.
    psql(f"DROP SERVER IF EXISTS bob_lake CASCADE; CREATE SERVER bob_lake FOREIGN DATA WRAPPER icefloe OPTIONS (warehouse 'file://{ARGS.warehouse}')", user="bob")
    n = psql("SELECT count(*) FROM cur.v3_types", user="bob").strip()
    assert int(n) > 0
    # A remote warehouse needs no such privilege to be declared.
    psql("CREATE SERVER alice_s3 FOREIGN DATA WRAPPER icefloe OPTIONS (warehouse 's3://bucket/wh', aws_region 'eu-west-1')", user="alice")
    psql("DROP SERVER alice_s3; DROP SERVER bob_lake CASCADE", user="postgres")


@test
def secrets_only_in_user_mappings():
    expect_error("CREATE SERVER leaky FOREIGN DATA WRAPPER icefloe OPTIONS (warehouse 's3://b/w', aws_secret_access_key 'x')",
                 sqlstate="HV00D", contains="USER MAPPING")
    psql("CREATE SERVER s3lake FOREIGN DATA WRAPPER icefloe OPTIONS (warehouse 's3://b/w');"
         "CREATE USER MAPPING FOR postgres SERVER s3lake OPTIONS (aws_access_key_id 'AKIA', aws_secret_access_key 'sekrit')")
    # Other roles do not see the mapping's options.
    seen = psql("SELECT coalesce(array_to_string(umoptions, ','), '<hidden>') FROM pg_user_mappings WHERE srvname = 's3lake'", user="alice").strip()
    assert "sekrit" not in seen, seen
    expect_error("CREATE USER MAPPING FOR alice SERVER s3lake OPTIONS (warehouse 'x')", sqlstate="HV00D")
    psql("DROP SERVER s3lake CASCADE")


@test
def option_errors():
    expect_error("CREATE FOREIGN TABLE bad1 (id bigint) SERVER lake", sqlstate="HV024", contains="table")
    expect_error("CREATE FOREIGN TABLE bad2 (id bigint) SERVER lake OPTIONS (\"table\" 'db.x', location '/tmp')", sqlstate="HV024")
    expect_error("CREATE FOREIGN TABLE bad3 (id bigint) SERVER lake OPTIONS (\"table\" 'nodots')", sqlstate="HV024", contains="namespace.table")
    expect_error("CREATE FOREIGN TABLE bad4 (id bigint) SERVER lake OPTIONS (\"table\" 'db.v3_basic', snapshot_id 'abc')", sqlstate="HV024", contains="snapshot_id")
    expect_error("CREATE FOREIGN TABLE bad5 (id bigint) SERVER lake OPTIONS (\"table\" 'db.v3_basic', colour 'red')", sqlstate="HV00D", contains="colour")
    expect_error("CREATE SERVER bad6 FOREIGN DATA WRAPPER icefloe OPTIONS (wherehouse 'x')", sqlstate="HV00D")
    expect_error("IMPORT FOREIGN SCHEMA db FROM SERVER lake INTO public OPTIONS (colour 'red')", sqlstate="HV00D")
    expect_error("IMPORT FOREIGN SCHEMA nosuchns FROM SERVER lake INTO public", contains="nosuchns")


@test
def scan_errors_are_errors_and_the_backend_survives():
    # Unknown table.
    psql("CREATE FOREIGN TABLE missing_t (id bigint) SERVER lake OPTIONS (\"table\" 'db.no_such_table')")
    expect_error("SELECT * FROM missing_t", sqlstate="HV00R", contains="no_such_table")
    # Unknown column, wrong type.
    psql("CREATE FOREIGN TABLE badcol (id bigint, nope int) SERVER lake OPTIONS (\"table\" 'db.v3_types')")
    expect_error("SELECT nope FROM badcol", sqlstate="HV005", contains="nope")
    psql("CREATE FOREIGN TABLE badtype (id text) SERVER lake OPTIONS (\"table\" 'db.v3_types')")
    expect_error("SELECT id FROM badtype", sqlstate="HV004", contains="bigint")
    # The same session goes on after each error.
    out = psql("DO $$ BEGIN PERFORM * FROM missing_t; EXCEPTION WHEN others THEN NULL; END $$; SELECT count(*) FROM cur.v3_types")
    assert int(out.strip()) > 0
    psql("DROP FOREIGN TABLE missing_t, badcol, badtype")


def corrupt_copy(table, name):
    """A scratch copy of a fixture table under the warehouse's scratch namespace."""
    dst = os.path.join(ARGS.warehouse, "scratch", name)
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(os.path.join(ARGS.warehouse, "db", table), dst)
    subprocess.run(["chmod", "-R", "a+rX", os.path.join(ARGS.warehouse, "scratch")], check=True)
    return dst


def first_dv(meta_table_dir):
    """(puffin path, offset, size) of a deletion vector of the current snapshot, via the core's
    plan as the wrapper reports it: the largest .puffin file and its first blob from the
    manifest is found by the footer-free route: the blob offset is 4 (after the magic)."""
    puffins = []
    for root, _, files in os.walk(os.path.join(meta_table_dir, "data")):
        puffins += [os.path.join(root, f) for f in files if f.endswith(".puffin")]
    return sorted(puffins)


@test
def corrupt_inputs_are_errors():
    # Missing data file.
    d = corrupt_copy("v3_basic", "missing_data")
    psql("DROP SCHEMA IF EXISTS scr CASCADE; CREATE SCHEMA scr;")
    victims = []
    for root, _, files in os.walk(os.path.join(d, "data")):
        victims += [os.path.join(root, f) for f in files if f.endswith(".parquet")]
    # Remove every data file: whichever the current snapshot reads is gone.
    for v in victims:
        os.remove(v)
    psql(f"CREATE FOREIGN TABLE scr.missing_data (id bigint) SERVER lake OPTIONS (location '{d}')")
    expect_error("SELECT count(id) FROM scr.missing_data", sqlstate="58P01", contains=".parquet")
    # Corrupt deletion vectors: every Puffin file's bytes after the magic are garbage.
    d = corrupt_copy("v3_dv_large", "bad_dv")
    for p in first_dv(d):
        with open(p, "r+b") as f:
            f.seek(4)
            data = f.read()
            f.seek(4)
            f.write(bytes((b ^ 0x5A) for b in data))
    psql(f"CREATE FOREIGN TABLE scr.bad_dv (id bigint) SERVER lake OPTIONS (location '{d}')")
    expect_error("SELECT count(id) FROM scr.bad_dv", sqlstate="XX001", contains="puffin")
    # Truncated metadata.
    d = corrupt_copy("v3_types", "bad_meta")
    meta = os.path.join(d, "metadata")
    v = open(os.path.join(meta, "version-hint.text")).read().strip()
    with open(os.path.join(meta, f"v{v}.metadata.json"), "r+b") as f:
        f.truncate(100)
    psql(f"CREATE FOREIGN TABLE scr.bad_meta (id bigint) SERVER lake OPTIONS (location '{d}')")
    expect_error("SELECT count(*) FROM scr.bad_meta", sqlstate="XX001", contains="metadata")
    psql("DROP SCHEMA scr CASCADE")


@test
def query_cancel_stops_a_long_scan():
    # A scan that runs for many seconds: the foreign table rescanned under a nested loop.
    sql = ("SET statement_timeout = '300ms'; SET enable_hashjoin = off; SET enable_mergejoin = off; "
           "SET enable_material = off; "
           "SELECT count(*) FROM generate_series(1, 100000) gs(n), cur.v3_dv_large t WHERE t.id = gs.n")
    t0 = time.time()
    expect_error(sql, sqlstate="57014")
    took = time.time() - t0
    assert took < 5, f"cancel took {took:.1f}s"
    # pg_cancel_backend from another session.
    result = {}

    def victim():
        try:
            psql("SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off; "
                 "SELECT count(*) FROM generate_series(1, 100000) gs(n), cur.v3_dv_large t WHERE t.id = gs.n")
            result["err"] = None
        except SqlError as e:
            result["err"] = e

    th = threading.Thread(target=victim)
    th.start()
    # Wait until the scan runs (up to 30 s on a slow machine), then cancel it.
    cancelled = False
    for _ in range(300):
        out = psql("SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE state = 'active' "
                   "AND query LIKE '%generate_series(1, 100000)%' AND pid <> pg_backend_pid()")
        if int(out.strip() or 0) > 0:
            cancelled = True
            break
        time.sleep(0.1)
    assert cancelled, "the scan to cancel never started"
    t0 = time.time()
    th.join(30)
    assert time.time() - t0 < 5, f"cancel took {time.time() - t0:.1f}s"
    assert not th.is_alive(), "scan did not stop after pg_cancel_backend"
    assert result.get("err") is not None and result["err"].sqlstate == "57014", result


# ---------------------------------------------------------------------------------------------


def setup():
    psql("DROP DATABASE IF EXISTS icefloe_regress", db="postgres")
    psql("CREATE DATABASE icefloe_regress", db="postgres")
    psql("DROP ROLE IF EXISTS alice; DROP ROLE IF EXISTS bob", db="postgres")
    setup_sql = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sql", "setup.sql")
    cmd = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", f"warehouse_url=file://{ARGS.warehouse}",
           "-h", ARGS.host, "-p", str(ARGS.port), "-U", ARGS.user, "-d", "icefloe_regress", "-f", setup_sql]
    p = subprocess.run(cmd, capture_output=True, text=True, env=PG_ENV)
    if p.returncode != 0:
        raise SqlError(p.stderr)


def main():
    global ARGS, PG_ENV
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--host", default="/tmp")
    ap.add_argument("--port", type=int, default=55432)
    ap.add_argument("--user", default="postgres")
    ap.add_argument("-k", default="", help="run only tests whose name contains this")
    ARGS = ap.parse_args()
    ARGS.warehouse = os.path.abspath(ARGS.warehouse)
    PG_ENV = dict(os.environ, PGOPTIONS="-c TimeZone=UTC -c DateStyle=ISO,YMD -c extra_float_digits=1 -c client_min_messages=warning")
    fixture_snapshot_tests()
    setup()
    passed = failed = skipped = 0
    for t in TESTS:
        if ARGS.k and ARGS.k not in t.__name__:
            continue
        t0 = time.time()
        try:
            t()
            passed += 1
            print(f"ok   {t.__name__} ({time.time() - t0:.1f}s)", flush=True)
        except Skip as e:
            skipped += 1
            print(f"skip {t.__name__}: {e}", flush=True)
        except Exception as e:  # noqa: BLE001 - a test harness reports every failure
            failed += 1
            msg = str(e) if isinstance(e, (AssertionError, SqlError)) else traceback.format_exc()
            print(f"FAIL {t.__name__} ({time.time() - t0:.1f}s)\n     " + msg.replace("\n", "\n     ")[:4000], flush=True)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
