#!/usr/bin/env python3
r"""Writes the Spark tables behind the change-feed tests (change feed, row history, retention,
orphans).

Run with the Spark 3.5.9 + Iceberg 1.10.2 virtualenv that `benches/bench-table/make-bench-table --setup-only` sets up:

    TZ=UTC nice -n 10 ~/.cache/iceberg-gen/venv/bin/python tests/gen/changes.py

Tables (Hadoop catalog `x`, namespace `db`, written at /tmp/icefloe-changes-wh, copied to
tests/fixtures/changes/warehouse/db/<table>; expected results in tests/fixtures/changes/expected/):

  feed      format 3: INSERT, INSERT, merge-on-read UPDATE (a DV), copy-on-write UPDATE, MERGE
            (update + delete + insert, merge-on-read), merge-on-read DELETE, a no-op UPDATE,
            copy-on-write DELETE; branch `audit` from the MERGE snapshot with an INSERT on it.
  cow       format 3, copy-on-write only: INSERT, UPDATE, MERGE, a no-op UPDATE, DELETE (Spark's
            changelog answers every range of it).
  upgrade   format 2: INSERT, merge-on-read DELETE (a position delete file); upgrade to format 3;
            merge-on-read UPDATE (a DV), INSERT. Pre-upgrade snapshots have no lineage.
  upsert    format 3: INSERT; then (Iceberg Java API, RowDelta) an upsert written as an equality
            delete on id plus an insert of the new row; then an equality delete alone.
  lifecycle format 3, copy-on-write: INSERT, INSERT, UPDATE of id 2; branch `dev` from there with
            an UPDATE then a DELETE of id 2; on main an UPDATE then a DELETE of id 2, an UPDATE,
            a DELETE. Net views over an update then a delete, ranges from the table's creation
            (`from_snapshot` null), all beside Spark's changelog.
  lifecycle_mor  the same statements merge-on-read (deletion vectors; Spark's changelog refuses).
  upgrade_cow  format 2, copy-on-write: INSERT, UPDATE, INSERT; upgrade to format 3; INSERT (its
            commit gives the older files row ids), UPDATE, DELETE; key and net cases beside
            Spark's changelog.
  retain    format 3, snapshots a few seconds apart, refs with retention settings (Java API
            ManageSnapshots), table properties history.expire.*; the copy committed is the
            table before expiry; `expire.json` records what Spark's expire_snapshots procedure
            (Iceberg Java ExpireSnapshots) removed from a copy at `now_ms`.
            A second run on the same state (restored) passes older_than/retain_last instead.
  expire_files  format 3: INSERTs, a merge-on-read DELETE (a DV), a copy-on-write UPDATE, an
            equality delete (Java API), another DV, rewrite_data_files removing dangling deletes,
            the equality delete removed (Java API), an INSERT; `expire.json` as for retain, with two older_than runs that delete data
            files, deletion vectors, the equality delete file, manifests and manifest lists.
  orphans   format 3 with planted files no metadata references, old and new; `orphans.json`
            records every file's mtime and what remove_orphan_files(dry_run => true) listed.

Expected changes (`expected/<table>/cases.json`, one `<case>.jsonl` per case): each commit's
changes are the difference of Spark's `VERSION AS OF` reads of the commit and its parent,
matched by `_row_id` (or by the key columns for key cases): a row only in the parent is a
delete, only in the commit an insert, in both with another `_last_updated_sequence_number`
(key cases: other values) an update_before/update_after pair. Every insert/update_after row
must carry the commit's sequence number as `_last_updated_sequence_number` (checked here).
Net cases keep one row per _row_id (or key): its last state with the lineage Spark reads at
`to`, or the delete showing the row as Spark read it at `from`. Where Spark's
create_changelog_view answers for a range (without a start snapshot for ranges from the
table's creation), its rows are recorded beside (`spark_changelog`), or its error.
"""
import datetime
import decimal
import json
import os
import shutil
import sys
import time

os.environ["TZ"] = "UTC"
time.tzset()
WH = "/tmp/icefloe-changes-wh"
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "fixtures", "changes")
sys.path.insert(0, HERE)
from spark_session import make_spark  # noqa: E402  (tests/gen/spark_session.py)
LINEAGE = ["_row_id", "_last_updated_sequence_number"]
CHANGE = ["_change_type", "_commit_snapshot_id", "_change_sequence_number", "_change_ordinal"]


def spark_session():
    return make_spark("icefloe-changes", WH)


def enc(v):
    if v is None:
        return None
    if isinstance(v, datetime.datetime):
        return v.strftime("%Y-%m-%dT%H:%M:%S.%f") + "+00:00"
    if isinstance(v, datetime.date):
        return v.strftime("%Y-%m-%d")
    if isinstance(v, decimal.Decimal):
        return str(v)
    return v


def sql(spark, s):
    print("  " + " ".join(s.split())[:120], flush=True)
    return spark.sql(s).collect()


