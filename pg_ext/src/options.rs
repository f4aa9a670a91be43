//! Options of the wrapper's objects: what each catalog accepts, validation, and resolving a
//! foreign table's options (with its server's and the user mapping's) into what to read.
//!
//! - server: `warehouse` (root of a Hadoop-catalog warehouse: `file:///path`, a plain path, or
//!   `s3://bucket/prefix`, ...), and non-secret storage settings (`aws_region`, `aws_endpoint`,
//!   `aws_allow_http`).
//! - user mapping: storage settings including secrets (`aws_access_key_id`,
//!   `aws_secret_access_key`, `aws_session_token`, `google_service_account_key`,
//!   `azure_storage_account_key`, ...). Secrets are refused anywhere else, because server and
//!   table options are readable by every role, while Postgres shows user mapping options only
//!   to the mapped user and the server's owner.
//! - foreign table: `table` (`namespace.table` under the server's warehouse) or `location`
//!   (the table's root directory or a metadata file), and at most one of `snapshot_id`,
//!   `as_of` (a timestamp, or milliseconds since the epoch) and `ref` (branch or tag).
//! - column: `column_name` (the Iceberg column name, when it differs from the Postgres one).

use std::ffi::CStr;

use icefloe_core::SnapshotSelector;
use pgrx::pg_sys;

use crate::error::FdwError;

/// Storage settings that are not secrets: allowed on servers and user mappings.
pub const STORAGE_SETTINGS: &[&str] = &[
    "aws_region",
    "aws_endpoint",
    "aws_allow_http",
    "aws_virtual_hosted_style_request",
    "azure_storage_account_name",
    "google_bucket",
];
/// Storage secrets: allowed only on user mappings.
pub const STORAGE_SECRETS: &[&str] = &[
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
    "google_service_account",
    "google_service_account_key",
    "google_application_credentials",
    "azure_storage_account_key",
    "azure_storage_sas_key",
    "azure_client_id",
    "azure_client_secret",
    "azure_tenant_id",
];
/// Server options besides storage settings.
pub const SERVER_OPTIONS: &[&str] = &["warehouse"];
/// Foreign table options.
pub const TABLE_OPTIONS: &[&str] = &["table", "location", "snapshot_id", "as_of", "ref"];
/// Column options.
pub const COLUMN_OPTIONS: &[&str] = &["column_name"];
/// Options of `IMPORT FOREIGN SCHEMA ... OPTIONS (...)`, given to every imported table.
pub const IMPORT_OPTIONS: &[&str] = &["snapshot_id", "as_of", "ref"];

/// A list of `name = value` options as Postgres stores them.
pub type OptionList = Vec<(String, String)>;

/// Reads a `List *` of `DefElem` into pairs.
///
/// # Safety
/// `list` must be a valid list of `DefElem` nodes (or null).
pub unsafe fn read_def_list(list: *mut pg_sys::List) -> OptionList {
    let mut out = Vec::new();
    if list.is_null() {
        return out;
    }
    let len = (*list).length;
    for i in 0..len {
        let cell = pg_sys::list_nth(list, i) as *mut pg_sys::DefElem;
        if cell.is_null() {
            continue;
        }
        let name = CStr::from_ptr((*cell).defname)
            .to_string_lossy()
            .into_owned();
        let value = CStr::from_ptr(pg_sys::defGetString(cell))
            .to_string_lossy()
            .into_owned();
        out.push((name, value));
    }
    out
}

/// The value of option `name`, if given.
pub fn get<'a>(opts: &'a OptionList, name: &str) -> Option<&'a str> {
    opts.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// OID of the predefined role `pg_read_server_files` (fixed since Postgres 11; Postgres 13's
/// headers name it `DEFAULT_ROLE_READ_SERVER_FILES`, later ones `ROLE_PG_READ_SERVER_FILES`).
const ROLE_PG_READ_SERVER_FILES: u32 = 4569;

/// Whether a warehouse or table location reads local files (a `file:` URL or a plain path).
pub fn is_local(location: &str) -> bool {
    match location.split_once("://") {
        Some((scheme, _)) => scheme.eq_ignore_ascii_case("file"),
        None => {
            !location.contains(':') || location.starts_with("file:") || location.starts_with('/')
        }
    }
}

