//! Strictness over scripted edits of fixture tables: each kind of invalid table is an
//! error naming the file and the rule, never rows. Allowed promotions stay readable.

use std::path::{Path, PathBuf};

use apache_avro::types::Value as Avro;
use futures::TryStreamExt;
use icefloe_core::{Scan, Table};
use icefloe_testkit::rewrite::rewrite_avro_records;
use icefloe_testkit::{copy_table, fixtures_dir};
use serde_json::{json, Value};

fn table_dir(name: &str) -> PathBuf {
    fixtures_dir().join("warehouse/db").join(name)
}

fn current_metadata(dir: &Path) -> PathBuf {
    let v = std::fs::read_to_string(dir.join("metadata/version-hint.text")).unwrap();
    dir.join(format!("metadata/v{}.metadata.json", v.trim()))
}

fn edit_metadata(dir: &Path, edit: impl FnOnce(&mut Value)) {
    let p = current_metadata(dir);
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
}

/// Every field of every schema named `name` gets type `ty`.
fn set_type(dir: &Path, name: &str, ty: &str) {
    edit_metadata(dir, |v| {
        for s in v["schemas"].as_array_mut().unwrap() {
            for f in s["fields"].as_array_mut().unwrap() {
                if f["name"] == name {
                    f["type"] = ty.into();
                }
            }
        }
    });
}

/// Rewrites Avro file `p`, keeping its schema and metadata, with `edit` applied to every
/// record; `edit` returns whether it changed the record.
fn edit_avro(p: &Path, mut edit: impl FnMut(&mut Vec<(String, Avro)>) -> bool) -> usize {
    let mut changed = 0;
    rewrite_avro_records(p, |mut v| {
        if let Avro::Record(fields) = &mut v {
            changed += edit(fields) as usize;
        }
        Some(v)
    });
    changed
}

/// Applies `edit` to the `data_file` record of every manifest entry of the table.
fn edit_data_files(dir: &Path, mut edit: impl FnMut(&mut Vec<(String, Avro)>) -> bool) -> usize {
    let mut changed = 0;
    for e in std::fs::read_dir(dir.join("metadata")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        if name.ends_with(".avro") && !name.starts_with("snap-") {
            changed += edit_avro(&p, |entry| {
                let Some((_, Avro::Record(df))) = entry.iter_mut().find(|(n, _)| n == "data_file")
                else {
                    return false;
                };
                edit(df)
            });
        }
    }
    changed
}

/// Applies `edit` to every entry of every manifest list of the table.
fn edit_manifest_lists(dir: &Path, mut edit: impl FnMut(&mut Vec<(String, Avro)>) -> bool) {
    for e in std::fs::read_dir(dir.join("metadata")).unwrap() {
        let p = e.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("snap-")
        {
            edit_avro(&p, &mut edit);
        }
    }
}

fn field<'a>(r: &'a mut [(String, Avro)], name: &str) -> &'a mut Avro {
    &mut r.iter_mut().find(|(n, _)| n == name).unwrap().1
}

fn text(v: &Avro) -> Option<&str> {
    match v {
        Avro::String(s) => Some(s),
        Avro::Union(_, inner) => text(inner),
        _ => None,
    }
}

fn is_puffin(df: &mut [(String, Avro)]) -> bool {
    text(field(df, "file_format")).is_some_and(|f| f.eq_ignore_ascii_case("puffin"))
}

async fn read_all(dir: &Path, columns: Option<Vec<&str>>) -> icefloe_core::Result<usize> {
    let table = Table::open(dir.to_str().unwrap()).await?;
    let mut b = Scan::builder().lineage(true);
    if let Some(c) = columns {
        b = b.columns(c.into_iter().map(str::to_string).collect());
    }
    let scan = b.build(&table)?;
    let tasks = scan.plan_files().await?;
    scan.load_deletes(&tasks).await?;
    let batches: Vec<_> = scan.read_tasks(tasks).try_collect().await?;
    Ok(batches.iter().map(|b| b.num_rows()).sum())
}

async fn scan_error(dir: &Path) -> String {
    match read_all(dir, None).await {
        Ok(n) => panic!("reading {} gave {n} rows but should fail", dir.display()),
        Err(e) => e.to_string(),
    }
}

fn assert_has(err: &str, parts: &[&str]) {
    for p in parts {
        assert!(err.contains(p), "error lacks {p:?}: {err}");
    }
}

/// Reads snapshot `id` of the table at `dir` (with that snapshot's schema, as the fixtures'
/// expected rows were read) as JSON rows with lineage, and the names of the rules the read
/// found broken; every warning an error if `strict`.
async fn rows_of(
    dir: &Path,
    id: i64,
    strict: bool,
) -> Result<(Vec<Value>, Vec<&'static str>), String> {
    let (rows, warnings) = icefloe_testkit::rows::rows_and_warnings(dir, id, strict, true).await?;
    Ok((rows, warnings.into_iter().map(|(rule, _)| rule).collect()))
}

/// The current snapshot id of the table at `dir`.
fn current_id(dir: &Path) -> i64 {
    current_list(dir).0
}

