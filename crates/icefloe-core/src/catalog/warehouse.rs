//! The Hadoop catalog layout on any store: a warehouse directory whose subdirectories are
//! namespaces (nested to any depth) and tables, a table being a directory whose `metadata/`
//! holds a `*.metadata.json` file or `version-hint.text`. Directories whose names start with
//! a dot are not listed.

use std::sync::Arc;

use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt};

use super::{Catalog, Namespace, TableIdent};
use crate::cache::Caches;
use crate::io::locate::is_metadata_file;
use crate::io::store::store_path;
use crate::io::{StorageConfig, TableIo};
use crate::{OpenOptions, Table};

/// How many directories are probed for `metadata/` at once when listing.
const PROBES_IN_FLIGHT: usize = 8;

/// A Hadoop-layout warehouse.
#[derive(Debug, Clone)]
pub struct Warehouse {
    location: String,
    io: TableIo,
    root: String,
    open: OpenOptions,
    caches: Arc<Caches>,
}

impl Warehouse {
    /// The warehouse at `location` (a path or URL), its tables opened with `open` (a
    /// [`StorageConfig`] alone, or every [`OpenOptions`] setting); nothing is read yet.
    pub fn new(
        location: &str,
        open: impl Into<OpenOptions>,
        caches: Arc<Caches>,
    ) -> crate::Result<Self> {
        let open = open.into();
        // Listings take paths inside the store (no scheme or bucket).
        let (io, _) = open.storage.open(location)?;
        let root = io.root().to_string();
        Ok(Warehouse {
            location: location.trim_end_matches('/').to_string(),
            io,
            root: root.trim_end_matches('/').to_string(),
            open,
            caches,
        })
    }

    /// The warehouse location as given (no trailing slash).
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The location of a table's directory: `<warehouse>/<level>/.../<name>`. Errors when a
    /// level or the name is not a directory name.
    pub fn table_location(&self, table: &TableIdent) -> crate::Result<String> {
        table_location(&self.location, table).map_err(|reason| crate::Error::Catalog {
            catalog: self.location.clone(),
            subject: table.to_string(),
            reason,
        })
    }

    /// `parts` joined as a path below the warehouse, each checked to be one directory name.
    fn relative(&self, parts: &[String], subject: &str) -> crate::Result<String> {
        relative_path(parts).map_err(|reason| crate::Error::Catalog {
            catalog: self.location.clone(),
            subject: subject.to_string(),
            reason,
        })
    }

    /// The directory of a namespace inside the store.
    fn dir(&self, ns: &Namespace) -> crate::Result<String> {
        let rel = self.relative(ns.levels(), &ns.to_string())?;
        Ok(join(&self.root, &rel))
    }

    /// The subdirectories of `dir`, each with whether it is a table, sorted by name. `None`
    /// when `dir` holds nothing at all (no such directory).
    async fn children(&self, dir: &str) -> crate::Result<Option<Vec<(String, bool)>>> {
        let Some((names, _)) = list(&self.io, dir).await? else {
            return Ok(None);
        };
        let probed: Vec<(String, bool)> = futures::stream::iter(names)
            .map(|n| async move {
                let t = has_metadata(&self.io, &join(dir, &n)).await?;
                Ok::<_, crate::Error>((n, t))
            })
            .buffered(PROBES_IN_FLIGHT)
            .try_collect()
            .await?;
        Ok(Some(probed))
    }

    fn no_namespace(&self, ns: &Namespace, reason: String) -> crate::Error {
        crate::Error::NoSuchNamespace {
            catalog: self.location.clone(),
            namespace: ns.to_string(),
            reason,
        }
    }

    /// Whether the parent of `ns` lists it as a subdirectory.
    async fn is_listed(&self, ns: &Namespace) -> crate::Result<bool> {
        let (Some(parent), Some(last)) = (ns.parent(), ns.levels().last()) else {
            return Ok(true);
        };
        Ok(list(&self.io, &self.dir(&parent)?)
            .await?
            .is_some_and(|(dirs, _)| dirs.contains(last)))
    }

    /// The children of a namespace, or the error saying it does not exist.
    async fn namespace_children(&self, ns: &Namespace) -> crate::Result<Vec<(String, bool)>> {
        let dir = self.dir(ns)?;
        if !ns.is_root() && has_metadata(&self.io, &dir).await? {
            return Err(self.no_namespace(
                ns,
                format!("{} is a table", self.io.display(&store_path(&dir))),
            ));
        }
        match self.children(&dir).await? {
            Some(c) => Ok(c),
            None if ns.is_root() => Ok(Vec::new()),
            // An empty directory (local files have them) is an empty namespace.
            None if self.is_listed(ns).await? => Ok(Vec::new()),
            None => Err(self.no_namespace(
                ns,
                format!("{}/ does not exist", self.io.display(&store_path(&dir))),
            )),
        }
    }
}

