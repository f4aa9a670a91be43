//! The length pass against the encoders, adversarially: for every batch, the lengths computed
//! without rendering equal the byte lengths the CSV and JSON Lines encoders write.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Decimal32Array,
    Decimal64Array, FixedSizeBinaryArray, Float32Array, Float64Array, Int16Array, Int32Array,
    Int64Array, Int8Array, LargeStringArray, StringArray, StringViewArray, Time32MillisecondArray,
    Time32SecondArray, Time64MicrosecondArray, Time64NanosecondArray, TimestampMicrosecondArray,
    TimestampMillisecondArray, TimestampNanosecondArray, TimestampSecondArray, UInt64Array,
    UInt8Array,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use futures::StreamExt;

use super::length::{csv_batch_len, jsonl_batch_len};
use super::tests::all_types_batch;
use super::{csv, jsonl};

/// Asserts both lengths of `batch` and of every slice of it (of up to `slices` starts).
fn check(batch: &RecordBatch, what: &str) {
    let mut out = Vec::new();
    csv::encode_batch(batch, &mut out).unwrap();
    assert_eq!(
        csv_batch_len(batch).unwrap(),
        out.len() as u64,
        "CSV of {what}: {}",
        String::from_utf8_lossy(&out)
    );
    out.clear();
    jsonl::encode_batch(batch, &mut out).unwrap();
    assert_eq!(
        jsonl_batch_len(batch).unwrap(),
        out.len() as u64,
        "JSON Lines of {what}: {}",
        String::from_utf8_lossy(&out)
    );
}

fn check_slices(batch: &RecordBatch, what: &str) {
    check(batch, what);
    let n = batch.num_rows();
    for start in 0..n.min(7) {
        for len in [0, 1, 2, n / 2, n - start] {
            if start + len <= n {
                check(
                    &batch.slice(start, len),
                    &format!("{what}[{start}..+{len}]"),
                );
            }
        }
    }
}

#[test]
fn every_type_of_the_encoder_tests() {
    check_slices(&all_types_batch(), "all types");
}

/// A xorshift generator: the same sequence every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
}

/// Strings full of what CSV quotes and JSON escapes.
fn nasty_string(r: &mut Rng) -> String {
    const PARTS: &[&str] = &[
        "a", "bc", ",", "\"", "\r", "\n", "\r\n", "\\", "\0", "\u{1}", "\u{1f}", "\u{7f}", "\t",
        "\u{8}", "\u{c}", "é", "✓", "😀", " ", "\"\"", "null", "0", "-",
    ];
    let len = r.below(12);
    (0..len)
        .map(|_| PARTS[r.below(PARTS.len() as u64) as usize])
        .collect()
}

fn maybe<T>(r: &mut Rng, v: T) -> Option<T> {
    (!r.chance(5)).then_some(v)
}

/// A float of every kind: arbitrary bits, short decimals, widened floats, edges.
fn any_float(r: &mut Rng) -> f64 {
    const EDGES: &[f64] = &[
        0.0,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN_POSITIVE,
        f64::MAX,
        f64::MIN,
        5e-324,
        1e-5,
        1e-4,
        0.001,
        0.0009999,
        1e12,
        999_999_999_999.999,
        1e15,
        1e16,
        1e-7,
        123_456.789,
    ];
    match r.below(5) {
        0 => EDGES[r.below(EDGES.len() as u64) as usize],
        1 => f64::from_bits(r.next()),
        2 => (r.below(10_000_000) as f64 - 5e6) / [1.0, 10.0, 100.0, 1000.0][r.below(4) as usize],
        3 => f64::from(f32::from_bits(r.next() as u32)),
        _ => (r.below(1 << 40) as f64) * 10f64.powi(r.below(40) as i32 - 20),
    }
}

fn any_i64(r: &mut Rng) -> i64 {
    match r.below(4) {
        0 => [i64::MIN, i64::MAX, 0, -1, 1, 9, 10, -10, 99, 100][r.below(10) as usize],
        1 => r.next() as i64,
        2 => (r.next() as i64) >> r.below(64),
        _ => r.below(2_000) as i64 - 1_000,
    }
}

