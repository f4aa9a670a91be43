//! What a storage error may say to the person who reads a table: the operation, the HTTP
//! status and the kind of failure, never the reply's body. A storage endpoint can be any HTTP
//! service (a misconfigured or hostile endpoint, an instance's metadata service), and
//! `object_store`'s messages carry reply bodies ("Server returned non-2xx status code: 403
//! Forbidden: <body>", "Got invalid list response: invalid type: string \"<body>\""). The
//! whole message goes to the debug log only. Local file errors are the machine's own and are
//! kept whole.

use object_store::Error as E;

// Here rather than in error.rs: the error type knows nothing of storage.
impl crate::Error {
    /// Wraps an object-store error for `path`, keeping "not found" distinct. The message
    /// keeps the operation and status, never a remote reply's body.
    pub fn from_store(path: impl std::fmt::Display, source: object_store::Error) -> Self {
        let path = path.to_string();
        let reason = store_reason(&path, &source);
        match source {
            object_store::Error::NotFound { .. } => crate::Error::NotFound { path, reason },
            _ => crate::Error::Io { path, reason },
        }
    }
}

/// The message of `e` for `path`, with nothing a remote service wrote in it. Logs the whole
/// message at debug level.
pub fn store_reason(path: &str, e: &E) -> String {
    if is_local(e) {
        return e.to_string();
    }
    let text = chain_text(e);
    tracing::debug!("storage error on {path}: {text}");
    if let E::Generic { store, source } = e {
        if *store == OWN {
            return source.to_string();
        }
    }
    let kind = match e {
        E::NotFound { .. } => "not found",
        E::PermissionDenied { .. } => "permission denied",
        E::Unauthenticated { .. } => "not authenticated",
        E::Precondition { .. } => "precondition failed",
        E::NotModified { .. } => "not modified",
        E::AlreadyExists { .. } => "already exists",
        E::NotSupported { .. } => "operation not supported by the store",
        E::InvalidPath { .. } => "invalid path",
        E::NotImplemented { .. } | E::UnknownConfigurationKey { .. } => return e.to_string(),
        _ if text.contains("response") && text.contains("invalid") => {
            "the reply is not the storage service's answer"
        }
        _ => "request failed",
    };
    let mut out = String::new();
    if let Some(op) = operation(&text) {
        out.push_str(op);
        out.push(' ');
    }
    match status(&text) {
        Some(s) => out.push_str(&format!("HTTP {s}: {kind}")),
        None => out.push_str(kind),
    }
    if let Some(t) = transport(e) {
        out.push_str(&format!(" ({t})"));
    }
    out
}

/// Why a reply is not the JSON that was expected, without quoting it (`serde_json`'s own
/// message quotes the values it did not expect): the kind of error and where.
pub fn json_reason(e: &serde_json::Error) -> String {
    let kind = match e.classify() {
        serde_json::error::Category::Io => "unreadable",
        serde_json::error::Category::Syntax => "not JSON",
        serde_json::error::Category::Data => "JSON of another shape",
        serde_json::error::Category::Eof => "cut-short JSON",
    };
    format!("{kind} (line {}, column {})", e.line(), e.column())
}

