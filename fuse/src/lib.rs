//! `icefloe mount`: Iceberg tables as a read-only file system.
//!
//! ```text
//! MOUNTPOINT/                         a table (a warehouse root: <namespace>/<table>/ below)
//!   current -> snapshots/<id>         the current snapshot of main
//!   refs/<branch-or-tag> -> ../snapshots/<id>
//!   snapshots/<id>/
//!     data.csv, data.jsonl,           every live row: _row_id, _last_updated_sequence_number,
//!     data.parquet                    then the snapshot's schema
//!     files/<data-file>.csv|.jsonl|.parquet  the same, per data file
//!     snapshot.json                   id, parent, sequence number, time, operation, summary, schema
//!   snapshots.csv                     as `icefloe snapshots --format csv` prints it
//! ```
//!
//! All Iceberg logic is the core's: this crate maps its scans onto files. CSV and JSON Lines views are
//! rendered in chunks with an offset index ([`view`]), Parquet views are spilled to local disk
//! ([`spill`]), metadata is polled for new snapshots ([`refresh`]). The mount uses `fuser`'s
//! pure-Rust mount (no libfuse); `fusermount3` unmounts when run without privileges.

pub mod built;
pub mod catalog;
pub mod changes;
pub mod encodes;
pub mod error;
pub mod fresh;
pub mod fs;
pub mod index;
pub mod inodes;
mod locks;
pub mod mapped;
pub mod meta;
pub mod mounts;
pub mod parquet;
pub mod plan;
pub mod readahead;
pub mod refresh;
pub mod sizing;
pub mod spill;
pub mod text;
pub mod tree;
pub mod view;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fuser::{Config, MountOption, Session, SessionACL};
use icefloe_core::encode::percent::escape_ascii;
use icefloe_core::io::StorageConfig;
use percent_encoding::AsciiSet;

pub use error::{FuseError, Result};
pub use fs::{IcefloeFs, MountFs};

/// Default size of the rendered-chunk cache: 256 MiB.
pub const DEFAULT_CACHE_BYTES: u64 = 256 << 20;
/// Default bound of the on-disk cache of the Parquet views' fresh parts: 4 GiB.
pub const DEFAULT_MAX_CACHE_BYTES: u64 = 4 << 30;
/// Threads that render and encode views, apart from those answering requests.
pub const RENDER_THREADS: usize = 2;
/// Default bound of the inode table (past it, the least recently used entries are forgotten).
pub const DEFAULT_MAX_INODES: usize = 100_000;
/// Default read-ahead window: 1 MiB (the kernel's default is 128 KiB).
pub const DEFAULT_READ_AHEAD_BYTES: u64 = 1 << 20;
/// Default interval between metadata polls.
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(5);

/// What to mount where, and how.
#[derive(Debug, Clone)]
pub struct MountOptions {
    /// A table (directory with `metadata/`, metadata file or URL) or a warehouse directory.
    pub source: String,
    /// An existing empty directory.
    pub mountpoint: PathBuf,
    /// Memory for caching: three quarters for rendered CSV chunks, a quarter for the core's
    /// metadata, manifest and delete caches.
    pub cache_bytes: u64,
    /// How often table metadata is re-read.
    pub refresh: Duration,
    /// Let other users read the mount (needs `user_allow_other` in /etc/fuse.conf when not
    /// root).
    pub allow_other: bool,
    /// Where Parquet views are spilled (default: the system temporary directory).
    pub spill_dir: Option<PathBuf>,
    /// The most bytes the fresh parts of Parquet views take on disk under `spill_dir`; the
    /// on-disk index takes at most a 64th of it (at least 1 MiB).
    pub max_cache_bytes: u64,
    /// Where the on-disk index of view sizes is kept (default: [`index::Index::default_dir`]).
    pub cache_dir: Option<PathBuf>,
    /// About how many inodes the mount keeps: past it, it asks the kernel to forget the least
    /// recently used entries, and drops what they held (offset indexes, plans).
    pub max_inodes: usize,
    /// The kernel's read-ahead window for the mount in bytes ([`readahead`]; needs root, else
    /// a warning), or `None` to leave the kernel's.
    pub read_ahead: Option<u64>,
    /// How each table is opened: how to reach its storage (options, ambient credentials, from
    /// the caller), the metadata file choice and path rewrites, as the core defines them.
    pub open: icefloe_core::OpenOptions,
}

impl MountOptions {
    /// Options with the defaults for `source` on `mountpoint`.
    pub fn new(source: impl Into<String>, mountpoint: impl Into<PathBuf>) -> MountOptions {
        MountOptions {
            source: source.into(),
            mountpoint: mountpoint.into(),
            cache_bytes: DEFAULT_CACHE_BYTES,
            refresh: DEFAULT_REFRESH,
            allow_other: false,
            spill_dir: None,
            max_cache_bytes: DEFAULT_MAX_CACHE_BYTES,
            cache_dir: None,
            max_inodes: DEFAULT_MAX_INODES,
            read_ahead: Some(DEFAULT_READ_AHEAD_BYTES),
            open: StorageConfig::none().into(),
        }
    }
}

