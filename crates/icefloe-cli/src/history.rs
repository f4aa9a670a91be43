//! `icefloe history`: every readable version of rows, oldest first, with when each stops
//! being readable under snapshot retention.

use std::io::{BufWriter, Write};

use anyhow::{Context, Result};
use icefloe_core::history::retention::{ExpiryRun, Overrides, Policy};
use icefloe_core::history::row_history::{row_history, RowSelector};

use crate::args::{Format, TableArgs};
use crate::cat::{encoder, Sink};

/// Arguments of `icefloe history`.
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("rows").required(true).args(["row_id", "where_"])))]
pub struct HistoryArgs {
    #[command(flatten)]
    pub table: TableArgs,
    /// The row's _row_id (repeatable)
    #[arg(long = "row-id", value_name = "N")]
    pub row_id: Vec<i64>,
    /// The rows whose column reads as this value (as text) in any snapshot: COLUMN=VALUE
    #[arg(long = "where", value_name = "COLUMN=VALUE")]
    pub where_: Option<String>,
    /// The instant retention is evaluated at (default: now)
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value = "csv", help_heading = "Output")]
    pub format: Format,
}

/// Runs `icefloe history`.
pub async fn history(a: HistoryArgs) -> Result<()> {
    let table = a.table.open().await?;
    let sel = match &a.where_ {
        Some(w) => {
            let (column, value) = w.split_once('=').context("--where takes COLUMN=VALUE")?;
            RowSelector::Where {
                column: column.to_string(),
                value: value.to_string(),
            }
        }
        None => RowSelector::RowIds(a.row_id.clone()),
    };
    let now = match &a.now {
        Some(t) => icefloe_core::instant::parse_instant_ms(t)?,
        None => chrono::Utc::now().timestamp_millis(),
    };
    let run = ExpiryRun::evaluate(&table, Policy::Iceberg, Overrides::default(), now).await?;
    let batch = row_history(&table, &sel, Some((&run.expiry, &run.kept.snapshots))).await?;
    let (sink, temp) = Sink::open(None, a.format)?;
    let mut enc = encoder(a.format, BufWriter::new(sink), &batch.schema())?;
    enc.write(&batch)?;
    let mut w = enc.finish()?;
    w.flush().context("cannot write output")?;
    drop(w);
    Sink::persist(temp, None)
}
