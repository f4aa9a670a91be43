//! `--catalog NAME`: the catalog's properties from where PyIceberg users already keep them,
//! read as PyIceberg reads them: the first `.pyiceberg.yaml` in `$PYICEBERG_HOME`, the home
//! directory, the working directory (`catalog: <name>: <key>: <value>`, keys case-insensitive),
//! then `PYICEBERG_CATALOG__<NAME>__<KEY>` environment variables over it (`__` in a key is a
//! `.`, `_` a `-`: `PYICEBERG_CATALOG__PROD__REST__SIGV4_ENABLED` is `rest.sigv4-enabled`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use yaml_rust2::{Yaml, YamlLoader};

/// The file PyIceberg reads.
const FILE_NAME: &str = ".pyiceberg.yaml";

/// Why a catalog's configuration cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum CatalogConfigError {
    #[error("cannot read {0}: {1}")]
    Read(PathBuf, std::io::Error),
    #[error("{0} is not valid YAML: {1}")]
    Yaml(PathBuf, String),
    #[error("{path}: `catalog` must map catalog names to their properties")]
    Shape { path: PathBuf },
    #[error("no catalog named {name:?}: {where_}")]
    Unknown { name: String, where_: String },
    #[error("catalog {name:?} is of type {kind:?}; icefloe reads REST catalogs (type: rest)")]
    NotRest { name: String, kind: String },
}

/// The properties of catalog `name`, from the environment `env` (the process' own, passed in)
/// and the first `.pyiceberg.yaml` found in `dirs`.
pub fn load(
    name: &str,
    env: &[(String, String)],
    dirs: &[PathBuf],
) -> Result<BTreeMap<String, String>, CatalogConfigError> {
    let wanted = name.to_lowercase();
    let mut props = BTreeMap::new();
    let mut file = None;
    for dir in dirs {
        let path = dir.join(FILE_NAME);
        if path.is_file() {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| CatalogConfigError::Read(path.clone(), e))?;
            if let Some(p) = from_yaml(&text, &path, &wanted)? {
                props = p;
            }
            file = Some(path);
            break;
        }
    }
    props.extend(from_env(env, &wanted));
    if props.is_empty() {
        let where_ = match &file {
            Some(f) => format!("not in {} nor in PYICEBERG_CATALOG__{}__* variables", f.display(), env_name(&wanted)),
            None => format!(
                "no {FILE_NAME} (looked in $PYICEBERG_HOME, the home directory, the working directory) and no PYICEBERG_CATALOG__{}__* variables",
                env_name(&wanted)
            ),
        };
        return Err(CatalogConfigError::Unknown {
            name: name.to_string(),
            where_,
        });
    }
    if let Some(kind) = props
        .get("type")
        .filter(|t| !t.eq_ignore_ascii_case("rest"))
    {
        return Err(CatalogConfigError::NotRest {
            name: name.to_string(),
            kind: kind.clone(),
        });
    }
    Ok(props)
}

/// The directories PyIceberg looks in, in its order.
pub fn search_dirs(env: &[(String, String)]) -> Vec<PathBuf> {
    let get = |k: &str| {
        env.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| PathBuf::from(v))
    };
    let mut dirs: Vec<PathBuf> = [get("PYICEBERG_HOME"), get("HOME")]
        .into_iter()
        .flatten()
        .collect();
    if let Ok(cwd) = std::env::current_dir() {
        dirs.push(cwd);
    }
    dirs
}

fn env_name(lower: &str) -> String {
    lower.replace('-', "_").to_uppercase()
}

/// `catalog: <name>:` of a `.pyiceberg.yaml`; nested maps are flattened with dots.
fn from_yaml(
    text: &str,
    path: &Path,
    wanted: &str,
) -> Result<Option<BTreeMap<String, String>>, CatalogConfigError> {
    let docs = YamlLoader::load_from_str(text)
        .map_err(|e| CatalogConfigError::Yaml(path.to_path_buf(), e.to_string()))?;
    let Some(Yaml::Hash(top)) = docs.into_iter().next() else {
        return Ok(None);
    };
    let Some(catalogs) = top
        .iter()
        .find(|(k, _)| scalar(k).is_some_and(|k| k.eq_ignore_ascii_case("catalog")))
        .map(|(_, v)| v)
    else {
        return Ok(None);
    };
    let Yaml::Hash(catalogs) = catalogs else {
        return Err(CatalogConfigError::Shape {
            path: path.to_path_buf(),
        });
    };
    for (k, v) in catalogs {
        if scalar(k).is_some_and(|k| k.to_lowercase() == wanted) {
            let mut out = BTreeMap::new();
            flatten(v, "", &mut out);
            return Ok(Some(out));
        }
    }
    Ok(None)
}

