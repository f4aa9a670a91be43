//! Errors of the mount, and the errno each becomes at the FUSE boundary.

use fuser::Errno;

/// Result alias of this crate.
pub type Result<T, E = FuseError> = std::result::Result<T, E>;

/// What can go wrong while mounting or serving a table.
#[derive(Debug, thiserror::Error)]
pub enum FuseError {
    /// The core failed to read the table (metadata, manifests, deletes, data files).
    #[error(transparent)]
    Core(#[from] icefloe_core::Error),
    /// Local I/O: the mount point, the spill directory or a spill file.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// The location is neither a table nor a warehouse holding tables.
    #[error("no Iceberg table at {0}: expected a table directory with metadata/, or a warehouse with <namespace>/<table>/metadata/")]
    NoTables(String),
    /// A view rendered differently from its offset index (the data changed under a snapshot
    /// that should be immutable).
    #[error("{view} changed while mounted: {reason}")]
    Inconsistent { view: String, reason: String },
    /// A background task of the mount panicked or was cancelled.
    #[error("internal task failed: {0}")]
    Task(String),
}

impl FuseError {
    /// Wraps a local I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        FuseError::Io {
            context: context.into(),
            source,
        }
    }

    /// The errno a file system call fails with: ENOENT for a snapshot or ref that is gone,
    /// EIO for everything else (corrupt or missing table files), so the mount stays up.
    pub fn errno(&self) -> Errno {
        match self {
            FuseError::Core(icefloe_core::Error::SnapshotNotFound(_)) => Errno::ENOENT,
            _ => Errno::EIO,
        }
    }
}

impl From<tokio::task::JoinError> for FuseError {
    fn from(e: tokio::task::JoinError) -> Self {
        FuseError::Task(e.to_string())
    }
}
