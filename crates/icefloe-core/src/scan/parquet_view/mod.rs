//! A scan's rows as one Parquet file, made mostly of the data files' own column chunks.
//!
//! `icefloe cat --format parquet` decodes every row and encodes it again. Most row groups of
//! most data files need neither: a row group without deleted rows, whose columns already have
//! the Parquet shape of the reading schema ([`fit`]), holds exactly the bytes the view needs.
//! Such a group is *copied*: its column chunks are served byte for byte from the data file,
//! beside freshly encoded lineage chunks (`_row_id` = first row id + position and
//! `_last_updated_sequence_number` = the data sequence number, or the file's own values where
//! it stores them, with nulls inherited as the spec says). Every other group is *encoded*: its
//! live rows are read through the scan and written as new row groups. A new footer points at
//! all of it.
//!
//! The view is then a list of [`Piece`]s: bytes of a data file, bytes of a fresh part (one
//! per row group, [`Fresh`], written wherever the caller keeps them and reproducible by
//! encoding the group again), and the footer. Its size is known from the data files' footers
//! and the fresh parts alone.

mod columns;
mod error;
pub mod fit;

use std::io::Write;
use std::ops::Range;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::{Schema as ArrowSchema, SchemaRef};
use bytes::Bytes;
use futures::StreamExt;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::{
    ColumnChunkMetaData, FileMetaData, KeyValue, ParquetMetaData, ParquetMetaDataWriter,
    RowGroupMetaData,
};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::{ColumnPath, SchemaDescPtr};

use super::plan::split::TaskSplit;
use super::read::lineage::{last_updated, row_ids};
use super::{FileScanTask, Scan, SnapshotSelector};
use crate::scan::deletes::deleted_positions;
use crate::spec::arrow_schema::{lineage_fields, LAST_UPDATED_SEQ_FIELD_ID, ROW_ID_FIELD_ID};
use crate::spec::FileFormat;
use error::err;

const MAGIC: &[u8; 4] = b"PAR1";
/// An encoded part is flushed as a row group once its pages hold this many bytes, so encoding
/// a large row group never holds all of it in memory.
const ENCODED_GROUP_BYTES: usize = 64 << 20;

/// How one row group of a data file enters the view.
#[derive(Debug, Clone)]
pub struct Group {
    /// Index of the task in the view's tasks.
    pub task: usize,
    /// The row group of the data file (0 for a file that is not Parquet).
    pub row_group: usize,
    /// Its positions in the data file.
    pub positions: Range<u64>,
    /// Whether its column chunks are copied from the data file (else it is encoded).
    pub copied: bool,
}

/// The fresh part of a group as first encoded: its length, checksum and row groups (offsets
/// within the part, which is a Parquet file of its own). Encoding the same group again must
/// give the same bytes; a caller that drops a part and makes it again checks that it did.
#[derive(Debug, Clone)]
pub struct Fresh {
    pub len: u64,
    pub crc: u32,
    pub row_groups: Vec<RowGroupMetaData>,
}

/// Where a piece of the view's bytes comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The leading magic `PAR1`.
    Magic,
    /// The data file of task `task`, from `offset`.
    Data { task: usize, offset: u64 },
    /// The fresh part of group `group` (index in the view's groups), from `offset`.
    Fresh { group: usize, offset: u64 },
    /// The footer, from `offset`.
    Footer { offset: u64 },
}

/// A run of the view's bytes: `len` bytes at view offset `at`, from `source`.
#[derive(Debug, Clone, Copy)]
pub struct Piece {
    pub at: u64,
    pub len: u64,
    pub source: Source,
}

/// The bytes of a view: its pieces in order and its footer.
#[derive(Debug)]
pub struct Layout {
    pub pieces: Vec<Piece>,
    pub footer: Bytes,
    pub len: u64,
}

