//! Why a request of the kernel fails, as the file system says it; the adapter turns each into
//! the errno of the reply.

use crate::error::FuseError;

/// Why a request fails.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// No such inode, entry or file (ENOENT).
    #[error("no such file or directory")]
    NotFound,
    /// Listing something that is not a directory (ENOTDIR).
    #[error("not a directory")]
    NotDir,
    /// Opening a directory as a file (EISDIR).
    #[error("is a directory")]
    IsDir,
    /// An open file the file system does not know (EBADF).
    #[error("no such open file")]
    BadHandle,
    /// A read of an open file of a table that is gone from the warehouse (ESTALE).
    #[error("the table of the open file is gone")]
    Stale,
    /// No such extended attribute (ENODATA).
    #[error("no such extended attribute")]
    NoXattr,
    /// Reading the table failed (already logged, with the node): ENOENT for a snapshot or
    /// ref that is gone, EIO for everything else ([`FuseError::errno`]).
    #[error(transparent)]
    Failed(FuseError),
}
