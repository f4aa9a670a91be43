//! The mount over time and under load: a snapshot committed while mounted, parallel readers,
//! forgotten entries, requests answered while renders hold the render pool, and unmounting
//! (SIGTERM, daemon mode).

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use icefloe_fuse::mounts::is_mounted;
use icefloe_testkit::{all_snapshots, copy_table};
use serde_json::Value;

use crate::common::{cat_csv, run, stats, table_dir, warehouse, ICEFLOE};
use crate::mount::{check_fuse_available, Mount};

#[test]
fn sixteen_parallel_readers_get_the_right_bytes() {
    let m = Mount::new(&warehouse(), &["--cache-size", "8MiB"]);
    // 16 different views across tables, none read before: counting passes and rendering race.
    let snaps: Vec<_> = all_snapshots().into_iter().step_by(4).take(16).collect();
    assert_eq!(snaps.len(), 16);
    let wants: HashMap<i64, Vec<u8>> = snaps
        .iter()
        .map(|s| (s.snapshot_id, cat_csv(&s.table_dir, s.snapshot_id)))
        .collect();
    let readers: Vec<_> = snaps
        .iter()
        .map(|s| {
            let view = m
                .path()
                .join("db")
                .join(&s.table)
                .join("snapshots")
                .join(s.snapshot_id.to_string())
                .join("data.csv");
            let id = s.snapshot_id;
            std::thread::spawn(move || {
                let mut got = Vec::new();
                File::open(&view)
                    .and_then(|mut f| f.read_to_end(&mut got))
                    .map(|_| (id, got))
            })
        })
        .collect();
    for r in readers {
        let (id, got) = r.join().expect("reader thread").expect("read");
        assert!(
            got == wants[&id],
            "snapshot {id}: {} bytes, want {}",
            got.len(),
            wants[&id].len()
        );
    }
}

#[test]
fn a_snapshot_committed_while_mounted_appears() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let meta = tmp.path().join("metadata");
    let hint: u32 = std::fs::read_to_string(meta.join("version-hint.text"))
        .expect("hint")
        .trim()
        .parse()
        .expect("n");
    let newest = meta.join(format!("v{hint}.metadata.json"));
    let parked = tempfile::tempdir().expect("tmp");
    std::fs::rename(&newest, parked.path().join("newest.json")).expect("park newest metadata");
    std::fs::write(meta.join("version-hint.text"), format!("{}\n", hint - 1)).expect("hint");
    let new_meta: Value =
        serde_json::from_slice(&std::fs::read(parked.path().join("newest.json")).expect("read"))
            .expect("json");
    let new_id = new_meta["current-snapshot-id"]
        .as_i64()
        .expect("current snapshot");

    let m = Mount::new(tmp.path(), &[]);
    let new_dir = m.path().join("snapshots").join(new_id.to_string());
    assert!(!new_dir.exists(), "not yet committed");
    let old_current = std::fs::read_link(m.path().join("current")).expect("current");
    let old_id: i64 = old_current
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.parse().ok())
        .expect("id");
    // A file opened now keeps reading this snapshot.
    let mut open_before = File::open(m.path().join("current/data.csv")).expect("open");

    // Commit: the new metadata version, then the hint.
    std::fs::copy(parked.path().join("newest.json"), &newest).expect("copy metadata");
    std::fs::write(meta.join("version-hint.text"), format!("{hint}\n")).expect("hint");
    let start = Instant::now();
    while !new_dir.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "snapshot {new_id} did not appear within 10 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let appeared = start.elapsed();
    assert!(
        appeared < Duration::from_secs(5),
        "refresh is every second; took {appeared:?}"
    );
    // `current` follows main; the new snapshot reads as `icefloe cat` prints it.
    let start = Instant::now();
    while std::fs::read_link(m.path().join("current")).expect("current")
        != Path::new(&format!("snapshots/{new_id}"))
    {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "current did not move to {new_id}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        std::fs::read(new_dir.join("data.csv")).expect("read new"),
        cat_csv(tmp.path(), new_id)
    );
    let mut before = Vec::new();
    open_before.read_to_end(&mut before).expect("read old");
    assert_eq!(
        before,
        cat_csv(tmp.path(), old_id),
        "an open file keeps its snapshot"
    );
    assert!(
        String::from_utf8_lossy(&std::fs::read(m.path().join("snapshots.csv")).expect("list"))
            .contains(&new_id.to_string())
    );
}

