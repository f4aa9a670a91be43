//! Parquet footers kept between reads of the same data file. Data files never change once
//! written (spec: files are immutable and tracked by path), so a footer read once, page index
//! included, serves every later scan of the file: a point lookup then reads only the pages it
//! needs. A local file whose size is no longer the one its footer was read at is read again:
//! a file replaced in place (against the spec) is never decoded with another file's footer.

use std::sync::Arc;

use moka::future::Cache;
use parquet::arrow::arrow_reader::ArrowReaderMetadata;

use super::parquet::{open_parquet_with, OpenedParquet, StoreFileReader};
use super::TableIo;

/// A footer as [`crate::cache::Caches::parquet_footers`] keeps it: the decoded metadata and the
/// object's real size in bytes (what range reads are bounded by).
pub struct Footer {
    /// The footer, with the page index when it was read with one.
    pub metadata: ArrowReaderMetadata,
    /// The object's size when the footer was read.
    pub size: u64,
}

impl Footer {
    /// Approximate bytes held, for the cache's weigher.
    pub fn weight(&self) -> usize {
        self.metadata.metadata().memory_size() + 64
    }
}

/// Like [`open_parquet_with`], through `cache`: a footer read before (with a page index when
/// `page_index` asks for one) is reused without a request. Errors as `open_parquet_with`, and a
/// local path that is not a regular file.
pub async fn open_parquet_cached(
    io: &TableIo,
    cache: &Cache<String, Arc<Footer>>,
    written: &str,
    recorded_size: i64,
    page_index: bool,
) -> crate::Result<OpenedParquet> {
    let (store, path, shown) = io.file(written)?;
    let local_size = io.local_size(written)?;
    let key = |with_index: bool| format!("{shown}\u{0}{recorded_size}\u{0}{with_index}");
    // A footer read with its page index also serves reads that need none.
    let wanted = if page_index {
        &[true][..]
    } else {
        &[false, true][..]
    };
    for &with_index in wanted {
        let Some(footer) = cache.get(&key(with_index)).await else {
            continue;
        };
        if local_size.is_some_and(|s| s != footer.size) {
            cache.invalidate(&key(with_index)).await;
            continue;
        }
        let remote = !super::location::Location::parse(&shown).is_local();
        return Ok(OpenedParquet {
            reader: StoreFileReader::new(store, path, footer.size)
                .with_ranged(remote.then(|| io.ranged_fetch().clone())),
            metadata: footer.metadata.clone(),
            remote,
            slice_bytes: io.read_slice_bytes(),
        });
    }
    let opened = open_parquet_with(io, written, recorded_size, page_index).await?;
    let footer = Footer {
        metadata: opened.metadata.clone(),
        size: opened.reader.size(),
    };
    cache.insert(key(page_index), Arc::new(footer)).await;
    cache.run_pending_tasks().await;
    Ok(opened)
}
