//! A filter skips the data manifests whose partition summaries (in the manifest
//! list) rule it out, and never opens them. For every identity partition value of the
//! `partitioned` fixture at every snapshot, the test works out from the manifests' own entries
//! which data manifests cannot hold the value; the planner must skip exactly those (their
//! summaries are exact for identity values at the ends of their range, so the test counts only
//! manifests whose entries all lie on one side of the value, or are all null), and a copy of
//! the table with those manifests deleted must still plan and read the same rows.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use futures::TryStreamExt;
use icefloe_core::cache::Caches;
use icefloe_core::encode::jsonl::JsonLinesWriter;
use icefloe_core::expr::parse;
use icefloe_core::scan::plan::load_manifest;
use icefloe_core::spec::{Literal, ManifestContent, Transform};
use icefloe_core::{Scan, SnapshotSelector, Table};
use icefloe_testkit::rewrite::rewrite_avro_records;
use icefloe_testkit::{all_snapshots, copy_table};

async fn rows(scan: &Scan) -> icefloe_core::Result<Vec<String>> {
    let batches: Vec<_> = scan.stream().await?.try_collect().await?;
    let mut w = JsonLinesWriter::new(Vec::new());
    for b in &batches {
        w.write_batch(b)?;
    }
    let mut out: Vec<String> = String::from_utf8(w.finish()?)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    out.sort();
    Ok(out)
}

#[tokio::test]
async fn summaries_skip_the_manifests_that_cannot_match() {
    let (mut cases, mut skipping) = (0, 0);
    for s in all_snapshots()
        .into_iter()
        .filter(|s| s.table == "partitioned")
    {
        let table = Table::open(s.table_dir.to_str().unwrap()).await.unwrap();
        let snapshot = table.metadata().snapshot(s.snapshot_id).unwrap().clone();
        let list = table.manifest_list(&snapshot).await.unwrap();
        // The `cat` values (identity field 1000 on column `cat`) of every entry, per data
        // manifest, and the manifests' file names.
        let mut per_manifest = Vec::new();
        let mut values = BTreeSet::new();
        for mf in list.iter().filter(|m| m.content == ManifestContent::Data) {
            let spec = table
                .metadata()
                .partition_spec(mf.partition_spec_id)
                .unwrap();
            let k = spec
                .fields
                .iter()
                .position(|f| f.name == "cat" && f.transform == Transform::Identity)
                .expect("every spec has cat");
            let entries = load_manifest(&table, mf).await.unwrap();
            let cats: Vec<Option<String>> = entries
                .iter()
                .map(|e| match &e.data_file.partition[k] {
                    Some(Literal::String(c)) => Some(c.clone()),
                    None => None,
                    other => panic!("cat is {other:?}"),
                })
                .collect();
            values.extend(cats.iter().flatten().cloned());
            per_manifest.push((mf.manifest_path.clone(), cats));
        }
        for v in &values {
            // Cannot match: every entry's value is null or on the same side of v.
            let side = |c: &Option<String>| c.as_ref().map(|c| c.as_bytes().cmp(v.as_bytes()));
            let excluded: Vec<&String> = per_manifest
                .iter()
                .filter(|(_, cats)| {
                    let sides: BTreeSet<Option<Ordering>> = cats.iter().map(side).collect();
                    let has = |o| sides.contains(&Some(o));
                    let spans = has(Ordering::Less) && has(Ordering::Greater);
                    !(has(Ordering::Equal) || spans)
                })
                .map(|(p, _)| p)
                .collect();
            let filter = parse(&format!("cat = '{v}'")).unwrap();
            let at = SnapshotSelector::Id(s.snapshot_id);
            let scan = Scan::builder()
                .snapshot(at.clone())
                .lineage(true)
                .filter(filter.clone())
                .build(&table)
                .unwrap();
            let (_, stats) = scan.plan_with_stats().await.unwrap();
            assert_eq!(
                stats.manifests_skipped,
                excluded.len(),
                "{} cat = {v}: {stats:?}",
                s.snapshot_id
            );
            // (A value may be only in deleted entries: then no row has it.)
            let want = rows(&scan).await.unwrap();
            cases += 1;
            if excluded.is_empty() {
                continue;
            }
            skipping += 1;
            // The skipped manifests are never opened: delete them from a copy.
            let copy = copy_table(&s.table_dir);
            for p in &excluded {
                let name = p.rsplit('/').next().unwrap();
                std::fs::remove_file(copy.path().join("metadata").join(name)).unwrap();
            }
            let t2 = Table::open(copy.path().to_str().unwrap()).await.unwrap();
            let scan2 = Scan::builder()
                .snapshot(at.clone())
                .lineage(true)
                .filter(filter)
                .build(&t2)
                .unwrap();
            assert_eq!(rows(&scan2).await.unwrap(), want, "copy, cat = {v}");
            let unfiltered = Scan::builder().snapshot(at).build(&t2).unwrap();
            assert!(
                unfiltered.plan_files().await.is_err(),
                "an unfiltered plan needs the deleted manifests"
            );
        }
    }
    assert!(cases >= 10, "{cases} cases");
    assert!(
        skipping >= 3,
        "only {skipping} of {cases} cases skip a manifest"
    );
}

