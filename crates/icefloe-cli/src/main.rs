//! `icefloe`: read Apache Iceberg tables from the command line.

mod args;
mod aws_profile;
mod cat;
mod catalog;
mod catalog_config;
mod changes;
#[cfg(feature = "cluster")]
mod cluster;
mod describe;
mod filter;
mod generate;
mod history;
mod interrupt;
mod malloc;
mod mount;
mod open;
mod orphans;
mod progress;
mod render;
mod report;
mod retention;
#[cfg(feature = "sql")]
mod sql;
#[cfg(feature = "sql")]
mod sql_prompt;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use args::{Format, ListOutput, SnapshotArgs, TableArgs};

/// `--version`: this build, and the table format versions it reads.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (reads Iceberg table format versions 1, 2 and 3)"
);

/// Read Apache Iceberg tables (format versions 1-3) as the spec defines: deletion vectors,
/// position and equality deletes, row lineage, defaults, schema evolution, time travel.
#[derive(Parser, Debug)]
#[command(name = "icefloe", version = VERSION, about, max_term_width = 100)]
pub struct Cli {
    /// Read tables from this REST catalog, configured as PyIceberg's are (~/.pyiceberg.yaml,
    /// PYICEBERG_CATALOG__<NAME>__<KEY>); TABLE is then namespace.table
    #[arg(long, global = true, value_name = "NAME")]
    catalog: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the snapshots: id, parent, sequence number, time, operation, refs, row counts
    Snapshots {
        #[command(flatten)]
        table: TableArgs,
        #[command(flatten)]
        out: ListOutput,
    },
    /// Show a snapshot's schema: field ids, names, types, required, defaults
    Schema {
        #[command(flatten)]
        table: TableArgs,
        #[command(flatten)]
        at: SnapshotArgs,
        #[command(flatten)]
        out: ListOutput,
    },
    /// List a snapshot's data files with the deletes that apply to each
    Files {
        #[command(flatten)]
        table: TableArgs,
        #[command(flatten)]
        at: SnapshotArgs,
        #[command(flatten)]
        filter: filter::FilterArgs,
        #[command(flatten)]
        out: ListOutput,
    },
    /// Print a snapshot's live rows as CSV, JSON Lines or Parquet
    Cat {
        #[command(flatten)]
        table: TableArgs,
        #[command(flatten)]
        at: SnapshotArgs,
        #[command(flatten)]
        filter: filter::FilterArgs,
        #[command(flatten)]
        out: CatOutput,
    },
    /// Print the rows that changed between two snapshots (matched by _row_id, or by --key)
    Changes(changes::ChangesArgs),
    /// Every readable version of rows (by --row-id or --where), oldest first, and when each
    /// stops being readable under snapshot retention
    History(history::HistoryArgs),
    /// Dry run of snapshot expiry: the snapshots, refs and files an expiry at --now removes
    Retention(retention::RetentionArgs),
    /// List files under the table location that no metadata references (nothing is deleted)
    Orphans(orphans::OrphansArgs),
    /// Query tables with SQL (DataFusion): time travel, the change feed and row history as
    /// table functions; a prompt with history when QUERY is omitted on a terminal
    #[cfg(feature = "sql")]
    Sql(sql::SqlArgs),
    /// Query tables with SQL (not in this build: cargo build --release -p icefloe-cli
    /// --features sql)
    #[cfg(not(feature = "sql"))]
    #[command(disable_help_flag = true)]
    Sql {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        args: Vec<String>,
    },
    /// Run the scheduler of an Icefloe cluster (Apache DataFusion Ballista): it plans the
    /// queries of `icefloe sql --cluster` and hands their tasks to executors
    #[cfg(feature = "cluster")]
    Scheduler(cluster::SchedulerArgs),
    /// Run an executor of an Icefloe cluster: it registers with a scheduler and reads the
    /// files of its tasks with its own storage credentials
    #[cfg(feature = "cluster")]
    Executor(cluster::ExecutorArgs),
    /// Run the scheduler of an Icefloe cluster (not in this build: cargo build --release -p
    /// icefloe-cli --features cluster)
    #[cfg(not(feature = "cluster"))]
    #[command(disable_help_flag = true)]
    Scheduler {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        args: Vec<String>,
    },
    /// Run an executor of an Icefloe cluster (not in this build: cargo build --release -p
    /// icefloe-cli --features cluster)
    #[cfg(not(feature = "cluster"))]
    #[command(disable_help_flag = true)]
    Executor {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        args: Vec<String>,
    },
    /// List a catalog's tables (with --catalog), in NAMESPACE and below or in all namespaces
    Tables {
        /// The namespace (dotted: a.b); default: every namespace
        namespace: Option<String>,
    },
    /// Mount a table or a warehouse of tables as a read-only file system
    #[command(
        long_about = "Mount a table or a warehouse of tables as a read-only file system: \
        every snapshot's rows as CSV and Parquet files, refs as symlinks, new snapshots \
        appearing as they are committed."
    )]
    Mount(mount::MountArgs),
    /// Print a shell completion script (bash, zsh or fish)
    #[command(
        after_help = "Bash: icefloe completions bash > ~/.local/share/bash-completion/completions/icefloe\n\
                      Zsh:  icefloe completions zsh > \"${fpath[1]}/_icefloe\"\n\
                      Fish: icefloe completions fish > ~/.config/fish/completions/icefloe.fish"
    )]
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: generate::Shell,
    },
    /// Print the manual page (icefloe man > icefloe.1; man ./icefloe.1)
    Man {
        /// Write icefloe.1 and a page per subcommand (icefloe-cat.1 …) into DIR instead
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
}

