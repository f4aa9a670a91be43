//! Reading the views: `data.csv`, `data.parquet`, `data.jsonl` and `files/*` of every snapshot
//! as the engine reads them, with shell tools and at any offset, through the kernel's
//! read-ahead window, and from a Parquet cache smaller than one view.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use icefloe_testkit::{all_snapshots, csv_to_rows, diff_rows, parse_csv};
use serde_json::Value;

use crate::common::{cat_csv, parquet_rows, run, table_dir, warehouse, ICEFLOE, INDEXED};
use crate::mount::Mount;

#[test]
fn every_snapshot_of_the_warehouse_reads_as_the_engine_does() {
    let m = Mount::new(&warehouse(), &[]);
    let mut names: Vec<String> = std::fs::read_dir(m.path().join("db"))
        .expect("ls db")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .collect();
    names.sort();
    assert!(
        names.contains(&"v3_basic".to_string()) && names.len() >= 14,
        "{names:?}"
    );
    let mut failures = Vec::new();
    let snaps = all_snapshots();
    for s in &snaps {
        let dir = m
            .path()
            .join("db")
            .join(&s.table)
            .join("snapshots")
            .join(s.snapshot_id.to_string());
        let want = s.expected_rows();
        // data.csv: header, then every live row.
        let text = std::fs::read_to_string(dir.join("data.csv")).expect("read data.csv");
        let meta = std::fs::metadata(dir.join("data.csv")).expect("stat");
        assert_eq!(
            meta.len(),
            text.len() as u64,
            "{}@{}: stat size",
            s.table,
            s.snapshot_id
        );
        let records = parse_csv(&text);
        let header: Vec<&str> = records[0].iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(header, s.expected_columns, "{}@{}", s.table, s.snapshot_id);
        if let Some(d) = diff_rows(&csv_to_rows(&records, &want), &want) {
            failures.push(format!("{}@{} data.csv: {d}", s.table, s.snapshot_id));
        }
        // data.parquet, read back with the parquet crate.
        let bytes = std::fs::read(dir.join("data.parquet")).expect("read data.parquet");
        assert_eq!(
            std::fs::metadata(dir.join("data.parquet"))
                .expect("stat")
                .len(),
            bytes.len() as u64
        );
        if let Some(d) = diff_rows(&parquet_rows(bytes), &want) {
            failures.push(format!("{}@{} data.parquet: {d}", s.table, s.snapshot_id));
        }
        // mtime is the snapshot's time.
        let json: Value = serde_json::from_slice(
            &std::fs::read(dir.join("snapshot.json")).expect("snapshot.json"),
        )
        .expect("json");
        assert_eq!(json["snapshot-id"], s.snapshot_id);
        let ms = json["timestamp-ms"].as_i64().expect("timestamp-ms");
        assert_eq!(
            meta.mtime() * 1000 + meta.mtime_nsec() / 1_000_000,
            ms,
            "{}@{}",
            s.table,
            s.snapshot_id
        );
        // The per-file views hold the same rows as data.csv, split by data file.
        let mut from_files: Vec<String> = Vec::new();
        let mut files = 0;
        for e in std::fs::read_dir(dir.join("files")).expect("ls files") {
            let p = e.expect("entry").path();
            if p.extension().is_some_and(|x| x == "csv") {
                files += 1;
                let t = std::fs::read_to_string(&p).expect("read file view");
                let mut lines = t.lines();
                assert_eq!(lines.next(), text.lines().next(), "{}: header", p.display());
                from_files.extend(lines.map(str::to_string));
            }
        }
        let mut all: Vec<String> = text.lines().skip(1).map(str::to_string).collect();
        all.sort();
        from_files.sort();
        assert_eq!(
            from_files, all,
            "{}@{}: files/*.csv vs data.csv ({files} files)",
            s.table, s.snapshot_id
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {} snapshots differ:\n{}",
        failures.len(),
        snaps.len(),
        failures.join("\n")
    );
}

#[test]
fn shell_tools_read_the_largest_table_at_any_offset() {
    let table = table_dir("v3_dv_large");
    let m = Mount::new(&table, &[]);
    let current = m.path().join("current");
    let id: i64 = std::fs::read_link(&current)
        .expect("current")
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.parse().ok())
        .expect("current -> snapshots/<id>");
    let want = cat_csv(&table, id);
    let view = current.join("data.csv");
    let size = std::fs::metadata(&view).expect("stat").len();
    assert_eq!(size, want.len() as u64, "ls -l size");
    assert!(
        size > 512 << 10,
        "the largest fixture renders to more than 512 KiB ({size})"
    );
    // cat, head, tail, wc, grep, dd skip=, cp, diff.
    assert_eq!(run(Command::new("cat").arg(&view)).stdout, want);
    let head = run(Command::new("head").args(["-n", "3"]).arg(&view)).stdout;
    assert_eq!(
        head,
        want.split_inclusive(|b| *b == b'\n')
            .take(3)
            .collect::<Vec<_>>()
            .concat()
    );
    let tail = run(Command::new("tail").args(["-n", "5"]).arg(&view)).stdout;
    let lines: Vec<&[u8]> = want.split_inclusive(|b| *b == b'\n').collect();
    assert_eq!(tail, lines[lines.len() - 5..].concat());
    let wc = String::from_utf8(run(Command::new("wc").args(["-l", "-c"]).arg(&view)).stdout)
        .expect("utf-8");
    let counts: Vec<u64> = wc
        .split_whitespace()
        .take(2)
        .map(|n| n.parse().expect("count"))
        .collect();
    assert_eq!(counts, [lines.len() as u64, size]);
    let dd = run(Command::new("dd")
        .arg(format!("if={}", view.display()))
        .args(["bs=4096", "skip=97", "count=5", "status=none"]))
    .stdout;
    assert_eq!(dd, want[97 * 4096..102 * 4096]);
    let second_line = String::from_utf8_lossy(lines[1]).trim_end().to_string();
    let grep = run(Command::new("grep")
        .arg("-c")
        .arg("-F")
        .arg("-x")
        .arg(&second_line)
        .arg(&view))
    .stdout;
    assert_eq!(String::from_utf8_lossy(&grep).trim(), "1");
    let tmp = tempfile::tempdir().expect("tmp");
    run(Command::new("cp")
        .arg(&view)
        .arg(tmp.path().join("copy.csv")));
    assert_eq!(
        std::fs::read(tmp.path().join("copy.csv")).expect("copy"),
        want
    );
    std::fs::write(tmp.path().join("want.csv"), &want).expect("write");
    run(Command::new("diff")
        .arg(&view)
        .arg(tmp.path().join("want.csv")));
    // Reads at arbitrary offsets and sizes, backwards, on one open file.
    let f = File::open(&view).expect("open");
    let mut offset = size;
    let mut step = 7919u64;
    while offset > 0 {
        offset = offset.saturating_sub(step);
        step = step * 3 % 200_003 + 1;
        let mut buf = vec![0; (step % 70_000 + 1) as usize];
        let n = f.read_at(&mut buf, offset).expect("pread");
        let end = (offset as usize + n).min(want.len());
        assert_eq!(&buf[..n], &want[offset as usize..end], "read at {offset}");
    }
    // Past the end: nothing.
    assert_eq!(
        f.read_at(&mut [0; 16], size + 10).expect("pread past end"),
        0
    );
    // The per-file Parquet view reads back with the parquet crate.
    for e in std::fs::read_dir(current.join("files")).expect("ls files") {
        let p = e.expect("entry").path();
        if p.extension().is_some_and(|x| x == "parquet") {
            let rows = parquet_rows(std::fs::read(&p).expect("read"));
            assert!(!rows.is_empty(), "{}", p.display());
        }
    }
}

