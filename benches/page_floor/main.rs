//! The floor under any reader of whole rows from Parquet data files: read each file into
//! memory and decompress every page of every column chunk, without decoding values.
//!
//! `benches/change_feed.sh` runs it over the data files a change range touches, beside
//! `icefloe changes` and `icefloe cat`, so the change feed's ratio to a full cat can be
//! compared with the ratio this floor already costs.
//!
//!   page_floor FILE.parquet...    # prints seconds and uncompressed megabytes
//!
//! Column chunks are shared out to one thread per core, as the core's scan does.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use bytes::Bytes;
use parquet::file::reader::{FileReader, SerializedFileReader};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        return Err("usage: page_floor FILE.parquet...".into());
    }
    let started = Instant::now();
    let mut chunks = Vec::new();
    for path in &paths {
        let bytes = Bytes::from(std::fs::read(path).map_err(|e| format!("{path}: {e}"))?);
        let reader =
            SerializedFileReader::new(bytes.clone()).map_err(|e| format!("{path}: {e}"))?;
        for (group, meta) in reader.metadata().row_groups().iter().enumerate() {
            for column in 0..meta.num_columns() {
                chunks.push((path.clone(), bytes.clone(), group, column));
            }
        }
    }
    let chunks = Mutex::new(chunks);
    let uncompressed = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|scope| -> Result<(), String> {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| -> Result<(), String> {
                    loop {
                        let next = chunks.lock().expect("chunk queue").pop();
                        let Some((path, bytes, group, column)) = next else {
                            return Ok(());
                        };
                        let fail = |e: parquet::errors::ParquetError| format!("{path}: {e}");
                        let reader = SerializedFileReader::new(bytes).map_err(fail)?;
                        let mut pages = reader
                            .get_row_group(group)
                            .map_err(fail)?
                            .get_column_page_reader(column)
                            .map_err(fail)?;
                        while let Some(page) = pages.get_next_page().map_err(fail)? {
                            uncompressed.fetch_add(page.buffer().len(), Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().expect("page_floor worker"))
    })?;
    println!(
        "{:.3} {}",
        started.elapsed().as_secs_f64(),
        uncompressed.load(Ordering::Relaxed) / 1_000_000
    );
    Ok(())
}
