//! The Iceberg REST catalog (OpenAPI spec `open-api/rest-catalog-open-api.yaml` in
//! apache/iceberg): `GET /v1/config` with `warehouse` (defaults, overrides, `prefix`),
//! namespaces (nested ones too) and tables listed page by page, `loadTable` with its
//! metadata, `config` and vended `storage-credentials`. Views are out of scope.
//!
//! One concept per file: [`config`] (properties), `auth` (bearer, OAuth2, SigV4), `client`
//! (HTTP, retries, errors), `backoff` (when a retry is sent), `storage` (vended credentials →
//! storage options), `wire` (JSON).

pub mod config;

mod auth;
mod backoff;
mod client;
#[cfg(feature = "cloud")]
mod refresh;
mod storage;
mod wire;

use std::sync::Arc;

use async_trait::async_trait;

use self::client::{RestClient, Subject};
use self::wire::{CatalogConfig, ListNamespaces, ListTables, LoadTable};
use super::{Catalog, Namespace, TableIdent};
use crate::cache::Caches;
use crate::io::locate::locate;
use crate::io::StorageConfig;
use crate::Table;

pub use config::RestConfig;

/// Pages a listing may take before it is taken for a loop (a server repeating its token).
const MAX_PAGES: usize = 100_000;

/// A connected REST catalog.
pub struct RestCatalog {
    config: RestConfig,
    client: Arc<RestClient>,
    storage: StorageConfig,
    caches: Arc<Caches>,
    page_size: Option<u32>,
    /// Whether tables the catalog places in local files may be read.
    local_files: bool,
}

impl std::fmt::Debug for RestCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestCatalog")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl RestCatalog {
    /// Connects: asks the catalog for its configuration (for `warehouse` when one is set) and
    /// merges it into `config`. `storage` is the caller's storage configuration; what the
    /// catalog returns for a table (vended credentials) is added to it for that table.
    pub async fn connect(
        config: RestConfig,
        storage: StorageConfig,
        caches: Arc<Caches>,
    ) -> crate::Result<RestCatalog> {
        let mut client = RestClient::new(&config)?;
        let mut url = client.config_url();
        if let Some(w) = config.get("warehouse") {
            url.query_pairs_mut().append_pair("warehouse", w);
        }
        let answer: CatalogConfig = client.get(url, &[], Subject::Config).await?;
        let config = config.merged(&answer.defaults, &answer.overrides);
        client.set_prefix(config.get("prefix"));
        Ok(RestCatalog {
            page_size: config.page_size()?,
            config,
            client: Arc::new(client),
            storage,
            caches,
            local_files: true,
        })
    }

    /// This catalog, refusing tables whose metadata location it answers with a local path or
    /// `file:` URL ([`crate::Error::LocalFilesRefused`], before anything there is read): for a
    /// server reading the catalog for someone who may not read the machine's files.
    pub fn refusing_local_files(mut self) -> RestCatalog {
        self.local_files = false;
        self
    }

    /// The configuration in use: the caller's merged with the catalog's defaults and overrides.
    pub fn config(&self) -> &RestConfig {
        &self.config
    }

    /// Follows `next-page-token` until the last page; `page` reads one page's items and token.
    async fn pages<T, P: serde::de::DeserializeOwned>(
        &self,
        mut url: url::Url,
        subject: Subject<'_>,
        page: impl Fn(P) -> (Vec<T>, Option<String>),
    ) -> crate::Result<Vec<T>> {
        if let Some(n) = self.page_size {
            url.query_pairs_mut()
                .append_pair("pageSize", &n.to_string());
        }
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut u = url.clone();
            if let Some(t) = &token {
                u.query_pairs_mut().append_pair("pageToken", t);
            }
            let (items, next) = page(self.client.get(u, &[], subject).await?);
            out.extend(items);
            match next.filter(|t| !t.is_empty()) {
                Some(t) if Some(&t) == token.as_ref() => {
                    return Err(
                        self.error(subject, format!("the catalog repeated page token {t:?}"))
                    )
                }
                Some(t) => token = Some(t),
                None => return Ok(out),
            }
        }
        Err(self.error(subject, format!("more than {MAX_PAGES} pages")))
    }

    fn error(&self, subject: Subject<'_>, reason: String) -> crate::Error {
        crate::Error::Catalog {
            catalog: self.config.name().to_string(),
            subject: subject.to_string(),
            reason,
        }
    }

    /// The `X-Iceberg-Access-Delegation` header sent with `loadTable`: vended credentials
    /// unless `header.X-Iceberg-Access-Delegation` says otherwise (PyIceberg's default).
    fn delegation(&self) -> Vec<(&'static str, &'static str)> {
        let configured = self
            .config
            .props()
            .keys()
            .any(|k| k.eq_ignore_ascii_case("header.x-iceberg-access-delegation"));
        if configured {
            Vec::new()
        } else {
            vec![("X-Iceberg-Access-Delegation", "vended-credentials")]
        }
    }
}

