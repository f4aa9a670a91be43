//! Object storage for one table through `object_store`, with path relocation. A path written in
//! table metadata (parsed by [`Location::parse`], never percent-decoded) resolves, in order:
//! 1. through the caller's path map (`OLD=NEW` prefixes), taken as it is after that;
//! 2. relative paths: below the table root (`./t/data/x` under a relative recorded `./t`, or
//!    `data/x` relative to the root);
//! 3. below the recorded table `location`: the same place below where the table was opened;
//! 4. below the recorded warehouse (the recorded location minus the path components it shares
//!    at its end with the opened root): the same place below the opened warehouse, so that a
//!    warehouse copied elsewhere as a whole resolves files written outside the table directory;
//! 5. anything else where it is written, in its own store (scheme and bucket). A table opened
//!    in an object store never reads local files this way (its metadata could otherwise name
//!    any file of the machine reading it); only the caller's path map may lead there.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use super::config::{Ambient, StorageConfig};
use super::limits::{Capped, ReadLimits};

pub use super::location::Location;

/// A store plus the table root it was opened at. Cheap to clone.
#[derive(Clone, Debug)]
pub struct TableIo {
    store: Arc<dyn ObjectStore>,
    /// The opened store (scheme and authority; empty path).
    base: Location,
    /// The table root where it was opened, as a path inside the store (no trailing slash).
    root: String,
    /// The table root recorded in metadata (set once metadata is read).
    recorded: Option<Location>,
    /// Recorded warehouse root and the opened one (a path in this store), when they differ.
    warehouse: Option<(Location, String)>,
    /// Caller's prefix rewrites, first match wins.
    path_map: Arc<Vec<(Location, String)>>,
    /// Storage settings, for the other stores files may live in.
    storage: Arc<StorageConfig>,
    /// Read-ahead slice size of Parquet files in object stores (0: row groups whole).
    slice_bytes: u64,
    /// Caps on files read whole ([`ReadLimits`]).
    limits: ReadLimits,
    /// Request size and bytes in flight of data files in object stores, shared by every file.
    fetch: super::ranged::RangedFetch,
    /// Other stores opened for files outside this one, by [`Location::store_key`].
    others: Arc<Mutex<HashMap<String, Arc<dyn ObjectStore>>>>,
}

/// Where a written path resolved to.
struct Target {
    store: Arc<dyn ObjectStore>,
    path: Path,
    shown: String,
}

impl TableIo {
    /// Opens storage for `location`: a local path (relative to the working directory or
    /// absolute), or a `file:`, `s3://`, `s3a://`, `gs://`, `az://`, `abfs(s)://` URL. Cloud
    /// stores get no options (the process environment is not read: pass its variables with
    /// [`StorageConfig::with_env`] and [`TableIo::open_with_storage`]). Returns the store and
    /// `location` in a canonical written form (an absolute local path, or a URL), which the
    /// other methods take.
    pub fn open(location: &str) -> crate::Result<(TableIo, String)> {
        Self::open_with_options(location, &[])
    }

    /// Like [`TableIo::open`], with explicit storage settings: `object_store` configuration
    /// keys such as `aws_access_key_id`, `aws_region`, `aws_endpoint`,
    /// `google_service_account_key` or `azure_storage_account_key`, and the retry keys of
    /// [`super::config::RETRY_KEYS`]. Ignored for local files.
    pub fn open_with_options(
        location: &str,
        options: &[(String, String)],
    ) -> crate::Result<(TableIo, String)> {
        Self::open_with_config(location, options, Ambient::Use)
    }

    /// Like [`TableIo::open_with_options`], saying whether the machine's ambient credentials
    /// may be used (see [`TableIo::open_with_storage`]).
    pub fn open_with_config(
        location: &str,
        options: &[(String, String)],
        ambient: Ambient,
    ) -> crate::Result<(TableIo, String)> {
        Self::open_with_storage(location, &StorageConfig::new(options.to_vec(), ambient))
    }