def jtable(spark, t):
    return spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, f"x.db.{t}")


def snapshots(spark, t):
    """Every snapshot in the metadata: id, parent, sequence number, time, operation."""
    table = jtable(spark, t)
    out = []
    for s in table.snapshots():
        out.append(dict(snapshot_id=s.snapshotId(), parent=s.parentId(), seq=s.sequenceNumber(),
                        timestamp_ms=s.timestampMillis(), operation=s.operation()))
    out.sort(key=lambda s: s["seq"])
    return out


def read(spark, t, sid):
    df = spark.sql(f"SELECT _row_id, _last_updated_sequence_number, * FROM x.db.{t} VERSION AS OF {sid}")
    return df.columns, [{c: enc(r[c]) for c in df.columns} for r in df.collect()]


def ancestry(snaps, frm, to):
    """Commits after `frm` up to `to`, oldest first; None when frm is not an ancestor of to.
    `frm` None: every ancestor of `to`, from the table's creation."""
    by_id = {s["snapshot_id"]: s for s in snaps}
    chain, cur = [], to
    while cur is not None and cur != frm:
        chain.append(by_id[cur])
        cur = by_id[cur]["parent"]
    if cur != frm:
        return None
    return list(reversed(chain))


def commit_changes(before, after, commit, ordinal, key):
    """One commit's changes: the parent's rows `before` vs the commit's rows `after`."""
    def ident(r):
        return tuple(r[k] for k in key) if key else r["_row_id"]

    def data(r):
        return {k: v for k, v in r.items() if k not in LINEAGE}

    b = {}
    for r in before:
        assert ident(r) not in b, f"duplicate {key or '_row_id'} {ident(r)}"
        b[ident(r)] = r
    a = {}
    for r in after:
        assert ident(r) not in a, f"duplicate {key or '_row_id'} {ident(r)}"
        a[ident(r)] = r
    if not key:
        assert None not in a and None not in b, "rows without lineage need a key"
    out = []

    def emit(kind, r):
        head = {"_change_type": kind, "_commit_snapshot_id": commit["snapshot_id"],
                "_change_sequence_number": commit["seq"], "_change_ordinal": ordinal}
        if kind in ("insert", "update_after") and not key:
            assert r["_last_updated_sequence_number"] == commit["seq"], (r, commit)
        out.append({**head, **r})

    for k in sorted(set(b) | set(a), key=lambda x: json.dumps(x)):
        rb, ra = b.get(k), a.get(k)
        if rb is not None and ra is None:
            emit("delete", rb)
        elif rb is None and ra is not None:
            emit("insert", ra)
        elif key and data(rb) != data(ra):
            emit("update_before", rb)
            emit("update_after", ra)
        elif not key and rb["_last_updated_sequence_number"] != ra["_last_updated_sequence_number"]:
            emit("update_before", rb)
            emit("update_after", ra)
    return out


def net(changes, key, to_rows):
    """One row per _row_id (or key): its last state, with `_row_id` and
    `_last_updated_sequence_number` as Spark reads them at `to` (`to_rows`: by key they can
    change without a change, when lineage is assigned at the upgrade to format 3); or the
    delete, showing the row as it was at `from` (the first change's before image) under the
    deleting commit; dropped when it was inserted and deleted inside the range."""
    def ident(r):
        return tuple(r[x] for x in key) if key else r["_row_id"]

    at_to = {ident(r): r for r in to_rows}
    first, last = {}, {}
    for c in changes:
        k = ident(c)
        first.setdefault(k, c)
        if c["_change_type"] != "update_before":
            last[k] = c
    out = []
    for k, c in last.items():
        existed = first[k]["_change_type"] in ("delete", "update_before")
        if c["_change_type"] == "delete":
            if existed:
                was = {n: v for n, v in first[k].items() if n not in CHANGE}
                out.append({**{n: c[n] for n in CHANGE}, **was})
        else:
            lineage = {n: at_to[k][n] for n in LINEAGE}
            if not key:
                assert lineage == {n: c[n] for n in LINEAGE}, (c, at_to[k])
            out.append({**c, **lineage, "_change_type": "update_after" if existed else "insert"})
    return out


