//! Opening a table and selecting a snapshot (spec: "Snapshots", "Snapshot References",
//! time travel by id, timestamp, branch or tag).

use std::sync::Arc;

use crate::cache::{get_or_load, get_or_load_checked, Caches};
use crate::io::limits::Capped;
use crate::io::locate::{locate_with, MetadataSelection};
use crate::io::{Ambient, StorageConfig, TableIo};
use crate::spec::manifest_list::read_manifest_list;
use crate::spec::{ManifestFile, RefType, Schema, Snapshot, TableMetadata};
use crate::validate::manifest::check_manifest_list;
use crate::warning::Warnings;

/// Which snapshot to read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SnapshotSelector {
    /// The current snapshot of `main`.
    #[default]
    Current,
    /// A snapshot by id.
    Id(i64),
    /// The snapshot that was current on `main` at this time (milliseconds since the epoch).
    AsOf(i64),
    /// The snapshot a branch or tag points at.
    Ref(String),
}

/// How to open a table, beyond its location: what a front-end passes through from its flags or
/// options (CLI and mount flags, FDW table and server options).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Storage settings (credentials, region, endpoint) and whether ambient credentials may be
    /// used.
    pub storage: StorageConfig,
    /// How the metadata file of a table root is chosen (ClickHouse's settings).
    pub metadata: MetadataSelection,
    /// Location prefixes to rewrite, `(old, new)`, tried in order before any other
    /// relocation: for files recorded at a place that has since moved.
    pub path_map: Vec<(String, String)>,
    /// Refuse a table that breaks any rule of the spec, also one that does not change what it
    /// reads (those are otherwise read by the spec's reading rule, with a
    /// [`crate::Warning`]; see [`crate::warning`]).
    pub strict: bool,
}

impl From<StorageConfig> for OpenOptions {
    /// The table's current metadata as the layout finds it, with this storage.
    fn from(storage: StorageConfig) -> Self {
        OpenOptions {
            storage,
            ..Default::default()
        }
    }
}

/// An opened table: its storage and one version of its metadata.
#[derive(Clone)]
pub struct Table {
    io: TableIo,
    metadata: Arc<TableMetadata>,
    metadata_file: String,
    caches: Arc<Caches>,
    /// The rules this table was found to break; shared by its clones and scans.
    warnings: Arc<Warnings>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("metadata_file", &self.metadata_file)
            .finish()
    }
}

impl Table {
    /// Opens a table from a local path or URL of its root directory, or of a metadata file.
    /// Uses the process-wide caches. Errors: no metadata found, unreadable or invalid metadata,
    /// format version above 3.
    pub async fn open(location: &str) -> crate::Result<Table> {
        Self::open_with(location, Caches::global()).await
    }

    /// Like [`Table::open`], with explicit caches.
    pub async fn open_with(location: &str, caches: Arc<Caches>) -> crate::Result<Table> {
        Self::open_with_storage(location, caches, &[]).await
    }

    /// Like [`Table::open_with`], with storage settings (credentials, region, endpoint); see
    /// [`TableIo::open_with_options`].
    pub async fn open_with_storage(
        location: &str,
        caches: Arc<Caches>,
        storage: &[(String, String)],
    ) -> crate::Result<Table> {
        Self::open_with_config(location, caches, storage, Ambient::Use).await
    }

    /// Like [`Table::open_with_storage`], saying whether ambient credentials may be used; see
    /// [`TableIo::open_with_config`].
    pub async fn open_with_config(
        location: &str,
        caches: Arc<Caches>,
        storage: &[(String, String)],
        ambient: Ambient,
    ) -> crate::Result<Table> {
        let opts = OpenOptions::from(StorageConfig::new(storage.to_vec(), ambient));
        Self::open_with_options(location, caches, &opts).await
    }

