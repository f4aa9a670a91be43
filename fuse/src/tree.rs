//! The tree of the mount: what each node is, its inode number, and the names in each
//! directory.
//!
//! ```text
//! <root>/                         a table, or a warehouse: <namespace>/<table>/ below
//!   current -> snapshots/<id> or schemas/<schema-id>/<id>
//!   refs/<name> -> ../snapshots/<id> or ../schemas/<schema-id>/<id>
//!   snapshots/<id>/{data.csv, data.jsonl, data.parquet, snapshot.json,
//!                   files/<data-file>.{csv,jsonl,parquet}}
//!   snapshots/<id>/partitions/<field>=<value>/[<field>=<value>/…]data.{csv,parquet}
//!   schemas/<schema-id>/<id>/        the same snapshot read with table schema <schema-id>
//!   snapshots.csv
//!   changes/<A>..<B>/{data.csv, data.jsonl, data.parquet, net.csv}
//!   retention.csv
//! ```
//!
//! `changes/` lists each snapshot with its parent (`<parent>..<id>`); any other pair whose
//! start is an ancestor of its end is made on lookup (the core's change feed between them).
//!
//! Which schema a read uses is the core's rule ([`icefloe_core::Table::resolve`]): a snapshot
//! id reads with the snapshot's schema (`snapshots/<id>`); `current` and a branch read with
//! the table's current schema, so their links lead to `schemas/<current>/<id>` when that
//! differs from the snapshot's own.

use std::collections::BTreeMap;

use icefloe_core::encode::percent::escape_ascii;
use icefloe_core::encode::Encoding;
use icefloe_core::history::range::commits_between;
use icefloe_core::scan::partition_dirs::list_level;
use percent_encoding::AsciiSet;

use crate::catalog::MountCatalog;
use crate::error::Result;

/// The file `data.csv` / `data.parquet` of a snapshot.
pub const DATA: &str = "data";
/// The directory of per-file views in a snapshot.
pub const FILES: &str = "files";
/// The Hive-style partition directories of a snapshot.
pub const PARTITIONS: &str = "partitions";
/// The snapshot description in a snapshot directory.
pub const SNAPSHOT_JSON: &str = "snapshot.json";
/// The snapshot list of a table.
pub const SNAPSHOTS_CSV: &str = "snapshots.csv";
/// The change feed directories of a table.
pub const CHANGES: &str = "changes";
/// The dry run of snapshot expiry of a table, as of the time it is read.
pub const RETENTION_CSV: &str = "retention.csv";

/// A file of a change range directory: every commit's changes (`data.*`) or the net effect
/// over the range (`net.csv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChangeFile {
    pub net: bool,
    pub encoding: Encoding,
}

impl ChangeFile {
    /// The files of every change range directory.
    pub const ALL: [ChangeFile; 4] = [
        ChangeFile {
            net: false,
            encoding: Encoding::Csv,
        },
        ChangeFile {
            net: false,
            encoding: Encoding::Jsonl,
        },
        ChangeFile {
            net: false,
            encoding: Encoding::Parquet,
        },
        ChangeFile {
            net: true,
            encoding: Encoding::Csv,
        },
    ];

    /// The file name.
    pub fn name(self) -> String {
        let stem = if self.net { "net" } else { DATA };
        format!("{stem}.{}", self.encoding.extension())
    }
}

/// Which rows a view holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Every live row of the snapshot (`data.*`).
    All,
    /// The live rows of one data file (`files/*`), by task index in the snapshot's plan.
    File(usize),
    /// The live rows of the data files of one partition directory (`partitions/…/data.*`),
    /// by index in the snapshot plan's partition directories.
    Partition(usize),
}

/// How a view is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Csv,
    Jsonl,
    Parquet,
}

impl Format {
    /// The file name extension.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Jsonl => "jsonl",
            Format::Parquet => "parquet",
        }
    }

    /// Every format a snapshot's rows are viewed in.
    pub const ALL: [Format; 3] = [Format::Csv, Format::Jsonl, Format::Parquet];

    /// The text encoding of a text view.
    pub fn text(self) -> Option<crate::text::Text> {
        match self {
            Format::Csv => Some(crate::text::Text::Csv),
            Format::Jsonl => Some(crate::text::Text::Jsonl),
            Format::Parquet => None,
        }
    }
}

/// A view of a snapshot's rows: a table, a snapshot, a scope and a format.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ViewKey {
    pub table: usize,
    pub snapshot: i64,
    /// The table schema the snapshot is read with.
    pub schema: i32,
    pub scope: Scope,
    pub format: Format,
}

