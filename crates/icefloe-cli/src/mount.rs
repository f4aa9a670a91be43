//! `icefloe mount`: serve a table or warehouse as a read-only file system.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use icefloe_fuse::mounts::is_mounted;
use icefloe_fuse::MountOptions;

/// Arguments of `icefloe mount`.
#[derive(Args, Debug)]
pub struct MountArgs {
    /// A table (directory with metadata/, metadata file, or a URL of either), or a warehouse
    /// (a directory or s3://, az://, gs:// URL) whose <namespace>/<table>/ subdirectories are
    /// tables. With --catalog NAME: the mount point (every table of the catalog is mounted as
    /// <namespace>/<table>/).
    pub source: String,
    /// An existing directory to mount on.
    pub mountpoint: Option<PathBuf>,
    #[command(flatten)]
    pub open: crate::args::OpenArgs,
    /// Memory for caching rendered views and metadata, e.g. 256MiB, 1G, 1048576.
    #[arg(long, value_name = "SIZE", default_value = "256MiB", value_parser = parse_size)]
    pub cache_size: u64,
    /// Seconds between polls of the table metadata for new snapshots.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub refresh: f64,
    /// Let other users read the mount (non-root users need user_allow_other in /etc/fuse.conf).
    #[arg(long)]
    pub allow_other: bool,
    /// Directory for the spill files: the Parquet views' re-encoded row groups and lineage
    /// chunks, the change files (default: the temporary directory). Deleted at unmount.
    #[arg(long, value_name = "DIR")]
    pub spill_dir: Option<PathBuf>,
    /// The most disk the Parquet views' re-encoded parts take under --spill-dir (least
    /// recently used parts are deleted beyond it, or when the disk is 95% full, and encoded
    /// again when read), e.g. 4GiB.
    #[arg(long, value_name = "SIZE", default_value = "4GiB", value_parser = parse_size)]
    pub max_cache_size: u64,
    /// Directory of the on-disk index of view sizes, kept across mounts so that a remount
    /// answers ls -l without reading data (default: $XDG_CACHE_HOME/icefloe/mount, else
    /// ~/.cache/icefloe/mount). It holds at most a 64th of --max-cache-size (at least 1 MiB);
    /// deleting it is safe.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// About how many files and directories the mount keeps track of: past it, the least
    /// recently used are forgotten (the kernel is asked to drop them; looked up again when used)
    /// with their offset indexes and plans.
    #[arg(long, value_name = "N", default_value_t = icefloe_fuse::DEFAULT_MAX_INODES)]
    pub max_inodes: usize,
    /// The kernel's read-ahead window for the mount: how far ahead of a sequential reader
    /// views are read (needs root; 0 keeps the kernel's, 128KiB), e.g. 1MiB.
    #[arg(long, value_name = "SIZE", default_value = "1MiB", value_parser = parse_size)]
    pub read_ahead: u64,
    /// Return once mounted, serving from a background process (stop it with fusermount3 -u).
    #[arg(long)]
    pub daemon: bool,
    #[command(flatten)]
    pub storage: crate::args::StorageArgs,
    /// With --daemon: append the background process's log (errors naming unreadable files)
    /// to FILE instead of discarding it.
    #[arg(long, value_name = "FILE", requires = "daemon")]
    pub log_file: Option<PathBuf>,
}

