//! Bytes in an anonymous memory mapping of their own, for the mount's long-lived large blocks
//! (rendered chunks, held by the chunk cache until evicted).
//!
//! On malloc's heap such blocks sit between the short-lived buffers of decoding and encoding,
//! and pin the pages around them after those are freed: the heap grows far past what is in
//! use. Mapped on their own, they take no part in the heap, and an evicted block's memory goes
//! back to the system when its last reference is dropped. So the heap can serve the short-lived
//! buffers up to a larger size ([`crate::MMAP_THRESHOLD_BYTES`]) without a page fault for each
//! of their pages.

use bytes::Bytes;

/// Blocks from this size on are mapped on their own; smaller ones are copied to the heap.
pub const MAPPED_BYTES: usize = 64 << 10;

/// `b` in a mapping of its own (from [`MAPPED_BYTES`] on; below, or if the mapping fails, a
/// copy on the heap).
pub fn mapped(b: &[u8]) -> Bytes {
    if b.len() < MAPPED_BYTES {
        return Bytes::copy_from_slice(b);
    }
    match Mapping::copy(b) {
        Some(m) => Bytes::from_owner(m),
        None => Bytes::copy_from_slice(b),
    }
}

/// An anonymous private mapping of `len` bytes, written once when made, then only read.
struct Mapping {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone and never written after `copy` returns, so
// it can be read from any thread and dropped on any thread.
unsafe impl Send for Mapping {}
// SAFETY: as above: shared references only read.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// A new mapping holding a copy of `b` (not empty), or `None` if the system refuses one.
    fn copy(b: &[u8]) -> Option<Mapping> {
        // SAFETY: a fresh anonymous mapping of `b.len()` bytes is asked for (no address, no
        // file); on success it is writable for that length and overlaps nothing of `b`.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                b.len(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                return None;
            }
            std::ptr::copy_nonoverlapping(b.as_ptr(), p.cast::<u8>(), b.len());
            Some(Mapping {
                ptr: std::ptr::NonNull::new(p.cast::<u8>())?,
                len: b.len(),
            })
        }
    }
}

impl AsRef<[u8]> for Mapping {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` initialized bytes until `self` is dropped.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `copy`, unmapped once; no slice of it outlives `self`
        // (`Bytes::from_owner` drops the owner after its last reference).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resident kilobytes of this process (VmRSS).
    fn rss_kb() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").expect("status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }

    #[test]
    fn mapped_bytes_read_back_what_was_copied_and_outlive_their_clones() {
        let small: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        assert_eq!(&mapped(&small)[..], &small[..]);
        let large: Vec<u8> = (0..(3 * MAPPED_BYTES + 17) as u32)
            .map(|i| (i % 251) as u8)
            .collect();
        let m = mapped(&large);
        assert_eq!(&m[..], &large[..]);
        let part = m.slice(100..200);
        drop(m);
        assert_eq!(&part[..], &large[100..200]);
        assert!(mapped(&[]).is_empty());
    }

    /// A mapped block's memory goes back to the system when its last reference is dropped,
    /// whatever else the heap holds: dropping 256 MiB of mapped blocks lowers the resident size
    /// by about as much. The blocks are large beside what the other tests, running meanwhile
    /// in the same process, allocate and free, and the margins leave room for them.
    #[test]
    fn dropped_mapped_bytes_give_their_memory_back() {
        let block = vec![7u8; 1 << 20];
        let before = rss_kb();
        let held: Vec<Bytes> = (0..256).map(|_| mapped(&block)).collect();
        let holding = rss_kb();
        assert!(
            holding >= before + 224 * 1024,
            "{before} kB, then {holding} kB"
        );
        drop(held);
        let after = rss_kb();
        assert!(
            holding.saturating_sub(after) >= 192 * 1024,
            "{holding} kB held, {after} kB after the drop"
        );
    }
}
