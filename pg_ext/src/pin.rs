//! Snapshot pinning: every scan of a table in one statement reads the same table metadata
//! (so the same snapshot), and in REPEATABLE READ and SERIALIZABLE transactions, or with
//! `icefloe.snapshot_pinning = transaction`, every statement of the transaction does. A
//! pinned table is the opened [`Table`] (one metadata file); it is forgotten when the
//! transaction ends.

use std::cell::RefCell;
use std::collections::HashMap;

use icefloe_core::Table;
use pgrx::pg_sys;
use pgrx::{GucSetting, PostgresGucEnum};

use crate::error::FdwError;

/// How long a table read in READ COMMITTED keeps the metadata version it first read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PostgresGucEnum)]
pub enum Pinning {
    /// Until the statement ends (each statement sees the newest version).
    #[name = c"statement"]
    Statement,
    /// Until the transaction ends.
    #[name = c"transaction"]
    Transaction,
}

/// `icefloe.snapshot_pinning`.
pub static SNAPSHOT_PINNING: GucSetting<Pinning> = GucSetting::<Pinning>::new(Pinning::Statement);

struct Pin {
    /// `statement_timestamp()` of the statement that opened it.
    statement: i64,
    table: Table,
}

thread_local! {
    static PINS: RefCell<HashMap<String, Pin>> = RefCell::new(HashMap::new());
}

/// Whether pins live for the whole transaction.
fn transaction_scope() -> bool {
    // SAFETY: reads a backend global.
    let iso = unsafe { pg_sys::XactIsoLevel };
    iso >= pg_sys::XACT_REPEATABLE_READ as i32 || SNAPSHOT_PINNING.get() == Pinning::Transaction
}

/// The table pinned under `key` for this statement or transaction, or the one `open` returns
/// (then pinned). `key` names the location and everything that decides what it reads (the
/// storage settings and credentials), so different credentials never share a pin.
pub fn pinned(
    key: &str,
    open: impl FnOnce() -> Result<Table, FdwError>,
) -> Result<Table, FdwError> {
    // SAFETY: reads the current statement's start time.
    let statement = unsafe { pg_sys::GetCurrentStatementStartTimestamp() };
    let whole = transaction_scope();
    let hit = PINS.with(|p| {
        p.borrow()
            .get(key)
            .filter(|pin| whole || pin.statement == statement)
            .map(|pin| pin.table.clone())
    });
    if let Some(t) = hit {
        return Ok(t);
    }
    let table = open()?;
    PINS.with(|p| {
        p.borrow_mut().insert(
            key.to_string(),
            Pin {
                statement,
                table: table.clone(),
            },
        )
    });
    Ok(table)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn at_transaction_end(
    event: pg_sys::XactEvent::Type,
    _arg: *mut std::ffi::c_void,
) {
    use pg_sys::XactEvent::*;
    if matches!(
        event,
        XACT_EVENT_COMMIT
            | XACT_EVENT_ABORT
            | XACT_EVENT_PREPARE
            | XACT_EVENT_PARALLEL_COMMIT
            | XACT_EVENT_PARALLEL_ABORT
    ) {
        // try_with: the thread-local may already be gone while the backend exits.
        let _ = PINS.try_with(|p| {
            if let Ok(mut p) = p.try_borrow_mut() {
                p.clear();
            }
        });
    }
}

/// Registers the GUC and the end-of-transaction callback (from `_PG_init`).
pub fn init() {
    pgrx::GucRegistry::define_enum_guc(
        c"icefloe.snapshot_pinning",
        c"How long a READ COMMITTED transaction keeps reading the table metadata it first read.",
        c"statement: each statement reads the newest metadata, and all scans of a table in one statement read the same; transaction: every statement of the transaction reads the same. REPEATABLE READ and SERIALIZABLE transactions always pin for the transaction.",
        &SNAPSHOT_PINNING,
        pgrx::GucContext::Userset,
        pgrx::GucFlags::default(),
    );
    // SAFETY: registers a plain C callback once per backend.
    unsafe { pg_sys::RegisterXactCallback(Some(at_transaction_end), std::ptr::null_mut()) };
}