impl Layout {
    /// The pieces covering `range` of the view, each cut to it: (source, offset in the source,
    /// length).
    pub fn cover(&self, range: Range<u64>) -> Vec<(Source, u64)> {
        let end = range.end.min(self.len);
        let mut out = Vec::new();
        let mut pos = range.start;
        let mut i = self.pieces.partition_point(|p| p.at + p.len <= pos);
        while pos < end && i < self.pieces.len() {
            let p = self.pieces[i];
            let skip = pos - p.at;
            let n = (p.at + p.len).min(end) - pos;
            let source = match p.source {
                Source::Magic => Source::Magic,
                Source::Data { task, offset } => Source::Data {
                    task,
                    offset: offset + skip,
                },
                Source::Fresh { group, offset } => Source::Fresh {
                    group,
                    offset: offset + skip,
                },
                Source::Footer { offset } => Source::Footer {
                    offset: offset + skip,
                },
            };
            out.push((source, n));
            pos += n;
            i += 1;
        }
        out
    }

    /// The view's bytes of `range`, reading data files through `scan` and fresh parts
    /// through `fresh(group, offset, len)`.
    pub async fn read<F, Fut>(
        &self,
        scan: &Scan,
        tasks: &[FileScanTask],
        range: Range<u64>,
        fresh: F,
    ) -> crate::Result<Vec<u8>>
    where
        F: Fn(usize, u64, u64) -> Fut,
        Fut: std::future::Future<Output = crate::Result<Bytes>>,
    {
        let mut out =
            Vec::with_capacity((range.end.min(self.len).saturating_sub(range.start)) as usize);
        for (source, n) in self.cover(range) {
            match source {
                Source::Magic => out.extend_from_slice(&MAGIC[..n as usize]),
                Source::Footer { offset } => {
                    out.extend_from_slice(&self.footer[offset as usize..(offset + n) as usize])
                }
                Source::Data { task, offset } => {
                    let b = scan
                        .table()
                        .io()
                        .read_range(&tasks[task].data_file.file_path, offset, n)
                        .await?;
                    out.extend_from_slice(&b);
                }
                Source::Fresh { group, offset } => {
                    let b = fresh(group, offset, n).await?;
                    if b.len() as u64 != n {
                        return Err(err(format!(
                            "fresh part {group} gave {} bytes at {offset}, wanted {n}",
                            b.len()
                        )));
                    }
                    out.extend_from_slice(&b);
                }
            }
        }
        Ok(out)
    }
}

/// A Parquet view of a scan: its schema as Parquet, and how to make each part.
pub struct ParquetView {
    scan: Scan,
    arrow: SchemaRef,
    descr: SchemaDescPtr,
    file: FileMetaData,
    /// View leaves before the table columns (the lineage columns, when the scan has them).
    lineage_leaves: usize,
    /// Each task's footer (Parquet data files).
    footers: Vec<Option<Arc<ParquetMetaData>>>,
    /// For each task whose columns can be copied: the file's leaf column of each view leaf
    /// after the lineage columns.
    maps: Vec<Option<Arc<Vec<usize>>>>,
}

impl ParquetView {
    /// The view of `tasks` (planned by `scan`), with the schema `icefloe cat --format parquet`
    /// writes except for nullability ([`view_schema`]). Reads every Parquet data file's footer.
    pub async fn open(scan: &Scan, tasks: &[FileScanTask]) -> crate::Result<ParquetView> {
        let table = scan.table();
        let opens: Vec<_> = tasks
            .iter()
            .map(|task| {
                let io = table.io().clone();
                let file = task.data_file.clone();
                async move {
                    if file.file_format != FileFormat::Parquet {
                        return Ok(None);
                    }
                    let opened = crate::io::parquet::open_parquet_with(
                        &io,
                        &file.file_path,
                        file.file_size_in_bytes,
                        false,
                    )
                    .await?;
                    Ok::<_, crate::Error>(Some(opened.metadata.metadata().clone()))
                }
            })
            .collect();
        let footers: Vec<Option<Arc<ParquetMetaData>>> = futures::stream::iter(opens)
            .buffered(16)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect::<crate::Result<_>>()?;
        let arrow = view_schema(scan, &footers);
        let mut w =
            ArrowWriter::try_new(Vec::new(), arrow.clone(), Some(encoded_props())).map_err(err)?;
        let meta = w.finish().map_err(err)?;
        let file = meta.file_metadata().clone();
        let lineage_leaves = if scan.ctx.lineage { 2 } else { 0 };
        let descr = file.schema_descr_ptr();
        // Only plain reads are copied: a row filter needs every row looked at.
        let maps = footers
            .iter()
            .map(|f| {
                f.as_ref()
                    .filter(|_| scan.row_filter.is_none())
                    .and_then(|m| {
                        fit::leaf_map(&descr, lineage_leaves, m.file_metadata().schema_descr())
                    })
                    .map(Arc::new)
            })
            .collect();
        Ok(ParquetView {
            scan: scan.clone(),
            descr,
            arrow,
            file,
            lineage_leaves,
            footers,
            maps,
        })
    }

