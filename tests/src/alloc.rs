//! A global allocator that counts the bytes a test process holds, for tests that bound
//! memory (the fuzz loop, metadata parsing). A test binary installs it with
//! `#[global_allocator] static GLOBAL: Counting = Counting::new(limit);`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// Counts live and peak bytes; refuses (returns null for) any single allocation above
/// `limit` bytes, so a corrupt length aborts the process instead of reserving it.
pub struct Counting {
    limit: usize,
}

impl Counting {
    /// An allocator refusing single allocations above `limit` bytes (`usize::MAX`: none).
    pub const fn new(limit: usize) -> Counting {
        Counting { limit }
    }
}

/// Bytes the process holds now.
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Starts a measurement: the peak is reset to what is held now, which is returned.
pub fn reset_peak() -> usize {
    let now = live();
    PEAK.store(now, Ordering::Relaxed);
    now
}

/// The most bytes held since the last [`reset_peak`].
pub fn peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if l.size() > self.limit {
            return std::ptr::null_mut();
        }
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > self.limit {
            return std::ptr::null_mut();
        }
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new >= l.size() {
                grew(new - l.size());
            } else {
                LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
            }
        }
        q
    }
}
