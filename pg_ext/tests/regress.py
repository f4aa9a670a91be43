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


def psql(sql, user=None, db="icefloe_regress", timeout=300, notices=False):
    """Runs SQL with psql; returns stdout (with `notices`, stdout and the server's notices on
    stderr). Raises SqlError (with the SQLSTATE) on error."""
    cmd = [
        "psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose",
        "-h", ARGS.host, "-p", str(ARGS.port), "-U", user or ARGS.user, "-d", db,
    ]
    p = subprocess.run(cmd, input=sql, capture_output=True, text=True, env=PG_ENV, timeout=timeout)
    if p.returncode != 0:
        m = re.search(r"ERROR:\s+([0-9A-Z]{5}):", p.stderr)
        raise SqlError(p.stderr, m.group(1) if m else None)
    return p.stdout + p.stderr if notices else p.stdout


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


def foreign_table_names(schema):
    """The foreign tables of `schema`, comma-separated, sorted by name."""
    return psql("SELECT string_agg(foreign_table_name::text, ',' ORDER BY foreign_table_name::text) "
                f"FROM information_schema.foreign_tables WHERE foreign_table_schema = '{schema}'").strip()


@test
def import_lists_every_table_with_limit_and_except():
    n = len(load_fixtures())
    tables = psql("SELECT count(*) FROM information_schema.foreign_tables WHERE foreign_table_schema = 'cur'").strip()
    assert int(tables) == n, f"{tables} tables imported, want {n}"
    psql("DROP SCHEMA IF EXISTS lim CASCADE; CREATE SCHEMA lim;"
         "IMPORT FOREIGN SCHEMA db LIMIT TO (v3_types, v3_basic) FROM SERVER lake INTO lim")
    got = foreign_table_names("lim")
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
    """Row estimates: the snapshot summary's records minus its deleted rows (item 14)."""
    p = explain("SELECT * FROM cur.v3_dv_large")
    m = next(m for m in load_fixtures() if m["table"] == "v3_dv_large")
    snap = next(s for s in m["snapshots"] if s["snapshot_id"] == m["current_snapshot_id"])
    summary = snap["summary"]
    live = int(summary["total-records"]) - int(summary["total-position-deletes"]) - int(summary["total-equality-deletes"])
    assert live == snap["rows"] and p["Plan Rows"] == live, (p["Plan Rows"], live)


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
def broken_rule_that_keeps_the_rows_warns_and_strict_refuses():
    """A format version 2 table with default values (as PyIceberg writes them): read as Iceberg
    Java reads it, with one WARNING per scan; a server with `strict` refuses it."""
    d = corrupt_copy("equality_deletes_v2", "v2_defaults")
    meta = os.path.join(d, "metadata")
    v = open(os.path.join(meta, "version-hint.text")).read().strip()
    path = os.path.join(meta, f"v{v}.metadata.json")
    m = json.load(open(path))
    for s in m["schemas"]:
        for f in s["fields"]:
            if f["type"] == "string":
                f["initial-default"] = "none"
                f["write-default"] = "none"
    json.dump(m, open(path, "w"))
    want = next(t for t in load_fixtures() if t["table"] == "equality_deletes_v2")
    want = len(expected_rows(next(s for s in want["snapshots"] if s["snapshot_id"] == want["current_snapshot_id"])))
    psql("DROP SCHEMA IF EXISTS pol CASCADE; CREATE SCHEMA pol;"
         "DROP SERVER IF EXISTS strict_lake CASCADE;"
         "CREATE SERVER strict_lake FOREIGN DATA WRAPPER icefloe OPTIONS (strict 'true');"
         f"CREATE FOREIGN TABLE pol.lenient (id bigint) SERVER lake OPTIONS (location '{d}');"
         f"CREATE FOREIGN TABLE pol.strict (id bigint) SERVER strict_lake OPTIONS (location '{d}')")
    out = psql("SELECT count(*) FROM (SELECT id FROM pol.lenient OFFSET 0) s", notices=True)
    assert out.split("\n")[0].strip() == str(want), out
    assert out.count("WARNING") == 1, out
    for part in ["has a default value", "format version 2 table", "[newer-format-feature]", "strict"]:
        assert part in out, f"WARNING lacks {part!r}: {out}"
    expect_error("SELECT count(*) FROM (SELECT id FROM pol.strict OFFSET 0) s",
                 contains=["metadata.json", "has a default value"])
    expect_error("CREATE SERVER bad_strict FOREIGN DATA WRAPPER icefloe OPTIONS (strict 'maybe')",
                 sqlstate="HV024")
    psql("DROP SCHEMA pol CASCADE; DROP SERVER strict_lake CASCADE")


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
# security


def roles(*names):
    """Fresh login roles with USAGE on schema cur and the right to create in public."""
    for n in names:
        psql(f"DROP OWNED BY {n} CASCADE; DROP ROLE {n}") if psql(f"SELECT 1 FROM pg_roles WHERE rolname = '{n}'").strip() else None
        psql(f"CREATE ROLE {n} LOGIN; GRANT USAGE ON SCHEMA cur TO {n}; GRANT CREATE, USAGE ON SCHEMA public TO {n}")


def local_spellings(path, datadir):
    """Every spelling of local path `path` the core's location parser reads as a local file:
    scheme case, leading and embedded spaces, tabs and newlines (the URL parser drops them),
    file://localhost, a relative path (relative to the data directory)."""
    return [
        f"FILE:{path}", f"File:{path}", f"FiLe://{path}", f"file:{path}", f"file://localhost{path}",
        f" file://{path}", f"  FILE:{path}", f"\tfile://{path}", f"\nfile://{path}",
        f"fi\tle://{path}", f"file:\t//{path}", f"f\ni\tle:{path}", f" {path}", f"\t{path}",
        f"{path}", os.path.relpath(path, datadir),
    ]


def sql_lit(s):
    """A string literal that may hold tabs and newlines (E'...')."""
    return "E'" + s.replace("\\", "\\\\").replace("'", "\\'").replace("\t", "\\t").replace("\n", "\\n") + "'"


@test
def local_url_spellings_all_need_privileges():
    """Item 1: every spelling of a local location is a local read: refused to a role without
    pg_read_server_files (server warehouse, table location, and at scan time), and read by
    one with it."""
    roles("mallory")
    psql("GRANT USAGE ON FOREIGN DATA WRAPPER icefloe TO mallory; GRANT USAGE ON FOREIGN SERVER lake TO mallory")
    table = os.path.join(ARGS.warehouse, "db", "v3_basic")
    want = int(psql("SELECT count(*) FROM cur.v3_basic").strip())
    datadir = psql("SHOW data_directory").strip()
    for i, loc in enumerate(local_spellings(table, datadir)):
        wh = loc[: len(loc) - len("/db/v3_basic")] or "."
        expect_error(f"CREATE SERVER m_srv{i} FOREIGN DATA WRAPPER icefloe OPTIONS (warehouse {sql_lit(wh)})",
                     sqlstate="42501", contains="pg_read_server_files", user="mallory")
        expect_error(f"CREATE FOREIGN TABLE m_t{i} (id bigint) SERVER lake OPTIONS (location {sql_lit(loc)})",
                     sqlstate="42501", contains="pg_read_server_files", user="mallory")
        # A superuser's table with this spelling reads the local table (a path after spaces
        # is a relative path: a local file under the data directory) ...
        psql(f"DROP FOREIGN TABLE IF EXISTS sp_t; CREATE FOREIGN TABLE sp_t (id bigint) SERVER lake OPTIONS (location {sql_lit(loc)});"
             "GRANT SELECT ON sp_t TO mallory")
        if not loc[0].isspace() or ":" in loc:
            got = int(psql("SELECT count(*) FROM sp_t").strip())
            assert got == want, (loc, got, want)
        # ... which mallory may not scan, whatever the spelling.
        expect_error("SELECT count(*) FROM sp_t", sqlstate="42501", user="mallory")
    psql("DROP FOREIGN TABLE sp_t")
    # Schemes the parser does not open are errors, not remote locations.
    expect_error("CREATE FOREIGN TABLE m_http (id bigint) SERVER lake OPTIONS (location 'http://example.com/t')",
                 contains="unsupported storage scheme", user="mallory")


@test
def metadata_functions_check_usage_and_local_files():
    """Item 2: icefloe_snapshots applies a scan's checks: USAGE on the server, the local-file
    rule in every spelling, SELECT on the foreign table."""
    roles("nobody", "reader")
    path = os.path.join(ARGS.warehouse, "db", "v3_basic")
    for loc in [f" file://{path}", f"FILE:{path}", f" {path}", "db.v3_basic"]:
        expect_error(f"SELECT count(*) FROM icefloe_snapshots({sql_lit(loc)}, 'lake')", sqlstate="42501", user="nobody")
    psql("GRANT USAGE ON FOREIGN SERVER lake TO reader")
    for loc in [f" {path}", f"\tfile://{path}", f"File:{path}", "db.v3_basic"]:
        expect_error(f"SELECT count(*) FROM icefloe_snapshots({sql_lit(loc)}, 'lake')", sqlstate="42501",
                     contains="pg_read_server_files", user="reader")
    expect_error("SELECT count(*) FROM icefloe_snapshots('cur.v3_basic'::regclass)", sqlstate="42501", user="nobody")
    for f in ["icefloe_files", "icefloe_manifests", "icefloe_refs", "icefloe_history"]:
        expect_error(f"SELECT count(*) FROM {f}('cur.v3_basic'::regclass)", sqlstate="42501", user="nobody")
    # With SELECT on the table but without the right to read local files: still refused.
    psql("GRANT SELECT ON cur.v3_basic TO nobody")
    expect_error("SELECT count(*) FROM icefloe_snapshots('cur.v3_basic'::regclass)", sqlstate="42501",
                 contains="pg_read_server_files", user="nobody")
    psql("GRANT pg_read_server_files TO reader")
    n = int(psql(f"SELECT count(*) FROM icefloe_snapshots({sql_lit(' FILE:' + path)}, 'lake')", user="reader").strip())
    assert n == len(next(m for m in load_fixtures() if m["table"] == "v3_basic")["snapshots"]), n


@test
def views_read_with_the_owners_rights():
    """Item 3: a view's relations are checked as the view's owner (checkAsUser), as in
    postgres_fdw: a reader without pg_read_server_files reads through a privileged owner's
    view, and a privileged reader gains nothing through an unprivileged owner's view."""
    roles("owner_priv", "owner_plain", "viewer")
    psql("GRANT pg_read_server_files TO owner_priv; GRANT SELECT ON cur.v3_types TO owner_priv, owner_plain")
    psql("CREATE VIEW public.v_priv AS SELECT id FROM cur.v3_types", user="owner_priv")
    psql("CREATE VIEW public.v_plain AS SELECT id FROM cur.v3_types", user="owner_plain")
    psql("GRANT SELECT ON public.v_priv, public.v_plain TO viewer")
    want = int(psql("SELECT count(*) FROM cur.v3_types").strip())
    got = int(psql("SELECT count(*) FROM public.v_priv", user="viewer").strip())
    assert got == want, (got, want)
    expect_error("SELECT count(*) FROM public.v_plain", sqlstate="42501", user="viewer")
    # Postgres itself reads the view as its owner even for a superuser.
    expect_error("SELECT count(*) FROM public.v_plain", sqlstate="42501")
    psql("DROP VIEW public.v_priv, public.v_plain")


class RecordingS3:
    """A loopback HTTP server that answers every request 404 (NoSuchKey) and records the
    requests' Authorization headers: it shows which credentials a backend sent."""

    def __init__(self, delay=0.0):
        import http.server
        rec = self.requests = []

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                rec.append((self.path, self.headers.get("Authorization")))
                time.sleep(delay)
                body = b"<?xml version='1.0'?><Error><Code>NoSuchKey</Code><Message>no</Message></Error>"
                self.send_response(404)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_HEAD = do_GET

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


@test
def views_use_the_owners_user_mapping():
    """Item 3: the user mapping that applies to a view's foreign table is its owner's."""
    roles("vowner", "vreader")
    s3 = RecordingS3()
    try:
        psql(f"DROP SERVER IF EXISTS rec CASCADE; CREATE SERVER rec FOREIGN DATA WRAPPER icefloe OPTIONS "
             f"(warehouse 's3://bucket/wh', aws_endpoint 'http://127.0.0.1:{s3.port}', aws_allow_http 'true', aws_region 'us-east-1');"
             "GRANT USAGE ON FOREIGN SERVER rec TO vowner, vreader;"
             "CREATE USER MAPPING FOR vowner SERVER rec OPTIONS (aws_access_key_id 'OWNERKEY', aws_secret_access_key 's1');"
             "CREATE USER MAPPING FOR vreader SERVER rec OPTIONS (aws_access_key_id 'READERKEY', aws_secret_access_key 's2');"
             "CREATE FOREIGN TABLE public.rec_t (id bigint) SERVER rec OPTIONS (\"table\" 'db.t');"
             "GRANT SELECT ON public.rec_t TO vowner")
        psql("CREATE VIEW public.rec_v AS SELECT id FROM public.rec_t", user="vowner")
        psql("GRANT SELECT ON public.rec_v TO vreader")
        expect_error("SET statement_timeout = '30s'; SELECT count(*) FROM public.rec_v", user="vreader")
        keys = {re.search(r"Credential=([A-Z]+)/", a).group(1) for _, a in s3.requests if a and "Credential=" in a}
        assert keys == {"OWNERKEY"}, (keys, s3.requests[:3])
    finally:
        s3.close()
        psql("DROP VIEW IF EXISTS public.rec_v; DROP SERVER IF EXISTS rec CASCADE")


@test
def endpoints_and_ambient_credentials_belong_to_the_server_owner():
    """Item 4: endpoints are server options (not a role's user mapping); the machine's ambient
    credentials are used only when a superuser opts the server in; credential options naming
    local files are superuser only."""
    roles("steer")
    psql("GRANT USAGE ON FOREIGN DATA WRAPPER icefloe TO steer")
    # A superuser chooses the endpoint (network destinations rule) and hands the server over.
    psql("CREATE SERVER steer_s3 FOREIGN DATA WRAPPER icefloe OPTIONS (warehouse 's3://b/w', aws_endpoint 'http://127.0.0.1:9');"
         "ALTER SERVER steer_s3 OWNER TO steer")
    for opt in ["aws_endpoint 'http://169.254.169.254'", "aws_allow_http 'true'", "aws_region 'us-east-1'", "warehouse 's3://other'"]:
        expect_error(f"CREATE USER MAPPING FOR steer SERVER steer_s3 OPTIONS ({opt})", sqlstate="HV00D", contains="SERVER", user="steer")
    expect_error("CREATE SERVER steer_amb FOREIGN DATA WRAPPER icefloe OPTIONS (warehouse 's3://b/w', ambient_credentials 'true')",
                 sqlstate="42501", contains="superuser", user="steer")
    expect_error("ALTER SERVER steer_s3 OPTIONS (ADD ambient_credentials 'true')", sqlstate="42501", user="steer")
    for opt in ["google_service_account '/var/lib/postgresql/key.json'", "google_application_credentials '/etc/passwd'"]:
        expect_error(f"CREATE USER MAPPING FOR steer SERVER steer_s3 OPTIONS ({opt})", sqlstate="42501", contains="superuser", user="steer")
        psql(f"CREATE USER MAPPING FOR steer SERVER steer_s3 OPTIONS ({opt}); DROP USER MAPPING FOR steer SERVER steer_s3")
    psql("CREATE SERVER su_amb FOREIGN DATA WRAPPER icefloe OPTIONS (warehouse 's3://b/w', ambient_credentials 'true'); DROP SERVER su_amb")
    psql("DROP SERVER steer_s3 CASCADE")
    # Without a mapping and without the opt-in, requests go out unsigned (never with the
    # machine's own credentials).
    s3 = RecordingS3()
    try:
        psql(f"DROP SERVER IF EXISTS anon CASCADE; CREATE SERVER anon FOREIGN DATA WRAPPER icefloe OPTIONS "
             f"(warehouse 's3://bucket/wh', aws_endpoint 'http://127.0.0.1:{s3.port}', aws_allow_http 'true', aws_region 'us-east-1');"
             "CREATE FOREIGN TABLE public.anon_t (id bigint) SERVER anon OPTIONS (\"table\" 'db.t')")
        expect_error("SET statement_timeout = '30s'; SELECT count(*) FROM public.anon_t")
        assert s3.requests, "no request reached the endpoint"
        assert all(a is None for _, a in s3.requests), s3.requests[:3]
        # With ambient credentials, a location must stay under the server's warehouse.
        psql("ALTER SERVER anon OPTIONS (ADD ambient_credentials 'true');"
             "CREATE FOREIGN TABLE public.anon_l (id bigint) SERVER anon OPTIONS (location 's3://elsewhere/t')")
        expect_error("SELECT count(*) FROM public.anon_l", sqlstate="42501", contains="warehouse")
    finally:
        s3.close()
        psql("DROP SERVER IF EXISTS anon CASCADE")


