//! Cancelling a read from outside: the long loops of the reader (walks over snapshots,
//! manifests and their entries, batch streams) ask [`check`] whether to stop. A front-end
//! says when: the CLI sets a flag on Ctrl-C ([`request`]); the Postgres wrapper installs a
//! hook that reads Postgres' pending query cancel and termination ([`set_hook`]), so that
//! `statement_timeout`, `pg_cancel_backend` and `pg_terminate_backend` stop any scan, even one
//! that never waits. The state is per process: one reader per process in every front-end that
//! cancels (a CLI command, a Postgres backend).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

static REQUESTED: AtomicBool = AtomicBool::new(false);
static HOOK: OnceLock<fn() -> bool> = OnceLock::new();

/// Installs `hook`, asked at every check whether the caller wants the read stopped (it must be
/// cheap and callable from any thread). Only the first hook of a process is kept.
pub fn set_hook(hook: fn() -> bool) {
    let _ = HOOK.set(hook);
}

/// Asks every read of this process to stop at its next check.
pub fn request() {
    REQUESTED.store(true, Ordering::Relaxed);
}

/// Whether a stop was asked for ([`request`] or the hook).
pub fn is_requested() -> bool {
    REQUESTED.load(Ordering::Relaxed) || HOOK.get().is_some_and(|h| h())
}

/// `Err(Error::Cancelled)` naming `during` when a stop was asked for.
pub fn check(during: impl FnOnce() -> String) -> crate::Result<()> {
    if is_requested() {
        return Err(crate::Error::Cancelled { during: during() });
    }
    Ok(())
}
