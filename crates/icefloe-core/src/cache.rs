//! Process-wide caches of what is expensive to fetch and decode and never changes once
//! written: table metadata files, manifest lists, manifests, resolved delete bitmaps and
//! equality delete sets. Bounded by weight (approximate bytes), shared by all scans.

use std::future::Future;
use std::sync::{Arc, OnceLock};

use moka::future::Cache;
use roaring::RoaringTreemap;

use crate::delete::equality::EqualityDeleteSet;
use crate::io::footer_cache::Footer;
use crate::spec::{ManifestEntry, ManifestFile, TableMetadata};
use crate::warning::{Warning, Warnings};

/// Default total weight of all caches: 256 MiB.
pub const DEFAULT_CACHE_BYTES: u64 = 256 << 20;

/// The weight of one decoded manifest entry (about its size in memory).
pub const MANIFEST_ENTRY_WEIGHT: u64 = 512;

/// A decoded value and the rules its file breaks without changing what it reads, kept
/// together so that every table reading it from the cache reports them again
/// ([`get_or_load_checked`]).
pub struct Checked<T> {
    pub value: Arc<T>,
    pub warnings: Vec<Warning>,
}

/// The caches of one process. Keys are resolved file locations (store URL + path).
pub struct Caches {
    pub metadata: Cache<String, Arc<TableMetadata>>,
    pub manifest_lists: Cache<String, Arc<Checked<Vec<ManifestFile>>>>,
    pub manifests: Cache<String, Arc<Checked<Vec<ManifestEntry>>>>,
    /// Deleted positions of a data file, keyed by data file and the delete files applied.
    pub delete_bitmaps: Cache<String, Arc<Checked<RoaringTreemap>>>,
    pub equality_deletes: Cache<String, Arc<EqualityDeleteSet>>,
    /// Parquet footers of data files (crate::io::footer_cache), keyed by file and recorded size.
    pub parquet_footers: Cache<String, Arc<Footer>>,
}

static GLOBAL: OnceLock<Arc<Caches>> = OnceLock::new();

impl std::fmt::Debug for Caches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caches")
            .field("metadata", &self.metadata.entry_count())
            .field("manifests", &self.manifests.entry_count())
            .finish_non_exhaustive()
    }
}

impl Caches {
    /// Caches bounded to `bytes` in total: a tenth each for metadata and manifest lists, the
    /// rest split between manifests, the two kinds of delete data and Parquet footers.
    pub fn new(bytes: u64) -> Caches {
        let tenth = (bytes / 10).max(1 << 20);
        let rest = (bytes.saturating_sub(2 * tenth) / 4).max(1 << 20);
        Caches {
            metadata: Cache::builder()
                .max_capacity(tenth)
                .weigher(|_, v: &Arc<TableMetadata>| {
                    weight(64 * (v.snapshots.len() + v.schemas.len() + 16))
                })
                .build(),
            manifest_lists: Cache::builder()
                .max_capacity(tenth)
                .weigher(|_, v: &Arc<Checked<Vec<ManifestFile>>>| {
                    weight(256 * (v.value.len() + v.warnings.len() + 1))
                })
                .build(),
            manifests: Cache::builder()
                .max_capacity(rest)
                .weigher(|_, v: &Arc<Checked<Vec<ManifestEntry>>>| {
                    weight(MANIFEST_ENTRY_WEIGHT as usize * (v.value.len() + v.warnings.len() + 1))
                })
                .build(),
            delete_bitmaps: Cache::builder()
                .max_capacity(rest)
                .weigher(|_, v: &Arc<Checked<RoaringTreemap>>| {
                    weight(v.value.serialized_size() + 256 * v.warnings.len() + 64)
                })
                .build(),
            equality_deletes: Cache::builder()
                .max_capacity(rest)
                .weigher(|_, v: &Arc<EqualityDeleteSet>| weight(v.size_bytes() + 64))
                .build(),
            parquet_footers: Cache::builder()
                .max_capacity(rest)
                .weigher(|_, v: &Arc<Footer>| weight(v.weight()))
                .build(),
        }
    }

    /// The process-wide caches, created on first use with `init_global`'s size or the default.
    pub fn global() -> Arc<Caches> {
        GLOBAL
            .get_or_init(|| Arc::new(Caches::new(DEFAULT_CACHE_BYTES)))
            .clone()
    }

    /// Sets the size of the process-wide caches; no effect once they exist.
    pub fn init_global(bytes: u64) {
        let _ = GLOBAL.set(Arc::new(Caches::new(bytes)));
    }
}

fn weight(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Gets `key` from `cache`, or computes and stores it. Errors are returned, never cached.
pub async fn get_or_load<V, F>(
    cache: &Cache<String, Arc<V>>,
    key: String,
    load: F,
) -> crate::Result<Arc<V>>
where
    V: Send + Sync + 'static,
    F: Future<Output = crate::Result<V>>,
{
    if let Some(v) = cache.get(&key).await {
        return Ok(v);
    }
    let v = Arc::new(load.await?);
    cache.insert(key, v.clone()).await;
    // moka applies its bound in batches of writes; a few large values inserted quickly (the
    // manifests of one big snapshot) would otherwise all stay until the next batch.
    cache.run_pending_tasks().await;
    Ok(v)
}

/// [`get_or_load`] for a value kept with its warnings: `load` gives both, and the warnings are
/// reported to `warnings` whether the value was loaded or found in the cache. Errors: `load`'s,
/// or a warning when `warnings` is strict.
pub async fn get_or_load_checked<V, F>(
    cache: &Cache<String, Arc<Checked<V>>>,
    key: String,
    warnings: &Warnings,
    load: F,
) -> crate::Result<Arc<V>>
where
    V: Send + Sync + 'static,
    F: Future<Output = crate::Result<(V, Vec<Warning>)>>,
{
    let checked = get_or_load(cache, key, async {
        let (v, warnings) = load.await?;
        Ok(Checked {
            value: Arc::new(v),
            warnings,
        })
    })
    .await?;
    warnings.report_all(&checked.warnings)?;
    Ok(checked.value.clone())
}
