//! The errors of the Parquet view, all of one kind.

/// An error of the view, saying it is one.
pub(super) fn err(e: impl std::fmt::Display) -> crate::Error {
    crate::Error::Output(format!("Parquet view: {e}"))
}