fn flatten(v: &Yaml, prefix: &str, out: &mut BTreeMap<String, String>) {
    if let Yaml::Hash(h) = v {
        for (k, v) in h {
            if let Some(k) = scalar(k) {
                let key = if prefix.is_empty() {
                    k.to_lowercase()
                } else {
                    format!("{prefix}.{}", k.to_lowercase())
                };
                flatten(v, &key, out);
            }
        }
    } else if let Some(s) = scalar(v) {
        out.insert(prefix.to_string(), s);
    }
}

/// A YAML scalar as text (PyIceberg's strictyaml reads every value as a string).
fn scalar(v: &Yaml) -> Option<String> {
    match v {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// `PYICEBERG_CATALOG__<NAME>__<KEY>` variables of catalog `wanted`.
fn from_env(env: &[(String, String)], wanted: &str) -> Vec<(String, String)> {
    env.iter()
        .filter_map(|(k, v)| {
            let rest = k.to_lowercase().strip_prefix("pyiceberg_")?.to_string();
            let parts: Vec<String> = rest
                .splitn(3, "__")
                .map(|p| p.replace("__", ".").replace('_', "-"))
                .collect();
            match parts.as_slice() {
                [c, name, key] if c == "catalog" && name == wanted => {
                    Some((key.clone(), v.clone()))
                }
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(kv: &[(&str, &str)]) -> Vec<(String, String)> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn yaml_then_environment_as_pyiceberg_reads_them() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join(FILE_NAME),
            "catalog:\n  Prod:\n    uri: http://127.0.0.1:8181\n    credential: id:secret\n    rest.sigv4-enabled: true\n    rest-page-size: 2\n    s3:\n      endpoint: http://s3\n  other:\n    uri: http://x\n",
        )
        .unwrap();
        let e = env(&[
            ("PYICEBERG_CATALOG__PROD__REST__SIGNING_REGION", "eu-west-1"),
            ("PYICEBERG_CATALOG__PROD__URI", "http://override"),
            ("PYICEBERG_CATALOG__OTHER__TOKEN", "not-mine"),
        ]);
        let p = load("prod", &e, &[tmp.path().to_path_buf()]).unwrap();
        assert_eq!(p.get("uri").map(String::as_str), Some("http://override"));
        assert_eq!(p.get("credential").map(String::as_str), Some("id:secret"));
        assert_eq!(
            p.get("rest.sigv4-enabled").map(String::as_str),
            Some("true")
        );
        assert_eq!(
            p.get("rest.signing-region").map(String::as_str),
            Some("eu-west-1")
        );
        assert_eq!(p.get("rest-page-size").map(String::as_str), Some("2"));
        assert_eq!(p.get("s3.endpoint").map(String::as_str), Some("http://s3"));
        assert!(!p.contains_key("token"));
        let only_env = load(
            "envonly",
            &env(&[("PYICEBERG_CATALOG__ENVONLY__URI", "http://e")]),
            &[],
        )
        .unwrap();
        assert_eq!(only_env.get("uri").map(String::as_str), Some("http://e"));
        let missing = load("nope", &e, &[tmp.path().to_path_buf()])
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("no catalog named \"nope\"")
                && missing.contains("PYICEBERG_CATALOG__NOPE__"),
            "{missing}"
        );
        std::fs::write(
            tmp.path().join(FILE_NAME),
            "catalog:\n  g:\n    type: glue\n",
        )
        .unwrap();
        let glue = load("g", &[], &[tmp.path().to_path_buf()])
            .unwrap_err()
            .to_string();
        assert!(glue.contains("type \"glue\""), "{glue}");
    }
}
