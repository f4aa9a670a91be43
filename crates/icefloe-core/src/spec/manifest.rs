//! Manifests (spec: "Manifests"): Avro files listing data files or delete files, with status,
//! partition tuple, metrics, and the sequence numbers and `first_row_id` they inherit.

use std::collections::HashMap;
use std::sync::Arc;

use super::avro::to_literal;
use super::avro_binary::{Container, Cursor};
use super::literal::Literal;
use super::manifest_fields::{EntryReader, RawEntry};
use super::manifest_list::ManifestFile;
use super::types::PrimitiveType;
use crate::warning::{Rule, Subject, Warning};

/// Entry status: whether the file was added or kept by the manifest's snapshot, or removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryStatus {
    Existing,
    Added,
    Deleted,
}

/// What a content file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataContent {
    Data,
    PositionDeletes,
    EqualityDeletes,
}

/// File format of a content file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    Parquet,
    Avro,
    Orc,
    Puffin,
}

/// A data file or delete file (`data_file` struct of a manifest entry).
#[derive(Debug, Clone, PartialEq)]
pub struct DataFile {
    pub content: DataContent,
    /// As recorded in the manifest (resolve it through `io::TableIo` before reading).
    pub file_path: String,
    pub file_format: FileFormat,
    pub spec_id: i32,
    /// Partition values in partition-spec field order (`None` = null).
    pub partition: Vec<Option<Literal>>,
    pub record_count: i64,
    pub file_size_in_bytes: i64,
    pub value_counts: HashMap<i32, i64>,
    pub null_value_counts: HashMap<i32, i64>,
    pub nan_value_counts: HashMap<i32, i64>,
    /// Binary single-value serialization, by field id.
    pub lower_bounds: HashMap<i32, Vec<u8>>,
    pub upper_bounds: HashMap<i32, Vec<u8>>,
    pub equality_ids: Vec<i32>,
    /// First `_row_id` of the file, after inheritance (data files of v3 tables only).
    pub first_row_id: Option<i64>,
    /// Position deletes and DVs: the one data file they apply to, when known.
    pub referenced_data_file: Option<String>,
    /// DVs: byte range of the blob inside the Puffin file.
    pub content_offset: Option<i64>,
    pub content_size_in_bytes: Option<i64>,
}

#[cfg(test)]
impl DataFile {
    /// A Parquet data file with no metrics, for unit tests of planning and pruning.
    pub(crate) fn for_test(
        file_path: &str,
        spec_id: i32,
        partition: Vec<Option<Literal>>,
        record_count: i64,
    ) -> DataFile {
        DataFile {
            content: DataContent::Data,
            file_path: file_path.to_string(),
            file_format: FileFormat::Parquet,
            spec_id,
            partition,
            record_count,
            file_size_in_bytes: 100,
            value_counts: HashMap::new(),
            null_value_counts: HashMap::new(),
            nan_value_counts: HashMap::new(),
            lower_bounds: HashMap::new(),
            upper_bounds: HashMap::new(),
            equality_ids: vec![],
            first_row_id: None,
            referenced_data_file: None,
            content_offset: None,
            content_size_in_bytes: None,
        }
    }
}

impl DataFile {
    /// Whether this is a deletion vector (a position delete stored as a Puffin blob).
    pub fn is_deletion_vector(&self) -> bool {
        self.content == DataContent::PositionDeletes && self.file_format == FileFormat::Puffin
    }

    /// A key identifying the partition (spec id + values) for equality tests between files.
    pub fn partition_key(&self) -> String {
        format!("{}:{:?}", self.spec_id, self.partition)
    }
}

/// A manifest entry with sequence numbers and snapshot id already inherited.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestEntry {
    pub status: EntryStatus,
    pub snapshot_id: i64,
    /// Data sequence number (0 in v1).
    pub sequence_number: i64,
    pub file_sequence_number: i64,
    /// Shared with the file tasks planned from it and with the manifest cache.
    pub data_file: Arc<DataFile>,
}

