//! Parallel foreign scans: the leader and its workers claim the scan's units (file tasks, and
//! parts of the large ones: [`icefloe_core::scan::split`]) one at a time from a counter in the parallel query's dynamic shared memory, so each unit
//! is read by exactly one process. Every process reads the metadata file the leader pinned
//! (its location is in shared memory too) and plans the same units; a fingerprint of the
//! snapshot and the units, checked by each worker, turns any difference into an error
//! instead of rows read twice or not at all.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use icefloe_core::scan::split::TaskSplit;
use icefloe_core::FileScanTask;

use crate::error::FdwError;

/// What the leader shares with its workers, followed by the metadata file's location.
#[repr(C)]
struct Shared {
    /// The next unit to hand out.
    next: AtomicU64,
    /// How many units the leader planned.
    units: u64,
    /// [`fingerprint`] of the leader's snapshot and units.
    fingerprint: u64,
    /// Length in bytes of the location that follows this header.
    location_len: u64,
}

/// Bytes of shared memory a scan of metadata file `location` needs.
pub fn size(location: &str) -> usize {
    std::mem::size_of::<Shared>() + location.len()
}

/// A stable fingerprint (same in every process of the build) of what a scan reads: the
/// snapshot and each unit's file, rows, row count and deletes.
pub fn fingerprint(snapshot_id: Option<i64>, units: &[TaskSplit]) -> u64 {
    // DefaultHasher::new() has fixed keys: equal input hashes equally in every backend.
    let mut h = std::hash::DefaultHasher::new();
    snapshot_id.hash(&mut h);
    units.len().hash(&mut h);
    for u in units {
        u.rows.hash(&mut h);
        let t = &u.task;
        t.data_file.file_path.hash(&mut h);
        t.data_file.record_count.hash(&mut h);
        t.deletion_vector
            .as_ref()
            .map(|d| &d.file.file_path)
            .hash(&mut h);
        t.position_deletes.len().hash(&mut h);
        t.equality_deletes.len().hash(&mut h);
    }
    h.finish()
}

/// The units of a parallel scan of `tasks`, in the one order every process uses: the tasks by
/// data file, each split into parts of at most `max_rows` positions.
pub fn units(tasks: &[FileScanTask], max_rows: u64) -> Vec<TaskSplit> {
    let mut tasks = tasks.to_vec();
    tasks.sort_by(|a, b| a.data_file.file_path.cmp(&b.data_file.file_path));
    icefloe_core::scan::split::split_tasks(&tasks, max_rows)
}

/// Fills the shared memory at `at` (of [`size`] bytes) for a scan of `units` units of
/// metadata file `location`.
///
/// # Safety
/// `at` must point to [`size`]`(location)` writable bytes, aligned for a `u64`.
pub unsafe fn init(at: *mut std::ffi::c_void, location: &str, units: u64, fingerprint: u64) {
    let s = at as *mut Shared;
    s.write(Shared {
        next: AtomicU64::new(0),
        units,
        fingerprint,
        location_len: location.len() as u64,
    });
    let bytes = (at as *mut u8).add(std::mem::size_of::<Shared>());
    std::ptr::copy_nonoverlapping(location.as_ptr(), bytes, location.len());
}

/// Starts handing out the units again (a rescan).
///
/// # Safety
/// `at` must have been filled by [`init`].
pub unsafe fn reset(at: *mut std::ffi::c_void) {
    (*(at as *const Shared)).next.store(0, Ordering::SeqCst);
}

/// The metadata file location the leader read.
///
/// # Safety
/// `at` must have been filled by [`init`].
pub unsafe fn location(at: *const std::ffi::c_void) -> Result<String, FdwError> {
    let s = &*(at as *const Shared);
    let bytes = std::slice::from_raw_parts(
        (at as *const u8).add(std::mem::size_of::<Shared>()),
        s.location_len as usize,
    );
    String::from_utf8(bytes.to_vec())
        .map_err(|_| FdwError::Internal("parallel scan: the shared location is not UTF-8".into()))
}

/// Errors unless a worker planned what the leader did.
///
/// # Safety
/// `at` must have been filled by [`init`].
pub unsafe fn check(
    at: *const std::ffi::c_void,
    units: u64,
    fingerprint: u64,
) -> Result<(), FdwError> {
    let s = &*(at as *const Shared);
    if s.units != units || s.fingerprint != fingerprint {
        return Err(FdwError::Internal(format!(
            "parallel scan: a worker planned {units} units (fingerprint {fingerprint:x}) where the leader planned {} ({:x}); the scan stops rather than read rows twice or not at all",
            s.units, s.fingerprint
        )));
    }
    Ok(())
}

/// A process's handle on the shared counter.
#[derive(Clone, Copy)]
pub struct Claims(*const Shared);

// SAFETY: the counter is an atomic in shared memory that outlives every scan stream using it
// (streams are dropped at ShutdownForeignScan, before the parallel context is destroyed), and
// streams are only polled on the backend's thread.
unsafe impl Send for Claims {}

impl Claims {
    /// # Safety
    /// `at` must have been filled by [`init`] and stay mapped while the handle is used.
    pub unsafe fn new(at: *const std::ffi::c_void) -> Claims {
        Claims(at as *const Shared)
    }

    /// The next unclaimed unit, or `None` when every unit is taken.
    pub fn claim(&self) -> Option<usize> {
        // SAFETY: see `new`.
        let s = unsafe { &*self.0 };
        let i = s.next.fetch_add(1, Ordering::SeqCst);
        (i < s.units).then_some(i as usize)
    }
}
