//! Caps on what the reader holds in memory from one file it does not stream: a metadata file,
//! `version-hint.text`, a directory listing, a manifest list or manifest, a Parquet or Puffin
//! footer. Past its cap a read stops with [`crate::Error::TooLarge`] naming the file and the
//! cap, after reading at most the cap (a broken or hostile file cannot take the machine's
//! memory). The defaults are generous for real tables (metadata files of hundreds of MB
//! exist); each is a storage option (`--storage-option` of the CLI; settings of the Postgres
//! wrapper that only a superuser may change).

use super::config::{StorageConfig, LIMIT_KEYS};

/// The caps, in bytes (entries for a listing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReadLimits {
    /// A table metadata file (after gzip decompression, too).
    pub metadata_bytes: u64,
    /// `metadata/version-hint.text`.
    pub version_hint_bytes: u64,
    /// Names in one directory listing (a table's `metadata/`, a warehouse namespace).
    pub listing_entries: u64,
    /// A manifest list or a manifest.
    pub manifest_bytes: u64,
    /// A Parquet file's footer (its Thrift metadata) or a Puffin file's footer.
    pub footer_bytes: u64,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            metadata_bytes: LIMIT_KEYS[0].1,
            version_hint_bytes: LIMIT_KEYS[1].1,
            listing_entries: LIMIT_KEYS[2].1,
            manifest_bytes: LIMIT_KEYS[3].1,
            footer_bytes: LIMIT_KEYS[4].1,
        }
    }
}

impl ReadLimits {
    /// The caps a storage configuration sets (its [`LIMIT_KEYS`] options over the defaults).
    /// Errors: a value that is not a positive whole number.
    pub fn from_config(storage: &StorageConfig) -> crate::Result<ReadLimits> {
        let mut out = ReadLimits::default();
        for (key, _) in LIMIT_KEYS {
            let Some(v) = storage.get(key) else { continue };
            let n: u64 = v.trim().parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                crate::Error::InvalidArgument(format!(
                    "storage option {key}={v:?}: not a positive whole number"
                ))
            })?;
            *out.field(key) = n;
        }
        Ok(out)
    }

    fn field(&mut self, key: &str) -> &mut u64 {
        match key {
            "max_metadata_bytes" => &mut self.metadata_bytes,
            "max_version_hint_bytes" => &mut self.version_hint_bytes,
            "max_listing_entries" => &mut self.listing_entries,
            "max_manifest_bytes" => &mut self.manifest_bytes,
            _ => &mut self.footer_bytes,
        }
    }
}

/// What a capped read is of: names the kind in errors and says which cap applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capped {
    Metadata,
    VersionHint,
    Manifest,
    ManifestList,
    Footer,
}

impl Capped {
    /// The cap for this kind of file, and the option that sets it.
    pub fn limit(self, l: &ReadLimits) -> (u64, &'static str) {
        match self {
            Capped::Metadata => (l.metadata_bytes, "max_metadata_bytes"),
            Capped::VersionHint => (l.version_hint_bytes, "max_version_hint_bytes"),
            Capped::Manifest | Capped::ManifestList => (l.manifest_bytes, "max_manifest_bytes"),
            Capped::Footer => (l.footer_bytes, "max_footer_bytes"),
        }
    }

    /// How errors name the file.
    pub fn what(self) -> &'static str {
        match self {
            Capped::Metadata => "metadata file",
            Capped::VersionHint => "version hint",
            Capped::Manifest => "manifest",
            Capped::ManifestList => "manifest list",
            Capped::Footer => "footer",
        }
    }

    /// The error for a file of this kind past its cap.
    pub fn too_large(self, path: &str, l: &ReadLimits) -> crate::Error {
        let (limit, setting) = self.limit(l);
        crate::Error::TooLarge {
            path: path.to_string(),
            what: self.what(),
            limit,
            unit: "bytes",
            setting,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::Ambient;

    #[test]
    fn options_set_caps() {
        let c = StorageConfig::new(
            [
                ("max_metadata_bytes".to_string(), "1000".to_string()),
                ("max_footer_bytes".to_string(), " 77 ".to_string()),
            ],
            Ambient::Refuse,
        );
        let l = ReadLimits::from_config(&c).unwrap();
        assert_eq!(l.metadata_bytes, 1000);
        assert_eq!(l.footer_bytes, 77);
        assert_eq!(l.manifest_bytes, ReadLimits::default().manifest_bytes);
        for bad in ["0", "-1", "1e9", "lots"] {
            let c = StorageConfig::new(
                [("max_manifest_bytes".to_string(), bad.to_string())],
                Ambient::Refuse,
            );
            assert!(ReadLimits::from_config(&c).is_err(), "{bad}");
        }
        let e = Capped::Metadata.too_large("s3://b/t/v1.metadata.json", &l);
        let text = e.to_string();
        assert!(
            text.contains("v1.metadata.json") && text.contains("1000"),
            "{text}"
        );
    }
}
