//! Errors of the SQL layer, each naming the table, function or argument it is about. They
//! reach DataFusion as [`DataFusionError::External`], so a query's error keeps the core's
//! error (which names the file and the rule broken) as its source.

use datafusion::error::DataFusionError;

/// What can go wrong between SQL and the core's scan, beside the core's own errors.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// The core refused or failed: the table, file and rule are in its message.
    #[error(transparent)]
    Core(#[from] icefloe_core::Error),
    /// A table function called with arguments it does not take.
    #[error("{function}: {reason} (usage: {usage})")]
    Arguments {
        function: &'static str,
        reason: String,
        usage: &'static str,
    },
    /// A table function names a table this session cannot find.
    #[error("{function}: no table {name:?}{hint}")]
    UnknownTable {
        function: &'static str,
        name: String,
        hint: String,
    },
    /// A table function whose rows are computed in this process, in a session whose plans run
    /// on a cluster.
    #[error("{function} cannot run on a cluster: its rows are computed by the client (run the query without --cluster)")]
    NotOnCluster { function: &'static str },
    /// A result's Arrow type that the output encodings cannot write and no cast makes writable.
    #[error("column {column:?} is of type {data_type}, which cannot be written as {what}")]
    Output {
        column: String,
        data_type: String,
        what: &'static str,
    },
}

impl From<SqlError> for DataFusionError {
    fn from(e: SqlError) -> Self {
        DataFusionError::External(Box::new(e))
    }
}

/// The core's error as DataFusion's (its message and source kept).
pub(crate) fn core(e: icefloe_core::Error) -> DataFusionError {
    SqlError::Core(e).into()
}