class Recorder:
    def __init__(self, spark, table):
        self.spark, self.table, self.cases = spark, table, []
        self.snaps = snapshots(spark, table)
        self.rows = {}
        self.columns = None
        for s in self.snaps:
            cols, rs = read(spark, table, s["snapshot_id"])
            self.rows[s["snapshot_id"]] = rs
            self.columns = cols
        self.dir = os.path.join(OUT, "expected", table)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)

    def case(self, name, frm, to, key=None, net_view=False, spark_changelog=False, error=None):
        """A range after snapshot `frm` (None: from the table's creation) up to `to`."""
        chain = ancestry(self.snaps, frm, to)
        case = dict(name=name, from_snapshot=frm, to_snapshot=to, key=key, net=net_view)
        if error:
            assert chain is None or error != "not_ancestor"
            case["error"] = error
            self.cases.append(case)
            return
        changes = []
        parent = frm
        for i, c in enumerate(chain):
            before = [] if parent is None else self.rows[parent]
            changes += commit_changes(before, self.rows[c["snapshot_id"]], c, i, key)
            parent = c["snapshot_id"]
        if net_view:
            changes = net(changes, key, self.rows[to])
        with open(os.path.join(self.dir, f"{name}.jsonl"), "w") as f:
            for r in changes:
                f.write(json.dumps(r) + "\n")
        case["rows"] = len(changes)
        if spark_changelog:
            case["spark_changelog"] = self.spark_changelog(name, frm, to, net_view, key)
        self.cases.append(case)
        print(f"  case {self.table}/{name}: {len(changes)} changes", flush=True)

    def spark_changelog(self, name, frm, to, net_view, key=None):
        """Spark's create_changelog_view over the range (no start-snapshot-id when `frm` is
        None: Spark then starts at the table's creation), identifier columns `key` or id."""
        view = f"cl_{self.table}_{name}"
        start = "" if frm is None else f"'start-snapshot-id', '{frm}', "
        ids = ", ".join(f"'{k}'" for k in (key or ["id"]))
        args = (f"table => 'db.{self.table}', changelog_view => '{view}', "
                f"options => map({start}'end-snapshot-id', '{to}'), "
                f"identifier_columns => array({ids})")
        args += ", net_changes => true, compute_updates => false" if net_view else ", compute_updates => true"
        try:
            self.spark.sql(f"CALL x.system.create_changelog_view({args})").collect()
            df = self.spark.sql(f"SELECT * FROM {view}")
            rs = [{c: enc(r[c]) for c in df.columns} for r in df.collect()]
        except Exception as e:  # noqa: BLE001 - recorded: Spark refuses some ranges
            msg = str(e).split("\n")
            err = next((m for m in msg if "Exception" in m), msg[0])[:400]
            print(f"  changelog {name}: Spark refuses: {err}", flush=True)
            return dict(error=err)
        rs.sort(key=lambda r: (r["_change_ordinal"], json.dumps(r["id"]), r["_change_type"]))
        with open(os.path.join(self.dir, f"{name}.spark_changelog.jsonl"), "w") as f:
            for r in rs:
                f.write(json.dumps(r) + "\n")
        return dict(rows=len(rs), file=f"{name}.spark_changelog.jsonl")

    def save(self, statements, **extra):
        refs = {}
        table = jtable(self.spark, self.table)
        for name, r in table.refs().items():
            refs[name] = dict(snapshot_id=r.snapshotId(), type="branch" if r.isBranch() else "tag")
        with open(os.path.join(self.dir, "cases.json"), "w") as f:
            json.dump(dict(table=self.table, table_dir=f"warehouse/db/{self.table}",
                           recorded_location=f"{WH}/db/{self.table}", columns=self.columns,
                           snapshots=self.snaps, refs=refs, statements=statements,
                           cases=self.cases, **extra), f, indent=1)
        with open(os.path.join(self.dir, "snapshot_rows.json"), "w") as f:
            json.dump({str(k): v for k, v in self.rows.items()}, f)


def run(spark, stmts, s):
    stmts.append(" ".join(s.split()))
    sql(spark, s)


def head(spark, t, branch="main"):
    return jtable(spark, t).refs()[branch].snapshotId()


