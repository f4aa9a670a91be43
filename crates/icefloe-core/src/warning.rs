//! The refusal policy's second outcome: a table that breaks a rule of the spec in a way that
//! does not change the answer is read by the spec's reading rule (what Iceberg Java does with
//! it), and the broken rule is reported as a [`Warning`] instead of refusing the table. A table
//! opened strict ([`crate::OpenOptions::strict`]) turns the first warning into the typed error
//! the check raised before it was a warning. `docs/refusals.md` lists every check and its
//! outcome.
//!
//! Each opened [`crate::Table`] has one [`Warnings`] collector; the checks report into it and
//! a front-end takes what was found ([`Warnings::take`]) to show it: once per rule per table.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// A rule a table may break without changing what it reads: one per kind of warning, so that
/// a table shows each once (naming the first file that broke it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// A manifest entry records metrics for a field id its data file has no column for (a
    /// Hive-style file without its identity partition column): the value is the partition
    /// tuple's, or null (spec: "Column Projection").
    MetricsWithoutColumn,
    /// No column of a data file has a field id of any schema of the table: every column reads
    /// as null or its `initial-default` (spec: "Column Projection").
    NoKnownFieldIds,
    /// A format version 3 feature (a default value, a V3 type, a row lineage field) in a table
    /// of format version 1 or 2.
    NewerFeature,
    /// A manifest list's file or row counts for a manifest differ from the manifest's entries;
    /// the entries are read.
    ManifestCounts,
    /// A snapshot summary's totals differ from the counts its manifest list records; the
    /// manifests are read.
    SummaryTotals,
    /// A deletion vector's Puffin file has no footer, or a footer that does not describe the
    /// blob the manifest points at; the blob is read at the manifest's offsets and checked
    /// (length, magic, CRC).
    PuffinFooter,
    /// A delete manifest with a `first_row_id`, which is always null for delete manifests; it
    /// is ignored.
    DeleteManifestRowId,
    /// Row id bookkeeping of the metadata and manifest list that disagrees (`next-row-id`, a
    /// snapshot's `first-row-id`, a manifest's `first_row_id`); each manifest's `first_row_id`
    /// is taken from the manifest list.
    RowIdAssignment,
    /// Sequence numbers that disagree between a snapshot, its manifest list and its manifests;
    /// the manifest list's and the entries' own values are used.
    SequenceNumbers,
    /// A field id above `last-column-id`.
    LastColumnId,
    /// A delete file that names its data file (a deletion vector, or a position delete file
    /// with `referenced_data_file`) in another partition than that data file: it applies to
    /// the file it names.
    DeletePartition,
    /// A manifest's partition tuple with fields its partition spec does not have (DuckDB
    /// writes every spec's fields after partition evolution): the spec's fields are read by
    /// field id.
    PartitionTupleFields,
}

impl Rule {
    /// A short stable name for the rule (shown in warnings; the key of `docs/refusals.md`).
    pub fn name(self) -> &'static str {
        match self {
            Rule::MetricsWithoutColumn => "metrics-without-column",
            Rule::NoKnownFieldIds => "no-known-field-ids",
            Rule::NewerFeature => "newer-format-feature",
            Rule::ManifestCounts => "manifest-counts",
            Rule::SummaryTotals => "summary-totals",
            Rule::PuffinFooter => "puffin-footer",
            Rule::DeleteManifestRowId => "delete-manifest-first-row-id",
            Rule::RowIdAssignment => "row-id-assignment",
            Rule::SequenceNumbers => "sequence-numbers",
            Rule::LastColumnId => "last-column-id",
            Rule::DeletePartition => "delete-partition",
            Rule::PartitionTupleFields => "partition-tuple-fields",
        }
    }

    /// What the reader does instead of refusing (appended to the warning).
    pub fn reading(self) -> &'static str {
        match self {
            Rule::MetricsWithoutColumn => {
                "the column is read from the partition tuple (identity partition), else as null"
            }
            Rule::NoKnownFieldIds => "its columns read as null or their initial-default",
            Rule::NewerFeature => "read as Iceberg Java reads it",
            Rule::ManifestCounts => "the manifest's entries are read",
            Rule::SummaryTotals => "the manifests are read",
            Rule::PuffinFooter => {
                "the blob is read at the manifest's content_offset and content_size_in_bytes"
            }
            Rule::DeleteManifestRowId => "the value is ignored",
            Rule::RowIdAssignment => "row ids are taken from the manifest list's first_row_id",
            Rule::SequenceNumbers => "the manifest list's and the entries' values are used",
            Rule::LastColumnId => "the field is read by its id",
            Rule::DeletePartition => "the deletes apply to the data file it names",
            Rule::PartitionTupleFields => "the spec's fields are read by field id",
        }
    }
}

/// What a warning is about, which decides the error it becomes under strict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// Table metadata ([`crate::Error::Metadata`]).
    Metadata,
    /// A manifest list or manifest ([`crate::Error::Manifest`]).
    Manifest,
    /// A data file ([`crate::Error::DataFile`]).
    DataFile,
    /// A deletion vector ([`crate::Error::DeletionVector`]).
    DeletionVector,
}

/// One broken rule: which, in which file, and what was found there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub rule: Rule,
    pub subject: Subject,
    /// The file that breaks the rule, as shown to users.
    pub file: String,
    /// What is wrong, with the spec section it breaks.
    pub detail: String,
}