#[async_trait]
impl Catalog for Warehouse {
    fn name(&self) -> &str {
        &self.location
    }

    async fn list_namespaces(&self, parent: &Namespace) -> crate::Result<Vec<Namespace>> {
        Ok(self
            .namespace_children(parent)
            .await?
            .into_iter()
            .filter(|(_, table)| !table)
            .map(|(n, _)| parent.child(n))
            .collect())
    }

    async fn list_tables(&self, namespace: &Namespace) -> crate::Result<Vec<TableIdent>> {
        Ok(self
            .namespace_children(namespace)
            .await?
            .into_iter()
            .filter(|(_, table)| *table)
            .map(|(n, _)| TableIdent::new(namespace.clone(), n))
            .collect())
    }

    async fn load_table(&self, table: &TableIdent) -> crate::Result<Table> {
        let rel = self.relative(&table.path(), &table.to_string())?;
        if !has_metadata(&self.io, &join(&self.root, &rel)).await? {
            return Err(crate::Error::NoSuchTable {
                catalog: self.location.clone(),
                table: table.to_string(),
                reason: format!("{}/{rel}/metadata/ holds no metadata file", self.location),
            });
        }
        Table::open_with_options(
            &format!("{}/{rel}", self.location),
            self.caches.clone(),
            &self.open,
        )
        .await
    }
}

/// The path of a namespace or table below a warehouse: its levels (and name) joined by `/`.
/// Errors (saying why) when one is not a single directory name: empty, `.`, `..`, or holding
/// `/` or NUL, which would step out of its parent or name no directory.
pub fn relative_path(parts: &[String]) -> Result<String, String> {
    for p in parts {
        if p.is_empty() || p == "." || p == ".." || p.contains('/') || p.contains('\0') {
            return Err(format!(
                "{p:?} is not a directory name (empty, \".\", \"..\", or holds \"/\"), so no namespace or table of a Hadoop-layout warehouse has it"
            ));
        }
    }
    Ok(parts.join("/"))
}

/// The location of a table's directory in the warehouse at `warehouse`:
/// `<warehouse>/<level>/.../<name>`; errors as [`relative_path`].
pub fn table_location(warehouse: &str, table: &TableIdent) -> Result<String, String> {
    let rel = relative_path(&table.path())?;
    Ok(format!("{}/{rel}", warehouse.trim_end_matches('/')))
}

/// Whether `location` is one table rather than a warehouse: a metadata file's name, or a
/// directory whose `metadata/` holds a metadata file or the version hint.
pub async fn is_table_location(location: &str, storage: &StorageConfig) -> crate::Result<bool> {
    let trimmed = location.trim_end_matches('/');
    if is_metadata_file(trimmed.rsplit('/').next().unwrap_or(trimmed)) {
        return Ok(true);
    }
    let (io, _) = storage.open(location)?;
    has_metadata(&io, io.root().trim_end_matches('/')).await
}

/// Whether directory `dir` of the store is a table: its `metadata/` holds a metadata file or
/// `version-hint.text`.
async fn has_metadata(io: &TableIo, dir: &str) -> crate::Result<bool> {
    Ok(match list(io, &join(dir, "metadata")).await? {
        Some((_, files)) => files
            .iter()
            .any(|f| f == "version-hint.text" || is_metadata_file(f)),
        None => false,
    })
}

/// The subdirectory names (not starting with a dot, sorted) and file names directly under
/// `dir`; `None` when nothing is there.
async fn list(io: &TableIo, dir: &str) -> crate::Result<Option<(Vec<String>, Vec<String>)>> {
    // As the table's reads take it (a name the local store lists, like `t%5Cx` for `t\x`, is
    // taken as listed, not encoded twice).
    let prefix = store_path(dir.trim_matches('/'));
    let listing =
        match crate::io::relist::list_with_delimiter(io.store().as_ref(), Some(&prefix)).await {
            Ok(l) => l,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(crate::Error::from_store(io.display(&prefix), e)),
        };
    io.check_listing(
        &prefix,
        listing.common_prefixes.len() + listing.objects.len(),
    )?;
    if listing.common_prefixes.is_empty() && listing.objects.is_empty() {
        return Ok(None);
    }
    let mut dirs: Vec<String> = listing
        .common_prefixes
        .iter()
        .filter_map(|p| p.filename().map(str::to_string))
        .filter(|n| !n.starts_with('.'))
        .collect();
    dirs.sort();
    let files = listing
        .objects
        .iter()
        .filter_map(|o| o.location.filename().map(str::to_string))
        .collect();
    Ok(Some((dirs, files)))
}

