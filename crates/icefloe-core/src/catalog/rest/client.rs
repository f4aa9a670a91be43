//! HTTP to a REST catalog: URLs under the configured `prefix`, the authentication of every
//! request, one retry after a 401 or 419 with a fresh OAuth2 token, a few retries ([`Backoff`])
//! on 429, 5xx and connection failures (waiting what `Retry-After` asks on 429 and 503), and
//! each error answer turned into one line that names the catalog and what was asked about.

use std::time::{Duration, SystemTime};

use serde::de::DeserializeOwned;
use url::Url;

use super::auth::Auth;
use super::backoff::{retry_after, Backoff};
use super::config::RestConfig;
use super::wire::ErrorModel;
use crate::catalog::{Namespace, TableIdent};
use crate::io::store_error::{json_reason, reply_excerpt, reply_kind};

/// What a request asks about: named in its errors, and what a 404 means.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Subject<'a> {
    Config,
    Namespace(&'a Namespace),
    Table(&'a TableIdent),
}

impl std::fmt::Display for Subject<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Subject::Config => f.write_str("configuration (GET /v1/config)"),
            Subject::Namespace(ns) if ns.is_root() => f.write_str("top-level namespaces"),
            Subject::Namespace(ns) => write!(f, "namespace {ns}"),
            Subject::Table(t) => write!(f, "table {t}"),
        }
    }
}

/// The HTTP side of one catalog.
pub(crate) struct RestClient {
    name: String,
    http: reqwest::Client,
    base: Url,
    prefix: Option<String>,
    auth: Auth,
    headers: http::HeaderMap,
}

impl RestClient {
    /// A client for `config`'s `uri`, with its authentication and `header.*` headers.
    pub(crate) fn new(config: &RestConfig) -> crate::Result<RestClient> {
        let base = Url::parse(&format!("{}/", config.uri()))
            .map_err(|e| config.error(&format!("`uri`: {e}")))?;
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| config.error(&format!("cannot set up HTTP: {e}")))?;
        let mut headers = http::HeaderMap::new();
        for (k, v) in config.headers() {
            let name = http::HeaderName::from_bytes(k.as_bytes());
            let value = http::HeaderValue::from_str(&v);
            let (Ok(name), Ok(value)) = (name, value) else {
                return Err(config.error(&format!("`header.{k}` is not a valid HTTP header")));
            };
            headers.insert(name, value);
        }
        Ok(RestClient {
            name: config.name().to_string(),
            http,
            base,
            prefix: None,
            auth: Auth::from_config(config)?,
            headers,
        })
    }

    /// Uses the `prefix` from the catalog's configuration for every later request.
    pub(crate) fn set_prefix(&mut self, prefix: Option<&str>) {
        self.prefix = prefix
            .map(|p| p.trim_matches('/').to_string())
            .filter(|p| !p.is_empty());
    }

    /// `{uri}/v1/config`.
    pub(crate) fn config_url(&self) -> Url {
        self.url_of(&["v1", "config"], false)
    }

    /// `{uri}/v1/{prefix}/` followed by `segments`, each percent-encoded.
    pub(crate) fn url(&self, segments: &[&str]) -> Url {
        let mut all = vec!["v1"];
        all.extend_from_slice(segments);
        self.url_of(&all, true)
    }

    fn url_of(&self, segments: &[&str], with_prefix: bool) -> Url {
        let mut url = self.base.clone();
        {
            let mut path = url.path_segments_mut().expect("http URLs have paths");
            path.pop_if_empty();
            path.push(segments[0]);
            if with_prefix {
                if let Some(p) = &self.prefix {
                    path.extend(p.split('/'));
                }
            }
            path.extend(&segments[1..]);
        }
        url
    }

    /// GETs `url` and reads its JSON answer; `headers` are added to this request only.
    pub(crate) async fn get<T: DeserializeOwned>(
        &self,
        url: Url,
        headers: &[(&str, &str)],
        subject: Subject<'_>,
    ) -> crate::Result<T> {
        let mut renewed = false;
        let mut backoff = Backoff::new();
        loop {
            let mut request = http::Request::get(url.as_str())
                .header(http::header::ACCEPT, "application/json")
                .body(Vec::new())
                .map_err(|e| self.error(subject, format!("bad request URL {url}: {e}")))?;
            request.headers_mut().extend(self.headers.clone());
            for (k, v) in headers {
                let (Ok(k), Ok(v)) = (
                    http::HeaderName::from_bytes(k.as_bytes()),
                    http::HeaderValue::from_str(v),
                ) else {
                    return Err(self.error(subject, format!("invalid header {k}")));
                };
                request.headers_mut().insert(k, v);
            }
            self.auth
                .apply(&mut request, &self.http, &self.name)
                .await?;
            let request = reqwest::Request::try_from(request)
                .map_err(|e| self.error(subject, format!("bad request {url}: {e}")))?;
            let response = match self.http.execute(request).await {
                Ok(r) => r,
                Err(e) => match backoff.next_delay(None) {
                    Some(delay) => {
                        tracing::debug!("{}: {url}: {e}; retrying in {delay:?}", self.name);
                        tokio::time::sleep(delay).await;
                        continue;
                    }
                    None => {
                        return Err(
                            self.error(subject, format!("cannot reach {url}: {}", chain(&e)))
                        )
                    }
                },
            };
            let status = response.status().as_u16();
            let asked = match status {
                429 | 503 => response
                    .headers()
                    .get(http::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| retry_after(v, SystemTime::now())),
                _ => None,
            };
            let body = response
                .bytes()
                .await
                .map_err(|e| self.error(subject, format!("reading the answer to {url}: {e}")))?;
            match status {
                200..=299 => {
                    return serde_json::from_slice(&body).map_err(|e| {
                        self.error(
                            subject,
                            format!(
                                "{url} answered what is not a catalog answer: {}",
                                json_reason(&e)
                            ),
                        )
                    })
                }
                401 | 419 if !renewed && self.auth.expired().await => {
                    renewed = true;
                    continue;
                }
                429 | 500..=599 => match backoff.next_delay(asked) {
                    Some(delay) => {
                        tracing::debug!(
                            "{}: {url}: HTTP {status}; retrying in {delay:?}",
                            self.name
                        );
                        tokio::time::sleep(delay).await;
                        continue;
                    }
                    None => return Err(self.refused(subject, status, &body)),
                },
                _ => return Err(self.refused(subject, status, &body)),
            }
        }
    }

    /// The error for an error answer.
    fn refused(&self, subject: Subject<'_>, status: u16, body: &[u8]) -> crate::Error {
        // An Iceberg error answer's type is named (an identifier), its message quoted only when
        // reply excerpts are on; any other body never is: the URI may reach a service that is
        // not a catalog.
        let (kind, message) = match serde_json::from_slice::<ErrorModel>(body) {
            Ok(m) => (
                reply_kind(&m.error.kind).unwrap_or_default(),
                reply_excerpt(&m.error.message).unwrap_or_default(),
            ),
            Err(_) => {
                tracing::debug!(
                    "{}: error answer {status}: {}",
                    self.name,
                    String::from_utf8_lossy(body)
                );
                (String::new(), String::new())
            }
        };
        let what = match kind.as_str() {
            "" => format!("HTTP {status}"),
            k => format!("HTTP {status} {k}"),
        };
        let reason = if message.is_empty() {
            what
        } else {
            format!("{what}: {message}")
        };
        let catalog = self.name.clone();
        match (status, subject) {
            (404, Subject::Table(t)) => crate::Error::NoSuchTable {
                catalog,
                table: t.to_string(),
                reason,
            },
            (404, Subject::Namespace(ns)) => crate::Error::NoSuchNamespace {
                catalog,
                namespace: ns.to_string(),
                reason,
            },
            (401 | 403 | 419, _) => crate::Error::CatalogAuth {
                catalog,
                subject: subject.to_string(),
                status,
                reason,
            },
            _ => self.error(subject, reason),
        }
    }

    fn error(&self, subject: Subject<'_>, reason: String) -> crate::Error {
        crate::Error::Catalog {
            catalog: self.name.clone(),
            subject: subject.to_string(),
            reason,
        }
    }
}

