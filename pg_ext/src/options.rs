//! Options of the wrapper's objects: what each catalog accepts, validation, and resolving a
//! foreign table's options (with its server's and the user mapping's) into what to read.
//!
//! The security model (pg_ext/README.md, "Security"), as postgres_fdw's: the server's owner
//! decides where backends connect and which credentials the machine lends; a role's user
//! mapping holds only that role's own secrets.
//!
//! - server: `warehouse` (root of a Hadoop-catalog warehouse: `file:///path`, a plain path, or
//!   `s3://bucket/prefix`, ...), the endpoint settings (`aws_region`, `aws_endpoint`,
//!   `aws_allow_http`, ...), and `ambient_credentials` (whether the postmaster's own cloud
//!   credentials may be used: superuser only). A server of an Iceberg REST catalog has
//!   `catalog_uri` and the catalog's settings ([`CATALOG_SETTINGS`]); its `warehouse` is then
//!   the catalog's warehouse name, which the catalog's `GET /v1/config` is asked for.
//! - user mapping: storage secrets (`aws_access_key_id`, `aws_secret_access_key`,
//!   `aws_session_token`, `google_service_account_key`, `azure_storage_account_key`, ...)
//!   and a REST catalog's secrets (`credential`, `token`).
//!   Secrets are refused anywhere else, because server and table options are readable by every
//!   role, while Postgres shows user mapping options only to the mapped user and the server's
//!   owner. Options that name local files (`google_service_account`,
//!   `google_application_credentials`) are superuser only.
//! - foreign table: `namespace` and `table` (under the server's warehouse; `table` alone may
//!   be `namespace.table`), or `location` (the table's root directory or a metadata file), and
//!   at most one of `snapshot_id`, `as_of` (an ISO-8601 time, UTC unless it has an offset, or
//!   milliseconds since the epoch) and `ref` (branch or tag).
//! - column: `column_name` (the Iceberg column name, when it differs from the Postgres one).
//! - how a table's metadata file is chosen and where its files are read (the CLI's and the
//!   mount's flags, ClickHouse's table settings): `metadata_file` and `table_uuid` on a foreign
//!   table; `latest_by_last_updated_ms` (boolean) and `path_map` (`OLD=NEW` pairs separated by
//!   commas, first match wins) on a foreign table or its server, the table's winning. A
//!   `path_map` target or `metadata_file` that reads local files follows the local-file rule.
//! - `strict` (boolean, server): refuse a table that breaks any rule of the spec, also one
//!   whose rows the rule does not change (read by default as Iceberg Java reads it, with a
//!   WARNING per scan).

use std::ffi::CStr;

use icefloe_core::catalog::warehouse::{relative_path, table_location};
use icefloe_core::catalog::{Namespace, TableIdent};
use icefloe_core::io::{Ambient, LocationKind, StorageConfig};
use icefloe_core::SnapshotSelector;
use pgrx::pg_sys;

use crate::error::FdwError;

/// Where backends connect: server options only (set by the server's owner).
pub const ENDPOINT_SETTINGS: &[&str] = &[
    "aws_region",
    "aws_endpoint",
    "aws_allow_http",
    "aws_virtual_hosted_style_request",
    "azure_storage_account_name",
    "google_bucket",
];
/// Server options that choose a network destination (a host, a port, plain HTTP): a
/// non-superuser may set them only to a destination that `icefloe.allowed_endpoints` lists
/// ([`check_destinations`]). Without the rule, any role with USAGE on the wrapper could make
/// backends send requests to internal HTTP services (an instance's metadata endpoint).
pub const DESTINATION_OPTIONS: &[&str] = &[
    "aws_endpoint",
    "aws_allow_http",
    "catalog_uri",
    "oauth2_server_uri",
];
/// Server options that become part of a host name (`s3.<region>.amazonaws.com`,
/// `<account>.blob.core.windows.net`): only names of the characters such names have.
const HOST_PART_OPTIONS: &[&str] = &["aws_region", "azure_storage_account_name", "google_bucket"];
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
/// Secrets that name a file of the server's machine: only superusers may set them.
pub const LOCAL_FILE_SECRETS: &[&str] =
    &["google_service_account", "google_application_credentials"];
