//! [`IcefloeLogicalCodec`]: Icefloe's tables in logical plans (client → scheduler).

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{AggregateUDF, Extension, LogicalPlan, ScalarUDF, WindowUDF};
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use serde_json::{json, Value};

use super::{frame, table_ref_from, table_ref_json, unframe, CodecError, DecodedTable};
use super::{CODEC_VERSION, TABLE};
use crate::columns::ExtraColumns;
use crate::functions::ComputedTable;
use crate::opener::TableOpener;
use crate::table::IcefloeTable;

/// Encodes [`IcefloeTable`]s as references and decodes them as [`DecodedTable`]s opened by
/// this process's [`TableOpener`]; everything else goes to `inner` (Ballista's codec).
#[derive(Debug)]
pub struct IcefloeLogicalCodec {
    inner: Arc<dyn LogicalExtensionCodec>,
    opener: Arc<TableOpener>,
}

impl IcefloeLogicalCodec {
    /// A codec over `inner`, opening decoded tables with `opener` (whose shareable storage
    /// options also travel with encoded tables).
    pub fn new(inner: Arc<dyn LogicalExtensionCodec>, opener: Arc<TableOpener>) -> Self {
        IcefloeLogicalCodec { inner, opener }
    }

    /// `table`'s frame: its reference (its own and this process's shareable storage options),
    /// the snapshot and schema it reads, the extra columns it shows.
    pub fn encode_table(&self, table: &IcefloeTable, buf: &mut Vec<u8>) {
        self.encode_parts(
            table.table_ref(),
            table.snapshot_id(),
            table.schema_id(),
            table.extra_columns(),
            buf,
        );
    }

    fn encode_parts(
        &self,
        mut reference: crate::scan_spec::TableRef,
        snapshot_id: Option<i64>,
        schema_id: i32,
        extra: ExtraColumns,
        buf: &mut Vec<u8>,
    ) {
        for (k, v) in self.opener.shareable_options() {
            if !reference.storage.iter().any(|(o, _)| *o == k) {
                reference.storage.push((k, v));
            }
        }
        let body = json!({
            "version": CODEC_VERSION,
            "table": table_ref_json(&reference),
            "snapshot_id": snapshot_id,
            "schema_id": schema_id,
            "lineage": extra.lineage,
            "metadata_columns": extra.metadata,
        });
        frame(TABLE, &body, buf);
    }

    /// The table a frame names (`Ok(None)`: not an Icefloe frame).
    pub fn decode_table(
        &self,
        buf: &[u8],
        schema: SchemaRef,
    ) -> Result<Option<DecodedTable>, CodecError> {
        let Some(v) = unframe(TABLE, "table", buf)? else {
            return Ok(None);
        };
        let malformed = |reason: &str| CodecError::Malformed {
            what: "table",
            reason: reason.to_string(),
        };
        let flag = |key: &str| {
            v.get(key)
                .and_then(Value::as_bool)
                .ok_or_else(|| malformed(key))
        };
        let reference = table_ref_from(
            v.get("table").ok_or_else(|| malformed("no table"))?,
            "table",
        )?;
        let snapshot_id = match v.get("snapshot_id") {
            None | Some(Value::Null) => None,
            Some(s) => Some(s.as_i64().ok_or_else(|| malformed("snapshot_id"))?),
        };
        let schema_id = v
            .get("schema_id")
            .and_then(Value::as_i64)
            .and_then(|i| i32::try_from(i).ok())
            .ok_or_else(|| malformed("schema_id"))?;
        let extra = ExtraColumns {
            lineage: flag("lineage")?,
            metadata: flag("metadata_columns")?,
        };
        Ok(Some(DecodedTable::new(
            reference,
            snapshot_id,
            schema_id,
            extra,
            schema,
            self.opener.clone(),
        )))
    }
}

impl LogicalExtensionCodec for IcefloeLogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> Result<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        match self.decode_table(buf, schema.clone())? {
            Some(t) => Ok(Arc::new(t)),
            None => self
                .inner
                .try_decode_table_provider(buf, table_ref, schema, ctx),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        if let Some(t) = node.downcast_ref::<IcefloeTable>() {
            self.encode_table(t, buf);
            return Ok(());
        }
        if let Some(t) = node.downcast_ref::<DecodedTable>() {
            let (snapshot_id, schema_id, extra) = t.resolved();
            self.encode_parts(t.reference().clone(), snapshot_id, schema_id, extra, buf);
            return Ok(());
        }
        if let Some(t) = node.downcast_ref::<ComputedTable>() {
            return Err(CodecError::NotDistributable {
                what: t.what().to_string(),
                why: "its rows are computed in the client (run it without --cluster)",
            }
            .into());
        }
        self.inner.try_encode_table_provider(table_ref, node, buf)
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> Result<Arc<dyn FileFormatFactory>> {
        self.inner.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> Result<()> {
        self.inner.try_encode_file_format(buf, node)
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        self.inner.try_decode_udf(name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.try_encode_udf(node, buf)
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> Result<Arc<AggregateUDF>> {
        self.inner.try_decode_udaf(name, buf)
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.try_encode_udaf(node, buf)
    }

    fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> Result<Arc<WindowUDF>> {
        self.inner.try_decode_udwf(name, buf)
    }

    fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.try_encode_udwf(node, buf)
    }
}
