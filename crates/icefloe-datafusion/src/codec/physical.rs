//! [`IcefloePhysicalCodec`]: Icefloe's scans in physical plans (scheduler → executors).

use std::sync::Arc;

use arrow::datatypes::{Schema, SchemaRef};
use arrow_ipc::convert::{fb_to_schema, IpcSchemaEncoder};
use datafusion::common::stats::Precision;
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::ScalarUDF;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use icefloe_core::scan::plan::task_json::{decode_tasks, encode_tasks};
use serde_json::{json, Value};

use super::{frame, spec_from, spec_json, unframe, CodecError, CODEC_VERSION, SCAN, TASK_READ};
use crate::exec::{IcefloeScanExec, Reader};
use crate::opener::TableOpener;
use crate::task_read::IcefloeTaskReadExec;

/// Encodes [`IcefloeScanExec`]s with their file scan tasks and decodes them as scans that open
/// their table with this process's [`TableOpener`]; every other node goes to `inner`
/// (Ballista's codec).
#[derive(Debug)]
pub struct IcefloePhysicalCodec {
    inner: Arc<dyn PhysicalExtensionCodec>,
    opener: Arc<TableOpener>,
}

impl IcefloePhysicalCodec {
    /// A codec over `inner`, decoded scans opening their table with `opener`.
    pub fn new(inner: Arc<dyn PhysicalExtensionCodec>, opener: Arc<TableOpener>) -> Self {
        IcefloePhysicalCodec { inner, opener }
    }

    /// `exec`'s frame: what its scan is built from, each partition's tasks (data and delete
    /// files), the output columns, schema, limit and filter.
    pub fn encode_scan(&self, exec: &IcefloeScanExec, buf: &mut Vec<u8>) {
        let body = json!({
            "version": CODEC_VERSION,
            "spec": spec_json(exec.spec()),
            "tasks": encode_tasks(exec.partitions()),
            "indices": exec.indices(),
            "arrow_schema": schema_hex(&exec.schema()),
            "limit": exec.limit(),
            "filter_text": exec.filter_text(),
            "num_rows": rows_json(exec.num_rows()),
        });
        frame(SCAN, &body, buf);
    }

    /// `exec`'s frame: what its scan is built from, the output columns, schema, limit and
    /// filter (its tasks are its input, encoded as DataFusion encodes in-memory data).
    pub fn encode_task_read(&self, exec: &IcefloeTaskReadExec, buf: &mut Vec<u8>) {
        let body = json!({
            "version": CODEC_VERSION,
            "spec": spec_json(exec.spec()),
            "indices": exec.indices(),
            "arrow_schema": schema_hex(&exec.schema()),
            "limit": exec.limit(),
            "filter_text": exec.filter_text(),
            "num_rows": rows_json(exec.num_rows()),
        });
        frame(TASK_READ, &body, buf);
    }

    /// The task read a frame holds, over `input` (`Ok(None)`: not an Icefloe task read).
    pub fn decode_task_read(
        &self,
        buf: &[u8],
        input: Option<&Arc<dyn ExecutionPlan>>,
    ) -> Result<Option<IcefloeTaskReadExec>, CodecError> {
        if buf.get(super::MAGIC.len()) != Some(&TASK_READ) {
            return Ok(None);
        }
        let Some(v) = unframe(TASK_READ, "task read", buf)? else {
            return Ok(None);
        };
        let malformed = |reason: &str| CodecError::Malformed {
            what: "task read",
            reason: reason.to_string(),
        };
        let input = input.ok_or_else(|| malformed("no input"))?.clone();
        let spec = spec_from(v.get("spec").ok_or_else(|| malformed("no spec"))?)?;
        let common = Common::from(&v, "task read")?;
        let reader = Reader {
            scan: Arc::new(tokio::sync::OnceCell::new()),
            spec: Arc::new(spec),
            opener: self.opener.clone(),
            indices: common.indices,
            schema: common.schema,
            limit: common.limit,
        };
        Ok(Some(IcefloeTaskReadExec::new(
            reader,
            input,
            common.filter_text,
            common.num_rows,
        )))
    }