/// Runs `icefloe mount`: in the foreground until unmounted or interrupted (Ctrl-C or SIGTERM
/// unmount cleanly), or with `--daemon` in a background process.
pub fn mount(args: MountArgs, catalog: Option<&str>) -> Result<()> {
    let (source, mountpoint) = match (catalog, &args.mountpoint) {
        (Some(name), None) => (format!("catalog:{name}"), PathBuf::from(&args.source)),
        (Some(_), Some(_)) => {
            bail!("with --catalog, give only the mount point: icefloe mount --catalog NAME MOUNTPOINT")
        }
        (None, Some(m)) => (args.source.clone(), m.clone()),
        (None, None) => {
            bail!("give what to mount and where: icefloe mount SOURCE MOUNTPOINT (or --catalog NAME MOUNTPOINT)")
        }
    };
    if !mountpoint.is_dir() {
        bail!("mount point {} is not a directory", mountpoint.display());
    }
    if catalog.is_none() {
        if let Some(missing) = crate::open::missing(&source) {
            return Err(missing.into());
        }
    }
    let storage = args
        .storage
        .config_for(catalog.is_none().then_some(source.as_str()))?;
    // Read now, so that a configuration error is this command's.
    let config = catalog.map(crate::catalog::config).transpose()?;
    if config.is_some() && args.open.is_set() {
        bail!("--metadata-file, --table-uuid, --latest-by-last-updated-ms and --path-map choose files of a table path; a catalog's tables are loaded as the catalog says");
    }
    if args.daemon {
        return daemonize(&args, &source, &mountpoint);
    }
    if !(args.refresh > 0.0 && args.refresh.is_finite()) {
        bail!("--refresh must be a positive number of seconds");
    }
    let opts = MountOptions {
        source: source.clone(),
        mountpoint: mountpoint.clone(),
        cache_bytes: args.cache_size,
        refresh: Duration::from_secs_f64(args.refresh),
        allow_other: args.allow_other,
        spill_dir: args.spill_dir.clone(),
        max_cache_bytes: args.max_cache_size,
        cache_dir: args.cache_dir.clone(),
        max_inodes: args.max_inodes,
        read_ahead: (args.read_ahead > 0).then_some(args.read_ahead),
        open: args.open.options(storage),
    };
    let on_mounted = || {
        eprintln!(
            "icefloe: {source} mounted on {} (Ctrl-C or fusermount3 -u to unmount)",
            mountpoint.display()
        )
    };
    match config {
        Some(config) => {
            let storage = opts.open.storage.clone();
            let connect: icefloe_fuse::Connect = Box::pin(async move {
                let c = icefloe_core::catalog::rest::RestCatalog::connect(
                    config,
                    storage,
                    icefloe_core::cache::Caches::global(),
                )
                .await?;
                Ok(std::sync::Arc::new(c) as std::sync::Arc<dyn icefloe_core::catalog::Catalog>)
            });
            icefloe_fuse::mount_catalog(&opts, connect, on_mounted)?
        }
        None => icefloe_fuse::mount(&opts, on_mounted)?,
    }
    Ok(())
}

/// Starts this command again without `--daemon` in its own process group, detached from the
/// terminal, and returns once the mount is there. If the background process exits first, its
/// error is this command's error.
fn daemonize(args: &MountArgs, source: &str, mountpoint: &std::path::Path) -> Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe().context("cannot find the icefloe executable")?;
    // The child's standard error: the log file, or an unnamed temporary file, read back if
    // the child fails.
    let (mut log, log_start) = match &args.log_file {
        Some(p) => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .read(true)
                .open(p)
                .with_context(|| format!("cannot open log file {}", p.display()))?;
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            (f, len)
        }
        None => (
            tempfile::tempfile().context("cannot create a temporary file for the mount's log")?,
            0,
        ),
    };
    // The same arguments without --daemon (--log-file only applies to this parent).
    let mut child_args = Vec::new();
    let mut skip_next = false;
    for a in std::env::args_os().skip(1) {
        if std::mem::take(&mut skip_next) || a == "--daemon" {
            continue;
        }
        if a == "--log-file" {
            skip_next = true;
            continue;
        }
        if a.to_str().is_some_and(|s| s.starts_with("--log-file=")) {
            continue;
        }
        child_args.push(a);
    }
    let mut child = Command::new(exe)
        .args(child_args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(
            log.try_clone()
                .context("cannot pass the log to the mount process")?,
        )
        .process_group(0)
        .spawn()
        .context("cannot start the mount process")?;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        if is_mounted(mountpoint) {
            eprintln!(
                "icefloe: {source} mounted on {} by process {} (fusermount3 -u {} to unmount)",
                mountpoint.display(),
                child.id(),
                mountpoint.display()
            );
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            let mut text = String::new();
            log.seek(SeekFrom::Start(log_start))
                .and_then(|_| log.read_to_string(&mut text))
                .context("cannot read the mount process's log")?;
            bail!("{}", child_error(&text, status));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    bail!("{} was not mounted within 60 s", mountpoint.display())
}

/// The error the background mount process printed (its last `icefloe: ` line), or its exit
/// status when it printed none.
fn child_error(log: &str, status: std::process::ExitStatus) -> String {
    log.lines()
        .rev()
        .find_map(|l| l.strip_prefix("icefloe: "))
        .map(str::to_string)
        .unwrap_or_else(|| format!("the mount process exited ({status}) without a message"))
}

/// Parses a size: bytes, or a number with K, M, G, T (powers of 1024; `KiB`, `MB`… accepted).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("not a size: {s:?} (try 256MiB)"))?;
    let shift = match unit
        .trim()
        .to_ascii_uppercase()
        .trim_end_matches('B')
        .trim_end_matches('I')
    {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("unknown unit in {s:?} (use K, M, G or T)")),
    };
    Ok((n * (1u64 << shift) as f64) as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("1.5k"), Ok(1536));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("3 parsecs").is_err());
    }
}