/// Rewrites Avro file `p` keeping only the records `keep` accepts; returns how many it dropped.
fn drop_records(p: &std::path::Path, keep: impl Fn(&apache_avro::types::Value) -> bool) -> usize {
    let mut dropped = 0;
    rewrite_avro_records(p, |v| {
        let kept = keep(&v);
        dropped += usize::from(!kept);
        kept.then_some(v)
    });
    dropped
}

fn text_field<'a>(v: &'a apache_avro::types::Value, name: &str) -> Option<&'a str> {
    use apache_avro::types::Value;
    let Value::Record(fields) = v else {
        return None;
    };
    match &fields.iter().find(|(n, _)| n == name)?.1 {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// Plans `dir` with `pruned` leniently (which must warn of `rule`: Iceberg Java reads such a
/// table from its manifests, whatever the counts say), then strict; the strict error.
async fn lenient_then_strict(
    dir: &std::path::Path,
    pruned: &dyn Fn(&Table) -> Scan,
    rule: &str,
) -> String {
    let t = Table::open(dir.to_str().unwrap()).await.unwrap();
    pruned(&t).plan_files().await.unwrap();
    let found = t.warnings().all();
    assert!(
        found.iter().any(|f| f.warning.rule.name() == rule),
        "no {rule} warning: {found:?}"
    );
    let strict = icefloe_core::OpenOptions {
        strict: true,
        ..Default::default()
    };
    let t = Table::open_with_options(dir.to_str().unwrap(), Caches::global(), &strict)
        .await
        .unwrap();
    pruned(&t).plan_files().await.unwrap_err().to_string()
}

/// A read that skips manifests cannot count every entry against the snapshot summary; it checks
/// the summary against the manifest list's counts (a manifest lost from the list) and each
/// manifest it reads against its own counts (an entry lost from it). Without those, both
/// edits below give fewer rows and no word of it: a warning, an error when strict.
#[tokio::test]
async fn a_pruned_read_warns_of_a_lost_manifest_or_entry() {
    let (mut lost_manifests, mut lost_entries) = (0, 0);
    for s in all_snapshots()
        .into_iter()
        .filter(|s| s.table == "partitioned")
    {
        let table = Table::open(s.table_dir.to_str().unwrap()).await.unwrap();
        let snapshot = table.metadata().snapshot(s.snapshot_id).unwrap().clone();
        let list = table.manifest_list(&snapshot).await.unwrap();
        let list_name = snapshot.manifest_list.clone().unwrap();
        let list_name = list_name.rsplit('/').next().unwrap().to_string();
        for mf in list.iter().filter(|m| m.content == ManifestContent::Data) {
            let spec = table
                .metadata()
                .partition_spec(mf.partition_spec_id)
                .unwrap();
            let k = spec.fields.iter().position(|f| f.name == "cat").unwrap();
            let entries = load_manifest(&table, mf).await.unwrap();
            let Some(target) = entries.iter().find(|e| {
                e.status != icefloe_core::spec::EntryStatus::Deleted
                    && matches!(e.data_file.partition[k], Some(Literal::String(_)))
            }) else {
                continue;
            };
            let Some(Literal::String(v)) = &target.data_file.partition[k] else {
                unreachable!()
            };
            let filter = parse(&format!("cat = '{v}'")).unwrap();
            let at = SnapshotSelector::Id(s.snapshot_id);
            let pruned = |t: &Table| {
                Scan::builder()
                    .snapshot(at.clone())
                    .filter(filter.clone())
                    .build(t)
                    .unwrap()
            };
            let (_, stats) = pruned(&table).plan_with_stats().await.unwrap();
            if stats.manifests_skipped == 0 {
                continue;
            }
            let manifest_name = mf.manifest_path.rsplit('/').next().unwrap().to_string();

            // The manifest goes missing from the manifest list.
            let copy = copy_table(&s.table_dir);
            let n = drop_records(&copy.path().join("metadata").join(&list_name), |r| {
                text_field(r, "manifest_path").is_none_or(|p| !p.ends_with(&manifest_name))
            });
            assert_eq!(n, 1);
            let err = lenient_then_strict(copy.path(), &pruned, "summary-totals").await;
            assert!(err.contains("its manifest list counts"), "{err}");
            lost_manifests += 1;

            // One entry goes missing from the manifest.
            let copy = copy_table(&s.table_dir);
            let path = target.data_file.file_path.clone();
            let n = drop_records(&copy.path().join("metadata").join(&manifest_name), |r| {
                let apache_avro::types::Value::Record(f) = r else {
                    return true;
                };
                let df = &f.iter().find(|(n, _)| n == "data_file").unwrap().1;
                text_field(df, "file_path") != Some(path.as_str())
            });
            assert_eq!(n, 1);
            let err = lenient_then_strict(copy.path(), &pruned, "manifest-counts").await;
            assert!(err.contains("its entries count"), "{err}");
            lost_entries += 1;
        }
    }
    assert!(
        lost_manifests >= 2 && lost_entries >= 2,
        "{lost_manifests} {lost_entries}"
    );
}