impl Command {
    /// Makes the subcommand's TABLE a table of catalog `name`.
    fn set_catalog(&mut self, name: &str) {
        match self {
            Command::Snapshots { table, .. }
            | Command::Schema { table, .. }
            | Command::Files { table, .. }
            | Command::Cat { table, .. } => table.catalog = Some(name.to_string()),
            Command::Changes(a) => a.table.catalog = Some(name.to_string()),
            Command::Retention(a) => a.table.catalog = Some(name.to_string()),
            Command::History(a) => a.table.catalog = Some(name.to_string()),
            Command::Orphans(a) => a.table.catalog = Some(name.to_string()),
            #[cfg(feature = "sql")]
            Command::Sql(a) => a.catalog = Some(name.to_string()),
            #[cfg(not(feature = "sql"))]
            Command::Sql { .. } => {}
            #[cfg(feature = "cluster")]
            Command::Scheduler(_) | Command::Executor(_) => {}
            #[cfg(not(feature = "cluster"))]
            Command::Scheduler { .. } | Command::Executor { .. } => {}
            Command::Tables { .. }
            | Command::Mount(_)
            | Command::Completions { .. }
            | Command::Man { .. } => {}
        }
    }
}

/// Output options of `cat`.
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "Output")]
struct CatOutput {
    /// Output format
    #[arg(long, value_enum, default_value = "csv")]
    format: Format,
    /// Put _row_id and _last_updated_sequence_number first
    #[arg(long)]
    lineage: bool,
    /// Only these columns, comma-separated, in this order
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    columns: Option<Vec<String>>,
    /// Write to FILE instead of standard output (with a progress bar on a terminal)
    #[arg(long, short, value_name = "FILE")]
    output: Option<std::path::PathBuf>,
}