class MotoS3:
    """A real S3 server (moto, installed by scripts/servers install) on a free loopback port,
    holding a copy of the fixture warehouse under s3://lake/wh/ (keys as Iceberg writes them)."""

    def __init__(self):
        import urllib.request
        tools = os.environ.get("ICEFLOE_TOOLS", os.path.expanduser("~/.cache/icefloe-tools"))
        exe = os.path.join(tools, "bin", "moto_server")
        assert os.path.exists(exe), f"{exe} is missing: run scripts/servers install"
        self.port = free_port()
        self.proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port, self.proc, "moto_server")
        self.url = f"http://127.0.0.1:{self.port}"

        def put(key, data=b""):
            # moto accepts unsigned requests; the key is sent as written (quoted for HTTP).
            from urllib.parse import quote
            # An explicit Content-Type: with urllib's default (form data) moto's server reads
            # the body as a form and never answers.
            req = urllib.request.Request(f"{self.url}/{quote(key, safe='/=')}", data=data, method="PUT",
                                         headers={"Content-Type": "application/octet-stream"})
            urllib.request.urlopen(req, timeout=60).read()

        put("lake")
        root = os.path.join(ARGS.fixtures, "warehouse")
        for d, _, files in os.walk(root):
            for f in files:
                path = os.path.join(d, f)
                with open(path, "rb") as fh:
                    put("lake/wh/" + os.path.relpath(path, root), fh.read())

    def close(self):
        self.proc.kill()
        self.proc.wait()


@test
def import_foreign_schema_from_an_s3_warehouse():
    """IMPORT FOREIGN SCHEMA lists a namespace of a warehouse on S3 (the core's
    warehouse catalog over object_store), and every imported table reads its current
    snapshot's rows exactly."""
    s3 = MotoS3()
    try:
        psql("DROP SERVER IF EXISTS s3wh CASCADE; CREATE SERVER s3wh FOREIGN DATA WRAPPER icefloe OPTIONS "
             f"(warehouse 's3://lake/wh', aws_endpoint '{s3.url}', aws_allow_http 'true', aws_region 'us-east-1');"
             "CREATE USER MAPPING FOR CURRENT_USER SERVER s3wh OPTIONS (aws_access_key_id 'testing', aws_secret_access_key 'testing');"
             "DROP SCHEMA IF EXISTS s3db CASCADE; CREATE SCHEMA s3db;"
             "IMPORT FOREIGN SCHEMA db FROM SERVER s3wh INTO s3db")
        check_current_rows("s3db")
        expect_error("IMPORT FOREIGN SCHEMA nosuchns FROM SERVER s3wh INTO s3db", contains="nosuchns")
    finally:
        s3.close()
        psql("DROP SCHEMA IF EXISTS s3db CASCADE; DROP SERVER IF EXISTS s3wh CASCADE")


def free_port():
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_port(port, proc, what):
    import socket
    deadline = time.time() + 90
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.time() < deadline and proc.poll() is None, f"{what} did not start"
            time.sleep(0.2)


class RestCatalog:
    """Apache Iceberg Java's REST catalog handlers (tests/rest-catalog, compiled by
    scripts/test-pg into ICEFLOE_REST_JAVA_CP) over a fresh copy of the fixture warehouse that
    the postgres user can read, on a free loopback port. `args` are the server's options."""

    CLIENT_ID, CLIENT_SECRET, TOKEN = "pg-client", "pg-client-secret", "pg-static-token"

    def __init__(self, *args):
        cp = os.environ.get("ICEFLOE_REST_JAVA_CP")
        assert cp, "ICEFLOE_REST_JAVA_CP is unset: run the regression tests through scripts/test-pg"
        self.dir = os.path.join(os.path.dirname(ARGS.warehouse), f"rest-{free_port()}")
        self.warehouse = os.path.join(self.dir, "warehouse")
        shutil.copytree(os.path.join(ARGS.fixtures, "warehouse"), self.warehouse)
        subprocess.run(["chmod", "-R", "a+rX", self.dir], check=True)
        self.port = free_port()
        args = [a.replace("{warehouse}", self.warehouse) for a in args]
        self.proc = subprocess.Popen(
            ["java", "-Xmx256m", "-cp", cp, "org.apache.iceberg.rest.IcefloeTestCatalogServer",
             "--port", str(self.port), "--port-file", os.path.join(self.dir, "port"),
             "--warehouse", self.warehouse, "--client-id", self.CLIENT_ID,
             "--client-secret", self.CLIENT_SECRET, "--token", self.TOKEN, *args],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "log"), "w"))
        wait_port(self.port, self.proc, "the REST catalog")
        self.url = f"http://127.0.0.1:{self.port}"

    def close(self):
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class LoggingProxy:
    """tests/fault_proxy.py without faults in front of a server: it logs the access key each
    request was signed with."""

    def __init__(self, upstream_port):
        self.port = free_port()
        self.log = os.path.join(os.path.dirname(ARGS.warehouse), f"proxy-{self.port}.log")
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fault_proxy.py")
        self.proc = subprocess.Popen([sys.executable, script, "--port", str(self.port),
                                      "--upstream", f"127.0.0.1:{upstream_port}", "--log", self.log],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port, self.proc, "the logging proxy")
        self.url = f"http://127.0.0.1:{self.port}"

    def keys(self):
        with open(self.log) as f:
            return {l.split(" ")[3] for l in f.read().splitlines() if l.startswith("ok GET ") and len(l.split(" ")) > 3}

    def close(self):
        self.proc.kill()
        self.proc.wait()


def check_current_rows(schema):
    """Every fixture table imported into `schema` reads its current snapshot's rows exactly, and
    count(*) and sum(_row_id) equal the expected rows'."""
    fixtures = load_fixtures()
    names = foreign_table_names(schema)
    assert names == ",".join(sorted(m["table"] for m in fixtures)), names
    problems = []
    for m in fixtures:
        snap = next(s for s in m["snapshots"] if s["snapshot_id"] == m["current_snapshot_id"])
        try:
            problems += [f"{m['table']}: {p}" for p in compare_snapshot(schema, m["table"], snap)]
        except SqlError as e:
            if VARIANT_PLACEHOLDER not in str(e):
                raise
        want = expected_rows(snap)
        got = psql(f"SELECT count(*), coalesce(sum(_row_id), 0) FROM {schema}.{quote_ident(m['table'])}").strip()
        want_sum = sum(int(r["_row_id"]) for r in want if r.get("_row_id") is not None)
        if got != f"{len(want)}|{want_sum}":
            problems.append(f"{m['table']}: count|sum(_row_id) {got}, want {len(want)}|{want_sum}")
    assert not problems, "\n".join(problems)


@test
def import_and_read_through_the_rest_catalog_with_vended_credentials():
    """A server of a REST catalog (catalog_uri, warehouse) whose tables live in S3;
    the user mapping holds only the OAuth2 client credential; the catalog vends S3
    credentials with each loadTable. IMPORT FOREIGN SCHEMA lists the namespace through the
    catalog, every table reads its current rows, and every S3 request is signed with the
    vended key (never unsigned, never the machine's)."""
    s3 = MotoS3()
    proxy = LoggingProxy(s3.port)
    catalog = RestCatalog("--warehouse-name", "fixtures", "--prefix", "pgtest", "--scope", "catalog",
                          "--vend", "s3.access-key-id=VENDEDKEY", "--vend", "s3.secret-access-key=vended-secret",
                          "--vend", f"s3.endpoint={proxy.url}", "--vend", "s3.region=us-east-1",
                          "--vend-prefix", "s3://lake/wh", "--metadata-base", "{warehouse}=s3://lake/wh")
    try:
        psql("DROP SERVER IF EXISTS rc CASCADE; DROP SCHEMA IF EXISTS rcdb CASCADE; CREATE SCHEMA rcdb;"
             f"CREATE SERVER rc FOREIGN DATA WRAPPER icefloe OPTIONS (catalog_uri '{catalog.url}', warehouse 'fixtures', scope 'catalog');"
             f"CREATE USER MAPPING FOR CURRENT_USER SERVER rc OPTIONS (credential '{catalog.CLIENT_ID}:{catalog.CLIENT_SECRET}');"
             "IMPORT FOREIGN SCHEMA db FROM SERVER rc INTO rcdb")
        check_current_rows("rcdb")
        keys = proxy.keys()
        assert keys == {"VENDEDKEY"}, keys
        # Time travel through an imported table's options, as on a warehouse server.
        m = next(m for m in load_fixtures() if m["table"] == "v3_dv_large")
        first = m["snapshots"][0]
        psql(f"ALTER FOREIGN TABLE rcdb.v3_dv_large OPTIONS (ADD snapshot_id '{first['snapshot_id']}')")
        problems = compare_snapshot("rcdb", "v3_dv_large", first)
        assert not problems, problems
        # icefloe_snapshots() by name through the catalog server.
        n = psql("SELECT count(*) FROM icefloe_snapshots('db.v3_dv_large', 'rc')").strip()
        assert n == str(len(m["snapshots"])), (n, len(m["snapshots"]))
        expect_error("IMPORT FOREIGN SCHEMA nosuchns FROM SERVER rc INTO rcdb", contains="nosuchns")
    finally:
        catalog.close()
        proxy.close()
        s3.close()
        psql("DROP SCHEMA IF EXISTS rcdb CASCADE; DROP SERVER IF EXISTS rc CASCADE")


@test
def rest_catalog_servers_keep_secrets_in_mappings_and_local_files_to_privileged_roles():
    """Catalog secrets only in user mappings, catalog endpoints only on servers, no
    warehouse-only options on catalog servers or their tables, a refused token is an
    authorization error naming the catalog, and a catalog answering local metadata locations
    (this one serves the warehouse from the server's disk) is read only for superusers and
    members of pg_read_server_files."""
    catalog = RestCatalog()
    roles("rcuser")
    try:
        psql("DROP SERVER IF EXISTS rcl CASCADE; DROP SCHEMA IF EXISTS rcl CASCADE; CREATE SCHEMA rcl;"
             f"CREATE SERVER rcl FOREIGN DATA WRAPPER icefloe OPTIONS (catalog_uri '{catalog.url}');"
             "GRANT USAGE ON FOREIGN SERVER rcl TO rcuser; GRANT CREATE, USAGE ON SCHEMA rcl TO rcuser;"
             f"CREATE USER MAPPING FOR PUBLIC SERVER rcl OPTIONS (token '{catalog.TOKEN}')")
        expect_error(f"CREATE SERVER leak FOREIGN DATA WRAPPER icefloe OPTIONS (catalog_uri '{catalog.url}', token 't')",
                     sqlstate="HV00D", contains="USER MAPPING")
        expect_error(f"CREATE SERVER leak FOREIGN DATA WRAPPER icefloe OPTIONS (catalog_uri '{catalog.url}', credential 'a:b')",
                     sqlstate="HV00D", contains="USER MAPPING")
        expect_error("CREATE USER MAPPING FOR rcuser SERVER rcl OPTIONS (catalog_uri 'http://127.0.0.1:9')",
                     sqlstate="HV00D", contains="SERVER", user="rcuser")
        expect_error("CREATE SERVER bad FOREIGN DATA WRAPPER icefloe OPTIONS (catalog_uri 'file:///etc')", contains="uri")
        expect_error(f"CREATE SERVER bad FOREIGN DATA WRAPPER icefloe OPTIONS (catalog_uri '{catalog.url}', path_map 'a=b')",
                     contains="REST catalog")
        expect_error(f"CREATE SERVER bad FOREIGN DATA WRAPPER icefloe OPTIONS (catalog_uri '{catalog.url}', rest_sigv4_enabled 'maybe')",
                     contains="rest.sigv4-enabled")
        # The superuser reads the catalog's local tables.
        psql("IMPORT FOREIGN SCHEMA db LIMIT TO (v3_basic, v3_lineage) FROM SERVER rcl INTO rcl")
        for t in ["v3_basic", "v3_lineage"]:
            m = next(m for m in load_fixtures() if m["table"] == t)
            snap = next(s for s in m["snapshots"] if s["snapshot_id"] == m["current_snapshot_id"])
            problems = compare_snapshot("rcl", t, snap)
            assert not problems, problems
        psql("GRANT SELECT ON rcl.v3_basic TO rcuser")
        # A role without pg_read_server_files: refused before the local metadata is read.
        expect_error("SELECT count(*) FROM rcl.v3_basic", sqlstate="42501", contains="pg_read_server_files", user="rcuser")
        expect_error("IMPORT FOREIGN SCHEMA db FROM SERVER rcl INTO rcl", sqlstate="42501", contains="pg_read_server_files", user="rcuser")
        expect_error("SELECT count(*) FROM icefloe_snapshots('db.v3_basic', 'rcl')", sqlstate="42501", user="rcuser")
        expect_error("CREATE FOREIGN TABLE rcl.byloc (id int) SERVER rcl OPTIONS (location '/tmp/x');"
                     "SELECT * FROM rcl.byloc", contains="namespace", user="postgres")
        psql("GRANT pg_read_server_files TO rcuser")
        n = psql("SELECT count(*) FROM rcl.v3_basic", user="rcuser").strip()
        m = next(m for m in load_fixtures() if m["table"] == "v3_basic")
        snap = next(s for s in m["snapshots"] if s["snapshot_id"] == m["current_snapshot_id"])
        assert n == str(len(expected_rows(snap))), n
        # A token the catalog refuses: an authorization error naming the catalog server.
        psql("CREATE USER MAPPING FOR rcuser SERVER rcl OPTIONS (token 'wrong-token')")
        expect_error("SELECT count(*) FROM rcl.v3_basic", sqlstate="28000", contains="rcl", user="rcuser")
        # A view its owner reads with the owner's token does not lend the table it loaded to
        # the caller's own scan in the same statement: that one uses the caller's token.
        psql("CREATE VIEW rcl.v_basic AS SELECT count(id) AS n FROM rcl.v3_basic; GRANT SELECT ON rcl.v_basic TO rcuser")
        n = psql("SELECT n FROM rcl.v_basic", user="rcuser").strip()
        assert n == str(len(expected_rows(snap))), n
        expect_error("SELECT (SELECT n FROM rcl.v_basic), (SELECT count(id) FROM rcl.v3_basic)",
                     sqlstate="28000", contains="rcl", user="rcuser")
    finally:
        catalog.close()
        psql("DROP SCHEMA IF EXISTS rcl CASCADE; DROP SERVER IF EXISTS rcl CASCADE")
        psql("DROP OWNED BY rcuser CASCADE; DROP ROLE IF EXISTS rcuser")


