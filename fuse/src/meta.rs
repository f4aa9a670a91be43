//! The small files made from table metadata: `snapshots.csv`, `snapshot.json`, and the targets
//! of the `current` and `refs/*` symlinks.

use bytes::Bytes;
use icefloe_core::listing::{self, SnapshotKeys};
use icefloe_core::spec::{Schema, Snapshot, TableMetadata};
use icefloe_core::{SnapshotSelector, Table};
use serde_json::{json, Map, Value};

/// `snapshots.csv`: the snapshot list exactly as `icefloe snapshots --format csv` prints it.
pub fn snapshots_csv(m: &TableMetadata) -> Bytes {
    Bytes::from(listing::snapshots(m).to_csv())
}

/// `snapshot.json`: the snapshot's id, parent, sequence number, time, operation, summary (the
/// core's [`listing::snapshot_json`] with the spec's keys) and the schema it is read with
/// (top-level fields with their types as the spec writes them). Only what never changes for a
/// snapshot (so not the refs pointing at it).
pub fn snapshot_json(m: &TableMetadata, s: &Snapshot, schema: &Schema) -> Bytes {
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
    let mut o = listing::snapshot_json(m, s, SnapshotKeys::Spec);
    o.insert(
        "schema".into(),
        json!({"schema-id": schema.schema_id, "fields": fields}),
    );
    let v = Value::Object(o);
    let mut text = serde_json::to_string_pretty(&v).unwrap_or_else(|_| v.to_string());
    text.push('\n');
    Bytes::from(text)
}

/// Where a link to what `sel` reads leads, below the table root: the snapshot directory
/// when the core reads it with the snapshot's own schema, else the one of the schema the core
/// chooses (`schemas/<id>/<snapshot>`).
fn target(table: &Table, sel: &SnapshotSelector) -> Option<String> {
    let (snapshot, schema) = table.resolve(sel).ok()?;
    let snapshot = snapshot?;
    let own = crate::tree::own_schema(table, snapshot);
    Some(if schema.schema_id == own {
        format!("snapshots/{}", snapshot.snapshot_id)
    } else {
        format!("schemas/{}/{}", schema.schema_id, snapshot.snapshot_id)
    })
}

/// Target of `current`: the current snapshot of `main` as the core reads it, if the table
/// has one.
pub fn current_target(table: &Table) -> Option<String> {
    target(table, &SnapshotSelector::Current)
}

/// Target of `refs/<name>`: the ref's snapshot as the core reads it.
pub fn ref_target(table: &Table, name: &str) -> Option<String> {
    target(table, &SnapshotSelector::Ref(name.to_string())).map(|t| format!("../{t}"))
}
