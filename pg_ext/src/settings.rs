//! The wrapper's GUCs for memory and I/O: the size of a backend's caches, how many files a
//! scan reads at once, the caps on files read whole, and which network destinations servers
//! of non-superusers may name (`icefloe.snapshot_pinning` is in [`crate::pin`]).

use std::ffi::CString;

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};

/// `icefloe.cache_size`, in MB: the metadata, manifest and delete caches of one backend.
pub static CACHE_SIZE_MB: GucSetting<i32> = GucSetting::<i32>::new(256);
/// `icefloe.scan_concurrency`: files one scan reads at once (0 = one per CPU).
pub static SCAN_CONCURRENCY: GucSetting<i32> = GucSetting::<i32>::new(0);
/// `icefloe.parallel_split_rows`: the most rows of one unit of a parallel scan.
pub static PARALLEL_SPLIT_ROWS: GucSetting<i32> = GucSetting::<i32>::new(1 << 20);

/// `icefloe.allowed_endpoints`: URL prefixes servers of non-superusers may point at.
pub static ALLOWED_ENDPOINTS: GucSetting<Option<CString>> =
    GucSetting::<Option<CString>>::new(None);

/// `icefloe.reply_excerpts`: errors quote a short excerpt of a catalog's or OAuth2 server's
/// structured error message (off: only the status and the error type).
pub static REPLY_EXCERPTS: GucSetting<bool> = GucSetting::<bool>::new(false);

/// The caps on files read whole (the core's [`icefloe_core::io::ReadLimits`]): the GUC, its
/// core storage option, and its unit (KB, or names for a listing). Only superusers set them.
struct Cap {
    guc: &'static std::ffi::CStr,
    option: &'static str,
    setting: GucSetting<i32>,
    short: &'static std::ffi::CStr,
    kb: bool,
}

static CAPS: [Cap; 5] = [
    Cap {
        guc: c"icefloe.max_metadata_size",
        option: "max_metadata_bytes",
        setting: GucSetting::<i32>::new(1 << 20),
        short: c"The largest table metadata file a backend reads (also after gzip decompression).",
        kb: true,
    },
    Cap {
        guc: c"icefloe.max_manifest_size",
        option: "max_manifest_bytes",
        setting: GucSetting::<i32>::new(1 << 20),
        short: c"The largest manifest list or manifest a backend reads.",
        kb: true,
    },
    Cap {
        guc: c"icefloe.max_footer_size",
        option: "max_footer_bytes",
        setting: GucSetting::<i32>::new(256 << 10),
        short: c"The largest Parquet or Puffin footer a backend reads.",
        kb: true,
    },
    Cap {
        guc: c"icefloe.max_version_hint_size",
        option: "max_version_hint_bytes",
        setting: GucSetting::<i32>::new(1 << 10),
        short: c"The largest metadata/version-hint.text a backend reads.",
        kb: true,
    },
    Cap {
        guc: c"icefloe.max_listing_entries",
        option: "max_listing_entries",
        setting: GucSetting::<i32>::new(1_000_000),
        short: c"The most names one directory listing (a table's metadata/, a namespace) may hold.",
        kb: false,
    },
];

/// The caps as the core's storage options (bytes, or names).
pub fn limit_options() -> Vec<(String, String)> {
    CAPS.iter()
        .map(|c| {
            let v = c.setting.get().max(1) as u64;
            let v = if c.kb { v << 10 } else { v };
            (c.option.to_string(), v.to_string())
        })
        .collect()
}

/// The URL prefixes of `icefloe.allowed_endpoints` (comma-separated).
pub fn allowed_endpoints() -> Vec<String> {
    ALLOWED_ENDPOINTS
        .get()
        .map(|v| {
            v.to_string_lossy()
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The most row positions of one unit of a parallel scan (larger files are split).
pub fn parallel_split_rows() -> u64 {
    PARALLEL_SPLIT_ROWS.get().max(1) as u64
}

/// The cache budget of a backend, in bytes.
pub fn cache_bytes() -> u64 {
    (CACHE_SIZE_MB.get().max(1) as u64) << 20
}

/// Files a scan reads at once; `None` for the core's default (one per CPU).
pub fn scan_concurrency() -> Option<usize> {
    let n = SCAN_CONCURRENCY.get();
    (n > 0).then_some(n as usize)
}

/// Hands `icefloe.reply_excerpts` to the core whenever its value changes (SET, RESET, a
/// transaction's rollback, a function's SET clause ending), so errors follow the setting in
/// force when they are raised.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn assign_reply_excerpts(on: bool, _extra: *mut std::ffi::c_void) {
    icefloe_core::io::store_error::set_reply_excerpts(on);
}

/// Registers the GUCs (from `_PG_init`).
pub fn init() {
    GucRegistry::define_string_guc(
        c"icefloe.allowed_endpoints",
        c"URL prefixes that servers created or altered by non-superusers may name as aws_endpoint, catalog_uri or oauth2_server_uri.",
        c"Comma-separated, such as 'https://minio.example.com:9000/'. Empty (the default): only superusers may choose where backends send requests.",
        &ALLOWED_ENDPOINTS,
        GucContext::Suset,
        GucFlags::default(),
    );
    // SAFETY: the assign hook only stores a flag and cannot panic.
    unsafe {
        GucRegistry::define_bool_guc_with_hooks(
            c"icefloe.reply_excerpts",
            c"Quote a catalog's or OAuth2 server's error message (200 characters, one line) in errors.",
            c"Off (the default): errors name the HTTP status and the error type only, as a catalog or token URI may reach a service whose replies are not for the client; the whole reply is in the debug log.",
            &REPLY_EXCERPTS,
            GucContext::Suset,
            GucFlags::default(),
            None,
            Some(assign_reply_excerpts),
            None,
        );
    }
    for c in &CAPS {
        GucRegistry::define_int_guc(
            c.guc,
            c.short,
            c"Past it the read stops with an error naming the file and this setting.",
            &c.setting,
            1,
            i32::MAX,
            GucContext::Suset,
            if c.kb {
                GucFlags::UNIT_KB
            } else {
                GucFlags::default()
            },
        );
    }
    GucRegistry::define_int_guc(
        c"icefloe.cache_size",
        c"Memory for a backend's caches of Iceberg metadata, manifests and deletes.",
        c"Taken when a backend first reads a table; each of the last 4 sets of credentials it used gets a quarter of it besides, so the caches of a backend (or parallel worker) hold at most twice this. Its scans add what they decode at once (icefloe.scan_concurrency files of two 8192-row batches each).",
        &CACHE_SIZE_MB,
        1,
        1 << 20,
        GucContext::Suset,
        GucFlags::UNIT_MB,
    );
    GucRegistry::define_int_guc(
        c"icefloe.parallel_split_rows",
        c"The most rows of a data file one process of a parallel foreign scan reads as one unit.",
        c"Larger files are split into parts of about this many rows, which the leader and workers claim one at a time.",
        &PARALLEL_SPLIT_ROWS,
        1,
        i32::MAX,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"icefloe.scan_concurrency",
        c"How many data files one foreign scan reads at once (0: one per CPU).",
        c"",
        &SCAN_CONCURRENCY,
        0,
        64,
        GucContext::Userset,
        GucFlags::default(),
    );
}
