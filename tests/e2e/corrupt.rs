//! Corrupted copies of fixture tables: every kind of damage is an error that names the
//! problem and the file, never a wrong answer.

use std::path::{Path, PathBuf};

use futures::TryStreamExt;
use icefloe_core::{Scan, Table};
use icefloe_testkit::{copy_table, fixtures_dir};

fn table_dir(name: &str) -> PathBuf {
    fixtures_dir().join("warehouse/db").join(name)
}

/// Reads every row of the current snapshot, returning the error text if any.
async fn scan_error(dir: &Path) -> String {
    let result = async {
        let table = Table::open(dir.to_str().unwrap()).await?;
        let scan = Scan::builder().lineage(true).build(&table)?;
        let rows: Vec<_> = scan.stream().await?.try_collect().await?;
        Ok::<_, icefloe_core::Error>(rows.len())
    }
    .await;
    match result {
        Ok(n) => panic!(
            "reading {} succeeded ({n} batches) but should fail",
            dir.display()
        ),
        Err(e) => e.to_string(),
    }
}

fn current_metadata(dir: &Path) -> PathBuf {
    let v = std::fs::read_to_string(dir.join("metadata/version-hint.text")).unwrap();
    dir.join(format!("metadata/v{}.metadata.json", v.trim()))
}

/// The Puffin file, offset and size of the first DV that applies in the current snapshot.
async fn first_dv(dir: &Path) -> (PathBuf, u64, u64) {
    let table = Table::open(dir.to_str().unwrap()).await.unwrap();
    let scan = Scan::builder().build(&table).unwrap();
    let tasks = scan.plan_files().await.unwrap();
    let dv = tasks
        .iter()
        .find_map(|t| t.deletion_vector.clone())
        .expect("a DV applies");
    let rel = dv
        .file
        .file_path
        .strip_prefix(&table.metadata().location)
        .unwrap();
    (
        dir.join(rel.trim_start_matches('/')),
        dv.file.content_offset.unwrap() as u64,
        dv.file.content_size_in_bytes.unwrap() as u64,
    )
}

#[tokio::test]
async fn missing_data_file_is_named() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let table = Table::open(tmp.path().to_str().unwrap()).await.unwrap();
    let tasks = Scan::builder()
        .build(&table)
        .unwrap()
        .plan_files()
        .await
        .unwrap();
    let victim = &tasks[0].data_file.file_path;
    let name = victim.rsplit('/').next().unwrap().to_string();
    std::fs::remove_file(tmp.path().join("data").join(&name)).unwrap();
    let err = scan_error(tmp.path()).await;
    assert!(err.contains(&name) && err.contains("not found"), "{err}");
}

#[tokio::test]
async fn truncated_puffin_is_an_error() {
    let tmp = copy_table(&table_dir("v3_dv_large"));
    let (puffin, offset, _) = first_dv(tmp.path()).await;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&puffin)
        .unwrap();
    f.set_len(offset + 10).unwrap();
    let err = scan_error(tmp.path()).await;
    let name = puffin.file_name().unwrap().to_str().unwrap();
    assert!(err.contains(name), "{err}");
}

#[tokio::test]
async fn wrong_dv_length_is_an_error() {
    let tmp = copy_table(&table_dir("v3_dv_large"));
    let (puffin, offset, _) = first_dv(tmp.path()).await;
    let mut bytes = std::fs::read(&puffin).unwrap();
    let o = offset as usize;
    let len = u32::from_be_bytes(bytes[o..o + 4].try_into().unwrap());
    bytes[o..o + 4].copy_from_slice(&(len - 8).to_be_bytes());
    std::fs::write(&puffin, bytes).unwrap();
    let err = scan_error(tmp.path()).await;
    assert!(
        err.contains("invalid deletion vector") && err.contains("length"),
        "{err}"
    );
}

#[tokio::test]
async fn flipped_dv_crc_is_an_error() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let (puffin, offset, size) = first_dv(tmp.path()).await;
    let mut bytes = std::fs::read(&puffin).unwrap();
    bytes[(offset + size - 1) as usize] ^= 0x01;
    std::fs::write(&puffin, bytes).unwrap();
    let err = scan_error(tmp.path()).await;
    assert!(err.contains("CRC"), "{err}");
}

