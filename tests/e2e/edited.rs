//! Valid tables as other writers leave them, made by scripted edits of copies of the Spark
//! fixture tables (each test says what it changes and why); every one reads the rows Spark
//! read from the original.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, DictionaryArray, LargeStringArray, StringViewArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Int32Type, Schema};
use arrow::record_batch::RecordBatch;
use icefloe_core::cache::Caches;
use icefloe_core::io::Location;
use icefloe_core::{MetadataSelection, OpenOptions, Scan, Table};
use icefloe_testkit::rows::{current_of, rows, snapshots_of};
use icefloe_testkit::{copy_table, diff_rows, fixtures_dir};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

fn table_dir(name: &str) -> PathBuf {
    fixtures_dir().join("warehouse/db").join(name)
}

/// The local file of a path recorded in `t`'s metadata, in the copy at `dir`.
fn local(t: &Table, dir: &Path, recorded: &str) -> PathBuf {
    let rel = Location::parse(recorded)
        .below(&Location::parse(&t.metadata().location))
        .unwrap();
    dir.join(rel.trim_start_matches('/'))
}

/// Rewrites a Parquet file with the same rows, each column changed by `change`.
fn rewrite_parquet(
    path: &Path,
    props: WriterProperties,
    change: &dyn Fn(&Field, &ArrayRef) -> (Field, ArrayRef),
) {
    let file = std::fs::File::open(path).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    let mut out = Vec::new();
    let mut schema = None;
    for b in &batches {
        let (fields, cols): (Vec<Field>, Vec<ArrayRef>) = b
            .schema()
            .fields()
            .iter()
            .zip(b.columns())
            .map(|(f, c)| change(f, c))
            .unzip();
        let s = Arc::new(Schema::new(fields));
        schema.get_or_insert(s.clone());
        out.push(RecordBatch::try_new(s, cols).unwrap());
    }
    let mut w = ArrowWriter::try_new(
        std::fs::File::create(path).unwrap(),
        schema.unwrap(),
        Some(props),
    )
    .unwrap();
    for b in &out {
        w.write(b).unwrap();
    }
    w.close().unwrap();
}

/// Rewrites the first data file `t`'s current snapshot reads (in the copy at `dir`) with the
/// same rows in row groups of 2, uncompressed; returns its recorded and its new size in bytes.
async fn rewrite_first_data_file(t: &Table, dir: &Path) -> (i64, i64) {
    let tasks = Scan::builder()
        .build(t)
        .unwrap()
        .plan_files()
        .await
        .unwrap();
    let file = local(t, dir, &tasks[0].data_file.file_path);
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(2))
        .set_compression(parquet::basic::Compression::UNCOMPRESSED)
        .build();
    rewrite_parquet(&file, props, &|f, c| (f.clone(), c.clone()));
    let real = std::fs::metadata(&file).unwrap().len() as i64;
    (tasks[0].data_file.file_size_in_bytes, real)
}

/// Item 10. Edit: one data file of v3_types is rewritten with the same rows but no compression
/// and small row groups, as a tool that copies or recompresses files would, so the object is
/// no longer the size its manifest entry records. The footer must be found at the object's real
/// end (a footer read at the recorded size's offset is garbage).
#[tokio::test(flavor = "multi_thread")]
async fn data_file_size_differs_from_the_manifest() {
    let tmp = copy_table(&table_dir("v3_types"));
    let t = Table::open(tmp.path().to_str().unwrap()).await.unwrap();
    let (recorded, real) = rewrite_first_data_file(&t, tmp.path()).await;
    assert_ne!(real, recorded);
    let fresh = Table::open_with(tmp.path().to_str().unwrap(), Arc::new(Caches::new(1 << 24)))
        .await
        .unwrap();
    let want = current_of("v3_types", tmp.path()).await;
    let got = rows(&fresh, None).await.unwrap();
    assert_eq!(diff_rows(&got, &want.expected_rows()), None);
}

