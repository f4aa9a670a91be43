//! Opening the table a command names, with an error a person understands when the path is not
//! a table: it does not exist, it is a warehouse (the tables under it are listed), or it is a
//! file of another kind (which kind is said).

use std::io::Read;
use std::path::{Path, PathBuf};

use icefloe_core::catalog::{all_tables, TablePath, Warehouse};
use icefloe_core::io::locate::is_metadata_file;
use icefloe_core::io::{Location, StorageConfig};
use icefloe_core::{OpenOptions, Table};

/// Why a local path given as `<TABLE>` is not a table.
#[derive(Debug, thiserror::Error)]
pub enum NotATable {
    #[error("no such directory: {0}")]
    NoSuchDirectory(PathBuf),
    #[error("no such file: {0}")]
    NoSuchFile(PathBuf),
    #[error("{path} is a warehouse, not a table; the tables under it: {list} (give one of them, e.g. {example})", list = list(.tables), example = .path.join(&.tables[0]).display())]
    Warehouse { path: PathBuf, tables: Vec<String> },
    #[error("{path} is the metadata directory of the table {}; give the table's directory", .table.display())]
    MetadataDir { path: PathBuf, table: PathBuf },
    #[error("{path} is {kind}, not a table: give the table's directory (the one holding metadata/) or one of its *.metadata.json files")]
    File { path: PathBuf, kind: &'static str },
    #[error("{0} is not a table: it has no metadata/ directory and there is no table under it")]
    EmptyDirectory(PathBuf),
}

/// The table names, the first ten.
fn list(tables: &[String]) -> String {
    let mut s = tables
        .iter()
        .take(10)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if tables.len() > 10 {
        s.push_str(&format!(" and {} more", tables.len() - 10));
    }
    s
}

/// Opens `location` through the core's catalog layer (one table by path or URL) as `opts`
/// say; if that fails and `location` is a local path that is not a table, says what it is
/// instead of the core's error about the missing metadata.
pub async fn open(location: &str, opts: &OpenOptions) -> anyhow::Result<Table> {
    let caches = icefloe_core::cache::Caches::global();
    match TablePath::new(location, opts.clone(), caches).load().await {
        Ok(t) => Ok(t),
        Err(e) => Err(match local_path(location) {
            Some(p) => match diagnose(&p).await {
                Some(why) => why.into(),
                None => e.into(),
            },
            None => e.into(),
        }),
    }
}

/// The error for a local `location` that does not exist.
pub fn missing(location: &str) -> Option<NotATable> {
    let p = local_path(location)?;
    if std::fs::metadata(&p).is_ok() {
        return None;
    }
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    Some(if is_metadata_file(name) {
        NotATable::NoSuchFile(p)
    } else {
        NotATable::NoSuchDirectory(p)
    })
}

/// The local path `location` names (as the core parses it), if it is local.
fn local_path(location: &str) -> Option<PathBuf> {
    let l = Location::parse(location);
    l.is_local().then(|| PathBuf::from(l.path))
}

/// What `path` is when it is not a table; `None` when it looks like one (then the core's
/// error stands: it names the file and the rule broken).
pub async fn diagnose(path: &Path) -> Option<NotATable> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if let Some(m) = missing(path.to_str()?) {
        return Some(m);
    }
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_file() {
        return (!is_metadata_file(name)).then(|| NotATable::File {
            path: path.to_path_buf(),
            kind: file_kind(path),
        });
    }
    if path.join("metadata").is_dir() {
        return None;
    }
    let has_metadata_files = std::fs::read_dir(path)
        .ok()?
        .flatten()
        .any(|e| e.file_name().to_str().is_some_and(is_metadata_file));
    if name == "metadata" && has_metadata_files {
        return Some(NotATable::MetadataDir {
            path: path.to_path_buf(),
            table: path.parent().unwrap_or(path).to_path_buf(),
        });
    }
    let tables = tables_under(path).await;
    Some(if tables.is_empty() {
        NotATable::EmptyDirectory(path.to_path_buf())
    } else {
        NotATable::Warehouse {
            path: path.to_path_buf(),
            tables,
        }
    })
}

/// The tables below `dir` (a warehouse or one of its namespaces), as the core's warehouse
/// catalog lists them, as relative paths, sorted.
async fn tables_under(dir: &Path) -> Vec<String> {
    let Some(location) = dir.to_str() else {
        return Vec::new();
    };
    let caches = icefloe_core::cache::Caches::global();
    let Ok(w) = Warehouse::new(location, StorageConfig::none(), caches) else {
        return Vec::new();
    };
    all_tables(&w)
        .await
        .map(|t| t.iter().map(|t| t.path().join("/")).collect())
        .unwrap_or_default()
}

/// What kind of file this is, from its first bytes (and its name for the version hint).
fn file_kind(path: &Path) -> &'static str {
    if path.file_name().is_some_and(|n| n == "version-hint.text") {
        return "a table's version hint (metadata/version-hint.text)";
    }
    let mut head = [0u8; 4];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    match &head[..n] {
        b"PAR1" => "a Parquet file (a data or delete file)",
        b"Obj\x01" => "an Avro file (a manifest or manifest list)",
        b"PFA1" => "a Puffin file (deletion vectors or statistics)",
        [0x1f, 0x8b, ..] => "a gzip file (gzip table metadata is named *.metadata.json.gz)",
        [b'{', ..] | [b'[', ..] => "a JSON file (table metadata files are named *.metadata.json)",
        [] => "an empty file",
        _ => "a file of another kind",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn says_what_a_path_is() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("db/b/metadata")).unwrap();
        std::fs::write(root.join("db/b/metadata/v1.metadata.json"), "{}").unwrap();
        std::fs::create_dir_all(root.join("db/a/metadata")).unwrap();
        std::fs::create_dir_all(root.join("db/a/data")).unwrap();
        std::fs::write(root.join("db/a/metadata/v1.metadata.json"), "{}").unwrap();
        std::fs::write(root.join("db/a/data/f.parquet"), b"PAR1....").unwrap();

        let w = diagnose(root).await.map(|d| d.to_string()).unwrap();
        assert!(
            w.contains("is a warehouse") && w.contains("db/a, db/b"),
            "{w}"
        );
        let ns = diagnose(&root.join("db"))
            .await
            .map(|d| d.to_string())
            .unwrap();
        assert!(ns.contains(": a, b (give"), "{ns}");
        assert_eq!(
            diagnose(&root.join("db/a")).await.map(|d| d.to_string()),
            None
        );
        assert_eq!(
            diagnose(&root.join("db/a/metadata/v1.metadata.json"))
                .await
                .map(|d| d.to_string()),
            None
        );
        let m = diagnose(&root.join("db/a/metadata"))
            .await
            .map(|d| d.to_string())
            .unwrap();
        assert!(m.contains("metadata directory of the table"), "{m}");
        let f = diagnose(&root.join("db/a/data/f.parquet"))
            .await
            .map(|d| d.to_string())
            .unwrap();
        assert!(f.contains("is a Parquet file"), "{f}");
        let d = diagnose(&root.join("db/a/data"))
            .await
            .map(|d| d.to_string())
            .unwrap();
        assert!(d.contains("no table under it"), "{d}");
        let none = diagnose(&root.join("nope"))
            .await
            .map(|d| d.to_string())
            .unwrap();
        assert!(none.starts_with("no such directory: "), "{none}");
    }
}
