//! The fields of a manifest entry that planning uses, read straight from the Avro encoding
//! by name (spec: "Manifests": the names are the same in format versions 1 to 3, fields a
//! version lacks are absent), every other field skipped. What the values mean (defaults,
//! inheritance) is decided in `manifest`.

use std::collections::HashMap;

use apache_avro::types::Value;

use super::avro_binary::{Cursor, Node, Scalar, Schema};

/// A field of `manifest_entry` or of its `data_file` that is read.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Field {
    Status,
    SnapshotId,
    SequenceNumber,
    FileSequenceNumber,
    DataFile,
    Content,
    FilePath,
    FileFormat,
    Partition,
    RecordCount,
    FileSizeInBytes,
    ValueCounts,
    NullValueCounts,
    NanValueCounts,
    LowerBounds,
    UpperBounds,
    EqualityIds,
    FirstRowId,
    ReferencedDataFile,
    ContentOffset,
    ContentSizeInBytes,
    Skip,
}

fn entry_field(name: &str) -> Field {
    match name {
        "status" => Field::Status,
        "snapshot_id" => Field::SnapshotId,
        "sequence_number" => Field::SequenceNumber,
        "file_sequence_number" => Field::FileSequenceNumber,
        "data_file" => Field::DataFile,
        _ => Field::Skip,
    }
}

fn data_file_field(name: &str) -> Field {
    match name {
        "content" => Field::Content,
        "file_path" => Field::FilePath,
        "file_format" => Field::FileFormat,
        "partition" => Field::Partition,
        "record_count" => Field::RecordCount,
        "file_size_in_bytes" => Field::FileSizeInBytes,
        "value_counts" => Field::ValueCounts,
        "null_value_counts" => Field::NullValueCounts,
        "nan_value_counts" => Field::NanValueCounts,
        "lower_bounds" => Field::LowerBounds,
        "upper_bounds" => Field::UpperBounds,
        "equality_ids" => Field::EqualityIds,
        "first_row_id" => Field::FirstRowId,
        "referenced_data_file" => Field::ReferencedDataFile,
        "content_offset" => Field::ContentOffset,
        "content_size_in_bytes" => Field::ContentSizeInBytes,
        _ => Field::Skip,
    }
}

/// A record's fields as read: each field's node and what it is (the first of a repeated name
/// only, as a lookup by name finds).
struct Layout(Vec<(usize, Field)>);

impl Layout {
    fn of(fields: &[(String, usize)], what: fn(&str) -> Field) -> Layout {
        let mut seen = Vec::new();
        Layout(
            fields
                .iter()
                .map(|(name, node)| {
                    let f = what(name);
                    if f == Field::Skip || seen.contains(&f) {
                        return (*node, Field::Skip);
                    }
                    seen.push(f);
                    (*node, f)
                })
                .collect(),
        )
    }
}

/// How the entries of one manifest are laid out, from its writer schema.
pub struct EntryReader {
    schema: Schema,
    entry: Layout,
    /// The `data_file` record node, and its layout.
    data_file: Option<(usize, Layout)>,
}

/// A `data_file` as read: `None` or empty where absent, null, or of another Avro type than
/// the field's (as a lookup in a decoded value would find nothing).
#[derive(Debug, Default)]
pub struct RawDataFile<'a> {
    pub content: Option<i64>,
    pub file_path: Option<&'a str>,
    pub file_format: Option<&'a str>,
    /// The partition tuple's values, when `partition` is a record.
    pub partition: Option<Vec<Value>>,
    pub record_count: Option<i64>,
    pub file_size_in_bytes: Option<i64>,
    pub value_counts: HashMap<i32, i64>,
    pub null_value_counts: HashMap<i32, i64>,
    pub nan_value_counts: HashMap<i32, i64>,
    pub lower_bounds: HashMap<i32, Vec<u8>>,
    pub upper_bounds: HashMap<i32, Vec<u8>>,
    pub equality_ids: Vec<i32>,
    pub first_row_id: Option<i64>,
    pub referenced_data_file: Option<&'a str>,
    pub content_offset: Option<i64>,
    pub content_size_in_bytes: Option<i64>,
}

/// A `manifest_entry` as read.
#[derive(Debug, Default)]
pub struct RawEntry<'a> {
    pub status: Option<i64>,
    pub snapshot_id: Option<i64>,
    pub sequence_number: Option<i64>,
    pub file_sequence_number: Option<i64>,
    /// `None` when `data_file` is absent or not a record.
    pub data_file: Option<RawDataFile<'a>>,
}