    /// The view's Arrow schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.arrow
    }

    /// The row groups of task `t` and whether each is copied. Reads the task's deletes.
    pub async fn groups(&self, t: usize, task: &FileScanTask) -> crate::Result<Vec<Group>> {
        let rows = task.data_file.record_count.max(0) as u64;
        let Some(meta) = &self.footers[t] else {
            return Ok(vec![Group {
                task: t,
                row_group: 0,
                positions: 0..rows,
                copied: false,
            }]);
        };
        let table = self.scan.table();
        // Equality deletes need every row looked at.
        let copyable = self.maps[t].is_some() && task.equality_deletes.is_empty();
        let deleted = match copyable {
            true => deleted_positions(table, task).await?,
            false => None,
        };
        let mut out = Vec::with_capacity(meta.num_row_groups());
        let mut start = 0u64;
        for (i, rg) in meta.row_groups().iter().enumerate() {
            let n = rg.num_rows().max(0) as u64;
            let touched = deleted
                .as_ref()
                .is_some_and(|d| d.range_cardinality(start..start + n) > 0);
            out.push(Group {
                task: t,
                row_group: i,
                positions: start..start + n,
                copied: copyable && !touched,
            });
            start += n;
        }
        if start != rows {
            return Err(crate::Error::data_file(
                table.io().shown(&task.data_file.file_path),
                format!("has {start} rows but its manifest entry records {rows}"),
            ));
        }
        Ok(out)
    }

    /// Encodes the fresh part of `group` of `task` into `w`: the lineage chunks of a copied
    /// group, every row of an encoded one, its columns spread over `lanes` tasks of the
    /// current runtime (the bytes are the same for any number). Returns `w` and what was
    /// written.
    pub async fn encode<W: Write + Send>(
        &self,
        task: &FileScanTask,
        group: &Group,
        w: W,
        lanes: usize,
    ) -> crate::Result<(W, Fresh)> {
        let sink = Counting::new(w);
        let (sink, meta) = if group.copied {
            self.encode_lineage(task, group, sink).await?
        } else {
            self.encode_rows(task, group, sink, lanes).await?
        };
        let (w, len, crc) = sink.finish();
        Ok((
            w,
            Fresh {
                len,
                crc,
                row_groups: meta.row_groups().to_vec(),
            },
        ))
    }

    async fn encode_rows<W: Write + Send>(
        &self,
        task: &FileScanTask,
        group: &Group,
        mut sink: W,
        lanes: usize,
    ) -> crate::Result<(W, ParquetMetaData)> {
        let rows =
            (task.data_file.file_format == FileFormat::Parquet).then(|| group.positions.clone());
        // Decoded on a task of its own while this one hands the batches to the lanes: a
        // row group is often a data file's whole read, and decoding it is a large share of
        // the work.
        let mut stream = crate::spawned::spawn_batches(
            self.scan.read_split(TaskSplit {
                task: task.clone(),
                rows,
            }),
            2,
            task.data_file.file_path.clone(),
        );
        let mut w = columns::LaneWriter::try_new(
            &mut sink,
            self.arrow.clone(),
            encoded_props(),
            ENCODED_GROUP_BYTES,
            lanes,
        )?;
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            let batch = RecordBatch::try_new(self.arrow.clone(), batch.columns().to_vec())
                .map_err(|e| {
                    crate::Error::data_file(
                        self.scan.table().io().shown(&task.data_file.file_path),
                        format!("a required column holds nulls: {e}"),
                    )
                })?;
            w.write(&batch).await?;
        }
        let meta = w.finish().await?;
        Ok((sink, meta))
    }

    async fn encode_lineage<W: Write + Send>(
        &self,
        task: &FileScanTask,
        group: &Group,
        mut sink: W,
    ) -> crate::Result<(W, ParquetMetaData)> {
        let schema = Arc::new(ArrowSchema::new(lineage_fields().to_vec()));
        let mut w =
            ArrowWriter::try_new(&mut sink, schema.clone(), Some(lineage_props())).map_err(err)?;
        let stored = self.footers[group.task].as_ref().is_some_and(|meta| {
            meta.file_metadata()
                .schema_descr()
                .root_schema()
                .get_fields()
                .iter()
                .any(|f| {
                    let i = f.get_basic_info();
                    i.has_id() && matches!(i.id(), ROW_ID_FIELD_ID | LAST_UPDATED_SEQ_FIELD_ID)
                })
        });
        if stored {
            // The file's own values, nulls inherited: read by the core's lineage rules.
            let scan = Scan::builder()
                .snapshot(SnapshotSelector::Id(
                    self.scan.snapshot().map_or(0, |s| s.snapshot_id),
                ))
                .schema_id(self.scan.table_schema().schema_id)
                .columns(Vec::new())
                .lineage(true)
                .build(self.scan.table())?;
            let mut stream = scan.read_split(TaskSplit {
                task: task.clone(),
                rows: Some(group.positions.clone()),
            });
            while let Some(batch) = stream.next().await {
                let batch = batch?;
                let batch =
                    RecordBatch::try_new(schema.clone(), batch.columns().to_vec()).map_err(err)?;
                w.write(&batch).map_err(err)?;
            }
        } else {
            // Not in the file: first row id + position, and the data sequence number.
            const STEP: u64 = 1 << 20;
            let mut p = group.positions.start;
            while p < group.positions.end {
                let end = (p + STEP).min(group.positions.end);
                let positions: Vec<u64> = (p..end).collect();
                let cols: Vec<ArrayRef> = vec![
                    row_ids(None, task.first_row_id, &positions),
                    last_updated(
                        None,
                        task.first_row_id,
                        task.sequence_number,
                        positions.len(),
                    ),
                ];
                w.write(&RecordBatch::try_new(schema.clone(), cols).map_err(err)?)
                    .map_err(err)?;
                p = end;
            }
        }
        let meta = w.finish().map_err(err)?;
        if meta.num_row_groups() != 1
            || meta.row_group(0).num_rows() as u64 != group.positions.end - group.positions.start
        {
            return Err(err(format!(
                "the lineage of row group {} of {} made {} row groups",
                group.row_group,
                task.data_file.file_path,
                meta.num_row_groups()
            )));
        }
        drop(w);
        Ok((sink, meta))
    }

    /// The layout of the view of `groups` (in view order) with their fresh parts.
    pub fn assemble(&self, groups: &[(Group, Fresh)]) -> crate::Result<Layout> {
        let mut pieces: Vec<Piece> = vec![Piece {
            at: 0,
            len: 4,
            source: Source::Magic,
        }];
        let push = |pieces: &mut Vec<Piece>, at: u64, len: u64, source: Source| {
            if let Some(last) = pieces.last_mut() {
                let merged = match (last.source, source) {
                    (Source::Data { task: a, offset: x }, Source::Data { task: b, offset: y }) => {
                        a == b && x + last.len == y
                    }
                    (
                        Source::Fresh {
                            group: a,
                            offset: x,
                        },
                        Source::Fresh {
                            group: b,
                            offset: y,
                        },
                    ) => a == b && x + last.len == y,
                    _ => false,
                };
                if merged && last.at + last.len == at {
                    last.len += len;
                    return;
                }
            }
            pieces.push(Piece { at, len, source });
        };
        let mut pos = 4u64;
        let mut row_groups = Vec::new();
        for (gi, (g, fresh)) in groups.iter().enumerate() {
            match (g.copied, &self.footers[g.task], &self.maps[g.task]) {
                (true, Some(meta), Some(map)) => {
                    let lineage = fresh.row_groups.first();
                    let src = meta.row_group(g.row_group);
                    let mut cols = Vec::with_capacity(self.descr.num_columns());
                    let mut total = 0i64;
                    let start = pos;
                    if let Some(l) = lineage.filter(|_| self.lineage_leaves > 0) {
                        for (i, c) in l.columns().iter().enumerate() {
                            let (s, n) = c.byte_range();
                            push(
                                &mut pieces,
                                pos,
                                n,
                                Source::Fresh {
                                    group: gi,
                                    offset: s,
                                },
                            );
                            cols.push(rebase(c, &self.descr, i, pos as i64 - s as i64)?);
                            total += c.uncompressed_size();
                            pos += n;
                        }
                    }
                    for (j, &k) in map.iter().enumerate() {
                        let c = src.column(k);
                        let (s, n) = c.byte_range();
                        push(
                            &mut pieces,
                            pos,
                            n,
                            Source::Data {
                                task: g.task,
                                offset: s,
                            },
                        );
                        cols.push(rebase(
                            c,
                            &self.descr,
                            self.lineage_leaves + j,
                            pos as i64 - s as i64,
                        )?);
                        total += c.uncompressed_size();
                        pos += n;
                    }
                    row_groups.push(
                        RowGroupMetaData::builder(self.descr.clone())
                            .set_num_rows(src.num_rows())
                            .set_total_byte_size(total)
                            .set_column_metadata(cols)
                            .set_file_offset(start as i64)
                            .set_ordinal(ordinal(row_groups.len())?)
                            .build()
                            .map_err(err)?,
                    );
                }
                _ => {
                    for rg in &fresh.row_groups {
                        let s = rg
                            .columns()
                            .iter()
                            .map(|c| c.byte_range().0)
                            .min()
                            .unwrap_or(4);
                        let e = rg
                            .columns()
                            .iter()
                            .map(|c| c.byte_range().0 + c.byte_range().1)
                            .max()
                            .unwrap_or(s);
                        let shift = pos as i64 - s as i64;
                        let cols = rg
                            .columns()
                            .iter()
                            .enumerate()
                            .map(|(i, c)| rebase(c, &self.descr, i, shift))
                            .collect::<crate::Result<Vec<_>>>()?;
                        push(
                            &mut pieces,
                            pos,
                            e - s,
                            Source::Fresh {
                                group: gi,
                                offset: s,
                            },
                        );
                        row_groups.push(
                            RowGroupMetaData::builder(self.descr.clone())
                                .set_num_rows(rg.num_rows())
                                .set_total_byte_size(rg.total_byte_size())
                                .set_column_metadata(cols)
                                .set_file_offset(pos as i64)
                                .set_ordinal(ordinal(row_groups.len())?)
                                .build()
                                .map_err(err)?,
                        );
                        pos += e - s;
                    }
                }
            }
        }
        let num_rows = row_groups.iter().map(|r| r.num_rows()).sum();
        let file = FileMetaData::new(
            self.file.version(),
            num_rows,
            self.file.created_by().map(str::to_string),
            self.file.key_value_metadata().cloned(),
            self.descr.clone(),
            self.file.column_orders().cloned(),
        );
        let meta = ParquetMetaData::new(file, row_groups);
        let mut footer = Vec::new();
        ParquetMetaDataWriter::new(&mut footer, &meta)
            .finish()
            .map_err(err)?;
        let len = footer.len() as u64;
        pieces.push(Piece {
            at: pos,
            len,
            source: Source::Footer { offset: 0 },
        });
        Ok(Layout {
            pieces,
            footer: Bytes::from(footer),
            len: pos + len,
        })
    }

    /// The footer's key-value metadata (the Arrow schema), as `icefloe cat` writes it.
    pub fn key_value_metadata(&self) -> Option<&Vec<KeyValue>> {
        self.file.key_value_metadata()
    }
}

