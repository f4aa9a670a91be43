//! The progress bar of a long export: rows and bytes written, with an ETA from the snapshot's
//! record counts.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use icefloe_core::FileScanTask;
use indicatif::{HumanBytes, ProgressBar, ProgressStyle};

/// A bar on standard error, shown only when standard error is a terminal and the rows are not
/// printed on one.
pub struct Progress {
    bar: Option<ProgressBar>,
    bytes: Arc<AtomicU64>,
}

impl Progress {
    /// A bar for writing the rows of `tasks`; `to_file` when they go to `--output`. `bytes`
    /// is the count of bytes written so far (a [`Counting`] writer's).
    pub fn new(tasks: &[FileScanTask], to_file: bool, bytes: Arc<AtomicU64>) -> Progress {
        let show = std::io::stderr().is_terminal() && (to_file || !std::io::stdout().is_terminal());
        let bar = show.then(|| {
            let total: u64 = tasks.iter().map(FileScanTask::max_live_rows).sum();
            let b = ProgressBar::new(total);
            b.set_style(
                ProgressStyle::with_template(
                    "{bar:30} {human_pos}/{human_len} rows  {msg}  {elapsed} (ETA {eta})",
                )
                .expect("static template"),
            );
            b
        });
        Progress { bar, bytes }
    }

    /// Counts a batch of `rows` rows, written.
    pub fn add(&self, rows: usize) {
        if let Some(b) = &self.bar {
            b.inc(rows as u64);
            b.set_message(format!(
                "{}",
                HumanBytes(self.bytes.load(Ordering::Relaxed))
            ));
        }
    }

    /// Ends the bar at the rows really written (deletes not known ahead make fewer).
    pub fn finish(self) {
        if let Some(b) = self.bar {
            b.set_length(b.position());
            b.finish();
        }
    }
}

/// A writer that counts the bytes through it into a shared counter.
pub struct Counting<W> {
    pub inner: W,
    pub bytes: Arc<AtomicU64>,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