    /// Opens storage for `location` with `storage`. With [`Ambient::Refuse`], when the options
    /// hold no credential for the store, requests are sent unsigned (anonymous) rather than
    /// with credentials found on the machine (instance metadata, workload identity, a default
    /// credentials file). Other stores that files of the table live in are opened alike
    /// ([`StorageConfig::for_other_store`]).
    pub fn open_with_storage(
        location: &str,
        storage: &StorageConfig,
    ) -> crate::Result<(TableIo, String)> {
        let err = |r: String| crate::Error::Location {
            location: location.to_string(),
            reason: r,
        };
        let mut loc = super::location::parse_location(location)?;
        if loc.is_relative() {
            loc.path = absolute(&loc.path).map_err(err)?;
        } else if loc.is_local() {
            loc.path = canonical(&loc.path);
        }
        let store = open_store(&loc, storage).map_err(err)?;
        let slice_bytes = storage.read_slice_bytes()?;
        let limits = ReadLimits::from_config(storage)?;
        let fetch = storage.ranged_fetch()?;
        let written = if loc.is_local() {
            loc.path.clone()
        } else {
            format!("{}/{}", loc.store_key(), loc.path)
        };
        let root = loc.path.clone();
        let base = Location {
            path: String::new(),
            ..loc
        };
        Ok((
            TableIo {
                store,
                base,
                root,
                recorded: None,
                warehouse: None,
                path_map: Arc::new(Vec::new()),
                storage: Arc::new(storage.clone()),
                slice_bytes,
                limits,
                fetch,
                others: Arc::new(Mutex::new(HashMap::new())),
            },
            written,
        ))
    }

    /// How data files in object stores are fetched: ranged GETs within one budget of bytes in
    /// flight for every file of the table ([`super::ranged`]).
    pub fn ranged_fetch(&self) -> &super::ranged::RangedFetch {
        &self.fetch
    }

    /// Whether the table is in an object store (not on a local file system).
    pub fn is_remote(&self) -> bool {
        !self.base.is_local()
    }

    /// Bytes of projected columns per read-ahead slice of a Parquet file in an object store
    /// (`0`: each row group is read whole); see [`super::readahead`].
    pub fn read_slice_bytes(&self) -> u64 {
        self.slice_bytes
    }

    /// The caps on files read whole.
    pub fn limits(&self) -> &ReadLimits {
        &self.limits
    }

    /// Sets the table root: `root` is where the table was opened (in the written form
    /// [`TableIo::open`] returns), and `recorded` the `location` written in its metadata.
    pub fn with_roots(mut self, root: &str, recorded: &str) -> TableIo {
        self.root = Location::parse(root).path;
        let rec = Location::parse(recorded);
        self.warehouse = warehouse_roots(&rec, &self.base, &self.root);
        self.recorded = Some(rec);
        self
    }

    /// Adds prefix rewrites `(old, new)`, tried first and in order: a path written below
    /// `old` is read below `new` (a relative `new` is relative to the working directory).
    pub fn with_path_map(mut self, map: &[(String, String)]) -> TableIo {
        self.path_map = Arc::new(
            map.iter()
                .map(|(old, new)| {
                    let n = Location::parse(new);
                    let new = if n.is_relative() {
                        absolute(&n.path).unwrap_or_else(|_| new.clone())
                    } else {
                        new.trim_end_matches('/').to_string()
                    };
                    (Location::parse(old), new)
                })
                .collect(),
        );
        self
    }

    /// The same table root in `store` (the same bucket reached differently: with credentials
    /// that are fetched again when they expire).
    pub fn with_store(mut self, store: Arc<dyn ObjectStore>) -> TableIo {
        self.store = store;
        self
    }

    /// The underlying store (for the Parquet async reader).
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The table root as opened, as a path inside the store.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// Where a path written in table metadata is read (see the module comment): its store and
    /// path there. Errors: a store that cannot be opened.
    fn target(&self, written: &str) -> crate::Result<Target> {
        let loc = Location::parse(written);
        if let Some(mapped) = self
            .path_map
            .iter()
            .find_map(|(old, new)| loc.below(old).map(|rest| format!("{new}{rest}")))
        {
            return self.in_store(Location::parse(&mapped), true);
        }
        if loc.is_relative() {
            let rest = match &self.recorded {
                Some(rec) if rec.is_relative() => loc.below(rec),
                _ => None,
            }
            .unwrap_or_else(|| format!("/{}", loc.path));
            return Ok(self.here(format!("{}{rest}", self.root)));
        }
        if let Some(rest) = self.recorded.as_ref().and_then(|rec| loc.below(rec)) {
            return Ok(self.here(format!("{}{rest}", self.root)));
        }
        if let Some((old, new)) = &self.warehouse {
            if let Some(rest) = loc.below(old) {
                return Ok(self.here(format!("{new}{rest}")));
            }
        }
        self.in_store(loc, false)
    }