/// The scan's Arrow schema with the top-level columns that cannot hold nulls not nullable:
/// the required ones, and those every data file stores `REQUIRED` (which writers do for
/// columns they know have no nulls). Parquet then declares them `REQUIRED`, as the data
/// files do, so their chunks can be copied (an `OPTIONAL` column's pages carry definition
/// levels that a `REQUIRED` one's lack).
pub fn view_schema(scan: &Scan, footers: &[Option<Arc<ParquetMetaData>>]) -> SchemaRef {
    let schema = scan.schema();
    let stored_required = |id: i32| {
        !footers.is_empty()
            && footers.iter().all(|f| {
                f.as_ref().is_some_and(|m| {
                    m.file_metadata()
                        .schema_descr()
                        .root_schema()
                        .get_fields()
                        .iter()
                        .any(|c| {
                            let i = c.get_basic_info();
                            i.has_id()
                                && i.id() == id
                                && i.repetition() == parquet::basic::Repetition::REQUIRED
                        })
                })
            })
    };
    let required: std::collections::HashSet<i32> = scan
        .ctx
        .fields
        .iter()
        .filter(|f| f.required || stored_required(f.id))
        .map(|f| f.id)
        .collect();
    let fields: Vec<arrow::datatypes::Field> = schema
        .fields()
        .iter()
        .map(|f| {
            let req =
                crate::spec::arrow_schema::field_id(f).is_some_and(|id| required.contains(&id));
            f.as_ref().clone().with_nullable(!req)
        })
        .collect();
    Arc::new(ArrowSchema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    ))
}