/// Decodes a manifest, applying sequence-number, snapshot-id and `first_row_id` inheritance
/// from its manifest list entry. `partition_types` gives each partition field's result type, in
/// order. `path` names the file for errors.
pub fn read_manifest(
    bytes: &[u8],
    path: &str,
    manifest: &ManifestFile,
    partition_types: &[PrimitiveType],
) -> crate::Result<Vec<ManifestEntry>> {
    read_manifest_of_spec(bytes, path, manifest, partition_types, None).map(|(e, _)| e)
}

/// [`read_manifest`] for a partition spec whose fields have the field ids `partition_ids`
/// (in order): the partition tuple's values are taken by field id (spec: "Manifests": the
/// tuple's struct field ids are the partition field ids), so a tuple that holds fields of
/// other specs too (as DuckDB writes after partition evolution) reads as Iceberg Java reads
/// it, with a warning of [`Rule::PartitionTupleFields`]. A spec field missing from the tuple
/// is an error. Without `partition_ids`, or when the writer schema has no field ids, the
/// values are taken in order.
pub fn read_manifest_of_spec(
    bytes: &[u8],
    path: &str,
    manifest: &ManifestFile,
    partition_types: &[PrimitiveType],
    partition_ids: Option<&[i32]>,
) -> crate::Result<(Vec<ManifestEntry>, Vec<Warning>)> {
    let mut entries = ManifestEntries::open(bytes, path, manifest, partition_types, partition_ids)?;
    let out = entries.by_ref().collect::<crate::Result<Vec<_>>>()?;
    Ok((out, entries.take_warnings()))
}

/// The field ids of the writer schema's `data_file.partition` struct, when every field has
/// one.
fn writer_partition_ids(schema: &serde_json::Value) -> Option<Vec<i32>> {
    // A record, or a union holding one.
    fn record(t: &serde_json::Value) -> Option<&Vec<serde_json::Value>> {
        match t {
            serde_json::Value::Array(branches) => branches.iter().find_map(record),
            serde_json::Value::Object(o) => match o.get("fields") {
                Some(f) => f.as_array(),
                None => o.get("type").and_then(record),
            },
            _ => None,
        }
    }
    let field = |fields: &Vec<serde_json::Value>, name: &str| {
        fields
            .iter()
            .find(|f| f.get("name").and_then(|n| n.as_str()) == Some(name))
            .and_then(|f| f.get("type"))
            .and_then(record)
            .cloned()
    };
    let data_file = field(record(schema)?, "data_file")?;
    field(&data_file, "partition")?
        .iter()
        .map(|f| {
            f.get("field-id")
                .and_then(|i| i.as_i64())
                .and_then(|i| i32::try_from(i).ok())
        })
        .collect()
}

/// How a writer's partition tuple maps onto the spec's fields.
struct Projection {
    /// Where each of the spec's partition fields is in the writer's tuple.
    positions: Vec<usize>,
    /// Field ids of the tuple that the spec does not have.
    extra: Vec<i32>,
}

