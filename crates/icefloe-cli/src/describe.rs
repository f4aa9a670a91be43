//! `icefloe snapshots`, `schema` and `files`.

use std::io::Write;

use anyhow::Result;
use icefloe_core::delete::resolved::deleted_positions;
use icefloe_core::listing::{self, Listing};
use icefloe_core::spec::{NestedField, Type};
use icefloe_core::{Scan, Table};

use crate::{ListFormat, SnapshotArgs};

fn print(listing: &Listing, format: ListFormat) -> Result<()> {
    let text = match format {
        ListFormat::Text => listing.to_text(),
        ListFormat::Csv => listing.to_csv(),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}

/// Prints the snapshot list.
pub async fn snapshots(location: &str, format: ListFormat) -> Result<()> {
    let table = Table::open(location).await?;
    print(&listing::snapshots(table.metadata()), format)
}

/// Prints a snapshot's schema, one field per line, nested fields indented.
pub async fn schema(location: &str, at: &SnapshotArgs) -> Result<()> {
    let table = Table::open(location).await?;
    let (_, schema) = table.resolve(&at.selector()?)?;
    let mut rows = Vec::new();
    fn walk(fields: &[NestedField], depth: usize, rows: &mut Vec<Vec<String>>) {
        for f in fields {
            let lit = |l: &Option<icefloe_core::spec::Literal>| {
                l.as_ref().map(|l| format!("{l:?}")).unwrap_or_default()
            };
            rows.push(vec![
                f.id.to_string(),
                format!("{}{}", "  ".repeat(depth), f.name),
                f.field_type.to_string(),
                if f.required { "required" } else { "optional" }.to_string(),
                lit(&f.initial_default),
                lit(&f.write_default),
            ]);
            let mut t = &f.field_type;
            // Descend through lists and maps to the structs inside.
            loop {
                match t {
                    Type::Struct(s) => {
                        walk(&s.fields, depth + 1, rows);
                        break;
                    }
                    Type::List(l) => t = &l.element,
                    Type::Map(m) => t = &m.value,
                    Type::Primitive(_) => break,
                }
            }
        }
    }
    walk(schema.columns(), 0, &mut rows);
    let listing = Listing {
        header: [
            "field_id",
            "name",
            "type",
            "required",
            "initial_default",
            "write_default",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows,
    };
    println!("schema {}", schema.schema_id);
    print(&listing, ListFormat::Text)
}

/// Prints the live data files of a snapshot with the deletes that apply to each.
pub async fn files(location: &str, at: &SnapshotArgs, format: ListFormat) -> Result<()> {
    let table = Table::open(location).await?;
    let scan = Scan::builder().snapshot(at.selector()?).build(&table)?;
    let tasks = scan.plan_files().await?;
    let mut rows = Vec::new();
    let short = |p: &str| {
        let root = table.metadata().location.as_str();
        p.strip_prefix(root)
            .map(|r| r.trim_start_matches('/').to_string())
            .unwrap_or_else(|| p.to_string())
    };
    for t in &tasks {
        let deleted = deleted_positions(&table, t)
            .await?
            .map(|b| b.len())
            .unwrap_or(0);
        let mut deletes = Vec::new();
        if let Some(dv) = &t.deletion_vector {
            deletes.push(format!(
                "dv {}@{}+{}",
                short(&dv.file.file_path),
                dv.file.content_offset.unwrap_or(0),
                dv.file.content_size_in_bytes.unwrap_or(0)
            ));
        }
        for p in &t.position_deletes {
            deletes.push(format!("pos {}", short(&p.file.file_path)));
        }
        for e in &t.equality_deletes {
            deletes.push(format!(
                "eq{:?} {}",
                e.file.equality_ids,
                short(&e.file.file_path)
            ));
        }
        rows.push(vec![
            short(&t.data_file.file_path),
            t.data_file.record_count.to_string(),
            t.sequence_number.to_string(),
            t.first_row_id.map(|v| v.to_string()).unwrap_or_default(),
            t.data_file.spec_id.to_string(),
            deleted.to_string(),
            deletes.join(" "),
        ]);
    }
    let listing = Listing {
        header: [
            "data_file",
            "record_count",
            "sequence_number",
            "first_row_id",
            "spec_id",
            "deleted_positions",
            "deletes",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows,
    };
    print(&listing, format)
}