#[test]
fn sigterm_unmounts_cleanly_and_removes_spill_files() {
    let spill = tempfile::tempdir().expect("spill parent");
    let mut m = Mount::new(
        &table_dir("v3_basic"),
        &["--spill-dir", spill.path().to_str().expect("utf-8")],
    );
    let parquet = std::fs::read(m.path().join("current/data.parquet")).expect("read parquet");
    assert!(parquet.starts_with(b"PAR1") && parquet.ends_with(b"PAR1"));
    let spilled = || -> usize {
        std::fs::read_dir(spill.path())
            .map(|d| {
                d.flatten()
                    .map(|e| std::fs::read_dir(e.path()).map(|f| f.count()).unwrap_or(0))
                    .sum()
            })
            .unwrap_or(0)
    };
    // The Parquet view's fresh parts: a lineage part or a re-encoded part per row group.
    assert!(spilled() >= 1, "spill files while mounted");
    run(Command::new("kill").args(["-TERM", &m.child.id().to_string()]));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = m.child.try_wait().expect("wait") {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "still running 10 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "exit status {status}:\n{}", m.log_text());
    assert!(!is_mounted(m.path()), "unmounted");
    assert_eq!(
        std::fs::read_dir(spill.path()).expect("ls").count(),
        0,
        "spill directory removed"
    );
}

#[test]
fn daemon_mode_returns_once_mounted() {
    check_fuse_available();
    let dir = tempfile::tempdir().expect("mount point");
    let log_dir = tempfile::tempdir().expect("log dir");
    let log = log_dir.path().join("daemon.log");
    let out = run(Command::new(ICEFLOE)
        .env("ICEFLOE_LOG", "icefloe_fuse=info")
        .arg("mount")
        .arg(table_dir("v3_basic"))
        .arg(dir.path())
        .arg("--daemon")
        .arg("--log-file")
        .arg(&log));
    assert!(
        is_mounted(dir.path()),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ok = std::fs::read_link(dir.path().join("current")).is_ok();
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    run(Command::new("fusermount3").arg("-u").arg(dir.path()));
    assert!(ok, "current is listed");
    assert!(
        logged.contains("mounted"),
        "the daemon logs to --log-file: {logged:?}"
    );
    let start = Instant::now();
    while is_mounted(dir.path()) {
        assert!(start.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `data.csv` view of every fixture snapshot, with the snapshot.
fn every_data_csv(m: &Mount) -> Vec<(PathBuf, i64)> {
    all_snapshots()
        .iter()
        .map(|s| {
            let dir = m.path().join("db").join(&s.table).join("snapshots");
            (
                dir.join(s.snapshot_id.to_string()).join("data.csv"),
                s.snapshot_id,
            )
        })
        .collect()
}

#[test]
fn forgotten_entries_let_go_of_their_views_and_read_the_same_again() {
    let m = Mount::new(&warehouse(), &["--max-inodes", "64"]);
    let views = every_data_csv(&m);
    // Every snapshot visited: each view sized, planned and read once.
    let mut first = Vec::new();
    for (p, _) in &views {
        let ino = std::fs::metadata(p).expect("stat").ino();
        first.push((ino, std::fs::read(p).expect("read")));
    }
    // The mount asked the kernel to forget the least recently used entries; once it has, the
    // inode table, plans and offset indexes are back within the bound.
    let start = Instant::now();
    let s = loop {
        let s = stats(&m);
        if s["inodes"].as_u64().expect("inodes") <= 64 || start.elapsed() > Duration::from_secs(20)
        {
            break s;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let n = views.len() as u64;
    assert!(
        s["inodes"].as_u64().unwrap() <= 64,
        "{s} after {n} snapshots"
    );
    assert!(
        s["plans"].as_u64().unwrap() < n / 2,
        "{s} after {n} snapshots"
    );
    assert!(
        s["csv_views"].as_u64().unwrap() < n / 2,
        "{s} after {n} snapshots"
    );
    // Looked up again (new inode numbers: the old ones were dropped), the views read the same
    // bytes, which are the CLI's.
    let mut renumbered = 0;
    for ((p, id), (ino, bytes)) in views.iter().zip(&first) {
        let again = std::fs::metadata(p).expect("stat").ino();
        renumbered += usize::from(again != *ino);
        let got = std::fs::read(p).expect("read");
        assert!(got == *bytes, "{} differs after forget", p.display());
        if again != *ino && renumbered <= 3 {
            let table = p
                .ancestors()
                .nth(3)
                .expect("table")
                .file_name()
                .expect("name");
            assert!(
                got == cat_csv(&table_dir(table.to_str().unwrap()), *id),
                "{}",
                p.display()
            );
        }
    }
    assert!(
        renumbered > views.len() / 2,
        "{renumbered} of {} views forgotten",
        views.len()
    );
}

#[test]
fn ls_stat_and_small_reads_answer_while_renders_hold_the_render_pool() {
    let gate_dir = tempfile::tempdir().expect("gate dir");
    let gate = gate_dir.path().join("gate");
    let m = Mount::spawn(
        Some(&warehouse()),
        &[],
        &[("ICEFLOE_FUSE_TEST_GATE", gate.to_str().expect("utf-8"))],
    );
    // Four first sizings (`stat data.csv`), held by the test hook on the render threads.
    let tables = ["v3_basic", "v3_types", "v3_lineage", "v3_dv_large"];
    let sizers: Vec<_> = tables
        .iter()
        .map(|t| {
            let p = m.path().join("db").join(t).join("current/data.csv");
            std::thread::spawn(move || std::fs::metadata(&p).map(|md| md.len()))
        })
        .collect();
    let started = || {
        std::fs::read_dir(gate_dir.path())
            .expect("gate dir")
            .filter(|e| {
                let name = e.as_ref().expect("entry").file_name();
                name.to_string_lossy().starts_with("gate.started-")
            })
            .count()
    };
    let start = Instant::now();
    while started() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no sizing started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Meanwhile `ls`, `stat` and a read of another table answer.
    let (tx, rx) = std::sync::mpsc::channel();
    let root = m.path().to_path_buf();
    std::thread::spawn(move || {
        let r = (|| -> std::io::Result<(usize, u64, Vec<u8>)> {
            let n = std::fs::read_dir(root.join("db/v3_geo/snapshots"))?.count();
            let len = std::fs::metadata(root.join("db/v3_geo/current/snapshot.json"))?.len();
            let csv = std::fs::read(root.join("db/v3_geo/snapshots.csv"))?;
            Ok((n, len, csv))
        })();
        let _ = tx.send(r);
    });
    let (n, len, csv) = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("ls, stat and cat answered while renders held every render thread")
        .expect("ls, stat and cat");
    assert!(
        n >= 1 && len > 0,
        "{n} snapshots, snapshot.json {len} bytes"
    );
    let snapshots = run(Command::new(ICEFLOE)
        .arg("snapshots")
        .arg(table_dir("v3_geo"))
        .args(["--format", "csv"]))
    .stdout;
    assert_eq!(csv, snapshots);
    assert!(
        sizers.iter().all(|h| !h.is_finished()),
        "a sizing went past the gate"
    );
    // Released, the sizings finish with the CLI's sizes.
    std::fs::write(&gate, b"").expect("open the gate");
    for (t, h) in tables.iter().zip(sizers) {
        let got = h.join().expect("sizer").expect("stat data.csv");
        let want = run(Command::new(ICEFLOE).arg("cat").arg(table_dir(t)).args([
            "--lineage",
            "--format",
            "csv",
        ]))
        .stdout
        .len() as u64;
        assert_eq!(got, want, "{t}");
    }
}