impl Warning {
    /// A warning about `file`.
    pub fn new(
        rule: Rule,
        subject: Subject,
        file: impl fmt::Display,
        detail: impl fmt::Display,
    ) -> Warning {
        Warning {
            rule,
            subject,
            file: file.to_string(),
            detail: detail.to_string(),
        }
    }

    /// The error a strict read raises for this warning.
    pub fn into_error(self) -> crate::Error {
        let (path, reason) = (self.file, self.detail);
        match self.subject {
            Subject::Metadata => crate::Error::Metadata { path, reason },
            Subject::Manifest => crate::Error::Manifest { path, reason },
            Subject::DataFile => crate::Error::DataFile { path, reason },
            Subject::DeletionVector => crate::Error::DeletionVector { path, reason },
        }
    }
}

/// A rule broken in a table: the first warning for it, and how many more there were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub warning: Warning,
    /// Further warnings for the same rule (other files, or the same file read again).
    pub more: u64,
}

impl fmt::Display for Warning {
    /// `<file>: <detail>; <reading> [<rule>]`: one line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}; {} [{}]",
            self.file,
            self.detail,
            self.rule.reading(),
            self.rule.name()
        )
    }
}

impl fmt::Display for Found {
    /// The warning, then ` (and N more)` when the rule was broken again.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.warning)?;
        if self.more > 0 {
            write!(f, " (and {} more)", self.more)?;
        }
        Ok(())
    }
}

/// Called with each rule's first warning as it is found ([`Warnings::set_sink`]).
pub type Sink = Box<dyn Fn(&Warning) + Send + Sync>;

/// The warnings of one opened table, and whether it is read strict.
#[derive(Default)]
pub struct Warnings {
    strict: AtomicBool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    found: Vec<Found>,
    /// How many of `found` were taken by [`Warnings::take`].
    taken: usize,
    sink: Option<Sink>,
}

impl fmt::Debug for Warnings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Warnings")
            .field("strict", &self.is_strict())
            .field("found", &self.lock().found)
            .finish()
    }
}

impl Warnings {
    /// An empty collector; `strict` turns every warning into an error.
    pub fn new(strict: bool) -> Warnings {
        Warnings {
            strict: AtomicBool::new(strict),
            state: Mutex::default(),
        }
    }

    /// Whether warnings are errors.
    pub fn is_strict(&self) -> bool {
        self.strict.load(Ordering::Relaxed)
    }

    /// Makes warnings errors from now on. Errors: the first warning already found, as its
    /// error.
    pub fn make_strict(&self) -> crate::Result<()> {
        self.strict.store(true, Ordering::Relaxed);
        match self.lock().found.first() {
            Some(f) => Err(f.warning.clone().into_error()),
            None => Ok(()),
        }
    }

    /// Records `w`. Errors: `w` as its error when strict.
    pub fn report(&self, w: Warning) -> crate::Result<()> {
        if self.is_strict() {
            return Err(w.into_error());
        }
        let mut s = self.lock();
        match s.found.iter_mut().find(|f| f.warning.rule == w.rule) {
            Some(f) => f.more += 1,
            None => {
                tracing::debug!(rule = w.rule.name(), file = %w.file, "{}", w.detail);
                if let Some(sink) = &s.sink {
                    sink(&w);
                }
                s.found.push(Found {
                    warning: w,
                    more: 0,
                });
            }
        }
        Ok(())
    }

    /// [`Warnings::report`] for each of `ws`, in order.
    pub fn report_all(&self, ws: &[Warning]) -> crate::Result<()> {
        ws.iter().try_for_each(|w| self.report(w.clone()))
    }

    /// The rules broken since the last call (each rule once per table), for a front-end to
    /// show.
    pub fn take(&self) -> Vec<Found> {
        let mut s = self.lock();
        let new = s.found[s.taken..].to_vec();
        s.taken = s.found.len();
        new
    }

    /// Has `sink` called with the first warning of each rule, those found so far at once: for
    /// a front-end that logs as it reads (a mount), instead of taking them after a read.
    pub fn set_sink(&self, sink: Sink) {
        let mut s = self.lock();
        for f in &s.found {
            sink(&f.warning);
        }
        s.sink = Some(sink);
    }

    /// Every rule broken so far, taken or not.
    pub fn all(&self) -> Vec<Found> {
        self.lock().found.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves the list whole: keep using it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(rule: Rule, file: &str) -> Warning {
        Warning::new(rule, Subject::Manifest, file, "broken")
    }

    #[test]
    fn one_per_rule_and_strict_errors() {
        let ws = Warnings::new(false);
        ws.report(w(Rule::ManifestCounts, "a")).unwrap();
        ws.report(w(Rule::ManifestCounts, "b")).unwrap();
        ws.report(w(Rule::SummaryTotals, "c")).unwrap();
        let taken = ws.take();
        assert_eq!(taken.len(), 2);
        assert_eq!(taken[0].warning.file, "a");
        assert_eq!(taken[0].more, 1);
        assert!(taken[0]
            .to_string()
            .contains("[manifest-counts] (and 1 more)"));
        // Once per table: the same rule again is counted, not shown again.
        ws.report(w(Rule::ManifestCounts, "d")).unwrap();
        assert!(ws.take().is_empty());
        let err = ws.make_strict().unwrap_err();
        assert!(matches!(err, crate::Error::Manifest { ref path, .. } if path == "a"));
        let err = ws.report(w(Rule::PuffinFooter, "e")).unwrap_err();
        assert_eq!(err.to_string(), "invalid manifest e: broken");
    }
}
