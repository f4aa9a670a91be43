//! The small files made from table metadata: `snapshots.csv`, `snapshot.json`, and the targets
//! of the `current` and `refs/*` symlinks.

use bytes::Bytes;
use icefloe_core::listing::{self, format_timestamp_ms};
use icefloe_core::spec::{Snapshot, TableMetadata};
use serde_json::{json, Map, Value};

/// `snapshots.csv`: the snapshot list exactly as `icefloe snapshots --format csv` prints it.
pub fn snapshots_csv(m: &TableMetadata) -> Bytes {
    Bytes::from(listing::snapshots(m).to_csv())
}

/// `snapshot.json`: the snapshot's id, parent, sequence number, time, operation, summary and
/// the schema it is read with (top-level fields with their types as the spec writes them).
/// Only what never changes for a snapshot (so not the refs pointing at it).
pub fn snapshot_json(m: &TableMetadata, s: &Snapshot) -> Bytes {
    let schema = m.snapshot_schema(s);
    let fields: Vec<Value> = schema
        .columns()
        .iter()
        .map(|f| {
            let mut o = Map::new();
            o.insert("id".into(), json!(f.id));
            o.insert("name".into(), json!(f.name));
            o.insert("required".into(), json!(f.required));
            o.insert("type".into(), json!(f.field_type.to_string()));
            if let Some(doc) = &f.doc {
                o.insert("doc".into(), json!(doc));
            }
            Value::Object(o)
        })
        .collect();
    let v = json!({
        "snapshot-id": s.snapshot_id,
        "parent-snapshot-id": s.parent_snapshot_id,
        "sequence-number": s.sequence_number,
        "timestamp-ms": s.timestamp_ms,
        "timestamp": format_timestamp_ms(s.timestamp_ms),
        "operation": s.operation(),
        "summary": s.summary,
        "first-row-id": s.first_row_id,
        "added-rows": s.added_rows,
        "schema": {"schema-id": schema.schema_id, "fields": fields},
    });
    let mut text = serde_json::to_string_pretty(&v).unwrap_or_else(|_| v.to_string());
    text.push('\n');
    Bytes::from(text)
}

/// Target of `current`: the current snapshot of `main`, if the table has one.
pub fn current_target(m: &TableMetadata) -> Option<String> {
    m.current_snapshot()
        .map(|s| format!("snapshots/{}", s.snapshot_id))
}

/// Target of `refs/<name>`.
pub fn ref_target(m: &TableMetadata, name: &str) -> Option<String> {
    m.refs
        .get(name)
        .map(|r| format!("../snapshots/{}", r.snapshot_id))
}
