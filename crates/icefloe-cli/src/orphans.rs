//! `icefloe orphans`: files under the table location that no metadata references (a dry
//! run of `remove_orphan_files`; nothing is deleted).

use anyhow::Result;
use icefloe_core::history::orphans::{orphan_files, DEFAULT_OLDER_THAN_MS};
use icefloe_core::listing::{format_timestamp_ms, Listing};
use serde_json::json;

use crate::args::{ListOutput, TableArgs};
use crate::render::print;

/// Arguments of `icefloe orphans`.
#[derive(clap::Args, Debug)]
pub struct OrphansArgs {
    #[command(flatten)]
    pub table: TableArgs,
    /// Only files last modified before this time: milliseconds since the epoch or an ISO-8601
    /// time (default: 3 days ago)
    #[arg(long, value_name = "TIME")]
    pub older_than: Option<String>,
    /// List under this location instead of the table's (a path as the metadata writes them)
    #[arg(long, value_name = "PREFIX")]
    pub location: Option<String>,
    #[command(flatten)]
    pub out: ListOutput,
}

/// Runs `icefloe orphans`.
pub async fn orphans(a: OrphansArgs) -> Result<()> {
    let table = a.table.open().await?;
    let older_than = match &a.older_than {
        Some(t) => icefloe_core::instant::parse_instant_ms(t)?,
        None => chrono::Utc::now().timestamp_millis() - DEFAULT_OLDER_THAN_MS,
    };
    let files = orphan_files(&table, older_than, a.location.as_deref()).await?;
    let listing = Listing {
        header: ["path", "last_modified", "size"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        rows: files
            .iter()
            .map(|o| {
                vec![
                    o.path.clone(),
                    format_timestamp_ms(o.last_modified_ms),
                    o.size.to_string(),
                ]
            })
            .collect(),
    };
    let text = [(0, "path"), (1, "last_modified"), (2, "size")];
    print(a.out.format, &listing, &text, || {
        json!({
            "older_than_ms": older_than,
            "orphans": files.iter().map(|o| json!({
                "path": o.path,
                "relative_path": o.relative,
                "last_modified_ms": o.last_modified_ms,
                "size": o.size,
            })).collect::<Vec<_>>(),
        })
    })
}
