//! Tabular descriptions of a table, shared by the CLI (`icefloe snapshots`, `files`) and the
//! FUSE mount (`snapshots.csv`), so both print the same thing; and the snapshot list as JSON
//! (`icefloe snapshots --format json`, the mount's `snapshot.json`).

use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use crate::spec::snapshot::RefType;
use crate::spec::{Snapshot, TableMetadata};

/// A small table of text: a header and rows of the same width.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Listing {
    /// RFC 4180 CSV with a header line; fields quoted only when needed; `\n` line ends.
    pub fn to_csv(&self) -> String {
        std::iter::once(&self.header)
            .chain(&self.rows)
            .map(|r| Listing::csv_line(r))
            .collect()
    }

    /// One CSV line of `to_csv` (with its `\n`), for writers that stream their rows. Fields
    /// are quoted as [`crate::encode::csv::push_field`] quotes them (an empty one stays empty).
    pub fn csv_line(row: &[String]) -> String {
        let mut out = Vec::new();
        for (i, f) in row.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            crate::encode::csv::push_field(&mut out, f.as_bytes());
        }
        out.push(b'\n');
        String::from_utf8(out).expect("quoting UTF-8 text keeps it UTF-8")
    }

    /// Columns aligned with spaces, for people.
    pub fn to_text(&self) -> String {
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (w, f) in widths.iter_mut().zip(row) {
                *w = (*w).max(f.chars().count());
            }
        }
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (i, (f, w)) in row.iter().zip(&widths).enumerate() {
                if i + 1 == row.len() {
                    line.push_str(f);
                } else {
                    let _ = write!(line, "{f:<w$}  ");
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// Milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.fffZ`.
pub fn format_timestamp_ms(ms: i64) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms)
        .map(|d| d.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
        .unwrap_or_else(|| ms.to_string())
}

/// One row per snapshot, oldest first: id, parent, sequence number, timestamp, operation,
/// refs, and the row counts from its summary.
pub fn snapshots(m: &TableMetadata) -> Listing {
    let header = [
        "snapshot_id",
        "parent_id",
        "sequence_number",
        "timestamp",
        "operation",
        "refs",
        "schema_id",
        "first_row_id",
        "added_records",
        "deleted_records",
        "added_position_deletes",
        "added_equality_deletes",
        "total_records",
    ];
    let opt = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
    let rows = m
        .snapshots_in_order()
        .into_iter()
        .map(|s| {
            let sum = |k: &str| s.summary.get(k).cloned().unwrap_or_else(|| "0".into());
            let mut refs = m.refs_of(s.snapshot_id);
            refs.sort_unstable();
            vec![
                s.snapshot_id.to_string(),
                opt(s.parent_snapshot_id),
                s.sequence_number.to_string(),
                format_timestamp_ms(s.timestamp_ms),
                s.operation().to_string(),
                refs.join(";"),
                opt(s.schema_id.map(i64::from)),
                opt(s.first_row_id),
                sum("added-records"),
                sum("deleted-records"),
                sum("added-position-deletes"),
                sum("added-equality-deletes"),
                s.summary.get("total-records").cloned().unwrap_or_default(),
            ]
        })
        .collect();
    Listing {
        header: header.iter().map(|h| h.to_string()).collect(),
        rows,
    }
}

/// The keys (and fields) of a snapshot's JSON object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotKeys {
    /// The CLI's listing (`icefloe snapshots --format json`, keys in the README):
    /// `snapshot_id`, `parent_id`, `sequence_number`, `timestamp_ms`, `timestamp`,
    /// `operation`, `refs`, `schema_id`, `first_row_id`, `added_rows`, `summary`.
    Listing,
    /// The spec's names, as table metadata writes a snapshot (the mount's `snapshot.json`):
    /// `snapshot-id`, `parent-snapshot-id`, `sequence-number`, `timestamp-ms`, `timestamp`,
    /// `operation`, `summary`, `first-row-id`, `added-rows`. Only what never changes for a
    /// snapshot: no refs.
    Spec,
}

/// One snapshot of `m` as a JSON object with the keys of `keys`, in the order listed there.
pub fn snapshot_json(m: &TableMetadata, s: &Snapshot, keys: SnapshotKeys) -> Map<String, Value> {
    let key = |listing: &str, spec: &str| match keys {
        SnapshotKeys::Listing => listing.to_string(),
        SnapshotKeys::Spec => spec.to_string(),
    };
    let mut o = Map::new();
    o.insert(key("snapshot_id", "snapshot-id"), json!(s.snapshot_id));
    o.insert(
        key("parent_id", "parent-snapshot-id"),
        json!(s.parent_snapshot_id),
    );
    o.insert(
        key("sequence_number", "sequence-number"),
        json!(s.sequence_number),
    );
    o.insert(key("timestamp_ms", "timestamp-ms"), json!(s.timestamp_ms));
    o.insert(
        "timestamp".into(),
        json!(format_timestamp_ms(s.timestamp_ms)),
    );
    o.insert("operation".into(), json!(s.operation()));
    match keys {
        SnapshotKeys::Listing => {
            let mut refs = m.refs_of(s.snapshot_id);
            refs.sort_unstable();
            o.insert("refs".into(), json!(refs));
            o.insert("schema_id".into(), json!(s.schema_id));
            o.insert("first_row_id".into(), json!(s.first_row_id));
            o.insert("added_rows".into(), json!(s.added_rows));
            o.insert("summary".into(), json!(s.summary));
        }
        SnapshotKeys::Spec => {
            o.insert("summary".into(), json!(s.summary));
            o.insert("first-row-id".into(), json!(s.first_row_id));
            o.insert("added-rows".into(), json!(s.added_rows));
        }
    }
    o
}

/// The snapshot list of `m` as JSON, with [`SnapshotKeys::Listing`]'s keys: `format_version`,
/// `current_snapshot_id`, `refs` (name to `snapshot_id` and `type`, `branch` or `tag`) and
/// `snapshots`, oldest first ([`TableMetadata::snapshots_in_order`]).
pub fn snapshots_json(m: &TableMetadata) -> Map<String, Value> {
    let snapshots: Vec<Value> = m
        .snapshots_in_order()
        .into_iter()
        .map(|s| Value::Object(snapshot_json(m, s, SnapshotKeys::Listing)))
        .collect();
    let refs: Map<String, Value> = m
        .refs
        .iter()
        .map(|(name, r)| {
            let kind = match r.ref_type {
                RefType::Branch => "branch",
                RefType::Tag => "tag",
            };
            (
                name.clone(),
                json!({"snapshot_id": r.snapshot_id, "type": kind}),
            )
        })
        .collect();
    let mut o = Map::new();
    o.insert("format_version".into(), json!(m.format_version));
    o.insert("current_snapshot_id".into(), json!(m.current_snapshot_id));
    o.insert("refs".into(), Value::Object(refs));
    o.insert("snapshots".into(), Value::Array(snapshots));
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_only_when_needed() {
        let l = Listing {
            header: vec!["a".into(), "b".into()],
            rows: vec![
                vec!["x,y".into(), "say \"hi\"".into()],
                vec!["1".into(), String::new()],
            ],
        };
        assert_eq!(l.to_csv(), "a,b\n\"x,y\",\"say \"\"hi\"\"\"\n1,\n");
        assert_eq!(
            Listing::csv_line(&["a\rb".into(), "c\nd".into(), "é ü".into(), "\"".into()]),
            "\"a\rb\",\"c\nd\",é ü,\"\"\"\"\n"
        );
        assert_eq!(l.to_text(), "a    b\nx,y  say \"hi\"\n1\n");
    }
}
