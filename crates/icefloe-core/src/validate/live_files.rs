//! Checks of a snapshot's live files taken together (spec: "Manifests", "Deletion Vectors",
//! "Row Lineage", "Snapshots" summary), fed one data file at a time so that planning streams
//! in bounded memory: what is kept per data file is a 128-bit fingerprint of its path, and row
//! id ranges merged into runs. The fingerprints ([`PathKeys`]) are taken where manifests are
//! decoded, so a file that pruning rules out is fed as a [`RuledOut`] summary and its entry is
//! dropped on the thread that decoded it.
//!
//! - no data file is live twice;
//! - at most one deletion vector per data file, every deletion vector naming a live data file;
//! - a delete file that names its data file is not older than it, and within the `file_path`
//!   bounds its own metrics record (one in another partition than its data file is a warning:
//!   it applies to the file it names, as Iceberg Java indexes such deletes by path);
//! - row id ranges of live data files are disjoint and below the table's `next-row-id`;
//! - the snapshot summary's `total-data-files`, `total-delete-files` and `total-records`.
//!
//! When pruning skipped manifests, only the checks that hold for a subset of the files are
//! run (see [`LiveFiles::new`]). Row ids past `next-row-id` and summary totals that differ
//! from the files are warnings (Iceberg Java reads such snapshots, with the same rows); the
//! rest are refusals.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::BuildHasher;
use std::ops::Range;
use std::sync::Arc;

// Hashing runs once per data file of a plan (a million for a large table): foldhash, seeded
// per plan, is several times faster than the standard SipHash on paths.
use foldhash::fast::RandomState as FastState;
use foldhash::quality::RandomState as PathSeed;

use crate::spec::{DataContent, DataFile, ManifestEntry, Snapshot};
use crate::warning::{Rule, Subject, Warning, Warnings};

/// Field id of the `file_path` column of position delete files (spec: "Reserved Field IDs").
const DELETE_FILE_PATH_ID: i32 = 2147483546;

/// A position delete file (or deletion vector) that names the one data file it applies to.
struct NamedDelete {
    partition_key: String,
    sequence_number: i64,
    path: String,
    dv_offset: Option<Option<i64>>,
    /// Whether a live data file of that path was seen.
    found: bool,
}

/// How the whole-snapshot checks fingerprint a data file's path: two independently seeded
/// 128-bit halves, taken on the threads that decode manifests.
#[derive(Clone)]
pub struct PathKeys {
    seeds: Arc<(PathSeed, PathSeed)>,
    /// The fingerprints of the paths delete files name: the checks need those entries whole.
    named: Arc<HashSet<u128, FastState>>,
}

impl PathKeys {
    /// The fingerprint of `path`.
    pub fn key(&self, path: &str) -> u128 {
        u128::from(self.seeds.0.hash_one(path)) << 64 | u128::from(self.seeds.1.hash_one(path))
    }

    /// Whether a delete file names the data file of fingerprint `key`: its entry must be fed
    /// whole ([`LiveFiles::data_file`]), not as a [`RuledOut`] summary.
    pub fn is_named(&self, key: u128) -> bool {
        !self.named.is_empty() && self.named.contains(&key)
    }
}

/// What the checks need of a live data file that pruning ruled out and no delete file names:
/// its path's fingerprint, record count and first row id. Its path is kept apart
/// (`path` indexes a buffer of the paths of many such files), to be named in errors.
#[derive(Debug, Clone)]
pub struct RuledOut {
    pub key: u128,
    pub path: Range<usize>,
    pub record_count: i64,
    pub first_row_id: Option<i64>,
}

/// The whole-snapshot checks, fed every live entry of the manifests read.
pub struct LiveFiles {
    /// The manifest list, named in errors.
    list: String,
    next_row_id: Option<i64>,
    /// Whether every manifest of the snapshot is read (else only the subset checks run).
    complete: bool,
    keys: PathKeys,
    data_paths: HashSet<u128, FastState>,
    named: HashMap<String, Vec<NamedDelete>, FastState>,
    row_ids: RowIdRuns,
    /// The first data file with row ids at or past `next_row_id`.
    past_next: Option<(String, i64, i64)>,
    /// The first delete file naming a data file of another partition than its own.
    other_partition: Option<String>,
    data_files: i64,
    delete_files: i64,
    records: i64,
}

