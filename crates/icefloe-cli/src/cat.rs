//! `icefloe cat`: stream a snapshot's live rows as CSV, JSON Lines or Parquet.

use std::io::{BufWriter, IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use anyhow::{Context, Result};
use futures::StreamExt;
use icefloe_core::encode::csv::CsvWriter;
use icefloe_core::encode::jsonl::JsonLinesWriter;
use icefloe_core::encode::parquet::ParquetWriter;
use icefloe_core::Scan;

use crate::args::{Format, SnapshotArgs, TableArgs};
use crate::progress::{Counting, Progress};

/// One of the core's encoders behind one face.
enum Encoder<W: Write + Send> {
    Csv(CsvWriter<W>),
    Jsonl(JsonLinesWriter<W>),
    Parquet(Box<ParquetWriter<W>>),
}

impl<W: Write + Send> Encoder<W> {
    fn write(&mut self, b: &arrow::record_batch::RecordBatch) -> icefloe_core::Result<()> {
        match self {
            Encoder::Csv(w) => w.write_batch(b),
            Encoder::Jsonl(w) => w.write_batch(b),
            Encoder::Parquet(w) => w.write_batch(b),
        }
    }

    fn finish(self) -> icefloe_core::Result<W> {
        match self {
            Encoder::Csv(w) => w.finish(),
            Encoder::Jsonl(w) => w.finish(),
            Encoder::Parquet(w) => w.finish(),
        }
    }
}

/// Runs `icefloe cat`.
pub async fn cat(
    t: &TableArgs,
    at: &SnapshotArgs,
    format: Format,
    lineage: bool,
    columns: Option<Vec<String>>,
    output: Option<&Path>,
) -> Result<()> {
    let table = t.open().await?;
    let mut builder = Scan::builder().snapshot(at.selector()?).lineage(lineage);
    if let Some(c) = columns {
        builder = builder.columns(c);
    }
    let scan = builder.build(&table)?;
    let tasks = scan.plan_files().await?;
    let sink: Box<dyn Write + Send> = match output {
        Some(p) => Box::new(
            std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        ),
        None => {
            if format == Format::Parquet && std::io::stdout().is_terminal() {
                anyhow::bail!(
                    "refusing to write Parquet to a terminal: use --output FILE or a pipe"
                );
            }
            Box::new(std::io::stdout())
        }
    };
    let bytes = Arc::new(AtomicU64::new(0));
    let progress = Progress::new(&tasks, output.is_some(), bytes.clone());
    let w = Counting {
        inner: BufWriter::with_capacity(1 << 20, sink),
        bytes,
    };
    let schema = scan.schema();
    let mut enc = match format {
        Format::Csv => Encoder::Csv(CsvWriter::new(w, &schema)),
        Format::Jsonl => Encoder::Jsonl(JsonLinesWriter::new(w)),
        Format::Parquet => Encoder::Parquet(Box::new(ParquetWriter::new(w, &schema)?)),
    };
    let mut stream = scan.read_tasks(tasks);
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        enc.write(&batch)?;
        progress.add(batch.num_rows());
    }
    let mut w = enc.finish()?;
    w.flush().context("cannot write output")?;
    progress.finish();
    Ok(())
}
