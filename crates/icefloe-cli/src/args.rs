//! Arguments shared by the subcommands: the table, the snapshot, the output format.

use clap::{Args, ValueEnum};
use icefloe_core::io::StorageConfig;
use icefloe_core::{MetadataSelection, OpenOptions, Table};

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
    #[command(flatten)]
    pub open: OpenArgs,
    /// The catalog (`--catalog`) TABLE is a `namespace.table` of.
    #[arg(skip)]
    pub catalog: Option<String>,
}

impl TableArgs {
    /// Opens the table; when that fails, the error says what the path is instead (missing,
    /// a warehouse, a file of another kind).
    pub async fn open(&self) -> anyhow::Result<Table> {
        match &self.catalog {
            Some(name) => {
                if self.open.is_set() {
                    anyhow::bail!(
                        "--metadata-file, --table-uuid, --latest-by-last-updated-ms and --path-map choose files of a table path; a catalog's table is loaded as its catalog says"
                    );
                }
                let t =
                    crate::catalog::load(name, &self.table, self.storage.config_for(None)?).await?;
                if self.open.strict {
                    t.make_strict()?;
                }
                crate::report::opened(&t);
                Ok(t)
            }
            None => {
                let opts = self
                    .open
                    .options(self.storage.config_for(Some(&self.table))?);
                let t = crate::open::open(&self.table, &opts).await?;
                crate::report::opened(&t);
                Ok(t)
            }
        }
    }
}

/// How a table is opened: which metadata file (ClickHouse's settings) and which recorded
/// locations to rewrite. The rules are the core's; these are only its flags.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Opening the table")]
pub struct OpenArgs {
    /// Read this metadata file: an absolute path or URL, or a path relative to the table root
    /// or to its metadata/ directory
    #[arg(long, value_name = "FILE")]
    pub metadata_file: Option<String>,
    /// Consider only metadata files whose table-uuid is UUID (case-insensitive)
    #[arg(long, value_name = "UUID")]
    pub table_uuid: Option<String>,
    /// Take the metadata file with the greatest last-updated-ms, not the highest version
    #[arg(long)]
    pub latest_by_last_updated_ms: bool,
    /// Read files recorded under the prefix OLD from NEW instead; repeatable, the first
    /// matching OLD wins
    #[arg(long = "path-map", value_name = "OLD=NEW", value_parser = parse_path_map)]
    pub path_map: Vec<(String, String)>,
    /// Refuse a table that breaks any rule of the spec; by default one whose answer the rule
    /// does not change is read as Iceberg Java reads it, with a warning
    #[arg(long)]
    pub strict: bool,
}

impl OpenArgs {
    /// The core's options for these flags, with `storage`.
    pub fn options(&self, storage: StorageConfig) -> OpenOptions {
        OpenOptions {
            storage,
            metadata: MetadataSelection {
                metadata_file: self.metadata_file.clone(),
                table_uuid: self.table_uuid.clone(),
                latest_by_last_updated_ms: self.latest_by_last_updated_ms,
            },
            path_map: self.path_map.clone(),
            strict: self.strict,
        }
    }

    /// Whether any of these flags is given.
    pub fn is_set(&self) -> bool {
        self.metadata_file.is_some()
            || self.table_uuid.is_some()
            || self.latest_by_last_updated_ms
            || !self.path_map.is_empty()
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
    /// The storage configuration the core is handed for `location` (`None`: a catalog's
    /// tables, anywhere): the process environment's storage variables (for an object-store
    /// location, with the AWS profile's credentials and region where the variables set none),
    /// these options over them, ambient credentials allowed.
    pub fn config_for(&self, location: Option<&str>) -> anyhow::Result<StorageConfig> {
        let opts = self
            .storage_options
            .iter()
            .map(|o| StorageConfig::parse_option(o))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(StorageConfig::with_env(ambient_env(location)?, opts))
    }
}

/// The process environment, with the AWS profile's credentials for locations that may need
/// them (a `credential_process` is not run for a local table).
pub fn ambient_env(location: Option<&str>) -> anyhow::Result<Vec<(String, String)>> {
    let env: Vec<(String, String)> = std::env::vars().collect();
    let remote = location.is_none_or(|l| {
        icefloe_core::io::classify(l).ok() != Some(icefloe_core::io::LocationKind::Local)
    });
    if remote {
        crate::aws_profile::with_profile(env)
    } else {
        Ok(env)
    }
}

/// `OLD=NEW` of `--path-map`.
fn parse_path_map(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((old, new)) if !old.is_empty() && !new.is_empty() => {
            Ok((old.to_string(), new.to_string()))
        }
        _ => Err(format!("expected OLD=NEW, got {s:?}")),
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
            S::AsOf(icefloe_core::instant::parse_instant_ms(t)?)
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
