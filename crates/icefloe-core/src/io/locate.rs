//! Finding a table's current metadata file, as ClickHouse and the Hadoop catalog do:
//! an explicit metadata file wins; else `metadata/version-hint.text`; else the highest
//! `vN.metadata.json` or `NNNNN-<uuid>.metadata.json` (gzip-compressed forms included).

use std::io::Read;

use super::store::TableIo;

/// Where a table lives, once resolved: its root (inside the store) and its metadata file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Table root directory inside the store (no trailing slash).
    pub root: String,
    /// Path of the chosen metadata file inside the store.
    pub metadata_file: String,
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
    let files = io.list_dir(&meta_dir).await?;
    if files.iter().any(|f| f == "version-hint.text") {
        let text = io.read(&hint).await?;
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

/// Decompresses gzip metadata (`*.gz.metadata.json`, `*.metadata.json.gz`, or any file that
/// starts with the gzip magic); other bytes are returned as they are.
pub fn maybe_gunzip(bytes: &[u8], path: &str) -> crate::Result<Vec<u8>> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut out)
            .map_err(|e| crate::Error::metadata(path, format!("corrupt gzip: {e}")))?;
        Ok(out)
    } else {
        Ok(bytes.to_vec())
    }
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