fn main() -> ExitCode {
    malloc::keep_freed_memory();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ICEFLOE_LOG").unwrap_or_else(|_| {
                // The AWS profile loader's warnings repeat the error the command prints.
                tracing_subscriber::EnvFilter::new(
                    "warn,fuser=error,icefloe_fuse::sizing=info,aws_config=error",
                )
            }),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    // Panics inside libraries become one-line errors; no backtrace noise.
    icefloe_core::guard::install_quiet_panic_hook();
    // A catalog's or OAuth2 server's error message is quoted only when asked for: the URI may
    // reach a service that is not a catalog.
    icefloe_core::io::store_error::set_reply_excerpts(
        std::env::var("ICEFLOE_REPLY_EXCERPTS").is_ok_and(|v| v == "1"),
    );
    let mut cli = Cli::parse();
    if let Some(name) = &cli.catalog {
        cli.command.set_catalog(name);
    }
    let catalog = cli.catalog.clone();
    let result = match cli.command {
        // The mount runs its own runtime, so it starts outside this one.
        Command::Mount(args) => mount::mount(args, catalog.as_deref()),
        Command::Completions { shell } => generate::completions(shell),
        Command::Man { dir } => generate::man(dir.as_deref()),
        command => {
            if let Err(e) = interrupt::watch() {
                tracing::debug!("Ctrl-C keeps its default effect: {e}");
            }
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(|e| anyhow::anyhow!("cannot start runtime: {e}"))
                .and_then(|rt| rt.block_on(run(command, catalog.as_deref())))
        }
    };
    // A failed command prints its error alone, in one line; the warnings of what it read are
    // for a read that gave an answer (also to a reader that closed the pipe early).
    if result
        .as_ref()
        .map_or_else(report::is_broken_pipe, |_| true)
    {
        report::print_warnings();
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if report::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) if interrupt::is_cancelled(&e) => {
            eprintln!("icefloe: {}", report::message(&e));
            ExitCode::from(interrupt::EXIT_INTERRUPTED)
        }
        Err(e) => {
            eprintln!("icefloe: {}", report::message(&e));
            ExitCode::FAILURE
        }
    }
}

/// Runs a command that reads a table.
async fn run(command: Command, catalog: Option<&str>) -> anyhow::Result<()> {
    match command {
        Command::Tables { namespace } => match catalog {
            Some(name) => catalog::tables(name, namespace.as_deref()).await,
            None => anyhow::bail!("`icefloe tables` lists a catalog: give --catalog NAME"),
        },
        Command::Snapshots { table, out } => describe::snapshots(&table, out.format).await,
        Command::Schema { table, at, out } => describe::schema(&table, &at, out.format).await,
        Command::Files {
            table,
            at,
            filter,
            out,
        } => describe::files(&table, &at, &filter, out.format).await,
        Command::Cat {
            table,
            at,
            filter,
            out,
        } => {
            cat::cat(
                &table,
                &at,
                &filter,
                out.format,
                out.lineage,
                out.columns,
                out.output.as_deref(),
            )
            .await
        }
        Command::Changes(a) => changes::changes(a).await,
        Command::Retention(a) => retention::retention(a).await,
        Command::History(a) => history::history(a).await,
        Command::Orphans(a) => orphans::orphans(a).await,
        #[cfg(feature = "sql")]
        Command::Sql(a) => sql::sql(a).await,
        #[cfg(not(feature = "sql"))]
        Command::Sql { .. } => anyhow::bail!(
            "this icefloe was built without SQL: build it with `cargo build --release -p icefloe-cli --features sql`"
        ),
        #[cfg(feature = "cluster")]
        Command::Scheduler(a) => cluster::scheduler(a).await,
        #[cfg(feature = "cluster")]
        Command::Executor(a) => cluster::executor(a).await,
        #[cfg(not(feature = "cluster"))]
        Command::Scheduler { .. } | Command::Executor { .. } => anyhow::bail!(
            "this icefloe was built without the cluster: build it with `cargo build --release -p icefloe-cli --features cluster`"
        ),
        Command::Mount(_) | Command::Completions { .. } | Command::Man { .. } => {
            unreachable!("run outside the runtime")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definitions_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn version_names_the_format_versions_the_core_reads() {
        let max = icefloe_core::spec::metadata::MAX_FORMAT_VERSION;
        let list: Vec<String> = (1..=max).map(|v| v.to_string()).collect();
        let (last, rest) = list.split_last().unwrap();
        let want = format!("format versions {} and {last}", rest.join(", "));
        assert!(VERSION.contains(&want), "{VERSION} vs {want}");
    }
}
