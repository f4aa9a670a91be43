//! Finding a table's current metadata file, as ClickHouse and the Hadoop catalog do:
//! an explicit metadata file wins; else `metadata/version-hint.text`; else the highest
//! `vN.metadata.json` or `NNNNN-<uuid>.metadata.json` (gzip-compressed forms included). With
//! ClickHouse's settings ([`MetadataSelection`]) the candidates can be limited to one
//! `table-uuid` and ordered by `last-updated-ms`; names without a version
//! (`vfinal.metadata.json`) are always ordered by `last-updated-ms`.

use super::store::TableIo;

/// Where a table lives, once resolved: its root (inside the store) and its metadata file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Table root directory inside the store (no trailing slash).
    pub root: String,
    /// Path of the chosen metadata file inside the store.
    pub metadata_file: String,
}

/// How to choose a table root's metadata file: ClickHouse's Iceberg table settings
/// `iceberg_metadata_file_path`, `iceberg_metadata_table_uuid` and
/// `iceberg_recent_metadata_file_by_last_updated_ms_field`. The default is the Hadoop
/// catalog's rule (version hint, else the highest version).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetadataSelection {
    /// This metadata file: an absolute path or URL, or a path relative to the table root
    /// (`metadata/v3.metadata.json`) or to its `metadata/` directory (`v3.metadata.json`).
    pub metadata_file: Option<String>,
    /// Only metadata files whose `table-uuid` is this one (compared case-insensitively).
    pub table_uuid: Option<String>,
    /// The candidate with the greatest `last-updated-ms`, not the highest version number.
    pub latest_by_last_updated_ms: bool,
}

impl MetadataSelection {
    /// Whether choosing needs every candidate's contents (not only its name).
    fn reads_candidates(&self) -> bool {
        self.table_uuid.is_some() || self.latest_by_last_updated_ms
    }
}

/// Whether a file name is a table metadata file (plain or gzip).
pub fn is_metadata_file(name: &str) -> bool {
    name.ends_with(".metadata.json") || name.ends_with(".metadata.json.gz")
}

/// The version number a metadata file name carries: `v12.metadata.json` → 12,
/// `00012-<uuid>.metadata.json` → 12, `v3.gz.metadata.json` → 3.
pub fn metadata_version(name: &str) -> Option<u64> {
    let digits = name.strip_prefix('v').unwrap_or(name);
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    if end == 0 {
        return None;
    }
    let rest = &digits[end..];
    if !(rest.starts_with('.') || rest.starts_with('-')) {
        return None;
    }
    digits[..end].parse().ok()
}

/// Resolves `path` (inside the store): a metadata file, or a table root directory.
/// Errors say what was looked for.
pub async fn locate(io: &TableIo, path: &str) -> crate::Result<Located> {
    locate_with(io, path, &MetadataSelection::default()).await
}

/// Like [`locate`], choosing a table root's metadata file as `sel` says. A `path` naming a
/// metadata file is taken as it is (the caller checks its `table-uuid`).
pub async fn locate_with(
    io: &TableIo,
    path: &str,
    sel: &MetadataSelection,
) -> crate::Result<Located> {
    let path = path.trim_end_matches('/');
    let name = path.rsplit('/').next().unwrap_or(path);
    if is_metadata_file(name) {
        let dir = path.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
        let root = match dir.rsplit_once('/') {
            Some((parent, "metadata")) => parent.to_string(),
            _ if dir == "metadata" => String::new(),
            _ => dir.to_string(),
        };
        return Ok(Located {
            root,
            metadata_file: path.to_string(),
        });
    }
    let meta_dir = format!("{path}/metadata");
    let hint = format!("{meta_dir}/version-hint.text");
    let not_found = |reason: String| crate::Error::Location {
        location: path.to_string(),
        reason,
    };
    if let Some(f) = &sel.metadata_file {
        return explicit(io, path, f).await;
    }
    // The hint is read while the directory is listed (one round trip, not two, before the
    // metadata file); what it says counts only when the listing shows it.
    let (files, hint_read) = futures::join!(
        io.list_dir(&meta_dir),
        io.read_capped(&hint, super::limits::Capped::VersionHint)
    );
    let files = files?;
    let metadata_files: Vec<&String> = files.iter().filter(|f| is_metadata_file(f)).collect();
    let unversioned = metadata_files.iter().any(|f| metadata_version(f).is_none());
    if sel.reads_candidates() || (unversioned && !files.iter().any(|f| f == "version-hint.text")) {
        let f = by_contents(io, &meta_dir, &metadata_files, sel).await?;
        return Ok(Located {
            root: path.to_string(),
            metadata_file: format!("{meta_dir}/{f}"),
        });
    }
    if files.iter().any(|f| f == "version-hint.text") {
        let text = hint_read?;
        let v = String::from_utf8_lossy(&text).trim().to_string();
        let mut candidates = Vec::new();
        if v.chars().all(|c| c.is_ascii_digit()) && !v.is_empty() {
            for form in [
                "v{}.metadata.json",
                "v{}.gz.metadata.json",
                "v{}.metadata.json.gz",
            ] {
                candidates.push(form.replace("{}", &v));
            }
            let n: u64 = v.parse().unwrap_or(0);
            candidates.extend(
                files
                    .iter()
                    .filter(|f| is_metadata_file(f) && metadata_version(f) == Some(n))
                    .cloned(),
            );
        } else if is_metadata_file(&v) {
            candidates.push(v.rsplit('/').next().unwrap_or(&v).to_string());
        } else {
            candidates.push(format!("{v}.metadata.json"));
        }
        if let Some(f) = candidates.iter().find(|c| files.contains(c)) {
            return Ok(Located {
                root: path.to_string(),
                metadata_file: format!("{meta_dir}/{f}"),
            });
        }
        return Err(not_found(format!(
            "metadata/version-hint.text says {v:?} but no metadata file {} exists",
            candidates.first().cloned().unwrap_or_default()
        )));
    }
    let best = files
        .iter()
        .filter(|f| is_metadata_file(f))
        .filter_map(|f| metadata_version(f).map(|v| (v, f)))
        .max();
    match best {
        Some((_, f)) => Ok(Located {
            root: path.to_string(),
            metadata_file: format!("{meta_dir}/{f}"),
        }),
        None => Err(not_found(format!(
            "no metadata/version-hint.text and no *.metadata.json in {meta_dir}"
        ))),
    }
}

