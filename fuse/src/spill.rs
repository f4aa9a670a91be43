//! Parquet views, rendered once to spill files on local disk.
//!
//! A Parquet file cannot be produced from an arbitrary offset (its footer depends on every row
//! group before it), so `data.parquet` and `files/<f>.parquet` are written in full, streaming,
//! to a file in the mount's spill directory the first time their size or bytes are asked for;
//! reads are then served from that file. Memory stays bounded (the writer holds one row group);
//! the spill directory is deleted when the file system is dropped at unmount.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use icefloe_core::encode::parquet::ParquetWriter;
use tokio::sync::OnceCell;

use crate::error::{FuseError, Result};
use crate::locks::lock;
use crate::plan::SnapshotPlan;
use crate::sizing::Sizing;
use crate::tree::{Scope, ViewKey};

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

    /// The Parquet view `key` of `plan`, rendered on first use (concurrent callers wait for the
    /// same rendering; a failed one is retried by the next caller).
    pub async fn get(&self, key: &ViewKey, plan: &Arc<SnapshotPlan>) -> Result<Arc<SpillFile>> {
        let scope = match key.scope {
            Scope::All => "all".to_string(),
            Scope::File(t) => format!("file{t}"),
            Scope::Partition(p) => format!("part{p}"),
        };
        let name = format!("t{}-s{}-{scope}.parquet", key.table, key.snapshot);
        self.get_or_render(
            name,
            |path| async move { write_parquet(&path, key, plan).await },
        )
        .await
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

/// Streams the view's rows into a Parquet file at `path`; returns it open for reading.
async fn write_parquet(path: &Path, key: &ViewKey, plan: &Arc<SnapshotPlan>) -> Result<File> {
    let io = |e| FuseError::io(format!("cannot write spill file {}", path.display()), e);
    let file = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(io)?;
    let mut w = ParquetWriter::new(BufWriter::with_capacity(1 << 20, file), &plan.scan.schema())?;
    let subset: Vec<_>;
    let (mut stream, tasks) = match key.scope {
        Scope::All => (plan.scan.read_tasks(plan.tasks.clone()), &plan.tasks[..]),
        Scope::File(t) => (
            plan.scan.read_task(plan.tasks[t].clone()),
            &plan.tasks[t..t + 1],
        ),
        Scope::Partition(p) => {
            subset = plan.partitions[p]
                .tasks
                .iter()
                .map(|i| plan.tasks[*i].clone())
                .collect();
            (plan.scan.read_tasks(subset.clone()), &subset[..])
        }
    };
    // The size of a Parquet view is known only once it is written: log the progress of a
    // long first render as the CSV views' counting pass does.
    let total_rows = tasks.iter().map(|t| t.max_live_rows()).sum();
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    // One stream over every file: files done are not seen, so only rows are counted.
    let sizing = Sizing::start(&name, total_rows, 0);
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        sizing.add_rows(batch.num_rows());
        w.write_batch(&batch)?;
    }
    let file = w.finish()?.into_inner().map_err(|e| io(e.into_error()))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    sizing.finish(len);
    Ok(file)
}