/// The [`Projection`] of the writer's partition tuple onto `spec_ids`; `None` when the tuple
/// is read in order.
fn partition_projection(
    schema: &serde_json::Value,
    spec_ids: &[i32],
) -> Result<Option<Projection>, String> {
    let Some(written) = writer_partition_ids(schema) else {
        return Ok(None);
    };
    if written == spec_ids {
        return Ok(None);
    }
    let positions = spec_ids
        .iter()
        .map(|id| {
            written.iter().position(|w| w == id).ok_or_else(|| {
                format!(
                    "the manifest's partition tuple (field ids {written:?}) has no field with the partition field id {id} of its spec (spec: \"Manifests\")"
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let extra = written
        .iter()
        .filter(|w| !spec_ids.contains(w))
        .copied()
        .collect();
    Ok(Some(Projection { positions, extra }))
}

/// The entries of one manifest, decoded one at a time from its bytes (Avro blocks are
/// decompressed one at a time): what a caller keeps of a manifest is what it keeps of the
/// entries, not the manifest. Inheritance from the manifest list entry is applied as in
/// [`read_manifest_of_spec`], whose rules it follows; after an error it yields nothing more.
pub struct ManifestEntries<'a> {
    path: &'a str,
    manifest: &'a ManifestFile,
    partition_types: &'a [PrimitiveType],
    file: Container<'a>,
    reader: EntryReader,
    projection: Option<Vec<usize>>,
    warnings: Vec<Warning>,
    /// Row ids handed out so far to data files that inherit one.
    next_row_id: Option<i64>,
    /// The block being read, where the next entry starts in it, and its entries: in the
    /// block, and left to read.
    block: std::borrow::Cow<'a, [u8]>,
    at: usize,
    count: u64,
    left: u64,
    done: bool,
    /// Which entries' column metrics are decoded.
    metrics_of: MetricsOf<'a>,
}

/// Which entries of a [`ManifestEntries`] come with their column metrics.
enum MetricsOf<'a> {
    Every,
    /// Those whose partition values the filter admits
    /// ([`ManifestEntries::with_partition_filter`]).
    Admitted(PartitionFilter<'a>),
    /// None ([`ManifestEntries::without_metrics`]).
    None,
}

/// Says whether a file with the given partition values (in partition spec field order) may
/// be wanted: see [`ManifestEntries::with_partition_filter`].
pub type PartitionFilter<'a> = Box<dyn Fn(&[Option<Literal>]) -> bool + Send + 'a>;

impl<'a> ManifestEntries<'a> {
    /// Opens the manifest `bytes` (read its header and writer schema); `path` names it in
    /// errors. The arguments are those of [`read_manifest_of_spec`]. Errors: not an Avro
    /// file, or a partition tuple without a field of the spec.
    pub fn open(
        bytes: &'a [u8],
        path: &'a str,
        manifest: &'a ManifestFile,
        partition_types: &'a [PrimitiveType],
        partition_ids: Option<&[i32]>,
    ) -> crate::Result<ManifestEntries<'a>> {
        // A corrupt file can make the Avro decoder panic; that is this file's error.
        crate::guard::catch(
            || Self::open_unguarded(bytes, path, manifest, partition_types, partition_ids),
            |m| crate::Error::manifest(path, format!("Avro decoder panicked: {m}")),
        )
    }

    fn open_unguarded(
        bytes: &'a [u8],
        path: &'a str,
        manifest: &'a ManifestFile,
        partition_types: &'a [PrimitiveType],
        partition_ids: Option<&[i32]>,
    ) -> crate::Result<ManifestEntries<'a>> {
        let err = |r: String| crate::Error::manifest(path, r);
        let file = Container::open(bytes).map_err(err)?;
        let projection = match partition_ids {
            Some(ids) => partition_projection(&file.schema_json, ids).map_err(err)?,
            None => None,
        };
        let mut warnings = Vec::new();
        if let Some(Projection { extra, .. }) = projection.as_ref().filter(|p| !p.extra.is_empty())
        {
            warnings.push(Warning::new(
                Rule::PartitionTupleFields,
                Subject::Manifest,
                path,
                format!(
                    "the partition tuple has fields (field ids {extra:?}) that its partition spec {} does not have (spec: \"Manifests\")",
                    manifest.partition_spec_id
                ),
            ));
        }
        let reader = EntryReader::new(file.schema.clone()).map_err(err)?;
        Ok(ManifestEntries {
            path,
            manifest,
            partition_types,
            file,
            reader,
            projection: projection.map(|p| p.positions),
            warnings,
            next_row_id: manifest.first_row_id,
            block: std::borrow::Cow::Borrowed(&[]),
            at: 0,
            count: 0,
            left: 0,
            done: false,
            metrics_of: MetricsOf::Every,
        })
    }

    /// Decodes the column metrics (value, null and NaN counts, bounds) only of entries whose
    /// partition values `wanted` admits: the others come without bounds, and with only the
    /// negative counts (which the manifest rules refuse) in their count maps. For a filter
    /// that rules files out by their partition values, before their metrics are decoded;
    /// every other field, and so every rule of the entry, is read as without it.
    pub fn with_partition_filter(mut self, wanted: PartitionFilter<'a>) -> ManifestEntries<'a> {
        self.metrics_of = MetricsOf::Admitted(wanted);
        self
    }

    /// Decodes no entry's column metrics: [`ManifestEntries::with_partition_filter`] with a
    /// filter that admits nothing, without making the partition values into literals for it
    /// (which is a large share of the decoding of a listing). Entries whose partition tuple is
    /// not a record still come with their metrics, as with that filter.
    pub fn without_metrics(mut self) -> ManifestEntries<'a> {
        self.metrics_of = MetricsOf::None;
        self
    }

    /// The warnings found so far (the manifest's, not its entries'), taken.
    pub fn take_warnings(&mut self) -> Vec<Warning> {
        std::mem::take(&mut self.warnings)
    }

    fn next_entry(&mut self) -> crate::Result<Option<ManifestEntry>> {
        let path = self.path;
        let err = |r: String| crate::Error::manifest(path, r);
        let corrupt = |r: String| err(format!("corrupt Avro data: {r}"));
        loop {
            if self.left > 0 {
                let mut c = Cursor::new(&self.block[self.at..]);
                let (types, projection) = (self.partition_types, self.projection.as_deref());
                let metrics_of = &self.metrics_of;
                let mut wants_metrics =
                    |p: Option<&[apache_avro::types::Value]>| match (metrics_of, p) {
                        (MetricsOf::Admitted(wanted), Some(p)) => {
                            partition_literals(p, projection, types).is_none_or(|p| wanted(&p))
                        }
                        // A tuple that is not a record is read with its metrics, as by a filter.
                        (MetricsOf::None, p) => p.is_none(),
                        _ => true,
                    };
                let raw = self
                    .reader
                    .read(&mut c, &mut wants_metrics)
                    .map_err(corrupt)?;
                let rest = c.buf.len();
                let entry = entry_of(
                    raw,
                    self.manifest,
                    self.partition_types,
                    self.projection.as_deref(),
                    &mut self.next_row_id,
                )
                .map_err(err)?;
                self.at = self.block.len() - rest;
                self.left -= 1;
                return Ok(Some(entry));
            }
            if self.at < self.block.len() {
                return Err(corrupt(format!(
                    "{} bytes left in a block after its {} entries",
                    self.block.len() - self.at,
                    self.count
                )));
            }
            match self.file.next_block().map_err(corrupt)? {
                None => return Ok(None),
                Some((count, block)) => {
                    (self.block, self.at, self.count, self.left) = (block, 0, count, count);
                }
            }
        }
    }
}

impl Iterator for ManifestEntries<'_> {
    type Item = crate::Result<ManifestEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let path = self.path;
        let next = crate::guard::catch(
            || self.next_entry(),
            |m| crate::Error::manifest(path, format!("Avro decoder panicked: {m}")),
        );
        match next {
            Ok(Some(e)) => Some(Ok(e)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// A partition tuple's values as the spec's fields' literals; `None` when they do not read as
/// them (the entry's own decoding then says why).
fn partition_literals(
    tuple: &[apache_avro::types::Value],
    projection: Option<&[usize]>,
    types: &[PrimitiveType],
) -> Option<Vec<Option<Literal>>> {
    let value = |k: usize| match projection {
        Some(at) => tuple.get(*at.get(k)?),
        None => tuple.get(k),
    };
    if projection.is_none() && tuple.len() != types.len() {
        return None;
    }
    types
        .iter()
        .enumerate()
        .map(|(k, t)| to_literal(value(k)?, t).ok())
        .collect()
}

/// One entry with the spec's defaults and inheritance applied; `next_row_id` is the next row
/// id a data file that inherits one takes.
fn entry_of(
    entry: RawEntry<'_>,
    manifest: &ManifestFile,
    partition_types: &[PrimitiveType],
    projection: Option<&[usize]>,
    next_row_id: &mut Option<i64>,
) -> Result<ManifestEntry, String> {
    let status = match entry.status {
        Some(0) => EntryStatus::Existing,
        Some(1) => EntryStatus::Added,
        Some(2) => EntryStatus::Deleted,
        s => return Err(format!("invalid entry status {s:?}")),
    };
    let df = entry.data_file.ok_or("entry without data_file")?;
    let file_path = df
        .file_path
        .ok_or("data_file without file_path")?
        .to_string();
    let content = match df.content.unwrap_or(0) {
        0 => DataContent::Data,
        1 => DataContent::PositionDeletes,
        2 => DataContent::EqualityDeletes,
        c => return Err(format!("{file_path}: unknown content {c}")),
    };
    let format = df.file_format.unwrap_or("PARQUET");
    let file_format = if format.eq_ignore_ascii_case("PARQUET") {
        FileFormat::Parquet
    } else if format.eq_ignore_ascii_case("AVRO") {
        FileFormat::Avro
    } else if format.eq_ignore_ascii_case("ORC") {
        FileFormat::Orc
    } else if format.eq_ignore_ascii_case("PUFFIN") {
        FileFormat::Puffin
    } else {
        return Err(format!(
            "{file_path}: unknown file format {}",
            format.to_ascii_uppercase()
        ));
    };
    let projected = match (df.partition, projection) {
        (Some(p), Some(at)) => Some(
            at.iter()
                .map(|&i| {
                    p.get(i)
                        .cloned()
                        .ok_or("partition tuple shorter than its schema")
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        (p, _) => p,
    };
    let partition = match &projected {
        Some(p) => {
            if p.len() != partition_types.len() {
                return Err(format!(
                    "{file_path}: partition has {} values but spec {} has {} fields",
                    p.len(),
                    manifest.partition_spec_id,
                    partition_types.len()
                ));
            }
            p.iter()
                .zip(partition_types)
                .map(|(v, t)| to_literal(v, t))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("{file_path}: {e}"))?
        }
        None => Vec::new(),
    };
    let record_count = df.record_count.unwrap_or(0);

    // Sequence numbers and snapshot id are null for files added by the manifest's own
    // snapshot: they inherit the manifest list entry's values.
    let sequence_number = entry.sequence_number.unwrap_or(manifest.sequence_number);
    let file_sequence_number = entry
        .file_sequence_number
        .unwrap_or(manifest.sequence_number);
    let snapshot_id = entry.snapshot_id.unwrap_or(manifest.added_snapshot_id);

    // Only live data entries take a range (spec: "First Row ID Inheritance"): the manifest
    // list's first_row_id counts added and existing rows, never deleted ones.
    let mut first_row_id = df.first_row_id;
    if content == DataContent::Data && status != EntryStatus::Deleted && first_row_id.is_none() {
        if let Some(next) = *next_row_id {
            first_row_id = Some(next);
            *next_row_id = Some(
                super::checked::non_negative(record_count, "record_count")
                    .and_then(|()| super::checked::add(next, record_count, "first_row_id"))
                    .map_err(|r| format!("{file_path}: {r}"))?,
            );
        }
    }
    if content != DataContent::Data {
        first_row_id = None;
    }

    Ok(ManifestEntry {
        status,
        snapshot_id,
        sequence_number,
        file_sequence_number,
        data_file: Arc::new(DataFile {
            content,
            file_format,
            spec_id: manifest.partition_spec_id,
            partition,
            record_count,
            file_size_in_bytes: df.file_size_in_bytes.unwrap_or(0),
            value_counts: df.value_counts,
            null_value_counts: df.null_value_counts,
            nan_value_counts: df.nan_value_counts,
            lower_bounds: df.lower_bounds,
            upper_bounds: df.upper_bounds,
            equality_ids: df.equality_ids,
            first_row_id,
            referenced_data_file: df.referenced_data_file.map(str::to_string),
            content_offset: df.content_offset,
            content_size_in_bytes: df.content_size_in_bytes,
            file_path,
        }),
    })
}
