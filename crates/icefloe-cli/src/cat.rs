//! `icefloe cat`: stream a snapshot's live rows as CSV, JSON Lines or Parquet.

use std::io::{BufWriter, IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use anyhow::{Context, Result};
use futures::StreamExt;
use icefloe_core::encode::{BatchWriter, Encoding};
use icefloe_core::Scan;

use crate::args::{Format, SnapshotArgs, TableArgs};
use crate::filter::FilterArgs;
use crate::progress::{Counting, Progress};

/// The core's writer of `format` for batches of `schema`.
pub(crate) fn encoder<W: Write + Send>(
    format: Format,
    w: W,
    schema: &arrow::datatypes::SchemaRef,
) -> icefloe_core::Result<BatchWriter<W>> {
    let encoding = match format {
        Format::Csv => Encoding::Csv,
        Format::Jsonl => Encoding::Jsonl,
        Format::Parquet => Encoding::Parquet,
    };
    BatchWriter::new(encoding, w, schema)
}

/// Runs `icefloe cat`.
pub async fn cat(
    t: &TableArgs,
    at: &SnapshotArgs,
    filter: &FilterArgs,
    format: Format,
    lineage: bool,
    columns: Option<Vec<String>>,
    output: Option<&Path>,
) -> Result<()> {
    let builder = filter.apply(Scan::builder())?;
    let table = t.open().await?;
    let mut builder = builder.snapshot(at.selector()?).lineage(lineage);
    if let Some(c) = columns {
        builder = builder.columns(c);
    }
    let scan = builder.build(&table)?;
    let tasks = scan.plan_files().await?;
    // Every delete file is loaded and checked before the first row is written, so a damaged
    // one fails the command before any output.
    scan.load_deletes(&tasks).await?;
    let (sink, temp) = Sink::open(output, format)?;
    let bytes = Arc::new(AtomicU64::new(0));
    let progress = Progress::new(&tasks, output.is_some(), bytes.clone());
    let w = Counting {
        inner: BufWriter::with_capacity(1 << 20, sink),
        bytes,
    };
    let schema = scan.schema();
    let mut enc = encoder(format, w, &schema)?;
    let mut stream = scan.read_tasks(tasks);
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        enc.write(&batch)?;
        progress.add(batch.num_rows());
    }
    let mut w = enc.finish()?;
    w.flush().context("cannot write output")?;
    drop(w);
    Sink::persist(temp, output)?;
    progress.finish();
    Ok(())
}

/// Where output goes: standard output, or a temporary file beside FILE renamed over it only
/// once complete, so that an error never leaves a file that looks whole.
pub(crate) struct Sink;

impl Sink {
    /// The writer for `output` (standard output when `None`) and its temporary file.
    pub(crate) fn open(
        output: Option<&Path>,
        format: Format,
    ) -> Result<(Box<dyn Write + Send>, Option<tempfile::NamedTempFile>)> {
        match output {
            Some(p) => {
                let dir = match p.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d,
                    _ => Path::new("."),
                };
                let t = tempfile::Builder::new()
                    .prefix(".icefloe-")
                    .suffix(".partial")
                    .tempfile_in(dir)
                    .with_context(|| {
                        format!("cannot create a temporary file in {}", dir.display())
                    })?;
                let f = t
                    .as_file()
                    .try_clone()
                    .with_context(|| format!("cannot create {}", p.display()))?;
                Ok((Box::new(f), Some(t)))
            }
            None => {
                if format == Format::Parquet && std::io::stdout().is_terminal() {
                    anyhow::bail!(
                        "refusing to write Parquet to a terminal: use --output FILE or a pipe"
                    );
                }
                Ok((Box::new(std::io::stdout()), None))
            }
        }
    }

    /// Renames the complete temporary file over `output`.
    pub(crate) fn persist(
        temp: Option<tempfile::NamedTempFile>,
        output: Option<&Path>,
    ) -> Result<()> {
        if let (Some(t), Some(p)) = (temp, output) {
            // A temporary file is private (0600); the output gets the mode of the file it
            // replaces, or the usual 0644.
            let mode = std::fs::metadata(p)
                .map(|m| m.permissions())
                .unwrap_or_else(|_| std::os::unix::fs::PermissionsExt::from_mode(0o644));
            t.as_file()
                .set_permissions(mode)
                .with_context(|| format!("cannot write {}", p.display()))?;
            t.as_file()
                .sync_all()
                .with_context(|| format!("cannot write {}", p.display()))?;
            t.persist(p)
                .with_context(|| format!("cannot rename the output to {}", p.display()))?;
        }
        Ok(())
    }
}
