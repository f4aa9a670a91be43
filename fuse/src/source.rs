//! What is being mounted: one table, or a warehouse root whose `<namespace>/<table>/`
//! directories are tables (the Hadoop catalog layout).

use std::path::Path;

use crate::error::{FuseError, Result};

/// One table found under the mounted location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSource {
    /// Directory names leading to the table inside the mount: empty for a table mounted on its
    /// own, `[namespace, table]` inside a warehouse.
    pub path: Vec<String>,
    /// The location the core opens.
    pub location: String,
}

/// Whether `location` is one table (it has `metadata/`, is a metadata file, or is a remote
/// URL, which is always taken as a table).
pub fn is_table(location: &str) -> bool {
    let local = location.strip_prefix("file://").unwrap_or(location);
    if location.contains("://") && !location.starts_with("file://") {
        return true;
    }
    let p = Path::new(local);
    p.join("metadata").is_dir() || (p.is_file() && local.ends_with(".metadata.json"))
}

/// The tables at `location`: the location itself if it is a table, else every
/// `<namespace>/<table>/` below it that has `metadata/`, sorted by name.
/// Errors: an unreadable directory, or no table at all.
pub fn discover(location: &str) -> Result<Vec<TableSource>> {
    if is_table(location) {
        return Ok(vec![TableSource {
            path: Vec::new(),
            location: location.to_string(),
        }]);
    }
    let root = Path::new(location.strip_prefix("file://").unwrap_or(location));
    let mut found = Vec::new();
    for ns in sorted_dirs(root)? {
        for table in sorted_dirs(&root.join(&ns))? {
            let dir = root.join(&ns).join(&table);
            if dir.join("metadata").is_dir() {
                found.push(TableSource {
                    path: vec![ns.clone(), table],
                    location: dir.to_string_lossy().into_owned(),
                });
            }
        }
    }
    if found.is_empty() {
        return Err(FuseError::NoTables(location.to_string()));
    }
    Ok(found)
}

/// Names of the subdirectories of `dir` that are valid UTF-8, sorted.
fn sorted_dirs(dir: &Path) -> Result<Vec<String>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| FuseError::io(format!("cannot list {}", dir.display()), e))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_tables_two_levels_down() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("db/b/metadata")).unwrap();
        std::fs::create_dir_all(tmp.path().join("db/a/metadata")).unwrap();
        std::fs::create_dir_all(tmp.path().join("db/not_a_table/data")).unwrap();
        let root = tmp.path().to_str().unwrap();
        let found = discover(root).unwrap();
        let paths: Vec<_> = found.iter().map(|t| t.path.join("/")).collect();
        assert_eq!(paths, ["db/a", "db/b"]);
        assert!(found[0].location.ends_with("db/a"));
        // The table itself.
        let one = discover(&found[1].location).unwrap();
        assert_eq!(
            one,
            vec![TableSource {
                path: vec![],
                location: found[1].location.clone()
            }]
        );
        // Nothing there.
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            discover(empty.path().to_str().unwrap()),
            Err(FuseError::NoTables(_))
        ));
        assert!(is_table("s3://bucket/db/t"));
    }
}
