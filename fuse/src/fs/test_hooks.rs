//! Hooks for the end-to-end tests only: built with the `test-hooks` feature, which the tests'
//! build turns on (the CLI crate's dev-dependency on this crate) and no other build does.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// With `ICEFLOE_FUSE_TEST_GATE=PATH` in the environment, every CSV sizing first creates
/// `PATH.started-N` and then holds its thread until `PATH` exists (a render that keeps a
/// render thread busy, for the tests of what must answer meanwhile).
pub fn gate() {
    static STARTED: AtomicU64 = AtomicU64::new(0);
    let Some(gate) = std::env::var_os("ICEFLOE_FUSE_TEST_GATE") else {
        return;
    };
    let n = STARTED.fetch_add(1, Ordering::Relaxed);
    let mut started = gate.clone();
    started.push(format!(".started-{n}"));
    let _ = std::fs::write(&started, b"");
    while !Path::new(&gate).exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
}
