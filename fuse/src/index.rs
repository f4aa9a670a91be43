//! The on-disk index: what sizing a view learns, kept across mounts (`--cache-dir`).
//!
//! Snapshots are immutable, so the CSV layout of a data file (the length of each batch, read
//! with one schema) and a Parquet view's fresh parts (length, CRC and row groups of each) never
//! change: a remount, or a second mount on the same host, takes them from here and answers
//! `ls -l` without decoding data. Each entry is one file, written to a temporary name and
//! renamed, holding its key (index format, crate version, table UUID, snapshot, schema, what
//! it sizes) and a CRC-32 of it all: an entry that is corrupt, truncated, of another key or
//! another version is ignored with a warning and sized again, never trusted. Bytes read later
//! are still checked against it (a CSV chunk of another length, a fresh part of another CRC is
//! an error, never served). The index is bounded (least recently used entries deleted).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use icefloe_core::Table;

/// Version of the entries' layout: entries of another version are ignored.
pub const FORMAT_VERSION: u32 = 2;
/// The first bytes of every entry.
const MAGIC: &[u8; 8] = b"IFLOIDX\n";
/// Temporary files older than this are left by a mount that died while writing.
const STALE_TMP: Duration = Duration::from_secs(3600);

/// What an entry sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// The CSV length of each batch of one data file.
    CsvLayout,
    /// The JSON Lines length of each batch of one data file.
    JsonlLayout,
    /// A Parquet view's row groups and fresh parts.
    ParquetView,
}

impl EntryKind {
    fn name(self) -> &'static str {
        match self {
            EntryKind::CsvLayout => "csv",
            EntryKind::JsonlLayout => "jsonl",
            EntryKind::ParquetView => "parquet",
        }
    }
}

/// The key of an entry: which table, snapshot, schema, and what of it.
#[derive(Debug, Clone)]
pub struct IndexKey {
    /// The table's UUID (its location when the metadata has none).
    pub table: String,
    pub snapshot: i64,
    pub schema: i32,
    pub kind: EntryKind,
    /// A data file path (CSV layouts) or the view's scope (Parquet views).
    pub subject: String,
}

impl IndexKey {
    /// The key of `kind` for `subject` of snapshot `snapshot` of `table` read with `schema`.
    pub fn new(
        table: &Table,
        snapshot: i64,
        schema: i32,
        kind: EntryKind,
        subject: String,
    ) -> IndexKey {
        let m = table.metadata();
        let table = match &m.table_uuid {
            Some(u) => format!("uuid {u}"),
            None => format!("location {}", m.location),
        };
        IndexKey {
            table,
            snapshot,
            schema,
            kind,
            subject,
        }
    }

    /// The key as stored in its entry: every part that must match, versions included (a
    /// renderer change in another release changes lengths).
    fn text(&self) -> String {
        format!(
            "icefloe-index {FORMAT_VERSION}\nicefloe {}\ntable {}\nsnapshot {}\nschema {}\nkind {}\nsubject {}\n",
            env!("CARGO_PKG_VERSION"),
            self.table,
            self.snapshot,
            self.schema,
            self.kind.name(),
            self.subject
        )
    }
}

/// 64-bit FNV-1a: a stable file name for a key (the key itself is checked in the entry).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The index of a mount: a directory of entries, or nothing (no usable directory).
pub struct Index {
    dir: Option<PathBuf>,
    max_bytes: u64,
    bytes: AtomicU64,
    hits: AtomicU64,
    rejected: AtomicU64,
    written: AtomicU64,
    tmp: AtomicU64,
    evicting: AtomicBool,
}

impl Index {
    /// No index: everything is sized.
    pub fn disabled() -> Index {
        Index::with_dir(None, 0)
    }

    fn with_dir(dir: Option<PathBuf>, max_bytes: u64) -> Index {
        Index {
            dir,
            max_bytes,
            bytes: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            written: AtomicU64::new(0),
            tmp: AtomicU64::new(0),
            evicting: AtomicBool::new(false),
        }
    }