/// A node of the tree. Tables are catalog ids.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Node {
    /// The root of a warehouse mount.
    Warehouse,
    /// A namespace directory of a warehouse: its levels, outermost first (nested namespaces
    /// are nested directories).
    Namespace(Vec<String>),
    /// A table's directory (the root of a single-table mount).
    Table(usize),
    /// `current`, a symlink to the current snapshot of `main`.
    Current(usize),
    /// `refs/`.
    RefsDir(usize),
    /// `refs/<name>`, a symlink.
    Ref(usize, String),
    /// `snapshots/`.
    SnapshotsDir(usize),
    /// `schemas/`.
    SchemasDir(usize),
    /// `schemas/<schema-id>/`.
    SchemaDir(usize, i32),
    /// `snapshots.csv`.
    SnapshotsCsv(usize),
    /// `snapshots/<id>/` (or `schemas/<schema-id>/<id>/`): a snapshot and the schema it is
    /// read with.
    Snapshot(usize, i64, i32),
    /// `snapshot.json` of a snapshot directory.
    SnapshotJson(usize, i64, i32),
    /// `files/` of a snapshot directory.
    FilesDir(usize, i64, i32),
    /// `partitions/` of a snapshot directory and the directories below it, by path segments.
    PartitionDir(usize, i64, i32, Vec<String>),
    /// A CSV or Parquet view.
    View(ViewKey),
    /// `changes/`.
    ChangesDir(usize),
    /// `changes/<from>..<to>/`.
    ChangeRange(usize, i64, i64),
    /// A file of `changes/<from>..<to>/`.
    Change(usize, i64, i64, ChangeFile),
    /// `retention.csv`.
    RetentionCsv(usize),
}

/// The kind of file a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Symlink,
}

impl Node {
    /// Directory, regular file or symlink.
    pub fn kind(&self) -> Kind {
        match self {
            Node::Current(_) | Node::Ref(..) => Kind::Symlink,
            Node::SnapshotsCsv(_)
            | Node::SnapshotJson(..)
            | Node::View(_)
            | Node::Change(..)
            | Node::RetentionCsv(_) => Kind::File,
            _ => Kind::Dir,
        }
    }

    /// The table the node belongs to, if any.
    pub fn table(&self) -> Option<usize> {
        match self {
            Node::Warehouse | Node::Namespace(_) => None,
            Node::Table(t)
            | Node::Current(t)
            | Node::RefsDir(t)
            | Node::Ref(t, _)
            | Node::SnapshotsDir(t)
            | Node::SchemasDir(t)
            | Node::SchemaDir(t, _)
            | Node::SnapshotsCsv(t)
            | Node::Snapshot(t, ..)
            | Node::SnapshotJson(t, ..)
            | Node::FilesDir(t, ..)
            | Node::PartitionDir(t, ..)
            | Node::ChangesDir(t)
            | Node::ChangeRange(t, ..)
            | Node::Change(t, ..)
            | Node::RetentionCsv(t) => Some(*t),
            Node::View(v) => Some(v.table),
        }
    }

    /// The snapshot the node belongs to, if any: everything under `snapshots/<id>/`, which
    /// never changes.
    pub fn snapshot(&self) -> Option<i64> {
        match self {
            Node::Snapshot(_, s, _)
            | Node::SnapshotJson(_, s, _)
            | Node::FilesDir(_, s, _)
            | Node::PartitionDir(_, s, ..) => Some(*s),
            Node::View(v) => Some(v.snapshot),
            // A change range never changes either: it is read up to its end snapshot.
            Node::ChangeRange(_, _, to) | Node::Change(_, _, to, _) => Some(*to),
            _ => None,
        }
    }

    /// The start of a change range, for the nodes below `changes/<from>..<to>/`.
    pub fn range_start(&self) -> Option<i64> {
        match self {
            Node::ChangeRange(_, from, _) | Node::Change(_, from, ..) => Some(*from),
            _ => None,
        }
    }
}

/// A ref name as a file name: `/` (allowed in branch names) becomes `%2F`, `%` becomes `%25`;
/// everything else, non-ASCII included, stays.
pub fn ref_file_name(name: &str) -> String {
    const ESCAPED: &AsciiSet = &AsciiSet::EMPTY.add(b'%').add(b'/');
    escape_ascii(name, ESCAPED)
}

/// The entries of a namespace directory (`prefix` its levels; empty for the warehouse root):
/// the tables directly in it and the namespaces below it that hold tables, sorted by name.
fn namespace_entries(catalog: &MountCatalog, prefix: &[String]) -> Vec<(String, Node)> {
    let mut entries: BTreeMap<String, Node> = BTreeMap::new();
    for t in catalog.tables() {
        let Some(rest) = t.path.strip_prefix(prefix) else {
            continue;
        };
        match rest {
            [name] => {
                entries.insert(name.clone(), Node::Table(t.id));
            }
            [level, _, ..] => {
                entries
                    .entry(level.clone())
                    .or_insert_with(|| Node::Namespace(t.path[..=prefix.len()].to_vec()));
            }
            [] => {}
        }
    }
    entries.into_iter().collect()
}