/// A REST catalog's secrets (PyIceberg's names): allowed only on user mappings.
pub const CATALOG_SECRETS: &[(&str, &str)] = &[("credential", "credential"), ("token", "token")];
/// A REST catalog's settings on its server, with the catalog property each sets (PyIceberg's
/// and Iceberg Java's names, written with underscores as option names are).
pub const CATALOG_SETTINGS: &[(&str, &str)] = &[
    ("catalog_uri", "uri"),
    ("scope", "scope"),
    ("oauth2_server_uri", "oauth2-server-uri"),
    ("rest_sigv4_enabled", "rest.sigv4-enabled"),
    ("rest_signing_name", "rest.signing-name"),
    ("rest_signing_region", "rest.signing-region"),
    ("rest_page_size", "rest-page-size"),
];
/// Server options besides endpoint settings and catalog settings.
pub const SERVER_OPTIONS: &[&str] = &[
    "warehouse",
    "ambient_credentials",
    "latest_by_last_updated_ms",
    "path_map",
    "strict",
];
/// Options that choose a metadata file or rewrite paths: a REST catalog makes those choices,
/// so its servers and their tables refuse them.
const OPEN_OPTIONS: &[&str] = &[
    "location",
    "metadata_file",
    "table_uuid",
    "latest_by_last_updated_ms",
    "path_map",
];
/// Foreign table options.
pub const TABLE_OPTIONS: &[&str] = &[
    "namespace",
    "table",
    "location",
    "snapshot_id",
    "as_of",
    "ref",
    "metadata_file",
    "table_uuid",
    "latest_by_last_updated_ms",
    "path_map",
];
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

/// Whether a warehouse or table location reads local files, judged by the core's parser of
/// locations (the one that opens them). Locations it cannot open are errors.
pub fn is_local(location: &str) -> Result<bool, FdwError> {
    Ok(icefloe_core::io::classify(location)? == LocationKind::Local)
}

/// Whether `user` is a superuser or a member of `pg_read_server_files`.
pub fn may_read_server_files(user: pg_sys::Oid) -> bool {
    // SAFETY: plain catalog lookups.
    unsafe {
        pg_sys::superuser_arg(user)
            || pg_sys::has_privs_of_role(user, pg_sys::Oid::from(ROLE_PG_READ_SERVER_FILES))
    }
}