/// `c` as leaf `leaf` of `descr`, its offsets moved by `shift`. Page indexes and bloom filters
/// are left out (they are not copied); statistics stay, as the values are the same, unless
/// they are of the deprecated kind, whose ordering may not be the view's.
fn rebase(
    c: &ColumnChunkMetaData,
    descr: &SchemaDescPtr,
    leaf: usize,
    shift: i64,
) -> crate::Result<ColumnChunkMetaData> {
    let mut b = ColumnChunkMetaData::builder(descr.column(leaf))
        .set_compression_codec(c.compression_codec())
        .set_encodings_mask(*c.encodings_mask())
        .set_total_compressed_size(c.compressed_size())
        .set_total_uncompressed_size(c.uncompressed_size())
        .set_num_values(c.num_values())
        .set_data_page_offset(c.data_page_offset() + shift)
        .set_dictionary_page_offset(c.dictionary_page_offset().map(|o| o + shift))
        .set_unencoded_byte_array_data_bytes(c.unencoded_byte_array_data_bytes());
    if let Some(s) = c.statistics().filter(|s| !s.is_min_max_deprecated()) {
        b = b.set_statistics(s.clone());
    }
    if let Some(p) = c.page_encoding_stats() {
        b = b.set_page_encoding_stats(p.clone());
    }
    b.build().map_err(err)
}