    /// `$XDG_CACHE_HOME/icefloe/mount`, else `~/.cache/icefloe/mount`.
    pub fn default_dir() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
        Some(base.join("icefloe").join("mount"))
    }

    /// The index in `dir` (created if missing), holding about `max_bytes` at most. A directory
    /// that cannot be created or written is logged and the mount goes on without an index.
    pub fn open(dir: &Path, max_bytes: u64) -> Index {
        let entries = dir.join(format!("index-v{FORMAT_VERSION}"));
        let probe = entries.join(format!(".probe-{}", std::process::id()));
        let usable = std::fs::create_dir_all(&entries)
            .and_then(|()| std::fs::write(&probe, b""))
            .and_then(|()| std::fs::remove_file(&probe));
        if let Err(e) = usable {
            tracing::warn!(
                "cannot use {} as the index directory ({e}): views are sized without an index",
                entries.display()
            );
            return Index::disabled();
        }
        let index = Index::with_dir(Some(entries), max_bytes);
        let (bytes, _) = index.scan();
        index.bytes.store(bytes, Ordering::Relaxed);
        tracing::debug!("index {}: {bytes} bytes", dir.display());
        index
    }

    /// Whether entries are kept.
    pub fn enabled(&self) -> bool {
        self.dir.is_some()
    }

    /// The entry directory, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    fn path(&self, key: &IndexKey) -> Option<PathBuf> {
        let name = format!("{:016x}.{}", fnv1a(&key.text()), key.kind.name());
        self.dir.as_ref().map(|d| d.join(name))
    }

    /// The body of the entry `key`, if there is a sound one. A file that is not (bad magic,
    /// checksum, truncated, another key) is logged, counted and ignored.
    pub fn get(&self, key: &IndexKey) -> Option<Vec<u8>> {
        let path = self.path(key)?;
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                self.reject(key, &format!("unreadable: {e}"));
                return None;
            }
        };
        match parse(&bytes, &key.text()) {
            Ok(body) => {
                // Recently used: kept longest when the index is trimmed.
                if let Ok(f) = std::fs::File::options().append(true).open(&path) {
                    let _ = f.set_modified(SystemTime::now());
                }
                Some(body.to_vec())
            }
            Err(reason) => {
                self.reject(key, reason);
                None
            }
        }
    }

    /// Counts an entry used to size something.
    pub fn hit(&self) {
        self.hits.fetch_add(1, Ordering::Relaxed);
    }

    /// Logs and counts an entry of `key` that is not sound (`reason`); it is sized again.
    pub fn reject(&self, key: &IndexKey, reason: &str) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
        let path = self.path(key).unwrap_or_default();
        tracing::warn!(
            "index entry {} ({} of snapshot {}): {reason}; ignored, sized again",
            path.display(),
            key.subject,
            key.snapshot
        );
    }

    /// Stores `body` as the entry `key` (atomically: a reader sees the old entry, the new one
    /// or none). Failures are logged: the index only saves work.
    pub fn put(&self, key: &IndexKey, body: &[u8]) {
        let (Some(dir), Some(path)) = (self.dir.as_ref(), self.path(key)) else {
            return;
        };
        let text = key.text();
        let mut out = Vec::with_capacity(MAGIC.len() + 8 + text.len() + body.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&(text.len() as u32).to_le_bytes());
        out.extend_from_slice(text.as_bytes());
        out.extend_from_slice(body);
        let crc = crc32fast::hash(&out[MAGIC.len() + 4..]);
        out[MAGIC.len()..MAGIC.len() + 4].copy_from_slice(&crc.to_le_bytes());
        let n = self.tmp.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".tmp-{}-{n}", std::process::id()));
        let written = std::fs::write(&tmp, &out).and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            tracing::warn!("cannot write index entry {}: {e}", path.display());
            return;
        }
        self.written.fetch_add(1, Ordering::Relaxed);
        let total = self.bytes.fetch_add(out.len() as u64, Ordering::Relaxed) + out.len() as u64;
        if total > self.max_bytes {
            self.trim();
        }
    }

    /// Deletes the least recently used entries until the index holds three quarters of its
    /// bound (one trim at a time).
    fn trim(&self) {
        if self.evicting.swap(true, Ordering::AcqRel) {
            return;
        }
        let (mut bytes, mut entries) = self.scan();
        entries.sort_by_key(|(used, _, _)| *used);
        let target = self.max_bytes / 4 * 3;
        for (_, len, path) in entries {
            if bytes <= target {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                bytes = bytes.saturating_sub(len);
            }
        }
        self.bytes.store(bytes, Ordering::Relaxed);
        self.evicting.store(false, Ordering::Release);
    }

    /// The entries' total size and each one's (last use, size, path); deletes temporary files
    /// left by mounts that died writing.
    fn scan(&self) -> (u64, Vec<(SystemTime, u64, PathBuf)>) {
        let Some(dir) = &self.dir else {
            return (0, Vec::new());
        };
        let mut total = 0;
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let Ok(meta) = e.metadata() else { continue };
            let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            if e.file_name().to_string_lossy().starts_with(".tmp-") {
                if used.elapsed().is_ok_and(|age| age > STALE_TMP) {
                    let _ = std::fs::remove_file(e.path());
                }
                continue;
            }
            total += meta.len();
            out.push((used, meta.len(), e.path()));
        }
        (total, out)
    }

    /// The counters for the mount's stats: entries used, ignored, written.
    pub fn counters(&self) -> (u64, u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.rejected.load(Ordering::Relaxed),
            self.written.load(Ordering::Relaxed),
        )
    }
}

