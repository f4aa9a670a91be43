//! The Iceberg spec's model: types, schemas, partition specs, snapshots, table metadata,
//! manifest lists, manifests and name mappings, and the Arrow schema a scan of them produces.
//! Pure parsing, no I/O.

pub mod arrow_schema;
mod avro;
mod avro_binary;
pub mod bucket;
pub mod checked;
pub mod field_lookup;
pub mod literal;
pub mod literal_array;
pub mod literal_decode;
pub mod manifest;
mod manifest_fields;
pub mod manifest_list;
pub mod metadata;
pub mod metadata_json;
pub mod name_mapping;
pub mod partition;
pub mod schema;
pub mod snapshot;
pub mod sort_order;
pub mod transform_projection;
pub mod type_json;
pub mod types;

pub use avro::open_container;

pub use literal::Literal;
pub use literal_decode::DefaultKind;
pub use manifest::{DataContent, DataFile, EntryStatus, FileFormat, ManifestEntry};
pub use manifest_list::{ManifestContent, ManifestFile};
pub use metadata::TableMetadata;
pub use partition::{PartitionField, PartitionSpec, Transform};
pub use schema::Schema;
pub use snapshot::{RefType, Snapshot, SnapshotRef, StatisticsFile};
pub use types::{ListType, MapType, NestedField, PrimitiveType, StructType, Type};
