//! HTTP to a REST catalog: URLs under the configured `prefix`, the authentication of every
//! request, one retry after a 401 or 419 with a fresh OAuth2 token, a few retries with backoff
//! on 5xx and connection failures, and each error answer turned into one line that names the
//! catalog and what was asked about.

use std::time::Duration;

use serde::de::DeserializeOwned;
use url::Url;

use super::auth::Auth;
use super::config::RestConfig;
use super::wire::ErrorModel;
use crate::catalog::{Namespace, TableIdent};
use crate::io::store_error::{json_reason, reply_excerpt, reply_kind};

/// Retries after a 5xx answer or a failed connection, with 100, 200, 400 ms between tries.
const SERVER_RETRIES: u32 = 3;

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
        let mut attempt = 0;
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
                Err(e) if attempt < SERVER_RETRIES => {
                    tracing::debug!("{}: {url}: {e}; retrying", self.name);
                    backoff(&mut attempt).await;
                    continue;
                }
                Err(e) => {
                    return Err(self.error(subject, format!("cannot reach {url}: {}", chain(&e))))
                }
            };
            let status = response.status().as_u16();
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
                500..=599 if attempt < SERVER_RETRIES => {
                    backoff(&mut attempt).await;
                    continue;
                }
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

async fn backoff(attempt: &mut u32) {
    tokio::time::sleep(Duration::from_millis(100 << *attempt)).await;
    *attempt += 1;
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