impl EntryReader {
    /// The reader for a manifest whose writer schema is `schema`. Errors: entries that are not
    /// records.
    pub fn new(schema: Schema) -> Result<EntryReader, String> {
        let Node::Record(fields) = schema.node(schema.root()) else {
            return Err("entry is not a record".into());
        };
        let entry = Layout::of(fields, entry_field);
        let data_file = entry
            .0
            .iter()
            .find(|(_, f)| *f == Field::DataFile)
            .and_then(|(node, _)| record_node(&schema, *node))
            .map(|(at, fields)| (at, Layout::of(fields, data_file_field)));
        Ok(EntryReader {
            schema,
            entry,
            data_file,
        })
    }

    /// Reads one entry. `wants_metrics` is asked, once the partition tuple is read (with it,
    /// `None` when it is not a record), whether the column metrics that follow it are
    /// wanted: when not, the bounds are skipped and the count maps keep only their negative
    /// values (what the manifest rules refuse), so that an entry a filter rules out by its
    /// partition costs no metrics.
    pub fn read<'s, 'a: 's>(
        &'s self,
        c: &mut Cursor<'a>,
        wants_metrics: &mut dyn FnMut(Option<&[Value]>) -> bool,
    ) -> Result<RawEntry<'s>, String> {
        let s = &self.schema;
        let mut e = RawEntry::default();
        for &(node, field) in &self.entry.0 {
            match field {
                Field::Status => e.status = c.scalar(s, node)?.int(),
                Field::SnapshotId => e.snapshot_id = c.scalar(s, node)?.int(),
                Field::SequenceNumber => e.sequence_number = c.scalar(s, node)?.int(),
                Field::FileSequenceNumber => e.file_sequence_number = c.scalar(s, node)?.int(),
                Field::DataFile => e.data_file = self.read_data_file(c, node, wants_metrics)?,
                _ => c.skip(s, node)?,
            }
        }
        Ok(e)
    }

    fn read_data_file<'s, 'a: 's>(
        &'s self,
        c: &mut Cursor<'a>,
        node: usize,
        wants_metrics: &mut dyn FnMut(Option<&[Value]>) -> bool,
    ) -> Result<Option<RawDataFile<'s>>, String> {
        let s = &self.schema;
        let Some((record, layout)) = &self.data_file else {
            c.skip(s, node)?;
            return Ok(None);
        };
        if !at_record(c, s, node, *record)? {
            return Ok(None);
        }
        let mut d = RawDataFile::default();
        let mut metrics = true;
        for &(node, field) in &layout.0 {
            match field {
                Field::Partition => {
                    d.partition = read_partition(c, s, node)?;
                    metrics = wants_metrics(d.partition.as_deref());
                }
                Field::ValueCounts | Field::NullValueCounts | Field::NanValueCounts if !metrics => {
                    let negative = read_negative_counts(c, s, node)?;
                    match field {
                        Field::ValueCounts => d.value_counts = negative,
                        Field::NullValueCounts => d.null_value_counts = negative,
                        _ => d.nan_value_counts = negative,
                    }
                }
                Field::LowerBounds | Field::UpperBounds if !metrics => c.skip(s, node)?,
                Field::Content => d.content = c.scalar(s, node)?.int(),
                Field::FilePath => d.file_path = c.scalar(s, node)?.str(),
                Field::FileFormat => d.file_format = c.scalar(s, node)?.str(),
                Field::RecordCount => d.record_count = c.scalar(s, node)?.int(),
                Field::FileSizeInBytes => d.file_size_in_bytes = c.scalar(s, node)?.int(),
                Field::ValueCounts => d.value_counts = read_counts(c, s, node)?,
                Field::NullValueCounts => d.null_value_counts = read_counts(c, s, node)?,
                Field::NanValueCounts => d.nan_value_counts = read_counts(c, s, node)?,
                Field::LowerBounds => d.lower_bounds = read_bounds(c, s, node)?,
                Field::UpperBounds => d.upper_bounds = read_bounds(c, s, node)?,
                Field::EqualityIds => d.equality_ids = read_ints(c, s, node)?,
                Field::FirstRowId => d.first_row_id = c.scalar(s, node)?.int(),
                Field::ReferencedDataFile => d.referenced_data_file = c.scalar(s, node)?.str(),
                Field::ContentOffset => d.content_offset = c.scalar(s, node)?.int(),
                Field::ContentSizeInBytes => d.content_size_in_bytes = c.scalar(s, node)?.int(),
                _ => c.skip(s, node)?,
            }
        }
        Ok(Some(d))
    }
}

/// The record `node` is, or the first record branch of the union it is.
fn record_node(s: &Schema, node: usize) -> Option<(usize, &[(String, usize)])> {
    match s.node(node) {
        Node::Record(f) => Some((node, f)),
        Node::Union(b) => b.iter().find_map(|b| match s.node(*b) {
            Node::Record(f) => Some((*b, f.as_slice())),
            _ => None,
        }),
        _ => None,
    }
}

