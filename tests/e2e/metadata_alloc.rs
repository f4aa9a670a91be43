//! Metadata JSON is parsed without a second copy of the file in memory: the
//! peak allocation while parsing a large metadata file stays near what the parsed result
//! keeps, instead of a JSON tree of the whole file (several times its size) on top of it.
//! A test binary of its own, since it counts every allocation of the process.

use icefloe_core::spec::TableMetadata;
use icefloe_testkit::alloc::{self, Counting};
use icefloe_testkit::fixtures_dir;
use serde_json::Value;

#[global_allocator]
static GLOBAL: Counting = Counting::new(usize::MAX);

/// The v3_basic metadata with `n` snapshots (each with its snapshot-log entry), valid.
fn large_metadata(n: i64) -> Vec<u8> {
    let dir = fixtures_dir().join("warehouse/db/v3_basic/metadata");
    let hint = std::fs::read_to_string(dir.join("version-hint.text")).unwrap();
    let text =
        std::fs::read_to_string(dir.join(format!("v{}.metadata.json", hint.trim()))).unwrap();
    let mut m: Value = serde_json::from_str(&text).unwrap();
    let template = m["snapshots"][0].clone();
    let mut snapshots = Vec::new();
    let mut log = Vec::new();
    for i in 0..n {
        let mut s = template.clone();
        s["snapshot-id"] = (1_000_000 + i).into();
        if i > 0 {
            s["parent-snapshot-id"] = (1_000_000 + i - 1).into();
        }
        s["sequence-number"] = (i + 1).into();
        s["first-row-id"] = 0.into();
        s["added-rows"] = 0.into();
        log.push(serde_json::json!({"timestamp-ms": 1_700_000_000_000i64 + i, "snapshot-id": 1_000_000 + i}));
        snapshots.push(s);
    }
    m["snapshots"] = snapshots.into();
    m["snapshot-log"] = log.into();
    m["last-sequence-number"] = n.into();
    m["current-snapshot-id"] = (1_000_000 + n - 1).into();
    m["refs"] = serde_json::json!({"main": {"snapshot-id": 1_000_000 + n - 1, "type": "branch"}});
    serde_json::to_vec(&m).unwrap()
}

#[test]
fn metadata_json_is_parsed_without_a_second_copy() {
    let bytes = large_metadata(20_000);
    let before = alloc::reset_peak();
    let m = TableMetadata::from_json_bytes(&bytes, "large.metadata.json").unwrap();
    let peak = alloc::peak() - before;
    let kept = alloc::live() - before;
    assert_eq!(m.snapshots.len(), 20_000);
    // Beyond what the result keeps, parsing may hold one snapshot's JSON tree and the small
    // top-level keys at a time: far less than the file. A JSON tree of the whole file would
    // add several times the file's size.
    let transient = peak - kept;
    eprintln!(
        "metadata JSON of {} bytes: peak {peak} bytes while parsing, {kept} kept, {transient} transient",
        bytes.len()
    );
    assert!(
        transient < bytes.len() / 4,
        "parsing {} bytes of metadata held {transient} bytes beyond its result (peak {peak}, kept {kept})",
        bytes.len()
    );
    drop(m);
}
