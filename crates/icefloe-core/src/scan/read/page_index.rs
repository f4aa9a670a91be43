//! Page pruning inside Parquet row groups, from the page index (the column index's per-page
//! min/max and null counts, the offset index's first row of each page): a point lookup reads
//! the pages that may hold the value instead of the whole row group. Like row-group and file
//! pruning it only decides what is read, never which rows are returned.

use std::collections::HashMap;

use parquet::data_type::ByteArray;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::statistics::Statistics;
use parquet::schema::types::ColumnDescriptor;

use crate::scan::plan::prune::{PartStats, Pruner};
use crate::spec::PrimitiveType;

/// One column's pages in a row group: `(first row, rows, statistics)`, rows relative to the
/// row group.
type Pages = Vec<(u64, u64, PartStats)>;

/// A filter column: its field id, Parquet leaf index and Iceberg type.
pub type FilterLeaf = (i32, usize, PrimitiveType);

/// How a row group column's statistics become bounds of an Iceberg type (the row-group rule,
/// reused for pages).
pub type ToStats<'a> = &'a dyn Fn(&Statistics, &ColumnDescriptor, &PrimitiveType) -> PartStats;

/// One page's statistics in the form of a column chunk's, so that the same conversion to
/// Iceberg bounds applies; `None` for physical types the column index gives no usable bounds
/// for.
fn page_statistics(ci: &ColumnIndexMetaData, page: usize) -> Option<Statistics> {
    use ColumnIndexMetaData as C;
    let nulls = ci.null_count(page).and_then(|n| u64::try_from(n).ok());
    let bytes = |b: Option<&[u8]>| b.map(|b| ByteArray::from(b.to_vec()));
    Some(match ci {
        C::BOOLEAN(x) => Statistics::boolean(
            x.min_value(page).copied(),
            x.max_value(page).copied(),
            None,
            nulls,
            false,
        ),
        C::INT32(x) => Statistics::int32(
            x.min_value(page).copied(),
            x.max_value(page).copied(),
            None,
            nulls,
            false,
        ),
        C::INT64(x) => Statistics::int64(
            x.min_value(page).copied(),
            x.max_value(page).copied(),
            None,
            nulls,
            false,
        ),
        C::FLOAT(x) => Statistics::float(
            x.min_value(page).copied(),
            x.max_value(page).copied(),
            None,
            nulls,
            false,
        ),
        C::DOUBLE(x) => Statistics::double(
            x.min_value(page).copied(),
            x.max_value(page).copied(),
            None,
            nulls,
            false,
        ),
        C::BYTE_ARRAY(x) => Statistics::byte_array(
            bytes(x.min_value(page)),
            bytes(x.max_value(page)),
            None,
            nulls,
            false,
        ),
        _ => return None,
    })
}

/// The pages of one filter column in a row group: `(first row, rows, statistics)`, rows
/// relative to the row group; `None` without a usable page index for it.
fn column_pages(
    meta: &ParquetMetaData,
    rg: usize,
    leaf: usize,
    ty: &PrimitiveType,
    to_stats: ToStats,
) -> Option<Pages> {
    let ci = meta.column_index()?.get(rg)?.get(leaf)?;
    if matches!(ci, ColumnIndexMetaData::NONE) {
        return None; // page locations without statistics
    }
    let oi = meta.offset_index()?.get(rg)?.get(leaf)?;
    let locations = oi.page_locations();
    let rows = meta.row_group(rg).num_rows().max(0) as u64;
    let descr = meta.row_group(rg).column(leaf).column_descr();
    if ci.num_pages() as usize != locations.len() {
        return None;
    }
    let mut out = Vec::with_capacity(locations.len());
    for (i, loc) in locations.iter().enumerate() {
        let start = u64::try_from(loc.first_row_index).ok()?;
        let end = match locations.get(i + 1) {
            Some(next) => u64::try_from(next.first_row_index).ok()?,
            None => rows,
        };
        if end < start || end > rows {
            return None; // an offset index that does not describe the row group
        }
        let stats = if ci.is_null_page(i) {
            PartStats {
                lower: None,
                upper: None,
                null_count: Some(end - start),
            }
        } else {
            to_stats(&page_statistics(ci, i)?, descr, ty)
        };
        out.push((start, end - start, stats));
    }
    Some(out)
}

