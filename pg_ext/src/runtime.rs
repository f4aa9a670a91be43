//! The async core runs on one tokio runtime per backend, created on first use. The backend's
//! thread drives every future it waits for; Postgres functions are only called there. The
//! scan's file readers (the core's spawned tasks, pure Rust: fetch, decompress, decode) run on
//! one worker thread, so a scan decodes the next batches while the backend turns the current
//! one into tuples. Runtime threads (the worker and the blocking pool for local file reads)
//! block every signal, so Postgres' signal handlers always run on the backend's thread.

use std::cell::RefCell;
use std::future::Future;
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};

use crate::error::FdwError;

thread_local! {
    static RUNTIME: RefCell<Option<Runtime>> = const { RefCell::new(None) };
}

/// How often a blocked wait checks for a query cancel.
const INTERRUPT_POLL: Duration = Duration::from_millis(100);

fn block_signals_on_this_thread() {
    // SAFETY: plain libc calls on a sigset_t owned by this frame.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

fn new_runtime() -> Result<Runtime, FdwError> {
    Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .on_thread_start(block_signals_on_this_thread)
        .thread_name("icefloe-io")
        .build()
        .map_err(|e| FdwError::Runtime(e.to_string()))
}

/// Whether Postgres has a query cancel (`pg_cancel_backend`, `statement_timeout`) or a
/// termination pending: its signal handlers set these flags on the backend's thread; any
/// thread may read them (the core's cancel hook, [`icefloe_core::cancel`], asks this in its
/// long loops, so that a scan that never waits stops too). The ERROR itself is raised by
/// `CHECK_FOR_INTERRUPTS` on the backend's thread ([`crate::error::FdwError::report`]).
pub fn cancel_pending() -> bool {
    // SAFETY: reads of two `volatile sig_atomic_t` globals, as Postgres' own code does.
    unsafe {
        std::ptr::read_volatile(std::ptr::addr_of!(pgrx::pg_sys::QueryCancelPending)) != 0
            || std::ptr::read_volatile(std::ptr::addr_of!(pgrx::pg_sys::ProcDiePending)) != 0
    }
}

/// Runs `f` to completion on the backend's runtime.
pub fn block_on<F: Future>(f: F) -> Result<F::Output, FdwError> {
    RUNTIME.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(new_runtime()?);
        }
        match slot.as_ref() {
            Some(rt) => Ok(rt.block_on(f)),
            None => Err(FdwError::Runtime("no runtime".into())),
        }
    })
}

/// Runs `f` to completion, checking for query cancel and termination every 100 ms while it
/// waits: a pending cancel raises the ERROR through Postgres, which drops `f`.
pub fn block_on_interruptible<F: Future>(f: F) -> Result<F::Output, FdwError> {
    let mut f = Box::pin(f);
    loop {
        let out = block_on(async { tokio::time::timeout(INTERRUPT_POLL, &mut f).await })?;
        match out {
            Ok(v) => return Ok(v),
            Err(_elapsed) => {
                pgrx::check_for_interrupts!();
            }
        }
    }
}