/// The `read_ahead_kb` of the FUSE mount on `point`, from sysfs.
fn read_ahead_kb(point: &Path) -> u64 {
    let info = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    let device =
        icefloe_fuse::readahead::fuse_device(&info, point).expect("the mount in mountinfo");
    let file = format!("/sys/class/bdi/{device}/read_ahead_kb");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    text.trim().parse().expect("a number of KiB")
}

/// `--read-ahead` sets the kernel's read-ahead window of the mount (as root; the
/// tests run as root, the suite's FUSE mounts need it), `0` keeps the kernel's, and reads
/// through either window are the same bytes.
#[test]
fn read_ahead_sets_the_mounts_window() {
    // /proc/self belongs to the effective user.
    let uid = std::fs::metadata("/proc/self").expect("/proc/self").uid();
    assert_eq!(uid, 0, "this test sets sysfs values: run the suite as root");
    let table = table_dir("v3_dv_large");
    let wide = Mount::new(&table, &["--read-ahead", "3MiB"]);
    let kept = Mount::new(&table, &["--read-ahead", "0"]);
    let default = Mount::new(&table, &[]);
    assert_eq!(read_ahead_kb(wide.path()), 3072);
    assert_eq!(read_ahead_kb(default.path()), 1024);
    assert!(
        ![3072, 1024].contains(&read_ahead_kb(kept.path())),
        "--read-ahead 0 must leave the kernel's window"
    );
    let csv = |m: &Mount| std::fs::read(m.path().join("current/data.csv")).expect("read");
    let cli =
        run(Command::new(ICEFLOE)
            .arg("cat")
            .arg(&table)
            .args(["--lineage", "--format", "csv"]))
        .stdout;
    assert_eq!(csv(&wide), cli);
    assert_eq!(csv(&kept), cli);
}