def feed(spark):
    st = []
    t = "x.db.feed"
    run(spark, st, f"CREATE TABLE {t} (id bigint, val string, cat string) USING iceberg TBLPROPERTIES "
        "('format-version'='3', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
        "'write.merge.mode'='merge-on-read')")
    run(spark, st, f"INSERT INTO {t} VALUES (1,'a','x'),(2,'b','x'),(3,'c','y'),(4,'d','y'),(5,'e','z'),(6,'f','z')")
    run(spark, st, f"INSERT INTO {t} VALUES (7,'g','x'),(8,'h','y')")
    run(spark, st, f"UPDATE {t} SET val = 'b2' WHERE id = 2")
    run(spark, st, f"ALTER TABLE {t} SET TBLPROPERTIES ('write.update.mode'='copy-on-write')")
    run(spark, st, f"UPDATE {t} SET val = 'c2' WHERE id = 3")
    run(spark, st, f"""MERGE INTO {t} t USING (SELECT * FROM VALUES (4L,'d2','y'),(5L,'gone','z'),(9L,'i','x')
        AS s(id, val, cat)) s ON t.id = s.id
        WHEN MATCHED AND s.val = 'gone' THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.val = s.val
        WHEN NOT MATCHED THEN INSERT *""")
    merge = head(spark, "feed")
    run(spark, st, f"ALTER TABLE {t} CREATE BRANCH audit AS OF VERSION {merge}")
    run(spark, st, f"INSERT INTO {t}.branch_audit VALUES (10,'j','z')")
    run(spark, st, f"DELETE FROM {t} WHERE id = 6")
    run(spark, st, f"ALTER TABLE {t} SET TBLPROPERTIES ('write.update.mode'='merge-on-read')")
    run(spark, st, f"UPDATE {t} SET val = val WHERE id = 1")
    run(spark, st, f"ALTER TABLE {t} SET TBLPROPERTIES ('write.delete.mode'='copy-on-write')")
    run(spark, st, f"DELETE FROM {t} WHERE id = 7")
    rec = Recorder(spark, "feed")
    main = [s["snapshot_id"] for s in rec.snaps if ancestry(rec.snaps, s["snapshot_id"], head(spark, "feed")) is not None]
    main.sort(key=lambda i: next(s["seq"] for s in rec.snaps if s["snapshot_id"] == i))
    audit = head(spark, "feed", "audit")
    for i in range(len(main) - 1):
        rec.case(f"step{i + 1}", main[i], main[i + 1], spark_changelog=True)
    rec.case("all", main[0], main[-1])
    rec.case("all_net", main[0], main[-1], net_view=True)
    rec.case("all_key", main[0], main[-1], key=["id"])
    rec.case("appends", main[0], main[1], spark_changelog=True)
    rec.case("appends_net", main[0], main[1], net_view=True, spark_changelog=True)
    rec.case("branch", merge, audit)
    rec.case("not_ancestor", audit, main[-1], error="not_ancestor")
    rec.save(st, main=main, audit=audit)


def cow(spark):
    st = []
    t = "x.db.cow"
    run(spark, st, f"CREATE TABLE {t} (id bigint, val string) USING iceberg TBLPROPERTIES "
        "('format-version'='3', 'write.delete.mode'='copy-on-write', 'write.update.mode'='copy-on-write', "
        "'write.merge.mode'='copy-on-write')")
    run(spark, st, f"INSERT INTO {t} VALUES (1,'a'),(2,'b'),(3,'c'),(4,'d')")
    run(spark, st, f"UPDATE {t} SET val = 'b2' WHERE id = 2")
    run(spark, st, f"""MERGE INTO {t} t USING (SELECT * FROM VALUES (3L,'c2'),(4L,'gone'),(5L,'e')
        AS s(id, val)) s ON t.id = s.id
        WHEN MATCHED AND s.val = 'gone' THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.val = s.val
        WHEN NOT MATCHED THEN INSERT *""")
    run(spark, st, f"UPDATE {t} SET val = val WHERE id = 1")
    run(spark, st, f"DELETE FROM {t} WHERE id = 5")
    rec = Recorder(spark, "cow")
    ids = [s["snapshot_id"] for s in rec.snaps]
    for i in range(len(ids) - 1):
        rec.case(f"step{i + 1}", ids[i], ids[i + 1], spark_changelog=True)
    rec.case("all", ids[0], ids[-1], spark_changelog=True)
    rec.case("all_net", ids[0], ids[-1], net_view=True, spark_changelog=True)
    rec.save(st)


def upgrade(spark):
    st = []
    t = "x.db.upgrade"
    run(spark, st, f"CREATE TABLE {t} (id bigint, val string) USING iceberg TBLPROPERTIES "
        "('format-version'='2', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')")
    run(spark, st, f"INSERT INTO {t} VALUES (1,'a'),(2,'b'),(3,'c'),(4,'d')")
    run(spark, st, f"DELETE FROM {t} WHERE id = 4")
    run(spark, st, f"ALTER TABLE {t} SET TBLPROPERTIES ('format-version'='3')")
    run(spark, st, f"UPDATE {t} SET val = 'a2' WHERE id = 1")
    run(spark, st, f"INSERT INTO {t} VALUES (5,'e')")
    rec = Recorder(spark, "upgrade")
    ids = [s["snapshot_id"] for s in rec.snaps]
    rec.case("v2_key", ids[0], ids[1], key=["id"])
    rec.case("v2_nokey", ids[0], ids[1], error="needs_key")
    rec.case("across_key", ids[1], ids[2], key=["id"])
    rec.case("across_nokey", ids[1], ids[2], error="needs_key")
    rec.case("v3", ids[2], ids[3])
    rec.case("all_key", ids[0], ids[3], key=["id"])
    rec.save(st)