/// Mounts and serves until unmounted: by `fusermount3 -u`, `umount`, or SIGINT/SIGTERM (then
/// the mount is unmounted cleanly). `on_mounted` runs once the mount is ready. Spill files are
/// deleted before returning.
///
/// Errors: the source is not a table or warehouse, a table's metadata is unreadable, the
/// mount point is missing or `/dev/fuse` cannot be used.
pub fn mount(opts: &MountOptions, on_mounted: impl FnOnce()) -> Result<()> {
    mount_from(opts, None, on_mounted)
}

/// Caps glibc's malloc arenas at two, fixes its mmap threshold at [`MMAP_THRESHOLD_BYTES`]
/// and its trim threshold at [`TRIM_THRESHOLD_BYTES`].
///
/// By default glibc makes up to eight arenas per core, one for each thread that meets
/// contention, and memory freed in one is not reused by the others: a mount whose readers
/// come and go on many runtime threads then holds several times the memory it uses (the bench
/// table's 8 parallel readers: 874 MB peak with the default, 540 MB with two).
///
/// And by default each large block freed raises the size from which blocks are mapped on
/// their own (up to 32 MiB): after the first rendered chunks and decoded pages are freed,
/// every later one (hundreds of KiB to a few MiB, of many sizes) comes from the arenas, whose
/// holes the next sizes do not fit, so the heap grows far past what is in use (the bench
/// table's 16 parallel readers: 792–875 MB peak, 545 MB with the threshold fixed at 256 KiB).
/// A fixed threshold maps such blocks on their own and gives them back when freed. Kept
/// with glibc rather than another allocator: jemalloc and mimalloc (preloaded) gave 860 and
/// 933 MB peaks on the same run.
///
/// The threshold is a little over 1 MiB, not lower: every block mapped costs a page fault
/// for each of its pages, and encoding a Parquet view allocates and frees page buffers of a
/// few hundred KiB without end (at 256 KiB, 480 000 faults and 0.66x the CLI's export for the
/// bench table's `data.parquet`; at 1 MiB, 280 000; unbounded, 47 000 and 0.83x, but 743 MB
/// with 16 readers). It is above 1 MiB because the kernel reads a view 1 MiB at a time, and
/// a read's buffer (a read across two chunks put together, a Parquet view's bytes, the data
/// file's range) is freed as soon as it is answered: at exactly 1 MiB each was a fresh
/// mapping, 256 faults and its pages zeroed, a third of the mount's CPU time in a cold
/// `cat data.csv`. From the heap, the next read reuses it. For the same reason the heap is
/// trimmed only past [`TRIM_THRESHOLD_BYTES`] free at its top (glibc's default, 128 KiB once
/// the mmap threshold is set, gave each freed read buffer back to the system). The long-lived
/// large blocks, rendered chunks, are mapped on their own whatever the threshold
/// ([`mapped::buffer`]).
pub(crate) fn bounded_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets tunables of the allocator; called before the mount's threads.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES as libc::c_int);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES as libc::c_int);
    }
}

/// Blocks from this size on are mapped on their own by glibc's malloc in the mount (see
/// [`bounded_malloc`]): 1 MiB and 128 KiB, above the kernel's 1 MiB reads.
pub const MMAP_THRESHOLD_BYTES: usize = (1 << 20) + (128 << 10);

/// Free memory at the top of a malloc heap kept rather than given back (see
/// [`bounded_malloc`]): 16 MiB, a few reads' buffers.
pub const TRIM_THRESHOLD_BYTES: usize = 16 << 20;

/// Opens the catalog a mount serves, on the mount's runtime (a REST catalog's HTTP client
/// belongs to the runtime it is made on).
pub type Connect = std::pin::Pin<
    Box<
        dyn std::future::Future<
                Output = icefloe_core::Result<Arc<dyn icefloe_core::catalog::Catalog>>,
            > + Send,
    >,
>;

/// Like [`mount`], serving every table of the catalog `connect` opens (a REST catalog) as
/// `<namespace>/<table>/`; `opts.source` only names the mount.
pub fn mount_catalog(
    opts: &MountOptions,
    connect: Connect,
    on_mounted: impl FnOnce(),
) -> Result<()> {
    mount_from(opts, Some(connect), on_mounted)
}

/// The mount's `fsname` (shown by `mount` and in /proc/self/mountinfo) for `source`. The
/// name travels in a comma-separated option list (fusermount3's `-o`), where a `,` would start
/// another option and a `\` escapes the next byte: both are percent-encoded, and `%` too so the
/// name still says which source it was.
pub fn fsname(source: &str) -> String {
    const ESCAPED: &AsciiSet = &AsciiSet::EMPTY.add(b',').add(b'\\').add(b'%');
    format!("icefloe:{}", escape_ascii(source, ESCAPED))
}