/// The files of the Parquet views' part stores under a spill directory.
fn parts_on_disk(spill: &Path) -> usize {
    std::fs::read_dir(spill)
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with("icefloe-parts-")
                })
                .map(|e| std::fs::read_dir(e.path()).map(|f| f.count()).unwrap_or(0))
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn a_parquet_cache_smaller_than_one_view_still_serves_its_bytes() {
    let table = table_dir("v3_dv_large");
    let spill = tempfile::tempdir().expect("spill parent");
    let small = Mount::spawn(
        Some(&table),
        &[
            "--max-cache-size",
            "1",
            "--spill-dir",
            spill.path().to_str().expect("utf-8"),
        ],
        &[("ICEFLOE_LOG", "icefloe_fuse=debug")],
    );
    let roomy = Mount::new(&table, &[]);
    let want = std::fs::read(roomy.path().join("current/data.parquet")).expect("read");
    let f = File::open(small.path().join("current/data.parquet")).expect("open");
    assert_eq!(f.metadata().expect("stat").len(), want.len() as u64);
    // Sizing the views of the other snapshots evicts the parts of this one.
    for e in std::fs::read_dir(small.path().join("snapshots")).expect("ls") {
        let other = e.expect("entry").path().join("data.parquet");
        assert!(std::fs::metadata(&other).expect("stat").len() > 0);
    }
    // Backwards, in odd steps: every part read was evicted since it was sized, and is encoded
    // again; at most one part (and one being made) is on disk at a time.
    let mut got = vec![0u8; want.len()];
    let mut end = want.len();
    while end > 0 {
        let start = end.saturating_sub(100_003);
        f.read_exact_at(&mut got[start..end], start as u64)
            .expect("read");
        assert!(
            parts_on_disk(spill.path()) <= 2,
            "parts held beyond the bound"
        );
        end = start;
    }
    assert!(got == want, "bytes differ from a mount with a large cache");
    assert!(
        small.log_text().contains("encoded again after eviction"),
        "no part was encoded again:\n{}",
        small.log_text()
    );
    assert_eq!(parquet_rows(got), parquet_rows(want));
}

/// `icefloe cat --format jsonl --lineage` of one snapshot.
fn cat_jsonl(table: &Path, snapshot: i64) -> Vec<u8> {
    run(Command::new(ICEFLOE).arg("cat").arg(table).args([
        "--lineage",
        "--format",
        "jsonl",
        "--snapshot",
        &snapshot.to_string(),
    ]))
    .stdout
}

/// `data.jsonl` (and `files/*.jsonl`) beside `data.csv` are the bytes of
/// `icefloe cat --format jsonl --lineage` of the snapshot, on tables with deletes and evolved
/// schemas, read whole and at random offsets; every line is one JSON object.
#[test]
fn data_jsonl_is_what_cat_prints_as_json_lines() {
    let m = Mount::new(&warehouse(), &[]);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n.max(1)
    };
    let mut files_seen = 0;
    for t in INDEXED {
        for s in all_snapshots().iter().filter(|s| s.table == t) {
            let dir = m.path().join(format!("db/{t}/snapshots/{}", s.snapshot_id));
            let want = cat_jsonl(&table_dir(t), s.snapshot_id);
            let view = dir.join("data.jsonl");
            assert_eq!(
                std::fs::metadata(&view).expect("stat").len(),
                want.len() as u64,
                "{}",
                view.display()
            );
            let f = File::open(&view).expect("open");
            for _ in 0..20 {
                let at = next(want.len() as u64 + 1);
                let n = next(200_000) as usize + 1;
                let end = (at as usize + n).min(want.len());
                let mut buf = vec![0u8; end - at as usize];
                f.read_exact_at(&mut buf, at).expect("read");
                assert!(buf == want[at as usize..end], "{} at {at}", view.display());
            }
            let got = std::fs::read(&view).expect("read");
            assert!(got == want, "{} differs from cat", view.display());
            let rows: Vec<Value> = String::from_utf8(got)
                .expect("utf-8")
                .lines()
                .map(|l| serde_json::from_str(l).expect("a JSON line"))
                .collect();
            assert!(rows
                .iter()
                .all(|r| r.is_object() && r.get("_row_id").is_some()));
            // The per-file views hold the same lines.
            let mut from_files = 0;
            for e in std::fs::read_dir(dir.join("files")).expect("ls files") {
                let p = e.expect("entry").path();
                if p.extension().is_some_and(|x| x == "jsonl") {
                    let text = std::fs::read_to_string(&p).expect("read file view");
                    from_files += text.lines().count();
                    files_seen += 1;
                }
            }
            assert_eq!(from_files, rows.len(), "{}", dir.display());
        }
    }
    assert!(files_seen > 0);
}