/// How encoded groups are written: as `icefloe cat --format parquet` writes (zstd).
fn encoded_props() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build()
}

/// How lineage chunks are written: delta-encoded, which makes a run of consecutive row ids
/// and a constant sequence number a few bytes per page, and costs little to encode.
fn lineage_props() -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::UNCOMPRESSED)
        .set_max_row_group_row_count(None);
    for f in lineage_fields() {
        let col = ColumnPath::new(vec![f.name().clone()]);
        b = b
            .set_column_dictionary_enabled(col.clone(), false)
            .set_column_encoding(col, Encoding::DELTA_BINARY_PACKED);
    }
    b.build()
}

/// A writer that counts and checksums what goes through.
struct Counting<W> {
    inner: W,
    len: u64,
    crc: crc32fast::Hasher,
}

impl<W: Write> Counting<W> {
    fn new(inner: W) -> Self {
        Counting {
            inner,
            len: 0,
            crc: crc32fast::Hasher::new(),
        }
    }

    fn finish(self) -> (W, u64, u32) {
        (self.inner, self.len, self.crc.finalize())
    }
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.len += n as u64;
        self.crc.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests;

/// A row group's ordinal in the Thrift footer (an i16 there): more row groups than that is an
/// error, not a wrapped number.
fn ordinal(i: usize) -> crate::Result<i16> {
    i16::try_from(i).map_err(|_| {
        err(format!(
            "row group {i} is past the Parquet footer's ordinal range"
        ))
    })
}
