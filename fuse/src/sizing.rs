//! Progress of a view's first sizing (the counting pass), in the log: a large view takes a
//! while before its size is known, and whoever waits on `ls -l` sees why.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The log target of these lines, on by default in `icefloe mount`.
pub const TARGET: &str = "icefloe_fuse::sizing";

/// How long a sizing runs before its progress is logged, and then how often.
const FIRST_LINE_AFTER: Duration = Duration::from_secs(2);
const EVERY: Duration = Duration::from_secs(5);

/// Counts of one sizing, shared with the task that logs them.
pub struct Sizing {
    name: String,
    total_rows: u64,
    total_files: u64,
    rows: AtomicU64,
    files: AtomicU64,
    start: Instant,
    logger: tokio::task::JoinHandle<()>,
}

impl Sizing {
    /// Starts logging the sizing of `name`, at most `total_rows` rows (the record counts less
    /// the deletion vectors) in `total_files` data files (0: files are not counted). Must be
    /// called inside the runtime.
    pub fn start(name: &str, total_rows: u64, total_files: u64) -> Arc<Sizing> {
        Arc::new_cyclic(|weak: &std::sync::Weak<Sizing>| {
            let weak = weak.clone();
            let logger = tokio::spawn(async move {
                tokio::time::sleep(FIRST_LINE_AFTER).await;
                loop {
                    match weak.upgrade() {
                        Some(s) => tracing::info!(target: TARGET, "{}", s.line()),
                        None => return,
                    }
                    tokio::time::sleep(EVERY).await;
                }
            });
            Sizing {
                name: name.to_string(),
                total_rows,
                total_files,
                rows: AtomicU64::new(0),
                files: AtomicU64::new(0),
                start: Instant::now(),
                logger,
            }
        })
    }

    /// Counts `n` rows encoded.
    pub fn add_rows(&self, n: usize) {
        self.rows.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Counts one data file done.
    pub fn file_done(&self) {
        self.files.fetch_add(1, Ordering::Relaxed);
    }

    /// Ends the sizing: logs its size if progress was logged.
    pub fn finish(&self, bytes: u64) {
        self.logger.abort();
        let took = self.start.elapsed();
        if took >= FIRST_LINE_AFTER {
            tracing::info!(
                target: TARGET,
                "sized {}: {bytes} bytes, {} rows in {:.1}s",
                self.name,
                self.rows.load(Ordering::Relaxed),
                took.as_secs_f64()
            );
        }
    }

    /// `sizing NAME: 3/10 files, 1200000/5000000 rows (24%), 8s, about 25s left`.
    fn line(&self) -> String {
        let rows = self.rows.load(Ordering::Relaxed);
        let files = self.files.load(Ordering::Relaxed);
        let elapsed = self.start.elapsed().as_secs_f64();
        let share = if self.total_rows == 0 {
            0.0
        } else {
            (rows as f64 / self.total_rows as f64).min(1.0)
        };
        let eta = if share > 0.0 {
            format!(", about {:.0}s left", elapsed * (1.0 - share) / share)
        } else {
            String::new()
        };
        let files = if self.total_files == 0 {
            String::new()
        } else {
            format!("{files}/{} files, ", self.total_files)
        };
        format!(
            "sizing {}: {files}{rows}/{} rows ({:.0}%), {elapsed:.0}s{eta}",
            self.name,
            self.total_rows,
            share * 100.0
        )
    }
}

impl Drop for Sizing {
    fn drop(&mut self) {
        self.logger.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_line_counts_rows_and_files() {
        let s = Sizing::start("t@1/data.csv", 1000, 4);
        s.add_rows(250);
        s.file_done();
        let line = s.line();
        assert!(
            line.starts_with("sizing t@1/data.csv: 1/4 files, 250/1000 rows (25%), "),
            "{line}"
        );
        assert!(line.contains("s left"), "{line}");
    }

    #[tokio::test]
    async fn a_sizing_without_file_counts_shows_rows_only() {
        let s = Sizing::start("t@1/data.parquet", 1000, 0);
        s.add_rows(500);
        let line = s.line();
        assert!(
            line.starts_with("sizing t@1/data.parquet: 500/1000 rows (50%), "),
            "{line}"
        );
    }
}