# ---------------------------------------------------------------------------------------------
# wrong or unstable results


@test
def narrower_typmods_are_errors_when_planned():
    """Item 5: a declared numeric(p,s), time(p) or timestamp(p) that cannot hold every Iceberg
    value exactly is an error at planning (EXPLAIN included); wide enough ones read exact."""
    bad = ["dec9 numeric(9,0)", "dec9 numeric(8,2)", "dec9 numeric(9,1)", "dec18 numeric(18,5)",
           "ts timestamp(0) without time zone", "tstz timestamp(3) with time zone", "dec9 numeric(3,-2)"]
    for i, col in enumerate(bad):
        psql(f"DROP FOREIGN TABLE IF EXISTS tm{i}; CREATE FOREIGN TABLE tm{i} (id bigint, {col}) SERVER lake OPTIONS (\"table\" 'db.v3_types')")
        name = col.split()[0]
        expect_error(f"EXPLAIN SELECT id FROM tm{i} WHERE {name} IS NOT NULL", sqlstate="HV004", contains=name)
        cond = f"{name} = 10000000" if name.startswith("dec") else f"{name} > '2000-01-01'"
        expect_error(f"SELECT count(*) FROM tm{i} WHERE {cond}", sqlstate="HV004", contains=name)
        psql(f"DROP FOREIGN TABLE tm{i}")
    want = psql("SELECT dec9::text FROM cur.v3_types ORDER BY id").split()
    for col in ["dec9 numeric(9,2)", "dec9 numeric(12,4)", "dec9 numeric"]:
        psql(f"DROP FOREIGN TABLE IF EXISTS tmok; CREATE FOREIGN TABLE tmok (id bigint, {col}) SERVER lake OPTIONS (\"table\" 'db.v3_types')")
        got = psql("SELECT dec9::text FROM tmok ORDER BY id").split()
        assert [Decimal(x) for x in got] == [Decimal(x) for x in want], (col, got, want)
        n_pruned = int(psql("SELECT count(*) FROM tmok WHERE dec9 = 9999999.99").strip())
        n_all = int(psql("SELECT count(*) FROM (SELECT * FROM tmok OFFSET 0) t WHERE dec9 = 9999999.99").strip())
        assert n_pruned == n_all and n_all >= 1, (col, n_pruned, n_all)
    psql("DROP FOREIGN TABLE tmok")


@test
def as_of_is_the_same_instant_in_every_time_zone():
    """Item 6: as_of without an offset is UTC, whatever the session's TimeZone."""
    m = next(m for m in load_fixtures() if m["table"] == "v3_basic")
    first = m["snapshots"][0]
    ms = first["timestamp_ms"] + 500
    text = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}"
    psql(f"DROP FOREIGN TABLE IF EXISTS asof_tz; CREATE FOREIGN TABLE asof_tz (id bigint) SERVER lake "
         f"OPTIONS (\"table\" 'db.v3_basic', as_of '{text}')")
    for tz in ["UTC", "Etc/GMT+12", "Asia/Tokyo", "America/St_Johns"]:
        got = int(psql(f"SET TimeZone = '{tz}'; SELECT count(*) FROM asof_tz").strip())
        assert got == first["rows"], (tz, got, first["rows"])
    # IMPORT stores the instant.
    psql(f"DROP SCHEMA IF EXISTS asof_imp CASCADE; CREATE SCHEMA asof_imp; SET TimeZone = 'Asia/Tokyo';"
         f"IMPORT FOREIGN SCHEMA db LIMIT TO (v3_basic) FROM SERVER lake INTO asof_imp OPTIONS (as_of '{text}')")
    opt = psql("SELECT array_to_string(ftoptions, ',') FROM pg_foreign_table WHERE ftrelid = 'asof_imp.v3_basic'::regclass").strip()
    assert f"as_of={ms}" in opt, opt
    got = int(psql("SET TimeZone = 'Etc/GMT+12'; SELECT count(*) FROM asof_imp.v3_basic").strip())
    assert got == first["rows"], got
    psql("DROP SCHEMA asof_imp CASCADE; DROP FOREIGN TABLE asof_tz")


def scratch_table(src, name, version):
    """A scratch copy of fixture table `src` whose version-hint points at metadata `version`;
    returns (directory, function that moves the hint)."""
    d = corrupt_copy(src, name)
    subprocess.run(["chmod", "-R", "a+rwX", d], check=True)
    hint = os.path.join(d, "metadata", "version-hint.text")

    def set_version(v):
        with open(hint, "w") as f:
            f.write(f"{v}\n")
    set_version(version)
    return d, set_version


@test
def snapshots_are_pinned_per_statement_and_transaction():
    """Item 7: a new metadata version committed between two statements is not seen inside a
    REPEATABLE READ (or SERIALIZABLE) transaction, nor in READ COMMITTED with
    icefloe.snapshot_pinning = transaction; in statement mode every scan of one statement reads
    one version."""
    d, set_version = scratch_table("v3_basic", "pinned", 2)
    psql(f"DROP FOREIGN TABLE IF EXISTS pin_t; CREATE FOREIGN TABLE pin_t (id bigint) SERVER lake OPTIONS (location '{d}')")
    hint = os.path.join(d, "metadata", "version-hint.text")
    for iso, pinning, pinned in [("REPEATABLE READ", None, True), ("SERIALIZABLE", None, True),
                                 ("READ COMMITTED", None, False), ("READ COMMITTED", "transaction", True)]:
        set_version(2)
        # psql sends each statement of a script on its own: COPY commits the new version
        # between the two SELECTs of the transaction.
        out = psql((f"SET icefloe.snapshot_pinning = {pinning};\n" if pinning else "")
                   + f"BEGIN ISOLATION LEVEL {iso};\nSELECT count(*) FROM pin_t;\n"
                   f"COPY (SELECT '12') TO '{hint}';\nSELECT count(*) FROM pin_t;\nCOMMIT;\n"
                   "SELECT count(*) FROM pin_t;\n")
        a, b, c = [int(x) for x in out.split()]
        assert a == 1000 and c == 1201, (iso, pinning, a, b, c)
        assert b == (1000 if pinned else 1201), (iso, pinning, a, b)
    # One statement: a function that moves the hint between two scans.
    set_version(2)
    psql(f"""CREATE OR REPLACE FUNCTION pin_two() RETURNS TABLE (a bigint, b bigint) LANGUAGE plpgsql AS $$
             BEGIN
               SELECT count(*) INTO a FROM pin_t;
               COPY (SELECT '12') TO '{hint}';
               SELECT count(*) INTO b FROM pin_t;
               RETURN NEXT;
             END $$""")
    got = psql("SELECT a || ',' || b FROM pin_two()").strip()
    assert got == "1000,1000", got
    assert int(psql("SELECT count(*) FROM pin_t").strip()) == 1201
    psql("DROP FUNCTION pin_two(); DROP FOREIGN TABLE pin_t")


@test
def not_null_columns_never_read_null():
    """Item 8: a NOT NULL column whose field the snapshot read lacks reads the field's
    initial-default, or is an error; NOT NULL over an optional field is an error."""
    m = next(m for m in load_fixtures() if m["table"] == "v3_defaults")
    first = m["snapshots"][0]
    notnull = psql("SELECT attnotnull FROM pg_attribute WHERE attrelid = 'cur.v3_defaults'::regclass AND attname = 'c_req'").strip()
    assert notnull == "t", notnull
    cols = column_types("cur", "v3_defaults")
    coldefs = ", ".join(f"{quote_ident(c)} {t}" + (" NOT NULL" if c == "c_req" else "") for c, t in cols)
    psql(f"DROP FOREIGN TABLE IF EXISTS nn_old; CREATE FOREIGN TABLE nn_old ({coldefs}) SERVER lake "
         f"OPTIONS (\"table\" 'db.v3_defaults', snapshot_id '{first['snapshot_id']}')")
    out = psql("SELECT count(*), count(*) FILTER (WHERE c_req IS NULL), min(c_req), max(c_req) FROM nn_old").strip()
    assert out == f"{first['rows']}|0|100|100", out
    # Every absent column reads its initial-default (c_nodefault has none: NULL).
    row = psql("SELECT c_int, c_str, c_bool, c_dec, c_date, c_nodefault IS NULL FROM nn_old LIMIT 1").strip()
    assert row == "7|hello|t|12.34|2024-01-15|t", row
    # Absent without initial-default, declared NOT NULL: an error, never NULL.
    psql(f"DROP FOREIGN TABLE IF EXISTS nn_bad; CREATE FOREIGN TABLE nn_bad (id bigint, c_nodefault text NOT NULL) SERVER lake "
         f"OPTIONS (\"table\" 'db.v3_defaults', snapshot_id '{first['snapshot_id']}')")
    expect_error("SELECT count(*) FROM nn_bad WHERE c_nodefault IS NULL", sqlstate="HV004", contains="NOT NULL")
    # NOT NULL over an optional field: an error.
    psql("DROP FOREIGN TABLE IF EXISTS nn_opt; CREATE FOREIGN TABLE nn_opt (id bigint, name text NOT NULL) SERVER lake "
         "OPTIONS (\"table\" 'db.v3_basic')")
    expect_error("SELECT count(*) FROM nn_opt WHERE name IS NULL", sqlstate="HV004", contains="optional")
    psql("DROP FOREIGN TABLE nn_old, nn_bad, nn_opt")


@test
def dotted_and_nested_names_read_the_right_table():
    """Item 9: IMPORT stores namespace and table apart, so a table named `v3.basic` reads
    itself and not `v3`'s `basic`; multi-level namespaces import and read."""
    root = os.path.join(ARGS.warehouse, "dotted")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, "v3"))
    shutil.copytree(os.path.join(ARGS.warehouse, "db", "v3_basic"), os.path.join(root, "v3.basic"))
    shutil.copytree(os.path.join(ARGS.warehouse, "db", "v3_types"), os.path.join(root, "v3", "basic"))
    subprocess.run(["chmod", "-R", "a+rX", root], check=True)
    psql("DROP SCHEMA IF EXISTS dn CASCADE; CREATE SCHEMA dn; IMPORT FOREIGN SCHEMA dotted FROM SERVER lake INTO dn")
    names = foreign_table_names("dn")
    assert names == "v3.basic", names
    want = psql("SELECT count(*), sum(id) FROM cur.v3_basic").strip()
    assert psql('SELECT count(*), sum(id) FROM dn."v3.basic"').strip() == want
    psql('DROP SCHEMA IF EXISTS dn2 CASCADE; CREATE SCHEMA dn2; IMPORT FOREIGN SCHEMA "dotted.v3" FROM SERVER lake INTO dn2')
    want = psql("SELECT count(*), sum(id) FROM cur.v3_types").strip()
    assert psql("SELECT count(*), sum(id) FROM dn2.basic").strip() == want
    opt = psql("SELECT array_to_string(ftoptions, ',') FROM pg_foreign_table WHERE ftrelid = 'dn2.basic'::regclass").strip()
    assert "namespace=dotted.v3" in opt and "table=basic" in opt, opt
    # A namespace level holding a dot, quoted.
    psql("DROP FOREIGN TABLE IF EXISTS dq; CREATE FOREIGN TABLE dq (id bigint) SERVER lake OPTIONS (namespace '\"dotted\"', \"table\" 'v3.basic')")
    assert psql("SELECT count(*), sum(id) FROM dq").strip() == psql("SELECT count(*), sum(id) FROM cur.v3_basic").strip()
    expect_error("CREATE FOREIGN TABLE dbad (id bigint) SERVER lake OPTIONS (namespace 'db', \"table\" '../v3_basic')", sqlstate="HV024")
    expect_error("CREATE FOREIGN TABLE dbad (id bigint) SERVER lake OPTIONS (namespace 'db..x', \"table\" 't')", sqlstate="HV024")
    psql("DROP SCHEMA dn CASCADE; DROP SCHEMA dn2 CASCADE; DROP FOREIGN TABLE dq")


def edge_table(name="edge_values"):
    """A pg_edge fixture table (tests/gen/pg_*.py) copied into the warehouse."""
    dst = os.path.join(ARGS.warehouse, "pg_edge", name)
    if not os.path.isdir(dst):
        shutil.copytree(os.path.join(ARGS.fixtures, "pg_edge", name), dst)
        subprocess.run(["chmod", "-R", "a+rX", os.path.join(ARGS.warehouse, "pg_edge")], check=True)
    return dst


@test
def unrepresentable_values_are_errors():
    """Item 10: a string with a NUL byte and a date after Postgres' last date are errors,
    never altered values; other rows of the table read."""
    d = edge_table()
    psql(f"DROP FOREIGN TABLE IF EXISTS edge; CREATE FOREIGN TABLE edge (id bigint, s text, d date) SERVER lake OPTIONS (location '{d}')")
    assert psql("SELECT string_agg(id::text, ',' ORDER BY id) FROM edge").strip() == "1,2,3"
    assert psql("SELECT s || '|' || d FROM edge WHERE id = 1").strip() == "plain|2024-01-01"
    expect_error("SELECT s FROM edge WHERE id = 2", sqlstate="22021", contains="NUL")
    expect_error("SELECT length(s) FROM edge", sqlstate="22021")
    expect_error("SELECT d FROM edge WHERE id = 3", sqlstate="22008", contains="range")
    expect_error("SELECT max(d) FROM edge", sqlstate="22008")
    assert psql("SELECT s FROM edge WHERE id = 3").strip() == "late"
    psql("DROP FOREIGN TABLE edge")


@test
def string_constants_are_pushed_in_utf8():
    """Item 10: in a LATIN1 database, string conditions are pushed down as UTF-8 (the bytes
    Iceberg bounds compare), and give the rows an unpruned scan gives."""
    psql("DROP DATABASE IF EXISTS icefloe_latin1", db="postgres")
    psql("CREATE DATABASE icefloe_latin1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0", db="postgres")
    d = os.path.join(ARGS.warehouse, "db", "partitioned")

    def q(sql):
        return psql(sql, db="icefloe_latin1")
    q(f"CREATE EXTENSION icefloe_fdw; CREATE SERVER lake FOREIGN DATA WRAPPER icefloe;"
      f"CREATE FOREIGN TABLE p (id bigint, cat text) SERVER lake OPTIONS (location '{d}')")
    for cond in ["cat = 'é'", "cat > 'é'", "cat < 'ü'", "cat IN ('a', 'ß')", "cat = 'a'"]:
        got = q(f"SELECT count(*) FROM p WHERE {cond}").strip()
        want = q(f"SELECT count(*) FROM (SELECT * FROM p OFFSET 0) t WHERE ({cond}) IS TRUE").strip()
        assert got == want, (cond, got, want)
    psql("DROP DATABASE icefloe_latin1", db="postgres")