    /// A path in this store.
    fn here(&self, p: String) -> Target {
        let path = store_path(&p);
        let shown = self.display(&path);
        Target {
            store: self.store.clone(),
            path,
            shown,
        }
    }

    /// A location in its own store: this one, or another opened once with the same settings.
    /// `mapped`: the caller's path map led here (which may lead a remote table to local files).
    fn in_store(&self, loc: Location, mapped: bool) -> crate::Result<Target> {
        if loc.is_local() && !self.base.is_local() && !mapped {
            return Err(crate::Error::Location {
                location: format!("file://{}", loc.path),
                reason: format!(
                    "a table in {} names a local file; tables in object stores are never read from \
                     local files (map it with a path map if that is meant)",
                    self.base.store_key()
                ),
            });
        }
        if loc.is_relative() {
            let p = absolute(&loc.path).map_err(|r| crate::Error::Location {
                location: loc.path.clone(),
                reason: r,
            })?;
            return Ok(self.here(p));
        }
        let key = loc.store_key();
        if key == self.base.store_key() {
            return Ok(self.here(loc.path));
        }
        let store = {
            let mut others = self.others.lock().unwrap_or_else(|e| e.into_inner());
            match others.get(&key) {
                Some(s) => s.clone(),
                None => {
                    let s = open_store(&loc, &self.storage.for_other_store()).map_err(|r| {
                        crate::Error::Location {
                            location: key.clone(),
                            reason: r,
                        }
                    })?;
                    others.insert(key.clone(), s.clone());
                    s
                }
            }
        };
        let path = store_path(&loc.path);
        Ok(Target {
            store,
            shown: format!("{key}/{path}"),
            path,
        })
    }

    /// Maps a path written in table metadata to a path in its store (see the module comment).
    /// A path in another store than this table's is that store's key.
    pub fn resolve(&self, written: &str) -> Path {
        match self.target(written) {
            Ok(t) => t.path,
            Err(_) => store_path(&Location::parse(written).path),
        }
    }

    /// Where a written path is read, for messages and cache keys (a URL).
    pub fn shown(&self, written: &str) -> String {
        match self.target(written) {
            Ok(t) => t.shown,
            Err(_) => written.to_string(),
        }
    }

    /// A display form of a path of this store, for messages.
    pub fn display(&self, p: &Path) -> String {
        if self.base.is_local() {
            format!("file:///{p}")
        } else {
            format!("{}/{p}", self.base.store_key())
        }
    }

    /// The store and path a written path is read from (for readers that fetch ranges).
    pub fn file(&self, written: &str) -> crate::Result<(Arc<dyn ObjectStore>, Path, String)> {
        let t = self.target(written)?;
        Ok((t.store, t.path, t.shown))
    }

    /// A local file's size in bytes, after checking it is a regular file (`regular`); `None`
    /// for object stores and missing files.
    pub fn local_size(&self, written: &str) -> crate::Result<Option<u64>> {
        let t = self.target(written)?;
        super::regular::regular_size(&t.path, &t.shown)
    }

    /// Reads a whole file. Errors name the file; a missing file is `Error::NotFound`.
    pub async fn read(&self, written: &str) -> crate::Result<Bytes> {
        let (shown, r) = self.get(written).await?;
        r.bytes()
            .await
            .map_err(|e| crate::Error::from_store(&shown, e))
    }

    /// Asks for a whole regular file: where it is shown, and the store's answer.
    async fn get(&self, written: &str) -> crate::Result<(String, object_store::GetResult)> {
        let t = self.target(written)?;
        super::regular::ensure_regular(&t.path, &t.shown)?;
        match t.store.get(&t.path).await {
            Ok(r) => Ok((t.shown, r)),
            Err(e) => Err(crate::Error::from_store(&t.shown, e)),
        }
    }