/// The rows Spark read from snapshot `id` of fixture table `table`.
fn truth(table: &str, id: i64) -> Vec<Value> {
    icefloe_testkit::all_snapshots()
        .into_iter()
        .find(|s| s.table == table && s.snapshot_id == id)
        .unwrap_or_else(|| panic!("no fixture snapshot {table} {id}"))
        .expected_rows()
}

/// The refusal policy for a table that breaks a rule without changing its answer: the current
/// snapshot of `dir` (an edited copy of fixture table `table`) reads Spark's rows for it with
/// a warning of `rule`, and a strict read refuses it with an error holding `parts`.
async fn reads_as_java_and_strict_refuses(dir: &Path, table: &str, rule: &str, parts: &[&str]) {
    let id = current_id(dir);
    let (rows, rules) = rows_of(dir, id, false).await.unwrap();
    if let Some(d) = icefloe_testkit::diff_rows(&rows, &truth(table, id)) {
        panic!("{table} read with {rules:?} differs from Spark's rows: {d}");
    }
    assert!(rules.contains(&rule), "no {rule} warning: {rules:?}");
    let err = rows_of(dir, id, true).await.unwrap_err().to_string();
    assert_has(&err, parts);
}

/// A broken rule that may change the rows (the reading rule gives Iceberg Java's answer, which
/// the fixture does not hold): the read warns of `rule`, and a strict read refuses it with an
/// error holding `parts`.
async fn warns_and_strict_refuses(dir: &Path, rule: &str, parts: &[&str]) -> Vec<Value> {
    let id = current_id(dir);
    let (rows, rules) = rows_of(dir, id, false).await.unwrap();
    assert!(rules.contains(&rule), "no {rule} warning: {rules:?}");
    let err = rows_of(dir, id, true).await.unwrap_err().to_string();
    assert_has(&err, parts);
    rows
}

// Item 1: the schema's type must agree with the Parquet column.

#[tokio::test]
async fn schema_type_must_agree_with_parquet_type() {
    for (column, id, ty) in [
        ("s", "field id 13", "date"),
        ("s", "field id 13", "timestamp_ns"),
        ("s", "field id 13", "boolean"),
        ("id", "field id 1", "boolean"),
        ("id", "field id 1", "timestamp"),
        ("id", "field id 1", "int"),
        ("tstz", "field id 12", "timestamptz_ns"),
        ("d", "field id 4", "float"),
        ("dec18", "field id 7", "decimal(12,6)"),
    ] {
        let tmp = copy_table(&table_dir("v3_types"));
        set_type(tmp.path(), column, ty);
        let err = scan_error(tmp.path()).await;
        assert_has(&err, &[".parquet", id, ty, "promotion the spec allows"]);
    }
}

#[tokio::test]
async fn promotions_the_spec_allows_still_read() {
    // int -> long, float -> double, decimal widening, and date -> timestamp (format version 3).
    let tmp = copy_table(&table_dir("v3_types"));
    set_type(tmp.path(), "i", "long");
    set_type(tmp.path(), "f", "double");
    set_type(tmp.path(), "dec9", "decimal(12, 2)");
    set_type(tmp.path(), "dt", "timestamp");
    let original = read_rows(&table_dir("v3_types")).await;
    let promoted = read_rows(tmp.path()).await;
    assert_eq!(original.len(), promoted.len());
    assert!(!original.is_empty());
    for (o, p) in original.iter().zip(&promoted) {
        assert_eq!(o["i"], p["i"]);
        assert_eq!(o["dec9"], p["dec9"]);
        match (&o["dt"], &p["dt"]) {
            (Value::String(d), Value::String(t)) => {
                assert_eq!(t, &format!("{d}T00:00:00.000000"))
            }
            (a, b) => assert_eq!(a, b),
        }
    }
}

async fn read_rows(dir: &Path) -> Vec<Value> {
    use icefloe_core::encode::JsonLinesWriter;
    let table = Table::open(dir.to_str().unwrap()).await.unwrap();
    let scan = Scan::builder().build(&table).unwrap();
    let batches: Vec<_> = scan.stream().await.unwrap().try_collect().await.unwrap();
    let mut w = JsonLinesWriter::new(Vec::new());
    for b in &batches {
        w.write_batch(b).unwrap();
    }
    let mut rows: Vec<Value> = String::from_utf8(w.finish().unwrap())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    rows.sort_by_key(|r| r["id"].as_i64());
    rows
}

/// The local path of the first data file the current snapshot of the table copy at `dir` reads.
async fn first_data_file(dir: &Path) -> PathBuf {
    let table = Table::open(dir.to_str().unwrap()).await.unwrap();
    let tasks = Scan::builder()
        .build(&table)
        .unwrap()
        .plan_files()
        .await
        .unwrap();
    let name = tasks[0].data_file.file_path.rsplit('/').next().unwrap();
    dir.join("data").join(name)
}

// Item 2: Parquet page checksums.