@test
def explain_analyze_shows_rows_read_and_files_skipped():
    """EXPLAIN ANALYZE reports the rows the scan read and the files it
    skipped."""
    plan = json.loads(psql("EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM cur.partitioned WHERE cat = 'a'"))[0]["Plan"]
    assert plan["Files Skipped"] > 0 and "Rows Read" in plan, plan
    total = int(psql("SELECT count(*) FROM cur.partitioned").strip())
    matching = int(psql("SELECT count(*) FROM cur.partitioned WHERE cat = 'a'").strip())
    assert matching <= plan["Rows Read"] < total, (plan["Rows Read"], matching, total)
    assert plan["Actual Rows"] == matching, plan
    plan = json.loads(psql("EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM cur.partitioned"))[0]["Plan"]
    assert plan["Rows Read"] == total and plan["Files Skipped"] == 0, plan


@test
def metadata_functions_list_files_manifests_refs_history():
    """Item 16: icefloe_files, icefloe_manifests, icefloe_refs, icefloe_history."""
    m = next(m for m in load_fixtures() if m["table"] == "v3_dv_large")
    snap = next(s for s in m["snapshots"] if s["snapshot_id"] == m["current_snapshot_id"])
    rows = psql("SELECT content, record_count, coalesce(deleted_rows, 0) FROM icefloe_files('cur.v3_dv_large'::regclass)")
    files = [l.split("|") for l in rows.splitlines() if l]
    live = sum(int(r[1]) for r in files if r[0] == "data") - sum(int(r[2]) for r in files if r[0] == "deletion_vector")
    assert any(r[0] == "deletion_vector" for r in files), files
    assert live == snap["rows"], (live, snap["rows"])
    n_first = int(psql(f"SELECT count(*) FROM icefloe_files('cur.v3_dv_large'::regclass, {m['snapshots'][0]['snapshot_id']}) WHERE content = 'deletion_vector'").strip())
    assert n_first == 0, n_first
    man = psql("SELECT count(*), count(*) FILTER (WHERE content = 'deletes') FROM icefloe_manifests('cur.v3_dv_large'::regclass)").strip().split("|")
    assert int(man[0]) >= 2 and int(man[1]) >= 1, man
    b = next(m for m in load_fixtures() if m["table"] == "v3_basic")
    refs = psql("SELECT name || ':' || ref_type || ':' || snapshot_id FROM icefloe_refs('cur.v3_basic'::regclass)").split()
    want = sorted(f"{k}:{r['type']}:{r['snapshot-id']}" for k, r in b["refs"].items())
    assert sorted(refs) == want, (refs, want)
    hist = psql("SELECT snapshot_id, is_current_ancestor FROM icefloe_history('cur.v3_basic'::regclass) ORDER BY made_current_at").split()
    log = current_metadata("v3_basic")["snapshot-log"]
    assert [int(h.split("|")[0]) for h in hist] == [e["snapshot-id"] for e in log], (hist, log)
    assert hist[-1].endswith("|t")


@test
def pushdown_of_or_like_and_parameters():
    """Item 12 (part): OR of pushable conditions, LIKE 'prefix%', and parameters of prepared
    statements (generic plans) prune files; results equal an unpruned scan's; LIMIT stops
    reading early."""
    cases = [
        ("cur.partitioned", "cat = 'a' OR cat = 'b'"),
        ("cur.partitioned", "id = 7 OR id = 299"),
        ("cur.partitioned", "(cat = 'a' AND id < 10) OR cat IS NULL"),
        ("cur.partitioned", "cat LIKE 'x y%'"),
        ("cur.partitioned", "cat LIKE 'a'"),
        ("cur.partitioned", "cat LIKE 'x\_%'"),
        ("cur.v3_basic", "name LIKE 'ünï%'"),
        ("cur.v3_basic", "id BETWEEN 10 AND 20 OR id > 1500"),
    ]
    for table, cond in cases:
        p = explain(f"SELECT * FROM {table} WHERE {cond}")
        cols = column_types(*table.split("."))
        sel = select_list(cols)
        got = sorted(map(repr, copy_rows(f"SELECT {sel} FROM {table} WHERE {cond}")))
        want = sorted(map(repr, copy_rows(f"SELECT {sel} FROM (SELECT * FROM {table} OFFSET 0) t WHERE ({cond}) IS TRUE")))
        assert got == want, f"{table} WHERE {cond}: {len(got)} rows, want {len(want)}"
        if cond.startswith(("cat = 'a' OR", "cat LIKE 'x y", "(cat")):
            assert p["Files Skipped"] > 0 and "Pruning Filters" in p, (cond, p)
    # An OR with a disjunct that cannot be pushed prunes nothing (and is right).
    p = explain("SELECT * FROM cur.partitioned WHERE cat = 'a' OR length(name) > 3")
    assert p["Files Skipped"] == 0, p
    # A generic plan of a prepared statement prunes with the parameter's value.
    out = psql("SET plan_cache_mode = force_generic_plan; PREPARE pq(text) AS SELECT count(*) FROM cur.partitioned WHERE cat = $1;"
               "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE pq('a')")
    plan = json.loads(out)[0]["Plan"]
    while plan.get("Node Type") != "Foreign Scan":
        plan = plan["Plans"][0]
    assert "$1" in json.dumps(plan.get("Filter", "")) and plan["Files Skipped"] > 0, plan
    n = psql("SET plan_cache_mode = force_generic_plan; PREPARE pq2(bigint[]) AS SELECT count(*) FROM cur.partitioned WHERE id = ANY($1);"
             "EXECUTE pq2(ARRAY[3, 150]::bigint[])").strip()
    assert n == psql("SELECT count(*) FROM cur.partitioned WHERE id IN (3, 150)").strip(), n
    # LIMIT without ORDER BY stops reading early.
    plan = json.loads(psql("EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM cur.v3_dv_large LIMIT 3"))[0]["Plan"]["Plans"][0]
    total = int(psql("SELECT count(*) FROM cur.v3_dv_large").strip())
    assert plan["Rows Read"] < total, (plan["Rows Read"], total)


@test
def count_star_from_metadata():
    """Item 13: count(*) without conditions is answered by the foreign scan (no Aggregate
    node), from metadata where only deletion vectors apply (data files' record counts minus
    DV cardinalities), by reading where position or equality delete files apply; right at
    every snapshot of every fixture table."""
    problems = []
    for m in load_fixtures():
        for snap in m["snapshots"]:
            psql(f"DROP FOREIGN TABLE IF EXISTS cnt; CREATE FOREIGN TABLE cnt () SERVER lake "
                 f"OPTIONS (\"table\" 'db.{m['table']}', snapshot_id '{snap['snapshot_id']}')")
            plan = json.loads(psql("EXPLAIN (FORMAT JSON) SELECT count(*) FROM cnt"))[0]["Plan"]
            if plan["Node Type"] != "Foreign Scan" or "Aggregate" not in plan:
                problems.append(f"{m['table']}@{snap['snapshot_id']}: not pushed: {plan['Node Type']}")
                continue
            kinds = set(psql(f"SELECT DISTINCT content FROM icefloe_files('cnt'::regclass)").split())
            from_meta = "from metadata" in plan["Aggregate"]
            if from_meta != (not kinds & {"position_deletes", "equality_deletes"}):
                problems.append(f"{m['table']}@{snap['snapshot_id']}: {plan['Aggregate']} with {kinds}")
            got = psql("SELECT count(*), count(*) FROM cnt").strip()
            if got != f"{snap['rows']}|{snap['rows']}":
                problems.append(f"{m['table']}@{snap['snapshot_id']}: count {got}, want {snap['rows']}")
    assert not problems, "\n".join(problems)
    # Conditions, DISTINCT, GROUP BY and other aggregates are not pushed, and stay right.
    for q in ["SELECT count(*) FROM cur.v3_dv_large WHERE id > 100", "SELECT count(id) FROM cur.v3_dv_large",
              "SELECT count(*), sum(id) FROM cur.v3_dv_large", "SELECT count(*) FROM cur.partitioned GROUP BY cat"]:
        plan = json.loads(psql(f"EXPLAIN (FORMAT JSON) {q}"))[0]["Plan"]
        assert plan["Node Type"] != "Foreign Scan", (q, plan)
    psql("DROP FOREIGN TABLE cnt")
    # Two position delete files naming the same rows (tests/gen/pg_dup_position_deletes.py):
    # each row is counted once, as Spark reads it.
    d = edge_table("dup_pos_deletes")
    want = len(open(os.path.join(ARGS.fixtures, "pg_edge", "dup_pos_deletes.jsonl")).read().splitlines())
    psql(f"DROP FOREIGN TABLE IF EXISTS dup; CREATE FOREIGN TABLE dup (id bigint) SERVER lake OPTIONS (location '{d}')")
    kinds = psql("SELECT content, count(*) FROM icefloe_files('dup'::regclass) GROUP BY 1 ORDER BY 1").split()
    assert kinds == ["data|1", "position_deletes|2"], kinds
    plan = json.loads(psql("EXPLAIN (FORMAT JSON) SELECT count(*) FROM dup"))[0]["Plan"]
    assert "rows read" in plan["Aggregate"], plan
    assert int(psql("SELECT count(*) FROM dup").strip()) == want == 8
    psql("DROP FOREIGN TABLE dup")


@test
def gucs_and_cancel_while_opening():
    """Item 15: icefloe.cache_size (superuser) and icefloe.scan_concurrency; opening a table,
    IMPORT and the metadata functions stop on cancel while storage is slow to answer."""
    # The GUCs exist once the library is loaded in the session (any use of the wrapper).
    load = "DO $$ BEGIN PERFORM icefloe_refs(0); EXCEPTION WHEN others THEN NULL; END $$; "
    assert psql(load + "SHOW icefloe.cache_size").strip() == "256MB"
    roles("gucuser")
    expect_error(load + "SET icefloe.cache_size = '1GB'", sqlstate="42501", user="gucuser")
    want = psql("SELECT count(*), sum(id) FROM cur.v3_dv_large").strip()
    for n in (1, 3):
        got = psql(f"SET icefloe.scan_concurrency = {n}; SELECT count(*), sum(id) FROM cur.v3_dv_large", user="postgres").strip()
        assert got == want, (n, got, want)
    expect_error(load + "SET icefloe.scan_concurrency = -1", sqlstate="22023")
    s3 = RecordingS3(delay=20)
    try:
        psql(f"DROP SERVER IF EXISTS slow CASCADE; CREATE SERVER slow FOREIGN DATA WRAPPER icefloe OPTIONS "
             f"(warehouse 's3://bucket/wh', aws_endpoint 'http://127.0.0.1:{s3.port}', aws_allow_http 'true', aws_region 'us-east-1');"
             "CREATE FOREIGN TABLE public.slow_t (id bigint) SERVER slow OPTIONS (\"table\" 'db.t');"
             "DROP SCHEMA IF EXISTS slow_imp CASCADE; CREATE SCHEMA slow_imp")
        for sql in ["SELECT count(*) FROM public.slow_t",
                    "IMPORT FOREIGN SCHEMA db FROM SERVER slow INTO slow_imp",
                    "SELECT count(*) FROM icefloe_snapshots('db.t', 'slow')"]:
            t0 = time.time()
            expect_error(f"SET statement_timeout = '500ms'; {sql}", sqlstate="57014")
            took = time.time() - t0
            assert took < 5, (sql, took)
    finally:
        s3.close()
        psql("DROP SERVER IF EXISTS slow CASCADE; DROP SCHEMA IF EXISTS slow_imp CASCADE")


@test
def analyze_samples_live_rows():
    """Item 14: ANALYZE samples the live rows of the snapshot read: reltuples is the live row
    count, and pg_stats has the columns' null fractions and distinct counts."""
    m = next(m for m in load_fixtures() if m["table"] == "v3_dv_large")
    snap = next(s for s in m["snapshots"] if s["snapshot_id"] == m["current_snapshot_id"])
    psql("ANALYZE cur.v3_dv_large")
    assert int(float(psql("SELECT reltuples FROM pg_class WHERE oid = 'cur.v3_dv_large'::regclass").strip())) == snap["rows"]
    stats = psql("SELECT null_frac, n_distinct FROM pg_stats WHERE schemaname = 'cur' AND tablename = 'v3_dv_large' AND attname = 'id'").strip()
    assert stats == "0|-1", stats
    # Every fixture table analyzes (all types), and the null fraction is exact where every
    # row is sampled.
    for t in [m["table"] for m in load_fixtures()]:
        psql(f"ANALYZE cur.{quote_ident(t)}")
    frac = float(psql("SELECT null_frac FROM pg_stats WHERE schemaname = 'cur' AND tablename = 'v3_basic' AND attname = 'amount'").strip())
    want = float(psql("SELECT avg((amount IS NULL)::int) FROM cur.v3_basic").strip())
    assert abs(frac - want) < 1e-6, (frac, want)
    # Tables with position or equality deletes: the row count is estimated from the share of
    # drawn positions that were live; every position is drawn in these small tables, so it is
    # exact.
    for t in ["equality_deletes_v2", "equality_deletes_v3", "v2_upgraded"]:
        out = psql(f"ANALYZE VERBOSE cur.{t}", notices=True)
        assert "(estimated)" in out, out
        live = int(psql(f"SELECT count(*) FROM cur.{t}").strip())
        got = float(psql(f"SELECT reltuples FROM pg_class WHERE oid = 'cur.{t}'::regclass").strip())
        assert got == live, (t, got, live)


@test
def analyze_reads_a_sample_not_the_table():
    """Item 14: ANALYZE draws random positions across the data files instead of reading every
    row: with statistics target 1 (300 sample rows) it draws 375 of v3_dv_large's 70,000
    positions, reads the live ones among them, keeps at most 300, and still knows the exact
    live row count from metadata; its statistics are those of the sampled rows."""
    m = next(m for m in load_fixtures() if m["table"] == "v3_dv_large")
    snap = next(s for s in m["snapshots"] if s["snapshot_id"] == m["current_snapshot_id"])
    out = psql("SET default_statistics_target = 1; ANALYZE VERBOSE cur.v3_dv_large", notices=True)
    g = re.search(r"icefloe: drew (\d+) of (\d+) positions in (\d+) data files, read (\d+) live rows, "
                  r"kept (\d+); (\d+) rows \(exact, from metadata\)", out)
    assert g, out
    drawn, records, files, seen, kept, total = map(int, g.groups())
    assert (drawn, records, files, total) == (375, 70000, 1, snap["rows"]), g.groups()
    # The deletion vector marks 15,673 of 70,000 positions: about 22% of the drawn ones.
    assert 250 <= seen < drawn and kept == min(seen, 300), g.groups()
    assert int(float(psql("SELECT reltuples FROM pg_class WHERE oid = 'cur.v3_dv_large'::regclass").strip())) == snap["rows"]
    bounds = psql("SELECT histogram_bounds::text::bigint[] FROM pg_stats WHERE schemaname = 'cur' "
                  "AND tablename = 'v3_dv_large' AND attname = 'id'").strip()
    lo, hi = (int(x) for x in bounds.strip("{}").split(","))
    ids = {int(r["id"]) for r in expected_rows(snap)}
    # The histogram's ends are the data file's bounds from its metrics, widened past the
    # sample's (here the live extremes; the deletion vector spares ids 0 and 69999).
    assert (lo, hi) == (min(ids), max(ids)) == (0, 69999), (lo, hi)
    psql("ANALYZE cur.v3_dv_large")


