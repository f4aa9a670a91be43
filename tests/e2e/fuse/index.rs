//! The on-disk index of view sizes (`--cache-dir`): a remount sizes from it, corrupt entries
//! are ignored and rewritten, an unusable directory leaves the mount without one.

use std::path::{Path, PathBuf};

use icefloe_testkit::all_snapshots;

use crate::common::{cat_csv, stats, table_dir, warehouse, INDEXED};
use crate::mount::Mount;

/// Every view (`data.csv`, `data.parquet`, `files/*`) of every snapshot of the [`INDEXED`]
/// tables, relative to the mount, with its table and snapshot.
fn indexed_views(m: &Mount) -> Vec<(PathBuf, &'static str, i64)> {
    let mut out = Vec::new();
    for t in INDEXED {
        for s in all_snapshots().iter().filter(|s| s.table == t) {
            let dir = PathBuf::from(format!("db/{t}/snapshots/{}", s.snapshot_id));
            out.push((dir.join("data.csv"), t, s.snapshot_id));
            out.push((dir.join("data.parquet"), t, s.snapshot_id));
            let files = std::fs::read_dir(m.path().join(&dir).join("files")).expect("ls files");
            let mut names: Vec<PathBuf> = files
                .map(|e| dir.join("files").join(e.expect("entry").file_name()))
                .collect();
            names.sort();
            out.extend(names.into_iter().map(|p| (p, t, s.snapshot_id)));
        }
    }
    out
}

/// Mounts the warehouse with the on-disk index in `cache`.
fn indexed_mount(cache: &Path) -> Mount {
    Mount::new(
        &warehouse(),
        &["--cache-dir", cache.to_str().expect("utf-8")],
    )
}

/// Stats every view (sizes only: `ls -l`), then reads each whole; `data.csv` must be what
/// `icefloe cat` prints.
fn size_then_read(m: &Mount, views: &[(PathBuf, &str, i64)]) -> Vec<(u64, Vec<u8>)> {
    let sizes: Vec<u64> = views
        .iter()
        .map(|(p, _, _)| std::fs::metadata(m.path().join(p)).expect("stat").len())
        .collect();
    let mut out = Vec::new();
    for ((p, t, s), size) in views.iter().zip(sizes) {
        let bytes = std::fs::read(m.path().join(p))
            .unwrap_or_else(|e| panic!("read {}: {e}\n{}", p.display(), m.log_text()));
        assert_eq!(bytes.len() as u64, size, "{}", p.display());
        if p.ends_with("data.csv") {
            assert!(
                bytes == cat_csv(&table_dir(t), *s),
                "{} differs from cat",
                p.display()
            );
        }
        out.push((size, bytes));
    }
    out
}

/// The entry files of an index directory.
fn index_entries(cache: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> =
        std::fs::read_dir(cache.join(format!("index-v{}", icefloe_fuse::index::FORMAT_VERSION)))
            .expect("index directory")
            .map(|e| e.expect("entry").path())
            .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
            .collect();
    out.sort();
    out
}

/// The key an entry names (its text after the magic, checksum and key length).
fn entry_key(entry: &[u8]) -> String {
    let n = u32::from_le_bytes(entry[12..16].try_into().unwrap()) as usize;
    String::from_utf8(entry[16..16 + n].to_vec()).expect("key text")
}

/// A remount with the same `--cache-dir` sizes every view from the on-disk index
/// (no counting pass, no encoding: nothing written), and serves the same bytes.
#[test]
fn a_remount_sizes_from_the_index_and_serves_the_same_bytes() {
    let cache = tempfile::tempdir().expect("cache dir");
    let first = indexed_mount(cache.path());
    let views = indexed_views(&first);
    let want = size_then_read(&first, &views);
    let s = stats(&first);
    assert_eq!(s["index"], true);
    assert_eq!(s["index_hits"], 0, "{s}");
    let written = s["index_written"].as_u64().expect("written");
    assert!(written >= views.len() as u64 / 2, "{s}");
    drop(first);
    assert_eq!(index_entries(cache.path()).len() as u64, written);
    let again = indexed_mount(cache.path());
    let sizes: Vec<u64> = views
        .iter()
        .map(|(p, _, _)| std::fs::metadata(again.path().join(p)).expect("stat").len())
        .collect();
    let s = stats(&again);
    assert_eq!(s["index_hits"].as_u64(), Some(written), "{s}");
    assert_eq!(
        s["index_written"], 0,
        "sized again instead of from the index: {s}"
    );
    assert_eq!(s["index_rejected"], 0, "{s}");
    assert_eq!(sizes, want.iter().map(|(n, _)| *n).collect::<Vec<_>>());
    // The parts of the Parquet views are encoded on first read, checked against the index.
    let got = size_then_read(&again, &views);
    for (((p, _, _), g), w) in views.iter().zip(&got).zip(&want) {
        assert!(g.1 == w.1, "{} differs after the remount", p.display());
    }
}

