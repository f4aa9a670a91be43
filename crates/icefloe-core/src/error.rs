//! One error type for the whole reader. Every variant names the file (or table) it is about and
//! the rule that was broken, so a front-end can show it as is.

use std::fmt;

/// Result alias used across the core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while reading a table. Never swallowed: a reader that hits one
/// of these stops and reports it rather than returning rows that might be wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file the metadata refers to does not exist in storage. `reason` is what the store
    /// said, without any reply body ([`crate::io::store_error`]).
    #[error("missing file {path}: {reason}")]
    NotFound { path: String, reason: String },
    /// Storage answered with an error other than "not found": the operation, the HTTP status
    /// and the kind of failure, never the reply's body ([`crate::io::store_error`]).
    #[error("cannot read {path}: {reason}")]
    Io { path: String, reason: String },
    /// A file larger than the reader's cap for its kind ([`crate::io::ReadLimits`]): read no
    /// further, so that a hostile or broken file cannot exhaust memory.
    #[error("{path}: the {what} is larger than the cap of {limit} {unit} (setting {setting}); raise the setting if the file is genuine")]
    TooLarge {
        path: String,
        what: &'static str,
        limit: u64,
        unit: &'static str,
        setting: &'static str,
    },
    /// The caller cancelled the read ([`crate::cancel`]): a query cancel, a statement timeout,
    /// Ctrl-C. `during` says what was being done.
    #[error("cancelled while {during}")]
    Cancelled { during: String },
    /// Something other than a regular file (a FIFO, a device, a directory) where a table file
    /// should be; reading it could block forever or return bytes that are not the file.
    #[error("{path} is a {kind}, not a regular file: table files must be regular files")]
    NotAFile { path: String, kind: String },
    /// The table location could not be understood (bad URL, unknown scheme, no metadata).
    #[error("cannot open table {location}: {reason}")]
    Location { location: String, reason: String },
    /// Table metadata JSON that does not follow the spec.
    #[error("invalid table metadata {path}: {reason}")]
    Metadata { path: String, reason: String },
    /// `format-version` above what this reader implements (spec: readers must refuse).
    #[error("unsupported format version {version} in {path}: this reader supports format versions 1 to 3")]
    UnsupportedFormatVersion { path: String, version: i64 },
    /// A type string the spec does not define.
    #[error("unknown type {type_name:?} in {path}")]
    UnknownType { path: String, type_name: String },
    /// A manifest list or manifest that cannot be decoded.
    #[error("invalid manifest {path}: {reason}")]
    Manifest { path: String, reason: String },
    /// A Puffin file or deletion-vector blob that fails validation (magic, length, CRC, keys).
    #[error("invalid deletion vector in {path}: {reason}")]
    DeletionVector { path: String, reason: String },
    /// A delete file (position or equality) that cannot be applied.
    #[error("invalid delete file {path}: {reason}")]
    DeleteFile { path: String, reason: String },
    /// A data file that cannot be read or does not match the table schema.
    #[error("cannot read data file {path}: {reason}")]
    DataFile { path: String, reason: String },
    /// A snapshot, ref or timestamp that selects nothing.
    #[error("{0}")]
    SnapshotNotFound(String),
    /// A storage option from another party (a plan from a cluster's client) that would send
    /// this process's requests somewhere it does not allow ([`crate::io::destination`]).
    #[error("cannot read {table}: option {option}={value:?} from the plan is refused: {reason}")]
    DestinationRefused {
        table: String,
        option: String,
        value: String,
        reason: String,
    },
    /// Something encoded for another process (file scan tasks, a filter) that cannot be
    /// decoded: another encoding version, a missing or mistyped field.
    #[error("cannot decode {what}: {reason}")]
    Decode { what: &'static str, reason: String },
    /// The caller asked for something that does not exist (a column, a ref).
    #[error("{0}")]
    InvalidArgument(String),
    /// An Iceberg feature this reader does not implement; never silently ignored.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A catalog could not answer (unreachable, refused the request, answered something that
    /// is not a catalog's answer). `catalog` names the catalog, `subject` the namespace or
    /// table asked about.
    #[error("catalog {catalog}: {subject}: {reason}")]
    Catalog {
        catalog: String,
        subject: String,
        reason: String,
    },
    /// A catalog refused the credentials (HTTP 401 unauthorized, 403 forbidden, 419 expired,
    /// after one renewal where the credentials can be renewed).
    #[error("catalog {catalog}: {subject}: not authorized: {reason}")]
    CatalogAuth {
        catalog: String,
        subject: String,
        status: u16,
        reason: String,
    },
    /// A table the catalog does not hold.
    #[error("catalog {catalog} has no table {table}: {reason}")]
    NoSuchTable {
        catalog: String,
        table: String,
        reason: String,
    },
    /// A namespace the catalog does not hold.
    #[error("catalog {catalog} has no namespace {namespace}: {reason}")]
    NoSuchNamespace {
        catalog: String,
        namespace: String,
        reason: String,
    },
    /// A catalog answered a location that reads local files where its caller does not allow
    /// them (a catalog read for other people, such as a Postgres role without the right to
    /// read the server's files). Nothing at the location was read.
    #[error("catalog {catalog}: table {table}: the catalog answered {location}, which reads local files; local files may not be read through this catalog here")]
    LocalFilesRefused {
        catalog: String,
        table: String,
        location: String,
    },
    /// Encoding output (JSON Lines, CSV, Parquet) failed.
    #[error("cannot write output: {0}")]
    Output(String),
}

impl Error {
    /// An error about a data file.
    pub fn data_file(path: impl fmt::Display, reason: impl fmt::Display) -> Self {
        Error::DataFile {
            path: path.to_string(),
            reason: reason.to_string(),
        }
    }

    /// An error about a deletion vector.
    pub fn dv(path: impl fmt::Display, reason: impl fmt::Display) -> Self {
        Error::DeletionVector {
            path: path.to_string(),
            reason: reason.to_string(),
        }
    }

    /// An error about table metadata.
    pub fn metadata(path: impl fmt::Display, reason: impl fmt::Display) -> Self {
        Error::Metadata {
            path: path.to_string(),
            reason: reason.to_string(),
        }
    }

    /// An error about a manifest or manifest list.
    pub fn manifest(path: impl fmt::Display, reason: impl fmt::Display) -> Self {
        Error::Manifest {
            path: path.to_string(),
            reason: reason.to_string(),
        }
    }

    /// An error about a position or equality delete file.
    pub fn delete_file(path: impl fmt::Display, reason: impl fmt::Display) -> Self {
        Error::DeleteFile {
            path: path.to_string(),
            reason: reason.to_string(),
        }
    }
}
