//! Parquet files read through `object_store` by the async Arrow reader: an
//! `AsyncFileReader` over our store. The footer comes from one suffix request, which also tells
//! the object's real size: a manifest's `file_size_in_bytes` can disagree with the object (files
//! rewritten or copied by other tools), and a footer read at a wrong offset must never happen.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::FutureExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::arrow::async_reader::{AsyncFileReader, ParquetRecordBatchStreamBuilder};
use parquet::errors::ParquetError;
use parquet::file::metadata::PageIndexPolicy;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};

use super::ranged::RangedFetch;
use super::TableIo;

/// Bytes fetched from the end of a file in the first request (footer and, usually, metadata).
const FOOTER_PREFETCH: usize = 64 * 1024;

/// The same for a file in an object store, where a second round trip costs more than the
/// bytes: enough for the footer and the page index of most files.
const REMOTE_FOOTER_PREFETCH: usize = 512 * 1024;

/// An `AsyncFileReader` for one file of a store.
#[derive(Debug, Clone)]
pub struct StoreFileReader {
    store: Arc<dyn ObjectStore>,
    path: Path,
    /// The object's real size.
    size: u64,
    /// The last bytes of the object, fetched when it was opened; ranges inside are served
    /// from memory.
    tail: Bytes,
    /// For an object in a remote store: its ranges are fetched as coalesced and split
    /// requests within the table's budget ([`super::ranged`]); `None`: as asked.
    ranged: Option<RangedFetch>,
}

impl StoreFileReader {
    /// A reader of `path` in `store`, an object of `size` bytes, with nothing prefetched.
    pub fn new(store: Arc<dyn ObjectStore>, path: Path, size: u64) -> StoreFileReader {
        StoreFileReader {
            store,
            path,
            size,
            tail: Bytes::new(),
            ranged: None,
        }
    }

    /// Fetches ranges through `ranged` (a file in an object store).
    pub fn with_ranged(mut self, ranged: Option<RangedFetch>) -> StoreFileReader {
        self.ranged = ranged;
        self
    }

    /// How its ranges are fetched: `Some` for an object in a remote store.
    pub fn ranged(&self) -> Option<&RangedFetch> {
        self.ranged.as_ref()
    }

    /// The object's real size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    fn cached(&self, range: &Range<u64>) -> Option<Bytes> {
        let start = self.size - self.tail.len() as u64;
        (range.start >= start && range.end <= self.size).then(|| {
            self.tail
                .slice((range.start - start) as usize..(range.end - start) as usize)
        })
    }
}

/// A store error as the Parquet reader carries it: what the store said, without any reply
/// body ([`super::store_error`]).
fn to_parquet_err(path: &Path, e: object_store::Error) -> ParquetError {
    ParquetError::General(super::store_error::store_reason(path.as_ref(), &e))
}

