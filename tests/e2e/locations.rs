//! Locations as other writers record them, made by scripted edits of copies
//! of the Spark fixture tables v3_lineage_cow (6 snapshots, no deletion vectors: a DV's Puffin
//! footer names its data file too, which these edits do not rewrite) and v3_basic. Each
//! test rewrites every path the table records (metadata JSON, manifest lists, manifests) and,
//! where it says so, moves files; every snapshot must then read the rows Spark read from the
//! original.

use std::path::Path;
use std::sync::Arc;

use icefloe_core::cache::Caches;
use icefloe_core::{OpenOptions, Table};
use icefloe_testkit::rewrite::rewrite_paths;
use icefloe_testkit::rows::{rows, snapshots_of};
use icefloe_testkit::{copy_table, diff_rows, fixtures_dir};

/// Where the fixtures record their tables.
const RECORDED: &str = "/tmp/iceberg-fixtures-warehouse/db";

/// A path recorded under `table`'s recorded root: the part below it (`/metadata/...`).
fn below<'a>(recorded: &'a str, table: &str) -> &'a str {
    recorded
        .strip_prefix(&format!("{RECORDED}/{table}"))
        .unwrap_or_else(|| panic!("{recorded} is not under the table"))
}

async fn open(location: &str, opts: &OpenOptions) -> icefloe_core::Result<Table> {
    Table::open_with_options(location, Arc::new(Caches::new(1 << 24)), opts).await
}

/// Every snapshot of fixture `table` read from `location` equals Spark's rows.
async fn all_snapshots_read(table: &str, location: &str, opts: &OpenOptions) {
    let t = open(location, opts)
        .await
        .unwrap_or_else(|e| panic!("{location}: {e}"));
    let snaps = snapshots_of(table);
    assert!(snaps.len() > 1);
    for s in snaps {
        let got = rows(&t, Some(s.snapshot_id))
            .await
            .unwrap_or_else(|e| panic!("snapshot {}: {e}", s.snapshot_id));
        assert_eq!(
            diff_rows(&got, &s.expected_rows()),
            None,
            "{location} snapshot {}",
            s.snapshot_id
        );
    }
}

/// Relative table locations: the recorded `location` and every file path are relative, in
/// the forms writers given a relative warehouse produce (`./t` with `t/...` paths, `t` with
/// paths relative to the table root, `file:` URLs with relative paths). The table is opened by
/// its absolute path; relative paths resolve under it.
#[tokio::test(flavor = "multi_thread")]
async fn relative_table_locations() {
    type Form = (&'static str, fn(&str) -> String);
    let forms: [Form; 3] = [
        ("./v3_lineage_cow", |rest| format!("v3_lineage_cow{rest}")),
        ("v3_lineage_cow", |rest| {
            rest.trim_start_matches('/').to_string()
        }),
        ("file:./v3_lineage_cow", |rest| {
            format!("file:v3_lineage_cow{rest}")
        }),
    ];
    for (location, path) in forms {
        let tmp = copy_table(&fixtures_dir().join("warehouse/db/v3_lineage_cow"));
        rewrite_paths(tmp.path(), &|p| {
            let rest = below(p, "v3_lineage_cow");
            if rest.is_empty() {
                location.to_string()
            } else {
                path(rest)
            }
        });
        let meta = std::fs::read_dir(tmp.path().join("metadata"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with(".metadata.json"))
            .unwrap();
        let text = std::fs::read_to_string(meta).unwrap();
        assert!(
            text.contains(&format!("\"location\": \"{location}\"")),
            "{location}"
        );
        assert!(!text.contains(RECORDED));
        all_snapshots_read(
            "v3_lineage_cow",
            tmp.path().to_str().unwrap(),
            &OpenOptions::default(),
        )
        .await;
    }
}

/// A warehouse copied elsewhere as a whole: v3_lineage_cow's data files were written outside
/// the table directory (`<warehouse>/shared/v3_lineage_cow/...`, as a writer with
/// `write.data.path` set does); opened from the copy, they resolve under the copy's warehouse
/// root, not at the recorded one. (A table without deletion vectors: a DV's Puffin footer
/// names its data file too, and this edit does not rewrite Puffin files.)
#[tokio::test(flavor = "multi_thread")]
async fn warehouse_copied_whole() {
    let name = "v3_lineage_cow";
    let wh = tempfile::tempdir().unwrap();
    let table = wh.path().join("db").join(name);
    icefloe_testkit::copy_dir(&fixtures_dir().join("warehouse/db").join(name), &table);
    let shared = wh.path().join("shared").join(name);
    std::fs::create_dir_all(shared.parent().unwrap()).unwrap();
    std::fs::rename(table.join("data"), &shared).unwrap();
    rewrite_paths(&table, &|p| match below(p, name).strip_prefix("/data/") {
        Some(file) => format!("/tmp/iceberg-fixtures-warehouse/shared/{name}/{file}"),
        None => p.to_string(),
    });
    assert!(!table.join("data").exists());
    all_snapshots_read(name, table.to_str().unwrap(), &OpenOptions::default()).await;
}

/// `--path-map`: a Hive-migrated table whose files were recorded on HDFS
/// (`hdfs://namenode:8020/warehouse/...`), outside any location the table records, read from a
/// local copy with one map entry per moved prefix. Without the map the reader says which
/// scheme it cannot open instead of reading anything.
#[tokio::test(flavor = "multi_thread")]
async fn path_map_covers_the_rest() {
    let tmp = copy_table(&fixtures_dir().join("warehouse/db/v3_basic"));
    rewrite_paths(
        tmp.path(),
        &|p| match below(p, "v3_basic").strip_prefix("/data/") {
            Some(name) => format!("hdfs://namenode:8020/warehouse/hive/v3_basic/{name}"),
            None => p.to_string(),
        },
    );
    let root = tmp.path().to_str().unwrap().to_string();
    let e = match open(&root, &OpenOptions::default()).await {
        Ok(t) => rows(&t, None).await.unwrap_err(),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("hdfs"), "{e}");
    let opts = OpenOptions {
        path_map: vec![
            ("s3://unused/prefix".into(), "/nowhere".into()),
            (
                "hdfs://namenode:8020/warehouse/hive/v3_basic".into(),
                format!("{root}/data"),
            ),
        ],
        ..Default::default()
    };
    all_snapshots_read("v3_basic", &root, &opts).await;
}

/// Object keys and file names with `%` are literal: v3_lineage_cow's `data` directory is
/// renamed `da%2Fta%20x` (as a writer that does not escape names leaves it); decoding the name
/// (to `da/ta x`) would read a file that does not exist. (A regression test: main already read
/// the `partitioned` fixture's `cat=x+y%2Fz%3D1%25` literally.)
#[tokio::test(flavor = "multi_thread")]
async fn percent_in_names_is_literal() {
    let tmp = copy_table(&fixtures_dir().join("warehouse/db/v3_lineage_cow"));
    std::fs::rename(tmp.path().join("data"), tmp.path().join("da%2Fta%20x")).unwrap();
    rewrite_paths(tmp.path(), &|p| p.replace("/data/", "/da%2Fta%20x/"));
    assert!(has_name_with(tmp.path(), "%2F"));
    all_snapshots_read(
        "v3_lineage_cow",
        tmp.path().to_str().unwrap(),
        &OpenOptions::default(),
    )
    .await;
}

fn has_name_with(dir: &Path, s: &str) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .any(|e| e.unwrap().file_name().to_string_lossy().contains(s))
}