def metrics_rows(n):
    """The first `n` rows of the pg_edge metrics tables (tests/gen/pg_metrics.py), by its
    formulas, as Python values."""
    import datetime
    epoch = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
    return [{
        "id": i,
        "maybe": None if i % 9 == 4 else 10 * i - 30000,
        "d": datetime.date(2000, 1, 1) + datetime.timedelta(days=i),
        "ts": epoch + datetime.timedelta(minutes=i, microseconds=i),
        "amount": Decimal(i) * Decimal("1.25") - 100,
        "score": None if i % 13 == 0 else i / 3,
        "name": f"name-{i}",
        "nometrics": None if i % 7 == 1 else 2 * i,
    } for i in range(n)]


METRICS_COLUMNS = [("id", "bigint"), ("maybe", "bigint"), ("d", "date"), ("ts", "timestamptz"),
                   ("amount", "numeric(12,2)"), ("score", "double precision"), ("name", "text"),
                   ("nometrics", "bigint")]


def metrics_table(name, fixture, owner=None):
    """A foreign table over a pg_edge metrics table whose columns sample ~300 rows."""
    d = edge_table(fixture)
    cols = ", ".join(f"{c} {t}" for c, t in METRICS_COLUMNS)
    psql(f"DROP FOREIGN TABLE IF EXISTS {name}; CREATE FOREIGN TABLE {name} ({cols}) SERVER lake OPTIONS (location '{d}');"
         + "".join(f"ALTER FOREIGN TABLE {name} ALTER COLUMN {c} SET STATISTICS 1;" for c, _ in METRICS_COLUMNS)
         + (f"ALTER FOREIGN TABLE {name} OWNER TO {owner};" if owner else ""))


def column_stats(name):
    """attname -> (null_frac, first and last histogram entries as text, or None)."""
    out = {}
    for row in copy_rows(f"SELECT attname, null_frac, histogram_bounds::text FROM pg_stats "
                         f"WHERE schemaname = 'public' AND tablename = '{name}'"):
        ends = None
        if row[2] is not None:
            ends = psql(f"SELECT h[1]::text || '|' || h[array_upper(h, 1)]::text FROM "
                        f"(SELECT {quote_lit(row[2])}::{dict(METRICS_COLUMNS)[row[0]]}[] h) s").strip().split("|")
        out[row[0]] = (float(row[1]), ends)
    return out


def sample_kept(out):
    g = re.search(r"icefloe: drew \d+ of \d+ positions in \d+ data files, read \d+ live rows, kept (\d+)", out)
    assert g, out
    return int(g.group(1))


def is_sample_fraction(frac, kept):
    """Whether a null fraction is a share of `kept` sample rows (what Postgres computes)."""
    return abs(frac * kept - round(frac * kept)) < 1e-3


def pg_text(col, v):
    """A value as Postgres shows it under the regression settings (UTC, ISO dates)."""
    if col == "ts":
        frac = f"{v.microsecond:06d}".rstrip("0")
        return v.strftime("%Y-%m-%d %H:%M:%S") + (f".{frac}" if frac else "") + "+00"
    if col == "score":
        return repr(v)
    return str(v)


def assert_metrics_stats(name, kept, n=8000):
    """The table's statistics: null fractions exact from the metrics, histogram ends the true
    extremes of every column with exact bounds; `nometrics` (no metrics) keeps the sample's."""
    rows = metrics_rows(n)
    stats = column_stats(name)
    for col in ["id", "maybe", "d", "ts", "amount", "score"]:
        vals = [r[col] for r in rows if r[col] is not None]
        frac, ends = stats[col]
        want = sum(r[col] is None for r in rows) / n
        assert abs(frac - want) < 1e-6, (name, col, frac, want)
        assert ends == [pg_text(col, min(vals)), pg_text(col, max(vals))], (name, col, ends)
    frac, ends = stats["nometrics"]
    assert is_sample_fraction(frac, kept), (frac, kept)
    assert ends is not None and all(int(e) % 2 == 0 and 0 <= int(e) < 2 * n for e in ends), ends


@test
def analyze_corrects_statistics_with_iceberg_metrics():
    """Item 14: after ANALYZE of an 8,000-row table sampled at ~300 rows (statistics target 1),
    each null fraction is the one the data files' null_value_counts / value_counts give, and
    each histogram's first and last entries are the column's true minimum and maximum (from
    lower_bounds / upper_bounds), where the sample alone would give neither; a column written
    without metrics keeps the sample's statistics. Also for one table or several (each then
    committed on its own), inside a transaction block, with a column list, and beside a heap
    table, which is unaffected."""
    metrics_table("am", "metrics")
    psql("DROP TABLE IF EXISTS am_heap; CREATE TABLE am_heap (id bigint, maybe bigint); "
         "INSERT INTO am_heap SELECT g, CASE WHEN g % 2 = 0 THEN g END FROM generate_series(100, 109) g")
    out = psql("ANALYZE VERBOSE am, am_heap", notices=True)
    kept = sample_kept(out)
    assert kept <= 300, kept
    # id, maybe, d, ts, amount, score and name have counts; all but name (text) have bounds.
    assert "column metrics give the null fraction of 7 columns and bounds of 6" in out, out
    assert_metrics_stats("am", kept)
    heap = copy_rows("SELECT attname, null_frac, histogram_bounds::text FROM pg_stats "
                     "WHERE schemaname = 'public' AND tablename = 'am_heap' ORDER BY attname")
    assert heap == [["id", "0", "{100,101,102,103,104,105,106,107,108,109}"],
                    ["maybe", "0.5", "{100,102,104,106,108}"]], heap
    # One table (one transaction), in a backend that loaded the library before: the hook.
    psql("DELETE FROM pg_statistic WHERE starelid = 'am'::regclass")
    out = psql("SELECT count(*) FROM am WHERE false; ANALYZE VERBOSE am", notices=True)
    assert_metrics_stats("am", sample_kept(out))
    # In a transaction block: from the end of the statement where the library was loaded
    # before it (here by a query), else from COMMIT (a backend's first statement loads it).
    psql("DELETE FROM pg_statistic WHERE starelid = 'am'::regclass")
    out = psql("BEGIN; ANALYZE VERBOSE am; COMMIT", notices=True)
    assert_metrics_stats("am", sample_kept(out))
    out = psql("SELECT count(*) FROM am WHERE false; BEGIN; ANALYZE am; "
               "SELECT null_frac FROM pg_stats WHERE tablename = 'am' AND attname = 'maybe'; ROLLBACK").split()
    assert out[0] == "0" and abs(float(out[1]) - 889 / 8000) < 1e-6, out
    # A column list: only those columns get statistics, corrected.
    psql("DELETE FROM pg_statistic WHERE starelid = 'am'::regclass; ANALYZE am (maybe)")
    stats = column_stats("am")
    assert list(stats) == ["maybe"] and abs(stats["maybe"][0] - 889 / 8000) < 1e-6, stats


@test
def analyze_with_metrics_by_owner_and_without_metrics():
    """Item 14: a role that owns the foreign table but is not superuser analyzes it and gets
    the metrics' statistics; a role that does not own it is skipped and writes nothing; a
    table whose files have no metrics (mode none) keeps the sample's statistics."""
    roles("am_owner", "am_other")
    psql("GRANT USAGE ON FOREIGN SERVER lake TO am_owner; GRANT pg_read_server_files TO am_owner")
    metrics_table("am_owned", "metrics", owner="am_owner")
    out = psql("ANALYZE VERBOSE am_owned", user="am_owner", notices=True)
    assert_metrics_stats("am_owned", sample_kept(out))
    psql("DELETE FROM pg_statistic WHERE starelid = 'am_owned'::regclass")
    out = psql("ANALYZE am_owned", user="am_other", notices=True)
    assert "skipping" in out, out
    assert column_stats("am_owned") == {}
    metrics_table("am_none", "no_metrics")
    out = psql("ANALYZE VERBOSE am_none", notices=True)
    kept = sample_kept(out)
    assert "column metrics give the null fraction of 0 columns and bounds of 0" in out, out
    stats = column_stats("am_none")
    assert set(stats) == {c for c, _ in METRICS_COLUMNS}, stats
    for col in ["maybe", "score", "nometrics"]:
        assert is_sample_fraction(stats[col][0], kept), (col, stats[col], kept)
    psql("DROP FOREIGN TABLE am_owned; DROP FOREIGN TABLE am_none; DROP OWNED BY am_owner CASCADE; DROP OWNED BY am_other CASCADE; "
         "DROP ROLE am_owner; DROP ROLE am_other")


@test
def row_groups_are_pruned_inside_a_file():
    """Item 12: conditions skip the row groups whose statistics exclude them, so a point lookup
    reads one row group of 2,000 rows of the file's 20,000 (tests/gen/pg_row_groups.py);
    results equal an unpruned scan's, lineage included."""
    d = edge_table("row_groups")
    psql(f"DROP FOREIGN TABLE IF EXISTS rg; CREATE FOREIGN TABLE rg (_row_id bigint, id bigint, name text, grp integer, maybe bigint) "
         f"SERVER lake OPTIONS (location '{d}')")
    cases = [("id = 4242", 2000), ("id IN (5, 19999)", 4000), ("name = 'n12345'", 2000),
             ("id BETWEEN 3990 AND 4010", 4000), ("grp = 7 OR id < 10", 4000), ("maybe IS NULL", 2000),
             ("maybe = 6001", 0), ("id > 100000", 0), ("name LIKE 'n1999%'", 2000), ("id >= 0", 20000)]
    for cond, read in cases:
        plan = json.loads(psql(f"EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM rg WHERE {cond}"))[0]["Plan"]
        assert plan["Rows Read"] == read, (cond, plan["Rows Read"], read)
        got = psql(f"SELECT count(*), coalesce(sum(id), 0), coalesce(sum(_row_id), 0) FROM rg WHERE {cond}").strip()
        want = psql(f"SELECT count(*), coalesce(sum(id), 0), coalesce(sum(_row_id), 0) FROM (SELECT * FROM rg OFFSET 0) t WHERE ({cond}) IS TRUE").strip()
        assert got == want, (cond, got, want)
    assert psql("SELECT _row_id, id, name, grp FROM rg WHERE id = 4242").strip() == psql(
        "SELECT _row_id, id, name, grp FROM (SELECT * FROM rg OFFSET 0) t WHERE id = 4242").strip()
    psql("DROP FOREIGN TABLE rg")


@test
def metadata_columns_read():
    """The core's metadata columns read through the wrapper when declared:
    _file (the data file as its manifest records it), _pos, _spec_id, _partition (jsonb)."""
    psql("DROP FOREIGN TABLE IF EXISTS mc; CREATE FOREIGN TABLE mc (id bigint, cat text, _file text, _pos bigint, "
         "_spec_id integer, _partition jsonb) SERVER lake OPTIONS (\"table\" 'db.partitioned')")
    files = set(psql("SELECT file_path FROM icefloe_files('mc'::regclass) WHERE content = 'data'").split("\n")) - {""}
    got = set(psql("SELECT DISTINCT _file FROM mc").split("\n")) - {""}
    assert got and got <= files, (got - files)
    # _pos counts from 0 within each file.
    bad = psql("SELECT count(*) FROM (SELECT _file, min(_pos) AS lo FROM mc GROUP BY 1) t WHERE lo < 0").strip()
    assert bad == "0", bad
    assert psql("SELECT count(*) FROM mc WHERE _pos IS NULL OR _spec_id IS NULL OR _file IS NULL").strip() == "0"
    specs = {int(x) for x in psql("SELECT DISTINCT spec_id FROM icefloe_files('mc'::regclass)").split()}
    assert {int(x) for x in psql("SELECT DISTINCT _spec_id FROM mc").split()} <= specs
    # _partition holds the identity partition value of cat where the file's spec has it.
    n = psql("SELECT count(*) FROM mc WHERE _partition ? 'cat' AND (_partition->>'cat') IS DISTINCT FROM cat").strip()
    assert n == "0", n
    psql("DROP FOREIGN TABLE mc")


@test
def bucket_and_truncate_partitions_prune():
    """Item 12: conditions on bucket[N] and truncate[W] partition columns skip files (the core
    evaluates the spec's transforms on the constants), over tables Spark partitioned so
    (tests/gen/pg_bucket_truncate.py); results equal an unpruned scan's and Spark's rows."""
    for name, cols, cases in [
        ("bucket_parts", "id bigint, s text, d numeric(9,2), dt date",
         ["id = 7", "id IN (3, 30)", "s = 'banana2'", "d = 3.70", "dt = '2024-01-05'",
          "id = 7 OR s = 'cherry4'", "s IN ('apple0', 'nope')"]),
        ("truncate_parts", "id bigint, s text COLLATE \"C\", d numeric(9,2), n integer, b bytea",
         ["s = 'banana2'", "s < 'apz'", "s >= 'cherry'", "s LIKE 'bl%'", "d = 3.70", "d < 1.00",
          "n BETWEEN 0 AND 9", "b = '\\x623132'::bytea", "n IS NULL"]),
    ]:
        d = edge_table(name)
        psql(f"DROP FOREIGN TABLE IF EXISTS bt; CREATE FOREIGN TABLE bt ({cols}) SERVER lake OPTIONS (location '{d}')")
        want_all = len(open(os.path.join(ARGS.fixtures, "pg_edge", f"{name}.jsonl")).read().splitlines())
        assert int(psql("SELECT count(*) FROM (SELECT * FROM bt OFFSET 0) t").strip()) == want_all
        for cond in cases:
            plan = json.loads(psql(f"EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM bt WHERE {cond}"))[0]["Plan"]
            assert plan["Files Skipped"] > 0, (name, cond, plan)
            got = psql(f"SELECT * FROM bt WHERE {cond} ORDER BY id")
            want = psql(f"SELECT * FROM (SELECT * FROM bt OFFSET 0) t WHERE {cond} ORDER BY id")
            assert got == want and got.strip(), (name, cond, got, want)
    psql("DROP FOREIGN TABLE bt")


@test
def count_star_with_identity_partition_conditions():
    """Item 13: count(*) whose conditions only touch identity partition columns (here cat, an
    identity field of every spec of `partitioned`) is answered by the foreign scan: files the
    conditions exclude are skipped, and every file left matches in every row by its partition
    values; right at every snapshot. Conditions on other columns, or not exactly pushable, are
    counted by Postgres."""
    m = next(m for m in load_fixtures() if m["table"] == "partitioned")
    conds = ["cat = 'a'", "cat IN ('a', 'c')", "cat = 'a' OR cat = 'b'", "cat IS NULL", "cat IS NOT NULL",
             "cat <> 'a'", "cat LIKE 'a%'", "NOT (cat = 'b')"]
    problems = []
    for snap in m["snapshots"]:
        psql(f"DROP FOREIGN TABLE IF EXISTS cntp; CREATE FOREIGN TABLE cntp (cat text COLLATE \"C\", id bigint) SERVER lake "
             f"OPTIONS (\"table\" 'db.partitioned', snapshot_id '{snap['snapshot_id']}')")
        rows = expected_rows(snap)
        for cond in conds:
            plan = json.loads(psql(f"EXPLAIN (FORMAT JSON) SELECT count(*) FROM cntp WHERE {cond}"))[0]["Plan"]
            pushed = plan["Node Type"] == "Foreign Scan" and "Aggregate" in plan
            want = psql(f"SELECT count(*) FROM (SELECT * FROM cntp OFFSET 0) t WHERE {cond}").strip()
            got = psql(f"SELECT count(*) FROM cntp WHERE {cond}").strip()
            if got != want:
                problems.append(f"{snap['snapshot_id']} {cond}: {got}, want {want}")
            exact = cond not in ("cat <> 'a'", "NOT (cat = 'b')")
            if pushed != exact:
                problems.append(f"{snap['snapshot_id']} {cond}: pushed {pushed}: {plan}")
        # Against the rows Spark read.
        n = sum(1 for r in rows if r.get("cat") == "a")
        got = psql("SELECT count(*) FROM cntp WHERE cat = 'a'").strip()
        if got != str(n):
            problems.append(f"{snap['snapshot_id']}: count {got}, Spark {n}")
    assert not problems, "\n".join(problems)
    plan = json.loads(psql("EXPLAIN (FORMAT JSON) SELECT count(*) FROM cntp WHERE cat = 'a' AND id > 5"))[0]["Plan"]
    assert plan["Node Type"] != "Foreign Scan", plan
    plan = json.loads(psql("EXPLAIN (FORMAT JSON) SELECT count(*) FROM cntp WHERE cat = 'a'"))[0]["Plan"]
    assert plan["Files Skipped"] > 0 and "cat = 'a'" in plan["Pruning Filters"], plan
    psql("DROP FOREIGN TABLE cntp")


