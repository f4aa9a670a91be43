//! The one parser of locations, for every file path written in table metadata and every
//! location a user gives: local paths (absolute or relative), `file:` URLs in all their forms
//! (`file:/x`, `file:///x`, `file:x`), and object-store URLs (`s3://bucket/key`, …).
//! [`crate::io::TableIo`] opens and resolves with it, so a front-end that checks
//! [`LocationKind`] (the Postgres wrapper's local-file rule) judges exactly what will be opened.
//!
//! A URL is read as the WHATWG URL parser reads it: leading and trailing spaces and control
//! characters are dropped, tabs and newlines anywhere are removed, the scheme is case-blind, so
//! `FILE:/x`, ` file:///x` and `fi\tle:/x` are all local files. Nothing is percent-decoded:
//! Iceberg writers record object keys and file names literally (a partition directory
//! `cat=x%2Fy` is named just so), and so they are read.

/// Where a location's bytes live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocationKind {
    /// Files of the local file system (a `file:` URL or a path).
    Local,
    /// An object store reached over the network (`s3://`, `gs://`, `az://`, ...).
    Remote,
}

/// URL schemes of object stores, after folding Hadoop's S3 aliases (`s3a`, `s3n` → `s3`).
pub const REMOTE_SCHEMES: &[&str] = &["s3", "gs", "az", "abfs", "abfss", "adl", "azure"];

/// A parsed location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// `file` for local paths; otherwise the URL scheme, lower case, with Hadoop's S3 aliases
    /// folded (`s3a`, `s3n` → `s3`).
    pub scheme: String,
    /// Bucket, container or host; empty for local files.
    pub authority: String,
    /// Local files: the path, absolute (`/x/y`) or relative (`x/y`, a leading `./` removed).
    /// Object stores: the key, without a leading `/`. No trailing `/` either way.
    pub path: String,
}

impl Location {
    /// Parses `s`. Never fails: what is not a URL is a local path; whether storage can open
    /// the scheme is [`Location::kind`]'s question.
    pub fn parse(s: &str) -> Location {
        let local = |p: &str| Location {
            scheme: "file".into(),
            authority: String::new(),
            path: clean_local(p),
        };
        let url: String = s
            .trim_matches(|c: char| c <= ' ')
            .chars()
            .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
            .collect();
        let Some((scheme, rest)) = split_scheme(&url) else {
            // Not a URL: a path, taken as written.
            return local(s);
        };
        let scheme = fold_scheme(&scheme.to_ascii_lowercase());
        let (authority, path) = match rest.strip_prefix("//") {
            Some(r) => match r.find('/') {
                Some(i) => (&r[..i], &r[i..]),
                None => (r, ""),
            },
            None => ("", rest),
        };
        if scheme == "file" {
            // file://host/x names a path on that host; only the local host is readable.
            let p = if authority.is_empty() || authority.eq_ignore_ascii_case("localhost") {
                path.to_string()
            } else {
                format!("//{authority}{path}")
            };
            return local(&p);
        }
        Location {
            scheme,
            authority: authority.to_string(),
            path: path.trim_matches('/').to_string(),
        }
    }

    /// Local or remote; `None` for a scheme storage does not open.
    pub fn kind(&self) -> Option<LocationKind> {
        match self.scheme.as_str() {
            "file" => Some(LocationKind::Local),
            s if REMOTE_SCHEMES.contains(&s) => Some(LocationKind::Remote),
            _ => None,
        }
    }

    /// Whether this is a file of the local file system (as opposed to an object store).
    pub fn is_local(&self) -> bool {
        self.scheme == "file"
    }

    /// Whether this is a relative local path.
    pub fn is_relative(&self) -> bool {
        self.is_local() && !self.path.starts_with('/')
    }

    /// The store this location is in: `file://` or `scheme://authority`.
    pub fn store_key(&self) -> String {
        format!("{}://{}", self.scheme, self.authority)
    }

    /// The part of this location's path below `prefix` (same store, whole path components):
    /// `""` or `/rest`. `None` when it is not below `prefix`.
    pub fn below(&self, prefix: &Location) -> Option<String> {
        if self.scheme != prefix.scheme
            || self.authority != prefix.authority
            || self.is_relative() != prefix.is_relative()
        {
            return None;
        }
        if prefix.path.is_empty() || prefix.path == "/" {
            let rest = self.path.trim_start_matches('/');
            return Some(if rest.is_empty() {
                String::new()
            } else {
                format!("/{rest}")
            });
        }
        let rest = self.path.strip_prefix(&prefix.path)?;
        (rest.is_empty() || rest.starts_with('/')).then(|| rest.to_string())
    }
}