#[tokio::test]
async fn flipped_byte_in_a_data_page_fails_the_page_checksum() {
    use parquet::file::reader::FileReader;
    let tmp = copy_table(&table_dir("v3_basic"));
    let file = first_data_file(tmp.path()).await;
    let bytes = std::fs::read(&file).unwrap();
    let reader = parquet::file::serialized_reader::SerializedFileReader::new(bytes::Bytes::from(
        bytes.clone(),
    ))
    .unwrap();
    // The last byte of the `name` column chunk: inside its last page's data.
    let col = reader.metadata().row_group(0).column(1);
    let (start, len) = col.byte_range();
    let mut bad = bytes;
    bad[(start + len - 1) as usize] ^= 0x5a;
    std::fs::write(&file, bad).unwrap();
    let err = scan_error(tmp.path()).await;
    let name = file.file_name().unwrap().to_str().unwrap();
    assert_has(&err, &[name, "CRC"]);
}

// Item 3: metadata and manifest rules.

async fn open_error(dir: &Path) -> String {
    match Table::open(dir.to_str().unwrap()).await {
        Ok(_) => scan_error(dir).await,
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn invalid_metadata_is_refused() {
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(|v| v["current-snapshot-id"] = 12345.into()),
            "current-snapshot-id 12345 names no snapshot",
        ),
        (
            Box::new(|v| v["refs"]["main"]["snapshot-id"] = 999.into()),
            "ref \"main\" points at snapshot 999",
        ),
        (
            Box::new(|v| v["snapshots"] = json!({"a": 1})),
            "snapshots is not a list",
        ),
        (
            Box::new(|v| {
                let s = v["snapshots"].as_array_mut().unwrap().last_mut().unwrap();
                s.as_object_mut().unwrap().remove("manifest-list");
            }),
            "has no manifest-list",
        ),
        (
            Box::new(|v| {
                v.as_object_mut().unwrap().remove("current-schema-id");
            }),
            "missing current-schema-id",
        ),
        (
            Box::new(|v| v["schemas"][0]["fields"][1]["id"] = 1.into()),
            "field id 1 (name) is used twice",
        ),
        (
            Box::new(|v| v["schemas"][0]["fields"][1]["name"] = "id".into()),
            "column name \"id\" is used twice",
        ),
        (
            Box::new(|v| v["schemas"][0]["fields"][2]["name"] = "_row_id".into()),
            "column name \"_row_id\" is reserved",
        ),
        (
            Box::new(|v| v["schemas"][0]["fields"][2]["name"] = "_pos".into()),
            "column name \"_pos\" is reserved",
        ),
        (
            Box::new(|v| v["snapshots"][0]["sequence-number"] = (-1).into()),
            "sequence-number of snapshot",
        ),
        (
            Box::new(|v| v["next-row-id"] = (-5).into()),
            "next-row-id is negative",
        ),
        (
            Box::new(|v| v["snapshots"][0]["first-row-id"] = (-1).into()),
            "first-row-id of snapshot",
        ),
        (
            Box::new(|v| v["snapshots"][0]["first-row-id"] = i64::MAX.into()),
            "overflows",
        ),
    ];
    for (edit, want) in cases {
        let tmp = copy_table(&table_dir("v3_basic"));
        edit_metadata(tmp.path(), edit);
        let err = open_error(tmp.path()).await;
        assert_has(&err, &["metadata.json", want]);
    }
}

#[tokio::test]
async fn v3_features_in_a_v2_table_warn_or_are_refused() {
    // A V3 type: Iceberg Java reads the schema; a strict read refuses it.
    let tmp = copy_table(&table_dir("equality_deletes_v2"));
    set_type(tmp.path(), "category", "variant");
    let strict = icefloe_core::OpenOptions {
        strict: true,
        ..Default::default()
    };
    let open_strict = |dir: &Path| {
        let dir = dir.to_str().unwrap().to_string();
        let opts = strict.clone();
        async move {
            Table::open_with_options(&dir, icefloe_core::cache::Caches::global(), &opts)
                .await
                .unwrap_err()
                .to_string()
        }
    };
    let t = Table::open(tmp.path().to_str().unwrap()).await.unwrap();
    assert_eq!(
        t.warnings().all()[0].warning.rule.name(),
        "newer-format-feature"
    );
    assert_has(
        &open_strict(tmp.path()).await,
        &["format version 3 type", "format version 2 table"],
    );
    // Row lineage: Iceberg Java does not read next-row-id in a format version 2 table.
    let tmp = copy_table(&table_dir("equality_deletes_v2"));
    edit_metadata(tmp.path(), |v| v["next-row-id"] = 10.into());
    reads_as_java_and_strict_refuses(
        tmp.path(),
        "equality_deletes_v2",
        "newer-format-feature",
        &["next-row-id", "format version 2 table"],
    )
    .await;
    // Deletion vectors: a v3 table relabelled as v2 (without its lineage fields).
    let tmp = copy_table(&table_dir("v3_basic"));
    edit_metadata(tmp.path(), |v| {
        v["format-version"] = 2.into();
        v.as_object_mut().unwrap().remove("next-row-id");
        for s in v["snapshots"].as_array_mut().unwrap() {
            let s = s.as_object_mut().unwrap();
            s.remove("first-row-id");
            s.remove("added-rows");
        }
    });
    edit_manifest_lists(tmp.path(), |r| {
        *field(r, "first_row_id") = Avro::Union(0, Box::new(Avro::Null));
        true
    });
    edit_data_files(tmp.path(), |df| {
        *field(df, "first_row_id") = Avro::Union(0, Box::new(Avro::Null));
        true
    });
    assert_has(
        &scan_error(tmp.path()).await,
        &[
            "deletion vector (a format version 3 feature)",
            "format version 2 table",
        ],
    );
}