/// Refuses local file access to roles that are neither superusers nor members of
/// `pg_read_server_files` (the rule file_fdw follows). `user` is the role whose rights apply.
pub fn check_local_access(location: &str, what: &str, user: pg_sys::Oid) -> Result<(), FdwError> {
    if !is_local(location)? || may_read_server_files(user) {
        return Ok(());
    }
    Err(FdwError::Permission(format!(
        "only superusers and members of pg_read_server_files may use {what} {location:?}, which reads local files (role {})",
        crate::pgutil::role_name(user)
    )))
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
                .chain(ENDPOINT_SETTINGS)
                .copied()
                .chain(CATALOG_SETTINGS.iter().map(|(o, _)| *o))
                .collect(),
            OptionTarget::UserMapping => STORAGE_SECRETS
                .iter()
                .copied()
                .chain(CATALOG_SECRETS.iter().map(|(o, _)| *o))
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
            let catalog_secret = CATALOG_SECRETS.iter().any(|(o, _)| o == name);
            if STORAGE_SECRETS.contains(&name.as_str()) || catalog_secret {
                return Err(FdwError::MisplacedSecret {
                    name: name.clone(),
                    object: target.name(),
                });
            }
            if target == OptionTarget::UserMapping
                && (ENDPOINT_SETTINGS.contains(&name.as_str())
                    || SERVER_OPTIONS.contains(&name.as_str())
                    || CATALOG_SETTINGS.iter().any(|(o, _)| o == name))
            {
                return Err(FdwError::ServerOnly { name: name.clone() });
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
    // SAFETY: the role running the command being validated.
    let user = unsafe { pg_sys::GetUserId() };
    // SAFETY: a catalog lookup.
    let superuser = unsafe { pg_sys::superuser_arg(user) };
    match target {
        OptionTarget::Server => {
            if is_catalog_server(opts) {
                check_catalog_server(opts)?;
            } else if let Some(w) = get(opts, "warehouse") {
                check_local_access(w, "warehouse", user)?;
            }
            check_open_options(opts, user)?;
            check_destinations(opts, superuser, &crate::settings::allowed_endpoints())?;
            if ambient_credentials(opts)? && !superuser {
                return Err(FdwError::Permission(
                    "only superusers may set ambient_credentials 'true': it lends the server machine's own cloud credentials to every user of the server".into(),
                ));
            }
        }
        OptionTarget::UserMapping => {
            for (name, _) in opts {
                if LOCAL_FILE_SECRETS.contains(&name.as_str()) && !superuser {
                    return Err(FdwError::Permission(format!(
                        "only superusers may set option \"{name}\": it names a file on the server's machine"
                    )));
                }
            }
        }
        OptionTarget::Table => {
            if get(opts, "location").is_some()
                && (get(opts, "table").is_some() || get(opts, "namespace").is_some())
            {
                return Err(FdwError::Options(
                    "give either \"location\" or \"table\" (with \"namespace\"), not both".into(),
                ));
            }
            match get(opts, "location") {
                Some(l) => check_local_access(l, "location", user)?,
                None => {
                    table_name(opts)?;
                }
            }
            selector(opts)?;
            check_open_options(opts, user)?;
        }
        _ => {}
    }
    Ok(())
}

/// The network-destination rule for a server's options: a superuser may point a server
/// anywhere; another role only at a destination on the `allowed` list (URL prefixes, from
/// `icefloe.allowed_endpoints`), and `aws_allow_http` only with such an `aws_endpoint`. Host
/// name parts (region, account, bucket) must look like such names whoever sets them.
pub fn check_destinations(
    opts: &OptionList,
    superuser: bool,
    allowed: &[String],
) -> Result<(), FdwError> {
    for name in HOST_PART_OPTIONS {
        if let Some(v) = get(opts, name) {
            if !icefloe_core::io::destination::is_host_part(v) {
                return Err(FdwError::BadOption {
                    name: name.to_string(),
                    reason: format!(
                        "{v:?} is not a name of letters, digits, '-', '.' and '_' (it becomes part of a host name)"
                    ),
                });
            }
        }
    }
    if superuser {
        return Ok(());
    }
    for name in DESTINATION_OPTIONS {
        let Some(v) = get(opts, name) else { continue };
        let dest = if *name == "aws_allow_http" {
            match get(opts, "aws_endpoint") {
                Some(e) => e,
                None if !parse_bool(name, v)? => continue,
                None => {
                    return Err(FdwError::Permission(
                        "only superusers may set aws_allow_http 'true' without an aws_endpoint that icefloe.allowed_endpoints lists".into(),
                    ))
                }
            }
        } else {
            v
        };
        if !allowed
            .iter()
            .any(|a| icefloe_core::io::destination::endpoint_allowed(dest, a))
        {
            return Err(FdwError::Permission(format!(
                "only superusers may set option \"{name}\" to {dest:?}: it chooses where backends send requests; a superuser may list the destination in icefloe.allowed_endpoints (now {})",
                if allowed.is_empty() { "empty".to_string() } else { format!("{:?}", allowed.join(",")) }
            )));
        }
    }
    Ok(())
}

/// Whether a server's options name a REST catalog (`catalog_uri`).
pub fn is_catalog_server(server: &OptionList) -> bool {
    get(server, "catalog_uri").is_some()
}

/// Checks a REST catalog server's options: a catalog URI the core accepts, boolean and number
/// settings that parse, and none of the options only a warehouse server takes.
fn check_catalog_server(opts: &OptionList) -> Result<(), FdwError> {
    for name in OPEN_OPTIONS {
        if get(opts, name).is_some() {
            return Err(FdwError::Options(format!(
                "option \"{name}\" is not for a REST catalog server: the catalog says where each table's metadata is"
            )));
        }
    }
    let config = rest_config(opts, &OptionList::new(), "validation")?;
    config.flag("rest.sigv4-enabled")?;
    config.page_size()?;
    Ok(())
}

/// The REST catalog configuration of a server (its [`CATALOG_SETTINGS`] and `warehouse`) and
/// a user mapping (its [`CATALOG_SECRETS`]; for SigV4 signing, its AWS key pair, as PyIceberg
/// finds it through boto3). `name` is how messages name the catalog (the server's name).
pub fn rest_config(
    server: &OptionList,
    mapping: &OptionList,
    name: &str,
) -> Result<icefloe_core::catalog::rest::RestConfig, FdwError> {
    let mut props: Vec<(String, String)> = Vec::new();
    for (option, key) in CATALOG_SETTINGS {
        if let Some(v) = get(server, option) {
            props.push((key.to_string(), v.trim().to_string()));
        }
    }
    if let Some(w) = get(server, "warehouse") {
        props.push(("warehouse".into(), w.to_string()));
    }
    for (option, key) in CATALOG_SECRETS {
        if let Some(v) = get(mapping, option) {
            props.push((key.to_string(), v.to_string()));
        }
    }
    for (option, key) in [
        ("aws_access_key_id", "client.access-key-id"),
        ("aws_secret_access_key", "client.secret-access-key"),
        ("aws_session_token", "client.session-token"),
    ] {
        if let Some(v) = get(mapping, option) {
            props.push((key.to_string(), v.to_string()));
        }
    }
    Ok(icefloe_core::catalog::rest::RestConfig::new(name, props)?)
}

/// A namespace as the `namespace` option writes it: the core's dotted form (`db`, `a.b`; a
/// level holding dots in double quotes, `"v3.x".sub`), each level a directory name of the
/// warehouse.
pub fn parse_namespace(text: &str) -> Result<Namespace, FdwError> {
    let bad = |reason: String| FdwError::BadOption {
        name: "namespace".into(),
        reason,
    };
    let ns = Namespace::parse(text).map_err(|e| bad(e.to_string()))?;
    if ns.is_root() {
        return Err(bad("must name a namespace".into()));
    }
    relative_path(ns.levels()).map_err(|r| bad(format!("{text:?}: {r}")))?;
    Ok(ns)
}

/// The table a foreign table's options name: `namespace` and `table`, or `table` alone as
/// `namespace.table` (read as the core reads table identifiers).
pub fn table_name(opts: &OptionList) -> Result<TableIdent, FdwError> {
    let Some(t) = get(opts, "table") else {
        return Err(FdwError::Options(
            "a foreign table needs option \"table\" (with \"namespace\", under the server's warehouse) or \"location\"".into(),
        ));
    };
    let bad = |reason: String| FdwError::BadOption {
        name: "table".into(),
        reason,
    };
    let ident = match get(opts, "namespace") {
        Some(ns) => TableIdent::new(parse_namespace(ns)?, t),
        None => {
            TableIdent::parse(t).map_err(|e| bad(format!("{e} (or give option \"namespace\")")))?
        }
    };
    relative_path(&ident.path()).map_err(|r| bad(format!("{t:?}: {r}")))?;
    Ok(ident)
}

/// Whether a server's options lend it the machine's ambient credentials.
pub fn ambient_credentials(server: &OptionList) -> Result<bool, FdwError> {
    match get(server, "ambient_credentials") {
        None => Ok(false),
        Some(v) => match v.trim().to_ascii_lowercase().as_str() {
            "true" | "on" | "yes" | "1" => Ok(true),
            "false" | "off" | "no" | "0" => Ok(false),
            _ => Err(FdwError::BadOption {
                name: "ambient_credentials".into(),
                reason: format!("{v:?} is not a boolean"),
            }),
        },
    }
}

/// The snapshot selector of a table's (or an import's) options. `as_of` is read as the CLI
/// reads `--as-of` (UTC unless the text has an offset, or milliseconds since the epoch), never
/// in the session's time zone, so it names one instant whoever reads the table.
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
        return icefloe_core::instant::parse_instant_ms(v)
            .map(SnapshotSelector::AsOf)
            .map_err(|e| FdwError::BadOption {
                name: "as_of".into(),
                reason: e.to_string(),
            });
    }
    if let Some(v) = get(opts, "ref") {
        return Ok(SnapshotSelector::Ref(v.to_string()));
    }
    Ok(SnapshotSelector::Current)
}

