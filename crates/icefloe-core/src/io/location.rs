//! Parsing a table location (a local path or a URL) into the URL storage opens, and saying
//! whether it reads local files. [`crate::io::TableIo`] opens storage with [`parse_location`],
//! so a front-end that checks [`LocationKind`] (the Postgres wrapper's local-file rule) judges
//! exactly what will be opened: `FILE:/x`, ` file:///x` and `fi\tle:/x` are all local files,
//! because the URL parser lowercases schemes and drops leading spaces and tabs.

use url::Url;

/// Where a location's bytes live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocationKind {
    /// Files of the local file system (a `file:` URL or a path).
    Local,
    /// An object store reached over the network (`s3://`, `gs://`, `az://`, ...).
    Remote,
}

/// A location as storage opens it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedLocation {
    /// The URL (local paths become absolute `file:` URLs).
    pub url: Url,
    /// Local or remote.
    pub kind: LocationKind,
}

/// URL schemes of object stores (`s3a` is read as `s3`).
pub const REMOTE_SCHEMES: &[&str] = &["s3", "s3a", "gs", "az", "abfs", "abfss", "adl", "azure"];

/// Parses `location` as storage will open it. A text that is not a URL with a scheme of two or
/// more letters is a path (relative paths are relative to the working directory; `C:/x` is a
/// path). Unknown schemes are errors.
pub fn parse_location(location: &str) -> crate::Result<ParsedLocation> {
    let err = |reason: String| crate::Error::Location {
        location: location.to_string(),
        reason,
    };
    let url = to_url(location).map_err(err)?;
    let kind = match url.scheme() {
        "file" => LocationKind::Local,
        s if REMOTE_SCHEMES.contains(&s) => LocationKind::Remote,
        s => return Err(err(format!("unsupported storage scheme {s}://"))),
    };
    Ok(ParsedLocation { url, kind })
}

/// Whether `location` reads local files or an object store; errors as [`parse_location`].
pub fn classify(location: &str) -> crate::Result<LocationKind> {
    parse_location(location).map(|p| p.kind)
}

fn to_url(location: &str) -> Result<Url, String> {
    match Url::parse(location) {
        Ok(u) if u.scheme().len() > 1 => Ok(u),
        _ => {
            let p = std::path::Path::new(location);
            let abs = if p.is_absolute() {
                p.to_path_buf()
            } else {
                std::env::current_dir().map_err(|e| e.to_string())?.join(p)
            };
            let abs = std::fs::canonicalize(&abs).unwrap_or(abs);
            Url::from_file_path(&abs).map_err(|_| format!("not a usable path: {}", abs.display()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_a_local_file_is_local() {
        let local = [
            "/tmp/wh/db/t",
            "file:///tmp/wh/db/t",
            "file:/tmp/wh/db/t",
            "FILE:/tmp/wh/db/t",
            "File:/tmp/wh/db/t",
            "FiLe:///tmp/wh/db/t",
            "file://localhost/tmp/wh/db/t",
            " file:///tmp/wh/db/t",
            "  FILE:/tmp/wh",
            "\tfile:///tmp/wh",
            "\nfile:///tmp/wh",
            "\u{0}file:///tmp/wh",
            "\u{1f}file:///tmp/wh",
            "fi\tle:///tmp/wh",
            "fi\nle:///tmp/wh",
            "file:\t///tmp/wh",
            "file:///tmp/wh ",
            " /tmp/wh",
            "\t/tmp/wh",
            "relative/dir",
            "./relative",
            "../up",
            "warehouse",
            "C:/tmp/wh",
            "c:\\tmp\\wh",
            "x:/etc",
            "db.table",
            "file:relative",
            "",
        ];
        for l in local {
            assert_eq!(classify(l).ok(), Some(LocationKind::Local), "{l:?}");
        }
    }

    #[test]
    fn object_stores_are_remote_and_unknown_schemes_are_errors() {
        for l in [
            "s3://bucket/wh",
            "S3://bucket/wh",
            " s3://bucket/wh",
            "s\t3://bucket/wh",
            "s3a://bucket/wh",
            "gs://bucket/wh",
            "az://container/wh",
            "abfss://c@acct.dfs.core.windows.net/wh",
        ] {
            assert_eq!(classify(l).ok(), Some(LocationKind::Remote), "{l:?}");
        }
        for l in [
            "http://host/x",
            "https://host/x",
            "ftp://h/x",
            "data:text",
            "mailto:x",
        ] {
            assert!(
                matches!(classify(l), Err(crate::Error::Location { .. })),
                "{l:?}"
            );
        }
    }

    #[test]
    fn the_parser_opens_what_it_classifies() {
        // The same text opens the same store: a local path under a file URL.
        let p = parse_location(" FILE:/tmp/wh").unwrap();
        assert_eq!(p.url.as_str(), "file:///tmp/wh");
        let p = parse_location("fi\tle:/tmp/wh").unwrap();
        assert_eq!(p.url.scheme(), "file");
        let (io, path) = crate::io::TableIo::open(" FILE:/tmp/wh").unwrap();
        assert_eq!(path, "/tmp/wh");
        assert!(io.display(&io.resolve("/tmp/wh/x")).starts_with("file:///"));
    }
}