/// The row ranges `(start, len)` (file positions) of the pages, within the row groups not in
/// `skipped_groups` (sorted, as from the row-group pass), whose page statistics prove that no
/// row satisfies `filter`. Pages of different columns have different boundaries: each piece
/// between consecutive boundaries is judged by the pages of every filter column covering it.
pub fn skipped_pages(
    filter: &Pruner,
    meta: &ParquetMetaData,
    leaves: &[FilterLeaf],
    skipped_groups: &[(u64, u64)],
    to_stats: ToStats,
) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut rg_start = 0u64;
    for (rg, group) in meta.row_groups().iter().enumerate() {
        let rows = group.num_rows().max(0) as u64;
        let start = rg_start;
        rg_start += rows;
        if rows == 0 || skipped_groups.iter().any(|(s, _)| *s == start) {
            continue;
        }
        let columns: Vec<(i32, Pages)> = leaves
            .iter()
            .filter_map(|(id, leaf, ty)| Some((*id, column_pages(meta, rg, *leaf, ty, to_stats)?)))
            .collect();
        if columns.is_empty() {
            continue;
        }
        let mut bounds: Vec<u64> = columns
            .iter()
            .flat_map(|(_, pages)| pages.iter().map(|p| p.0))
            .chain([rows])
            .collect();
        bounds.sort_unstable();
        bounds.dedup();
        for w in bounds.windows(2) {
            let (lo, hi) = (w[0], w[1]);
            let piece = hi - lo;
            let stats: HashMap<i32, PartStats> = columns
                .iter()
                .filter_map(|(id, pages)| {
                    let p = pages.iter().find(|p| p.0 <= lo && lo < p.0 + p.1)?;
                    // A page's null count is the page's: for a piece of it, only "none" and
                    // "all" carry over.
                    let null_count = match p.2.null_count {
                        Some(0) => Some(0),
                        Some(n) if n == p.1 => Some(piece),
                        _ => None,
                    };
                    Some((
                        *id,
                        PartStats {
                            null_count,
                            ..p.2.clone()
                        },
                    ))
                })
                .collect();
            if !filter.may_match_stats(&stats, piece) {
                match out.last_mut() {
                    Some((s, l)) if *s + *l == start + lo => *l += piece,
                    _ => out.push((start + lo, piece)),
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field, Schema};
    use arrow::record_batch::RecordBatch;
    use bytes::Bytes;
    use parquet::arrow::ArrowWriter;
    use parquet::file::metadata::{PageIndexPolicy, ParquetMetaDataReader};
    use parquet::file::properties::{EnabledStatistics, WriterProperties};
    use parquet::schema::types::ColumnPath;

    use super::*;

    /// A column written with chunk statistics only has page locations but no column index
    /// (`ColumnIndexMetaData::NONE` when read): its pages are unknown, never a panic; a column
    /// with page statistics beside it still has its pages.
    #[test]
    fn a_column_without_a_column_index_has_no_pages() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, false),
            Field::new("b", DataType::Int64, false),
        ]));
        let values = Arc::new(Int64Array::from_iter_values(0..1000));
        let batch = RecordBatch::try_new(schema.clone(), vec![values.clone(), values]).unwrap();
        let props = WriterProperties::builder()
            .set_data_page_row_count_limit(100)
            .set_write_batch_size(100)
            .set_statistics_enabled(EnabledStatistics::Page)
            .set_column_statistics_enabled(ColumnPath::from("b"), EnabledStatistics::Chunk)
            .build();
        let mut w = ArrowWriter::try_new(Vec::new(), schema, Some(props)).unwrap();
        w.write(&batch).unwrap();
        let file = Bytes::from(w.into_inner().unwrap());
        let meta = ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Optional)
            .parse_and_finish(&file)
            .unwrap();
        let ci = meta.column_index().expect("a column index was read");
        assert!(matches!(ci[0][1], ColumnIndexMetaData::NONE));
        let to_stats: ToStats = &|_, _, _| PartStats {
            lower: None,
            upper: None,
            null_count: None,
        };
        let pages = column_pages(&meta, 0, 0, &PrimitiveType::Long, to_stats).expect("pages of a");
        assert_eq!(pages.len(), 10);
        assert_eq!((pages[3].0, pages[3].1), (300, 100));
        assert!(column_pages(&meta, 0, 1, &PrimitiveType::Long, to_stats).is_none());
    }
}
