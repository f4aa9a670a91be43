//! `icefloe sql`: SQL over Iceberg tables (DataFusion through icefloe-datafusion), its result
//! printed as a terminal table, CSV, JSON Lines or Parquet. The tables come from `--table
//! NAME=TABLE` (opened as every other command opens its TABLE), a directory warehouse
//! (`--warehouse`) or the REST catalog of `--catalog`; the query from the command line,
//! standard input, or a prompt with history on a terminal ([`crate::sql_prompt`]).

use std::io::{BufWriter, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use futures::StreamExt;
use icefloe_core::catalog::{Catalog, Warehouse};
use icefloe_core::encode::{BatchWriter, ColumnEncoder, Encoding, Flavor};
use icefloe_core::listing::Listing;
use icefloe_datafusion::output::{writable_batch, writable_schema};
use icefloe_datafusion::{ExtraColumns, IcefloeSession};

use crate::args::{OpenArgs, StorageArgs};
use crate::cat::Sink;

/// Arguments of `icefloe sql`.
#[derive(clap::Args, Debug)]
pub struct SqlArgs {
    /// The SQL (one statement or several, `;`-separated); without it, read from standard
    /// input, or from a prompt with history on a terminal
    #[arg(value_name = "QUERY")]
    pub query: Option<String>,
    /// A table to query as NAME: TABLE is a table's root directory, one of its metadata
    /// files, or a URL of either (repeatable)
    #[arg(long = "table", value_name = "NAME=TABLE", value_parser = parse_table)]
    pub tables: Vec<(String, String)>,
    /// A directory warehouse (namespace/table directories, also in an object store): its
    /// tables are namespace.table
    #[arg(long, value_name = "DIR")]
    pub warehouse: Option<String>,
    /// Show _row_id and _last_updated_sequence_number as the first columns of every table
    /// (DataFusion has no hidden columns: they are then in SELECT *)
    #[arg(long)]
    pub lineage: bool,
    /// Show the metadata columns _file, _pos, _spec_id and _partition as the last columns of
    /// every table (then in SELECT *)
    #[arg(long)]
    pub metadata_columns: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t, help_heading = "Output")]
    pub format: SqlFormat,
    /// Write to FILE instead of standard output
    #[arg(long, short, value_name = "FILE", help_heading = "Output")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub open: OpenArgs,
    /// Run the query on an Icefloe cluster: the scheduler at HOST:PORT (`icefloe scheduler`)
    /// plans it, its executors (`icefloe executor`) read the tables with their own storage
    /// credentials
    #[cfg(feature = "cluster")]
    #[arg(long, value_name = "HOST:PORT")]
    pub cluster: Option<String>,
    /// The catalog (`--catalog`) whose namespaces are schemas.
    #[arg(skip)]
    pub catalog: Option<String>,
}

/// Output format of `icefloe sql`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SqlFormat {
    /// A table sized to the terminal, long cells cut with an ellipsis (NULL is an empty cell)
    #[default]
    #[value(alias = "text")]
    Table,
    /// RFC 4180 CSV with a header
    Csv,
    /// One JSON object per row
    Jsonl,
    /// Parquet (one statement's result)
    Parquet,
}

/// `NAME=TABLE` of `--table`.
fn parse_table(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, table)) if !name.is_empty() && !table.is_empty() => {
            Ok((name.to_string(), table.to_string()))
        }
        _ => Err(format!("expected NAME=TABLE, got {s:?}")),
    }
}

/// Runs `icefloe sql`.
pub async fn sql(a: SqlArgs) -> Result<()> {
    let session = open_session(&a).await?;
    match &a.query {
        Some(q) => run_text(&session, q, a.format, a.output.as_deref()).await,
        None if std::io::stdin().is_terminal() => {
            if a.output.is_some() {
                bail!("--output takes the result of a QUERY given on the command line or on standard input, not of the prompt");
            }
            crate::sql_prompt::prompt(&session, a.format).await
        }
        None => {
            let mut q = String::new();
            std::io::stdin()
                .read_to_string(&mut q)
                .context("cannot read the query from standard input")?;
            run_text(&session, &q, a.format, a.output.as_deref()).await
        }
    }
}

/// A session with the tables and catalogs `a` names.
async fn open_session(a: &SqlArgs) -> Result<IcefloeSession> {
    let extra = ExtraColumns {
        lineage: a.lineage,
        metadata: a.metadata_columns,
    };
    #[cfg(feature = "cluster")]
    let session = match &a.cluster {
        Some(scheduler) => crate::cluster::remote_session(scheduler, &a.storage, extra).await?,
        None => IcefloeSession::new(extra),
    };
    #[cfg(not(feature = "cluster"))]
    let session = IcefloeSession::new(extra);
    if let Some(name) = &a.catalog {
        if a.open.is_set() {
            bail!("--metadata-file, --table-uuid, --latest-by-last-updated-ms and --path-map choose files of a table path; a catalog's tables are loaded as the catalog says");
        }
        let c = crate::catalog::connect(name, a.storage.config_for(None)?).await?;
        session.register_catalog(name, Arc::new(c)).await?;
    }
    if let Some(dir) = &a.warehouse {
        let opts = a.open.options(a.storage.config_for(Some(dir))?);
        let w = Warehouse::new(dir, opts, icefloe_core::cache::Caches::global())?;
        session
            .register_catalog("warehouse", Arc::new(w) as Arc<dyn Catalog>)
            .await?;
    }
    for (name, location) in &a.tables {
        let opts = a.open.options(a.storage.config_for(Some(location))?);
        let t = crate::open::open(location, &opts)
            .await
            .with_context(|| format!("--table {name}"))?;
        crate::report::opened(&t);
        session.register_table(name, t)?;
    }
    Ok(session)
}

