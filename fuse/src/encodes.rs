//! A bound on how many fresh parts of Parquet views are encoded at once, over every view of the
//! mount: each encoding holds a row group of encoded pages in memory (up to the writer's
//! row-group size) besides the slices it decodes, so encodings that wait for the render threads
//! must not hold memory meanwhile. They wait for a permit first.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Encodings allowed at once; clones share the bound.
#[derive(Clone)]
pub struct Encodes {
    permits: Arc<Semaphore>,
    counts: Arc<Counts>,
}

#[derive(Default)]
struct Counts {
    running: AtomicUsize,
    peak: AtomicUsize,
}

/// Held while one part is encoded; lets the next one in when dropped.
pub struct EncodePermit {
    _permit: OwnedSemaphorePermit,
    counts: Arc<Counts>,
}

impl Encodes {
    /// At most `n` encodings at once (at least one).
    pub fn new(n: usize) -> Encodes {
        Encodes {
            permits: Arc::new(Semaphore::new(n.max(1))),
            counts: Arc::default(),
        }
    }

    /// Waits for a turn to encode.
    pub async fn enter(&self) -> EncodePermit {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let now = self.counts.running.fetch_add(1, Ordering::AcqRel) + 1;
        self.counts.peak.fetch_max(now, Ordering::AcqRel);
        EncodePermit {
            _permit: permit,
            counts: self.counts.clone(),
        }
    }

    /// The most encodings that ran at once so far.
    pub fn peak(&self) -> usize {
        self.counts.peak.load(Ordering::Acquire)
    }
}

impl Drop for EncodePermit {
    fn drop(&mut self) {
        self.counts.running.fetch_sub(1, Ordering::AcqRel);
    }
}