/// Microseconds between 1970-01-01 and 2000-01-01 (Postgres' epoch).
pub const PG_EPOCH_OFFSET_MICROS: i64 = 946_684_800_000_000;

/// What a foreign table reads, resolved from its options, its server's and the user mapping's.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// Table root or metadata file: a URL or a local path.
    pub location: String,
    /// The server's warehouse and the table in it, when named by `namespace` and `table`
    /// (loaded through the core's warehouse catalog).
    pub table: Option<(String, TableIdent)>,
    /// Which snapshot.
    pub selector: SnapshotSelector,
    /// Endpoint settings (server) and secrets (user mapping).
    pub storage: OptionList,
    /// Whether the machine's ambient credentials may be used (server option).
    pub ambient: bool,
    /// How to name the table in messages (`db.t` or the location).
    pub display: String,
    /// Which metadata file, and the path map (table options over server options).
    pub open: OpenSettings,
    /// The REST catalog the table is loaded through (`table` names it there), when the
    /// server is a catalog's.
    pub catalog: Option<icefloe_core::catalog::rest::RestConfig>,
    /// Whether the role reading may read local files (set by the caller that knows the
    /// role): a catalog's answer naming local files is refused otherwise.
    pub local_files: bool,
}

/// The options that say how a table is opened beyond its location (see the module comment).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenSettings {
    pub metadata: icefloe_core::MetadataSelection,
    pub path_map: Vec<(String, String)>,
    /// The server's `strict`: warnings are errors.
    pub strict: bool,
}

