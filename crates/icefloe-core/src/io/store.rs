//! Object storage for one table through `object_store`, with path relocation: a table opened
//! somewhere other than its recorded `location` still resolves its absolute file paths.

use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use url::Url;

use super::location::parse_location;

/// A store plus the table root it was opened at. Cheap to clone.
#[derive(Clone, Debug)]
pub struct TableIo {
    store: Arc<dyn ObjectStore>,
    /// URL of the store's root, e.g. `file:///` or `s3://bucket/`.
    base: Url,
    /// The table root where it was opened, as a path inside the store (no trailing slash).
    root: String,
    /// The table root recorded in metadata (set once metadata is read), as written.
    recorded: Option<String>,
}

impl TableIo {
    /// Opens storage for `location`: a local path, or a `file://`, `s3://`, `s3a://`, `gs://`,
    /// `az://`, `abfs(s)://` URL. Cloud stores are configured from the usual environment
    /// variables (`AWS_*`, `GOOGLE_*`, `AZURE_*`). Returns the store and the path of
    /// `location` inside it.
    pub fn open(location: &str) -> crate::Result<(TableIo, String)> {
        Self::open_with_options(location, &[])
    }

    /// Like [`TableIo::open`], with explicit storage settings: `object_store` configuration
    /// keys such as `aws_access_key_id`, `aws_region`, `aws_endpoint`,
    /// `google_service_account_key` or `azure_storage_account_key`, and the retry keys of
    /// [`super::remote::RETRY_KEYS`]. They override the environment variables of the same
    /// name (upper case). Ignored for local files.
    pub fn open_with_options(
        location: &str,
        options: &[(String, String)],
    ) -> crate::Result<(TableIo, String)> {
        Self::open_with_config(location, options, Ambient::Use)
    }

    /// Like [`TableIo::open_with_options`], saying whether the process' ambient credentials
    /// may be used. With [`Ambient::Refuse`] the environment is not read and, when `options`
    /// hold no credential for the store, requests are sent unsigned (anonymous) rather than
    /// with credentials found on the machine (instance metadata, workload identity, a default
    /// credentials file).
    pub fn open_with_config(
        location: &str,
        options: &[(String, String)],
        ambient: Ambient,
    ) -> crate::Result<(TableIo, String)> {
        #[cfg(not(feature = "cloud"))]
        let _ = (options, ambient);
        let err = |r: String| crate::Error::Location {
            location: location.to_string(),
            reason: r,
        };
        let url = parse_location(location)?.url;
        let (store, base): (Arc<dyn ObjectStore>, Url) = match url.scheme() {
            "file" => (
                Arc::new(object_store::local::LocalFileSystem::new()),
                Url::parse("file:///").expect("static URL"),
            ),
            #[cfg(feature = "cloud")]
            "s3" | "s3a" | "gs" | "az" | "abfs" | "abfss" | "adl" | "azure" => {
                let mut u = url.clone();
                if u.scheme() == "s3a" {
                    u = Url::parse(&url.as_str().replacen("s3a://", "s3://", 1))
                        .map_err(|e| err(e.to_string()))?;
                }
                let store = super::remote::open_remote(&u, options, ambient).map_err(err)?;
                let mut base = u.clone();
                base.set_path("/");
                (store, base)
            }
            s => return Err(err(format!("unsupported storage scheme {s}://"))),
        };
        let path = url_path(&url);
        Ok((
            TableIo {
                store,
                base,
                root: path.clone(),
                recorded: None,
            },
            path,
        ))
    }

