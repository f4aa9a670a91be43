//! What the FUSE tests share: where the fixtures are, running the CLI, reading Parquet bytes
//! back, a call's errno, the mount's counters.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use arrow::record_batch::RecordBatch;
use icefloe_core::encode::jsonl::JsonLinesWriter;
use icefloe_testkit::fixtures_dir;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

use crate::mount::Mount;

/// The `icefloe` binary under test.
pub(crate) const ICEFLOE: &str = env!("CARGO_BIN_EXE_icefloe");

/// The fixture warehouse.
pub(crate) fn warehouse() -> PathBuf {
    fixtures_dir().join("warehouse")
}

/// A table of the fixture warehouse's `db` namespace.
pub(crate) fn table_dir(name: &str) -> PathBuf {
    warehouse().join("db").join(name)
}

/// Runs `cmd`, which must succeed.
pub(crate) fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `icefloe cat --format csv --lineage` of one snapshot.
pub(crate) fn cat_csv(table: &Path, snapshot: i64) -> Vec<u8> {
    run(Command::new(ICEFLOE).arg("cat").arg(table).args([
        "--lineage",
        "--format",
        "csv",
        "--snapshot",
        &snapshot.to_string(),
    ]))
    .stdout
}

/// `batches` as JSON objects, one per row.
fn jsonl(batches: &[RecordBatch]) -> Vec<Value> {
    let mut w = JsonLinesWriter::new(Vec::new());
    for b in batches {
        w.write_batch(b).expect("jsonl");
    }
    let out = String::from_utf8(w.finish().expect("jsonl")).expect("utf-8");
    out.lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

/// The rows of a Parquet file as JSON objects.
pub(crate) fn parquet_rows(bytes: Vec<u8>) -> Vec<Value> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))
        .expect("a valid Parquet file")
        .build()
        .expect("reader");
    let batches: Vec<RecordBatch> = reader.collect::<Result<_, _>>().expect("batches");
    jsonl(&batches)
}

/// The errno a call failed with, if it failed.
pub(crate) fn errno(r: std::io::Result<impl Sized>) -> Option<i32> {
    r.err().and_then(|e| e.raw_os_error())
}

/// The mount's counters: the `user.icefloe.stats` extended attribute of its root (JSON).
pub(crate) fn stats(m: &Mount) -> Value {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(m.path().as_os_str().as_bytes()).expect("path");
    let name = c"user.icefloe.stats";
    let mut buf = vec![0u8; 4096];
    // SAFETY: both strings are NUL-terminated and `buf` is writable for its length.
    let n = unsafe {
        libc::getxattr(
            path.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    assert!(n >= 0, "getxattr: {}", std::io::Error::last_os_error());
    buf.truncate(n as usize);
    serde_json::from_slice(&buf).expect("stats JSON")
}

/// Tables with deletes (positional, equality, deletion vectors) and an evolved schema, whose
/// views the index tests size and read.
pub(crate) const INDEXED: [&str; 3] = ["schema_evolution", "equality_deletes_v3", "v3_dv_large"];
