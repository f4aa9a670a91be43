//! `icefloe changes`: the rows that changed between two snapshots, from row lineage.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use icefloe_core::history::ChangeFeed;
use icefloe_core::{SnapshotSelector, Table};

use crate::args::{Format, TableArgs};
use crate::cat::{encoder, Sink};

/// Arguments of `icefloe changes`.
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("start").required(true).args(["from", "from_creation"])))]
pub struct ChangesArgs {
    #[command(flatten)]
    pub table: TableArgs,
    /// Changes after this snapshot: an id, or a branch or tag name (an ancestor of --to)
    #[arg(long, value_name = "SNAPSHOT")]
    pub from: Option<String>,
    /// Every change since the table's creation (before its first snapshot, whose rows are all
    /// inserts), as Spark's changelog gives without a start snapshot; fails if the oldest
    /// ancestor of --to names an expired parent
    #[arg(long)]
    pub from_creation: bool,
    /// Changes up to and including this snapshot: an id, or a branch or tag name (default:
    /// the current snapshot)
    #[arg(long, value_name = "SNAPSHOT")]
    pub to: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value = "csv", help_heading = "Output")]
    pub format: Format,
    /// Only these columns (after the change and lineage columns), comma-separated
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "NAMES",
        help_heading = "Output"
    )]
    pub columns: Option<Vec<String>>,
    /// One row per _row_id (or key) with its net effect over the range: its last state, or a
    /// delete
    #[arg(long, conflicts_with = "per_commit", help_heading = "Output")]
    pub net: bool,
    /// Every commit's changes (the default)
    #[arg(long, help_heading = "Output")]
    pub per_commit: bool,
    /// Match rows by these columns instead of _row_id (for snapshots without row lineage:
    /// format version 2, or before the upgrade to 3)
    #[arg(long, value_delimiter = ',', value_name = "COLUMNS")]
    pub key: Option<Vec<String>>,
    /// Write to FILE instead of standard output
    #[arg(long, short, value_name = "FILE", help_heading = "Output")]
    pub output: Option<PathBuf>,
}

/// A snapshot named on the command line: an id, or a ref.
pub fn snapshot_id(table: &Table, text: &str) -> Result<i64> {
    let sel = match text.parse::<i64>() {
        Ok(id) => SnapshotSelector::Id(id),
        Err(_) => SnapshotSelector::Ref(text.to_string()),
    };
    Ok(table
        .select(&sel)?
        .context("the table has no snapshot")?
        .snapshot_id)
}

/// Runs `icefloe changes`.
pub async fn changes(a: ChangesArgs) -> Result<()> {
    let table = a.table.open().await?;
    let mut b = ChangeFeed::builder().net(a.net);
    b = match &a.from {
        Some(from) => b.from_snapshot(snapshot_id(&table, from)?),
        None => b.from_creation(),
    };
    if let Some(to) = &a.to {
        b = b.to_snapshot(snapshot_id(&table, to)?);
    }
    if let Some(k) = a.key {
        b = b.key(k);
    }
    if let Some(c) = a.columns {
        b = b.columns(c);
    }
    let feed = b.build(&table)?;
    let batches = feed.batches().await?;
    let (sink, temp) = Sink::open(a.output.as_deref(), a.format)?;
    let mut enc = encoder(
        a.format,
        BufWriter::with_capacity(1 << 20, sink),
        &feed.schema(),
    )?;
    for batch in &batches {
        enc.write(batch)?;
    }
    let mut w = enc.finish()?;
    w.flush().context("cannot write output")?;
    drop(w);
    Sink::persist(temp, a.output.as_deref())
}