fn join(dir: &str, name: &str) -> String {
    match (dir.trim_end_matches('/'), name) {
        (d, "") => d.to_string(),
        ("", n) => n.to_string(),
        (d, n) => format!("{d}/{n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::all_tables;

    fn table(root: &std::path::Path, rel: &str) {
        let m = root.join(rel).join("metadata");
        std::fs::create_dir_all(&m).unwrap();
        std::fs::write(m.join("v1.metadata.json"), "{}").unwrap();
    }

    /// A directory name with a character the store percent-encodes (`\`, `%`) is a table as
    /// its reads see it, alone or in a warehouse (it once listed as no table at all).
    #[tokio::test]
    async fn names_the_store_encodes_are_tables() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for name in ["t\\x", "p%41q", "s p"] {
            table(root, &format!("db/{name}"));
            let dir = root.join("db").join(name);
            let opts = StorageConfig::none();
            assert!(
                is_table_location(dir.to_str().unwrap(), &opts)
                    .await
                    .unwrap(),
                "{name}"
            );
        }
        let caches = Arc::new(Caches::new(16 << 20));
        let w = Warehouse::new(root.to_str().unwrap(), StorageConfig::none(), caches).unwrap();
        let names: Vec<_> = w
            .list_tables(&Namespace::new(["db"]))
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, ["p%41q", "s p", "t\\x"]);
    }

    #[tokio::test]
    async fn lists_nested_namespaces_and_tables() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        table(root, "db/b");
        table(root, "db/a");
        table(root, "a/b/deep");
        std::fs::create_dir_all(root.join("db/not_a_table/data")).unwrap();
        std::fs::create_dir_all(root.join(".hidden/t/metadata")).unwrap();
        std::fs::create_dir_all(root.join("db/empty_meta/metadata")).unwrap();
        let caches = Arc::new(Caches::new(16 << 20));
        let w = Warehouse::new(
            root.to_str().unwrap(),
            StorageConfig::none(),
            caches.clone(),
        )
        .unwrap();
        let top = w.list_namespaces(&Namespace::root()).await.unwrap();
        assert_eq!(top, [Namespace::new(["a"]), Namespace::new(["db"])]);
        let db = Namespace::new(["db"]);
        let names: Vec<_> = w
            .list_tables(&db)
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(
            w.list_namespaces(&db).await.unwrap(),
            [
                Namespace::new(["db", "empty_meta"]),
                Namespace::new(["db", "not_a_table"])
            ]
        );
        let all: Vec<String> = all_tables(&w)
            .await
            .unwrap()
            .iter()
            .map(|t| t.to_string())
            .collect();
        assert_eq!(all, ["a.b.deep", "db.a", "db.b"]);
        assert!(matches!(
            w.list_tables(&Namespace::new(["nope"])).await,
            Err(crate::Error::NoSuchNamespace { .. })
        ));
        assert!(matches!(
            w.list_tables(&Namespace::new(["db", "a"])).await,
            Err(crate::Error::NoSuchNamespace { .. })
        ));
        let missing = w
            .load_table(&TableIdent::new(db.clone(), "zzz"))
            .await
            .unwrap_err();
        assert!(
            matches!(missing, crate::Error::NoSuchTable { .. }),
            "{missing}"
        );
        assert!(missing.to_string().contains("db.zzz"), "{missing}");
        let bad = w
            .load_table(&TableIdent::new(db.clone(), "../db/a"))
            .await
            .unwrap_err();
        assert!(matches!(bad, crate::Error::Catalog { .. }), "{bad}");
        // A table directory is a table; its parent is a warehouse.
        let one = crate::catalog::open(
            root.join("db/a").to_str().unwrap(),
            StorageConfig::none(),
            caches.clone(),
        )
        .await
        .unwrap();
        assert_eq!(one.single_table().map(|t| t.name), Some("a".to_string()));
        let many = crate::catalog::open(root.to_str().unwrap(), StorageConfig::none(), caches)
            .await
            .unwrap();
        assert!(many.single_table().is_none());
    }
}
