//! Which Iceberg table a foreign table reads, and opening it: the catalog options of the
//! table, its server and the user mapping, the role the read runs as and its access checks,
//! the version pinned for the statement or transaction ([`crate::pin`]), and the metadata
//! caches kept per set of storage credentials.

use std::ffi::CStr;

use icefloe_core::catalog::{Catalog, TablePath, Warehouse};
use icefloe_core::Table;
use pgrx::pg_sys;

use crate::error::FdwError;
use crate::options::{self, OptionList, Resolved};
use crate::pgutil;
use crate::runtime;

/// The options of a foreign table, its server and the user mapping that applies.
pub(crate) struct CatalogOptions {
    /// The foreign table's options.
    pub(crate) table: OptionList,
    /// Its server's options.
    pub(crate) server: OptionList,
    /// The user mapping options of the role the scan runs as (or PUBLIC's); empty without one.
    pub(crate) mapping: OptionList,
    /// The server's name.
    pub(crate) server_name: String,
}

/// Reads the options a foreign table is read with, as role `user`.
///
/// # Safety
/// `relid` must be a foreign table.
pub(crate) unsafe fn catalog_options(relid: pg_sys::Oid, user: pg_sys::Oid) -> CatalogOptions {
    let ft = pg_sys::GetForeignTable(relid);
    let server = pg_sys::GetForeignServer((*ft).serverid);
    CatalogOptions {
        table: options::read_def_list((*ft).options),
        server: options::read_def_list((*server).options),
        mapping: pgutil::user_mapping_options(user, (*ft).serverid),
        server_name: CStr::from_ptr((*server).servername)
            .to_string_lossy()
            .into_owned(),
    }
}

/// The role whose rights and user mapping apply: the one Postgres checks the relation as
/// (a view's owner), else the current user (as postgres_fdw does).
pub(super) fn effective_user(check_as: pg_sys::Oid) -> pg_sys::Oid {
    if check_as != pg_sys::InvalidOid {
        check_as
    } else {
        // SAFETY: reads the current user id.
        unsafe { pg_sys::GetUserId() }
    }
}

/// Resolves what a foreign table reads and checks that `user` may read it.
pub(crate) fn resolve_table(
    opts: &CatalogOptions,
    user: pg_sys::Oid,
) -> Result<Resolved, FdwError> {
    let mut r = options::resolve(&opts.table, &opts.server, &opts.mapping, &opts.server_name)?;
    r.local_files = options::may_read_server_files(user);
    if r.catalog.is_some() {
        // The catalog names the location: the core refuses a local one (r.local_files).
        return Ok(r);
    }
    options::check_local_access(&r.location, "Iceberg table", user)?;
    for (_, new) in &r.open.path_map {
        options::check_local_access(new, "path_map target", user)?;
    }
    if let Some(f) = &r.open.metadata.metadata_file {
        if !icefloe_core::io::Location::parse(f).is_relative() {
            options::check_local_access(f, "metadata_file", user)?;
        }
    }
    Ok(r)
}

/// Opens the table a resolved foreign table reads: the version pinned for this statement or
/// transaction ([`crate::pin`]), else the newest (cached metadata).
pub(crate) fn open_table(r: &Resolved) -> Result<Table, FdwError> {
    // By values, secrets included (never shown): a table one role's catalog token loaded is
    // never the pinned table of a role with another token.
    let key = format!(
        "{}\u{0}{:?}\u{0}{}\u{0}{:?}\u{0}{:?}\u{0}{}",
        r.location,
        r.storage,
        r.ambient,
        r.open,
        r.catalog.as_ref().map(|c| c.props()),
        r.local_files
    );
    crate::pin::pinned(&key, || open_unpinned(r, &r.location))
}

thread_local! {
    /// Caches per set of storage credentials, so that metadata one role's credentials fetched
    /// is never served to a role with other (or no) credentials.
    static CACHES: std::cell::RefCell<crate::recent::Recent<std::sync::Arc<icefloe_core::cache::Caches>>> =
        const { std::cell::RefCell::new(crate::recent::Recent::new(CREDENTIAL_CACHES)) };
}

/// Caches for tables read with `r`'s storage settings and credentials: the process-wide ones
/// when there are none (local files, anonymous access).
pub(crate) fn caches_for(r: &Resolved) -> std::sync::Arc<icefloe_core::cache::Caches> {
    static SIZED: std::sync::Once = std::sync::Once::new();
    // The backend's caches take icefloe.cache_size when first used.
    SIZED.call_once(|| icefloe_core::cache::Caches::init_global(crate::settings::cache_bytes()));
    if r.storage.is_empty() && !r.ambient {
        return icefloe_core::cache::Caches::global();
    }
    let key = format!("{:?}\u{0}{}", r.storage, r.ambient);
    CACHES.with(|c| {
        let mut c = c.borrow_mut();
        if let Some(caches) = c.get(&key) {
            return caches;
        }
        let caches = std::sync::Arc::new(icefloe_core::cache::Caches::new(
            crate::settings::cache_bytes() / 4,
        ));
        c.insert(key, caches.clone());
        caches
    })
}

/// How many sets of storage credentials a backend keeps caches for besides the process-wide
/// ones (each a quarter of `icefloe.cache_size`).
const CREDENTIAL_CACHES: usize = 4;

/// Opens `location` (the table's, or one of its metadata files: a parallel worker reads the
/// version its leader pinned) with `r`'s storage settings and credentials.
pub(super) fn open_unpinned(r: &Resolved, location: &str) -> Result<Table, FdwError> {
    let caches = caches_for(r);
    let storage = crate::options::storage_config(r);
    // A metadata file (a parallel worker's) is opened by its path, as it is: the metadata
    // file choice was made by the leader.
    let own = location == r.location;
    let open = icefloe_core::OpenOptions {
        storage,
        metadata: if own {
            r.open.metadata.clone()
        } else {
            Default::default()
        },
        path_map: r.open.path_map.clone(),
        strict: r.open.strict,
    };
    let table = if own { r.table.clone() } else { None };
    let location = location.to_string();
    let catalog = match (&r.catalog, own) {
        (Some(config), true) => Some(crate::rest::connected(r, config, &caches)?),
        (Some(_), false) => {
            return Err(FdwError::Internal(format!(
                "table {} of a REST catalog opened by metadata file {location}",
                r.display
            )))
        }
        (None, _) => None,
    };
    let strict = r.open.strict;
    runtime::block_on_interruptible(async move {
        match table {
            Some((_, ident)) if catalog.is_some() => {
                // A catalog's table is opened as the catalog says: strict is applied after.
                let t = catalog.expect("checked").load_table(&ident).await?;
                if strict {
                    t.make_strict()?;
                }
                Ok(t)
            }
            Some((warehouse, ident)) => {
                Warehouse::new(&warehouse, open, caches)?
                    .load_table(&ident)
                    .await
            }
            None => TablePath::new(&location, open, caches).load().await,
        }
    })?
    .map_err(|e| match e {
        icefloe_core::Error::Location { reason, .. }
        | icefloe_core::Error::NoSuchTable { reason, .. } => FdwError::TableNotFound {
            table: r.display.clone(),
            reason,
        },
        icefloe_core::Error::NotFound { path, .. } => FdwError::TableNotFound {
            table: r.display.clone(),
            reason: format!("{path} does not exist"),
        },
        e => crate::error::from_core(e),
    })
}
