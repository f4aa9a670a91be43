//! A full scan of the largest fixture (`v3_dv_large`: 70,000 rows, one DV of 15,673
//! positions) through the core, with and without lineage, and encoded as CSV. Caches are warm
//! after the first iteration, as they are for a mounted table or a long-lived backend.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use futures::TryStreamExt;
use icefloe_core::encode::csv::CsvWriter;
use icefloe_core::{Scan, Table};

fn table_dir() -> String {
    format!(
        "{}/../tests/fixtures/warehouse/db/v3_dv_large",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn full_scan(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let table = rt
        .block_on(Table::open(&table_dir()))
        .expect("fixture table");
    let rows: usize = rt.block_on(async {
        let scan = Scan::builder().build(&table).unwrap();
        let batches: Vec<_> = scan.stream().await.unwrap().try_collect().await.unwrap();
        batches.iter().map(|b| b.num_rows()).sum()
    });
    let mut g = c.benchmark_group("v3_dv_large");
    g.throughput(Throughput::Elements(rows as u64));
    for lineage in [false, true] {
        g.bench_function(if lineage { "scan_lineage" } else { "scan" }, |b| {
            b.to_async(&rt).iter(|| async {
                let scan = Scan::builder().lineage(lineage).build(&table).unwrap();
                let n: usize = scan
                    .stream()
                    .await
                    .unwrap()
                    .try_fold(0, |n, b| async move { Ok(n + b.num_rows()) })
                    .await
                    .unwrap();
                assert_eq!(n, rows);
            })
        });
    }
    g.bench_function("scan_to_csv", |b| {
        b.to_async(&rt).iter(|| async {
            let scan = Scan::builder().lineage(true).build(&table).unwrap();
            let mut w = CsvWriter::new(std::io::sink(), &scan.schema());
            let mut s = scan.stream().await.unwrap();
            while let Some(batch) = s.try_next().await.unwrap() {
                w.write_batch(&batch).unwrap();
            }
            w.finish().unwrap();
        })
    });
    g.finish();
}

criterion_group!(benches, full_scan);
criterion_main!(benches);
