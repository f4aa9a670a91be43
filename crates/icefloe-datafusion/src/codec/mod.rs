//! Extension codecs for a distributed (Apache DataFusion Ballista) cluster: how Icefloe's
//! tables and scans travel between the client, the scheduler and the executors.
//!
//! - [`IcefloeLogicalCodec`] (client → scheduler): an [`crate::IcefloeTable`] as its
//!   [`TableRef`] (the exact metadata file, storage options that hold no credential), the
//!   snapshot and schema the client resolved (time travel included) and the extra columns it
//!   shows. The scheduler re-opens the table with its own storage configuration when it plans
//!   the scan ([`DecodedTable`]).
//! - [`IcefloePhysicalCodec`] (scheduler → executors): an [`crate::IcefloeScanExec`] as its
//!   [`ScanSpec`], its partitions' file scan tasks with their delete files
//!   ([`icefloe_core::scan::plan::task_json`]), the output column indices, Arrow schema, limit
//!   and filter. An executor re-opens the table with its own storage configuration when the
//!   first partition runs. On a cluster the scheduler plans a decoded table's scan as an
//!   [`crate::IcefloeTaskReadExec`] instead (its tasks in in-memory partitions, which Ballista
//!   gives each task only its share of), encoded the same way less the tasks.
//!
//! Neither ever carries a credential: storage options are filtered by
//! [`icefloe_core::io::config::is_shareable_key`] and every process takes credentials from its
//! own environment and `--storage-option`s ([`crate::TableOpener`]). Tables that cannot be
//! encoded (the change feed and row history functions compute their rows in the client) are
//! refused with a [`CodecError`] naming them, never read wrongly.
//!
//! Every encoding is a frame: the bytes `ICEFLOE`, one byte saying what follows (`T` a table,
//! `S` a scan), then a JSON document with a `version`; anything else is handed to the codec
//! each one wraps (Ballista's own, for its shuffle and cache nodes).

mod decoded;
mod logical;
mod physical;

use serde_json::Value;

pub use decoded::DecodedTable;
pub use logical::IcefloeLogicalCodec;
pub use physical::IcefloePhysicalCodec;

use crate::scan_spec::{ScanSpec, TableRef};

/// The first bytes of every frame these codecs write.
const MAGIC: &[u8] = b"ICEFLOE";
/// The frame of a table (logical plans).
const TABLE: u8 = b'T';
/// The frame of a scan (physical plans).
const SCAN: u8 = b'S';
/// The frame of a read of in-memory tasks (physical plans of a cluster).
const TASK_READ: u8 = b'R';
/// The version of the JSON documents in frames.
pub const CODEC_VERSION: u64 = 1;

/// Why a plan could not be encoded or decoded for the cluster.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// A table that only exists in the client (computed there) named in a distributed query.
    #[error("{what} cannot run on a cluster: {why}")]
    NotDistributable {
        /// The table, as the query named it.
        what: String,
        /// Why it cannot.
        why: &'static str,
    },
    /// A frame of another version, or a malformed one.
    #[error("cannot decode an Icefloe {what} from the plan: {reason}")]
    Malformed {
        /// What was being decoded (a table, a scan).
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The core refused the encoded tasks or filter.
    #[error(transparent)]
    Core(#[from] icefloe_core::Error),
}

impl From<CodecError> for datafusion::error::DataFusionError {
    fn from(e: CodecError) -> Self {
        datafusion::error::DataFusionError::External(Box::new(e))
    }
}

/// `body` framed as `kind`.
fn frame(kind: u8, body: &Value, buf: &mut Vec<u8>) {
    buf.extend_from_slice(MAGIC);
    buf.push(kind);
    buf.extend_from_slice(body.to_string().as_bytes());
}

/// The JSON of a frame of `kind` (`Ok(None)`: not one of ours); its version checked.
fn unframe(kind: u8, what: &'static str, buf: &[u8]) -> Result<Option<Value>, CodecError> {
    let Some(rest) = buf.strip_prefix(MAGIC) else {
        return Ok(None);
    };
    let malformed = |reason: String| CodecError::Malformed { what, reason };
    match rest.split_first() {
        Some((k, body)) if *k == kind => {
            let v: Value = serde_json::from_slice(body).map_err(|e| malformed(e.to_string()))?;
            let version = v.get("version").and_then(Value::as_u64);
            if version != Some(CODEC_VERSION) {
                return Err(malformed(format!(
                    "encoding version {version:?}, this build reads {CODEC_VERSION}"
                )));
            }
            Ok(Some(v))
        }
        _ => Err(malformed("another kind of frame".into())),
    }
}

fn table_ref_json(t: &TableRef) -> Value {
    serde_json::json!({
        "metadata_file": t.metadata_file,
        "storage": t.storage.iter().map(|(k, v)| serde_json::json!([k, v])).collect::<Vec<_>>(),
    })
}

fn table_ref_from(v: &Value, what: &'static str) -> Result<TableRef, CodecError> {
    let malformed = |reason: &str| CodecError::Malformed {
        what,
        reason: reason.to_string(),
    };
    let metadata_file = v
        .get("metadata_file")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed("no metadata_file"))?
        .to_string();
    let storage = v
        .get("storage")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("no storage"))?
        .iter()
        .map(|p| match (p[0].as_str(), p[1].as_str()) {
            (Some(k), Some(v)) => Ok((k.to_string(), v.to_string())),
            _ => Err(malformed("a storage option is not [key, value]")),
        })
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        // A plan from elsewhere never brings a credential in.
        .filter(|(k, _)| icefloe_core::io::config::is_shareable_key(k))
        .collect();
    Ok(TableRef {
        metadata_file,
        storage,
    })
}

fn spec_json(s: &ScanSpec) -> Value {
    serde_json::json!({
        "table": table_ref_json(&s.table),
        "snapshot_id": s.snapshot_id,
        "schema_id": s.schema_id,
        "columns": s.columns,
        "lineage": s.lineage,
        "filter": s.filter.as_ref().map(icefloe_core::expr::filter_json::encode_filter),
    })
}

fn spec_from(v: &Value) -> Result<ScanSpec, CodecError> {
    let what = "scan";
    let malformed = |reason: &str| CodecError::Malformed {
        what,
        reason: reason.to_string(),
    };
    Ok(ScanSpec {
        table: table_ref_from(v.get("table").ok_or_else(|| malformed("no table"))?, what)?,
        snapshot_id: match v.get("snapshot_id") {
            None | Some(Value::Null) => None,
            Some(s) => Some(s.as_i64().ok_or_else(|| malformed("snapshot_id"))?),
        },
        schema_id: v
            .get("schema_id")
            .and_then(Value::as_i64)
            .and_then(|i| i32::try_from(i).ok())
            .ok_or_else(|| malformed("schema_id"))?,
        columns: v
            .get("columns")
            .and_then(Value::as_array)
            .ok_or_else(|| malformed("columns"))?
            .iter()
            .map(|c| {
                c.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| malformed("columns"))
            })
            .collect::<Result<_, _>>()?,
        lineage: v
            .get("lineage")
            .and_then(Value::as_bool)
            .ok_or_else(|| malformed("lineage"))?,
        filter: match v.get("filter") {
            None | Some(Value::Null) => None,
            Some(f) => Some(icefloe_core::expr::filter_json::decode_filter(f)?),
        },
    })
}