def lifecycle_statements(spark, t, mode):
    """A row updated then deleted on main and on a branch; `mode` is the write mode of every
    row-level command. Returns (statements, the branch's base snapshot)."""
    st = []
    run(spark, st, f"CREATE TABLE {t} (id bigint, val string) USING iceberg TBLPROPERTIES "
        f"('format-version'='3', 'write.delete.mode'='{mode}', 'write.update.mode'='{mode}', "
        f"'write.merge.mode'='{mode}')")
    run(spark, st, f"INSERT INTO {t} VALUES (1,'a'),(2,'b'),(3,'c'),(4,'d')")
    run(spark, st, f"INSERT INTO {t} VALUES (5,'e')")
    run(spark, st, f"UPDATE {t} SET val = 'b2' WHERE id = 2")
    name = t.split(".")[-1]
    base = head(spark, name)
    run(spark, st, f"ALTER TABLE {t} CREATE BRANCH dev AS OF VERSION {base}")
    run(spark, st, f"UPDATE {t}.branch_dev SET val = 'b3' WHERE id = 2")
    run(spark, st, f"DELETE FROM {t}.branch_dev WHERE id = 2")
    run(spark, st, f"UPDATE {t} SET val = 'b4' WHERE id = 2")
    run(spark, st, f"DELETE FROM {t} WHERE id = 2")
    run(spark, st, f"UPDATE {t} SET val = 'c2' WHERE id = 3")
    run(spark, st, f"DELETE FROM {t} WHERE id = 5")
    return st, base


def lifecycle_cases(spark, rec, base, spark_changelog):
    """The ranges of a lifecycle table: net views over an update then a delete (on main and
    on the branch), and every change since the table's creation."""
    name = rec.table
    main_head, dev = head(spark, name), head(spark, name, "dev")
    main = [s["snapshot_id"] for s in rec.snaps if ancestry(rec.snaps, s["snapshot_id"], main_head) is not None]
    main.sort(key=lambda i: next(s["seq"] for s in rec.snaps if s["snapshot_id"] == i))
    sc = spark_changelog
    rec.case("all", main[0], main[-1], spark_changelog=sc)
    rec.case("all_net", main[0], main[-1], net_view=True, spark_changelog=sc)
    rec.case("all_key_net", main[0], main[-1], key=["id"], net_view=True, spark_changelog=sc)
    rec.case("update_delete_net", base, main[-1], net_view=True, spark_changelog=sc)
    rec.case("creation", None, main[-1], spark_changelog=sc)
    rec.case("creation_net", None, main[-1], net_view=True, spark_changelog=sc)
    rec.case("creation_first", None, main[0], spark_changelog=sc)
    rec.case("branch", base, dev, spark_changelog=sc)
    rec.case("branch_net", main[0], dev, net_view=True, spark_changelog=sc)
    rec.case("branch_creation_net", None, dev, net_view=True, spark_changelog=sc)
    return dict(main=main, dev=dev, base=base)


def lifecycle(spark):
    """Copy-on-write only, so Spark's changelog answers every range."""
    st, base = lifecycle_statements(spark, "x.db.lifecycle", "copy-on-write")
    rec = Recorder(spark, "lifecycle")
    rec.save(st, **lifecycle_cases(spark, rec, base, True))


def lifecycle_mor(spark):
    """Merge-on-read (deletion vectors): Spark's changelog refuses delete files; the expected
    rows are the VERSION AS OF differences (Spark's refusal is recorded)."""
    st, base = lifecycle_statements(spark, "x.db.lifecycle_mor", "merge-on-read")
    rec = Recorder(spark, "lifecycle_mor")
    rec.save(st, **lifecycle_cases(spark, rec, base, True))


def upgrade_cow(spark):
    """Format 2, copy-on-write: an update then (format 3) lineage given to the old files by
    the next commit, then an update and a delete with lineage. Spark's changelog answers."""
    st = []
    t = "x.db.upgrade_cow"
    run(spark, st, f"CREATE TABLE {t} (id bigint, val string) USING iceberg TBLPROPERTIES "
        "('format-version'='2', 'write.delete.mode'='copy-on-write', 'write.update.mode'='copy-on-write')")
    run(spark, st, f"INSERT INTO {t} VALUES (1,'a'),(2,'b'),(3,'c')")
    run(spark, st, f"UPDATE {t} SET val = 'b2' WHERE id = 2")
    run(spark, st, f"INSERT INTO {t} VALUES (4,'d')")
    run(spark, st, f"ALTER TABLE {t} SET TBLPROPERTIES ('format-version'='3')")
    run(spark, st, f"INSERT INTO {t} VALUES (5,'e')")
    run(spark, st, f"UPDATE {t} SET val = 'c2' WHERE id = 3")
    run(spark, st, f"DELETE FROM {t} WHERE id = 2")
    rec = Recorder(spark, "upgrade_cow")
    ids = [s["snapshot_id"] for s in rec.snaps]
    # ids: insert, update (v2), insert (v2), insert (v3: lineage given), update, delete.
    rec.case("key_net_to_upgrade", ids[0], ids[3], key=["id"], net_view=True, spark_changelog=True)
    rec.case("key_net", ids[0], ids[5], key=["id"], net_view=True, spark_changelog=True)
    rec.case("key", ids[0], ids[5], key=["id"], spark_changelog=True)
    rec.case("creation_key_net", None, ids[5], key=["id"], net_view=True, spark_changelog=True)
    rec.case("v3_net", ids[3], ids[5], net_view=True, spark_changelog=True)
    rec.case("v3", ids[3], ids[5], spark_changelog=True)
    rec.case("v2_nokey", ids[0], ids[3], error="needs_key")
    rec.save(st)


