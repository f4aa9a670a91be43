//! Scripted edit behind the shredded-variant test: no writer available here
//! produces shredded variants (Spark 3.5 and Iceberg 1.10's Java writer write them unshredded;
//! Spark 4 with `write.parquet.shred-variants=true` and S3 Tables' compaction shred them).
//!
//! ```sh
//! cargo run --release -p icefloe-testkit --example shred_variant
//! ```
//!
//! It copies `fixtures/warehouse/db/v3_variant` to `fixtures/exact/warehouse/db/v3_variant_shredded`
//! and changes only this: every data file's variant column `v` is rewritten shredded
//! (Parquet VariantShredding: `metadata`, `value`, `typed_value`) as an object with typed
//! fields `a` (int64), `b` (string) and `d` (object with `e`: boolean), using
//! `parquet_variant_compute::shred_variant`; values that do not fit (numbers, strings,
//! variant-null, other fields such as `c`) stay in `value`. Row order, row count, field ids
//! and file names are kept, so the deletion vectors still apply; since the files' sizes
//! change, each manifest's `file_size_in_bytes` and each manifest list's `manifest_length`
//! are rewritten to the new sizes (Avro metadata and schema kept). The expected rows are
//! v3_variant's own: a shredded variant must read back as the same value.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use apache_avro::types::Value as Avro;
use arrow::array::{Array, ArrayRef, RecordBatch, StructArray};
use arrow::datatypes::{DataType, Field, Fields, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet_variant_compute::{shred_variant, VariantArray};

fn main() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let src = fixtures.join("warehouse/db/v3_variant");
    let dst = fixtures.join("exact/warehouse/db/v3_variant_shredded");
    let _ = fs::remove_dir_all(&dst);
    copy_dir(&src, &dst);

    let mut sizes: HashMap<String, i64> = HashMap::new();
    for e in fs::read_dir(dst.join("data")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "parquet") && shred_file(&p) {
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            sizes.insert(name, fs::metadata(&p).unwrap().len() as i64);
        }
    }
    assert!(!sizes.is_empty(), "no data file had a variant column");

    // Manifests first (their new lengths go into the manifest lists).
    let meta = dst.join("metadata");
    let mut lengths: HashMap<String, i64> = HashMap::new();
    let files: Vec<PathBuf> = fs::read_dir(&meta)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "avro"))
        .collect();
    for p in files.iter().filter(|p| !is_list(p)) {
        rewrite_avro(p, |v| {
            set_in(v, "data_file", "file_path", "file_size_in_bytes", &sizes)
        });
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        lengths.insert(name, fs::metadata(p).unwrap().len() as i64);
    }
    for p in files.iter().filter(|p| is_list(p)) {
        rewrite_avro(p, |v| {
            set_top(v, "manifest_path", "manifest_length", &lengths)
        });
    }
    println!("shredded {} data files into {}", sizes.len(), dst.display());
}

fn is_list(p: &Path) -> bool {
    p.file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("snap-")
}

/// Rewrites the variant column of one Parquet file shredded; false if it has none.
fn shred_file(p: &Path) -> bool {
    let bytes = bytes::Bytes::from(fs::read(p).unwrap());
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    let schema = batches[0].schema();
    let Some(vi) = schema
        .fields()
        .iter()
        .position(|f| f.name() == "v" && matches!(f.data_type(), DataType::Struct(_)))
    else {
        return false;
    };
    let as_type = DataType::Struct(Fields::from(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Utf8, true),
        Field::new(
            "d",
            DataType::Struct(Fields::from(vec![Field::new("e", DataType::Boolean, true)])),
            true,
        ),
    ]));
    let mut out = Vec::new();
    for b in &batches {
        let v = VariantArray::try_new(b.column(vi).as_ref()).unwrap();
        let shredded: StructArray = shred_variant(&v, &as_type).unwrap().into_inner();
        let mut cols: Vec<ArrayRef> = b.columns().to_vec();
        cols[vi] = Arc::new(shredded);
        out.push(cols);
    }
    // The new variant field keeps the old one's name, nullability and field id.
    let old = schema.field(vi);
    let new_field = Field::new(
        old.name(),
        out[0][vi].data_type().clone(),
        old.is_nullable(),
    )
    .with_metadata(old.metadata().clone());
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields[vi] = new_field;
    let new_schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, new_schema.clone(), None).unwrap();
    for cols in out {
        w.write(&RecordBatch::try_new(new_schema.clone(), cols).unwrap())
            .unwrap();
    }
    w.close().unwrap();
    fs::write(p, buf).unwrap();
    true
}

fn rewrite_avro(p: &Path, mut edit: impl FnMut(&mut Avro)) {
    let bytes = fs::read(p).unwrap();
    let reader = apache_avro::Reader::new(&bytes[..]).unwrap();
    let schema = reader.writer_schema().clone();
    let meta = reader.user_metadata().clone();
    let mut values: Vec<Avro> = reader.map(|v| v.unwrap()).collect();
    values.iter_mut().for_each(&mut edit);
    let mut w = apache_avro::Writer::with_codec(&schema, Vec::new(), apache_avro::Codec::Null);
    for (k, v) in meta {
        if !k.starts_with("avro.") {
            w.add_user_metadata(k, v).unwrap();
        }
    }
    for v in values {
        w.append(v).unwrap();
    }
    fs::write(p, w.into_inner().unwrap()).unwrap();
}

fn base(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn fields(v: &mut Avro) -> &mut Vec<(String, Avro)> {
    match v {
        Avro::Record(f) => f,
        other => panic!("not a record: {other:?}"),
    }
}

/// In a manifest entry: `record.data_file.size = sizes[base(data_file.path)]`.
fn set_in(v: &mut Avro, rec: &str, path: &str, size: &str, sizes: &HashMap<String, i64>) {
    let inner = fields(v)
        .iter_mut()
        .find(|(k, _)| k == rec)
        .map(|(_, v)| v)
        .unwrap();
    set_top(inner, path, size, sizes);
}

/// In a record: `size = sizes[base(path)]` when the path is one of `sizes`.
fn set_top(v: &mut Avro, path: &str, size: &str, sizes: &HashMap<String, i64>) {
    let f = fields(v);
    let name = f
        .iter()
        .find(|(k, _)| k == path)
        .and_then(|(_, v)| match v {
            Avro::String(s) => Some(base(s).to_string()),
            _ => None,
        })
        .unwrap();
    if let Some(n) = sizes.get(&name) {
        for (k, v) in f.iter_mut() {
            if k == size {
                *v = Avro::Long(*n);
            }
        }
    }
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            fs::copy(e.path(), &dest).unwrap();
        }
    }
}