/// Runs the statements of `query`, printing each result in turn.
pub async fn run_text(
    session: &IcefloeSession,
    query: &str,
    format: SqlFormat,
    output: Option<&std::path::Path>,
) -> Result<()> {
    let statements = session.parse(query)?;
    if statements.is_empty() {
        bail!("no SQL statement given");
    }
    if format == SqlFormat::Parquet && statements.len() > 1 {
        bail!(
            "Parquet output holds one result: give one statement, not {}",
            statements.len()
        );
    }
    let encoding = match format {
        SqlFormat::Table => None,
        SqlFormat::Csv => Some(Encoding::Csv),
        SqlFormat::Jsonl => Some(Encoding::Jsonl),
        SqlFormat::Parquet => Some(Encoding::Parquet),
    };
    let parquet_or_csv = match format {
        SqlFormat::Parquet => crate::args::Format::Parquet,
        _ => crate::args::Format::Csv,
    };
    let (sink, temp) = Sink::open(output, parquet_or_csv)?;
    let mut w = BufWriter::with_capacity(1 << 20, sink);
    for statement in statements {
        let df = session.execute(statement).await?;
        let mut stream = df.execute_stream().await?;
        let schema = writable_schema(&stream.schema());
        match encoding {
            Some(encoding) => {
                let mut enc = BatchWriter::new(encoding, &mut w, &schema)?;
                while let Some(b) = stream.next().await {
                    enc.write(&writable_batch(&b?, &schema)?)?;
                }
                enc.finish()?;
            }
            None => {
                let width = output
                    .is_none()
                    .then(crate::render::terminal_width)
                    .flatten();
                let mut table = TerminalTable::new(&schema, width);
                while let Some(b) = stream.next().await {
                    table.push(&writable_batch(&b?, &schema)?, &mut w)?;
                }
                table.finish(&mut w)?;
            }
        }
    }
    w.flush().context("cannot write output")?;
    drop(w);
    Sink::persist(temp, output)
}

/// A result shown as a terminal table ([`crate::render::to_terminal`]), its cells as CSV
/// writes them (NULL empty), laid out [`crate::render::TEXT_CHUNK`] rows at a time (the header
/// once), so that memory stays bounded.
struct TerminalTable {
    labels: Vec<String>,
    rows: Vec<Vec<String>>,
    schema: arrow::datatypes::SchemaRef,
    width: Option<u16>,
    printed: bool,
}

impl TerminalTable {
    fn new(schema: &arrow::datatypes::SchemaRef, width: Option<u16>) -> Self {
        TerminalTable {
            labels: schema.fields().iter().map(|f| f.name().clone()).collect(),
            rows: Vec::new(),
            schema: schema.clone(),
            width,
            printed: false,
        }
    }

    fn push(&mut self, b: &arrow::record_batch::RecordBatch, w: &mut impl Write) -> Result<()> {
        let mut encoders = b
            .columns()
            .iter()
            .zip(self.schema.fields())
            .map(|(c, f)| ColumnEncoder::try_new(c.as_ref(), f, Flavor::Text))
            .collect::<icefloe_core::Result<Vec<_>>>()?;
        let mut buf = Vec::new();
        for row in 0..b.num_rows() {
            let mut cells = Vec::with_capacity(encoders.len());
            for e in &mut encoders {
                buf.clear();
                e.encode(row, &mut buf);
                cells.push(String::from_utf8_lossy(&buf).into_owned());
            }
            self.rows.push(cells);
            if self.rows.len() >= crate::render::TEXT_CHUNK {
                self.flush(w)?;
            }
        }
        Ok(())
    }

    /// Prints the rows held (the header with the first chunk only).
    fn flush(&mut self, w: &mut impl Write) -> Result<()> {
        let columns: Vec<(usize, &str)> = self
            .labels
            .iter()
            .enumerate()
            .map(|(i, l)| (i, l.as_str()))
            .collect();
        let listing = Listing {
            header: self.labels.clone(),
            rows: std::mem::take(&mut self.rows),
        };
        let text = crate::render::to_terminal(&listing, &columns, self.width);
        if self.printed {
            for line in text.lines().skip(2) {
                writeln!(w, "{line}")?;
            }
        } else {
            w.write_all(text.as_bytes())?;
        }
        self.printed = true;
        Ok(())
    }

    /// Prints what is left (the whole table when it never reached a chunk).
    fn finish(mut self, w: &mut impl Write) -> Result<()> {
        if !self.printed || !self.rows.is_empty() {
            self.flush(w)?;
        }
        Ok(())
    }
}