fn random_batch(r: &mut Rng, n: usize) -> RecordBatch {
    let utc: Option<Arc<str>> = Some("+00:00".into());
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    let mut add = |name: &str, col: ArrayRef| {
        fields.push(Field::new(name, col.data_type().clone(), true));
        columns.push(col);
    };
    macro_rules! col {
        ($arr:ty, $gen:expr) => {{
            let v: Vec<_> = (0..n)
                .map(|_| {
                    let x = $gen;
                    maybe(r, x)
                })
                .collect();
            Arc::new(<$arr>::from(v))
        }};
    }
    add("s", col!(StringArray, nasty_string(r)));
    add(
        "s_nonull",
        Arc::new(StringArray::from_iter_values(
            (0..n).map(|_| nasty_string(r)),
        )),
    );
    add(
        "plain",
        Arc::new(StringArray::from_iter_values(
            (0..n).map(|i| format!("v{i}")),
        )),
    );
    add("ls", col!(LargeStringArray, nasty_string(r)));
    add("sv", col!(StringViewArray, nasty_string(r)));
    add("b", col!(BooleanArray, r.chance(2)));
    add("i8", col!(Int8Array, r.next() as i8));
    add("i16", col!(Int16Array, r.next() as i16));
    add("i32", col!(Int32Array, any_i64(r) as i32));
    add("i64", col!(Int64Array, any_i64(r)));
    add("u8", col!(UInt8Array, r.next() as u8));
    add("u64", col!(UInt64Array, any_i64(r) as u64));
    add("f64", col!(Float64Array, any_float(r)));
    add("f32", col!(Float32Array, any_float(r) as f32));
    let dec = |r: &mut Rng| {
        let a = any_i64(r) as i128;
        let b = any_i64(r) as i128;
        a * (b >> r.below(64))
    };
    for scale in [0i8, 2, 9, 38, -3] {
        let v: Vec<_> = (0..n)
            .map(|_| {
                let x = dec(r) % 10i128.pow(38);
                maybe(r, x)
            })
            .collect();
        add(
            &format!("dec{scale}"),
            Arc::new(
                Decimal128Array::from(v)
                    .with_precision_and_scale(38, scale)
                    .unwrap(),
            ),
        );
    }
    let d32: Vec<_> = (0..n)
        .map(|_| {
            let x = any_i64(r) as i32 % 1_000_000_000;
            maybe(r, x)
        })
        .collect();
    add(
        "dec32",
        Arc::new(
            Decimal32Array::from(d32)
                .with_precision_and_scale(9, 4)
                .unwrap(),
        ),
    );
    let d64: Vec<_> = (0..n)
        .map(|_| {
            let x = any_i64(r) % 1_000_000_000_000_000_000;
            maybe(r, x)
        })
        .collect();
    add(
        "dec64",
        Arc::new(
            Decimal64Array::from(d64)
                .with_precision_and_scale(18, 18)
                .unwrap(),
        ),
    );
    let days = |r: &mut Rng| match r.below(3) {
        0 => any_i64(r) as i32,
        1 => r.below(5_000_000) as i32 - 1_000_000,
        _ => [-719_528, -719_529, 2_932_896, 2_932_897, i32::MIN, i32::MAX][r.below(6) as usize],
    };
    add("date", col!(Date32Array, days(r)));
    add("t32s", col!(Time32SecondArray, any_i64(r) as i32));
    add(
        "t32ms",
        col!(Time32MillisecondArray, r.below(86_400_000 * 5) as i32),
    );
    add("t64us", col!(Time64MicrosecondArray, any_i64(r)));
    add(
        "t64ns",
        col!(Time64NanosecondArray, r.below(86_400_000_000_000) as i64),
    );
    let ts = |r: &mut Rng, per_day: i64| match r.below(3) {
        0 => any_i64(r),
        1 => (r.below(4_000_000) as i64 - 800_000) * per_day + r.below(per_day as u64) as i64,
        // The edges of four-digit years.
        _ => [
            -719_528 * per_day,
            -719_528 * per_day - 1,
            2_932_897 * per_day,
            2_932_897 * per_day - 1,
        ][r.below(4) as usize],
    };
    for tz in [None, utc.clone()] {
        let z = if tz.is_some() { "tz" } else { "" };
        let v: Vec<_> = (0..n)
            .map(|_| {
                let x = ts(r, 86_400);
                maybe(r, x)
            })
            .collect();
        add(
            &format!("ts_s{z}"),
            Arc::new(TimestampSecondArray::from(v).with_timezone_opt(tz.clone())),
        );
        let v: Vec<_> = (0..n)
            .map(|_| {
                let x = ts(r, 86_400_000);
                maybe(r, x)
            })
            .collect();
        add(
            &format!("ts_ms{z}"),
            Arc::new(TimestampMillisecondArray::from(v).with_timezone_opt(tz.clone())),
        );
        let v: Vec<_> = (0..n)
            .map(|_| {
                let x = ts(r, 86_400_000_000);
                maybe(r, x)
            })
            .collect();
        add(
            &format!("ts_us{z}"),
            Arc::new(TimestampMicrosecondArray::from(v).with_timezone_opt(tz.clone())),
        );
        let v: Vec<_> = (0..n)
            .map(|_| {
                let x = any_i64(r);
                maybe(r, x)
            })
            .collect();
        add(
            &format!("ts_ns{z}"),
            Arc::new(TimestampNanosecondArray::from(v).with_timezone_opt(tz.clone())),
        );
    }
    let bins: Vec<Vec<u8>> = (0..n)
        .map(|_| (0..r.below(5)).map(|_| r.next() as u8).collect())
        .collect();
    add(
        "bin",
        Arc::new(BinaryArray::from(
            bins.iter()
                .map(|b| maybe(r, b.as_slice()))
                .collect::<Vec<_>>(),
        )),
    );
    let fixed = FixedSizeBinaryArray::try_from_sparse_iter_with_size(
        (0..n).map(|_| {
            let x = (0..16).map(|_| r.next() as u8).collect::<Vec<_>>();
            maybe(r, x)
        }),
        16,
    )
    .unwrap();
    add("fixed16", Arc::new(fixed));
    let mut columns_fields: Vec<Field> = fields;
    // A uuid column: the same bytes, marked.
    let uuid = columns[columns.len() - 1].clone();
    columns_fields.push(
        Field::new("uuid", uuid.data_type().clone(), true)
            .with_metadata(HashMap::from([("iceberg.type".into(), "uuid".into())])),
    );
    columns.push(uuid);
    // A variant held as JSON text, some of it empty.
    let texts: Vec<Option<String>> = (0..n)
        .map(|_| {
            let x = match r.below(4) {
                0 => String::new(),
                1 => "{\"a\":1,\"b\":\"x,y\"}".into(),
                2 => "12.5".into(),
                _ => "\"plain\"".into(),
            };
            maybe(r, x)
        })
        .collect();
    columns_fields.push(
        Field::new("variant", DataType::Utf8, true)
            .with_metadata(HashMap::from([("iceberg.type".into(), "variant".into())])),
    );
    columns.push(Arc::new(StringArray::from(texts)));
    RecordBatch::try_new(Arc::new(Schema::new(columns_fields)), columns).unwrap()
}

