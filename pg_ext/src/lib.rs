//! `icefloe_fdw`: a Postgres foreign-data wrapper that reads Apache Iceberg tables (format
//! versions 1 to 3) through the Icefloe core reader: deletion vectors, position and equality
//! deletes, row lineage (`_row_id`, `_last_updated_sequence_number`), `initial-default`,
//! schema evolution and time travel all come from the core; this crate maps Arrow batches to
//! tuples, options to tables, and WHERE conditions to file pruning.
//!
//! ```sql
//! CREATE EXTENSION icefloe_fdw;
//! CREATE SERVER lake FOREIGN DATA WRAPPER icefloe OPTIONS (warehouse 'file:///data/warehouse');
//! IMPORT FOREIGN SCHEMA db FROM SERVER lake INTO public;
//! SELECT _row_id, * FROM events WHERE id = 42;
//! ```

use pgrx::prelude::*;

::pgrx::pg_module_magic!(name, version);

pub mod access;
pub mod analyze;
pub mod analyze_metrics;
pub mod convert;
pub mod count;
pub mod error;
pub mod fdw;
pub mod history;
pub mod import;
pub mod metadata;
pub mod options;
pub mod parallel;
pub mod pgutil;
pub mod pin;
pub mod prefill;
pub mod quals;
pub mod recent;
pub mod rest;
pub mod runtime;
pub mod settings;
pub mod slot;
pub mod snapshots;
pub mod varlena;

use error::OrReport;

/// Called once per backend when the library loads: registers the GUCs and callbacks.
#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    // pgrx gives an ERROR that passes one of the wrapper's guarded hooks (ANALYZE's passes the
    // ProcessUtility hook), and a Rust panic, a DETAIL holding a backtrace captured by
    // `std::backtrace::Backtrace::capture`, with build paths, whenever the postmaster runs
    // with RUST_BACKTRACE set. RUST_LIB_BACKTRACE=0 disables those captures (std reads it at
    // the first capture), so no client sees one; the panic hook's own output, which goes to
    // the server log, is left as it is. The backend is still one thread here, so setting a
    // variable is sound.
    std::env::set_var("RUST_LIB_BACKTRACE", "0");
    pin::init();
    settings::init();
    icefloe_core::cancel::set_hook(runtime::cancel_pending);
    analyze_metrics::init();
}

extension_sql!(
    r#"
CREATE FUNCTION icefloe_fdw_handler() RETURNS fdw_handler
    AS 'MODULE_PATHNAME', 'icefloe_fdw_handler' LANGUAGE C STRICT;
CREATE FUNCTION icefloe_fdw_validator(text[], oid) RETURNS void
    AS 'MODULE_PATHNAME', 'icefloe_fdw_validator' LANGUAGE C STRICT;
CREATE FOREIGN DATA WRAPPER icefloe HANDLER icefloe_fdw_handler VALIDATOR icefloe_fdw_validator;
COMMENT ON FOREIGN DATA WRAPPER icefloe IS 'Apache Iceberg tables (format versions 1 to 3), read-only';
"#,
    name = "icefloe_fdw_objects",
    finalize,
);

/// `PG_FUNCTION_INFO_V1(icefloe_fdw_validator)`.
#[unsafe(no_mangle)]
#[doc(hidden)]
pub extern "C" fn pg_finfo_icefloe_fdw_validator() -> &'static pg_sys::Pg_finfo_record {
    const V1: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };
    &V1
}

/// The validator of the wrapper's options: called by CREATE/ALTER SERVER, USER MAPPING,
/// FOREIGN TABLE (and its columns) with the complete option list.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn icefloe_fdw_validator(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    let list = if pgrx::fcinfo::pg_arg_is_null(fcinfo, 0) {
        std::ptr::null_mut()
    } else {
        pg_sys::untransformRelOptions(pgrx::fcinfo::pg_getarg_datum_raw(fcinfo, 0))
    };
    let catalog: pg_sys::Oid = pgrx::fcinfo::pg_getarg(fcinfo, 1).unwrap_or(pg_sys::InvalidOid);
    let opts = options::read_def_list(list);
    if let Some(target) = options::OptionTarget::from_catalog(catalog) {
        options::validate(&opts, target).or_report();
    }
    pgrx::fcinfo::pg_return_void()
}