impl LiveFiles {
    /// Starts the checks with the snapshot's live delete entries (all of them: delete
    /// manifests are never skipped), checking those that concern delete files alone. `list`
    /// names the manifest list; `complete` says whether every data manifest will be fed, as
    /// the checks that need all live data files (a deletion vector naming no live data file,
    /// the summary totals) only run then; the others hold for any subset. `data_files` is
    /// how many live data files to expect (a hint to size what is kept).
    pub fn new(
        list: &str,
        next_row_id: Option<i64>,
        complete: bool,
        deletes: &[ManifestEntry],
        data_files: usize,
    ) -> crate::Result<LiveFiles> {
        let err = |r: String| crate::Error::manifest(list, r);
        let mut dvs: HashMap<&str, &DataFile> = HashMap::new();
        let mut named: HashMap<String, Vec<NamedDelete>, FastState> = HashMap::default();
        for e in deletes {
            let f = &*e.data_file;
            if f.is_deletion_vector() {
                let target = f.referenced_data_file.as_deref().unwrap_or_default();
                if let Some(other) = dvs.insert(target, f) {
                    return Err(err(format!(
                        "two deletion vectors for data file {target} in one snapshot ({} at offset {:?} and {} at offset {:?}); the spec allows at most one",
                        other.file_path, other.content_offset, f.file_path, f.content_offset
                    )));
                }
            }
            let (true, Some(target)) = (
                f.content == DataContent::PositionDeletes,
                f.referenced_data_file.as_deref(),
            ) else {
                continue;
            };
            check_file_path_bounds(f, target).map_err(err)?;
            named
                .entry(target.to_string())
                .or_default()
                .push(NamedDelete {
                    partition_key: f.partition_key(),
                    sequence_number: e.sequence_number,
                    path: f.file_path.clone(),
                    dv_offset: f.is_deletion_vector().then_some(f.content_offset),
                    found: false,
                });
        }
        Ok(LiveFiles {
            list: list.to_string(),
            next_row_id,
            complete,
            keys: path_keys(&named),
            // A hint from a manifest list, so bounded (a corrupt count must not reserve
            // gigabytes); growing past it costs a resize.
            data_paths: HashSet::with_capacity_and_hasher(
                data_files.min(1 << 20),
                FastState::default(),
            ),
            named,
            row_ids: RowIdRuns::default(),
            past_next: None,
            other_partition: None,
            data_files: 0,
            delete_files: deletes.len() as i64,
            records: 0,
        })
    }

    /// The fingerprints the checks take of paths, for the threads that decode manifests.
    pub fn path_keys(&self) -> PathKeys {
        self.keys.clone()
    }

    /// Checks one live data entry against those fed before; `key` is its path's fingerprint
    /// ([`PathKeys::key`]) when taken already, `manifest` names its manifest.
    pub fn data_file(
        &mut self,
        e: &ManifestEntry,
        key: Option<u128>,
        manifest: &str,
    ) -> crate::Result<()> {
        let f = &*e.data_file;
        let key = key.unwrap_or_else(|| self.keys.key(&f.file_path));
        self.fingerprint(key, &f.file_path, f.record_count)?;
        let err = |r: String| crate::Error::manifest(&self.list, r);
        // The fingerprint says whether a delete file may name it (the path is hashed again
        // only then).
        let named = match self.keys.is_named(key) {
            false => None,
            true => self.named.get_mut(&f.file_path),
        };
        if let Some(deletes) = named {
            let partition = f.partition_key();
            for d in deletes {
                d.found = true;
                if d.partition_key != partition && self.other_partition.is_none() {
                    self.other_partition = Some(format!(
                        "delete file {} names data file {} but is in another partition ({} vs {}) (spec: \"Scan Planning\")",
                        d.path, f.file_path, d.partition_key, partition
                    ));
                }
                if e.sequence_number > d.sequence_number {
                    return Err(err(format!(
                        "delete file {} (sequence number {}) names data file {}, which is newer (sequence number {}): it cannot have been written for it",
                        d.path, d.sequence_number, f.file_path, e.sequence_number
                    )));
                }
            }
        }
        self.row_ids_of(&f.file_path, f.first_row_id, f.record_count, manifest)
    }

    /// Checks a live data file that pruning ruled out, as [`LiveFiles::data_file`] would its
    /// entry; `paths` holds its path at `f.path`.
    pub fn ruled_out(&mut self, f: &RuledOut, paths: &str, manifest: &str) -> crate::Result<()> {
        let path = paths.get(f.path.clone()).unwrap_or_default();
        self.fingerprint(f.key, path, f.record_count)?;
        self.row_ids_of(path, f.first_row_id, f.record_count, manifest)
    }

