//! Every snapshot of every fixture table, read back from its Parquet view, equals the scan
//! written by the core's Parquet writer (what `icefloe cat --format parquet --lineage`
//! writes): the same Arrow schema (types, field ids) and the same rows in the same order.

use std::path::{Path, PathBuf};

use arrow::compute::concat_batches;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::*;
use crate::encode::ParquetWriter;
use crate::Table;

fn fixtures() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures"))
}

/// Every table directory below `dir` (a directory with `metadata/`).
fn tables(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if !p.is_dir() {
            continue;
        }
        if p.join("metadata").is_dir() {
            out.push(p);
        } else {
            tables(&p, out);
        }
    }
}

/// What the CLI writes: every batch of the scan through the core's Parquet writer.
async fn exported(scan: &Scan) -> crate::Result<Bytes> {
    let mut w = ParquetWriter::new(Vec::new(), &scan.schema())?;
    let mut s = scan.stream().await?;
    while let Some(b) = s.next().await {
        w.write_batch(&b?)?;
    }
    Ok(Bytes::from(w.finish()?))
}

/// The view's bytes, assembled and read back whole; and how many groups were copied.
async fn view_bytes(scan: &Scan) -> crate::Result<(Bytes, usize, usize, SchemaRef)> {
    let tasks = scan.plan_files().await?;
    let view = ParquetView::open(scan, &tasks).await?;
    let mut parts = Vec::new();
    let mut fresh_bytes = Vec::new();
    for (t, task) in tasks.iter().enumerate() {
        for g in view.groups(t, task).await? {
            let (buf, fresh) = view.encode(task, &g, Vec::new(), 2).await?;
            assert_eq!(fresh.len, buf.len() as u64);
            // Encoding again gives the same bytes, whatever the lanes.
            let (again, f2) = view.encode(task, &g, Vec::new(), 1).await?;
            assert!(
                again == buf && f2.crc == fresh.crc,
                "fresh part not reproducible"
            );
            fresh_bytes.push(Bytes::from(buf));
            parts.push((g, fresh));
        }
    }
    let copied = parts.iter().filter(|(g, _)| g.copied).count();
    let layout = view.assemble(&parts)?;
    let fresh = &fresh_bytes;
    let read = |g: usize, off: u64, n: u64| {
        let b = fresh[g].slice(off as usize..(off + n) as usize);
        async move { Ok(b) }
    };
    let all = layout.read(scan, &tasks, 0..layout.len, read).await?;
    assert_eq!(all.len() as u64, layout.len);
    // Reads of odd ranges agree with the whole.
    let mut at = 0u64;
    let mut step = 7u64;
    while at < layout.len {
        let end = (at + step).min(layout.len);
        let part = layout.read(scan, &tasks, at..end, read).await?;
        assert_eq!(part[..], all[at as usize..end as usize]);
        at = end;
        step = step * 3 % 100_003 + 1;
    }
    Ok((Bytes::from(all), copied, parts.len(), view.schema().clone()))
}

fn read_back(b: Bytes) -> (SchemaRef, Option<RecordBatch>) {
    let builder = ParquetRecordBatchReaderBuilder::try_new(b).expect("a Parquet file");
    let schema = builder.schema().clone();
    let r = builder.build().expect("reader");
    let batches: Vec<_> = r.map(|b| b.expect("batch")).collect();
    let all = (!batches.is_empty()).then(|| concat_batches(&schema, &batches).expect("concat"));
    (schema, all)
}

/// The export's schema with the view's nullability: required top-level columns are not
/// nullable in the view (and every other column is).
fn with_required(view: &SchemaRef, ws: &SchemaRef) -> SchemaRef {
    let fields: Vec<_> = ws
        .fields()
        .iter()
        .zip(view.fields())
        .map(|(w, v)| w.as_ref().clone().with_nullable(v.is_nullable()))
        .collect();
    Arc::new(ArrowSchema::new_with_metadata(
        fields,
        ws.metadata().clone(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_of_every_fixture_snapshot_equal_the_export() {
    let mut dirs = Vec::new();
    tables(&fixtures(), &mut dirs);
    assert!(dirs.len() > 10, "fixture tables: {dirs:?}");
    let (mut snapshots, mut copied, mut groups) = (0, 0, 0);
    for dir in dirs {
        let Ok(table) = Table::open(dir.to_str().unwrap()).await else {
            continue;
        };
        let m = table.metadata().clone();
        let current = m.current_schema().schema_id;
        for s in &m.snapshots {
            for schema in [None, Some(current)] {
                let mut b = Scan::builder()
                    .snapshot(SnapshotSelector::Id(s.snapshot_id))
                    .lineage(true);
                if let Some(id) = schema {
                    b = b.schema_id(id);
                }
                let scan = b.build(&table).expect("scan");
                let want = match exported(&scan).await {
                    Ok(w) => w,
                    // A fixture the reader refuses (corrupt on purpose): the view must too.
                    Err(_) => {
                        assert!(
                            view_bytes(&scan).await.is_err(),
                            "{dir:?}@{}",
                            s.snapshot_id
                        );
                        continue;
                    }
                };
                let (got, c, g, vs) = view_bytes(&scan)
                    .await
                    .unwrap_or_else(|e| panic!("{dir:?}@{}: {e}", s.snapshot_id));
                let (ws, wb) = read_back(want);
                let (gs, gb) = read_back(got);
                let at = format!("{}@{} schema {schema:?}", dir.display(), s.snapshot_id);
                assert_eq!(gs, with_required(&vs, &ws), "{at}: schemas differ");
                assert_eq!(
                    gb.as_ref().map(|b| b.columns().to_vec()),
                    wb.as_ref().map(|b| b.columns().to_vec()),
                    "{at}: rows differ"
                );
                snapshots += 1;
                copied += c;
                groups += g;
            }
        }
    }
    assert!(snapshots > 50, "{snapshots} snapshots read");
    assert!(
        copied > 0 && copied < groups,
        "{copied} of {groups} row groups copied"
    );
    eprintln!("{snapshots} snapshot reads, {copied} of {groups} row groups copied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_without_deletes_is_copied_whole() {
    let table = Table::open(fixtures().join("warehouse/db/v3_basic").to_str().unwrap())
        .await
        .expect("open");
    let first = table.metadata().snapshots[0].snapshot_id;
    let scan = Scan::builder()
        .snapshot(SnapshotSelector::Id(first))
        .lineage(true)
        .build(&table)
        .expect("scan");
    let (got, copied, groups, vs) = view_bytes(&scan).await.expect("view");
    assert!(
        groups > 0 && copied == groups,
        "{copied} of {groups} copied"
    );
    let (gs, gb) = read_back(got);
    let (ws, wb) = read_back(exported(&scan).await.expect("export"));
    assert_eq!(gs, with_required(&vs, &ws));
    assert_eq!(
        gb.map(|b| b.columns().to_vec()),
        wb.map(|b| b.columns().to_vec())
    );
}