    /// Reads a whole file of kind `kind`, at most its cap ([`ReadLimits`]): a file whose size
    /// is past the cap is refused before its body is asked for, and a body that runs past the
    /// cap (a store that misstates the size) is dropped once it does. Errors as
    /// [`TableIo::read`], and [`crate::Error::TooLarge`].
    pub async fn read_capped(&self, written: &str, kind: Capped) -> crate::Result<Bytes> {
        use futures::StreamExt;
        let (cap, _) = kind.limit(&self.limits);
        let (shown, r) = self.get(written).await?;
        if r.meta.size > cap {
            return Err(kind.too_large(&shown, &self.limits));
        }
        // A local file's size is the file system's own: read it whole, as `read` does.
        if matches!(r.payload, object_store::GetResultPayload::File(..)) {
            return r
                .bytes()
                .await
                .map_err(|e| crate::Error::from_store(&shown, e));
        }
        let mut buf = Vec::with_capacity(r.meta.size as usize);
        let mut body = r.into_stream();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| crate::Error::from_store(&shown, e))?;
            if (buf.len() + chunk.len()) as u64 > cap {
                return Err(kind.too_large(&shown, &self.limits));
            }
            buf.extend_from_slice(&chunk);
            crate::cancel::check(|| format!("reading {}", shown))?;
        }
        Ok(Bytes::from(buf))
    }

    /// Reads `len` bytes at `offset` of a file. Fails if the file is shorter.
    pub async fn read_range(&self, written: &str, offset: u64, len: u64) -> crate::Result<Bytes> {
        let t = self.target(written)?;
        super::regular::ensure_regular(&t.path, &t.shown)?;
        let b = t
            .store
            .get_range(&t.path, offset..offset + len)
            .await
            .map_err(|e| crate::Error::from_store(&t.shown, e))?;
        if b.len() as u64 != len {
            return Err(crate::Error::Io {
                path: t.shown,
                reason: format!("read {} bytes at {offset}, wanted {len}", b.len()),
            });
        }
        Ok(b)
    }

    /// The last `n` bytes of a file (all of it when shorter) and the object's real size, in one
    /// request.
    pub async fn tail(&self, written: &str, n: u64) -> crate::Result<(Bytes, u64)> {
        let t = self.target(written)?;
        super::regular::ensure_regular(&t.path, &t.shown)?;
        let opts = object_store::GetOptions {
            range: Some(object_store::GetRange::Suffix(n)),
            ..Default::default()
        };
        let (bytes, size) = match t.store.get_opts(&t.path, opts).await {
            Ok(r) => {
                let size = r.meta.size;
                let bytes = r
                    .bytes()
                    .await
                    .map_err(|e| crate::Error::from_store(&t.shown, e))?;
                (bytes, size)
            }
            // Azure Blob takes no suffix ranges: ask for the size, then the range.
            Err(object_store::Error::NotSupported { .. }) => {
                let size = t
                    .store
                    .head(&t.path)
                    .await
                    .map_err(|e| crate::Error::from_store(&t.shown, e))?
                    .size;
                let bytes = t
                    .store
                    .get_range(&t.path, size.saturating_sub(n)..size)
                    .await
                    .map_err(|e| crate::Error::from_store(&t.shown, e))?;
                (bytes, size)
            }
            Err(e) => return Err(crate::Error::from_store(&t.shown, e)),
        };
        if bytes.len() as u64 != n.min(size) {
            return Err(crate::Error::Io {
                path: t.shown,
                reason: format!("read {} of the last {n} bytes of {size}", bytes.len()),
            });
        }
        Ok((bytes, size))
    }

    /// Lists file names directly under a directory of the store (for metadata resolution).
    pub async fn list_dir(&self, dir: &str) -> crate::Result<Vec<String>> {
        let prefix = store_path(&Location::parse(dir).path);
        let listing = super::relist::list_with_delimiter(self.store.as_ref(), Some(&prefix))
            .await
            .map_err(|e| crate::Error::from_store(self.display(&prefix), e))?;
        self.check_listing(
            &prefix,
            listing.objects.len() + listing.common_prefixes.len(),
        )?;
        Ok(listing
            .objects
            .into_iter()
            .filter_map(|o| o.location.filename().map(str::to_string))
            .collect())
    }

    /// Errors when a listing of `dir` holds more names than the cap on listings.
    pub fn check_listing(&self, dir: &Path, names: usize) -> crate::Result<()> {
        if names as u64 > self.limits.listing_entries {
            return Err(crate::Error::TooLarge {
                path: self.display(dir),
                what: "directory listing",
                limit: self.limits.listing_entries,
                unit: "names",
                setting: "max_listing_entries",
            });
        }
        Ok(())
    }

    /// Whether a file exists.
    pub async fn exists(&self, written: &str) -> crate::Result<bool> {
        let t = self.target(written)?;
        match t.store.head(&t.path).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(crate::Error::from_store(&t.shown, e)),
        }
    }
}

