//! `--catalog NAME`: connects to the REST catalog configured under that name (see
//! [`crate::catalog_config`]), handing the core the user's storage settings from the
//! environment; `icefloe tables` lists it.

use icefloe_core::cache::Caches;
use icefloe_core::catalog::rest::{RestCatalog, RestConfig};
use icefloe_core::catalog::{Catalog, Namespace, TableIdent};
use icefloe_core::io::StorageConfig;
use icefloe_core::Table;

use crate::catalog_config;

/// The AWS variables (or the AWS profile's, as boto3 finds them) PyIceberg's SigV4 signing
/// uses, as catalog properties (used only when the configuration sets none).
const AWS_ENV: &[(&str, &str)] = &[
    ("client.access-key-id", "AWS_ACCESS_KEY_ID"),
    ("client.secret-access-key", "AWS_SECRET_ACCESS_KEY"),
    ("client.session-token", "AWS_SESSION_TOKEN"),
    ("client.region", "AWS_REGION"),
];

/// Connects to catalog `name`; `storage` is the user's storage configuration.
pub async fn connect(name: &str, storage: StorageConfig) -> anyhow::Result<RestCatalog> {
    let config = config(name)?;
    Ok(RestCatalog::connect(config, storage, Caches::global()).await?)
}

/// The configuration of catalog `name`: `.pyiceberg.yaml`, `PYICEBERG_CATALOG__*` variables,
/// and the AWS variables SigV4 signing falls back on.
pub fn config(name: &str) -> anyhow::Result<RestConfig> {
    let env = crate::args::ambient_env(None)?;
    let mut props = catalog_config::load(name, &env, &catalog_config::search_dirs(&env))?;
    for (key, var) in AWS_ENV {
        if !props.contains_key(*key) {
            if let Some((_, v)) = env.iter().find(|(k, _)| k == var) {
                props.insert(key.to_string(), v.clone());
            }
        }
    }
    Ok(RestConfig::new(name, props)?)
}

/// Loads `namespace.table` from catalog `name`.
pub async fn load(name: &str, table: &str, storage: StorageConfig) -> anyhow::Result<Table> {
    let ident = TableIdent::parse(table)?;
    Ok(connect(name, storage).await?.load_table(&ident).await?)
}

/// `icefloe --catalog NAME tables [NAMESPACE]`: every table in the namespace (the whole
/// catalog without one) and in the namespaces below it, one `namespace.table` a line.
pub async fn tables(name: &str, namespace: Option<&str>) -> anyhow::Result<()> {
    use std::io::Write;
    let catalog = connect(
        name,
        StorageConfig::with_env(crate::args::ambient_env(None)?, []),
    )
    .await?;
    let mut pending = vec![match namespace {
        Some(ns) => Namespace::parse(ns)?,
        None => Namespace::root(),
    }];
    let mut found = Vec::new();
    while let Some(ns) = pending.pop() {
        found.extend(catalog.list_tables(&ns).await?);
        pending.extend(catalog.list_namespaces(&ns).await?);
    }
    found.sort_by_key(|t| t.path());
    let mut out = std::io::stdout().lock();
    for t in found {
        writeln!(out, "{t}")?;
    }
    out.flush()?;
    Ok(())
}