/// Refuses local file access to roles that are neither superusers nor members of
/// `pg_read_server_files` (the rule file_fdw follows).
pub fn check_local_access(location: &str, what: &str) -> Result<(), FdwError> {
    if !is_local(location) {
        return Ok(());
    }
    // SAFETY: plain catalog lookups on the current user.
    let allowed = unsafe {
        pg_sys::superuser()
            || pg_sys::has_privs_of_role(
                pg_sys::GetUserId(),
                pg_sys::Oid::from(ROLE_PG_READ_SERVER_FILES),
            )
    };
    if allowed {
        Ok(())
    } else {
        Err(FdwError::Permission(format!(
            "only superusers and members of pg_read_server_files may use {what} {location:?}, which reads local files"
        )))
    }
}

/// Which catalog an option list belongs to, for validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionTarget {
    Wrapper,
    Server,
    UserMapping,
    Table,
    Column,
}

impl OptionTarget {
    /// The target for a catalog's relation id, as the validator receives it.
    pub fn from_catalog(catalog: pg_sys::Oid) -> Option<OptionTarget> {
        let c = catalog;
        if c == pg_sys::ForeignDataWrapperRelationId {
            Some(OptionTarget::Wrapper)
        } else if c == pg_sys::ForeignServerRelationId {
            Some(OptionTarget::Server)
        } else if c == pg_sys::UserMappingRelationId {
            Some(OptionTarget::UserMapping)
        } else if c == pg_sys::ForeignTableRelationId {
            Some(OptionTarget::Table)
        } else if c == pg_sys::AttributeRelationId {
            Some(OptionTarget::Column)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            OptionTarget::Wrapper => "foreign-data wrapper icefloe",
            OptionTarget::Server => "a server",
            OptionTarget::UserMapping => "a user mapping",
            OptionTarget::Table => "a foreign table",
            OptionTarget::Column => "a foreign table column",
        }
    }

    fn valid(self) -> Vec<&'static str> {
        match self {
            OptionTarget::Wrapper => vec![],
            OptionTarget::Server => SERVER_OPTIONS
                .iter()
                .chain(STORAGE_SETTINGS)
                .copied()
                .collect(),
            OptionTarget::UserMapping => STORAGE_SETTINGS
                .iter()
                .chain(STORAGE_SECRETS)
                .copied()
                .collect(),
            OptionTarget::Table => TABLE_OPTIONS.to_vec(),
            OptionTarget::Column => COLUMN_OPTIONS.to_vec(),
        }
    }
}

/// Checks an option list for one catalog: known names, no duplicates, values that parse, no
/// secrets outside user mappings, local paths only for privileged roles.
pub fn validate(opts: &OptionList, target: OptionTarget) -> Result<(), FdwError> {
    let valid = target.valid();
    for (i, (name, value)) in opts.iter().enumerate() {
        if !valid.contains(&name.as_str()) {
            if STORAGE_SECRETS.contains(&name.as_str()) {
                return Err(FdwError::MisplacedSecret {
                    name: name.clone(),
                    object: target.name(),
                });
            }
            return Err(FdwError::UnknownOption {
                name: name.clone(),
                object: target.name(),
                valid: if valid.is_empty() {
                    "(none)".into()
                } else {
                    valid.join(", ")
                },
            });
        }
        if opts[..i].iter().any(|(n, _)| n == name) {
            return Err(FdwError::Options(format!(
                "option \"{name}\" given more than once"
            )));
        }
        if value.trim().is_empty() {
            return Err(FdwError::BadOption {
                name: name.clone(),
                reason: "must not be empty".into(),
            });
        }
    }
    match target {
        OptionTarget::Server => {
            if let Some(w) = get(opts, "warehouse") {
                check_local_access(w, "warehouse")?;
            }
        }
        OptionTarget::Table => {
            match (get(opts, "table"), get(opts, "location")) {
                (Some(_), Some(_)) => {
                    return Err(FdwError::Options("give either \"table\" or \"location\", not both".into()))
                }
                (None, None) => {
                    return Err(FdwError::Options(
                        "a foreign table needs option \"table\" ('namespace.table' under the server's warehouse) or \"location\"".into(),
                    ))
                }
                (Some(t), None) => {
                    table_path(t)?;
                }
                (None, Some(l)) => check_local_access(l, "location")?,
            }
            selector(opts)?;
        }
        _ => {}
    }
    Ok(())
}

