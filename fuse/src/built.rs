//! The views of one kind the mount has built, each built once by whichever request needs it
//! first (others wait on the same cell), dropped when its inode is forgotten.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use crate::error::Result;
use crate::locks::lock;
use crate::tree::ViewKey;

/// A view whose byte size is known once it is built.
pub trait ViewSize {
    /// The view's size in bytes.
    fn size(&self) -> u64;
}

/// Views of type `V` by key.
pub struct Built<V> {
    views: Mutex<HashMap<ViewKey, Arc<OnceCell<Arc<V>>>>>,
}

impl<V> Default for Built<V> {
    fn default() -> Self {
        Built {
            views: Mutex::new(HashMap::new()),
        }
    }
}

impl<V: ViewSize> Built<V> {
    /// The view `key`, built by `build` unless it is built or being built.
    pub async fn get_or_build<F, Fut>(&self, key: &ViewKey, build: F) -> Result<Arc<V>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V>>,
    {
        let cell = lock(&self.views).entry(key.clone()).or_default().clone();
        let view = cell
            .get_or_try_init(|| async { build().await.map(Arc::new) })
            .await?;
        Ok(view.clone())
    }

    /// The view `key` if it is built.
    pub fn built(&self, key: &ViewKey) -> Option<Arc<V>> {
        lock(&self.views).get(key).and_then(|c| c.get().cloned())
    }

    /// Forgets the view `key` (built again on next use; open files keep theirs).
    pub fn forget(&self, key: &ViewKey) {
        lock(&self.views).remove(key);
    }

    /// How many views are kept.
    pub fn len(&self) -> usize {
        lock(&self.views).len()
    }

    /// Whether no view is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The summed sizes of the views kept whose size is known (those sized so far).
    pub fn known_bytes(&self) -> u64 {
        lock(&self.views)
            .values()
            .filter_map(|c| c.get().map(|v| v.size()))
            .sum()
    }
}
