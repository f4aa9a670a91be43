//! The Iceberg REST catalogs a backend has connected to: one connection (its `GET /v1/config`
//! answer and OAuth2 token) per catalog configuration, storage settings and local-file policy,
//! kept for the next statement. A backend keeps a few ([`crate::recent::Recent`]).

use std::cell::RefCell;
use std::sync::Arc;

use icefloe_core::cache::Caches;
use icefloe_core::catalog::rest::{RestCatalog, RestConfig};

use crate::error::FdwError;
use crate::options::{self, Resolved};
use crate::recent::Recent;
use crate::runtime;

/// How many catalog connections a backend keeps.
const KEPT: usize = 4;

thread_local! {
    static CONNECTED: RefCell<Recent<Arc<RestCatalog>>> = const { RefCell::new(Recent::new(KEPT)) };
}

/// The catalog `config` connected for `r`: with `r`'s storage settings and credentials, and
/// refusing tables in local files unless `r`'s role may read them.
pub fn connected(
    r: &Resolved,
    config: &RestConfig,
    caches: &Arc<Caches>,
) -> Result<Arc<RestCatalog>, FdwError> {
    // Keyed by values, secrets included (never shown): one role's token is never used for
    // another role's mapping.
    let key = format!(
        "{:?}\u{0}{:?}\u{0}{}\u{0}{}",
        config.props(),
        r.storage,
        r.ambient,
        r.local_files
    );
    if let Some(c) = CONNECTED.with(|c| c.borrow_mut().get(&key)) {
        return Ok(c);
    }
    let storage = options::storage_config(r);
    let (config, caches) = (config.clone(), caches.clone());
    let catalog = runtime::block_on_interruptible(RestCatalog::connect(config, storage, caches))??;
    let catalog = Arc::new(if r.local_files {
        catalog
    } else {
        catalog.refusing_local_files()
    });
    CONNECTED.with(|c| c.borrow_mut().insert(key, catalog.clone()));
    Ok(catalog)
}
