//! Which delete files apply to which data file (spec: "Scan Planning", scope rules):
//! - a deletion vector applies to the data file it references, when the data file's data
//!   sequence number is ≤ the vector's;
//! - a position delete file applies likewise to the one data file its `referenced_data_file`
//!   names, else to any file of its partition (its rows name their data file), unless a
//!   deletion vector applies. A delete file that names its data file applies to it whatever
//!   its partition, as Iceberg Java indexes such deletes by path (the mismatch is a warning of
//!   `validate::live_files`). Equal `file_path` bounds are not taken as a name: a corrupt
//!   bound would send the deletes to no file, while partition scoping stays exact;
//! - an equality delete file applies when the data file's sequence number is strictly lower,
//!   in the same partition or everywhere when written with an unpartitioned spec.

use std::collections::HashMap;

// Looked up once per data file of a plan: foldhash rather than the standard SipHash.
use foldhash::fast::RandomState;

use super::file_ref::DeleteFileRef;
use crate::spec::{DataContent, DataFile, ManifestEntry, TableMetadata};

/// Delete files of one snapshot, indexed for lookup by data file.
pub struct DeleteIndex {
    dvs: HashMap<String, Vec<DeleteFileRef>, RandomState>,
    positions_by_path: HashMap<String, Vec<DeleteFileRef>, RandomState>,
    positions_by_partition: HashMap<String, Vec<DeleteFileRef>, RandomState>,
    equality_global: Vec<DeleteFileRef>,
    equality_by_partition: HashMap<String, Vec<DeleteFileRef>, RandomState>,
}

/// The deletes that apply to one data file.
#[derive(Debug, Default)]
pub struct Applicable {
    pub deletion_vector: Option<DeleteFileRef>,
    pub position_deletes: Vec<DeleteFileRef>,
    pub equality_deletes: Vec<DeleteFileRef>,
}

impl DeleteIndex {
    /// Indexes the live delete entries of a snapshot.
    pub fn new(metadata: &TableMetadata, deletes: Vec<ManifestEntry>) -> DeleteIndex {
        let mut idx = DeleteIndex {
            dvs: HashMap::default(),
            positions_by_path: HashMap::default(),
            positions_by_partition: HashMap::default(),
            equality_global: Vec::new(),
            equality_by_partition: HashMap::default(),
        };
        for e in deletes {
            let r = DeleteFileRef {
                sequence_number: e.sequence_number,
                file: e.data_file,
            };
            match r.file.content {
                DataContent::PositionDeletes if r.file.is_deletion_vector() => {
                    let target = r.file.referenced_data_file.clone().unwrap_or_default();
                    idx.dvs.entry(target).or_default().push(r);
                }
                DataContent::PositionDeletes => match r.file.referenced_data_file.as_deref() {
                    Some(target) => idx
                        .positions_by_path
                        .entry(target.to_string())
                        .or_default()
                        .push(r),
                    None => idx
                        .positions_by_partition
                        .entry(r.file.partition_key())
                        .or_default()
                        .push(r),
                },
                DataContent::EqualityDeletes => {
                    let global = metadata
                        .partition_spec(r.file.spec_id)
                        .is_none_or(|s| s.is_unpartitioned());
                    if global {
                        idx.equality_global.push(r);
                    } else {
                        idx.equality_by_partition
                            .entry(r.file.partition_key())
                            .or_default()
                            .push(r);
                    }
                }
                DataContent::Data => {}
            }
        }
        idx
    }

    /// The deletes for `data_file`, whose data sequence number is `seq`.
    pub fn for_data_file(&self, data_file: &DataFile, seq: i64) -> Applicable {
        let dvs = self.dvs.get(&data_file.file_path);
        if dvs.is_none()
            && self.positions_by_path.is_empty()
            && self.positions_by_partition.is_empty()
            && self.equality_global.is_empty()
            && self.equality_by_partition.is_empty()
        {
            return Applicable::default();
        }
        let partition = data_file.partition_key();
        // A newer DV replaces an older one for the same file; take the highest sequence number.
        let deletion_vector = dvs
            .into_iter()
            .flatten()
            .filter(|d| seq <= d.sequence_number)
            .max_by_key(|d| d.sequence_number)
            .cloned();
        let position_deletes = if deletion_vector.is_some() {
            Vec::new()
        } else {
            self.positions_by_path
                .get(&data_file.file_path)
                .into_iter()
                .flatten()
                .chain(
                    self.positions_by_partition
                        .get(&partition)
                        .into_iter()
                        .flatten(),
                )
                .filter(|d| seq <= d.sequence_number)
                .cloned()
                .collect()
        };
        let equality_deletes = self
            .equality_global
            .iter()
            .chain(
                self.equality_by_partition
                    .get(&partition)
                    .into_iter()
                    .flatten(),
            )
            .filter(|d| seq < d.sequence_number)
            .cloned()
            .collect();
        Applicable {
            deletion_vector,
            position_deletes,
            equality_deletes,
        }
    }
}