/// A namespace as the protocol writes it in a path or `parent`: levels joined by 0x1F.
fn joined(ns: &Namespace) -> String {
    ns.levels().join("\u{1f}")
}

#[async_trait]
impl Catalog for RestCatalog {
    fn name(&self) -> &str {
        self.config.name()
    }

    async fn list_namespaces(&self, parent: &Namespace) -> crate::Result<Vec<Namespace>> {
        let mut url = self.client.url(&["namespaces"]);
        if !parent.is_root() {
            url.query_pairs_mut().append_pair("parent", &joined(parent));
        }
        let mut found = self
            .pages(url, Subject::Namespace(parent), |p: ListNamespaces| {
                (p.namespaces, p.next_page_token)
            })
            .await?;
        found.sort();
        Ok(found.into_iter().map(Namespace::new).collect())
    }

    async fn list_tables(&self, namespace: &Namespace) -> crate::Result<Vec<TableIdent>> {
        // The protocol has no tables outside a namespace.
        if namespace.is_root() {
            return Ok(Vec::new());
        }
        let url = self
            .client
            .url(&["namespaces", &joined(namespace), "tables"]);
        let ids = self
            .pages(url, Subject::Namespace(namespace), |p: ListTables| {
                (p.identifiers, p.next_page_token)
            })
            .await?;
        let mut out: Vec<TableIdent> = ids
            .into_iter()
            .map(|id| TableIdent::new(Namespace::new(id.namespace), id.name))
            .collect();
        out.sort_by_key(|t| t.name.clone());
        Ok(out)
    }

    async fn load_table(&self, table: &TableIdent) -> crate::Result<Table> {
        let subject = Subject::Table(table);
        let url = self.client.url(&[
            "namespaces",
            &joined(&table.namespace),
            "tables",
            &table.name,
        ]);
        let load: LoadTable = self
            .client
            .get(url.clone(), &self.delegation(), subject)
            .await?;
        let recorded = load.metadata.get("location").and_then(|l| l.as_str());
        let Some(location) = load.metadata_location.as_deref().or(recorded) else {
            return Err(self.error(
                subject,
                "loadTable answered metadata without a location".into(),
            ));
        };
        if !self.local_files
            && crate::io::classify(location).ok() != Some(crate::io::LocationKind::Remote)
        {
            return Err(crate::Error::LocalFilesRefused {
                catalog: self.config.name().to_string(),
                table: table.to_string(),
                location: location.to_string(),
            });
        }
        // Storage: the caller's options, then the catalog's FileIO properties, then the
        // table's own `config` and vended credentials.
        let mut props = self.config.props().clone();
        props.extend(storage::for_location(
            &load.config,
            &load.storage_credentials,
            location,
        ));
        let mut options = self.storage.options.clone();
        options.extend(storage::object_store_options(&props, location));
        let storage = StorageConfig {
            options: StorageConfig::new(options, self.storage.ambient).options,
            ..self.storage.clone()
        };
        #[allow(unused_mut)]
        let (mut io, path) = storage.open(location)?;
        // Vended credentials that expire are fetched again before they do; a GCS token is
        // handed to the store this way too.
        #[cfg(feature = "cloud")]
        if let Some(vended) = refresh::vended_credentials(
            self.client.clone(),
            url,
            self.delegation(),
            table,
            location,
            &props,
        ) {
            let store_url = crate::io::parse_location(location)
                .ok()
                .and_then(|l| url::Url::parse(&format!("{}/", l.store_key())).ok());
            if let Some(store_url) = store_url {
                let store = crate::io::remote::open_remote_with(&store_url, &storage, Some(vended))
                    .map_err(|r| self.error(subject, r))?;
                io = io.with_store(store);
            }
        }
        let root = match load.metadata_location {
            Some(_) => locate(&io, &path).await?.root,
            None => path.clone(),
        };
        let name = io.display(&io.resolve(&path));
        Table::from_metadata_json(io, &root, &load.metadata, &name, self.caches.clone())
    }
}