/// The entries of directory `dir`, in listing order. Listing reads metadata only (and, for
/// `files/`, the snapshot's manifests): never a data file. `Ok(None)` if `dir` is gone (a
/// table or snapshot no longer there) or not a directory.
pub async fn children(catalog: &MountCatalog, dir: &Node) -> Result<Option<Vec<(String, Node)>>> {
    let entries = match dir {
        Node::Warehouse => namespace_entries(catalog, &[]),
        Node::Namespace(ns) => namespace_entries(catalog, ns),
        Node::Table(t) => {
            let Some(table) = catalog.table(*t) else {
                return Ok(None);
            };
            let mut v = Vec::new();
            if table.table().metadata().current_snapshot().is_some() {
                v.push(("current".to_string(), Node::Current(*t)));
            }
            v.push(("refs".to_string(), Node::RefsDir(*t)));
            v.push(("snapshots".to_string(), Node::SnapshotsDir(*t)));
            v.push(("schemas".to_string(), Node::SchemasDir(*t)));
            v.push((SNAPSHOTS_CSV.to_string(), Node::SnapshotsCsv(*t)));
            v.push((CHANGES.to_string(), Node::ChangesDir(*t)));
            v.push((RETENTION_CSV.to_string(), Node::RetentionCsv(*t)));
            v
        }
        Node::ChangesDir(t) => {
            let Some(table) = catalog.table(*t) else {
                return Ok(None);
            };
            let table = table.table();
            let m = table.metadata();
            m.snapshots_in_order()
                .into_iter()
                .filter_map(|s| {
                    let parent = s.parent_snapshot_id?;
                    m.snapshot(parent)?;
                    Some((
                        range_name(parent, s.snapshot_id),
                        Node::ChangeRange(*t, parent, s.snapshot_id),
                    ))
                })
                .collect()
        }
        Node::ChangeRange(t, from, to) => ChangeFile::ALL
            .iter()
            .map(|f| (f.name(), Node::Change(*t, *from, *to, *f)))
            .collect(),
        Node::RefsDir(t) => {
            let Some(table) = catalog.table(*t) else {
                return Ok(None);
            };
            let table = table.table();
            table
                .metadata()
                .refs
                .keys()
                .map(|name| (ref_file_name(name), Node::Ref(*t, name.clone())))
                .collect()
        }
        Node::SnapshotsDir(t) => {
            let Some(table) = catalog.table(*t) else {
                return Ok(None);
            };
            let table = table.table();
            table
                .metadata()
                .snapshots_in_order()
                .into_iter()
                .map(|s| {
                    let own = own_schema(&table, s);
                    (
                        s.snapshot_id.to_string(),
                        Node::Snapshot(*t, s.snapshot_id, own),
                    )
                })
                .collect()
        }
        Node::SchemasDir(t) => {
            let Some(table) = catalog.table(*t) else {
                return Ok(None);
            };
            let table = table.table();
            let mut ids: Vec<i32> = table
                .metadata()
                .schemas
                .iter()
                .map(|s| s.schema_id)
                .collect();
            ids.sort_unstable();
            ids.into_iter()
                .map(|id| (id.to_string(), Node::SchemaDir(*t, id)))
                .collect()
        }
        Node::SchemaDir(t, schema) => {
            let Some(table) = catalog.table(*t) else {
                return Ok(None);
            };
            let table = table.table();
            if table.metadata().schema(*schema).is_none() {
                return Ok(None);
            }
            table
                .metadata()
                .snapshots_in_order()
                .into_iter()
                .map(|s| {
                    (
                        s.snapshot_id.to_string(),
                        Node::Snapshot(*t, s.snapshot_id, *schema),
                    )
                })
                .collect()
        }
        Node::Snapshot(t, s, schema) => {
            let view = |format: Format| {
                (
                    format!("{DATA}.{}", format.extension()),
                    Node::View(ViewKey {
                        table: *t,
                        snapshot: *s,
                        schema: *schema,
                        scope: Scope::All,
                        format,
                    }),
                )
            };
            vec![
                view(Format::Csv),
                view(Format::Jsonl),
                view(Format::Parquet),
                (FILES.to_string(), Node::FilesDir(*t, *s, *schema)),
                (
                    PARTITIONS.to_string(),
                    Node::PartitionDir(*t, *s, *schema, Vec::new()),
                ),
                (
                    SNAPSHOT_JSON.to_string(),
                    Node::SnapshotJson(*t, *s, *schema),
                ),
            ]
        }
        Node::PartitionDir(t, s, schema, prefix) => {
            let Some(table) = catalog.table(*t) else {
                return Ok(None);
            };
            // The plan holds the manifests' partition tuples: no data file is read.
            let plan = table.plan(*s, *schema).await?;
            let Some((next, here)) = list_level(&plan.partitions, prefix) else {
                // The root lists even for a snapshot without data files.
                return Ok(prefix.is_empty().then(Vec::new));
            };
            let mut v = Vec::new();
            if let Some(i) = here {
                for format in Format::ALL {
                    let key = ViewKey {
                        table: *t,
                        snapshot: *s,
                        schema: *schema,
                        scope: Scope::Partition(i),
                        format,
                    };
                    v.push((format!("{DATA}.{}", format.extension()), Node::View(key)));
                }
            }
            for seg in next {
                let mut path = prefix.clone();
                path.push(seg.to_string());
                v.push((seg.to_string(), Node::PartitionDir(*t, *s, *schema, path)));
            }
            v
        }
        Node::FilesDir(t, s, schema) => {
            let Some(table) = catalog.table(*t) else {
                return Ok(None);
            };
            let plan = table.plan(*s, *schema).await?;
            let mut v = Vec::with_capacity(Format::ALL.len() * plan.file_names.len());
            for (i, stem) in plan.file_names.iter().enumerate() {
                for format in Format::ALL {
                    let key = ViewKey {
                        table: *t,
                        snapshot: *s,
                        schema: *schema,
                        scope: Scope::File(i),
                        format,
                    };
                    v.push((format!("{stem}.{}", format.extension()), Node::View(key)));
                }
            }
            v
        }
        _ => return Ok(None),
    };
    Ok(Some(entries))
}