@test
def pages_are_pruned_inside_a_row_group():
    """Item 12: the Parquet page index prunes pages inside a row group (pg_edge/pages: one row
    group of ten 500-row pages, ids 4240..4244 deleted; tests/gen/pg_pages.py), so a point
    lookup reads one page; results equal an unpruned scan's, lineage included."""
    d = edge_table("pages")
    psql(f"DROP FOREIGN TABLE IF EXISTS pg_pages; CREATE FOREIGN TABLE pg_pages (_row_id bigint, id bigint, name text) "
         f"SERVER lake OPTIONS (location '{d}')")
    cases = [("id = 4300", 495), ("id = 4242", 495), ("id IN (10, 4999)", 1000), ("name = 'n02500'", 500),
             ("id BETWEEN 490 AND 510", 1000), ("id > 100000", 0), ("id >= 0", 4995)]
    for cond, read in cases:
        plan = json.loads(psql(f"EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM pg_pages WHERE {cond}"))[0]["Plan"]
        assert plan["Rows Read"] == read, (cond, plan["Rows Read"], read)
        got = psql(f"SELECT count(*), coalesce(sum(id), 0), coalesce(sum(_row_id), 0) FROM pg_pages WHERE {cond}").strip()
        want = psql(f"SELECT count(*), coalesce(sum(id), 0), coalesce(sum(_row_id), 0) FROM (SELECT * FROM pg_pages OFFSET 0) t WHERE ({cond}) IS TRUE").strip()
        assert got == want, (cond, got, want)
    assert psql("SELECT count(*) FROM pg_pages WHERE id = 4242").strip() == "0"
    psql("DROP FOREIGN TABLE pg_pages")



@test
def plans_cost_the_rows_pruning_leaves():
    """Item 12, at plan time: a scan is costed by the rows it will decode once its conditions
    prune row groups and pages, times the columns it reads (cost = 10 + cpu_operator_cost / 2 *
    columns * decoded + cpu_tuple_cost * rows), so a point lookup on a large table is not planned
    as a full (or parallel) scan, and a narrow query costs less than a wide one.
    Parameters are unknown when a generic plan is made: those count the whole file."""
    d = edge_table("pages")
    psql(f"DROP FOREIGN TABLE IF EXISTS pg_cost; CREATE FOREIGN TABLE pg_cost (_row_id bigint, id bigint, name text) "
         f"SERVER lake OPTIONS (location '{d}')")

    def assert_decoded(sql, want, setup="", columns=3):
        plan = json.loads(psql(f"{setup} EXPLAIN (FORMAT JSON) {sql}"))[0]["Plan"]
        per_row = 0.00125 * columns
        got = (plan["Total Cost"] - 10 - 0.01 * plan["Plan Rows"]) / per_row
        # EXPLAIN rounds costs to 0.01, which is 0.005 / per_row decoded rows.
        assert abs(got - want) * per_row <= 0.0051, (sql, got, want)

    for cond, want in [("id = 4300", 500), ("id IN (10, 4999)", 1000), ("id > 100000", 0), ("id >= 0", 5000)]:
        assert_decoded(f"SELECT * FROM pg_cost WHERE {cond}", want)
    assert_decoded("SELECT * FROM pg_cost", 5000)
    # A whole-row reference reads every column; otherwise those of the output and the conditions.
    assert_decoded("SELECT pg_cost FROM pg_cost", 5000)
    assert_decoded("SELECT name FROM pg_cost", 5000, columns=1)
    # No column at all still decodes the rows (deletes and row positions): costed as one.
    assert_decoded("SELECT 1 FROM pg_cost", 5000, columns=1)
    assert_decoded("SELECT _row_id FROM pg_cost WHERE id = 4300", 500, columns=2)
    assert_decoded("EXECUTE q(4300)", 5000, "SET plan_cache_mode = force_generic_plan; "
                   "PREPARE q(bigint) AS SELECT * FROM pg_cost WHERE id = $1;")
    psql("DROP FOREIGN TABLE pg_cost")

PARALLEL = ("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; "
            "SET max_parallel_workers_per_gather = 2; "
            # Tiny tables: make the parallel plan's saving exceed the planner's 1% cost fuzz.
            "SET cpu_tuple_cost = 1; ")
SERIAL = "SET max_parallel_workers_per_gather = 0; "


def gather_of(plan):
    """The first Gather node of a JSON plan, or None."""
    if plan.get("Node Type") == "Gather":
        return plan
    for p in plan.get("Plans", []):
        g = gather_of(p)
        if g:
            return g
    return None


@test
def parallel_scan_returns_the_serial_rows():
    """Item 11: a parallel plan (Gather over a parallel-aware foreign scan, workers launched)
    returns exactly the serial rows: every column of every row (deletion vectors, position and
    equality deletes, row lineage), also when only the workers read (no leader
    participation)."""
    edge_table("dup_pos_deletes")
    psql(f"DROP FOREIGN TABLE IF EXISTS par_dup; CREATE FOREIGN TABLE par_dup (id bigint) SERVER lake "
         f"OPTIONS (location '{edge_table('dup_pos_deletes')}')")
    tables = ["cur.v3_dv_large", "cur.v3_lineage", "cur.equality_deletes_v2", "cur.equality_deletes_v3",
              "cur.v2_upgraded", "cur.partitioned", "cur.schema_evolution", "par_dup"]
    for t in tables:
        q = f"SELECT count(*), md5(string_agg(x::text, '|' ORDER BY x::text)) FROM {t} x"
        serial = psql(SERIAL + q).strip()
        for extra in ("", "SET parallel_leader_participation = off; ",
                      # Files split into units of 1000 positions, claimed by all processes.
                      "SET icefloe.parallel_split_rows = 1000; "):
            plan = json.loads(psql(PARALLEL + extra + f"EXPLAIN (ANALYZE, FORMAT JSON) {q}"))[0]["Plan"]
            g = gather_of(plan)
            assert g and g["Workers Launched"] >= 1, (t, plan)
            scan = g["Plans"][0]
            assert scan["Node Type"] == "Foreign Scan" and scan["Parallel Aware"], (t, scan)
            if "split" in extra and t == "cur.v3_dv_large":
                assert scan["Units"] >= 50 > scan["Files Scanned"], scan
            got = psql(PARALLEL + extra + q).strip()
            assert got == serial, (t, extra, got, serial)
    # Lineage columns and a condition, summed by partial aggregates in the workers.
    q = "SELECT count(*), sum(_row_id), sum(_last_updated_sequence_number), sum(id) FROM cur.v3_dv_large WHERE id % 7 <> 3"
    psql("DROP FOREIGN TABLE IF EXISTS par_lin; CREATE FOREIGN TABLE par_lin (_row_id bigint, "
         "_last_updated_sequence_number bigint, id bigint) SERVER lake OPTIONS (\"table\" 'db.v3_dv_large')")
    q = q.replace("cur.v3_dv_large", "par_lin")
    serial = psql(SERIAL + q).strip()
    assert psql(PARALLEL + q).strip() == serial
    assert psql(PARALLEL + "SET icefloe.parallel_split_rows = 777; " + q).strip() == serial
    plan = psql(PARALLEL + f"EXPLAIN {q}")
    assert "Partial Aggregate" in plan and "Gather" in plan, plan
    psql("DROP FOREIGN TABLE par_lin; DROP FOREIGN TABLE par_dup")


@test
def parallel_workers_read_the_pinned_snapshot():
    """Item 11 with item 7: inside a REPEATABLE READ transaction the workers of a parallel
    scan read the metadata version the transaction pinned, not a newer one."""
    d, set_version = scratch_table("v3_basic", "par_pinned", 2)
    hint = os.path.join(d, "metadata", "version-hint.text")
    psql(f"DROP FOREIGN TABLE IF EXISTS par_pin; CREATE FOREIGN TABLE par_pin (id bigint) SERVER lake OPTIONS (location '{d}')")
    q = "SELECT count(id) FROM par_pin"
    out = psql(PARALLEL + "SET parallel_leader_participation = off;\nBEGIN ISOLATION LEVEL REPEATABLE READ;\n"
               f"{q};\nCOPY (SELECT '12') TO '{hint}';\nEXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) {q};\n{q};\nCOMMIT;\n{q};\n")
    lines = out.split("\n")
    assert "Workers Launched: 2" in out or "Workers Launched: 1" in out, out
    nums = [int(x) for x in lines if x.strip().isdigit()]
    assert nums == [1000, 1000, 1201], (nums, out)
    psql("DROP FOREIGN TABLE par_pin")


@test
def metadata_file_settings_and_path_map_options():
    """As options, metadata_file, table_uuid (table), and
    latest_by_last_updated_ms, path_map (table or server, the table's winning); bad values and
    local path_map targets are refused like the other options."""
    d, _ = scratch_table("v3_basic", "open_opts", 12)
    meta = os.path.join(d, "metadata")
    v12 = json.load(open(os.path.join(meta, "v12.metadata.json")))
    uuid = v12["table-uuid"]

    # count(id), not count(*): count(*) is answered from metadata, and these checks are
    # about which data files are read.
    def count(t="oo_t"):
        return int(psql(f"SELECT count(id) FROM {t}").strip())

    psql(f"DROP FOREIGN TABLE IF EXISTS oo_t; CREATE FOREIGN TABLE oo_t (id bigint) SERVER lake "
         f"OPTIONS (location '{d}', metadata_file 'v2.metadata.json')")
    assert count() == 1000
    psql(f"ALTER FOREIGN TABLE oo_t OPTIONS (DROP metadata_file, ADD table_uuid '{uuid.upper()}')")
    assert count() == 1201
    expect_error("ALTER FOREIGN TABLE oo_t OPTIONS (SET table_uuid '12345678-0000-0000-0000-000000000000'); "
                 "SELECT count(*) FROM oo_t", contains="no metadata file has table-uuid")
    # v2 written last: chosen when going by last-updated-ms, on the table or from its server.
    v2 = json.load(open(os.path.join(meta, "v2.metadata.json")))
    v2["last-updated-ms"] = v12["last-updated-ms"] + 1000
    with open(os.path.join(meta, "v2.metadata.json"), "w") as f:
        json.dump(v2, f)
    psql(f"ALTER FOREIGN TABLE oo_t OPTIONS (SET table_uuid '{uuid}', ADD latest_by_last_updated_ms 'true')")
    assert count() == 1000
    psql(f"DROP SERVER IF EXISTS lake_latest CASCADE; CREATE SERVER lake_latest FOREIGN DATA WRAPPER icefloe "
         f"OPTIONS (warehouse 'file://{ARGS.warehouse}', latest_by_last_updated_ms 'on');"
         f"CREATE FOREIGN TABLE oo_s (id bigint) SERVER lake_latest OPTIONS (location '{d}', table_uuid '{uuid}')")
    assert count("oo_s") == 1000
    psql("ALTER FOREIGN TABLE oo_s OPTIONS (ADD latest_by_last_updated_ms 'false')")
    assert count("oo_s") == 1201
    # path_map: the data files moved away from where the metadata records them.
    moved = os.path.join(ARGS.warehouse, "scratch", "open_opts_data")
    shutil.rmtree(moved, ignore_errors=True)
    shutil.move(os.path.join(d, "data"), moved)
    psql("ALTER FOREIGN TABLE oo_t OPTIONS (DROP table_uuid, DROP latest_by_last_updated_ms)")
    os.remove(os.path.join(meta, "v2.metadata.json"))
    expect_error("SELECT count(id) FROM oo_t")
    recorded = "/tmp/iceberg-fixtures-warehouse/db/v3_basic/data"
    psql(f"ALTER FOREIGN TABLE oo_t OPTIONS (ADD path_map 's3://unused/x=/nowhere, {recorded}={moved}')")
    assert count() == 1201
    psql(f"ALTER FOREIGN TABLE oo_t OPTIONS (DROP path_map); ALTER SERVER lake_latest OPTIONS (ADD path_map '{recorded}={moved}');"
         f"ALTER FOREIGN TABLE oo_s OPTIONS (DROP table_uuid)")
    assert count("oo_s") == 1201
    # Bad values, misplaced options, and the local-file rule for path_map targets.
    expect_error("ALTER FOREIGN TABLE oo_t OPTIONS (ADD latest_by_last_updated_ms 'maybe')", contains="not a boolean")
    expect_error("ALTER FOREIGN TABLE oo_t OPTIONS (ADD path_map 'no-equals')", contains="OLD=NEW")
    expect_error("ALTER SERVER lake_latest OPTIONS (ADD table_uuid 'x')", contains="table_uuid")
    roles("mapper")
    psql("GRANT USAGE ON FOREIGN DATA WRAPPER icefloe TO mapper; GRANT USAGE ON FOREIGN SERVER lake TO mapper")
    expect_error("CREATE FOREIGN TABLE mp_t (id bigint) SERVER lake OPTIONS (\"table\" 'db.v3_basic', path_map 's3://b/x=/etc')",
                 sqlstate="42501", contains="pg_read_server_files", user="mapper")
    expect_error("CREATE FOREIGN TABLE mp_t (id bigint) SERVER lake OPTIONS (\"table\" 'db.v3_basic', metadata_file 'FILE:/etc/x.metadata.json')",
                 sqlstate="42501", contains="pg_read_server_files", user="mapper")
    psql("DROP FOREIGN TABLE oo_t, oo_s; DROP SERVER lake_latest CASCADE")


# ---------------------------------------------------------------------------------------------
# row history from lineage


CHANGE_COLS = ("_change_type text, _commit_snapshot_id bigint, _change_sequence_number bigint, "
               "_change_ordinal int, _row_id bigint, _last_updated_sequence_number bigint")


def changes_server():
    """A server over a readable copy of tests/fixtures/changes/warehouse (Spark's tables of
    tests/gen/changes.py), its tables imported into schema chg; returns the copy's path."""
    wh = os.path.join(os.path.dirname(ARGS.warehouse), "changes-warehouse")
    if not os.path.isdir(wh):
        shutil.copytree(os.path.join(ARGS.fixtures, "changes", "warehouse"), wh)
        subprocess.run(["chmod", "-R", "a+rX", wh], check=True)
    psql(f"DROP SCHEMA IF EXISTS chg CASCADE; DROP SERVER IF EXISTS chg CASCADE;"
         f"CREATE SERVER chg FOREIGN DATA WRAPPER icefloe OPTIONS (warehouse 'file://{wh}');"
         "CREATE SCHEMA chg; IMPORT FOREIGN SCHEMA db FROM SERVER chg INTO chg; GRANT USAGE ON SCHEMA chg TO PUBLIC")
    return wh