/// The on-disk index of `opts` (none, with a warning, when there is no usable directory).
fn open_index(opts: &MountOptions) -> index::Index {
    let dir = opts.cache_dir.clone().or_else(index::Index::default_dir);
    match dir {
        Some(dir) => index::Index::open(&dir, (opts.max_cache_bytes / 64).max(1 << 20)),
        None => {
            tracing::warn!(
                "no cache directory (no HOME or XDG_CACHE_HOME): views are sized without an index"
            );
            index::Index::disabled()
        }
    }
}

fn mount_from(
    opts: &MountOptions,
    connect: Option<Connect>,
    on_mounted: impl FnOnce(),
) -> Result<()> {
    bounded_malloc();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .thread_name("icefloe-fuse")
        .enable_all()
        .build()
        .map_err(|e| FuseError::io("cannot start the tokio runtime", e))?;
    // Rendering and encoding run here, so that requests never wait behind them.
    let render = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(RENDER_THREADS)
        .thread_name("icefloe-render")
        .enable_all()
        .build()
        .map_err(|e| FuseError::io("cannot start the tokio runtime", e))?;
    icefloe_core::cache::Caches::init_global((opts.cache_bytes / 4).max(16 << 20));
    let catalog = Arc::new(rt.block_on(async {
        match connect {
            Some(c) => catalog::MountCatalog::from_catalog(c.await?).await,
            None => catalog::MountCatalog::open(&opts.source, opts.open.clone()).await,
        }
    })?);
    let fs = IcefloeFs::new(
        MountFs::new(
            catalog.clone(),
            rt.handle().clone(),
            opts.cache_bytes - opts.cache_bytes / 4,
            opts.spill_dir.as_deref(),
        )?
        .with_parquet(render.handle().clone(), opts.max_cache_bytes)?
        .with_index(Arc::new(open_index(opts)))
        .with_max_inodes(opts.max_inodes),
    );
    let notifier = fs.notifier_slot();
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::RO,
        MountOption::FSName(fsname(&opts.source)),
        MountOption::Subtype("icefloe".into()),
        MountOption::NoDev,
        MountOption::NoSuid,
        MountOption::NoAtime,
        MountOption::DefaultPermissions,
    ];
    if opts.allow_other {
        config.acl = SessionACL::All;
    }
    config.n_threads = Some(2);
    // Resolved before mounting: resolving the mount point afterwards would ask the mount,
    // which answers only once the session runs.
    let resolved = std::fs::canonicalize(&opts.mountpoint).unwrap_or(opts.mountpoint.clone());
    let mut session = Session::new(fs, &opts.mountpoint, &config)
        .map_err(|e| FuseError::io(format!("cannot mount on {}", opts.mountpoint.display()), e))?;
    let _ = notifier.set(session.notifier());
    if let Some(bytes) = opts.read_ahead {
        match readahead::set(&resolved, bytes) {
            Ok(file) => tracing::debug!("read-ahead window {bytes} bytes ({file})"),
            Err(e) => tracing::warn!("{e}; the kernel's read-ahead window is kept"),
        }
    }
    let mut unmounter = session.unmount_callable();
    let mountpoint = opts.mountpoint.clone();
    rt.spawn(refresh::poll(catalog, opts.refresh));
    rt.spawn(async move {
        mounts::wait_for_stop_signal().await;
        tracing::info!("unmounting {}", mountpoint.display());
        let result = tokio::task::spawn_blocking(move || unmounter.unmount()).await;
        if !matches!(result, Ok(Ok(()))) {
            // Busy (a file is open): detach lazily so the session ends now.
            tracing::warn!("{} is busy; detaching it", mountpoint.display());
            if let Err(e) = mounts::unmount(&mountpoint, true) {
                tracing::error!("{e}");
            }
        }
    });
    tracing::info!("mounted {} on {}", opts.source, opts.mountpoint.display());
    on_mounted();
    let result = session
        .run()
        .map_err(|e| FuseError::io(format!("serving {}", opts.mountpoint.display()), e));
    rt.shutdown_timeout(Duration::from_secs(2));
    render.shutdown_timeout(Duration::from_secs(2));
    result
}

#[cfg(test)]
mod tests {
    use super::fsname;

    #[test]
    fn fsname_has_no_option_separators() {
        assert_eq!(fsname("/w/t"), "icefloe:/w/t");
        assert_eq!(
            fsname("/w/a,allow_other\\,dev%/t"),
            "icefloe:/w/a%2Callow_other%5C%2Cdev%25/t"
        );
        // What the hand-written escaper wrote before the percent-encoding crate did it.
        for (source, name) in [
            ("", "icefloe:"),
            (" a b", "icefloe: a b"),
            ("%25", "icefloe:%2525"),
            ("/w/日本 é/t", "icefloe:/w/日本 é/t"),
            ("a\u{1f}.b=c", "icefloe:a\u{1f}.b=c"),
        ] {
            assert_eq!(fsname(source), name, "{source:?}");
        }
    }
}