/// Entries that are corrupt (a flipped byte, truncated, garbage) or of another key
/// (an entry of one snapshot copied over another's) are ignored with a warning and sized
/// again; the bytes are still those of `icefloe cat`, and the entries are rewritten sound.
#[test]
fn corrupt_index_entries_are_ignored_and_the_views_sized_again() {
    let cache = tempfile::tempdir().expect("cache dir");
    let first = indexed_mount(cache.path());
    let views = indexed_views(&first);
    let want = size_then_read(&first, &views);
    drop(first);
    let entries = index_entries(cache.path());
    // A CSV layout entry of another snapshot than each CSV entry's own.
    let keys: Vec<String> = entries
        .iter()
        .map(|e| entry_key(&std::fs::read(e).expect("read entry")))
        .collect();
    let snapshot_of = |k: &str| {
        k.lines()
            .find_map(|l| l.strip_prefix("snapshot "))
            .map(str::to_string)
    };
    let mut corrupted = 0;
    for (i, e) in entries.iter().enumerate() {
        let mut bytes = std::fs::read(e).expect("read entry");
        match i % 5 {
            0 => {
                let at = (bytes.len() / 2 + i % 7).min(bytes.len() - 1);
                bytes[at] ^= 0x01;
            }
            1 => bytes.truncate(bytes.len() * 2 / 3),
            2 => bytes = b"\x00garbage, not an entry at all".repeat(i + 1),
            3 => {
                let kind = e.extension().expect("kind");
                let other = entries.iter().zip(&keys).find(|(o, k)| {
                    o.extension() == Some(kind) && snapshot_of(k) != snapshot_of(&keys[i])
                });
                let Some((o, _)) = other else { continue };
                bytes = std::fs::read(o).expect("read entry");
            }
            _ => continue,
        }
        std::fs::write(e, bytes).expect("corrupt entry");
        corrupted += 1;
    }
    assert!(corrupted >= 4, "{corrupted} of {} entries", entries.len());
    let again = indexed_mount(cache.path());
    let got = size_then_read(&again, &views);
    for (((p, _, _), g), w) in views.iter().zip(&got).zip(&want) {
        assert!(g.1 == w.1, "{} differs after corruption", p.display());
    }
    let s = stats(&again);
    assert_eq!(s["index_rejected"].as_u64(), Some(corrupted), "{s}");
    assert_eq!(s["index_written"].as_u64(), Some(corrupted), "{s}");
    assert!(
        again.log_text().contains("ignored, sized again"),
        "{}",
        again.log_text()
    );
    drop(again);
    // Rewritten: a third mount takes every entry.
    let third = indexed_mount(cache.path());
    for (p, _, _) in &views {
        std::fs::metadata(third.path().join(p)).expect("stat");
    }
    let s = stats(&third);
    assert_eq!(
        (s["index_rejected"].as_u64(), s["index_written"].as_u64()),
        (Some(0), Some(0)),
        "{s}"
    );
}

/// A cache directory that cannot be created or written (on a read-only file
/// system, below a regular file) leaves the mount without an index, with a warning; a missing
/// one is created.
#[test]
fn an_unusable_cache_dir_still_mounts_without_an_index() {
    let scratch = tempfile::tempdir().expect("scratch");
    let file = scratch.path().join("a-file");
    std::fs::write(&file, b"").expect("file");
    let table = table_dir("v3_dv_large");
    for dir in [PathBuf::from("/proc/icefloe-index"), file.join("index")] {
        let m = Mount::new(&table, &["--cache-dir", dir.to_str().expect("utf-8")]);
        let id: i64 = std::fs::read_link(m.path().join("current"))
            .expect("current")
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse().ok())
            .expect("current -> snapshots/<id>");
        let csv = std::fs::read(m.path().join("current/data.csv")).expect("read");
        assert!(csv == cat_csv(&table, id), "{}", dir.display());
        let s = stats(&m);
        assert_eq!(
            (s["index"].as_bool(), s["index_written"].as_u64()),
            (Some(false), Some(0)),
            "{s}"
        );
        assert!(
            m.log_text().contains("sized without an index"),
            "{}",
            m.log_text()
        );
    }
    let missing = scratch.path().join("not/yet/there");
    let m = Mount::new(&table, &["--cache-dir", missing.to_str().expect("utf-8")]);
    std::fs::metadata(m.path().join("current/data.csv")).expect("stat");
    let s = stats(&m);
    assert_eq!(s["index"], true, "{s}");
    assert!(s["index_written"].as_u64() > Some(0), "{s}");
    assert!(!index_entries(&missing).is_empty());
}