#[test]
fn random_batches_of_every_leaf_type() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..60 {
        let n = [1, 2, 5, 17, 64, 300][round % 6];
        let batch = random_batch(&mut r, n);
        check_slices(&batch, &format!("random batch {round}"));
        // Each column alone, so that a wrong column is named.
        if round < 6 {
            for (i, f) in batch.schema().fields().iter().enumerate() {
                let one = batch.project(&[i]).unwrap();
                check(&one, &format!("column {} of batch {round}", f.name()));
            }
        }
    }
}

#[test]
fn null_slots_holding_bytes_are_not_counted() {
    // Arrow lets a null slot span bytes; the encoders never write them.
    let values = b"a,b\"cnull,\"\nxyz".to_vec();
    let offsets = OffsetBuffer::new(vec![0i32, 4, 8, 12, 15].into());
    let nulls = NullBuffer::from(vec![true, false, true, false]);
    let s = StringArray::new(offsets, values.into(), Some(nulls));
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, true)])),
        vec![Arc::new(s)],
    )
    .unwrap();
    check_slices(&batch, "null slots with bytes");
}

#[test]
fn no_columns_and_no_rows() {
    let empty = RecordBatch::try_new_with_options(
        Arc::new(Schema::empty()),
        vec![],
        &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(3)),
    )
    .unwrap();
    check(&empty, "three rows of no column");
    check(&all_types_batch().slice(0, 0), "no rows");
}

/// Every batch of every snapshot of every fixture table, with and without lineage: the types
/// Iceberg tables really hold (nested, variants, geo, nanosecond timestamps, defaults).
#[tokio::test(flavor = "multi_thread")]
async fn every_snapshot_of_every_fixture() {
    let dir = std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/warehouse/db"
    ));
    let mut tables: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    tables.sort();
    let mut batches = 0;
    for path in tables {
        let table = crate::Table::open(path.to_str().unwrap()).await.unwrap();
        for s in &table.metadata().snapshots {
            for lineage in [false, true] {
                let scan = crate::Scan::builder()
                    .snapshot(crate::SnapshotSelector::Id(s.snapshot_id))
                    .lineage(lineage)
                    .build(&table)
                    .unwrap();
                let mut stream = scan.stream().await.unwrap();
                while let Some(b) = stream.next().await {
                    let b = b.unwrap();
                    check(&b, &format!("{} @ {}", path.display(), s.snapshot_id));
                    batches += 1;
                }
            }
        }
    }
    assert!(batches > 100, "{batches} batches");
}

/// Long strings that are clean but for one byte CSV quotes or JSON escapes, at every position
/// of a few block lengths (the block-wise searches test whole 64-byte blocks, then the rest):
/// each string alone and all of them as one column.
#[test]
fn one_special_byte_at_any_position_of_a_long_string() {
    let mut strings = Vec::new();
    for len in [0usize, 1, 63, 64, 65, 127, 128, 129, 200] {
        strings.push("x".repeat(len));
        for special in [",", "\"", "\r", "\n", "\\", "\u{1}", "\u{1f}"] {
            for at in 0..len {
                let mut s = "x".repeat(len);
                s.replace_range(at..at + 1, special);
                strings.push(s);
            }
        }
    }
    let column = |values: &[String]| {
        let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, false)]));
        let array = Arc::new(StringArray::from_iter_values(values)) as ArrayRef;
        RecordBatch::try_new(schema, vec![array]).expect("batch")
    };
    for s in &strings {
        check(&column(std::slice::from_ref(s)), &format!("{s:?}"));
    }
    check(&column(&strings), "all of them");
}
