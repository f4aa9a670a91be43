//! Bytes in an anonymous memory mapping of their own, for the mount's long-lived large blocks
//! (rendered chunks, held by the chunk cache until evicted).
//!
//! On malloc's heap such blocks sit between the short-lived buffers of decoding and encoding,
//! and pin the pages around them after those are freed: the heap grows far past what is in
//! use. Mapped on their own, they take no part in the heap, and an evicted block's memory goes
//! back to the system when its last reference is dropped (or, for a few, is kept to render the
//! next blocks into: [`POOLED`]). So the heap can serve the short-lived
//! buffers up to a larger size ([`crate::MMAP_THRESHOLD_BYTES`]) without a page fault for each
//! of their pages.

use bytes::Bytes;

/// Blocks from this size on are mapped on their own; smaller ones live on the heap.
pub const MAPPED_BYTES: usize = 64 << 10;

/// Buffers of dropped blocks kept for the next ones, at most this many (about 1 MiB each; a
/// full chunk cache frees one block for each one rendered, so a few are enough):
/// a fresh mapping costs a page fault for each of its pages when first written (a quarter of
/// the mount's CPU time while it renders a view), a kept one is already resident.
pub const POOLED: usize = 4;

/// The mount's kept buffers.
static POOL: Pool = Pool::new(POOLED);

/// Buffers kept for reuse, at most `max`.
struct Pool {
    kept: std::sync::Mutex<Vec<Vec<u8>>>,
    max: usize,
}

impl Pool {
    const fn new(max: usize) -> Pool {
        Pool {
            kept: std::sync::Mutex::new(Vec::new()),
            max,
        }
    }

    /// An empty buffer for `len` bytes: a kept one large enough, else a new one.
    fn buffer(&self, len: usize) -> Vec<u8> {
        if len < MAPPED_BYTES {
            return Vec::with_capacity(len);
        }
        // A kept buffer much larger than this block would hold more resident pages than the
        // chunk cache weighs the block at: only one at most a quarter larger than needed.
        let needed = len.max(crate::MMAP_THRESHOLD_BYTES);
        let kept = {
            let mut kept = crate::locks::lock(&self.kept);
            kept.iter()
                .position(|b| b.capacity() >= len && b.capacity() <= needed + needed / 4)
                .map(|i| kept.swap_remove(i))
        };
        match kept {
            Some(mut b) => {
                b.clear();
                b
            }
            None => Vec::with_capacity(needed),
        }
    }

    /// `block` as bytes; a mapped one comes back to this pool when dropped.
    fn freeze(&'static self, block: Vec<u8>) -> Bytes {
        if block.capacity() >= crate::MMAP_THRESHOLD_BYTES {
            Bytes::from_owner(Kept(block, self))
        } else {
            Bytes::from(block)
        }
    }
}

/// An empty buffer to render a block of `len` bytes into, so that it never grows and, from
/// [`MAPPED_BYTES`] on, is a mapping of its own: a kept one large enough, else a new one whose
/// capacity is at least [`crate::MMAP_THRESHOLD_BYTES`], which glibc's malloc, as the mount
/// sets it up ([`crate::bounded_malloc`]), serves with a mapping of its own. Pages past what
/// is written are never touched, so never resident.
pub fn buffer(len: usize) -> Vec<u8> {
    POOL.buffer(len)
}

/// A block rendered into a [`buffer`], as shared bytes, without a copy. A mapped block's
/// buffer is kept for a next block when its last reference is dropped, while fewer than
/// [`POOLED`] are kept; otherwise its memory goes back to the system.
pub fn freeze(block: Vec<u8>) -> Bytes {
    POOL.freeze(block)
}

/// A mapped block, whose buffer goes back to its pool when dropped.
struct Kept(Vec<u8>, &'static Pool);

impl AsRef<[u8]> for Kept {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        let mut kept = crate::locks::lock(&self.1.kept);
        if kept.len() < self.1.max {
            kept.push(std::mem::take(&mut self.0));
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

    /// A block of `len` bytes written into a [`buffer`].
    fn block(len: usize) -> Bytes {
        let mut b = buffer(len);
        let cap = b.capacity();
        b.extend((0..len as u32).map(|i| (i % 251) as u8));
        assert_eq!(
            b.capacity(),
            cap,
            "a buffer of the block's length never grows"
        );
        freeze(b)
    }

    #[test]
    fn blocks_read_back_what_was_written_and_outlive_their_clones() {
        // Kept buffers come back empty: nothing of an earlier block shows.
        for len in [
            0,
            1000,
            MAPPED_BYTES - 1,
            MAPPED_BYTES,
            3 * MAPPED_BYTES + 17,
            5 << 20,
        ] {
            let b = block(len);
            assert_eq!(b.len(), len);
            assert!(b.iter().enumerate().all(|(i, &v)| v == (i % 251) as u8));
        }
        let b = block(3 * MAPPED_BYTES);
        let part = b.slice(100..200);
        drop(b);
        assert_eq!(&part[..], &block(3 * MAPPED_BYTES)[100..200]);
    }

    #[test]
    fn a_dropped_blocks_buffer_is_reused_for_a_block_of_about_its_size_while_the_pool_has_room() {
        let pool: &'static Pool = Box::leak(Box::new(Pool::new(1)));
        let fill = |mut b: Vec<u8>, len: usize| {
            b.resize(len, 9);
            pool.freeze(b)
        };
        let (a, b) = (
            fill(pool.buffer(2 << 20), 2 << 20),
            fill(pool.buffer(1 << 20), 5),
        );
        let pa = a.as_ptr();
        drop(a);
        drop(b);
        assert_eq!(
            crate::locks::lock(&pool.kept).len(),
            1,
            "a's, not b's: the pool was full"
        );
        let small = pool.buffer(MAPPED_BYTES - 1);
        assert!(
            small.capacity() < crate::MMAP_THRESHOLD_BYTES,
            "small blocks are not pooled"
        );
        let c = pool.buffer(3 << 20);
        assert_ne!(c.as_ptr(), pa, "too small for 3 MiB");
        assert!(c.capacity() >= 3 << 20);
        let d = pool.buffer(1 << 20);
        assert_ne!(
            d.as_ptr(),
            pa,
            "2 MiB is too large for 1 MiB: its pages would stay resident"
        );
        let e = pool.buffer((2 << 20) - 1000);
        assert_eq!(e.as_ptr(), pa, "a's buffer, kept");
        assert!(e.is_empty() && e.capacity() >= 2 << 20);
    }

    /// A large block's memory goes back to the system when its last reference is dropped,
    /// whatever else the heap holds: dropping 256 MiB of blocks lowers the resident size by
    /// about as much. The blocks are large beside what the other tests, running meanwhile in
    /// the same process, allocate and free, and the margins leave room for them.
    #[test]
    fn dropped_blocks_give_their_memory_back() {
        crate::bounded_malloc();
        let before = rss_kb();
        // Blocks a little under the mmap threshold, as rendered chunks mostly are.
        let held: Vec<Bytes> = (0..288).map(|_| block(900 << 10)).collect();
        let holding = rss_kb();
        assert!(
            holding >= before + 224 * 1024,
            "{before} kB, then {holding} kB"
        );
        drop(held);
        // At most POOLED buffers are kept for later blocks.
        let after = rss_kb();
        assert!(
            holding.saturating_sub(after) >= (192 - POOLED as u64) * 1024,
            "{holding} kB held, {after} kB after the drop"
        );
    }
}