    /// The scan a frame holds (`Ok(None)`: not an Icefloe frame).
    pub fn decode_scan(&self, buf: &[u8]) -> Result<Option<IcefloeScanExec>, CodecError> {
        let Some(v) = unframe(SCAN, "scan", buf)? else {
            return Ok(None);
        };
        let malformed = |reason: &str| CodecError::Malformed {
            what: "scan",
            reason: reason.to_string(),
        };
        let spec = spec_from(v.get("spec").ok_or_else(|| malformed("no spec"))?)?;
        let partitions = decode_tasks(v.get("tasks").ok_or_else(|| malformed("no tasks"))?)?;
        let common = Common::from(&v, "scan")?;
        Ok(Some(IcefloeScanExec::new(
            spec,
            None,
            self.opener.clone(),
            partitions,
            common.indices,
            common.schema,
            common.limit,
            common.filter_text,
            common.num_rows,
        )))
    }
}

impl PhysicalExtensionCodec for IcefloePhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if let Some(exec) = self.decode_task_read(buf, inputs.first())? {
            return Ok(Arc::new(exec));
        }
        match self.decode_scan(buf)? {
            Some(exec) => Ok(Arc::new(exec)),
            None => self.inner.try_decode(buf, inputs, ctx, proto_converter),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        if let Some(exec) = node.downcast_ref::<IcefloeScanExec>() {
            self.encode_scan(exec, buf);
            return Ok(());
        }
        if let Some(exec) = node.downcast_ref::<IcefloeTaskReadExec>() {
            self.encode_task_read(exec, buf);
            return Ok(());
        }
        self.inner.try_encode(node, buf, proto_converter)
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        self.inner.try_decode_udf(name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.try_encode_udf(node, buf)
    }
}

/// An Arrow schema as hex of its IPC flatbuffer.
fn schema_hex(schema: &SchemaRef) -> String {
    hex::encode(
        IpcSchemaEncoder::new()
            .schema_to_fb(schema.as_ref())
            .finished_data(),
    )
}

fn rows_json(rows: Precision<usize>) -> Value {
    let (kind, n) = match rows {
        Precision::Exact(n) => ("exact", Some(n)),
        Precision::Inexact(n) => ("inexact", Some(n)),
        Precision::Absent => ("absent", None),
    };
    json!({ "kind": kind, "value": n })
}

/// The fields every scan frame has.
struct Common {
    indices: Vec<usize>,
    schema: SchemaRef,
    limit: Option<usize>,
    filter_text: Option<String>,
    num_rows: Precision<usize>,
}

impl Common {
    fn from(v: &Value, what: &'static str) -> Result<Common, CodecError> {
        let malformed = |reason: &str| CodecError::Malformed {
            what,
            reason: reason.to_string(),
        };
        let usize_of = |x: &Value, what: &str| {
            x.as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| malformed(what))
        };
        let indices = v
            .get("indices")
            .and_then(Value::as_array)
            .ok_or_else(|| malformed("indices"))?
            .iter()
            .map(|i| usize_of(i, "indices"))
            .collect::<Result<Vec<_>, _>>()?;
        let schema_bytes = v
            .get("arrow_schema")
            .and_then(Value::as_str)
            .and_then(|h| hex::decode(h).ok())
            .ok_or_else(|| malformed("arrow_schema"))?;
        let schema: Schema = arrow_ipc::root_as_schema(&schema_bytes)
            .map(fb_to_schema)
            .map_err(|e| malformed(&format!("arrow_schema: {e}")))?;
        let limit = match v.get("limit") {
            None | Some(Value::Null) => None,
            Some(l) => Some(usize_of(l, "limit")?),
        };
        let filter_text = match v.get("filter_text") {
            None | Some(Value::Null) => None,
            Some(t) => Some(
                t.as_str()
                    .ok_or_else(|| malformed("filter_text"))?
                    .to_string(),
            ),
        };
        let rows = v.get("num_rows").ok_or_else(|| malformed("num_rows"))?;
        let num_rows = match rows.get("kind").and_then(Value::as_str) {
            Some("exact") => Precision::Exact(usize_of(&rows["value"], "num_rows")?),
            Some("inexact") => Precision::Inexact(usize_of(&rows["value"], "num_rows")?),
            Some("absent") => Precision::Absent,
            _ => return Err(malformed("num_rows")),
        };
        Ok(Common {
            indices,
            schema: SchemaRef::new(schema),
            limit,
            filter_text,
            num_rows,
        })
    }
}
