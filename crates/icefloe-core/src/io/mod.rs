//! Storage: object stores, path relocation, finding a table's current metadata file, and
//! opening data and delete files of every format.

pub mod ahead_window;
pub mod avro;
pub mod config;
pub mod destination;
pub mod field_ids;
pub mod file;
pub mod footer_cache;
pub mod json;
pub mod limits;
pub mod locate;
pub mod location;
pub mod orc;
pub mod parquet;
pub mod ranged;
pub mod readahead;
pub mod rebatch;
pub mod regular;
pub mod relist;
pub mod remote;
pub mod row_batches;
pub mod row_selection;
pub mod store;
pub mod store_error;

pub use config::{Ambient, StorageConfig};
pub use limits::ReadLimits;
pub use location::{classify, parse_location, Location, LocationKind};
pub use store::TableIo;