def changes_expected(table, name):
    return jsonl_file(os.path.join(ARGS.fixtures, "changes", "expected", table, f"{name}.jsonl"))


def jsonl_file(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def json_rows(sql, user=None):
    return [json.loads(l) for l in psql(sql, user=user).splitlines() if l.strip()]


def multiset(rows):
    return Counter(json.dumps(r, sort_keys=True) for r in rows)


@test
def lineage_change_feed_reads_as_typed_rows():
    """icefloe_changes: every recorded range of the Spark tables (MoR and CoW updates, MERGE,
    deletes, a no-op update, a branch, a V2 to V3 upgrade by key, an upsert) reads as the
    rows of Spark's VERSION AS OF differences, typed by the column definition list; by foreign
    table and by name through the server; a non-ancestor range and bad column lists are
    errors that say why."""
    changes_server()
    checked = 0
    for table in ["feed", "cow", "upgrade", "upsert"]:
        m = json.load(open(os.path.join(ARGS.fixtures, "changes", "expected", table, "cases.json")))
        data_cols = [c for c in m["columns"] if not c.startswith("_")]
        types = dict(l.split("|", 1) for l in psql(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
            f"WHERE a.attrelid = 'chg.{table}'::regclass AND a.attnum > 0 AND NOT a.attisdropped").splitlines())
        coldefs = CHANGE_COLS + "".join(f", {quote_ident(c)} {types[c]}" for c in data_cols)
        for c in m["cases"]:
            key = "NULL" if c["key"] is None else quote_lit(",".join(c["key"]))
            net = "true" if c["net"] else "false"
            args = f"{c['from_snapshot']}, {c['to_snapshot']}, {net}, {key}"
            q = f"SELECT row_to_json(c) FROM icefloe_changes('chg.{table}'::regclass, {args}) AS c({coldefs})"
            if c.get("error") == "not_ancestor":
                expect_error(q, sqlstate="22023", contains="is not an ancestor of")
                checked += 1
                continue
            if c.get("error") == "needs_key":
                expect_error(q, contains="give --key")
                checked += 1
                continue
            want = changes_expected(table, c["name"])
            got = json_rows(q)
            assert multiset(got) == multiset(want), (table, c["name"], got, want)
            checked += 1
    assert checked == 30, checked
    # By name through the server, a subset of the columns in another order.
    m = json.load(open(os.path.join(ARGS.fixtures, "changes", "expected", "feed", "cases.json")))
    c = next(c for c in m["cases"] if c["name"] == "all")
    got = json_rows(f"SELECT row_to_json(c) FROM icefloe_changes('db.feed', {c['from_snapshot']}, {c['to_snapshot']}, "
                    "server => 'chg') AS c(val text, _row_id bigint, _change_type text) ORDER BY _row_id, _change_type")
    want = [{"val": r["val"], "_row_id": r["_row_id"], "_change_type": r["_change_type"]}
            for r in changes_expected("feed", "all")]
    assert multiset(got) == multiset(want), got
    # The range is an argument: every commit of main against its parent, from the snapshot list.
    per_commit = int(psql(
        "SELECT count(*) FROM icefloe_snapshots('db.feed', 'chg') s, "
        "LATERAL icefloe_changes('chg.feed'::regclass, s.parent_id, s.snapshot_id) AS c(_change_type text) "
        "WHERE s.parent_id IS NOT NULL").strip())
    steps = sum(c["rows"] for c in m["cases"] if c["name"].startswith("step")) + next(
        c["rows"] for c in m["cases"] if c["name"] == "branch")
    assert per_commit == steps, (per_commit, steps)
    expect_error("SELECT * FROM icefloe_changes('chg.feed'::regclass, 380879772648504273)",
                 contains="column definition list")
    expect_error("SELECT * FROM icefloe_changes('chg.feed'::regclass, 380879772648504273) AS c(nope int)",
                 contains="nope")
    expect_error("SELECT * FROM icefloe_changes('chg.feed'::regclass, 380879772648504273) AS c(_row_id text)",
                 contains="declared text")


@test
def lineage_row_history_retention_and_orphans():
    """icefloe_history(table, row_id): the versions of a row as Spark's reads of every snapshot
    show them, readable until the last kept snapshot reading them expires (icefloe_retention
    at the same instant); icefloe_retention: what Iceberg Java's ExpireSnapshots removed from a
    copy of the table at that instant; icefloe_orphans: what remove_orphan_files(dry_run)
    listed."""
    wh = changes_server()
    reads = json.load(open(os.path.join(ARGS.fixtures, "changes", "expected", "feed", "snapshot_rows.json")))
    now = "2026-12-01 15:00:00+00"
    kept = {int(r[0]): r[1] for r in (l.split("|") for l in psql(
        f"SELECT snapshot_id, expires_at FROM icefloe_retention('chg.feed'::regclass, '{now}') "
        "WHERE item = 'snapshot' AND status = 'kept'").splitlines())}
    assert kept, "some snapshots are kept"
    for row_id in [1, 4, 5]:
        versions = {}
        for snap, rows in reads.items():
            for r in rows:
                if r["_row_id"] == row_id:
                    v = versions.setdefault(r["_last_updated_sequence_number"], {"snaps": set(), "row": r})
                    v["snaps"].add(int(snap))
        got = json_rows(f"SELECT json_build_object('seq', _last_updated_sequence_number, 'n', readable_snapshots, "
                        f"'until', readable_until, 'row', \"row\") FROM icefloe_history('chg.feed'::regclass, {row_id}, '{now}')")
        assert [g["seq"] for g in got] == sorted(versions), (row_id, got)
        for g in got:
            v = versions[g["seq"]]
            assert g["n"] == len(v["snaps"]), (row_id, g)
            assert g["row"] == {k: x for k, x in v["row"].items() if not k.startswith("_")}, (row_id, g)
            until = [kept[s] for s in v["snaps"] if s in kept]
            if "infinity" in until:
                assert g["until"] == "infinity", (row_id, g)
            elif until:
                assert psql(f"SELECT '{g['until']}'::timestamptz = (SELECT max(x::timestamptz) FROM unnest(ARRAY{until!r}) x)").strip() == "t", (row_id, g, until)
    # Rows deleted or overwritten on main that kept snapshots still read, by until when.
    m = json.load(open(os.path.join(ARGS.fixtures, "changes", "expected", "feed", "cases.json")))
    version = lambda r: (r["_row_id"], r["_last_updated_sequence_number"])
    live_now = {version(r) for r in reads[str(m["main"][-1])]}
    until = {}
    for s in m["main"]:
        if s not in kept:
            continue
        for r in reads[str(s)]:
            if version(r) not in live_now:
                until.setdefault(version(r), []).append(kept[s])
    want = Counter(psql(f"SELECT max(x::timestamptz) FROM unnest(ARRAY{u!r}) x").strip() for u in until.values())
    got = Counter(dict((l.split("|")[1], int(l.split("|")[0])) for l in psql(
        f"SELECT name, expires_at FROM icefloe_retention('chg.feed'::regclass, '{now}') "
        "WHERE item = 'readable_removed_rows'").splitlines()))
    assert sum(want.values()) > 0 and got == want, (got, want)
    # The by-name form reads the same.
    a = psql(f"SELECT * FROM icefloe_history('chg.feed'::regclass, 4, '{now}')")
    b = psql(f"SELECT * FROM icefloe_history('db.feed', 4, 'chg', '{now}')")
    assert a == b and a.strip(), (a, b)

    e = json.load(open(os.path.join(ARGS.fixtures, "changes", "expected", "retain", "expire.json")))
    run = e["runs"]["properties"]
    ts = psql(f"SELECT to_timestamp({run['now_ms']} / 1000.0)").strip()
    rows = [l.split("|") for l in psql(
        f"SELECT item, name, snapshot_id, status FROM icefloe_retention('db.retain', '{ts}', 'chg')").splitlines()]
    expired = sorted(int(r[2]) for r in rows if r[0] == "snapshot" and r[3] == "expired")
    want = sorted(s for s in run["snapshots_before"] if s not in run["snapshots_after"])
    assert expired and expired == want, (expired, want)
    loc = e["recorded_location"] + "/"
    deleted = sorted(r[1].split(loc, 1)[-1] for r in rows if r[3] == "deleted")
    assert deleted == sorted(run["removed_files"]), (deleted, run["removed_files"])
    counts = Counter(r[0] for r in rows if r[3] == "deleted")
    for k, n in run["metrics"].items():
        kind = {"deleted_data_files_count": "data_file", "deleted_position_delete_files_count": "position_delete_file",
                "deleted_equality_delete_files_count": "equality_delete_file", "deleted_manifest_files_count": "manifest_file",
                "deleted_manifest_lists_count": "manifest_list", "deleted_statistics_files_count": "statistics_file"}[k]
        assert counts.get(kind, 0) == n, (k, counts)

    o = json.load(open(os.path.join(ARGS.fixtures, "changes", "expected", "orphans", "orphans.json")))
    for rel, ms in o["mtimes_ms"].items():
        os.utime(os.path.join(wh, "db", "orphans", rel), ns=(ms * 1_000_000, ms * 1_000_000))
    cutoff = psql(f"SELECT to_timestamp({o['older_than_ms']} / 1000.0)").strip()
    got = sorted(l.split("/db/orphans/", 1)[1] for l in psql(
        f"SELECT file_path FROM icefloe_orphans('chg.orphans'::regclass, '{cutoff}')").splitlines())
    prefix = "file:" + o["recorded_location"] + "/"
    want = sorted(p[len(prefix):] for p in o["spark_orphans"])
    assert len(want) >= 3 and got == want, (got, want)


@test
def lineage_functions_apply_a_scans_checks():
    """Every issue-14 function opens its table as a scan does: without USAGE on the server,
    without SELECT on the foreign table, or without pg_read_server_files for the local
    warehouse, it is refused (42501), by name and by foreign table."""
    changes_server()
    roles("histnobody", "histreader")
    by_name = [
        "icefloe_changes('db.feed', 380879772648504273, NULL, false, NULL, 'chg') AS c(_row_id bigint)",
        "icefloe_history('db.feed', 4, 'chg')",
        "icefloe_retention('db.feed', NULL, 'chg')",
        "icefloe_orphans('db.feed', NULL, 'chg')",
    ]
    by_table = [
        "icefloe_changes('chg.feed'::regclass, 380879772648504273) AS c(_row_id bigint)",
        "icefloe_history('chg.feed'::regclass, 4)",
        "icefloe_retention('chg.feed'::regclass)",
        "icefloe_orphans('chg.feed'::regclass)",
    ]
    for f in by_name + by_table:
        expect_error(f"SELECT count(*) FROM {f}", sqlstate="42501", user="histnobody")
    # USAGE on the server and SELECT on the table, but the warehouse is local.
    psql("GRANT USAGE ON FOREIGN SERVER chg TO histreader; GRANT SELECT ON chg.feed TO histreader")
    for f in by_name + by_table:
        expect_error(f"SELECT count(*) FROM {f}", sqlstate="42501", contains="pg_read_server_files", user="histreader")
    psql("GRANT pg_read_server_files TO histreader")
    for f in by_name + by_table:
        psql(f"SELECT count(*) FROM {f}", user="histreader")


# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# hostile metadata and endpoints, as a role with USAGE on the wrapper and nothing more


SECRET_REPLY = '{"Code": "Success", "AccessKeyId": "ASIASECRETKEY", "SecretAccessKey": "hush-hush"}'


class FakeS3:
    """A loopback HTTP server answering as S3 (ListObjectsV2, GET, HEAD) from a dict of
    objects; `answer(method, path)` may override any reply with (status, body) or
    (status, None, n) for n bytes of spaces, streamed. Stands in for a hostile endpoint or an
    internal service."""

    def __init__(self, objects=None, answer=None):
        import http.server
        from urllib.parse import urlparse, parse_qs, unquote
        from xml.sax.saxutils import escape
        objects = self.objects = dict(objects or {})
        reqs = self.requests = []

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def reply(self, status, body=b"", spaces=None, ctype="application/json"):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(spaces if spaces is not None else len(body)))
                self.end_headers()
                if self.command == "HEAD":
                    return
                try:
                    if spaces is None:
                        self.wfile.write(body)
                    else:
                        chunk = b" " * 65536
                        left = spaces
                        while left > 0:
                            self.wfile.write(chunk[:min(left, len(chunk))])
                            left -= min(left, len(chunk))
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self):
                reqs.append(f"{self.command} {self.path}")
                if answer:
                    a = answer(self.command, self.path)
                    if a is not None:
                        body = a[1].encode() if isinstance(a[1], str) else (a[1] or b"")
                        return self.reply(a[0], body, a[2] if len(a) > 2 else None)
                u = urlparse(self.path)
                q = parse_qs(u.query)
                parts = unquote(u.path).lstrip("/").split("/", 1)
                bucket, key = parts[0], parts[1] if len(parts) > 1 else ""
                if "list-type" in q:
                    prefix = q.get("prefix", [""])[0]
                    delim = q.get("delimiter", [None])[0]
                    keys, dirs = [], set()
                    for k in sorted(objects):
                        b, _, rest = k.partition("/")
                        if b != bucket or not rest.startswith(prefix):
                            continue
                        tail = rest[len(prefix):]
                        if delim and delim in tail:
                            dirs.add(prefix + tail.split(delim)[0] + delim)
                        else:
                            keys.append(rest)
                    xml = ["<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult>",
                           f"<Name>{bucket}</Name><Prefix>{escape(prefix)}</Prefix><KeyCount>{len(keys)}</KeyCount><IsTruncated>false</IsTruncated>"]
                    for k in keys:
                        size = objects[bucket + "/" + k]
                        size = size[1] if isinstance(size, tuple) else len(size)
                        xml.append(f"<Contents><Key>{escape(k)}</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>"
                                   f"<ETag>\"e\"</ETag><Size>{size}</Size></Contents>")
                    for d in sorted(dirs):
                        xml.append(f"<CommonPrefixes><Prefix>{escape(d)}</Prefix></CommonPrefixes>")
                    xml.append("</ListBucketResult>")
                    return self.reply(200, "".join(xml).encode(), ctype="application/xml")
                obj = objects.get(bucket + "/" + key)
                if obj is None:
                    return self.reply(404, b"<Error><Code>NoSuchKey</Code></Error>", ctype="application/xml")
                if isinstance(obj, tuple):
                    return self.reply(200, spaces=obj[1], ctype="application/octet-stream")
                rng = self.headers.get("Range")
                if rng and rng.startswith("bytes="):
                    a, _, b = rng[6:].partition("-")
                    if a == "":
                        start, end = max(0, len(obj) - int(b)), len(obj) - 1
                    else:
                        start, end = int(a), min(int(b) if b else len(obj) - 1, len(obj) - 1)
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{end}/{len(obj)}")
                    self.send_header("Content-Length", str(end - start + 1))
                    self.end_headers()
                    try:
                        self.wfile.write(obj[start:end + 1])
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                    return
                return self.reply(200, obj, ctype="application/octet-stream")

            do_HEAD = do_GET

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def put_table(self, src, key_prefix, edit=None):
        """Copies the table at `src` under `key_prefix`, its current metadata `edit`ed."""
        meta = os.path.join(src, "metadata")
        v = open(os.path.join(meta, "version-hint.text")).read().strip()
        for d, _, files in os.walk(src):
            for f in files:
                path = os.path.join(d, f)
                data = open(path, "rb").read()
                if edit and path == os.path.join(meta, f"v{v}.metadata.json"):
                    m = json.loads(data)
                    edit(m)
                    data = json.dumps(m).encode()
                self.objects[key_prefix + "/" + os.path.relpath(path, src)] = data

    def close(self):
        self.httpd.shutdown()