    /// Opens a table with everything [`OpenOptions`] can say. Errors as [`Table::open`], and:
    /// no metadata file with the wanted `table-uuid`, an explicit metadata file that does not
    /// exist or whose `table-uuid` differs from the wanted one.
    pub async fn open_with_options(
        location: &str,
        caches: Arc<Caches>,
        opts: &OpenOptions,
    ) -> crate::Result<Table> {
        let (io, path) = TableIo::open_with_storage(location, &opts.storage)?;
        let located = locate_with(&io, &path, &opts.metadata).await?;
        let key = io.shown(&located.metadata_file);
        let metadata = get_or_load(&caches.metadata, key.clone(), async {
            let bytes = io
                .read_capped(&located.metadata_file, Capped::Metadata)
                .await?;
            crate::guard::catch(
                || {
                    // One copy at a time: the file's bytes (or a gzip stream over them), then
                    // the parsed JSON; never a decompressed copy beside both.
                    let json = crate::io::json::parse_json(&bytes, &key, io.limits())?;
                    drop(bytes);
                    TableMetadata::from_json(&json, &key)
                },
                |m| crate::Error::metadata(&key, format!("parser panicked: {m}")),
            )
        })
        .await?;
        if let Some(want) = &opts.metadata.table_uuid {
            let got = metadata.table_uuid.as_deref().unwrap_or("none");
            if !got.eq_ignore_ascii_case(want) {
                return Err(crate::Error::Location {
                    location: key,
                    reason: format!("its table-uuid is {got}, not {want}"),
                });
            }
        }
        let root = if located.root.is_empty() {
            String::new()
        } else {
            located.root.clone()
        };
        let io = io
            .with_roots(&root, &metadata.location)
            .with_path_map(&opts.path_map);
        Table::new(io, metadata, key, caches, opts.strict)
    }

    /// A table over `metadata`, its warnings reported ([`Table::warnings`]). Errors: the first
    /// warning when `strict`.
    fn new(
        io: TableIo,
        metadata: Arc<TableMetadata>,
        metadata_file: String,
        caches: Arc<Caches>,
        strict: bool,
    ) -> crate::Result<Table> {
        let warnings = Arc::new(Warnings::new(strict));
        warnings.report_all(&metadata.warnings)?;
        Ok(Table {
            io,
            metadata,
            metadata_file,
            caches,
            warnings,
        })
    }

    /// A table from metadata a catalog returned inline (the REST catalog's `loadTable`),
    /// without reading the metadata file again. `io` is the table's store, `root` where its
    /// files are inside it (paths under the metadata's `location` are read there), and
    /// `metadata_file` names the metadata in messages.
    pub fn from_metadata_json(
        io: TableIo,
        root: &str,
        json: &serde_json::Value,
        metadata_file: &str,
        caches: Arc<Caches>,
    ) -> crate::Result<Table> {
        let metadata = crate::guard::catch(
            || TableMetadata::from_json(json, metadata_file),
            |m| crate::Error::metadata(metadata_file, format!("parser panicked: {m}")),
        )?;
        let io = io.with_roots(root, &metadata.location);
        Table::new(
            io,
            Arc::new(metadata),
            metadata_file.to_string(),
            caches,
            false,
        )
    }

    /// The rules of the spec this table was found to break so far without changing what it
    /// reads: metadata when opened, manifests and files as they are read. A front-end shows
    /// what [`Warnings::take`] returns after a read.
    pub fn warnings(&self) -> &Warnings {
        &self.warnings
    }

    /// Makes this table (and its clones) strict: every warning is an error from now on, as
    /// [`OpenOptions::strict`] does for a table opened with it; for tables a catalog loaded.
    /// Errors: the first warning already found.
    pub fn make_strict(&self) -> crate::Result<()> {
        self.warnings.make_strict()
    }

    /// The storage of this table.
    pub fn io(&self) -> &TableIo {
        &self.io
    }

    /// The table metadata.
    pub fn metadata(&self) -> &TableMetadata {
        &self.metadata
    }

    /// The shared metadata (cheap clone).
    pub fn metadata_arc(&self) -> Arc<TableMetadata> {
        self.metadata.clone()
    }

    /// Location of the metadata file this table was read from.
    pub fn metadata_file(&self) -> &str {
        &self.metadata_file
    }

    /// The caches this table uses.
    pub fn caches(&self) -> &Arc<Caches> {
        &self.caches
    }