    /// Sets the table root: `root` is where the table was opened (a path in this store), and
    /// `recorded` the `location` written in its metadata. Paths under `recorded` are then read
    /// under `root`.
    pub fn with_roots(mut self, root: &str, recorded: &str) -> TableIo {
        self.root = root.trim_end_matches('/').to_string();
        self.recorded = Some(recorded.trim_end_matches('/').to_string());
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

    /// The table root as opened, inside the store.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// Maps a path written in table metadata to a path in this store. Paths under the recorded
    /// location are relocated under the opened root; other absolute paths and URLs on the same
    /// store are used as they are.
    pub fn resolve(&self, written: &str) -> Path {
        if let Some(rec) = &self.recorded {
            for candidate in equivalent_prefixes(rec) {
                if let Some(rest) = written.strip_prefix(&candidate) {
                    if rest.is_empty() || rest.starts_with('/') {
                        return store_path(&format!("{}{}", self.root, rest));
                    }
                }
            }
        }
        match Url::parse(written) {
            Ok(u) if u.scheme().len() > 1 => store_path(&url_path(&u)),
            _ => store_path(written),
        }
    }

    /// A display form of a resolved path, for messages.
    pub fn display(&self, p: &Path) -> String {
        format!("{}{}", self.base, p)
    }

    /// Reads a whole file. Errors name the file; a missing file is `Error::NotFound`.
    pub async fn read(&self, written: &str) -> crate::Result<Bytes> {
        let p = self.resolve(written);
        super::regular::ensure_regular(&p, &self.display(&p))?;
        let r = self
            .store
            .get(&p)
            .await
            .map_err(|e| crate::Error::from_store(self.display(&p), e))?;
        r.bytes()
            .await
            .map_err(|e| crate::Error::from_store(self.display(&p), e))
    }

    /// Reads `len` bytes at `offset` of a file. Fails if the file is shorter.
    pub async fn read_range(&self, written: &str, offset: u64, len: u64) -> crate::Result<Bytes> {
        let p = self.resolve(written);
        super::regular::ensure_regular(&p, &self.display(&p))?;
        let b = self
            .store
            .get_range(&p, offset..offset + len)
            .await
            .map_err(|e| crate::Error::from_store(self.display(&p), e))?;
        if b.len() as u64 != len {
            return Err(crate::Error::Io {
                path: self.display(&p),
                source: object_store::Error::Generic {
                    store: "range",
                    source: format!("read {} bytes at {offset}, wanted {len}", b.len()).into(),
                },
            });
        }
        Ok(b)
    }

    /// Lists file names directly under a directory of the store (for metadata resolution).
    pub async fn list_dir(&self, dir: &str) -> crate::Result<Vec<String>> {
        let prefix = store_path(dir);
        let listing = super::relist::list_with_delimiter(self.store.as_ref(), Some(&prefix))
            .await
            .map_err(|e| crate::Error::from_store(self.display(&prefix), e))?;
        Ok(listing
            .objects
            .into_iter()
            .filter_map(|o| o.location.filename().map(str::to_string))
            .collect())
    }

    /// Whether a file exists.
    pub async fn exists(&self, written: &str) -> crate::Result<bool> {
        let p = self.resolve(written);
        match self.store.head(&p).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(crate::Error::from_store(self.display(&p), e)),
        }
    }
}

/// Whether a store may use credentials it finds on the machine (environment variables,
/// instance metadata, default credential files) besides the options it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Ambient {
    /// Use them (a command-line user's own credentials).
    #[default]
    Use,
    /// Never (a server process acting for other people).
    Refuse,
}

/// A path as written (a file name or object key, taken literally: Iceberg writes partition
/// directories such as `cat=x%2Fy` that must not be encoded again).
fn store_path(p: &str) -> Path {
    let p = p.trim_start_matches('/');
    Path::parse(p).unwrap_or_else(|_| Path::from(p))
}

/// The forms a recorded location may be written in: `/x`, `file:/x`, `file:///x`.
fn equivalent_prefixes(rec: &str) -> Vec<String> {
    let mut out = vec![rec.to_string()];
    if let Some(p) = rec.strip_prefix("file://") {
        out.push(p.to_string());
        out.push(format!("file:{p}"));
    } else if let Some(p) = rec.strip_prefix("file:") {
        out.push(p.to_string());
        out.push(format!("file://{p}"));
    } else if rec.starts_with('/') {
        out.push(format!("file:{rec}"));
        out.push(format!("file://{rec}"));
    }
    out
}

/// The path part of a URL, percent-decoded, without trailing slash.
fn url_path(u: &Url) -> String {
    let decoded = percent_encoding::percent_decode_str(u.path()).decode_utf8_lossy();
    decoded.trim_end_matches('/').to_string()
}