#[tokio::test]
async fn repeated_column_is_refused() {
    let err = read_all(&table_dir("v3_basic"), Some(vec!["id", "id"]))
        .await
        .unwrap_err()
        .to_string();
    assert_has(&err, &["\"id\" is asked for twice"]);
}

#[tokio::test]
async fn deletion_vector_without_referenced_data_file_is_refused() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let n = edit_data_files(tmp.path(), |df| {
        if !is_puffin(df) {
            return false;
        }
        *field(df, "referenced_data_file") = Avro::Union(0, Box::new(Avro::Null));
        true
    });
    assert!(n > 0);
    assert_has(
        &scan_error(tmp.path()).await,
        &[
            "-m",
            ".avro",
            "deletion vector without referenced_data_file",
        ],
    );
}

#[tokio::test]
async fn two_deletion_vectors_for_one_data_file_are_refused() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let mut first: Option<Avro> = None;
    edit_data_files(tmp.path(), |df| {
        if !is_puffin(df) {
            return false;
        }
        let r = field(df, "referenced_data_file");
        match &first {
            None => first = Some(r.clone()),
            Some(f) => *r = f.clone(),
        }
        true
    });
    assert_has(
        &scan_error(tmp.path()).await,
        &["snap-", "two deletion vectors for data file", "at most one"],
    );
}

#[tokio::test]
async fn data_file_relabelled_as_delete_file_is_refused() {
    // The oldest data file relabelled as an equality delete file: it would apply to nothing,
    // so its rows would silently vanish.
    let tmp = copy_table(&table_dir("v3_basic"));
    let mut done = false;
    edit_data_files(tmp.path(), |df| {
        if done || is_puffin(df) {
            return false;
        }
        *field(df, "content") = Avro::Int(2);
        done = true;
        true
    });
    assert_has(
        &scan_error(tmp.path()).await,
        &[".avro", "equality delete file listed in a data manifest"],
    );

    // An equality delete file relabelled as a position delete file in its delete manifest.
    let tmp = copy_table(&table_dir("equality_deletes_v2"));
    let n = edit_data_files(tmp.path(), |df| {
        if !matches!(field(df, "content"), Avro::Int(2)) {
            return false;
        }
        *field(df, "content") = Avro::Int(1);
        *field(df, "equality_ids") = Avro::Union(0, Box::new(Avro::Null));
        true
    });
    assert!(n > 0);
    assert_has(
        &scan_error(tmp.path()).await,
        &[".parquet", "must have the file_path and pos columns"],
    );
}

#[tokio::test]
async fn negative_counts_and_overflowing_row_ids_are_refused() {
    let tmp = copy_table(&table_dir("v3_basic"));
    edit_data_files(tmp.path(), |df| {
        *field(df, "record_count") = Avro::Long(-1);
        true
    });
    assert_has(
        &scan_error(tmp.path()).await,
        &[".avro", "record_count is negative"],
    );

    let tmp = copy_table(&table_dir("v3_basic"));
    edit_manifest_lists(tmp.path(), |r| {
        let f = field(r, "first_row_id");
        if matches!(f, Avro::Union(1, _)) {
            *f = Avro::Union(1, Box::new(Avro::Long(i64::MAX - 1)));
        }
        true
    });
    assert_has(&scan_error(tmp.path()).await, &[".avro", "overflows"]);

    let tmp = copy_table(&table_dir("v3_basic"));
    edit_manifest_lists(tmp.path(), |r| {
        *field(r, "added_rows_count") = Avro::Long(-3);
        true
    });
    assert_has(
        &scan_error(tmp.path()).await,
        &["snap-", "added_rows_count", "negative"],
    );
}

// Item 4: no hang on a FIFO; deletes are loaded before rows.

#[tokio::test]
async fn fifo_in_place_of_a_table_file_is_an_error() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let file = first_data_file(tmp.path()).await;
    std::fs::remove_file(&file).unwrap();
    let st = std::process::Command::new("mkfifo")
        .arg(&file)
        .status()
        .unwrap();
    assert!(st.success());
    let name = file.file_name().unwrap().to_str().unwrap();
    assert_has(
        &scan_error(tmp.path()).await,
        &[name, "is a FIFO, not a regular file"],
    );

    // The metadata file too.
    let tmp = copy_table(&table_dir("v3_basic"));
    let meta = current_metadata(tmp.path());
    std::fs::remove_file(&meta).unwrap();
    std::process::Command::new("mkfifo")
        .arg(&meta)
        .status()
        .unwrap();
    assert_has(&open_error(tmp.path()).await, &["metadata.json is a FIFO"]);
}

