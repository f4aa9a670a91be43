//! The window of bytes a table in an object store reads ahead (`read_bytes_in_flight`),
//! shared by its files in the order they are consumed: the file being consumed may fill it,
//! the next ones get a quarter, an eighth, ... (see [`super::readahead`]). Its own module so
//! that the fetch budget ([`super::ranged`]) can hold one without importing the reader.

use std::sync::Arc;

/// The compressed bytes of the slices read ahead (started, not yet consumed) over every file
/// of a table in an object store, shared in the order the files are consumed (see the module
/// doc). Clones share one window. Nothing ever waits on it: a slice that finds no room is read
/// when its consumer reaches it.
#[derive(Debug, Clone)]
pub struct AheadWindow {
    inner: Arc<std::sync::Mutex<WindowState>>,
    bytes: u64,
}

#[derive(Debug, Default)]
struct WindowState {
    used: u64,
    peak: u64,
    next: u64,
    /// The bytes each reader (by its place) holds, in the order they were placed.
    readers: std::collections::BTreeMap<u64, u64>,
}

impl AheadWindow {
    /// A window of `bytes` read ahead.
    pub fn new(bytes: u64) -> AheadWindow {
        AheadWindow {
            inner: Arc::default(),
            bytes,
        }
    }

    /// Its size in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Bytes of slices read ahead now.
    pub fn in_use(&self) -> u64 {
        self.lock().used
    }

    /// The most bytes ever read ahead at once.
    pub fn peak(&self) -> u64 {
        self.lock().peak
    }

    /// A place after every reader placed so far: a file's read takes its share of the window
    /// by its place (the first one placed and not yet dropped may fill it).
    pub fn enter(&self) -> Place {
        let mut st = self.lock();
        let id = st.next;
        st.next += 1;
        st.readers.insert(id, 0);
        Place {
            window: self.clone(),
            id,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, WindowState> {
        // The state is a few counters, consistent at every unlock: a panic elsewhere while
        // it was held leaves nothing half-done.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The most `place`'s reader may hold: the whole window for the first reader, a quarter
    /// for the second, an eighth for the third, ...: all but the first hold less than half.
    fn share(&self, before: usize) -> u64 {
        match before {
            0 => self.bytes,
            n => self.bytes.checked_shr(n as u32 + 1).unwrap_or(0),
        }
    }

    /// Room for `bytes` more for `place`, if its share and the window have it.
    pub(super) fn try_reserve(&self, place: &Place, bytes: u64) -> Option<Reserved> {
        let mut st = self.lock();
        let before = st.readers.range(..place.id).count();
        let held = *st.readers.get(&place.id)?;
        if held + bytes > self.share(before) || st.used + bytes > self.bytes {
            return None;
        }
        st.used += bytes;
        st.peak = st.peak.max(st.used);
        *st.readers.get_mut(&place.id).expect("placed") += bytes;
        Some(Reserved {
            window: self.clone(),
            id: place.id,
            bytes,
        })
    }
}

/// A reader's place in an [`AheadWindow`]'s order; it leaves the order when dropped.
#[derive(Debug)]
pub struct Place {
    window: AheadWindow,
    id: u64,
}

impl Drop for Place {
    fn drop(&mut self) {
        self.window.lock().readers.remove(&self.id);
    }
}

/// Room held in an [`AheadWindow`] by one slice read ahead, until it is consumed or dropped.
pub(super) struct Reserved {
    window: AheadWindow,
    id: u64,
    bytes: u64,
}

impl Drop for Reserved {
    fn drop(&mut self) {
        let mut st = self.window.lock();
        st.used -= self.bytes;
        if let Some(held) = st.readers.get_mut(&self.id) {
            *held -= self.bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files share the window by their place: the first may fill it, the second a quarter,
    /// the third an eighth; room comes back when a slice is dropped, and a reader's place
    /// moves up when the readers before it leave.
    #[test]
    fn the_window_is_shared_in_reading_order() {
        let w = AheadWindow::new(64);
        let (a, b, c) = (w.enter(), w.enter(), w.enter());
        let b1 = w.try_reserve(&b, 16).expect("a quarter for the second");
        assert!(
            w.try_reserve(&b, 1).is_none(),
            "the second past its quarter"
        );
        let c1 = w.try_reserve(&c, 8).expect("an eighth for the third");
        assert!(w.try_reserve(&c, 1).is_none());
        // The first finds at least half the window whatever the others hold.
        let a1 = w.try_reserve(&a, 40).expect("the rest for the first");
        assert!(w.try_reserve(&a, 1).is_none(), "the window is full");
        assert_eq!(w.in_use(), 64);
        assert_eq!(w.peak(), 64);
        drop(a1);
        assert_eq!(w.in_use(), 24);
        // The first leaves: the second may now fill what the window has left.
        drop(a);
        let b2 = w.try_reserve(&b, 40).expect("the second is first now");
        assert!(w.try_reserve(&b, 1).is_none());
        drop((b1, b2, c1));
        assert_eq!(w.in_use(), 0);
        assert!(w.peak() <= w.bytes());
        // A slice larger than the window is never read ahead.
        assert!(w.try_reserve(&b, 65).is_none());
    }
}