/// Moves `c` to the start of record `record` if the value of `node` is one (through a
/// union); otherwise skips the value and returns false.
fn at_record(c: &mut Cursor<'_>, s: &Schema, node: usize, record: usize) -> Result<bool, String> {
    let mut n = node;
    while let Node::Union(b) = s.node(n) {
        n = c.branch(b)?;
    }
    if n == record {
        return Ok(true);
    }
    c.skip(s, n)?;
    Ok(false)
}

/// The value node `n` is after the branch of its union is read (`n` itself if no union).
fn past_unions(c: &mut Cursor<'_>, s: &Schema, mut n: usize) -> Result<usize, String> {
    while let Node::Union(b) = s.node(n) {
        n = c.branch(b)?;
    }
    Ok(n)
}

fn read_partition(
    c: &mut Cursor<'_>,
    s: &Schema,
    node: usize,
) -> Result<Option<Vec<Value>>, String> {
    let n = past_unions(c, s, node)?;
    let Node::Record(fields) = s.node(n) else {
        c.skip(s, n)?;
        return Ok(None);
    };
    fields
        .iter()
        .map(|(_, f)| c.value(s, *f))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The items of an array (through a union), each handed to `item` with its node; a value of
/// another type is skipped and yields nothing.
fn each_item<'a>(
    c: &mut Cursor<'a>,
    s: &Schema,
    node: usize,
    mut item: impl FnMut(&mut Cursor<'a>, usize) -> Result<(), String>,
) -> Result<(), String> {
    let n = past_unions(c, s, node)?;
    let Node::Array(items) = s.node(n) else {
        return c.skip(s, n);
    };
    loop {
        let count = c.block_count()?;
        if count == 0 {
            return Ok(());
        }
        for _ in 0..count {
            item(c, *items)?;
        }
    }
}

/// An int-keyed map as Iceberg writes them (spec: "Manifests", maps as arrays of `key`/`value`
/// records): the pairs whose key is a number and value not null.
fn pairs<'s, 'a: 's>(
    c: &mut Cursor<'a>,
    s: &'s Schema,
    node: usize,
) -> Result<Vec<(i32, Scalar<'s>)>, String> {
    let mut out = Vec::new();
    each_pair(c, s, node, |k, v| out.push((k, v)))?;
    Ok(out)
}

/// [`pairs`] handed one at a time to `pair`, nothing kept.
fn each_pair<'s, 'a: 's>(
    c: &mut Cursor<'a>,
    s: &'s Schema,
    node: usize,
    mut pair: impl FnMut(i32, Scalar<'s>),
) -> Result<(), String> {
    each_item(c, s, node, |c, item| {
        let n = past_unions(c, s, item)?;
        let Node::Record(fields) = s.node(n) else {
            return c.skip(s, n);
        };
        let (mut key, mut value) = (None, None);
        for (name, f) in fields {
            match name.as_str() {
                "key" if key.is_none() => key = Some(c.scalar(s, *f)?),
                "value" if value.is_none() => value = Some(c.scalar(s, *f)?),
                _ => c.skip(s, *f)?,
            }
        }
        if let (Some(Scalar::Int(k)), Some(v)) = (key, value) {
            if v != Scalar::Null {
                pair(k as i32, v);
            }
        }
        Ok(())
    })
}

/// The negative values of a count map (none, unless the manifest is corrupt), read without
/// keeping the others.
fn read_negative_counts(
    c: &mut Cursor<'_>,
    s: &Schema,
    node: usize,
) -> Result<HashMap<i32, i64>, String> {
    let mut out = HashMap::new();
    each_pair(c, s, node, |k, v| {
        if let Some(n) = v.int().filter(|n| *n < 0) {
            out.insert(k, n);
        }
    })?;
    Ok(out)
}

fn read_counts(c: &mut Cursor<'_>, s: &Schema, node: usize) -> Result<HashMap<i32, i64>, String> {
    Ok(pairs(c, s, node)?
        .into_iter()
        .filter_map(|(k, v)| v.int().map(|n| (k, n)))
        .collect())
}

fn read_bounds(
    c: &mut Cursor<'_>,
    s: &Schema,
    node: usize,
) -> Result<HashMap<i32, Vec<u8>>, String> {
    Ok(pairs(c, s, node)?
        .into_iter()
        .filter_map(|(k, v)| match v {
            Scalar::Bytes(b) => Some((k, b.to_vec())),
            _ => None,
        })
        .collect())
}

/// An array of `int`s (other items are skipped).
fn read_ints(c: &mut Cursor<'_>, s: &Schema, node: usize) -> Result<Vec<i32>, String> {
    let mut out = Vec::new();
    each_item(c, s, node, |c, item| {
        let n = past_unions(c, s, item)?;
        match s.node(n) {
            Node::Int => out.push(c.int()?),
            _ => c.skip(s, n)?,
        }
        Ok(())
    })?;
    Ok(out)
}
