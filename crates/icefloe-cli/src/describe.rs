//! `icefloe snapshots`, `schema` and `files`: one listing each, printed as a terminal table,
//! CSV or one JSON document (keys documented in the README).

use std::io::{BufWriter, Write};

use anyhow::Result;
use futures::StreamExt;
use icefloe_core::listing::{self, Listing};
use icefloe_core::scan::deletes::deleted_positions;
use icefloe_core::scan::plan::{DeleteFileRef, FileScanTask};
use icefloe_core::spec::{NestedField, Type};
use icefloe_core::{Scan, Table};
use serde_json::{json, Value};

use crate::args::{ListFormat, SnapshotArgs, TableArgs};
use crate::filter::FilterArgs;
use crate::render::print;

fn header(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// The snapshot a listing is about, for its JSON document.
fn selected(snapshot: Option<&icefloe_core::spec::Snapshot>) -> Value {
    snapshot.map_or(Value::Null, |s| json!(s.snapshot_id))
}

/// Prints the snapshot list, oldest first.
pub async fn snapshots(t: &TableArgs, format: ListFormat) -> Result<()> {
    let table = t.open().await?;
    let m = table.metadata();
    let listing = listing::snapshots(m);
    // Totals before the counts of what each snapshot changed, when the width runs short.
    let text = [
        (0, "snapshot_id"),
        (1, "parent_id"),
        (2, "seq"),
        (3, "timestamp"),
        (4, "operation"),
        (5, "refs"),
        (12, "records"),
        (8, "added"),
        (9, "deleted"),
        (10, "pos_deletes"),
        (11, "eq_deletes"),
        (7, "first_row_id"),
        (6, "schema"),
    ];
    print(format, &listing, &text, || {
        let mut doc = serde_json::Map::new();
        doc.insert("table".into(), json!(t.table));
        doc.extend(listing::snapshots_json(m));
        Value::Object(doc)
    })
}

/// Prints a snapshot's schema, one field per line, nested fields indented (in JSON: nested).
pub async fn schema(t: &TableArgs, at: &SnapshotArgs, format: ListFormat) -> Result<()> {
    let table = t.open().await?;
    let (snapshot, schema) = table.resolve(&at.selector()?)?;
    let mut rows = Vec::new();
    walk(schema.columns(), 0, &mut rows);
    let listing = Listing {
        header: header(&[
            "field_id",
            "name",
            "type",
            "required",
            "initial_default",
            "write_default",
        ]),
        rows,
    };
    if format == ListFormat::Text {
        println!("schema {}", schema.schema_id);
    }
    let text = [
        (0, "id"),
        (1, "name"),
        (2, "type"),
        (3, "required"),
        (4, "initial_default"),
        (5, "write_default"),
    ];
    print(format, &listing, &text, || {
        json!({
            "table": t.table,
            "snapshot_id": selected(snapshot),
            "schema_id": schema.schema_id,
            "fields": fields_json(schema.columns()),
        })
    })
}

/// A literal as the listing shows it.
fn literal(l: &Option<icefloe_core::spec::literal::Literal>) -> Option<String> {
    l.as_ref().map(|l| format!("{l:?}"))
}

/// The structs inside a field's type (through lists and maps), if any.
fn children(t: &Type) -> Option<&[NestedField]> {
    let mut t = t;
    loop {
        match t {
            Type::Struct(s) => return Some(&s.fields),
            Type::List(l) => t = &l.element,
            Type::Map(m) => t = &m.value,
            Type::Primitive(_) => return None,
        }
    }
}

fn walk(fields: &[NestedField], depth: usize, rows: &mut Vec<Vec<String>>) {
    for f in fields {
        rows.push(vec![
            f.id.to_string(),
            format!("{}{}", "  ".repeat(depth), f.name),
            f.field_type.to_string(),
            if f.required { "required" } else { "optional" }.to_string(),
            literal(&f.initial_default).unwrap_or_default(),
            literal(&f.write_default).unwrap_or_default(),
        ]);
        if let Some(c) = children(&f.field_type) {
            walk(c, depth + 1, rows);
        }
    }
}

fn fields_json(fields: &[NestedField]) -> Vec<Value> {
    fields
        .iter()
        .map(|f| {
            let mut v = json!({
                "field_id": f.id,
                "name": f.name,
                "type": f.field_type.to_string(),
                "required": f.required,
                "initial_default": literal(&f.initial_default),
                "write_default": literal(&f.write_default),
            });
            if let Some(c) = children(&f.field_type) {
                v["fields"] = Value::Array(fields_json(c));
            }
            v
        })
        .collect()
}

/// Prints the live data files of a snapshot with the deletes that apply to each; with a
/// filter, only the files that may hold rows it keeps. CSV and JSON rows are printed as the
/// plan streams them (memory stays bounded however many files the snapshot has); the terminal
/// table needs every row for its widths. An error in a later manifest fails the command after
/// the rows printed before it.
pub async fn files(
    t: &TableArgs,
    at: &SnapshotArgs,
    filter: &FilterArgs,
    format: ListFormat,
) -> Result<()> {
    let builder = filter.apply(Scan::builder())?;
    let table = t.open().await?;
    let scan = builder.snapshot(at.selector()?).build(&table)?;
    let header = header(&[
        "data_file",
        "record_count",
        "deleted_positions",
        "deletes",
        "sequence_number",
        "first_row_id",
        "spec_id",
    ]);
    let mut out = BufWriter::with_capacity(1 << 20, std::io::stdout());
    match format {
        ListFormat::Csv => out.write_all(Listing::csv_line(&header).as_bytes())?,
        ListFormat::Json => {
            // The document `print` would write, opened here and its `files` written one by
            // one (serde_json keeps the keys in this order).
            let table_name = serde_json::to_string(&t.table)?;
            let snapshot = serde_json::to_string(&selected(scan.snapshot()))?;
            write!(
                out,
                "{{\n  \"table\": {table_name},\n  \"snapshot_id\": {snapshot},\n  \"files\": ["
            )?;
        }
        ListFormat::Text => {}
    }
    const TEXT: crate::render::TextColumns = &[
        (0, "data_file"),
        (1, "records"),
        (2, "deleted"),
        (3, "deletes"),
        (4, "seq"),
        (5, "first_row_id"),
        (6, "spec"),
    ];
    let mut text = crate::render::TextChunks::new(header.clone(), TEXT);
    let mut tasks = scan.plan_listing();
    let mut first = true;
    // One CSV line, reused: the fields are written into it as `Listing::csv_line` quotes them.
    let mut line = Vec::new();
    while let Some(task) = tasks.next().await {
        let task = task?;
        let deleted = deleted_rows(&table, &task).await?;
        match format {
            ListFormat::Csv => {
                line.clear();
                file_fields(&table, &task, deleted, &mut |k, f| {
                    if k > 0 {
                        line.push(b',');
                    }
                    icefloe_core::encode::csv::push_field(&mut line, f.as_bytes());
                });
                line.push(b'\n');
                out.write_all(&line)?
            }
            ListFormat::Text => text.push(file_row(&table, &task, deleted))?,
            ListFormat::Json => {
                let doc = serde_json::to_string_pretty(&file_json(&task, deleted))?;
                out.write_all(if first { b"\n" } else { b",\n" })?;
                for (k, line) in doc.lines().enumerate() {
                    if k > 0 {
                        out.write_all(b"\n")?;
                    }
                    write!(out, "    {line}")?;
                }
            }
        }
        first = false;
    }
    match format {
        ListFormat::Csv => {}
        ListFormat::Json => {
            out.write_all(if first { b"]\n}\n" } else { b"\n  ]\n}\n" })?;
        }
        ListFormat::Text => {
            out.flush()?;
            return text.finish();
        }
    }
    out.flush()?;
    Ok(())
}

/// The rows a task's deletes remove, as far as known without reading data. A deletion
/// vector's cardinality is its manifest entry's record_count: no Puffin file is opened to
/// list files. Position delete files are read (one may hold positions of several data
/// files, or repeat a position).
async fn deleted_rows(table: &Table, task: &FileScanTask) -> Result<u64> {
    Ok(match &task.deletion_vector {
        Some(dv) => dv.file.record_count.max(0) as u64,
        None if task.position_deletes.is_empty() => 0,
        None => deleted_positions(table, task)
            .await?
            .map(|b| b.len())
            .unwrap_or(0),
    })
}

/// One row of the `files` listing (the terminal's).
fn file_row(table: &Table, task: &FileScanTask, deleted: u64) -> Vec<String> {
    let mut row = Vec::with_capacity(7);
    file_fields(table, task, deleted, &mut |_, f| row.push(f.to_string()));
    row
}

/// The fields of one row of the `files` listing, handed to `field` in order with their
/// index: a CSV line is written from them without a string per field.
fn file_fields(
    table: &Table,
    task: &FileScanTask,
    deleted: u64,
    field: &mut dyn FnMut(usize, &str),
) {
    let short = |p| relative(table, p);
    let mut deletes = Vec::new();
    if let Some(dv) = &task.deletion_vector {
        deletes.push(format!(
            "dv {} @{}+{} ({} rows)",
            short(&dv.file.file_path),
            dv.file.content_offset.unwrap_or(0),
            dv.file.content_size_in_bytes.unwrap_or(0),
            dv.file.record_count
        ));
    }
    for p in &task.position_deletes {
        deletes.push(format!("pos {}", short(&p.file.file_path)));
    }
    for e in &task.equality_deletes {
        deletes.push(format!(
            "eq{:?} {}",
            e.file.equality_ids,
            short(&e.file.file_path)
        ));
    }
    let f = &task.data_file;
    let mut n = itoa::Buffer::new();
    field(0, short(&f.file_path));
    field(1, n.format(f.record_count));
    field(2, n.format(deleted));
    field(3, &deletes.join("; "));
    field(4, n.format(task.sequence_number));
    match task.first_row_id {
        Some(v) => field(5, n.format(v)),
        None => field(5, ""),
    }
    field(6, n.format(f.spec_id));
}

/// One element of the `files` array of the JSON document.
fn file_json(task: &FileScanTask, deleted: u64) -> Value {
    let f = &task.data_file;
    let delete_json = |d: &DeleteFileRef| {
        json!({
            "path": d.file.file_path,
            "record_count": d.file.record_count,
            "sequence_number": d.sequence_number,
        })
    };
    json!({
        "data_file": f.file_path,
        "file_format": format!("{:?}", f.file_format).to_lowercase(),
        "record_count": f.record_count,
        "file_size_in_bytes": f.file_size_in_bytes,
        "sequence_number": task.sequence_number,
        "first_row_id": task.first_row_id,
        "spec_id": f.spec_id,
        "deleted_positions": deleted,
        "deletion_vector": task.deletion_vector.as_ref().map(|dv| json!({
            "path": dv.file.file_path,
            "content_offset": dv.file.content_offset,
            "content_size_in_bytes": dv.file.content_size_in_bytes,
            "cardinality": dv.file.record_count,
            "sequence_number": dv.sequence_number,
        })),
        "position_deletes": task.position_deletes.iter().map(delete_json).collect::<Vec<_>>(),
        "equality_deletes": task.equality_deletes.iter().map(|e| {
            let mut v = delete_json(e);
            v["equality_ids"] = json!(e.file.equality_ids);
            v
        }).collect::<Vec<_>>(),
    })
}

/// A file path relative to the table location when it is under it.
fn relative<'a>(table: &Table, p: &'a str) -> &'a str {
    let root = table.metadata().location.as_str();
    p.strip_prefix(root)
        .map(|r| r.trim_start_matches('/'))
        .unwrap_or(p)
}