/// The recorded and the opened warehouse roots: each table root minus the path components
/// the two share at their end (`/tmp/wh/db/t` opened at `/data/copy/db/t`: `/tmp/wh` and
/// `/data/copy`). `None` when the table was not moved, or shares no component.
fn warehouse_roots(rec: &Location, base: &Location, root: &str) -> Option<(Location, String)> {
    if rec.is_relative() {
        return None;
    }
    let parts = |p: &str| -> Vec<String> {
        p.split('/')
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect()
    };
    let (r, o) = (parts(&rec.path), parts(root));
    let shared = r
        .iter()
        .rev()
        .zip(o.iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let moved = rec.store_key() != base.store_key() || r != o;
    if shared == 0 || !moved || shared == r.len() {
        return None;
    }
    let lead = |abs: bool| if abs { "/" } else { "" };
    let old = Location {
        path: format!(
            "{}{}",
            lead(rec.path.starts_with('/')),
            r[..r.len() - shared].join("/")
        ),
        ..rec.clone()
    };
    let new = format!(
        "{}{}",
        lead(root.starts_with('/')),
        o[..o.len() - shared].join("/")
    );
    Some((old, new))
}

/// Opens the store a location is in.
fn open_store(loc: &Location, storage: &StorageConfig) -> Result<Arc<dyn ObjectStore>, String> {
    #[cfg(not(feature = "cloud"))]
    let _ = storage;
    match loc.scheme.as_str() {
        "file" => Ok(Arc::new(object_store::local::LocalFileSystem::new())),
        #[cfg(feature = "cloud")]
        s if super::location::REMOTE_SCHEMES.contains(&s) => {
            let url =
                url::Url::parse(&format!("{}/", loc.store_key())).map_err(|e| e.to_string())?;
            super::remote::open_remote(&url, storage)
        }
        s => Err(format!("unsupported storage scheme {s}://")),
    }
}

// Here rather than in config.rs: the configuration knows nothing of stores.
impl StorageConfig {
    /// Opens the store of `location` with this configuration; returns it and the path of
    /// `location` inside it.
    pub fn open(&self, location: &str) -> crate::Result<(TableIo, String)> {
        TableIo::open_with_storage(location, self)
    }
}

/// A path as written (a file name or object key, taken literally: Iceberg writes partition
/// directories such as `cat=x%2Fy` that must not be decoded; the local store encodes each
/// component again before it decodes it into a file name).
pub(crate) fn store_path(p: &str) -> Path {
    let p = p.trim_start_matches('/');
    Path::parse(p).unwrap_or_else(|_| Path::from(p))
}

/// A relative local path made absolute against the working directory.
fn absolute(rel: &str) -> Result<String, String> {
    let abs = std::env::current_dir()
        .map_err(|e| e.to_string())?
        .join(rel);
    Ok(canonical(&abs.to_string_lossy()))
}

/// A local absolute path with symbolic links resolved when it exists.
fn canonical(p: &str) -> String {
    match std::fs::canonicalize(p) {
        Ok(c) => c.to_string_lossy().trim_end_matches('/').to_string(),
        Err(_) => p.to_string(),
    }
}