def id_delete_writers(spark, name):
    """Iceberg Java writers for table `name` (a column `id int`): the table, its schema, a
    GenericAppenderFactory whose equality deletes are on `id`, `out(file_name)` (a new data
    location) and `eq_delete(file_name, key)` (writes one equality delete, returns its
    DeleteFile)."""
    jvm = spark._jvm
    gw = spark.sparkContext._gateway
    table = jtable(spark, name)
    schema = table.schema()
    ids = gw.new_array(gw.jvm.int, 1)
    ids[0] = schema.findField("id").fieldId()
    cols = jvm.java.util.ArrayList()
    cols.add("id")
    eq_schema = schema.select(cols)
    factory = jvm.org.apache.iceberg.data.GenericAppenderFactory(schema, table.spec(), ids, eq_schema, None)

    def out(file_name):
        loc = table.locationProvider().newDataLocation(file_name)
        return jvm.org.apache.iceberg.encryption.EncryptedFiles.plainAsEncryptedOutput(table.io().newOutputFile(loc))

    def eq_delete(file_name, key):
        w = factory.newEqDeleteWriter(out(file_name), jvm.org.apache.iceberg.FileFormat.PARQUET, None)
        r = jvm.org.apache.iceberg.data.GenericRecord.create(eq_schema)
        r.setField("id", key)
        w.write(r)
        w.close()
        return w.toDeleteFile()

    return table, schema, factory, out, eq_delete


def upsert(spark):
    st = []
    t = "x.db.upsert"
    run(spark, st, f"CREATE TABLE {t} (id int, val string) USING iceberg TBLPROPERTIES ('format-version'='3')")
    run(spark, st, f"INSERT INTO {t} VALUES (1,'a'),(2,'b'),(3,'c')")
    jvm = spark._jvm
    table, schema, factory, out, eq_delete = id_delete_writers(spark, "upsert")
    parquet = jvm.org.apache.iceberg.FileFormat.PARQUET

    # Upsert of id 2: equality delete + insert in one commit.
    d = eq_delete("upsert-eq-delete-2.parquet", 2)
    w = factory.newDataWriter(out("upsert-data-2.parquet"), parquet, None)
    r = jvm.org.apache.iceberg.data.GenericRecord.create(schema)
    r.setField("id", 2)
    r.setField("val", "b2")
    w.write(r)
    w.close()
    table.newRowDelta().addRows(w.toDataFile()).addDeletes(d).commit()
    st.append("Java API: RowDelta adding an equality delete on id = 2 and a data file with (2, 'b2')")
    table.refresh()
    table.newRowDelta().addDeletes(eq_delete("upsert-eq-delete-3.parquet", 3)).commit()
    st.append("Java API: RowDelta adding an equality delete on id = 3")
    rec = Recorder(spark, "upsert")
    ids = [s["snapshot_id"] for s in rec.snaps]
    rec.case("upsert", ids[0], ids[1])
    rec.case("upsert_key", ids[0], ids[1], key=["id"])
    rec.case("eq_delete", ids[1], ids[2])
    rec.case("all_net", ids[0], ids[2], net_view=True)
    rec.save(st)


def listing(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".crc"):
                continue
            p = os.path.join(d, f)
            out[os.path.relpath(p, root)] = int(os.stat(p).st_mtime * 1000)
    return out