/// The body of entry `bytes` if it is sound and its key is `key`.
fn parse<'a>(bytes: &'a [u8], key: &str) -> std::result::Result<&'a [u8], &'static str> {
    let head = MAGIC.len() + 8;
    if bytes.len() < head || &bytes[..MAGIC.len()] != MAGIC {
        return Err("not an index entry");
    }
    let crc = u32::from_le_bytes(bytes[MAGIC.len()..MAGIC.len() + 4].try_into().expect("4"));
    if crc32fast::hash(&bytes[MAGIC.len() + 4..]) != crc {
        return Err("checksum mismatch (corrupt or truncated)");
    }
    let klen = u32::from_le_bytes(bytes[MAGIC.len() + 4..head].try_into().expect("4")) as usize;
    let stored = bytes.get(head..head + klen).ok_or("truncated key")?;
    if stored != key.as_bytes() {
        return Err("of another key or version");
    }
    Ok(&bytes[head + klen..])
}

/// An entry's body being written: little-endian integers and length-prefixed bytes.
#[derive(Default)]
pub struct BodyWriter(pub Vec<u8>);

impl BodyWriter {
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn bytes(&mut self, v: &[u8]) {
        self.u32(v.len() as u32);
        self.0.extend_from_slice(v);
    }
}

/// An entry's body being read: `None` when it ends early.
pub struct BodyReader<'a>(pub &'a [u8]);

impl<'a> BodyReader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    pub fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    pub fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4")))
    }
    pub fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8")))
    }
    pub fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    /// Whether everything was read (a body with bytes left over is not the one written).
    pub fn done(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(subject: &str) -> IndexKey {
        IndexKey {
            table: "uuid t".into(),
            snapshot: 7,
            schema: 1,
            kind: EntryKind::CsvLayout,
            subject: subject.into(),
        }
    }

    #[test]
    fn entries_round_trip_and_unsound_ones_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(dir.path(), 1 << 20);
        assert!(index.enabled());
        let (a, b) = (key("a"), key("b"));
        assert_eq!(index.get(&a), None);
        index.put(&a, b"body of a");
        assert_eq!(index.get(&a).as_deref(), Some(&b"body of a"[..]));
        // An entry copied under another key's name is of another key.
        std::fs::copy(index.path(&a).unwrap(), index.path(&b).unwrap()).unwrap();
        assert_eq!(index.get(&b), None);
        // A flipped byte anywhere, or a truncation.
        let good = std::fs::read(index.path(&a).unwrap()).unwrap();
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x20;
            std::fs::write(index.path(&a).unwrap(), &bad).unwrap();
            assert_eq!(index.get(&a), None, "byte {i} flipped");
        }
        for n in 0..good.len() {
            std::fs::write(index.path(&a).unwrap(), &good[..n]).unwrap();
            assert_eq!(index.get(&a), None, "cut at {n}");
        }
        assert_eq!(index.counters().1, 1 + 2 * good.len() as u64);
    }

    #[test]
    fn the_index_stays_within_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(dir.path(), 10_000);
        for i in 0..100 {
            index.put(&key(&i.to_string()), &[0; 500]);
        }
        let (bytes, entries) = index.scan();
        assert!(bytes <= 10_000 && !entries.is_empty(), "{bytes}");
        // The latest entry is kept.
        assert!(index.get(&key("99")).is_some());
    }

    #[test]
    fn an_unusable_directory_means_no_index() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"").unwrap();
        let index = Index::open(&file.join("sub"), 1 << 20);
        assert!(!index.enabled());
        index.put(&key("a"), b"x");
        assert_eq!(index.get(&key("a")), None);
    }
}
