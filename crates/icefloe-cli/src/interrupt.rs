//! Ctrl-C: the first asks the core to stop the read at its next check
//! ([`icefloe_core::cancel`]), so the command ends with one line saying what it was doing; if
//! it has not ended a moment later (a step that does not check), the process exits anyway.
//! The signal is watched on a thread of its own, so busy runtime workers cannot delay it.

use std::time::Duration;

/// The exit status of a command stopped by Ctrl-C (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: u8 = 130;

/// How long a cancelled command has to end on its own.
const GRACE: Duration = Duration::from_secs(2);

/// Starts watching for Ctrl-C. Errors only when the watcher cannot start (then Ctrl-C keeps
/// its default effect, which ends the process at once).
pub fn watch() -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // Registered before the thread runs, so no Ctrl-C is missed in between.
    let signal = rt.block_on(async {
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
    })?;
    std::thread::Builder::new()
        .name("icefloe-ctrl-c".into())
        .spawn(move || {
            let mut signal = signal;
            rt.block_on(signal.recv());
            icefloe_core::cancel::request();
            std::thread::sleep(GRACE);
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        })?;
    Ok(())
}

/// Whether a command failed because it was cancelled.
pub fn is_cancelled(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<icefloe_core::Error>(),
            Some(icefloe_core::Error::Cancelled { .. })
        )
    })
}