#[tokio::test]
async fn delete_files_are_validated_before_the_first_row() {
    // A broken DV of the last task: `load_deletes` fails before any batch is read.
    let tmp = copy_table(&table_dir("v3_basic"));
    let table = Table::open(tmp.path().to_str().unwrap()).await.unwrap();
    let scan = Scan::builder().build(&table).unwrap();
    let tasks = scan.plan_files().await.unwrap();
    let last = tasks
        .iter()
        .rev()
        .find_map(|t| t.deletion_vector.clone())
        .unwrap();
    let rel = last
        .file
        .file_path
        .strip_prefix(&table.metadata().location)
        .unwrap();
    let puffin = tmp.path().join(rel.trim_start_matches('/'));
    let mut bytes = std::fs::read(&puffin).unwrap();
    bytes[last.file.content_offset.unwrap() as usize + 4] ^= 0xff;
    std::fs::write(&puffin, bytes).unwrap();
    let err = scan.load_deletes(&tasks).await.unwrap_err().to_string();
    assert_has(&err, &["magic"]);
}

// Silent wrong rows the fuzz loop found.

/// The current snapshot's id and manifest list file of the table copy at `dir`.
fn current_list(dir: &Path) -> (i64, PathBuf) {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(current_metadata(dir)).unwrap()).unwrap();
    let id = v["current-snapshot-id"].as_i64().unwrap();
    let snap = v["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["snapshot-id"].as_i64() == Some(id))
        .unwrap();
    let name = snap["manifest-list"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap();
    (id, dir.join("metadata").join(name))
}

fn long(v: &Avro) -> Option<i64> {
    match v {
        Avro::Long(l) => Some(*l),
        Avro::Int(i) => Some(*i as i64),
        Avro::Union(_, inner) => long(inner),
        _ => None,
    }
}

#[tokio::test]
async fn deletion_vector_naming_no_live_data_file_is_refused() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let mut done = false;
    let n = edit_data_files(tmp.path(), |df| {
        if done || !is_puffin(df) {
            return false;
        }
        done = true;
        *field(df, "referenced_data_file") = Avro::Union(
            1,
            Box::new(Avro::String("file:/elsewhere/gone.parquet".into())),
        );
        true
    });
    assert!(n > 0);
    assert_has(
        &scan_error(tmp.path()).await,
        &[
            ".puffin",
            "file:/elsewhere/gone.parquet",
            "not a live data file",
            "Deletion Vectors",
        ],
    );
}

#[tokio::test]
async fn data_file_path_edited_away_from_its_deletion_vector_is_refused() {
    // The data file's path edited (it still resolves to the same file by name): its DV would
    // then apply to nothing and its deleted rows come back.
    let tmp = copy_table(&table_dir("v3_basic"));
    let mut targets = Vec::new();
    edit_data_files(tmp.path(), |df| {
        if is_puffin(df) {
            targets.push(text(field(df, "referenced_data_file")).unwrap().to_string());
        }
        false
    });
    let target = targets[0].clone();
    let moved = target.replace("/data/", "/data/./");
    let n = edit_data_files(tmp.path(), |df| {
        let p = field(df, "file_path");
        if text(p) != Some(target.as_str()) {
            return false;
        }
        *p = Avro::String(moved.clone());
        true
    });
    assert!(n > 0);
    assert_has(
        &scan_error(tmp.path()).await,
        &[".puffin", &target, "not a live data file"],
    );
}

#[tokio::test]
async fn deletion_vector_relabelled_as_parquet_is_refused() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let n = edit_data_files(tmp.path(), |df| {
        if !is_puffin(df) {
            return false;
        }
        *field(df, "file_format") = Avro::String("PARQUET".into());
        true
    });
    assert!(n > 0);
    assert_has(
        &scan_error(tmp.path()).await,
        &[".puffin", ".parquet", "content_offset", "wrong format"],
    );
}

#[tokio::test]
async fn data_manifest_without_first_row_id_in_a_lineage_snapshot_warns() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let (_, list) = current_list(tmp.path());
    let n = edit_avro(&list, |mf| {
        if long(field(mf, "content")) != Some(0) {
            return false;
        }
        *field(mf, "first_row_id") = Avro::Union(0, Box::new(Avro::Null));
        true
    });
    assert!(n > 0);
    // As Iceberg Java reads it: the rows of those manifests have a null _row_id.
    let rows = warns_and_strict_refuses(
        tmp.path(),
        "row-id-assignment",
        &[
            "snap-",
            "has no first_row_id",
            "Row Lineage for Upgraded Tables",
        ],
    )
    .await;
    let want = truth("v3_basic", current_id(tmp.path()));
    assert_eq!(rows.len(), want.len());
    assert!(rows.iter().all(|r| r["_row_id"].is_null()), "{rows:?}");
}