/// An explicit metadata file: absolute, or relative to the table root or its `metadata/`.
async fn explicit(io: &TableIo, root: &str, file: &str) -> crate::Result<Located> {
    let absolute = !super::location::Location::parse(file).is_relative();
    let candidates = if absolute {
        vec![file.to_string()]
    } else {
        let rel = file.trim_start_matches("./");
        vec![format!("{root}/{rel}"), format!("{root}/metadata/{rel}")]
    };
    for c in &candidates {
        if io.exists(c).await? {
            return Ok(Located {
                root: root.to_string(),
                metadata_file: c.clone(),
            });
        }
    }
    Err(crate::Error::Location {
        location: root.to_string(),
        reason: format!(
            "the metadata file {file} does not exist (looked for {})",
            candidates.join(", ")
        ),
    })
}

/// Chooses among `names` (metadata files in `dir`) by their contents: only those with the
/// wanted `table-uuid`, then the greatest `last-updated-ms` (when asked, or when a name carries
/// no version), else the highest version; ties go to the higher version, then the name.
async fn by_contents(
    io: &TableIo,
    dir: &str,
    names: &[&String],
    sel: &MetadataSelection,
) -> crate::Result<String> {
    let mut candidates = Vec::new();
    let mut uuids = Vec::new();
    for name in names {
        let p = format!("{dir}/{name}");
        let shown = io.shown(&p);
        let v = crate::io::json::parse_json(
            &io.read_capped(&p, super::limits::Capped::Metadata).await?,
            &shown,
            io.limits(),
        )?;
        let uuid = v
            .get("table-uuid")
            .and_then(|u| u.as_str())
            .map(str::to_string);
        if let Some(want) = &sel.table_uuid {
            if !uuid
                .as_deref()
                .is_some_and(|u| u.eq_ignore_ascii_case(want))
            {
                uuids.push(uuid.unwrap_or_else(|| "none".into()));
                continue;
            }
        }
        let ms = v
            .get("last-updated-ms")
            .and_then(|m| m.as_i64())
            .ok_or_else(|| {
                crate::Error::metadata(&shown, "no last-updated-ms (required by the spec)")
            })?;
        candidates.push((ms, metadata_version(name), (*name).clone()));
    }
    let unversioned = candidates.iter().any(|(_, v, _)| v.is_none());
    let best = if sel.latest_by_last_updated_ms || unversioned {
        candidates
            .into_iter()
            .max_by(|a, b| (a.0, a.1, &a.2).cmp(&(b.0, b.1, &b.2)))
    } else {
        candidates
            .into_iter()
            .max_by(|a, b| (a.1, a.0, &a.2).cmp(&(b.1, b.0, &b.2)))
    };
    best.map(|(_, _, name)| name)
        .ok_or_else(|| crate::Error::Location {
            location: dir.to_string(),
            reason: match &sel.table_uuid {
                Some(want) => {
                    uuids.sort();
                    uuids.dedup();
                    format!(
                        "no metadata file has table-uuid {want} (found: {})",
                        if uuids.is_empty() {
                            "no metadata files".into()
                        } else {
                            uuids.join(", ")
                        }
                    )
                }
                None => format!("no *.metadata.json in {dir}"),
            },
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_names() {
        assert_eq!(metadata_version("v12.metadata.json"), Some(12));
        assert_eq!(metadata_version("v3.gz.metadata.json"), Some(3));
        assert_eq!(
            metadata_version("00012-9f1c2e43-1b7a-4c7e-8d52-bbbf2c1f2b11.metadata.json"),
            Some(12)
        );
        assert_eq!(metadata_version("version-hint.text"), None);
    }
}
