//! Errors of the foreign data wrapper, and how they become Postgres ERRORs: every error is
//! reported with a SQLSTATE that says what kind of problem it is, and the message of the core
//! error (which names the file or table it is about).

use pgrx::pg_sys::panic::ErrorReport;
use pgrx::{PgLogLevel, PgSqlErrorCode};

/// A core error, with the wrapper's rule named where a core refusal comes from it: a
/// catalog's local location is refused to roles that may not read the server's files.
pub fn from_core(e: icefloe_core::Error) -> FdwError {
    match e {
        icefloe_core::Error::LocalFilesRefused {
            catalog,
            table,
            location,
        } => FdwError::Permission(format!(
            "table {table} of server {catalog}: its catalog answered {location:?}, which reads local files; only superusers and members of pg_read_server_files may read those"
        )),
        e => FdwError::Core(e),
    }
}

/// Everything the wrapper can fail with.
#[derive(Debug, thiserror::Error)]
pub enum FdwError {
    /// The core reader failed (missing file, corrupt deletion vector, invalid metadata, ...).
    #[error("{0}")]
    Core(#[from] icefloe_core::Error),
    /// An option that does not exist where it was given.
    #[error("invalid option \"{name}\" for {object}; valid options: {valid}")]
    UnknownOption {
        name: String,
        object: &'static str,
        valid: String,
    },
    /// A storage secret given where every role can read it (server or table options).
    #[error("option \"{name}\" is a secret: give it in CREATE USER MAPPING ... OPTIONS, not on {object}")]
    MisplacedSecret { name: String, object: &'static str },
    /// An endpoint setting given where a role could steer the backend's connections.
    #[error("option \"{name}\" says where the backend connects: give it in CREATE SERVER ... OPTIONS (the server's owner decides), not in a user mapping")]
    ServerOnly { name: String },
    /// An option whose value cannot be used.
    #[error("invalid value for option \"{name}\": {reason}")]
    BadOption { name: String, reason: String },
    /// Required options are missing or conflicting options were given together.
    #[error("{0}")]
    Options(String),
    /// The Iceberg table named by a foreign table does not exist.
    #[error("Iceberg table {table} not found: {reason}")]
    TableNotFound { table: String, reason: String },
    /// A column of the foreign table is not in the Iceberg schema of the snapshot read.
    #[error("column \"{column}\" of foreign table \"{relation}\" is not a column of the Iceberg table (columns: {available})")]
    NoSuchColumn {
        column: String,
        relation: String,
        available: String,
    },
    /// A column's declared Postgres type cannot hold the Iceberg column's values.
    #[error("column \"{column}\" of foreign table \"{relation}\" is declared {declared} but the Iceberg column is {iceberg}; declare it as {expected}")]
    TypeMismatch {
        column: String,
        relation: String,
        declared: String,
        iceberg: String,
        expected: String,
    },
    /// A NOT NULL column that the snapshot read could fill with NULL.
    #[error("column \"{column}\" of foreign table \"{relation}\" is declared NOT NULL but could read NULL: {reason}; drop NOT NULL or read another snapshot")]
    NotNull {
        column: String,
        relation: String,
        reason: String,
    },
    /// A string Postgres cannot store (it holds a NUL byte).
    #[error("{0}")]
    Unrepresentable(String),
    /// A value that Postgres' type cannot represent.
    #[error("{0}")]
    OutOfRange(String),
    /// Local files read by a role that may not read server files.
    #[error("{0}")]
    Permission(String),
    /// The async runtime could not be created.
    #[error("cannot start the I/O runtime: {0}")]
    Runtime(String),
    /// Anything else that stops a scan.
    #[error("{0}")]
    Internal(String),
}

impl FdwError {
    /// The SQLSTATE reported for this error.
    pub fn sqlstate(&self) -> PgSqlErrorCode {
        use icefloe_core::Error as E;
        match self {
            FdwError::Core(e) => match e {
                E::NotFound { .. } => PgSqlErrorCode::ERRCODE_UNDEFINED_FILE,
                E::Io { .. } => PgSqlErrorCode::ERRCODE_IO_ERROR,
                // A FIFO or device where a table file should be: the table is not readable.
                E::NotAFile { .. } => PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
                E::Location { .. } => PgSqlErrorCode::ERRCODE_FDW_TABLE_NOT_FOUND,
                E::Metadata { .. }
                | E::Manifest { .. }
                | E::DeletionVector { .. }
                | E::DeleteFile { .. }
                | E::DataFile { .. }
                | E::UnknownType { .. } => PgSqlErrorCode::ERRCODE_DATA_CORRUPTED,
                E::UnsupportedFormatVersion { .. } | E::Unsupported(_) => {
                    PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED
                }
                E::SnapshotNotFound(_) => PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
                E::InvalidArgument(_) => PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                E::Output(_) => PgSqlErrorCode::ERRCODE_FDW_ERROR,
                E::NoSuchTable { .. } => PgSqlErrorCode::ERRCODE_FDW_TABLE_NOT_FOUND,
                E::NoSuchNamespace { .. } => PgSqlErrorCode::ERRCODE_FDW_SCHEMA_NOT_FOUND,
                E::Catalog { .. } => PgSqlErrorCode::ERRCODE_FDW_ERROR,
                E::LocalFilesRefused { .. } | E::DestinationRefused { .. } => {
                    PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE
                }
                E::CatalogAuth { .. } => {
                    PgSqlErrorCode::ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION
                }
                E::TooLarge { .. } => PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
                E::Cancelled { .. } => PgSqlErrorCode::ERRCODE_QUERY_CANCELED,
                // Tasks or filters encoded for a cluster; never a table's fault.
                E::Decode { .. } => PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            },
            FdwError::UnknownOption { .. }
            | FdwError::MisplacedSecret { .. }
            | FdwError::ServerOnly { .. } => PgSqlErrorCode::ERRCODE_FDW_INVALID_OPTION_NAME,
            FdwError::BadOption { .. } | FdwError::Options(_) => {
                PgSqlErrorCode::ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE
            }
            FdwError::TableNotFound { .. } => PgSqlErrorCode::ERRCODE_FDW_TABLE_NOT_FOUND,
            FdwError::NoSuchColumn { .. } => PgSqlErrorCode::ERRCODE_FDW_COLUMN_NAME_NOT_FOUND,
            FdwError::TypeMismatch { .. } => PgSqlErrorCode::ERRCODE_FDW_INVALID_DATA_TYPE,
            FdwError::OutOfRange(_) => PgSqlErrorCode::ERRCODE_DATETIME_FIELD_OVERFLOW,
            FdwError::NotNull { .. } => PgSqlErrorCode::ERRCODE_FDW_INVALID_DATA_TYPE,
            FdwError::Unrepresentable(_) => PgSqlErrorCode::ERRCODE_CHARACTER_NOT_IN_REPERTOIRE,
            FdwError::Permission(_) => PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            FdwError::Runtime(_) | FdwError::Internal(_) => PgSqlErrorCode::ERRCODE_FDW_ERROR,
        }
    }

    /// Raises this error as a Postgres ERROR (unwinds Rust frames first, so state held by
    /// the caller is dropped).
    pub fn report(self) -> ! {
        if matches!(self, FdwError::Core(icefloe_core::Error::Cancelled { .. })) {
            // The core stopped because Postgres has a cancel or termination pending: let
            // Postgres raise its own error (statement timeout, user request, termination).
            pgrx::check_for_interrupts!();
        }
        let code = self.sqlstate();
        ErrorReport::new(code, self.to_string(), "icefloe_fdw").report(PgLogLevel::ERROR);
        unreachable!("ERROR does not return")
    }
}

/// Raises one WARNING for the rules of the spec `table` was found to break without changing
/// its rows (read as Iceberg Java reads them), if any not yet shown: the first in the message,
/// the others in the detail. `display` names the table. On the backend thread only.
pub fn report_warnings(display: &str, table: &icefloe_core::Table) {
    let found = table.warnings().take();
    let Some((first, rest)) = found.split_first() else {
        return;
    };
    let mut report = ErrorReport::new(
        PgSqlErrorCode::ERRCODE_WARNING,
        format!("{display}: {first} (the server option strict refuses it)"),
        "icefloe_fdw",
    );
    if !rest.is_empty() {
        let lines: Vec<String> = rest.iter().map(ToString::to_string).collect();
        report = report.set_detail(lines.join("\n"));
    }
    report.report(PgLogLevel::WARNING);
}

/// Unwraps a result or raises its error as a Postgres ERROR.
pub trait OrReport<T> {
    /// The value, or an ERROR.
    fn or_report(self) -> T;
}

impl<T, E: Into<FdwError>> OrReport<T> for Result<T, E> {
    fn or_report(self) -> T {
        match self {
            Ok(v) => v,
            Err(e) => e.into().report(),
        }
    }
}