/// Edit: a data file rewritten in place (same rows, other row groups and size) after a scan
/// kept its footer. Files are immutable by the spec, but a footer kept from before must never
/// decode the new bytes: the same table and caches read the rewritten file by its own footer.
#[tokio::test(flavor = "multi_thread")]
async fn kept_footer_is_not_used_for_a_file_replaced_in_place() {
    let tmp = copy_table(&table_dir("v3_types"));
    let caches = Arc::new(Caches::new(1 << 24));
    let t = Table::open_with(tmp.path().to_str().unwrap(), caches.clone())
        .await
        .unwrap();
    let want = current_of("v3_types", tmp.path()).await;
    for _ in 0..2 {
        let got = rows(&t, None).await.unwrap();
        assert_eq!(diff_rows(&got, &want.expected_rows()), None);
    }
    caches.parquet_footers.run_pending_tasks().await;
    assert!(caches.parquet_footers.entry_count() > 0, "no footer kept");
    let (recorded, real) = rewrite_first_data_file(&t, tmp.path()).await;
    assert_ne!(real, recorded);
    let got = rows(&t, None).await.unwrap();
    assert_eq!(diff_rows(&got, &want.expected_rows()), None);
}

/// Item 13. Edit: every v2 position delete file of v2_upgraded is rewritten with `file_path`
/// as a large string, a string view or a dictionary of strings (Arrow writers such as
/// PyIceberg's and arrow-rs's keep their layout in the file's Arrow schema, so readers get it
/// back). The spec only says `file_path` is a string: every snapshot reads as before.
#[tokio::test(flavor = "multi_thread")]
async fn position_delete_paths_in_any_string_layout() {
    let tmp = copy_table(&table_dir("v2_upgraded"));
    let t = Table::open(tmp.path().to_str().unwrap()).await.unwrap();
    let mut files = Vec::new();
    for s in &t.metadata().snapshots {
        let scan = Scan::builder()
            .snapshot(icefloe_core::SnapshotSelector::Id(s.snapshot_id))
            .build(&t)
            .unwrap();
        for task in scan.plan_files().await.unwrap() {
            for d in &task.position_deletes {
                files.push(local(&t, tmp.path(), &d.file.file_path));
            }
        }
    }
    files.sort();
    files.dedup();
    assert!(files.len() >= 2, "{files:?}");
    let layouts = [DataType::LargeUtf8, DataType::Utf8View, DataType::Utf8];
    for (i, f) in files.iter().enumerate() {
        let layout = layouts[i % 3].clone();
        let dictionary = i % 3 == 2;
        rewrite_parquet(f, WriterProperties::default(), &|field, col| {
            if field.name() != "file_path" {
                return (field.clone(), col.clone());
            }
            let c = cast(col, &layout).unwrap();
            let c: ArrayRef = if dictionary {
                let d: DictionaryArray<Int32Type> = c
                    .as_any()
                    .downcast_ref::<arrow::array::StringArray>()
                    .unwrap()
                    .iter()
                    .collect();
                Arc::new(d)
            } else {
                c
            };
            match c.data_type() {
                DataType::LargeUtf8 => assert!(c.as_any().is::<LargeStringArray>()),
                DataType::Utf8View => assert!(c.as_any().is::<StringViewArray>()),
                _ => {}
            }
            let nf = Field::new("file_path", c.data_type().clone(), field.is_nullable())
                .with_metadata(field.metadata().clone());
            (nf, c)
        });
    }
    let fresh = Table::open_with(tmp.path().to_str().unwrap(), Arc::new(Caches::new(1 << 24)))
        .await
        .unwrap();
    for s in snapshots_of("v2_upgraded") {
        let got = rows(&fresh, Some(s.snapshot_id)).await.unwrap();
        assert_eq!(
            diff_rows(&got, &s.expected_rows()),
            None,
            "snapshot {}",
            s.snapshot_id
        );
    }
}

fn edit_json(p: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(p, serde_json::to_vec(&v).unwrap()).unwrap();
}

async fn open_sel(dir: &Path, sel: MetadataSelection) -> icefloe_core::Result<Table> {
    let opts = OpenOptions {
        metadata: sel,
        ..Default::default()
    };
    Table::open_with_options(dir.to_str().unwrap(), Arc::new(Caches::new(1 << 24)), &opts).await
}

fn name_of(t: &Table) -> String {
    t.metadata_file().rsplit('/').next().unwrap().to_string()
}