def retain(spark):
    st = []
    t = "x.db.retain"
    run(spark, st, f"CREATE TABLE {t} (id bigint, val string) USING iceberg TBLPROPERTIES "
        "('format-version'='3', 'write.delete.mode'='merge-on-read', 'write.update.mode'='copy-on-write')")
    run(spark, st, f"INSERT INTO {t} VALUES (1,'a'),(2,'b'),(3,'c')")
    r1 = head(spark, "retain")
    time.sleep(2)
    run(spark, st, f"INSERT INTO {t} VALUES (4,'d'),(5,'e')")
    r2 = head(spark, "retain")
    time.sleep(2)
    run(spark, st, f"DELETE FROM {t} WHERE id = 1")
    r3 = head(spark, "retain")
    time.sleep(2)
    run(spark, st, f"UPDATE {t} SET val = 'b2' WHERE id = 2")
    r4 = head(spark, "retain")
    time.sleep(2)
    run(spark, st, f"INSERT INTO {t} VALUES (6,'f')")
    time.sleep(2)
    run(spark, st, f"DELETE FROM {t} WHERE id = 4")
    table = jtable(spark, "retain")
    ms = table.manageSnapshots()
    ms.createTag("t_old", r1).setMaxRefAgeMs("t_old", 1000)
    ms.createTag("t_keep", r2)
    ms.createBranch("dev", r3).createBranch("stale", r2).commit()
    st.append("Java API: tag t_old -> r1 (max-ref-age-ms 1000), tag t_keep -> r2, branches dev -> r3, stale -> r2")
    run(spark, st, f"INSERT INTO {t}.branch_dev VALUES (7,'g')")
    run(spark, st, f"INSERT INTO {t}.branch_stale VALUES (8,'h')")
    table.refresh()
    (table.manageSnapshots().setMinSnapshotsToKeep("dev", 1).setMaxSnapshotAgeMs("dev", 1000)
     .setMaxRefAgeMs("stale", 1000).commit())
    st.append("Java API: dev min-snapshots-to-keep 1, max-snapshot-age-ms 1000; stale max-ref-age-ms 1000")
    try:
        run(spark, st, f"CALL x.system.compute_table_stats(table => 'db.retain', snapshot_id => {r1})")
        run(spark, st, f"CALL x.system.compute_table_stats(table => 'db.retain')")
    except Exception as e:  # noqa: BLE001
        print("  compute_table_stats:", str(e).split("\n")[0], flush=True)
    time.sleep(2)
    snaps = snapshots(spark, "retain")
    ts = {s["snapshot_id"]: s["timestamp_ms"] for s in snaps}
    # The default cutoff falls midway between r3 and r4, seconds from either.
    now_est = int(time.time() * 1000) + 3000
    age = now_est - (ts[r3] + ts[r4]) // 2
    run(spark, st, f"ALTER TABLE {t} SET TBLPROPERTIES ('history.expire.max-snapshot-age-ms'='{age}', "
        "'history.expire.min-snapshots-to-keep'='2')")
    root = os.path.join(WH, "db", "retain")
    wait = now_est - int(time.time() * 1000)
    if wait > 0:
        time.sleep(wait / 1000)
    # Two expiry runs on the same table state (restored in between): by the table's
    # properties and refs, then with older_than (just after r2) and retain_last => 1.
    record_expiry(spark, "retain", root, st, snaps, dict(r1=r1, r2=r2, r3=r3, r4=r4),
                  {"properties": None, "flags": (ts[r2] + 1000, 1)})


def record_expiry(spark, name, root, st, snaps, named, runs):
    """Runs Spark's expire_snapshots (Iceberg Java ExpireSnapshots) on `name` once per entry of
    `runs` (None: by the table's properties and refs; (older_than_ms, retain_last): with those
    arguments), restoring the table in between, and writes `expected/<name>/expire.json` with
    the metrics and the files each run removed. The committed table is the state before."""
    backup = f"/tmp/icefloe-changes-before-{name}"
    shutil.rmtree(backup, ignore_errors=True)
    shutil.copytree(root, backup)
    keep = {}
    for run_name, flags in runs.items():
        before_meta = json.loads(open(latest_metadata(root)).read())
        before = listing(root)
        now_ms = int(time.time() * 1000)
        args = ""
        if flags is not None:
            older, retain_last = flags
            args = f", older_than => TIMESTAMP '{ts_literal(older)}', retain_last => {retain_last}"
        res = spark.sql(f"CALL x.system.expire_snapshots(table => 'db.{name}'{args})").collect()[0].asDict()
        after_meta = json.loads(open(latest_metadata(root)).read())
        after = listing(root)
        removed = sorted(set(before) - set(after))
        keep[run_name] = dict(now_ms=now_ms, call_args=args, metrics=res, removed_files=removed,
                              snapshots_before=sorted(s["snapshot-id"] for s in before_meta["snapshots"]),
                              snapshots_after=sorted(s["snapshot-id"] for s in after_meta["snapshots"]),
                              refs_before=sorted(before_meta.get("refs", {})),
                              refs_after=sorted(after_meta.get("refs", {})))
        if flags is not None:
            keep[run_name]["max_snapshot_age_ms"] = now_ms - older
            keep[run_name]["min_snapshots"] = retain_last
        print(f"  expire {run_name}: {res}; removed {len(removed)} files", flush=True)
        shutil.rmtree(root)
        shutil.copytree(backup, root)
    shutil.rmtree(backup)
    d = os.path.join(OUT, "expected", name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "expire.json"), "w") as f:
        json.dump(dict(statements=st, snapshots=snaps, named=named, recorded_location=root, runs=keep),
                  f, indent=1)