#[tokio::test]
async fn overlapping_row_id_ranges_are_refused() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let (id, list) = current_list(tmp.path());
    // Two data manifests carried over from older snapshots given the same first_row_id.
    let mut first = None;
    let n = edit_avro(&list, |mf| {
        if long(field(mf, "content")) != Some(0) || long(field(mf, "added_snapshot_id")) == Some(id)
        {
            return false;
        }
        let r = field(mf, "first_row_id");
        match first {
            None => {
                first = long(r);
                false
            }
            Some(f) => {
                *r = Avro::Union(1, Box::new(Avro::Long(f)));
                true
            }
        }
    });
    assert!(n > 0);
    assert_has(
        &scan_error(tmp.path()).await,
        &["share row ids", "Row Lineage"],
    );
}

#[tokio::test]
async fn manifest_sequence_number_unlike_its_snapshots_warns() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let (id, list) = current_list(tmp.path());
    let n = edit_avro(&list, |mf| {
        if long(field(mf, "added_snapshot_id")) == Some(id) {
            return false;
        }
        let Avro::Long(s) = field(mf, "sequence_number") else {
            return false;
        };
        *s += 1;
        true
    });
    assert!(n > 0);
    // Iceberg Java takes the manifest list's number: a warning, refused when strict.
    warns_and_strict_refuses(
        tmp.path(),
        "sequence-numbers",
        &[
            "snap-",
            "that added it has sequence-number",
            "Manifest Lists",
        ],
    )
    .await;
}

#[tokio::test]
async fn schema_field_id_never_assigned_warns() {
    let tmp = copy_table(&table_dir("v3_types"));
    edit_metadata(tmp.path(), |v| {
        let last = v["last-column-id"].as_i64().unwrap();
        let id = v["current-schema-id"].clone();
        for s in v["schemas"].as_array_mut().unwrap() {
            if s["schema-id"] == id {
                s["fields"][1]["id"] = (last + 5).into();
            }
        }
    });
    // Iceberg Java does not check it when reading; columns are still found by their ids.
    warns_and_strict_refuses(tmp.path(), "last-column-id", &["above last-column-id"]).await;
}

/// Rewrites Parquet file `file` with field id `from` relabelled `to`, and records its new
/// size in the manifests.
fn relabel_parquet_field_id(dir: &Path, file: &Path, from: i32, to: i32) {
    rewrite_parquet_columns(dir, file, |f| {
        let mut md = f.metadata().clone();
        if md.get("PARQUET:field_id") == Some(&from.to_string()) {
            md.insert("PARQUET:field_id".to_string(), to.to_string());
        }
        Some(f.clone().with_metadata(md))
    });
}

/// Rewrites Parquet file `file` with each top-level column as `edit` makes it (`None` drops
/// it), and records its new size in the manifests.
fn rewrite_parquet_columns(
    dir: &Path,
    file: &Path,
    edit: impl Fn(&arrow::datatypes::Field) -> Option<arrow::datatypes::Field>,
) {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ArrowWriter;
    let bytes = bytes::Bytes::from(std::fs::read(file).unwrap());
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap();
    let kept: Vec<(usize, arrow::datatypes::Field)> = builder
        .schema()
        .fields()
        .iter()
        .enumerate()
        .filter_map(|(i, f)| edit(f).map(|f| (i, f)))
        .collect();
    let schema = std::sync::Arc::new(arrow::datatypes::Schema::new(
        kept.iter().map(|(_, f)| f.clone()).collect::<Vec<_>>(),
    ));
    let mut w = ArrowWriter::try_new(Vec::new(), schema.clone(), None).unwrap();
    for b in builder.build().unwrap() {
        let b = b.unwrap();
        let columns = kept.iter().map(|(i, _)| b.column(*i).clone()).collect();
        w.write(&arrow::record_batch::RecordBatch::try_new(schema.clone(), columns).unwrap())
            .unwrap();
    }
    let out = w.into_inner().unwrap();
    let size = out.len() as i64;
    std::fs::write(file, out).unwrap();
    let name = file.file_name().unwrap().to_str().unwrap().to_string();
    let n = edit_data_files(dir, |df| {
        if !text(field(df, "file_path")).unwrap().ends_with(&name) {
            return false;
        }
        *field(df, "file_size_in_bytes") = Avro::Long(size);
        true
    });
    assert!(n > 0);
}

#[tokio::test]
async fn field_id_edited_in_a_data_file_warns() {
    // Column `name` (field id 2, optional) relabelled 1000 in one data file: it reads as null
    // for every row of that file, as in Iceberg Java, with a warning.
    let tmp = copy_table(&table_dir("v3_basic"));
    let file = tmp.path().join("data").join(
        first_data_file(&table_dir("v3_basic"))
            .await
            .file_name()
            .unwrap(),
    );
    relabel_parquet_field_id(tmp.path(), &file, 2, 1000);
    let name = file.file_name().unwrap().to_str().unwrap();
    warns_and_strict_refuses(
        tmp.path(),
        "metrics-without-column",
        &[name, "no column with field id 2", "metrics for field id 2"],
    )
    .await;
}

