//! What fails, and with which errno: writes (EROFS), a corrupt deletion vector (EIO, the
//! mount stays up), the open files of a table removed from the warehouse (ESTALE).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::process::Command;
use std::time::{Duration, Instant};

use icefloe_core::{Scan, Table};
use icefloe_fuse::mounts::is_mounted;
use icefloe_testkit::copy_table;

use crate::common::{errno, run, table_dir, ICEFLOE};
use crate::mount::Mount;

#[test]
fn writes_fail_with_erofs() {
    let m = Mount::new(&table_dir("v3_basic"), &[]);
    let view = m.path().join("current/data.csv");
    assert!(view.exists());
    const EROFS: i32 = 30;
    assert_eq!(
        errno(File::options().write(true).open(&view)),
        Some(EROFS),
        "open for writing"
    );
    assert_eq!(
        errno(File::options().append(true).open(&view)),
        Some(EROFS),
        "append"
    );
    assert_eq!(
        errno(File::create(m.path().join("new.csv"))),
        Some(EROFS),
        "create"
    );
    assert_eq!(errno(std::fs::remove_file(&view)), Some(EROFS), "unlink");
    assert_eq!(
        errno(std::fs::rename(&view, m.path().join("moved.csv"))),
        Some(EROFS),
        "rename"
    );
    assert_eq!(
        errno(std::fs::create_dir(m.path().join("d"))),
        Some(EROFS),
        "mkdir"
    );
    assert_eq!(
        errno(std::fs::remove_dir(m.path().join("refs"))),
        Some(EROFS),
        "rmdir"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        errno(std::fs::set_permissions(
            &view,
            std::fs::Permissions::from_mode(0o666)
        )),
        Some(EROFS),
        "chmod"
    );
    assert_eq!(
        errno(std::os::unix::fs::symlink("x", m.path().join("l"))),
        Some(EROFS),
        "symlink"
    );
    // Still readable.
    assert!(std::fs::read(&view).expect("read").starts_with(b"_row_id,"));
}

#[test]
fn corrupt_deletion_vector_is_eio_and_the_mount_survives() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (puffin, offset, size, victim, healthy) = rt.block_on(async {
        let table = Table::open(tmp.path().to_str().expect("utf-8"))
            .await
            .expect("open");
        let tasks = Scan::builder()
            .build(&table)
            .expect("scan")
            .plan_files()
            .await
            .expect("plan");
        let with_dv = tasks
            .iter()
            .find(|t| t.deletion_vector.is_some())
            .expect("a DV applies");
        let without = tasks
            .iter()
            .find(|t| !t.has_deletes())
            .expect("a file without deletes");
        let dv = with_dv.deletion_vector.clone().expect("dv");
        let rel = dv
            .file
            .file_path
            .strip_prefix(&table.metadata().location)
            .expect("in table")
            .to_string();
        let stem = |p: &str| {
            p.rsplit('/')
                .next()
                .and_then(|n| n.strip_suffix(".parquet"))
                .expect("stem")
                .to_string()
        };
        (
            tmp.path().join(rel.trim_start_matches('/')),
            dv.file.content_offset.expect("offset") as usize,
            dv.file.content_size_in_bytes.expect("size") as usize,
            stem(&with_dv.data_file.file_path),
            stem(&without.data_file.file_path),
        )
    });
    // Flip a bit of the blob's CRC (its last byte).
    let mut bytes = std::fs::read(&puffin).expect("read puffin");
    bytes[offset + size - 1] ^= 0x01;
    std::fs::write(&puffin, bytes).expect("write puffin");
    let m = Mount::new(tmp.path(), &[]);
    const EIO: i32 = 5;
    let files = m.path().join("current/files");
    assert_eq!(
        errno(std::fs::read(files.join(format!("{victim}.csv")))),
        Some(EIO)
    );
    assert_eq!(
        errno(std::fs::read(m.path().join("current/data.csv"))),
        Some(EIO)
    );
    assert_eq!(
        errno(std::fs::read(files.join(format!("{victim}.parquet")))),
        Some(EIO)
    );
    // The log names the damaged file.
    let puffin_name = puffin
        .file_name()
        .and_then(|n| n.to_str())
        .expect("name")
        .to_string();
    let log = m.log_text();
    assert!(
        log.contains(&puffin_name) && log.contains("CRC"),
        "log does not name {puffin_name}:\n{log}"
    );
    // The mount is still up: listing works and another file still reads.
    assert!(is_mounted(m.path()));
    let text =
        std::fs::read_to_string(files.join(format!("{healthy}.csv"))).expect("healthy file reads");
    assert!(
        text.starts_with("_row_id,") && text.lines().count() > 1,
        "{text}"
    );
    assert!(
        std::fs::read_dir(m.path().join("snapshots"))
            .expect("ls")
            .count()
            >= 9
    );
}

#[test]
fn a_table_removed_from_the_warehouse_vanishes_and_its_open_files_fail_with_estale() {
    let wh = tempfile::tempdir().expect("warehouse");
    for t in ["v3_dv_large", "v3_basic"] {
        icefloe_testkit::copy_dir(&table_dir(t), &wh.path().join("db").join(t));
    }
    let m = Mount::new(wh.path(), &[]);
    let listed = |m: &Mount| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(m.path().join("db"))
            .expect("ls db")
            .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
            .collect();
        v.sort();
        v
    };
    assert_eq!(listed(&m), ["v3_basic", "v3_dv_large"]);
    let view = m.path().join("db/v3_dv_large/current/data.csv");
    // Not read whole: the kernel caches only the head read below.
    let want = run(Command::new(ICEFLOE)
        .arg("cat")
        .arg(wh.path().join("db/v3_dv_large"))
        .args(["--lineage", "--format", "csv"]))
    .stdout;
    let open = File::open(&view).expect("open");
    let mut head = vec![0u8; 16];
    open.read_exact_at(&mut head, 0).expect("read open file");
    assert_eq!(head, want[..16]);

    std::fs::remove_dir_all(wh.path().join("db/v3_dv_large")).expect("drop the table");
    let start = Instant::now();
    while listed(&m) != ["v3_basic"] {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "still listed: {:?}",
            listed(&m)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(errno(std::fs::metadata(&view)), Some(libc::ENOENT));
    // A read of the open file the kernel has not cached (its end) fails: never stale bytes.
    assert!(want.len() > 512 << 10, "{} bytes", want.len());
    let mut buf = vec![0u8; 16];
    let at = want.len() as u64 - 16;
    assert_eq!(errno(open.read_exact_at(&mut buf, at)), Some(libc::ESTALE));
    assert!(m.log_text().contains("gone"), "{}", m.log_text());
    // The other table still reads.
    let other =
        std::fs::read(m.path().join("db/v3_basic/current/data.csv")).expect("read v3_basic");
    assert!(!other.is_empty());
}