    /// Counts a live data file of fingerprint `key`, refusing a path live twice.
    fn fingerprint(&mut self, key: u128, path: &str, record_count: i64) -> crate::Result<()> {
        let err = |r: String| crate::Error::manifest(&self.list, r);
        if !self.data_paths.insert(key) {
            return Err(err(format!("data file {path} is live twice in the snapshot")));
        }
        self.data_files += 1;
        self.records = self
            .records
            .checked_add(record_count)
            .ok_or_else(|| err("total record count overflows a long".into()))?;
        Ok(())
    }

    /// Records the row ids of a live data file, refusing ids another file has.
    fn row_ids_of(
        &mut self,
        path: &str,
        first_row_id: Option<i64>,
        record_count: i64,
        manifest: &str,
    ) -> crate::Result<()> {
        let err = |r: String| crate::Error::manifest(&self.list, r);
        let Some(first) = first_row_id else {
            return Ok(());
        };
        // The message is made only on overflow (this runs for every data file).
        let end = first.checked_add(record_count).map_or_else(
            || {
                crate::spec::checked::add(first, record_count, &format!("first_row_id of {path}"))
            },
            Ok,
        );
        let end = end.map_err(err)?;
        // Reported at the end: ids past next-row-id usually come with an overlap, the more
        // telling error.
        if self.past_next.is_none() && self.next_row_id.is_some_and(|n| end > n) {
            self.past_next = Some((path.to_string(), first, end));
        }
        self.row_ids
            .insert(first, end, manifest)
            .map_err(|(a0, a1, m)| {
                err(format!(
                    "data file {path} (row ids {first} to {}) and data files of manifest {m} (row ids {a0} to {}) share row ids; row ids are unique in a table (spec: \"Row Lineage\")",
                    end - 1,
                    a1 - 1
                ))
            })?;
        Ok(())
    }

    /// The checks left once every data file is fed; those that need every live data file of
    /// the snapshot only when it was read completely. Warnings go to `warnings`.
    pub fn finish(self, snapshot: &Snapshot, warnings: &Warnings) -> crate::Result<()> {
        let err = |r: String| crate::Error::manifest(&self.list, r);
        let warn =
            |rule, r: String| warnings.report(Warning::new(rule, Subject::Manifest, &self.list, r));
        if let (Some((file, first, end)), Some(next)) = (&self.past_next, self.next_row_id) {
            warn(Rule::RowIdAssignment, format!(
                "data file {file} has row ids {first} to {}, at or beyond the table's next-row-id {next} (spec: \"Row Lineage\", \"First Row ID Assignment\")",
                end - 1
            ))?;
        }
        if let Some(detail) = &self.other_partition {
            warn(Rule::DeletePartition, detail.clone())?;
        }
        if !self.complete {
            return Ok(());
        }
        // A V2 position delete file may outlive its data file (a "dangling" delete left by
        // compaction) and then applies to nothing; a deletion vector is written for one live
        // data file and removed with it, so one that names no live data file has lost its
        // data file, and its deletes would silently apply to nothing.
        for (target, deletes) in &self.named {
            if let Some(d) = deletes.iter().find(|d| !d.found && d.dv_offset.is_some()) {
                return Err(err(format!(
                    "deletion vector in {} (offset {:?}) has referenced_data_file {target}, which is not a live data file of the snapshot: its deletes would apply to no row (spec: \"Deletion Vectors\", \"Scan Planning\": a DV applies to the data file whose file_path equals its referenced_data_file)",
                    d.path,
                    d.dv_offset.flatten()
                )));
            }
        }
        for (key, found) in [
            ("total-data-files", self.data_files),
            ("total-delete-files", self.delete_files),
            ("total-records", self.records),
        ] {
            if let Some(want) = snapshot.summary_i64(key) {
                if want != found {
                    warn(Rule::SummaryTotals, format!(
                        "snapshot {} lists {found} for {key} in its manifests but its summary records {want} (spec: \"Snapshot Summary\")",
                        snapshot.snapshot_id
                    ))?;
                }
            }
        }
        Ok(())
    }
}

