//! Storage: object stores, path relocation, and finding a table's current metadata file.

pub mod locate;
pub mod parquet;
pub mod store;

pub use store::TableIo;