/// The name of the change range directory from `from` to `to`.
pub fn range_name(from: i64, to: i64) -> String {
    format!("{from}..{to}")
}

/// The entry `name` of directory `dir`, if there is one. `changes/` also holds, beyond the
/// ranges it lists, any `<from>..<to>` whose start is an ancestor of its end (the core's rule);
/// a pair that is not is logged and not there.
pub async fn lookup(catalog: &MountCatalog, dir: &Node, name: &str) -> Result<Option<Node>> {
    if let Node::ChangesDir(t) = dir {
        let Some((from, to)) = name
            .split_once("..")
            .and_then(|(a, b)| Some((a.parse::<i64>().ok()?, b.parse::<i64>().ok()?)))
        else {
            return Ok(None);
        };
        let Some(table) = catalog.table(*t) else {
            return Ok(None);
        };
        let table = table.table();
        return Ok(
            match commits_between(table.metadata(), from, to, table.metadata_file()) {
                Ok(_) => Some(Node::ChangeRange(*t, from, to)),
                Err(e) => {
                    tracing::warn!("{CHANGES}/{name}: {e}");
                    None
                }
            },
        );
    }
    let children = children(catalog, dir).await?;
    Ok(children.and_then(|c| c.into_iter().find(|(n, _)| n == name).map(|(_, node)| node)))
}

/// The schema a snapshot id reads with (the core's rule): `snapshots/<id>`'s schema.
pub fn own_schema(table: &icefloe_core::Table, s: &icefloe_core::spec::Snapshot) -> i32 {
    table
        .read_schema(&icefloe_core::SnapshotSelector::Id(s.snapshot_id), Some(s))
        .schema_id
}

/// Whether a node still exists in the latest metadata. Nodes below a snapshot exist while
/// the snapshot does; a snapshot no longer in the metadata is gone for new lookups (files
/// already open keep reading it).
pub fn exists(catalog: &MountCatalog, node: &Node) -> bool {
    let table = |t: usize| catalog.table(t).map(|t| t.table());
    match node {
        Node::Warehouse | Node::Namespace(_) => true,
        Node::Current(t) => table(*t).is_some_and(|t| t.metadata().current_snapshot().is_some()),
        Node::Ref(t, name) => table(*t).is_some_and(|t| t.metadata().refs.contains_key(name)),
        n => match (n.table(), n.snapshot()) {
            (Some(t), Some(s)) => table(t).is_some_and(|t| {
                let m = t.metadata();
                m.snapshot(s).is_some() && n.range_start().is_none_or(|f| m.snapshot(f).is_some())
            }),
            (Some(t), None) => table(t).is_some(),
            _ => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ref_names_with_slashes() {
        assert_eq!(ref_file_name("feature/x%1"), "feature%2Fx%251");
        // What the hand-written escaper wrote before the percent-encoding crate did it.
        for (name, file) in [
            ("", ""),
            ("a b", "a b"),
            ("%25", "%2525"),
            ("..", ".."),
            ("日本/語", "日本%2F語"),
            ("a\u{1f}b", "a\u{1f}b"),
            ("c=t\\,:", "c=t\\,:"),
        ] {
            assert_eq!(ref_file_name(name), file, "{name:?}");
        }
    }
}