#[tokio::test]
async fn bad_dv_magic_is_an_error() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let (puffin, offset, _) = first_dv(tmp.path()).await;
    let mut bytes = std::fs::read(&puffin).unwrap();
    bytes[offset as usize + 4] = 0;
    std::fs::write(&puffin, bytes).unwrap();
    let err = scan_error(tmp.path()).await;
    assert!(err.contains("magic"), "{err}");
}

fn edit_metadata(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let p = current_metadata(dir);
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
}

#[tokio::test]
async fn format_version_4_is_refused() {
    let tmp = copy_table(&table_dir("v3_basic"));
    edit_metadata(tmp.path(), |v| v["format-version"] = 4.into());
    let err = Table::open(tmp.path().to_str().unwrap())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("unsupported format version 4"), "{err}");
}

#[tokio::test]
async fn unknown_type_is_refused() {
    let tmp = copy_table(&table_dir("v3_basic"));
    edit_metadata(tmp.path(), |v| {
        for s in v["schemas"].as_array_mut().unwrap() {
            s["fields"][1]["type"] = "varchar(10)".into();
        }
    });
    let err = Table::open(tmp.path().to_str().unwrap())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unknown type") && err.contains("varchar(10)"),
        "{err}"
    );
}

#[tokio::test]
async fn metadata_resolution_follows_hint_then_highest_version() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let meta = tmp.path().join("metadata");
    let hint: u32 = std::fs::read_to_string(meta.join("version-hint.text"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The hint wins over a higher version.
    std::fs::write(meta.join("version-hint.text"), format!("{}\n", hint - 1)).unwrap();
    let t = Table::open(tmp.path().to_str().unwrap()).await.unwrap();
    assert!(t
        .metadata_file()
        .ends_with(&format!("v{}.metadata.json", hint - 1)));
    // Without a hint, the highest version.
    std::fs::remove_file(meta.join("version-hint.text")).unwrap();
    let t = Table::open(tmp.path().to_str().unwrap()).await.unwrap();
    assert!(
        t.metadata_file()
            .ends_with(&format!("v{hint}.metadata.json")),
        "{}",
        t.metadata_file()
    );
    // An explicit file wins.
    let explicit = meta.join("v2.metadata.json");
    let t = Table::open(explicit.to_str().unwrap()).await.unwrap();
    assert!(t.metadata_file().ends_with("v2.metadata.json"));
    // Gzip metadata, named as Iceberg Java names it.
    let gz = meta.join(format!("v{}.gz.metadata.json", hint + 1));
    let plain = std::fs::read(meta.join(format!("v{hint}.metadata.json"))).unwrap();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut enc, &plain).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let t = Table::open(tmp.path().to_str().unwrap()).await.unwrap();
    assert!(t.metadata_file().ends_with(".gz.metadata.json"));
    let latest = meta.join(format!("v{hint}.metadata.json"));
    let plain_table = Table::open(latest.to_str().unwrap()).await.unwrap();
    assert_eq!(
        t.metadata().current_snapshot_id,
        plain_table.metadata().current_snapshot_id
    );
    assert!(t.metadata().current_snapshot_id.is_some());
}

#[tokio::test]
async fn missing_table_says_what_was_looked_for() {
    let tmp = tempfile::tempdir().unwrap();
    let err = Table::open(tmp.path().to_str().unwrap())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("metadata"), "{err}");
}

/// Found by `scripts/fuzz` (seed 20261203): one byte of an equality delete file's footer
/// (offset 159) set to 0x01 or 0x7f makes a column chunk's offset negative, on which the
/// Parquet reader asserts; it is an error naming the file and the column chunk, not a panic.
#[tokio::test]
async fn negative_column_chunk_offset_is_named() {
    for byte in [0x01u8, 0x7f] {
        let tmp = copy_table(&table_dir("equality_deletes_v2"));
        let name = "00003-java-77af1561-6bc1-4fda-ad09-2ce36c3fda63-eq-deletes.parquet";
        let file = tmp.path().join("data").join(name);
        let mut bytes = std::fs::read(&file).unwrap();
        bytes[159] = byte;
        std::fs::write(&file, bytes).unwrap();
        let e = scan_error(tmp.path()).await;
        assert!(
            e.contains(name) && e.contains("column chunk 0") && e.contains("negative"),
            "{e}"
        );
    }
}
