//! `icefloe retention`: a dry run of snapshot expiry (which snapshots, refs and files an
//! expiry at `--now` removes, and when the rest would expire).

use anyhow::Result;
use icefloe_core::history::retention::{parse_duration_ms, ExpiryRun, Overrides, Policy};

use crate::args::{ListOutput, TableArgs};
use crate::render::print;

/// `--policy`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PolicyArg {
    /// The table properties history.expire.* and the refs' own settings
    #[default]
    Iceberg,
    /// S3 Tables' snapshot management: settings from the flags (default 120 hours, 1
    /// snapshot), the table properties ignored
    S3tables,
}

/// Arguments of `icefloe retention`.
#[derive(clap::Args, Debug)]
pub struct RetentionArgs {
    #[command(flatten)]
    pub table: TableArgs,
    /// The instant of the expiry run: milliseconds since the epoch or an ISO-8601 time
    /// (default: now)
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
    /// Whose settings apply
    #[arg(long, value_enum, default_value_t)]
    pub policy: PolicyArg,
    /// Keep snapshots no older than this (overrides history.expire.max-snapshot-age-ms),
    /// e.g. 120h, 5d, or milliseconds
    #[arg(long, value_name = "DUR")]
    pub max_snapshot_age: Option<String>,
    /// Keep at least this many snapshots of each branch (overrides
    /// history.expire.min-snapshots-to-keep)
    #[arg(long, value_name = "N")]
    pub min_snapshots: Option<i32>,
    /// Remove refs whose snapshot is older than this (overrides history.expire.max-ref-age-ms)
    #[arg(long, value_name = "DUR")]
    pub max_ref_age: Option<String>,
    #[command(flatten)]
    pub out: ListOutput,
}

/// Runs `icefloe retention`.
pub async fn retention(a: RetentionArgs) -> Result<()> {
    let table = a.table.open().await?;
    let now = match &a.now {
        Some(t) => icefloe_core::instant::parse_instant_ms(t)?,
        None => chrono::Utc::now().timestamp_millis(),
    };
    let dur = |d: &Option<String>| d.as_deref().map(parse_duration_ms).transpose();
    let over = Overrides {
        max_snapshot_age_ms: dur(&a.max_snapshot_age)?,
        min_snapshots: a.min_snapshots,
        max_ref_age_ms: dur(&a.max_ref_age)?,
    };
    let policy = match a.policy {
        PolicyArg::Iceberg => Policy::Iceberg,
        PolicyArg::S3tables => Policy::S3Tables,
    };
    let run = ExpiryRun::evaluate(&table, policy, over, now)
        .await?
        .with_readable_rows(&table)
        .await?;
    let listing = run.listing(table.metadata());
    let text = [
        (0, "item"),
        (2, "snapshot_id"),
        (4, "status"),
        (5, "expires_at"),
        (3, "timestamp"),
        (1, "name"),
    ];
    print(a.out.format, &listing, &text, || run.to_json())?;
    if a.out.format == crate::args::ListFormat::Text {
        let metrics: Vec<String> = run
            .metrics()
            .iter()
            .map(|(k, n)| format!("{k}={n}"))
            .collect();
        println!("{}", metrics.join(" "));
        if let Some(s) = run.readable_summary() {
            println!("{s}");
        }
    }
    Ok(())
}
