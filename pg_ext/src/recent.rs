//! The few values a backend keeps by key, most recently used last: per-credential caches and
//! connected REST catalogs. A backend's memory stays bounded however many roles it serves.

/// Up to `cap` values by key; the least recently used is dropped first.
pub struct Recent<T> {
    items: Vec<(String, T)>,
    cap: usize,
}

impl<T: Clone> Recent<T> {
    /// Empty, keeping at most `cap` values.
    pub const fn new(cap: usize) -> Self {
        Recent {
            items: Vec::new(),
            cap,
        }
    }

    /// The value of `key`, now the most recently used.
    pub fn get(&mut self, key: &str) -> Option<T> {
        let i = self.items.iter().position(|(k, _)| k == key)?;
        let hit = self.items.remove(i);
        let value = hit.1.clone();
        self.items.push(hit);
        Some(value)
    }

    /// Keeps `value` under `key` as the most recently used, dropping the oldest beyond `cap`.
    pub fn insert(&mut self, key: String, value: T) {
        self.items.retain(|(k, _)| *k != key);
        if self.items.len() >= self.cap {
            self.items.remove(0);
        }
        self.items.push((key, value));
    }
}