/// Parses `location` as storage opens it; a scheme storage does not open is an error.
pub fn parse_location(location: &str) -> crate::Result<Location> {
    let l = Location::parse(location);
    match l.kind() {
        Some(_) => Ok(l),
        None => Err(crate::Error::Location {
            location: location.to_string(),
            reason: format!("unsupported storage scheme {}://", l.scheme),
        }),
    }
}

/// Whether `location` reads local files or an object store; errors as [`parse_location`].
pub fn classify(location: &str) -> crate::Result<LocationKind> {
    let l = parse_location(location)?;
    Ok(l.kind().expect("parse_location checked the scheme"))
}

/// `scheme:` and the rest, for a URL scheme of two characters or more (so that a Windows drive
/// letter is not a scheme).
fn split_scheme(s: &str) -> Option<(&str, &str)> {
    let i = s.find(':')?;
    let scheme = &s[..i];
    let valid = scheme.len() > 1
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| (scheme, &s[i + 1..]))
}

fn fold_scheme(s: &str) -> String {
    match s {
        "s3a" | "s3n" => "s3",
        other => other,
    }
    .to_string()
}

fn clean_local(p: &str) -> String {
    let mut p = p;
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.trim_start_matches('/');
    }
    if p == "." {
        p = "";
    }
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() && p.starts_with('/') {
        "/".into()
    } else {
        trimmed.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(s: &str) -> (String, String, String) {
        let x = Location::parse(s);
        (x.scheme, x.authority, x.path)
    }

    #[test]
    fn forms() {
        let abs = ("file".to_string(), String::new(), "/tmp/t".to_string());
        for s in [
            "/tmp/t",
            "/tmp/t/",
            "file:/tmp/t",
            "file:///tmp/t",
            "file://localhost/tmp/t",
            " FILE:/tmp/t",
            "fi\tle:/tmp/t",
            "file:\t///tmp/t ",
        ] {
            assert_eq!(l(s), abs, "{s:?}");
        }
        assert_eq!(l("./t").2, "t");
        assert_eq!(l("file:t/data").2, "t/data");
        assert_eq!(l("file:./t").2, "t");
        assert!(Location::parse("data/x.parquet").is_relative());
        assert_eq!(
            l("s3a://bucket/wh/db/t/"),
            ("s3".into(), "bucket".into(), "wh/db/t".into())
        );
        // Keys are literal: no percent-decoding.
        assert_eq!(l("s3://b/cat=x%2Fy/f").2, "cat=x%2Fy/f");
        assert_eq!(l("file:/t/cat=x%2Fy/f").2, "/t/cat=x%2Fy/f");
        assert_eq!(l("C:/data/t").0, "file");
        assert!(!Location::parse("gs://b/k").is_local());
    }

    #[test]
    fn below() {
        let t = Location::parse("s3://b/wh/db/t");
        assert_eq!(
            Location::parse("s3a://b/wh/db/t/data/x").below(&t),
            Some("/data/x".into())
        );
        assert_eq!(Location::parse("s3://b/wh/db/t2/x").below(&t), None);
        assert_eq!(Location::parse("s3://other/wh/db/t/x").below(&t), None);
        assert_eq!(
            Location::parse("file:/tmp/t/x").below(&Location::parse("/tmp/t")),
            Some("/x".into())
        );
        assert_eq!(
            Location::parse("./t/data/x").below(&Location::parse("t")),
            Some("/data/x".into())
        );
    }

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
            "file://otherhost/x",
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
            "s3n://bucket/wh",
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
            "hdfs://nn/wh",
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
        let (io, path) = crate::io::TableIo::open(" FILE:/tmp/wh").unwrap();
        assert_eq!(path, "/tmp/wh");
        assert!(io.display(&io.resolve("/tmp/wh/x")).starts_with("file:///"));
        let (_, path) = crate::io::TableIo::open("fi\tle:/tmp/wh").unwrap();
        assert_eq!(path, "/tmp/wh");
        assert!(crate::io::TableIo::open("http://example.com/t").is_err());
    }
}