    /// Resolves a selector to a snapshot. `Ok(None)` only for `Current` on a table with no
    /// snapshot; a selector naming nothing is an error that says what was missing.
    pub fn select(&self, sel: &SnapshotSelector) -> crate::Result<Option<&Snapshot>> {
        let m = &self.metadata;
        let find = |id: i64| {
            m.snapshot(id).ok_or_else(|| {
                crate::Error::SnapshotNotFound(format!(
                    "snapshot {id} not found in {}",
                    self.metadata_file
                ))
            })
        };
        match sel {
            SnapshotSelector::Current => Ok(m.current_snapshot()),
            SnapshotSelector::Id(id) => find(*id).map(Some),
            SnapshotSelector::Ref(name) => match m.refs.get(name) {
                Some(r) => find(r.snapshot_id).map(Some),
                None => Err(crate::Error::SnapshotNotFound(format!(
                    "no branch or tag named {name:?} (refs: {})",
                    m.refs.keys().cloned().collect::<Vec<_>>().join(", ")
                ))),
            },
            SnapshotSelector::AsOf(ts) => {
                let from_log = m
                    .snapshot_log
                    .iter()
                    .filter(|e| e.timestamp_ms <= *ts)
                    .max_by_key(|e| e.timestamp_ms)
                    .map(|e| e.snapshot_id);
                // Without a log, walk main's ancestry (acyclic: checked when the metadata
                // was read; the walk is bounded by the snapshot count all the same).
                let id = from_log.or_else(|| {
                    let mut cur = m.current_snapshot();
                    for _ in 0..m.snapshots.len() {
                        let s = cur?;
                        if s.timestamp_ms <= *ts {
                            return Some(s.snapshot_id);
                        }
                        cur = s.parent_snapshot_id.and_then(|p| m.snapshot(p));
                    }
                    None
                });
                match id {
                    Some(id) => find(id).map(Some),
                    None => Err(crate::Error::SnapshotNotFound(format!(
                        "no snapshot of main was current at {ts} ms (the table's first snapshot is later)"
                    ))),
                }
            }
        }
    }

    /// The schema a snapshot was written with (its `schema-id`; the current schema for a
    /// table without snapshots). A read uses [`Table::read_schema`], which differs for the
    /// current snapshot and branch heads.
    pub fn schema_for(&self, snapshot: Option<&Snapshot>) -> &Schema {
        match snapshot {
            Some(s) => self.metadata.snapshot_schema(s),
            None => self.metadata.current_schema(),
        }
    }

    /// The schema a read by `sel` uses, as Iceberg Java's `SnapshotUtil.schemaFor` does: the
    /// current snapshot and a branch head read with the table's current schema (a column
    /// added since shows its `initial-default` or NULL, a renamed column its new name); a
    /// snapshot id, a timestamp or a tag reads with that snapshot's own schema.
    pub fn read_schema(&self, sel: &SnapshotSelector, snapshot: Option<&Snapshot>) -> &Schema {
        let current = match sel {
            SnapshotSelector::Current => true,
            SnapshotSelector::Ref(name) => self
                .metadata
                .refs
                .get(name)
                .is_none_or(|r| r.ref_type == RefType::Branch),
            SnapshotSelector::Id(_) | SnapshotSelector::AsOf(_) => false,
        };
        if current {
            self.metadata.current_schema()
        } else {
            self.schema_for(snapshot)
        }
    }

    /// Resolves `sel` to the snapshot it reads and the schema it reads with (see
    /// [`Table::select`] and [`Table::read_schema`]).
    pub fn resolve(&self, sel: &SnapshotSelector) -> crate::Result<(Option<&Snapshot>, &Schema)> {
        let snapshot = self.select(sel)?;
        Ok((snapshot, self.read_schema(sel, snapshot)))
    }

    /// The manifest list of a snapshot (v1 snapshots listing manifests inline get entries
    /// with sequence number 0). Cached.
    pub async fn manifest_list(
        &self,
        snapshot: &Snapshot,
    ) -> crate::Result<Arc<Vec<ManifestFile>>> {
        match &snapshot.manifest_list {
            Some(path) => {
                let key = self.io.shown(path);
                get_or_load_checked(
                    &self.caches.manifest_lists,
                    key.clone(),
                    &self.warnings,
                    async {
                        let bytes = self.io.read_capped(path, Capped::ManifestList).await?;
                        let mut list = read_manifest_list(&bytes, &key)?;
                        let warnings =
                            check_manifest_list(&mut list, snapshot, &self.metadata, &key)?;
                        Ok((list, warnings))
                    },
                )
                .await
            }
            None => Ok(Arc::new(
                snapshot
                    .manifests
                    .iter()
                    .map(|p| ManifestFile {
                        manifest_path: p.clone(),
                        manifest_length: 0,
                        partition_spec_id: self.metadata.default_spec_id,
                        content: crate::spec::ManifestContent::Data,
                        sequence_number: 0,
                        min_sequence_number: 0,
                        added_snapshot_id: snapshot.snapshot_id,
                        added_files_count: None,
                        existing_files_count: None,
                        deleted_files_count: None,
                        added_rows_count: None,
                        existing_rows_count: None,
                        deleted_rows_count: None,
                        first_row_id: None,
                        partitions: Vec::new(),
                    })
                    .collect(),
            )),
        }
    }
}