def s3_server(name, url, owner_roles=()):
    psql(f"DROP SERVER IF EXISTS {name} CASCADE; CREATE SERVER {name} FOREIGN DATA WRAPPER icefloe OPTIONS "
         f"(warehouse 's3://lake/wh', aws_endpoint '{url}', aws_allow_http 'true', aws_region 'us-east-1');"
         + "".join(f"GRANT USAGE ON FOREIGN SERVER {name} TO {r};" for r in owner_roles))


def self_parent(m):
    s = m["snapshots"][-1]
    s["parent-snapshot-id"] = s["snapshot-id"]


@test
def a_history_that_loops_is_refused_at_once_for_everyone():
    """A current snapshot that names itself as parent: every read is an error naming it,
    at once (the change feed, time travel without a snapshot log, the snapshot list), for an
    unprivileged role and a superuser alike; a longer loop names its snapshots."""
    roles("eve")
    s3 = FakeS3()
    try:
        src = os.path.join(ARGS.warehouse, "db", "v3_lineage")
        s3.put_table(src, "lake/wh/db/selfpar", self_parent)

        def no_log(m):
            self_parent(m)
            m["snapshot-log"] = []

        s3.put_table(src, "lake/wh/db/nolog", no_log)

        def loop(m):
            m["snapshots"][1]["parent-snapshot-id"] = m["snapshots"][3]["snapshot-id"]

        s3.put_table(src, "lake/wh/db/loop", loop)
        m = json.load(open(os.path.join(src, "metadata", f"v{open(os.path.join(src, 'metadata', 'version-hint.text')).read().strip()}.metadata.json")))
        cur, first = m["current-snapshot-id"], m["snapshots"][0]["snapshot-id"]
        ts = m["snapshots"][2]["timestamp-ms"]
        s3_server("hist", s3.url, ["eve"])
        psql("CREATE FOREIGN TABLE public.nolog_t (id bigint) SERVER hist OPTIONS (\"table\" 'db.nolog', as_of '%d');"
             "GRANT SELECT ON public.nolog_t TO eve" % ts)
        want = f"snapshot {cur} names itself as parent-snapshot-id"
        for user in ["eve", None]:
            for q in [f"SELECT count(*) FROM icefloe_snapshots('db.selfpar', 'hist')",
                      f"SELECT count(*) FROM icefloe_changes('db.selfpar', {first}, {cur}, server => 'hist') AS c(_row_id bigint)",
                      "SELECT count(*) FROM public.nolog_t"]:
                t0 = time.time()
                expect_error("SET statement_timeout = '60s';" + q, sqlstate="XX001", contains=want, user=user)
                assert time.time() - t0 < 10, (q, time.time() - t0)
        e = expect_error("SELECT count(*) FROM icefloe_snapshots('db.loop', 'hist')", contains="loops back", user="eve")
        for s in m["snapshots"][1:4]:
            assert str(s["snapshot-id"]) in e, e
    finally:
        s3.close()
        psql("DROP SERVER IF EXISTS hist CASCADE")


@test
def a_long_scan_stops_within_a_second_on_timeout_and_cancel():
    """statement_timeout and pg_cancel_backend end a long scan within a second of firing."""
    sql = ("SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off; "
           "SELECT count(*) FROM generate_series(1, 100000) gs(n), cur.v3_dv_large t WHERE t.id = gs.n")
    t0 = time.time()
    expect_error("SET statement_timeout = '1s';" + sql, sqlstate="57014")
    took = time.time() - t0
    assert took < 2.0, f"a 1 s statement_timeout ended the scan after {took:.2f}s"
    result = {}

    def victim():
        try:
            psql(sql + " /* victim */")
        except SqlError as e:
            result["err"] = e

    th = threading.Thread(target=victim)
    th.start()
    for _ in range(300):
        out = psql("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%/* victim */%' "
                   "AND pid <> pg_backend_pid()")
        if int(out.strip() or 0) > 0:
            break
        time.sleep(0.1)
    time.sleep(0.5)
    t0 = time.time()
    psql("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%/* victim */%' AND pid <> pg_backend_pid()")
    th.join(30)
    took = time.time() - t0
    assert not th.is_alive(), "scan did not stop after pg_cancel_backend"
    assert result.get("err") is not None and result["err"].sqlstate == "57014", result
    assert took < 1.0, f"pg_cancel_backend ended the scan after {took:.2f}s"


@test
def network_destinations_need_a_superuser_or_the_allow_list():
    """aws_endpoint, aws_allow_http, catalog_uri and oauth2_server_uri choose where backends
    send requests: a role with USAGE on the wrapper may not set them (CREATE or ALTER SERVER)
    unless icefloe.allowed_endpoints, which only a superuser sets, lists the destination."""
    roles("eve")
    psql("GRANT USAGE ON FOREIGN DATA WRAPPER icefloe TO eve")
    for opts in ["warehouse 's3://b/w', aws_endpoint 'http://169.254.169.254/latest/meta-data'",
                 "warehouse 's3://b/w', aws_allow_http 'true'",
                 "catalog_uri 'http://169.254.169.254/'",
                 "catalog_uri 'http://127.0.0.1:9/', oauth2_server_uri 'http://169.254.169.254/token'"]:
        expect_error(f"CREATE SERVER e_s FOREIGN DATA WRAPPER icefloe OPTIONS ({opts})", sqlstate="42501",
                     contains="superuser", user="eve")
    psql("CREATE SERVER e_own FOREIGN DATA WRAPPER icefloe OPTIONS (warehouse 's3://b/w')", user="eve")
    expect_error("ALTER SERVER e_own OPTIONS (ADD aws_endpoint 'http://169.254.169.254')", sqlstate="42501", user="eve")
    expect_error("ALTER SERVER e_own OPTIONS (ADD aws_region 'x.169.254.169.254/')", sqlstate="HV024", user="eve")
    # (The library is loaded first: before that, SET makes a placeholder, checked on load.)
    expect_error("SELECT icefloe_fdw_validator('{}'::text[], 0); SET icefloe.allowed_endpoints = 'http://169.254.169.254/'",
                 sqlstate="42501", user="eve")
    try:
        # ALTER SYSTEM knows the setting once the library is loaded in the session.
        psql("SELECT icefloe_fdw_validator('{}'::text[], 0);"
             "ALTER SYSTEM SET icefloe.allowed_endpoints = 'http://127.0.0.1:9/s3/'; SELECT pg_reload_conf()")
        time.sleep(0.5)
        psql("ALTER SERVER e_own OPTIONS (ADD aws_endpoint 'http://127.0.0.1:9/s3/', aws_allow_http 'true')", user="eve")
        for bad in ["http://127.0.0.1:9/other", "http://127.0.0.1:90/s3/", "http://127.0.0.1:9@169.254.169.254/s3/",
                    "https://127.0.0.1:9/s3/", "http://127.0.0.1.nip.io:9/s3/"]:
            expect_error(f"ALTER SERVER e_own OPTIONS (SET aws_endpoint '{bad}')", sqlstate="42501", user="eve")
    finally:
        psql("SELECT icefloe_fdw_validator('{}'::text[], 0);"
             "ALTER SYSTEM RESET icefloe.allowed_endpoints; SELECT pg_reload_conf()")
        psql("DROP SERVER IF EXISTS e_own CASCADE")
    # A superuser may point a server anywhere.
    psql("CREATE SERVER su_any FOREIGN DATA WRAPPER icefloe OPTIONS (warehouse 's3://b/w', aws_endpoint 'http://10.0.0.1'); DROP SERVER su_any")


@test
def internal_service_replies_never_reach_errors():
    """Storage and catalog endpoints that answer with an internal service's reply (200 with
    credentials JSON, 403, 500): the error has the status, the operation and the object,
    never the reply's text, for the role reading through the server."""
    roles("eve")
    for status in [200, 403, 500]:
        svc = FakeS3(answer=lambda method, path, status=status: (status, SECRET_REPLY))
        try:
            servers = []
            if status != 500:  # object_store retries a 500 for minutes: the CLI tests cover it
                s3_server("svc_s3", svc.url, ["eve"])
                servers.append("SELECT count(*) FROM icefloe_snapshots('s3://b/t', 'svc_s3')")
                psql("ALTER SERVER svc_s3 OPTIONS (ADD aws_virtual_hosted_style_request 'true')")
                servers.append("SELECT count(*) FROM icefloe_snapshots('s3://b/t', 'svc_s3')")
            psql(f"DROP SERVER IF EXISTS svc_rest CASCADE; CREATE SERVER svc_rest FOREIGN DATA WRAPPER icefloe "
                 f"OPTIONS (catalog_uri '{svc.url}/latest/meta-data'); GRANT USAGE ON FOREIGN SERVER svc_rest TO eve;"
                 "CREATE USER MAPPING FOR eve SERVER svc_rest OPTIONS (token 't')")
            servers.append("SELECT count(*) FROM icefloe_snapshots('db.t', 'svc_rest')")
            for q in servers:
                e = expect_error("SET statement_timeout = '60s';" + q, user="eve")
                assert "ASIASECRET" not in e and "hush" not in e and "AccessKeyId" not in e, (status, q, e)
                if status != 200:
                    assert f"HTTP {status}" in e, (status, q, e)
            assert svc.requests, "no request reached the service"
        finally:
            svc.close()
            psql("DROP SERVER IF EXISTS svc_s3 CASCADE; DROP SERVER IF EXISTS svc_rest CASCADE")


@test
def catalog_error_messages_only_with_reply_excerpts():
    """A REST catalog's error answer (an Iceberg ErrorModel) shows its status and type; its
    message only when a superuser turns icefloe.reply_excerpts on, which eve cannot."""
    roles("eve")
    body = '{"error": {"message": "hush ASIASECRET", "type": "NoSuchTableException", "code": 404}}'
    svc = FakeS3(answer=lambda method, path: (404, body))
    q = "SELECT count(*) FROM icefloe_snapshots('db.t', 'svc_rest')"
    try:
        psql(f"DROP SERVER IF EXISTS svc_rest CASCADE; CREATE SERVER svc_rest FOREIGN DATA WRAPPER icefloe "
             f"OPTIONS (catalog_uri '{svc.url}'); GRANT USAGE ON FOREIGN SERVER svc_rest TO eve;"
             "CREATE USER MAPPING FOR eve SERVER svc_rest OPTIONS (token 't')")
        e = expect_error(q, user="eve")
        assert "HTTP 404" in e and "NoSuchTableException" in e and "hush" not in e, e
        expect_error("SELECT icefloe_fdw_validator('{}'::text[], 0); SET icefloe.reply_excerpts = on",
                     user="eve", sqlstate="42501")
        psql("SELECT icefloe_fdw_validator('{}'::text[], 0);"
             "ALTER SYSTEM SET icefloe.reply_excerpts = on; SELECT pg_reload_conf()")
        time.sleep(0.5)
        try:
            e = expect_error(q, user="eve")
            assert "hush ASIASECRET" in e, e
        finally:
            psql("ALTER SYSTEM RESET icefloe.reply_excerpts; SELECT pg_reload_conf()")
    finally:
        svc.close()
        psql("DROP SERVER IF EXISTS svc_rest CASCADE")


def backend_peak_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM")


@test
def an_oversized_metadata_file_fails_under_its_cap():
    """A 3 GB metadata file (spaces) fails at once under the default cap; a 200 MB one under
    a 16 MB cap, with the backend's peak memory near the cap; the error names the file and the
    setting. Only a superuser changes the cap."""
    roles("eve")
    s3 = FakeS3({"lake/wh/db/big/metadata/v1.metadata.json": ("spaces", 3_000_000_000),
                 "lake/wh/db/mid/metadata/v1.metadata.json": ("spaces", 200_000_000)})
    try:
        s3_server("big", s3.url, ["eve"])
        e = expect_error("SELECT count(*) FROM icefloe_snapshots('db.big', 'big')", sqlstate="54000",
                         contains=["v1.metadata.json", "max_metadata_bytes"], user="eve")
        expect_error("SELECT icefloe_fdw_validator('{}'::text[], 0); SET icefloe.max_metadata_size = '1GB'",
                     sqlstate="42501", user="eve")
        # One session: the cap set by the superuser, the read as eve, then the peak memory.
        script = ("SELECT pg_backend_pid();\nSET icefloe.max_metadata_size = '16MB';\nSET ROLE eve;\n"
                  "SELECT count(*) FROM icefloe_snapshots('db.mid', 'big');\nRESET ROLE;\nSELECT 'done';\n")
        cmd = ["psql", "-X", "-q", "-A", "-t", "-h", ARGS.host, "-p", str(ARGS.port), "-U", ARGS.user, "-d", "icefloe_regress"]
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=PG_ENV)
        p.stdin.write(script + "SELECT pg_sleep(30);\n")
        p.stdin.flush()
        pid = int(p.stdout.readline().strip())
        assert p.stdout.readline().strip() == "done"
        peak = backend_peak_kb(pid)
        p.kill()
        _, err = p.communicate()
        assert "max_metadata_bytes" in err and "16777216" in err, err
        assert peak < 160 * 1024, f"backend peak {peak} kB reading a 200 MB file under a 16 MB cap"
    finally:
        s3.close()
        psql("DROP SERVER IF EXISTS big CASCADE")


@test
def analyze_refusal_has_no_backtrace():
    """ANALYZE of a table its owner may not read: one message, no backtrace, no build paths."""
    roles("eve")
    path = os.path.join(ARGS.warehouse, "db", "v3_basic")
    psql(f"DROP FOREIGN TABLE IF EXISTS public.an_t; CREATE FOREIGN TABLE public.an_t (id bigint) SERVER lake "
         f"OPTIONS (location '{path}'); ALTER FOREIGN TABLE public.an_t OWNER TO eve")
    try:
        for user in [None, "eve"]:
            e = expect_error("ANALYZE public.an_t", sqlstate="42501", contains="pg_read_server_files", user=user)
            assert "DETAIL" not in e and "backtrace" not in e.lower() and "/.cargo/" not in e and "rustc" not in e, e
            assert len(e.splitlines()) <= 3, e
    finally:
        psql("DROP FOREIGN TABLE IF EXISTS public.an_t")


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
    skip_why = []
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
            skip_why.append(" ".join(f"{t.__name__}: {e}".split()))
            print(f"skip {t.__name__}: {e}", flush=True)
        except Exception as e:  # noqa: BLE001 - a test harness reports every failure
            failed += 1
            msg = str(e) if isinstance(e, (AssertionError, SqlError)) else traceback.format_exc()
            print(f"FAIL {t.__name__} ({time.time() - t0:.1f}s)\n     " + msg.replace("\n", "\n     ")[:4000], flush=True)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    if os.environ.get("ICEFLOE_COUNTS"):
        # One tab-separated line for scripts/test's total: part, passed, failed, skipped, why.
        with open(os.environ["ICEFLOE_COUNTS"], "a") as f:
            f.write(f"Postgres regression tests\t{passed}\t{failed}\t{skipped}\t{'; '.join(skip_why)}\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
