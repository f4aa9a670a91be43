//! `icefloe`: read Apache Iceberg tables from the command line.

mod cat;
mod describe;
mod mount;
mod time;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Read Apache Iceberg tables (format versions 1-3) as the spec defines: deletion vectors,
/// position and equality deletes, row lineage, defaults, schema evolution, time travel.
#[derive(Parser, Debug)]
#[command(name = "icefloe", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Which snapshot to read; at most one.
#[derive(Args, Debug, Clone, Default)]
#[group(multiple = false)]
pub struct SnapshotArgs {
    /// Snapshot id.
    #[arg(long)]
    pub snapshot: Option<i64>,
    /// The snapshot current on main at this time: milliseconds since the epoch, or an
    /// ISO-8601 time such as 2026-01-31T12:00:00Z (UTC when no offset is given).
    #[arg(long = "as-of", value_name = "TIME")]
    pub as_of: Option<String>,
    /// A branch or tag name.
    #[arg(long = "ref", value_name = "NAME")]
    pub reference: Option<String>,
}

/// Output format of `cat`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Jsonl,
    Parquet,
}

/// Output format of the listing commands.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListFormat {
    /// Aligned columns for people.
    #[default]
    Text,
    /// RFC 4180 CSV with a header.
    Csv,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// One line per snapshot: id, parent, sequence number, timestamp, operation, refs, row counts.
    Snapshots {
        /// Table root directory or URL, or a metadata file.
        table: String,
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
    },
    /// Field ids, names, types, required, defaults of a snapshot's schema.
    Schema {
        table: String,
        #[command(flatten)]
        at: SnapshotArgs,
    },
    /// Data files with record counts and the deletes that apply to each.
    Files {
        table: String,
        #[command(flatten)]
        at: SnapshotArgs,
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
    },
    /// The live rows of a snapshot.
    Cat {
        table: String,
        #[command(flatten)]
        at: SnapshotArgs,
        #[arg(long, value_enum, default_value = "csv")]
        format: Format,
        /// Put _row_id and _last_updated_sequence_number first.
        #[arg(long)]
        lineage: bool,
        /// Only these columns, comma-separated, in this order.
        #[arg(long, value_delimiter = ',')]
        columns: Option<Vec<String>>,
        /// Write to FILE instead of standard output (a progress bar shows on a terminal).
        #[arg(long, short)]
        output: Option<std::path::PathBuf>,
    },
    /// Mount a table (or a warehouse of tables) as a read-only file system: every snapshot's
    /// rows as CSV and Parquet files, refs as symlinks, new snapshots appearing as committed.
    Mount(mount::MountArgs),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ICEFLOE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,fuser=error")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    // The mount runs its own runtime, so it starts outside this one.
    let command = match cli.command {
        Command::Mount(args) => {
            return match mount::mount(args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("icefloe: {e:#}");
                    ExitCode::FAILURE
                }
            };
        }
        other => other,
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("icefloe: cannot start runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = rt.block_on(async {
        match command {
            Command::Snapshots { table, format } => describe::snapshots(&table, format).await,
            Command::Schema { table, at } => describe::schema(&table, &at).await,
            Command::Files { table, at, format } => describe::files(&table, &at, format).await,
            Command::Cat {
                table,
                at,
                format,
                lineage,
                columns,
                output,
            } => cat::cat(&table, &at, format, lineage, columns, output.as_deref()).await,
            Command::Mount(_) => Err(anyhow::anyhow!("mount runs outside the runtime")),
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("icefloe: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A reader that closed the pipe early (`icefloe cat … | head`) is not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.to_string().contains("Broken pipe")
    })
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