/// Item 12. Edits of a copy of v3_basic's metadata directory, as ClickHouse's settings expect
/// to meet them: a second table's metadata file in the same directory (another table-uuid,
/// higher version), an older file touched last, and metadata files named without a version.
#[tokio::test(flavor = "multi_thread")]
async fn metadata_file_choice_follows_clickhouse_settings() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let meta = tmp.path().join("metadata");
    let v12 = meta.join("v12.metadata.json");
    let orig: serde_json::Value = serde_json::from_slice(&std::fs::read(&v12).unwrap()).unwrap();
    let uuid = orig["table-uuid"].as_str().unwrap().to_string();
    let last = orig["last-updated-ms"].as_i64().unwrap();

    // Explicit files: relative to metadata/, to the root, absolute; a missing one is named.
    for f in [
        "v3.metadata.json",
        "metadata/v3.metadata.json",
        meta.join("v3.metadata.json").to_str().unwrap(),
    ] {
        let sel = MetadataSelection {
            metadata_file: Some(f.to_string()),
            ..Default::default()
        };
        assert_eq!(
            name_of(&open_sel(tmp.path(), sel).await.unwrap()),
            "v3.metadata.json"
        );
    }
    let sel = MetadataSelection {
        metadata_file: Some("v99.metadata.json".into()),
        ..Default::default()
    };
    let e = open_sel(tmp.path(), sel).await.unwrap_err().to_string();
    assert!(e.contains("v99.metadata.json"), "{e}");

    // Another table's file, with a higher version and the latest time; no version hint.
    std::fs::remove_file(meta.join("version-hint.text")).unwrap();
    let other = meta.join("v13.metadata.json");
    std::fs::copy(&v12, &other).unwrap();
    edit_json(&other, |v| {
        v["table-uuid"] = "0f0f0f0f-1111-2222-3333-444444444444".into();
        v["last-updated-ms"] = (last + 10_000).into();
    });
    assert_eq!(
        name_of(&open_sel(tmp.path(), Default::default()).await.unwrap()),
        "v13.metadata.json"
    );
    let by_uuid = |u: &str| MetadataSelection {
        table_uuid: Some(u.to_string()),
        ..Default::default()
    };
    let t = open_sel(tmp.path(), by_uuid(&uuid.to_uppercase()))
        .await
        .unwrap();
    assert_eq!(name_of(&t), "v12.metadata.json");
    let e = open_sel(tmp.path(), by_uuid("12345678-0000-0000-0000-000000000000"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no metadata file has table-uuid") && e.contains(&uuid),
        "{e}"
    );
    // An explicit file of another table is refused when a uuid is asked for.
    let sel = MetadataSelection {
        metadata_file: Some("v13.metadata.json".into()),
        table_uuid: Some(uuid.clone()),
        ..Default::default()
    };
    let e = open_sel(tmp.path(), sel).await.unwrap_err().to_string();
    assert!(e.contains("table-uuid"), "{e}");

    // An older version written last: chosen only when asked to go by last-updated-ms.
    edit_json(&meta.join("v5.metadata.json"), |v| {
        v["last-updated-ms"] = (last + 5_000).into();
    });
    let sel = MetadataSelection {
        table_uuid: Some(uuid.clone()),
        latest_by_last_updated_ms: true,
        ..Default::default()
    };
    assert_eq!(
        name_of(&open_sel(tmp.path(), sel).await.unwrap()),
        "v5.metadata.json"
    );
    let sel = MetadataSelection {
        latest_by_last_updated_ms: true,
        ..Default::default()
    };
    assert_eq!(
        name_of(&open_sel(tmp.path(), sel).await.unwrap()),
        "v13.metadata.json"
    );

    // Names without a version: ordered by last-updated-ms, and the rows are the latest ones.
    let plain = copy_table(&table_dir("v3_basic"));
    let meta = plain.path().join("metadata");
    std::fs::remove_file(meta.join("version-hint.text")).unwrap();
    std::fs::rename(
        meta.join("v12.metadata.json"),
        meta.join("vfinal.metadata.json"),
    )
    .unwrap();
    std::fs::rename(
        meta.join("v11.metadata.json"),
        meta.join("vprevious.metadata.json"),
    )
    .unwrap();
    let t = open_sel(plain.path(), Default::default()).await.unwrap();
    assert_eq!(name_of(&t), "vfinal.metadata.json");
    let want = snapshots_of("v3_basic")
        .into_iter()
        .find(|s| Some(s.snapshot_id) == t.metadata().current_snapshot_id)
        .unwrap();
    assert_eq!(
        diff_rows(&rows(&t, None).await.unwrap(), &want.expected_rows()),
        None
    );
}
