-- An example session with icefloe_fdw over the fixture warehouse.
-- Run as a superuser (or a member of pg_read_server_files) in a scratch database:
--   psql -v warehouse=/abs/path/to/tests/fixtures/warehouse -f sql/example.sql
-- The warehouse must be readable by the server's OS user (postgres).
\set ON_ERROR_STOP on
SET client_min_messages = warning;
SET TimeZone = 'UTC';

DROP EXTENSION IF EXISTS icefloe_fdw CASCADE;
CREATE EXTENSION icefloe_fdw;

-- One server per warehouse (Hadoop-catalog layout: <warehouse>/<namespace>/<table>/metadata/).
SELECT 'file://' || :'warehouse' AS wh_url \gset
CREATE SERVER lake FOREIGN DATA WRAPPER icefloe OPTIONS (warehouse :'wh_url');

-- Every table of namespace "db" as a foreign table, with _row_id and
-- _last_updated_sequence_number first, NOT NULL for required fields, DEFAULTs from write-default.
DROP SCHEMA IF EXISTS lake_db CASCADE;
CREATE SCHEMA lake_db;
IMPORT FOREIGN SCHEMA db FROM SERVER lake INTO lake_db;
\d lake_db.v3_defaults

-- Rows with their lineage; deletion vectors, equality deletes and initial-defaults applied.
SELECT _row_id, _last_updated_sequence_number, id, name, c_int, c_str, c_dec, c_tstz
  FROM lake_db.v3_defaults ORDER BY id LIMIT 5;

-- Every Iceberg type under the type mapping (nested values as jsonb, lists as arrays).
SELECT id, dec38, tm, tstz, u, fx, st, lst, mp FROM lake_db.v3_types ORDER BY id LIMIT 3;

-- Snapshots, and time travel by tag, by time and by id.
SELECT snapshot_id, sequence_number, committed_at, operation, refs, total_records
  FROM icefloe_snapshots('db.v3_basic');
CREATE FOREIGN TABLE v3_basic_after_update (id bigint, name text, amount numeric(10,2))
  SERVER lake OPTIONS ("table" 'db.v3_basic', ref 'after_update');
SELECT count(*) AS rows_at_tag FROM v3_basic_after_update;
SELECT min(snapshot_id) AS first_id FROM icefloe_snapshots('db.v3_basic') WHERE sequence_number = 1 \gset
CREATE FOREIGN TABLE v3_basic_first (id bigint, name text)
  SERVER lake OPTIONS ("table" 'db.v3_basic', snapshot_id :'first_id');
SELECT count(*) AS rows_at_first_snapshot FROM v3_basic_first;

-- Pushdown: conditions prune data files by partition values and column bounds.
EXPLAIN (COSTS OFF) SELECT * FROM lake_db.partitioned WHERE cat = 'a' AND ts < '2024-01-03';
SELECT count(*) FROM lake_db.partitioned WHERE cat = 'a' AND ts < '2024-01-03';

-- Aggregates over the largest fixture (70,000 rows, a 15,673-position deletion vector).
SELECT count(*), sum(id), min(_row_id), max(_row_id) FROM lake_db.v3_dv_large;

-- Errors are ordinary ERRORs.
\set ON_ERROR_STOP off
CREATE FOREIGN TABLE nope (id bigint) SERVER lake OPTIONS ("table" 'db.no_such_table');
SELECT * FROM nope;
\set ON_ERROR_STOP on
DROP FOREIGN TABLE nope, v3_basic_after_update, v3_basic_first;
DROP SCHEMA lake_db CASCADE;