impl AsyncFileReader for StoreFileReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        async move {
            if let Some(b) = self.cached(&range) {
                return Ok(b);
            }
            match &self.ranged {
                Some(ranged) => ranged
                    .get_ranges(&self.store, &self.path, std::slice::from_ref(&range))
                    .await
                    .map(|mut v| v.remove(0)),
                None => self.store.get_range(&self.path, range).await,
            }
            .map_err(|e| to_parquet_err(&self.path, e))
        }
        .boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, parquet::errors::Result<Vec<Bytes>>> {
        async move {
            // Ranges inside the prefetched tail are served from it.
            let cached: Vec<Option<Bytes>> = ranges.iter().map(|r| self.cached(r)).collect();
            let missing: Vec<Range<u64>> = ranges
                .iter()
                .zip(&cached)
                .filter(|(_, c)| c.is_none())
                .map(|(r, _)| r.clone())
                .collect();
            let mut fetched = if missing.is_empty() {
                Vec::new()
            } else {
                match &self.ranged {
                    Some(ranged) => ranged.get_ranges(&self.store, &self.path, &missing).await,
                    None => self.store.get_ranges(&self.path, &missing).await,
                }
                .map_err(|e| to_parquet_err(&self.path, e))?
            }
            .into_iter();
            Ok(cached
                .into_iter()
                .map(|c| c.unwrap_or_else(|| fetched.next().expect("one buffer per range")))
                .collect())
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, parquet::errors::Result<Arc<ParquetMetaData>>> {
        async move {
            let size = self.size;
            let metadata = ParquetMetaDataReader::new()
                .with_arrow_reader_options(options)
                .with_prefetch_hint(Some(self.tail.len()))
                .load_and_finish(self, size)
                .await?;
            Ok(Arc::new(metadata))
        }
        .boxed()
    }
}

/// An opened Parquet file: the reader of its object and its footer, from which any number of
/// streams over parts of the file are built without fetching the footer again.
#[derive(Debug, Clone)]
pub struct OpenedParquet {
    /// Reads the object's byte ranges.
    pub reader: StoreFileReader,
    /// The footer (with the page index when asked for) and the Arrow schema.
    pub metadata: ArrowReaderMetadata,
    /// Whether the file is in an object store (not a local file).
    pub remote: bool,
    /// Read-ahead slice size for it ([`super::readahead`]; 0: row groups whole).
    pub slice_bytes: u64,
}

impl OpenedParquet {
    /// A stream builder over the whole file.
    pub fn builder(&self) -> ParquetRecordBatchStreamBuilder<StoreFileReader> {
        ParquetRecordBatchStreamBuilder::new_with_metadata(
            self.reader.clone(),
            self.metadata.clone(),
        )
    }
}

/// Opens a Parquet file written at `written` (a path as recorded in a manifest). `size` is the
/// manifest's `file_size_in_bytes`: only compared with the object's real size, which is the one
/// used. Errors name the file: missing, or not Parquet.
pub async fn open_parquet(
    io: &TableIo,
    written: &str,
    size: i64,
) -> crate::Result<ParquetRecordBatchStreamBuilder<StoreFileReader>> {
    Ok(open_parquet_with(io, written, size, false).await?.builder())
}

/// Like [`open_parquet`], returning the opened file; with `page_index`, also reads the file's
/// page index (column and offset indexes, where written), for page pruning and for reading
/// only the pages a row selection needs.
pub async fn open_parquet_with(
    io: &TableIo,
    written: &str,
    size: i64,
    page_index: bool,
) -> crate::Result<OpenedParquet> {
    let (store, path, shown) = io.file(written)?;
    let remote = !super::location::Location::parse(&shown).is_local();
    // One request, like any other: at most a part.
    let prefetch = if remote {
        REMOTE_FOOTER_PREFETCH.min(io.ranged_fetch().part_bytes as usize)
    } else {
        FOOTER_PREFETCH
    };
    let (tail, real) = io.tail(written, prefetch as u64).await?;
    // The footer's length, in the 8 bytes before the closing magic: refused past its cap
    // before the footer is fetched (a corrupt length is the Parquet reader's error).
    if tail.len() >= 8 {
        let at = tail.len() - 8;
        let len = u32::from_le_bytes([tail[at], tail[at + 1], tail[at + 2], tail[at + 3]]);
        if &tail[at + 4..] == b"PAR1" && u64::from(len) > io.limits().footer_bytes {
            return Err(super::limits::Capped::Footer.too_large(&shown, io.limits()));
        }
    }
    if size != real as i64 {
        tracing::debug!(
            "{shown}: the manifest records {size} bytes but the object has {real}; using {real}"
        );
    }
    let mut reader = StoreFileReader {
        store,
        path,
        size: real,
        tail,
        ranged: remote.then(|| io.ranged_fetch().clone()),
    };
    let policy = |on: bool| {
        if on {
            PageIndexPolicy::Optional
        } else {
            PageIndexPolicy::Skip
        }
    };
    // A file in an object store is read in slices of pages, which its offset index locates
    // (super::readahead): it is read with the footer.
    let options = ArrowReaderOptions::new()
        .with_column_index_policy(policy(page_index))
        .with_offset_index_policy(policy(page_index || remote));
    let loaded = crate::guard::guarded(ArrowReaderMetadata::load_async(&mut reader, options)).await;
    let opened = match loaded {
        Ok(r) => r,
        Err(panic) => {
            return Err(crate::Error::data_file(
                &shown,
                format!("Parquet footer reader panicked: {panic}"),
            ))
        }
    };
    match opened {
        Ok(metadata) => {
            check_column_chunks(metadata.metadata())
                .map_err(|r| crate::Error::data_file(&shown, r))?;
            Ok(OpenedParquet {
                reader,
                metadata,
                remote,
                slice_bytes: io.read_slice_bytes(),
            })
        }
        // Tell a missing file apart from a corrupt one.
        Err(e) if !io.exists(written).await? => Err(crate::Error::NotFound {
            path: shown,
            reason: e.to_string(),
        }),
        Err(e) => Err(crate::Error::data_file(
            &shown,
            format!("not a readable Parquet file: {e}"),
        )),
    }
}

/// Refuses a footer whose column chunks start at a negative offset or have a negative size:
/// the Parquet reader asserts both when it reads the chunk.
fn check_column_chunks(m: &parquet::file::metadata::ParquetMetaData) -> Result<(), String> {
    for (g, rg) in m.row_groups().iter().enumerate() {
        for (c, col) in rg.columns().iter().enumerate() {
            let start = col
                .dictionary_page_offset()
                .unwrap_or_else(|| col.data_page_offset());
            let len = col.compressed_size();
            if start < 0 || len < 0 {
                return Err(format!(
                    "the footer's column chunk {c} ({}) of row group {g} starts at byte {start} \
                     with {len} bytes; neither may be negative",
                    col.column_path()
                ));
            }
        }
    }
    Ok(())
}
