//! The wrapper's GUCs for memory and I/O: the size of a backend's caches and how many files a
//! scan reads at once (`icefloe.snapshot_pinning` is in [`crate::pin`]).

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};

/// `icefloe.cache_size`, in MB: the metadata, manifest and delete caches of one backend.
pub static CACHE_SIZE_MB: GucSetting<i32> = GucSetting::<i32>::new(256);
/// `icefloe.scan_concurrency`: files one scan reads at once (0 = one per CPU).
pub static SCAN_CONCURRENCY: GucSetting<i32> = GucSetting::<i32>::new(0);
/// `icefloe.parallel_split_rows`: the most rows of one unit of a parallel scan.
pub static PARALLEL_SPLIT_ROWS: GucSetting<i32> = GucSetting::<i32>::new(1 << 20);

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

/// Registers the GUCs (from `_PG_init`).
pub fn init() {
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
