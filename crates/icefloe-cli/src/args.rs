//! Arguments shared by the subcommands: the table, the snapshot, the output format.

use clap::{Args, ValueEnum};
use icefloe_core::io::StorageConfig;
use icefloe_core::Table;

use crate::time;

/// Help text of `<TABLE>`, the same in every subcommand.
pub const TABLE_HELP: &str = "The table: its root directory (the one holding metadata/), one of \
its *.metadata.json files, or a file://, s3://, gs:// or az:// URL of either; with --catalog, \
namespace.table";

/// The table a command reads.
#[derive(Args, Debug, Clone)]
pub struct TableArgs {
    #[arg(value_name = "TABLE", help = TABLE_HELP)]
    pub table: String,
    #[command(flatten)]
    pub storage: StorageArgs,
    /// The catalog (`--catalog`) TABLE is a `namespace.table` of.
    #[arg(skip)]
    pub catalog: Option<String>,
}

impl TableArgs {
    /// Opens the table; when that fails, the error says what the path is instead (missing,
    /// a warehouse, a file of another kind).
    pub async fn open(&self) -> anyhow::Result<Table> {
        match &self.catalog {
            Some(name) => crate::catalog::load(name, &self.table, self.storage.config()?).await,
            None => crate::open::open(&self.table, self.storage.config()?).await,
        }
    }
}

/// How to reach object storage: `--storage-option` over the environment's `AWS_*`,
/// `AZURE_*` and `GOOGLE_*` variables.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Storage")]
pub struct StorageArgs {
    /// An object_store setting for s3://, az:// and gs:// locations, e.g. aws_region=eu-west-1,
    /// aws_endpoint=http://127.0.0.1:9000, aws_allow_http=true (repeatable; the keys of the
    /// Postgres wrapper's options; overrides the AWS_*, AZURE_*, GOOGLE_* variables)
    #[arg(long = "storage-option", value_name = "KEY=VALUE")]
    pub storage_options: Vec<String>,
}

impl StorageArgs {
    /// The storage configuration the core is handed: the process environment's storage
    /// variables, these options over them, ambient credentials allowed.
    pub fn config(&self) -> anyhow::Result<StorageConfig> {
        let opts = self
            .storage_options
            .iter()
            .map(|o| StorageConfig::parse_option(o))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(StorageConfig::with_env(std::env::vars(), opts))
    }
}

/// Which snapshot to read; at most one (default: the current snapshot of main).
#[derive(Args, Debug, Clone, Default)]
#[group(multiple = false)]
#[command(next_help_heading = "Snapshot (default: the current snapshot of main)")]
pub struct SnapshotArgs {
    /// Snapshot id
    #[arg(long, value_name = "ID")]
    pub snapshot: Option<i64>,
    /// The snapshot current on main at this time: milliseconds since the epoch, or an ISO-8601
    /// time such as 2026-01-31T12:00:00Z (UTC when no offset is given)
    #[arg(long = "as-of", value_name = "TIME")]
    pub as_of: Option<String>,
    /// A branch or tag name
    #[arg(long = "ref", value_name = "NAME")]
    pub reference: Option<String>,
}

impl SnapshotArgs {
    /// The core's selector for these arguments.
    pub fn selector(&self) -> anyhow::Result<icefloe_core::SnapshotSelector> {
        use icefloe_core::SnapshotSelector as S;
        Ok(if let Some(id) = self.snapshot {
            S::Id(id)
        } else if let Some(t) = &self.as_of {
            S::AsOf(time::parse_time_ms(t)?)
        } else if let Some(r) = &self.reference {
            S::Ref(r.clone())
        } else {
            S::Current
        })
    }
}

/// Output format of `cat`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// RFC 4180 CSV with a header
    Csv,
    /// One JSON object per row
    Jsonl,
    /// Parquet with the Iceberg field ids
    Parquet,
}

/// Output format of the listing commands (`snapshots`, `schema`, `files`).
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListFormat {
    /// A table sized to the terminal, long cells cut with an ellipsis
    #[default]
    #[value(alias = "table")]
    Text,
    /// RFC 4180 CSV with a header, nothing cut
    Csv,
    /// One JSON document (see the README for its keys)
    Json,
}

/// `--format` of the listing commands.
#[derive(Args, Debug, Clone, Copy)]
#[command(next_help_heading = "Output")]
pub struct ListOutput {
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    pub format: ListFormat,
}
