//! The C allocator's heap trimming, tuned for streaming: planning hands decoded manifest
//! entries from the threads that decode them to the one that prints them, so memory is freed
//! as fast as it is taken. glibc gives the top of a heap back to the system whenever more
//! than its trim threshold is free there (128 KiB, adjusted upwards only for large blocks), and
//! in a stream that frees and allocates the same few megabytes over and over it then unmaps and
//! faults in those pages again all the time: on a million-file plan that doubled the time
//! (most of it in the kernel and in the allocator's locks). A fixed threshold keeps up to that
//! much free memory for reuse; what a command holds is unchanged.

/// Free memory at the top of a heap that is kept for reuse rather than given back.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: libc::c_int = 64 << 20;

/// Sets the allocator's trim threshold (glibc only; elsewhere nothing to do). Call once at
/// start-up, before threads start.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before any other thread runs.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
}