/// Fresh seeds, and the fingerprints of the data files the delete files in `named` name.
fn path_keys(named: &HashMap<String, Vec<NamedDelete>, FastState>) -> PathKeys {
    let seeds = Arc::new((PathSeed::default(), PathSeed::default()));
    let mut keys = PathKeys {
        seeds,
        named: Arc::default(),
    };
    let fingerprints = named.keys().map(|p| keys.key(p)).collect();
    keys.named = Arc::new(fingerprints);
    keys
}

/// A position delete file's `referenced_data_file` must lie within the bounds its metrics
/// record for its own `file_path` column (spec: "Manifests", referenced_data_file: "when all
/// deletes tracked by the entry are in a single data file"): a manifest whose
/// referenced_data_file was changed would apply the deletes to another file, or to none.
fn check_file_path_bounds(f: &DataFile, target: &str) -> Result<(), String> {
    let bound = |m: &HashMap<i32, Vec<u8>>| {
        m.get(&DELETE_FILE_PATH_ID)
            .and_then(|b| std::str::from_utf8(b).ok().map(str::to_string))
    };
    let (lower, upper) = (bound(&f.lower_bounds), bound(&f.upper_bounds));
    // An upper bound may be truncated (then it is a prefix rounded up), so compare prefixes.
    let above_upper = upper
        .as_deref()
        .is_some_and(|u| target.get(..u.len()).unwrap_or(target) > u);
    if lower.as_deref().is_some_and(|l| target < l) || above_upper {
        return Err(format!(
            "delete file {} has referenced_data_file {target}, outside the file_path bounds its metrics record ({lower:?} to {upper:?}): the deletes are for another data file",
            f.file_path
        ));
    }
    Ok(())
}

/// Row ids handed out so far (spec: "Row Lineage": unique in a table), as disjoint runs
/// `start -> (end, manifest)`; ranges that touch merge, so files whose ids were assigned one
/// after another (as inheritance does within a manifest) take one run.
#[derive(Default)]
struct RowIdRuns {
    runs: BTreeMap<i64, (i64, u32)>,
    manifests: Vec<String>,
}

impl RowIdRuns {
    /// Adds [`start`, `end`); `Err` with the run it overlaps and that run's manifest.
    fn insert(&mut self, start: i64, end: i64, manifest: &str) -> Result<(), (i64, i64, &str)> {
        if start >= end {
            return Ok(()); // an empty file holds no row id
        }
        if self.manifests.last().map(String::as_str) != Some(manifest) {
            self.manifests.push(manifest.to_string());
        }
        let m = (self.manifests.len() - 1) as u32;
        let before = self.runs.range(..=start).next_back().map(|(s, v)| (*s, *v));
        let after = self.runs.range(start..).next().map(|(s, v)| (*s, *v));
        let clash = |(s, (e, m)): (i64, (i64, u32))| (s, e, self.manifests[m as usize].as_str());
        if let Some(b) = before.filter(|(_, (e, _))| *e > start) {
            return Err(clash(b));
        }
        if let Some(a) = after.filter(|(s, _)| *s < end) {
            return Err(clash(a));
        }
        let (mut s, mut e) = (start, end);
        if let Some((bs, (be, _))) = before.filter(|(_, (e, _))| *e == start) {
            self.runs.remove(&bs);
            s = bs;
            debug_assert_eq!(be, start);
        }
        if let Some((as_, (ae, _))) = after.filter(|(s, _)| *s == end) {
            self.runs.remove(&as_);
            e = ae;
        }
        self.runs.insert(s, (e, m));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_id_runs_merge_and_refuse_overlaps() {
        let mut r = RowIdRuns::default();
        assert!(r.insert(0, 10, "a").is_ok());
        assert!(r.insert(10, 20, "a").is_ok());
        assert!(r.insert(30, 40, "b").is_ok());
        assert!(r.insert(20, 30, "b").is_ok());
        assert_eq!(r.runs.len(), 1, "{:?}", r.runs);
        assert!(
            r.insert(5, 5, "c").is_ok(),
            "an empty range overlaps nothing"
        );
        assert_eq!(r.insert(39, 41, "c"), Err((0, 40, "b")));
        assert!(r.insert(45, 50, "c").is_ok());
        assert_eq!(r.insert(41, 46, "d"), Err((45, 50, "c")));
        assert_eq!(r.insert(-5, 1, "d"), Err((0, 40, "b")));
        assert!(r.insert(40, 45, "d").is_ok());
        assert_eq!(r.runs.len(), 1);
    }
}