/// `path_map`: `OLD=NEW` pairs separated by commas.
pub fn parse_path_map(v: &str) -> Result<Vec<(String, String)>, FdwError> {
    v.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|pair| match pair.trim().split_once('=') {
            Some((old, new)) if !old.is_empty() && !new.is_empty() => {
                Ok((old.to_string(), new.to_string()))
            }
            _ => Err(FdwError::BadOption {
                name: "path_map".into(),
                reason: format!("{pair:?} is not OLD=NEW"),
            }),
        })
        .collect()
}

fn parse_bool(name: &str, v: &str) -> Result<bool, FdwError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "on" | "yes" | "1" => Ok(true),
        "false" | "off" | "no" | "0" => Ok(false),
        _ => Err(FdwError::BadOption {
            name: name.into(),
            reason: format!("{v:?} is not a boolean"),
        }),
    }
}

/// The open settings of a table's options over its server's.
pub fn open_settings(table: &OptionList, server: &OptionList) -> Result<OpenSettings, FdwError> {
    let either = |k: &str| get(table, k).or_else(|| get(server, k));
    Ok(OpenSettings {
        metadata: icefloe_core::MetadataSelection {
            metadata_file: get(table, "metadata_file").map(str::to_string),
            table_uuid: get(table, "table_uuid").map(|u| u.trim().to_string()),
            latest_by_last_updated_ms: either("latest_by_last_updated_ms")
                .map(|v| parse_bool("latest_by_last_updated_ms", v))
                .transpose()?
                .unwrap_or(false),
        },
        path_map: either("path_map")
            .map(parse_path_map)
            .transpose()?
            .unwrap_or_default(),
        strict: get(server, "strict")
            .map(|v| parse_bool("strict", v))
            .transpose()?
            .unwrap_or(false),
    })
}

/// Checks the open settings an option list gives: values that parse, and the local-file rule
/// for every place they lead to (a `path_map` target, an absolute `metadata_file`).
fn check_open_options(opts: &OptionList, user: pg_sys::Oid) -> Result<(), FdwError> {
    let settings = open_settings(opts, &OptionList::new())?;
    if let Some(v) = get(opts, "strict") {
        parse_bool("strict", v)?;
    }
    for (_, new) in &settings.path_map {
        check_local_access(new, "path_map target", user)?;
    }
    if let Some(f) = &settings.metadata.metadata_file {
        if !icefloe_core::io::Location::parse(f).is_relative() {
            check_local_access(f, "metadata_file", user)?;
        }
    }
    Ok(())
}

