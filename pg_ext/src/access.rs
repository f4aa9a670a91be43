//! How SQL functions that read a table (`icefloe_snapshots`, `icefloe_files`, ...) open it:
//! with the same checks as a scan. By foreign table: SELECT on it, then the scan's rules as
//! the current user. By server and name or location: USAGE on the server, the local-file rule
//! and the current user's mapping.

use std::ffi::CString;

use icefloe_core::Table;
use pgrx::pg_sys;

use crate::error::FdwError;
use crate::fdw::{self, CatalogOptions};
use crate::options::{self, Resolved};
use crate::pgutil;

fn denied(what: String) -> FdwError {
    FdwError::Permission(format!(
        "permission denied for {what} (role {})",
        // SAFETY: reads the current user id.
        pgutil::role_name(unsafe { pg_sys::GetUserId() })
    ))
}

/// Opens the Iceberg table a foreign table reads, as the current user.
pub fn open_foreign_table(relid: pg_sys::Oid) -> Result<(Table, Resolved), FdwError> {
    // SAFETY: catalog lookups.
    unsafe {
        let user = pg_sys::GetUserId();
        if pg_sys::get_rel_relkind(relid) as u8 != pg_sys::RELKIND_FOREIGN_TABLE {
            return Err(FdwError::Options(format!(
                "relation {} is not a foreign table",
                relid.to_u32()
            )));
        }
        if pg_sys::pg_class_aclcheck(relid, user, pg_sys::ACL_SELECT as pg_sys::AclMode)
            != pg_sys::AclResult::ACLCHECK_OK
        {
            return Err(denied(format!("foreign table {}", relid.to_u32())));
        }
        let ft = pg_sys::GetForeignTable(relid);
        let srv = pg_sys::GetForeignServer((*ft).serverid);
        let fdw_ = pg_sys::GetForeignDataWrapper((*srv).fdwid);
        if std::ffi::CStr::from_ptr((*fdw_).fdwname).to_bytes() != b"icefloe" {
            return Err(FdwError::Options(format!(
                "foreign table {} is not an icefloe table",
                relid.to_u32()
            )));
        }
        let opts = fdw::catalog_options(relid, user);
        let r = fdw::resolve_table(&opts, user)?;
        Ok((fdw::open_table(&r)?, r))
    }
}

/// Opens `table` (`namespace.table` under the server's warehouse, or a location) through
/// server `server_name`, as the current user.
pub fn open_by_name(table: &str, server_name: &str) -> Result<(Table, Resolved), FdwError> {
    let cname =
        CString::new(server_name).map_err(|_| FdwError::Options("bad server name".into()))?;
    // SAFETY: catalog lookups; missing_ok = false raises Postgres' own error.
    let (server_opts, mapping) = unsafe {
        let user = pg_sys::GetUserId();
        let s = pg_sys::GetForeignServerByName(cname.as_ptr(), false);
        if !has_server_usage((*s).serverid, user) {
            return Err(denied(format!("foreign server {server_name}")));
        }
        (
            options::read_def_list((*s).options),
            pgutil::user_mapping_options(user, (*s).serverid),
        )
    };
    let as_name = vec![("table".to_string(), table.to_string())];
    let table_opts = if options::table_name(&as_name).is_ok() && !table.contains(':') {
        as_name
    } else {
        vec![("location".to_string(), table.to_string())]
    };
    let opts = CatalogOptions {
        table: table_opts,
        server: server_opts,
        mapping,
        server_name: server_name.to_string(),
    };
    // SAFETY: reads the current user id.
    let r = fdw::resolve_table(&opts, unsafe { pg_sys::GetUserId() })?;
    Ok((fdw::open_table(&r)?, r))
}

/// Whether `user` has USAGE on a foreign server.
unsafe fn has_server_usage(server: pg_sys::Oid, user: pg_sys::Oid) -> bool {
    #[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15"))]
    let r = pg_sys::pg_foreign_server_aclcheck(server, user, pg_sys::ACL_USAGE as pg_sys::AclMode);
    #[cfg(not(any(feature = "pg13", feature = "pg14", feature = "pg15")))]
    let r = pg_sys::object_aclcheck(
        pg_sys::ForeignServerRelationId,
        server,
        user,
        pg_sys::ACL_USAGE as pg_sys::AclMode,
    );
    r == pg_sys::AclResult::ACLCHECK_OK
}