/// The path of `namespace.table` under a warehouse: `<namespace>/<table>`, nested namespaces
/// as nested directories.
pub fn table_path(name: &str) -> Result<String, FdwError> {
    let parts: Vec<&str> = name.split('.').collect();
    if parts.len() < 2 || parts.iter().any(|p| p.is_empty() || p.contains('/')) {
        return Err(FdwError::BadOption {
            name: "table".into(),
            reason: format!("{name:?} is not of the form namespace.table"),
        });
    }
    Ok(parts.join("/"))
}

/// The snapshot selector of a table's (or an import's) options. `as_of` accepts any
/// timestamptz input (read in the session's time zone) or milliseconds since the epoch.
pub fn selector(opts: &OptionList) -> Result<SnapshotSelector, FdwError> {
    let given: Vec<&str> = ["snapshot_id", "as_of", "ref"]
        .into_iter()
        .filter(|k| get(opts, k).is_some())
        .collect();
    if given.len() > 1 {
        return Err(FdwError::Options(format!(
            "give at most one of snapshot_id, as_of and ref (got {})",
            given.join(", ")
        )));
    }
    if let Some(v) = get(opts, "snapshot_id") {
        return v
            .trim()
            .parse::<i64>()
            .map(SnapshotSelector::Id)
            .map_err(|_| FdwError::BadOption {
                name: "snapshot_id".into(),
                reason: format!("{v:?} is not a snapshot id (a 64-bit integer)"),
            });
    }
    if let Some(v) = get(opts, "as_of") {
        return as_of_millis(v).map(SnapshotSelector::AsOf);
    }
    if let Some(v) = get(opts, "ref") {
        return Ok(SnapshotSelector::Ref(v.to_string()));
    }
    Ok(SnapshotSelector::Current)
}

/// Microseconds between 1970-01-01 and 2000-01-01 (Postgres' epoch).
pub const PG_EPOCH_OFFSET_MICROS: i64 = 946_684_800_000_000;

fn as_of_millis(v: &str) -> Result<i64, FdwError> {
    if let Ok(ms) = v.trim().parse::<i64>() {
        return Ok(ms);
    }
    let micros = crate::pgutil::parse_timestamptz(v).ok_or_else(|| FdwError::BadOption {
        name: "as_of".into(),
        reason: format!("{v:?} is neither a timestamp nor milliseconds since the epoch"),
    })?;
    Ok((micros + PG_EPOCH_OFFSET_MICROS).div_euclid(1000))
}

/// What a foreign table reads, resolved from its options, its server's and the user mapping's.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// Table root or metadata file: a URL or a local path.
    pub location: String,
    /// Which snapshot.
    pub selector: SnapshotSelector,
    /// Storage settings and secrets (server, then user mapping, which wins).
    pub storage: OptionList,
    /// How to name the table in messages (`db.t` or the location).
    pub display: String,
}

/// Resolves a table's options against its server's options.
pub fn resolve(
    table: &OptionList,
    server: &OptionList,
    mapping: &OptionList,
) -> Result<Resolved, FdwError> {
    let (location, display) = match (get(table, "table"), get(table, "location")) {
        (_, Some(l)) => (l.to_string(), l.to_string()),
        (Some(t), None) => {
            let w = get(server, "warehouse").ok_or_else(|| {
                FdwError::Options(format!(
                    "foreign table option table '{t}' needs option \"warehouse\" on its server"
                ))
            })?;
            (
                format!("{}/{}", w.trim_end_matches('/'), table_path(t)?),
                t.to_string(),
            )
        }
        (None, None) => {
            return Err(FdwError::Options(
                "a foreign table needs option \"table\" or \"location\"".into(),
            ))
        }
    };
    let mut storage: OptionList = server
        .iter()
        .filter(|(k, _)| STORAGE_SETTINGS.contains(&k.as_str()))
        .cloned()
        .collect();
    for (k, v) in mapping {
        storage.retain(|(sk, _)| sk != k);
        storage.push((k.clone(), v.clone()));
    }
    Ok(Resolved {
        location,
        selector: selector(table)?,
        storage,
        display,
    })
}
