//! Deletion-vector decoding on the scan path: every Iceberg test vector, and a synthetic DV the
//! size a 10M-row table with heavy deletes produces per data file (100,000 positions scattered
//! over 1,000,000 rows).
//!
//! Run: `cargo bench -p icefloe-benches --bench dv_decode`.

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use icefloe_core::delete::dv::{decode_deletion_vector, decode_portable_roaring64};
use roaring::RoaringTreemap;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/roaring");
const SYNTHETIC_POSITIONS: u64 = 100_000;
const SYNTHETIC_ROWS: u64 = 1_000_000;

/// Wraps a portable vector in the deletion-vector-v1 envelope: BE length, magic, vector, BE CRC.
fn envelope(vector: &[u8]) -> Vec<u8> {
    let mut covered = vec![0xD1, 0xD3, 0x39, 0x64];
    covered.extend_from_slice(vector);
    let mut blob = (covered.len() as u32).to_be_bytes().to_vec();
    blob.extend_from_slice(&covered);
    blob.extend_from_slice(&crc32fast::hash(&covered).to_be_bytes());
    blob
}

/// Deterministic scatter (splitmix64) so every run decodes the same bytes.
fn synthetic_positions() -> RoaringTreemap {
    let mut state = 0x5EED_u64;
    let mut positions = RoaringTreemap::new();
    while positions.len() < SYNTHETIC_POSITIONS {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        positions.insert(z % SYNTHETIC_ROWS);
    }
    // Writers run-optimize before serializing; do the same so the bytes look like real ones.
    positions.optimize();
    positions
}

fn fixtures(c: &mut Criterion) {
    let mut names: Vec<String> = std::fs::read_dir(FIXTURES)
        .expect("fixtures directory")
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".bin"))
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no fixtures in {FIXTURES}");

    let mut group = c.benchmark_group("fixture");
    for name in &names {
        let bytes = std::fs::read(Path::new(FIXTURES).join(name)).unwrap();
        let envelope = name.ends_with("-position-index.bin");
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), &bytes, |b, bytes| {
            if envelope {
                b.iter(|| decode_deletion_vector(black_box(bytes), "bench").unwrap())
            } else {
                b.iter(|| decode_portable_roaring64(black_box(bytes), "bench").unwrap())
            }
        });
    }
    group.finish();
}

fn synthetic(c: &mut Criterion) {
    let positions = synthetic_positions();
    let mut vector = Vec::with_capacity(positions.serialized_size());
    positions.serialize_into(&mut vector).unwrap();
    let blob = envelope(&vector);
    // The benchmark is only meaningful if it decodes what was encoded.
    assert_eq!(decode_deletion_vector(&blob, "bench").unwrap(), positions);
    eprintln!(
        "synthetic DV: {} positions over {} rows, blob {} bytes",
        positions.len(),
        SYNTHETIC_ROWS,
        blob.len()
    );

    let mut group = c.benchmark_group("dv_100k_of_1m");
    group.throughput(Throughput::Elements(positions.len()));
    group.bench_function("decode_deletion_vector", |b| {
        b.iter(|| decode_deletion_vector(black_box(&blob), "bench").unwrap())
    });
    // The same minus the envelope, to separate the CRC pass from bitmap decoding.
    group.bench_function("decode_portable_roaring64", |b| {
        b.iter(|| decode_portable_roaring64(black_box(&vector), "bench").unwrap())
    });
    // Reference point: roaring's own treemap reader, which checks no keys or trailing bytes.
    group.bench_function("roaring_treemap_deserialize_from", |b| {
        b.iter(|| RoaringTreemap::deserialize_from(black_box(&vector[..])).unwrap())
    });
    group.bench_function("crc32_only", |b| {
        b.iter(|| crc32fast::hash(black_box(&blob[4..blob.len() - 4])))
    });
    group.finish();
}

criterion_group!(benches, fixtures, synthetic);
criterion_main!(benches);
