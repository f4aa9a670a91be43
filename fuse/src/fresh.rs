//! The on-disk store of the Parquet views' fresh parts, bounded by `--max-cache-size` and by
//! a floor of free disk space (5% of the file system kept free, as mountpoint-s3 does), with
//! least-recently-used eviction. An evicted part's file is deleted at once (a read already
//! holding it finishes); the store's directory goes at unmount.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::error::{FuseError, Result};
use crate::locks::lock;
use crate::tree::Scope;

/// Share of the file system's space the store leaves free.
const FREE_FLOOR: f64 = 0.05;

/// A fresh part: one row group of one data file of a planned snapshot, in one view. Views
/// do not share parts: a view's Parquet schema depends on its data files (a column is
/// `REQUIRED` when all of them store it so), so `data.parquet` and `files/x.parquet` may
/// encode the same row group to different bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FreshKey {
    pub table: usize,
    pub snapshot: i64,
    pub schema: i32,
    /// The view's scope.
    pub scope: Scope,
    /// Task index in the snapshot's plan.
    pub task: usize,
    pub row_group: usize,
}

struct Entry {
    file: Arc<File>,
    path: PathBuf,
    len: u64,
    used: u64,
}

#[derive(Default)]
struct State {
    entries: HashMap<FreshKey, Entry>,
    bytes: u64,
}

/// Fresh parts on local disk.
pub struct FreshStore {
    dir: tempfile::TempDir,
    max_bytes: u64,
    state: Mutex<State>,
    making: Mutex<HashMap<FreshKey, Arc<tokio::sync::Mutex<()>>>>,
    clock: AtomicU64,
    evicted: AtomicU64,
}

impl FreshStore {
    /// A fresh directory inside `parent` (default: the temporary directory) holding at most
    /// `max_bytes`.
    pub fn new(parent: Option<&Path>, max_bytes: u64) -> Result<FreshStore> {
        let mut b = tempfile::Builder::new();
        b.prefix("icefloe-parts-");
        let dir = match parent {
            Some(p) => b.tempdir_in(p),
            None => b.tempdir(),
        }
        .map_err(|e| FuseError::io("cannot create the cache directory", e))?;
        Ok(FreshStore {
            dir,
            max_bytes,
            state: Mutex::new(State::default()),
            making: Mutex::new(HashMap::new()),
            clock: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
        })
    }

    /// Where the parts are.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Bytes held now.
    pub fn bytes(&self) -> u64 {
        lock(&self.state).bytes
    }

    /// How many parts were evicted so far.
    pub fn evictions(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }

    /// Waits until no one else makes part `key`; the guard lets others in when dropped.
    pub async fn making(&self, key: &FreshKey) -> tokio::sync::OwnedMutexGuard<()> {
        let m = lock(&self.making).entry(*key).or_default().clone();
        m.lock_owned().await
    }

    /// Whether part `key` is held.
    pub fn contains(&self, key: &FreshKey) -> bool {
        lock(&self.state).entries.contains_key(key)
    }

    /// A new file to write part `key` into.
    pub fn create(&self, key: &FreshKey) -> Result<PartWriter> {
        let n = self.clock.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.path().join(format!(
            "t{}-s{}-c{}-{}-f{}-g{}-{n}",
            key.table,
            key.snapshot,
            key.schema,
            match key.scope {
                Scope::All => "a".to_string(),
                Scope::File(t) => format!("f{t}"),
                Scope::Partition(p) => format!("p{p}"),
            },
            key.task,
            key.row_group
        ));
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| FuseError::io(format!("cannot create {}", path.display()), e))?;
        Ok(PartWriter {
            w: BufWriter::with_capacity(1 << 20, file),
            path,
        })
    }

    /// Keeps the part written to `w` (`len` bytes), then evicts the least recently used
    /// others while over the bounds.
    pub fn insert(&self, key: FreshKey, w: PartWriter, len: u64) -> Result<()> {
        let PartWriter { w, path } = w;
        let file = w.into_inner().map_err(|e| {
            FuseError::io(format!("cannot write {}", path.display()), e.into_error())
        })?;
        let used = self.clock.fetch_add(1, Ordering::Relaxed);
        let old = {
            let mut st = lock(&self.state);
            st.bytes += len;
            let entry = Entry {
                file: Arc::new(file),
                path,
                len,
                used,
            };
            let old = st.entries.insert(key, entry);
            if let Some(o) = &old {
                st.bytes -= o.len;
            }
            old
        };
        if let Some(o) = old {
            remove(&o.path);
        }
        self.evict(&key);
        Ok(())
    }

    /// Drops a part written but not wanted.
    pub fn discard(&self, w: PartWriter) {
        remove(&w.path);
    }

    /// `n` bytes at `off` of part `key`, if held.
    pub fn read(&self, key: &FreshKey, off: u64, n: u64) -> Result<Option<Bytes>> {
        let used = self.clock.fetch_add(1, Ordering::Relaxed);
        let (file, path) = {
            let mut st = lock(&self.state);
            let Some(e) = st.entries.get_mut(key) else {
                return Ok(None);
            };
            e.used = used;
            (e.file.clone(), e.path.clone())
        };
        let mut buf = vec![0; n as usize];
        file.read_exact_at(&mut buf, off)
            .map_err(|e| FuseError::io(format!("cannot read {}", path.display()), e))?;
        Ok(Some(Bytes::from(buf)))
    }

    /// Evicts least recently used parts (never `keep`) while over the size bound or below the
    /// free-space floor.
    fn evict(&self, keep: &FreshKey) {
        loop {
            let victim = {
                let mut st = lock(&self.state);
                let over = st.bytes > self.max_bytes || self.below_floor();
                if !over {
                    return;
                }
                let Some(k) = st
                    .entries
                    .iter()
                    .filter(|(k, _)| *k != keep)
                    .min_by_key(|(_, e)| e.used)
                    .map(|(k, _)| *k)
                else {
                    return;
                };
                let e = st.entries.remove(&k).expect("present");
                st.bytes -= e.len;
                e
            };
            self.evicted.fetch_add(1, Ordering::Relaxed);
            remove(&victim.path);
        }
    }

    /// Whether the file system of the store has less than [`FREE_FLOOR`] of its space free.
    fn below_floor(&self) -> bool {
        match nix::sys::statvfs::statvfs(self.dir.path()) {
            Ok(s) => {
                let total = s.blocks() as f64;
                total > 0.0 && (s.blocks_available() as f64) < total * FREE_FLOOR
            }
            Err(_) => false,
        }
    }

    /// Deletes every part (at unmount).
    pub fn clear(&self) {
        let entries: Vec<Entry> = {
            let mut st = lock(&self.state);
            st.bytes = 0;
            st.entries.drain().map(|(_, e)| e).collect()
        };
        for e in entries {
            remove(&e.path);
        }
    }
}

fn remove(path: &Path) {
    if let Err(e) = std::fs::remove_file(path) {
        if e.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!("cannot delete cache file {}: {e}", path.display());
        }
    }
}

/// A part being written.
pub struct PartWriter {
    w: BufWriter<File>,
    path: PathBuf,
}

impl std::io::Write for PartWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.w.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}