#[tokio::test]
async fn every_field_id_of_a_data_file_unknown_to_the_table_warns() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let file = tmp.path().join("data").join(
        first_data_file(&table_dir("v3_basic"))
            .await
            .file_name()
            .unwrap(),
    );
    for id in 1..=20 {
        relabel_parquet_field_id(tmp.path(), &file, id, 5000 + id);
    }
    // Without metrics the only evidence is that no id of the file is in any schema.
    let name = file.file_name().unwrap().to_str().unwrap().to_string();
    edit_data_files(tmp.path(), |df| {
        if !text(field(df, "file_path")).unwrap().ends_with(&name) {
            return false;
        }
        for m in [
            "value_counts",
            "null_value_counts",
            "nan_value_counts",
            "lower_bounds",
            "upper_bounds",
            "column_sizes",
        ] {
            if let Some((_, v)) = df.iter_mut().find(|(n, _)| n == m) {
                *v = Avro::Union(0, Box::new(Avro::Null));
            }
        }
        true
    });
    warns_and_strict_refuses(
        tmp.path(),
        "no-known-field-ids",
        &[&name, "none of which is a field of any schema"],
    )
    .await;
}

#[tokio::test]
async fn changed_initial_default_is_a_legitimate_edit() {
    // `initial-default` is the value of a column for rows of files written before it was
    // added (spec: "Default values"); changing it in the metadata changes what those rows
    // read, by design. Snapshot 3 of v3_defaults has such files for `c_str`.
    let tmp = copy_table(&table_dir("v3_defaults"));
    edit_metadata(tmp.path(), |v| {
        for s in v["schemas"].as_array_mut().unwrap() {
            for f in s["fields"].as_array_mut().unwrap() {
                if f["name"] == "c_str" {
                    f["initial-default"] = "edited".into();
                }
            }
        }
    });
    let rows = |dir: PathBuf| async move {
        let table = Table::open(dir.to_str().unwrap()).await.unwrap();
        let scan = Scan::builder()
            .snapshot(icefloe_core::SnapshotSelector::Id(7944306008421858955))
            .build(&table)
            .unwrap();
        let batches: Vec<_> = scan.stream().await.unwrap().try_collect().await.unwrap();
        let mut w = icefloe_core::encode::JsonLinesWriter::new(Vec::new());
        for b in &batches {
            w.write_batch(b).unwrap();
        }
        let mut rows: Vec<Value> = String::from_utf8(w.finish().unwrap())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        rows.sort_by_key(|r| r["id"].as_i64());
        rows
    };
    let before = rows(table_dir("v3_defaults")).await;
    let after = rows(tmp.path().to_path_buf()).await;
    assert_eq!(before.len(), after.len());
    let mut edited = 0;
    for (b, a) in before.iter().zip(&after) {
        if b["c_str"] == "hello" {
            edited += 1;
            assert_eq!(a["c_str"], "edited", "{a}");
            let (mut b, mut a) = (b.clone(), a.clone());
            b["c_str"] = Value::Null;
            a["c_str"] = Value::Null;
            assert_eq!(b, a);
        } else {
            assert_eq!(b, a);
        }
    }
    assert!(edited > 0, "no row read the initial-default");
}

// The refusal policy over what other writers write: each table below is a fixture table
// edited the way that writer writes it, without changing its rows. It reads Spark's rows with
// a warning, and a strict read refuses it.

/// Hive-style files (PyIceberg `add_files`, migrated tables): the identity partition column is
/// not in the data file, but the manifest records its metrics from the partition value.
#[tokio::test]
async fn identity_partition_column_absent_from_its_data_file() {
    let tmp = copy_table(&table_dir("partitioned"));
    let tasks = {
        let t = Table::open(tmp.path().to_str().unwrap()).await.unwrap();
        Scan::builder()
            .build(&t)
            .unwrap()
            .plan_files()
            .await
            .unwrap()
    };
    let mut dropped = Vec::new();
    for task in tasks.iter().filter(|t| t.deletion_vector.is_none()) {
        let rel = task
            .data_file
            .file_path
            .split("/partitioned/")
            .nth(1)
            .unwrap();
        // `cat` (field id 2) is an identity partition field of every spec of the table.
        rewrite_parquet_columns(tmp.path(), &tmp.path().join(rel), |f| {
            (f.metadata().get("PARQUET:field_id").map(String::as_str) != Some("2"))
                .then(|| f.clone())
        });
        dropped.push(rel.rsplit('/').next().unwrap().to_string());
    }
    assert!(!dropped.is_empty());
    // Valid (spec: "Column Projection"): Spark's rows, no warning, strict too.
    let id = current_id(tmp.path());
    let (rows, rules) = rows_of(tmp.path(), id, true).await.unwrap();
    assert!(rules.is_empty(), "{rules:?}");
    if let Some(d) = icefloe_testkit::diff_rows(&rows, &truth("partitioned", id)) {
        panic!("Hive-style files differ from Spark's rows: {d}");
    }
}

/// PyIceberg writes `initial-default` and `write-default` into format version 2 metadata.
#[tokio::test]
async fn default_values_in_a_format_version_2_table() {
    let tmp = copy_table(&table_dir("equality_deletes_v2"));
    edit_metadata(tmp.path(), |v| {
        for s in v["schemas"].as_array_mut().unwrap() {
            for f in s["fields"].as_array_mut().unwrap() {
                if f["type"] == "string" {
                    f["initial-default"] = "none".into();
                    f["write-default"] = "none".into();
                }
            }
        }
    });
    reads_as_java_and_strict_refuses(
        tmp.path(),
        "equality_deletes_v2",
        "newer-format-feature",
        &["has a default value", "format version 2 table"],
    )
    .await;
}

