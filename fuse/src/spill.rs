//! Files rendered once to spill files on local disk (the change files, whose size is only
//! known once written); the spill directory is deleted when the file system is dropped at
//! unmount.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use crate::error::{FuseError, Result};
use crate::locks::lock;

/// A rendered Parquet view.
pub struct SpillFile {
    file: File,
    len: u64,
    path: PathBuf,
}

impl SpillFile {
    /// The exact size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file is empty (never, for a valid Parquet file).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads up to `size` bytes at `offset`.
    pub fn read_at(&self, offset: u64, size: u32) -> Result<Vec<u8>> {
        let end = self.len.min(offset.saturating_add(u64::from(size)));
        if offset >= end {
            return Ok(Vec::new());
        }
        let mut buf = vec![0; (end - offset) as usize];
        self.file.read_exact_at(&mut buf, offset).map_err(|e| {
            FuseError::io(format!("cannot read spill file {}", self.path.display()), e)
        })?;
        Ok(buf)
    }
}

/// The spill directory and the Parquet views rendered into it.
pub struct SpillStore {
    dir: tempfile::TempDir,
    /// By file name in the spill directory.
    files: Mutex<HashMap<String, Arc<OnceCell<Arc<SpillFile>>>>>,
}

impl SpillStore {
    /// A fresh spill directory inside `parent` (default: the system temporary directory).
    pub fn new(parent: Option<&Path>) -> Result<SpillStore> {
        let mut b = tempfile::Builder::new();
        b.prefix("icefloe-spill-");
        let dir = match parent {
            Some(p) => b.tempdir_in(p),
            None => b.tempdir(),
        }
        .map_err(|e| FuseError::io("cannot create the spill directory", e))?;
        Ok(SpillStore {
            dir,
            files: Mutex::new(HashMap::new()),
        })
    }

    /// Where spill files go.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Deletes every spill file (at unmount; the directory itself goes when the store is
    /// dropped). Files still open stay readable until closed.
    pub fn clear(&self) {
        let files: Vec<_> = lock(&self.files).drain().collect();
        for (_, cell) in files {
            if let Some(f) = cell.get() {
                if let Err(e) = std::fs::remove_file(&f.path) {
                    tracing::warn!("cannot delete spill file {}: {e}", f.path.display());
                }
            }
        }
    }

    /// The spill file `name`, written by `render` (given its path, returning it open for
    /// reading) on first use; concurrent callers wait for the same rendering, and a failed one
    /// is deleted and retried by the next caller.
    pub async fn get_or_render<F, Fut>(&self, name: String, render: F) -> Result<Arc<SpillFile>>
    where
        F: FnOnce(PathBuf) -> Fut,
        Fut: std::future::Future<Output = Result<File>>,
    {
        let path = self.dir.path().join(&name);
        let cell = lock(&self.files).entry(name).or_default().clone();
        let file = cell
            .get_or_try_init(|| async {
                let result = render(path.clone()).await;
                if result.is_err() {
                    let _ = std::fs::remove_file(&path);
                }
                let file = result?;
                let len = file
                    .metadata()
                    .map_err(|e| FuseError::io(format!("cannot stat {}", path.display()), e))?
                    .len();
                Ok::<_, FuseError>(Arc::new(SpillFile { file, len, path }))
            })
            .await?;
        Ok(file.clone())
    }
}
