//! Open files: what each is read from (a view, a spill file, bytes rendered at open), by
//! handle, and how its reads are answered.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use super::{FsError, MountFs, LOG_TARGET};
use crate::locks::lock;
use crate::parquet::PqView;
use crate::spill::SpillFile;
use crate::tree::{self, Format, Node};
use crate::view::{CsvView, CursorSlot};

/// An open file: the node it was opened as, and what its reads are served from.
pub(super) struct OpenHandle {
    node: Node,
    file: OpenFile,
}

/// What an open file's reads are served from.
enum OpenFile {
    /// A CSV view, with this open file's own batch cursor.
    Csv {
        view: Arc<CsvView>,
        cursor: CursorSlot,
    },
    /// A rendered file in the spill directory.
    Spill(Arc<SpillFile>),
    /// A Parquet view.
    Parquet(Arc<PqView>),
    /// A small file rendered whole at open.
    Bytes(Bytes),
}

/// How the kernel may cache an open file's pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caching {
    /// Keep them across opens: the file never changes.
    Keep,
    /// None: every read goes to the file system (a file that changes, read as it was at open).
    DirectIo,
}

/// How a read is answered.
pub enum Reading {
    /// With these bytes, read at once (a small file, a spill file).
    Ready(Bytes),
    /// With the bytes of a view this future reads (to be run on the request runtime).
    Pending(Pin<Box<dyn Future<Output = Result<Bytes, FsError>> + Send>>),
}

/// At most `size` bytes of `b` from `offset`.
fn slice(b: &Bytes, offset: u64, size: u32) -> Bytes {
    let start = usize::try_from(offset).unwrap_or(usize::MAX).min(b.len());
    let end = start.saturating_add(size as usize).min(b.len());
    b.slice(start..end)
}

impl MountFs {
    /// Opens a regular file for reading: its handle, and how the kernel may cache it.
    pub async fn open(self: &Arc<Self>, node: Node) -> Result<(u64, Caching), FsError> {
        let (file, caching) = self.open_file(&node).await?;
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        lock(&self.handles).insert(fh, Arc::new(OpenHandle { node, file }));
        Ok((fh, caching))
    }

    async fn open_file(self: &Arc<Self>, node: &Node) -> Result<(OpenFile, Caching), FsError> {
        if !tree::exists(&self.catalog, node) {
            return Err(FsError::NotFound);
        }
        match node {
            Node::View(k) => {
                let file = match k.format {
                    Format::Csv | Format::Jsonl => {
                        self.csv_view(k).await.map(|view| OpenFile::Csv {
                            view,
                            cursor: CursorSlot::default(),
                        })
                    }
                    Format::Parquet => self.parquet_view(k).await.map(OpenFile::Parquet),
                }
                .map_err(|e| self.fail(node, e))?;
                Ok((file, Caching::Keep))
            }
            Node::SnapshotJson(..) => Ok((
                OpenFile::Bytes(self.small_file(node).ok_or(FsError::NotFound)?),
                Caching::Keep,
            )),
            Node::Change(..) => Ok((
                OpenFile::Spill(self.change_file(node).await?),
                Caching::Keep,
            )),
            // Changes with the clock: always read through, as it was at open.
            Node::RetentionCsv(_) => Ok((
                OpenFile::Bytes(self.retention_csv(node).await?),
                Caching::DirectIo,
            )),
            // Changes with the table: always read through, as it was at open.
            Node::SnapshotsCsv(_) => Ok((
                OpenFile::Bytes(self.small_file(node).ok_or(FsError::NotFound)?),
                Caching::DirectIo,
            )),
            _ => Err(FsError::IsDir),
        }
    }

    fn handle(&self, fh: u64) -> Result<Arc<OpenHandle>, FsError> {
        lock(&self.handles)
            .get(&fh)
            .cloned()
            .ok_or(FsError::BadHandle)
    }

    /// Reads at most `size` bytes at `offset` of the open file `fh`.
    pub fn read(self: &Arc<Self>, fh: u64, offset: u64, size: u32) -> Result<Reading, FsError> {
        let handle = self.handle(fh)?;
        // A table gone from the warehouse: its open files fail, rather than serve stale bytes.
        if let Some(t) = handle.node.table() {
            if self.catalog.table(t).is_none() {
                let shown = self.catalog.any_table(t).map(|t| t.location.clone());
                tracing::error!(
                    target: LOG_TARGET,
                    "{}: read of an open file of a table that is gone: ESTALE",
                    shown.unwrap_or_default()
                );
                return Err(FsError::Stale);
            }
        }
        match &handle.file {
            OpenFile::Bytes(b) => Ok(Reading::Ready(slice(b, offset, size))),
            OpenFile::Spill(f) => match f.read_at(offset, size) {
                Ok(buf) => Ok(Reading::Ready(Bytes::from(buf))),
                Err(e) => Err(self.fail(&handle.node, e)),
            },
            OpenFile::Parquet(view) => {
                let (view, handle, fs) = (view.clone(), handle.clone(), self.clone());
                Ok(Reading::Pending(Box::pin(async move {
                    view.read(offset, size)
                        .await
                        .map(Bytes::from)
                        .map_err(|e| fs.fail(&handle.node, e))
                })))
            }
            OpenFile::Csv { view, cursor } => {
                let (view, cursor, handle) = (view.clone(), cursor.clone(), handle.clone());
                let fs = self.clone();
                Ok(Reading::Pending(Box::pin(async move {
                    view.read(offset, size, &cursor)
                        .await
                        .map_err(|e| fs.fail(&handle.node, e))
                })))
            }
        }
    }

    /// Closes the open file `fh`.
    pub fn close(&self, fh: u64) {
        lock(&self.handles).remove(&fh);
    }
}
