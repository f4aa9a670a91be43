//! Storage: object stores, path relocation, and finding a table's current metadata file.

pub mod config;
pub mod locate;
pub mod location;
pub mod parquet;
pub mod regular;
pub mod relist;
pub mod remote;
pub mod store;

pub use config::StorageConfig;
pub use location::{classify, parse_location, LocationKind};
pub use store::{Ambient, TableIo};