/// Counts in a manifest list that disagree with its manifests (optional in format version 1,
/// written loosely by some writers): the manifests' entries are read.
#[tokio::test]
async fn manifest_list_counts_unlike_the_manifest() {
    let tmp = copy_table(&table_dir("equality_deletes_v2"));
    let (_, list) = current_list(tmp.path());
    let n = edit_avro(&list, |mf| {
        if long(field(mf, "content")) != Some(0) {
            return false;
        }
        for name in [
            "added_rows_count",
            "existing_rows_count",
            "added_files_count",
        ] {
            match field(mf, name) {
                Avro::Long(v) => *v = 0,
                Avro::Int(v) => *v = 0,
                _ => {}
            }
        }
        true
    });
    assert!(n > 0);
    reads_as_java_and_strict_refuses(
        tmp.path(),
        "equality_deletes_v2",
        "manifest-counts",
        &[
            "-m",
            ".avro",
            "records added_files_count 0",
            "its entries count",
        ],
    )
    .await;
}

/// A deletion vector in a file without a Puffin footer (DuckDB 1.5.3): the blob at the
/// manifest's offsets carries its own length, magic and CRC.
#[tokio::test]
async fn deletion_vector_in_a_file_without_a_puffin_footer() {
    use icefloe_core::delete::puffin::footer_payload_size;
    let tmp = copy_table(&table_dir("v3_basic"));
    let mut bare = 0;
    for e in std::fs::read_dir(tmp.path().join("data")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("puffin") {
            continue;
        }
        let bytes = std::fs::read(&p).unwrap();
        let payload = footer_payload_size(&bytes, bytes.len() as u64, "seed").unwrap();
        let end = bytes.len() - payload as usize - 16;
        std::fs::write(&p, &bytes[..end]).unwrap();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        edit_data_files(tmp.path(), |df| {
            if !text(field(df, "file_path")).unwrap().ends_with(&name) {
                return false;
            }
            *field(df, "file_size_in_bytes") = Avro::Long(end as i64);
            true
        });
        bare += 1;
    }
    assert!(bare > 0);
    reads_as_java_and_strict_refuses(
        tmp.path(),
        "v3_basic",
        "puffin-footer",
        &[".puffin", "Puffin footer"],
    )
    .await;
}

/// DuckDB 1.5 sets a `first_row_id` on every delete manifest of a format version 3 table.
#[tokio::test]
async fn delete_manifest_with_a_first_row_id() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let mut n = 0;
    edit_manifest_lists(tmp.path(), |mf| {
        if long(field(mf, "content")) != Some(1) {
            return false;
        }
        *field(mf, "first_row_id") = Avro::Union(1, Box::new(Avro::Long(840)));
        n += 1;
        true
    });
    assert!(n > 0);
    reads_as_java_and_strict_refuses(
        tmp.path(),
        "v3_basic",
        "delete-manifest-first-row-id",
        &["delete manifest", "first_row_id 840", "always null"],
    )
    .await;
}

/// A MERGE written by DuckDB through a REST catalog: the table's `next-row-id` is below the
/// row ids the snapshot and its manifest list assign. Row ids come from the manifest list.
#[tokio::test]
async fn next_row_id_below_the_assigned_row_ids() {
    let tmp = copy_table(&table_dir("v3_lineage"));
    edit_metadata(tmp.path(), |v| v["next-row-id"] = 1.into());
    reads_as_java_and_strict_refuses(
        tmp.path(),
        "v3_lineage",
        "row-id-assignment",
        &["metadata.json", "beyond next-row-id"],
    )
    .await;
}

/// A snapshot id outside the range of a long is refused (Iceberg Java refuses it too), with
/// the value and the rule.
#[tokio::test]
async fn snapshot_id_outside_a_long_is_refused_naming_it() {
    let tmp = copy_table(&table_dir("v3_basic"));
    let p = current_metadata(tmp.path());
    let text = std::fs::read_to_string(&p).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let id = v["snapshots"][0]["snapshot-id"].as_i64().unwrap();
    let text = text.replace(
        &format!("\"snapshot-id\":{id},"),
        "\"snapshot-id\":18446744073709551615,",
    );
    let text = text.replace(
        &format!("\"snapshot-id\" : {id},"),
        "\"snapshot-id\" : 18446744073709551615,",
    );
    std::fs::write(&p, text).unwrap();
    for strict in [false, true] {
        let opts = icefloe_core::OpenOptions {
            strict,
            ..Default::default()
        };
        let err = Table::open_with_options(
            tmp.path().to_str().unwrap(),
            icefloe_core::cache::Caches::global(),
            &opts,
        )
        .await
        .unwrap_err()
        .to_string();
        assert_has(
            &err,
            &[
                "metadata.json",
                "snapshot-id 18446744073709551615",
                "not a long",
            ],
        );
    }
}
