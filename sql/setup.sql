-- Setup of the regression tests (pg_ext/tests/regress.py runs it in a fresh database):
-- the extension, a server over the fixture warehouse, and every fixture table imported at its
-- current snapshot into schema cur.
--   psql -v warehouse_url=file:///abs/path/to/warehouse -f sql/setup.sql
\set ON_ERROR_STOP on
CREATE EXTENSION icefloe_fdw;
CREATE SERVER lake FOREIGN DATA WRAPPER icefloe OPTIONS (warehouse :'warehouse_url');
CREATE SCHEMA cur;
IMPORT FOREIGN SCHEMA db FROM SERVER lake INTO cur;