/// Resolves a table's options against its server's options and the user mapping's.
pub fn resolve(
    table: &OptionList,
    server: &OptionList,
    mapping: &OptionList,
    server_name: &str,
) -> Result<Resolved, FdwError> {
    let ambient = ambient_credentials(server)?;
    if is_catalog_server(server) {
        return resolve_in_catalog(table, server, mapping, server_name, ambient);
    }
    let warehouse = get(server, "warehouse");
    let (location, display, ident) = match get(table, "location") {
        Some(l) => {
            // Ambient credentials are lent for the server's warehouse only.
            if ambient && !is_local(l)? && !warehouse.is_some_and(|w| under(l, w)) {
                return Err(FdwError::Permission(format!(
                    "location {l:?} is not under the warehouse of its server, which lends ambient credentials only there"
                )));
            }
            (l.to_string(), l.to_string(), None)
        }
        None => {
            let ident = table_name(table)?;
            let w = warehouse.ok_or_else(|| {
                FdwError::Options(format!(
                    "foreign table option table '{}' needs option \"warehouse\" on its server",
                    ident.name
                ))
            })?;
            let location = table_location(w, &ident).map_err(|reason| FdwError::BadOption {
                name: "table".into(),
                reason,
            })?;
            let display = ident.to_string();
            (location, display, Some((w.to_string(), ident)))
        }
    };
    let storage = storage_options(server, mapping);
    let open = open_settings(table, server)?;
    if ambient {
        for (_, new) in &open.path_map {
            if !is_local(new)? && !warehouse.is_some_and(|w| under(new, w)) {
                return Err(FdwError::Permission(format!(
                    "path_map target {new:?} is not under the warehouse of its server, which lends ambient credentials only there"
                )));
            }
        }
    }
    Ok(Resolved {
        location,
        table: ident,
        selector: selector(table)?,
        storage,
        ambient,
        display,
        open,
        catalog: None,
        local_files: false,
    })
}

/// [`resolve`] for a table of a REST catalog server: named by `namespace` and `table`, loaded
/// through the catalog.
fn resolve_in_catalog(
    table: &OptionList,
    server: &OptionList,
    mapping: &OptionList,
    server_name: &str,
    ambient: bool,
) -> Result<Resolved, FdwError> {
    for name in OPEN_OPTIONS {
        if get(table, name).is_some() {
            return Err(FdwError::Options(format!(
                "option \"{name}\" is not for a table of REST catalog server {server_name}: name the table with \"namespace\" and \"table\""
            )));
        }
    }
    let ident = table_name(table)?;
    let catalog = rest_config(server, mapping, server_name)?;
    Ok(Resolved {
        // What pins and caches key the table by: the catalog and the name in it.
        location: format!("{} {}", catalog.uri(), ident.path().join("/")),
        display: ident.to_string(),
        selector: selector(table)?,
        storage: storage_options(server, mapping),
        ambient,
        open: OpenSettings::default(),
        table: Some((String::new(), ident)),
        catalog: Some(catalog),
        local_files: false,
    })
}

/// A table's storage options: its server's endpoint settings and the user mapping's secrets.
fn storage_options(server: &OptionList, mapping: &OptionList) -> OptionList {
    let mut storage: OptionList = server
        .iter()
        .filter(|(k, _)| ENDPOINT_SETTINGS.contains(&k.as_str()))
        .cloned()
        .collect();
    storage.extend(
        mapping
            .iter()
            .filter(|(k, _)| STORAGE_SECRETS.contains(&k.as_str()))
            .cloned(),
    );
    storage
}

/// The storage configuration a resolved table is read with: its options and, when its server
/// lends them, the postmaster's ambient credentials (its own `AWS_*`, `AZURE_*`, `GOOGLE_*`
/// variables and the machine's) for the table's own store only.
pub fn storage_config(r: &Resolved) -> StorageConfig {
    // The caps on files read whole are the superuser's settings, never a server's options.
    let mut options = r.storage.clone();
    options.extend(crate::settings::limit_options());
    if r.ambient {
        StorageConfig::new(options, Ambient::TableOnly).with_ambient_env(std::env::vars())
    } else {
        StorageConfig::new(options, Ambient::Refuse)
    }
}

/// Whether location `l` lies under `root` (both as the core parses them).
fn under(l: &str, root: &str) -> bool {
    match (
        icefloe_core::io::parse_location(l),
        icefloe_core::io::parse_location(root),
    ) {
        (Ok(l), Ok(r)) => l.below(&r).is_some(),
        _ => false,
    }
}