/// An error and its causes on one line (reqwest's own message hides the cause).
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Instant;

    use super::*;

    /// A server on 127.0.0.1 answering its connections in turn with `replies` (status, extra
    /// header lines), one connection each, then no more; its URI and the requests it got.
    fn serve(replies: Vec<(u16, &'static str)>) -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let uri = format!("http://{}", listener.local_addr().expect("address"));
        let got = Arc::new(AtomicUsize::new(0));
        let counter = got.clone();
        std::thread::spawn(move || {
            for (status, headers) in replies {
                let Ok((mut stream, _)) = listener.accept() else {
                    return;
                };
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut line = String::new();
                loop {
                    line.clear();
                    match reader.read_line(&mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) if line == "\r\n" => break,
                        Ok(_) => {}
                    }
                }
                counter.fetch_add(1, Ordering::SeqCst);
                let body = match status {
                    200 => "{}",
                    _ => r#"{"error":{"message":"busy","type":"SlowDownException","code":1}}"#,
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{headers}\r\n{body}",
                    body.len()
                );
            }
        });
        (uri, got)
    }

    async fn get_config(uri: &str) -> crate::Result<serde_json::Value> {
        let config = RestConfig::new("t", [("uri".to_string(), uri.to_string())])?;
        let client = RestClient::new(&config)?;
        client.get(client.config_url(), &[], Subject::Config).await
    }

    #[tokio::test]
    async fn too_many_requests_is_retried_after_what_retry_after_asks() {
        let (uri, got) = serve(vec![(429, "Retry-After: 1\r\n"), (200, "")]);
        let start = Instant::now();
        get_config(&uri).await.expect("the retry succeeds");
        assert!(start.elapsed() >= Duration::from_secs(1));
        assert_eq!(got.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn server_errors_are_retried_a_bounded_number_of_times() {
        let (uri, got) = serve(vec![(503, "Retry-After: 0\r\n"); 5]);
        let e = get_config(&uri).await.unwrap_err().to_string();
        assert!(e.contains("HTTP 503 SlowDownException"), "{e}");
        assert_eq!(
            got.load(Ordering::SeqCst),
            1 + super::super::backoff::MAX_RETRIES as usize
        );

        // Without Retry-After: the backoff's own delays, 700 ms in all at most.
        let (uri, got) = serve(vec![(500, ""), (502, ""), (200, "")]);
        let start = Instant::now();
        get_config(&uri).await.expect("the third try succeeds");
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(got.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn other_errors_are_not_retried() {
        for status in [400, 404, 409] {
            let (uri, got) = serve(vec![(status, "Retry-After: 0\r\n"), (200, "")]);
            let e = get_config(&uri).await.unwrap_err().to_string();
            assert!(e.contains(&format!("HTTP {status}")), "{e}");
            assert_eq!(got.load(Ordering::SeqCst), 1);
        }
    }
}