def expire_files(spark):
    """Expiry that deletes files of every kind: data files a copy-on-write UPDATE and a
    compaction replaced, the deletion vectors the compaction dropped, an equality delete file
    removed by a later commit, manifests and manifest lists."""
    st = []
    t = "x.db.expire_files"
    run(spark, st, f"CREATE TABLE {t} (id int, val string) USING iceberg TBLPROPERTIES "
        "('format-version'='3', 'write.delete.mode'='merge-on-read', 'write.update.mode'='copy-on-write')")
    run(spark, st, f"INSERT INTO {t} VALUES (1,'a'),(2,'b'),(3,'c')")
    time.sleep(1)
    run(spark, st, f"INSERT INTO {t} VALUES (4,'d'),(5,'e')")
    time.sleep(1)
    run(spark, st, f"DELETE FROM {t} WHERE id = 1")
    time.sleep(1)
    run(spark, st, f"UPDATE {t} SET val = 'e2' WHERE id = 5")
    time.sleep(1)
    table, _, _, _, write_eq_delete = id_delete_writers(spark, "expire_files")
    eq_delete = write_eq_delete("expire-eq-delete-2.parquet", 2)
    table.newRowDelta().addDeletes(eq_delete).commit()
    st.append("Java API: RowDelta adding an equality delete on id = 2")
    time.sleep(1)
    run(spark, st, f"DELETE FROM {t} WHERE id = 4")
    time.sleep(1)
    run(spark, st, f"CALL x.system.rewrite_data_files(table => 'db.expire_files', "
        "options => map('rewrite-all', 'true', 'remove-dangling-deletes', 'true'))")
    # The compaction leaves the equality delete live (it applies to no data file any more).
    table.refresh()
    table.newRowDelta().removeDeletes(eq_delete).commit()
    st.append("Java API: RowDelta removing the equality delete file")
    compacted = head(spark, "expire_files")
    time.sleep(1)
    run(spark, st, f"INSERT INTO {t} VALUES (6,'f')")
    time.sleep(2)
    snaps = snapshots(spark, "expire_files")
    ts = {s["snapshot_id"]: s["timestamp_ms"] for s in snaps}
    # Run 1 keeps the compaction and later (the files it removed go); run 2 keeps only the
    # current snapshot.
    last = snaps[-1]["snapshot_id"]
    record_expiry(spark, "expire_files", os.path.join(WH, "db", "expire_files"), st, snaps,
                  dict(compacted=compacted, current=last),
                  {"before_compaction": (ts[compacted] - 1, 1), "all_but_current": (ts[last] - 1, 1)})


def ts_literal(ms):
    """A Spark timestamp literal (session time zone UTC) for milliseconds since the epoch."""
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")


def latest_metadata(root):
    hint = open(os.path.join(root, "metadata", "version-hint.text")).read().strip()
    return os.path.join(root, "metadata", f"v{hint}.metadata.json")


def orphans(spark):
    st = []
    t = "x.db.orphans"
    run(spark, st, f"CREATE TABLE {t} (id bigint, val string) USING iceberg TBLPROPERTIES "
        "('format-version'='3', 'write.delete.mode'='merge-on-read')")
    run(spark, st, f"INSERT INTO {t} VALUES (1,'a'),(2,'b')")
    run(spark, st, f"DELETE FROM {t} WHERE id = 1")
    root = os.path.join(WH, "db", "orphans")
    old = time.time() - 5 * 86400
    planted = {"data/orphan-old.parquet": old, "data/sub/dir/stray.txt": old,
               "metadata/stray-old.avro": old, "data/orphan-new.parquet": None,
               "stray-at-root.json": old}
    for rel, mtime in planted.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(b"not referenced by any snapshot\n")
        if mtime:
            os.utime(p, (mtime, mtime))
    files = listing(root)
    older = int(time.time() * 1000) - 3 * 86400 * 1000
    res = spark.sql(f"CALL x.system.remove_orphan_files(table => 'db.orphans', dry_run => true, "
                    f"older_than => TIMESTAMP '{ts_literal(older)}')").collect()
    listed = sorted(r[0] for r in res)
    print("  orphans:", listed, flush=True)
    d = os.path.join(OUT, "expected", "orphans")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "orphans.json"), "w") as f:
        json.dump(dict(statements=st, recorded_location=f"{WH}/db/orphans", older_than_ms=older,
                       mtimes_ms=files, planted=sorted(planted), spark_orphans=listed), f, indent=1)


def main():
    only = sys.argv[1:]
    spark = spark_session()
    gens = [feed, cow, upgrade, upsert, lifecycle, lifecycle_mor, upgrade_cow, retain, expire_files, orphans]
    for g in gens:
        if only and g.__name__ not in only:
            continue
        print(g.__name__, flush=True)
        shutil.rmtree(os.path.join(WH, "db", g.__name__), ignore_errors=True)
        g(spark)
    spark.stop()
    for name in os.listdir(os.path.join(WH, "db")):
        if only and name not in only:
            continue
        dest = os.path.join(OUT, "warehouse", "db", name)
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(os.path.join(WH, "db", name), dest,
                        ignore=shutil.ignore_patterns(".*.crc", "_SUCCESS"))
    print("wrote", OUT)


if __name__ == "__main__":
    main()