static REPLY_EXCERPTS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Lets errors quote a short excerpt of a structured error reply (an Iceberg `ErrorModel`
/// message, an OAuth2 `error_description`), for the whole process. Off by default: a catalog
/// or token URI may reach a service that is not a catalog, and its reply is not for the
/// person who reads the error. The CLI turns it on with `ICEFLOE_REPLY_EXCERPTS=1`, the
/// Postgres wrapper with the superuser setting `icefloe.reply_excerpts`.
pub fn set_reply_excerpts(on: bool) {
    REPLY_EXCERPTS.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// The message or description of a structured error reply as an error may show it: an
/// [`excerpt`] when [`set_reply_excerpts`] is on, else nothing (the debug log has it).
pub fn reply_excerpt(text: &str) -> Option<String> {
    if !REPLY_EXCERPTS.load(std::sync::atomic::Ordering::Relaxed) {
        tracing::debug!("error reply message: {text}");
        return None;
    }
    Some(excerpt(text)).filter(|e| !e.is_empty())
}

/// The type of a structured error reply (an Iceberg `ErrorModel` type such as
/// `NoSuchTableException`, an OAuth2 error code such as `invalid_client`) as an error may show
/// it: an identifier of letters, digits, `_`, `-` and `.` of at most 64 characters; anything
/// else is not shown.
pub fn reply_kind(text: &str) -> Option<String> {
    let ok = !text.is_empty()
        && text.len() <= 64
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    ok.then(|| text.to_string())
}

/// A field of a structured error reply as a message may quote it: one line of at most 200
/// printable characters.
fn excerpt(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    clean.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `Generic { store }` of errors this crate makes itself (short reads): their text is ours.
pub const OWN: &str = "icefloe";

/// An error about a local file (the local store's own errors).
fn is_local(e: &E) -> bool {
    match e {
        E::Generic { store, .. } => *store == "LocalFileSystem",
        E::NotFound { source, .. } | E::AlreadyExists { source, .. } => {
            source.downcast_ref::<std::io::Error>().is_some()
        }
        _ => false,
    }
}

/// The error and its causes on one line.
fn chain_text(e: &E) -> String {
    let mut s = e.to_string();
    let mut cur = std::error::Error::source(e);
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// The HTTP method of a failed request (`object_store` writes "Error performing GET ...").
fn operation(text: &str) -> Option<&'static str> {
    let rest = &text[text.find("Error performing ")? + "Error performing ".len()..];
    let method = rest.split(' ').next()?;
    ["GET", "HEAD", "PUT", "POST", "DELETE"]
        .into_iter()
        .find(|m| *m == method)
}

/// The HTTP status of a failed request, from `object_store`'s "status code: 403 ...".
fn status(text: &str) -> Option<u16> {
    let rest = &text[text.find("status code: ")? + "status code: ".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok().filter(|s| (100..600).contains(s))
}

/// The kind of transport failure (connect, timeout, ...), when the request got no reply.
fn transport(e: &E) -> Option<String> {
    #[cfg(feature = "cloud")]
    {
        let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(c) = cur {
            if let Some(h) = c.downcast_ref::<object_store::client::HttpError>() {
                return Some(format!("{:?} error", h.kind()).to_lowercase());
            }
            cur = c.source();
        }
        None
    }
    #[cfg(not(feature = "cloud"))]
    {
        let _ = e;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Reply(String);
    impl std::fmt::Display for Reply {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }
    impl std::error::Error for Reply {}

    #[test]
    fn reply_bodies_never_show() {
        let secret = r#"{"AccessKeyId": "ASIASECRET", "SecretAccessKey": "hush"}"#;
        let generic = E::Generic {
            store: "S3",
            source: Box::new(Reply(format!(
                "Error performing GET http://169.254.169.254/latest in 2ms - Server returned non-2xx status code: 500 Internal Server Error: {secret}"
            ))),
        };
        let r = store_reason("s3://b/t", &generic);
        assert_eq!(r, "GET HTTP 500: request failed");
        let list = E::Generic {
            store: "S3",
            source: Box::new(Reply(format!(
                "Got invalid list response: invalid type: string \"{secret}\""
            ))),
        };
        let r = store_reason("s3://b/t", &list);
        assert!(
            !r.contains("ASIA") && r.contains("not the storage service"),
            "{r}"
        );
        let denied = E::PermissionDenied {
            path: "t".into(),
            source: Box::new(Reply(format!(
                "Error performing HEAD http://x/t in 1ms - Server returned non-2xx status code: 403 Forbidden: {secret}"
            ))),
        };
        assert_eq!(
            store_reason("s3://b/t", &denied),
            "HEAD HTTP 403: permission denied"
        );
        // The machine's own errors stay whole; so do the reader's own.
        let local = E::NotFound {
            path: "/x".into(),
            source: Box::new(std::io::Error::from(std::io::ErrorKind::NotFound)),
        };
        assert!(store_reason("/x", &local).contains("/x"));
        let own = E::Generic {
            store: OWN,
            source: "read 3 bytes at 0, wanted 4".into(),
        };
        assert_eq!(store_reason("/x", &own), "read 3 bytes at 0, wanted 4");
        let json = serde_json::from_str::<Vec<i32>>(&format!("\"{secret}\"")).unwrap_err();
        let r = json_reason(&json);
        assert!(!r.contains("ASIA") && r.contains("another shape"), "{r}");
        assert_eq!(excerpt("a\nb\u{7}  c"), "a b c");
    }
}
