//! The files of `changes/<from>..<to>/` and `retention.csv`, from the core's history API:
//! the change feed is rendered once per file into the spill directory (its size is only known
//! once written, and its cost grows with the change, not the table); the retention dry run is
//! evaluated at the time it is read.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use icefloe_core::encode::BatchWriter;
use icefloe_core::history::retention::{ExpiryRun, Overrides, Policy};
use icefloe_core::history::ChangeFeed;
use icefloe_core::Table;

use crate::error::{FuseError, Result};
use crate::spill::{SpillFile, SpillStore};
use crate::tree::ChangeFile;

/// The change file `file` of the range `from..to` of table `t`, rendered on first use.
pub async fn change_file(
    spill: &SpillStore,
    table: &Table,
    t: usize,
    (from, to): (i64, i64),
    file: ChangeFile,
) -> Result<Arc<SpillFile>> {
    let name = format!("t{t}-changes-{from}-{to}-{}", file.name());
    spill
        .get_or_render(name, |path| render(path, table, from, to, file))
        .await
}

async fn render(path: PathBuf, table: &Table, from: i64, to: i64, f: ChangeFile) -> Result<File> {
    let feed = ChangeFeed::builder()
        .from_snapshot(from)
        .to_snapshot(to)
        .net(f.net)
        .build(table)?;
    let batches = feed.batches().await?;
    let io = |e| FuseError::io(format!("cannot write spill file {}", path.display()), e);
    let file = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(io)?;
    let mut w = BatchWriter::new(
        f.encoding,
        BufWriter::with_capacity(1 << 20, file),
        &feed.schema(),
    )?;
    for b in &batches {
        w.write(b)?;
    }
    w.finish()?.into_inner().map_err(|e| io(e.into_error()))
}

/// `retention.csv`: the core's dry run of snapshot expiry under the table's own settings, at
/// the time of the call, as `icefloe retention --format csv` lists it.
pub async fn retention_csv(table: &Table) -> Result<Bytes> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let run = ExpiryRun::evaluate(table, Policy::Iceberg, Overrides::default(), now)
        .await?
        .with_readable_rows(table)
        .await?;
    Ok(Bytes::from(run.listing(table.metadata()).to_csv()))
}
