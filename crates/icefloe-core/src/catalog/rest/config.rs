//! A REST catalog's properties, named as PyIceberg's `~/.pyiceberg.yaml` and Iceberg Java name
//! them (`uri`, `warehouse`, `credential`, `token`, `scope`, `oauth2-server-uri`,
//! `rest.sigv4-enabled`, `rest.signing-name`, `rest.signing-region`, `header.<name>`,
//! `rest-page-size`, and the storage keys `s3.*`, `adls.*`, `gcs.*`), and how the catalog's
//! `GET /v1/config` answer is merged into them.

use std::collections::BTreeMap;

/// Keys whose values are secrets: never shown by `Debug` or in messages.
const SECRET_KEYS: &[&str] = &["credential", "token", "secret", "key", "password", "sas"];

/// The properties of one REST catalog. `Debug` shows secret values as `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct RestConfig {
    name: String,
    props: BTreeMap<String, String>,
}

impl std::fmt::Debug for RestConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown: BTreeMap<&str, &str> = self
            .props
            .iter()
            .map(|(k, v)| {
                let secret = SECRET_KEYS.iter().any(|s| k.contains(s));
                (k.as_str(), if secret { "***" } else { v.as_str() })
            })
            .collect();
        f.debug_struct("RestConfig")
            .field("name", &self.name)
            .field("props", &shown)
            .finish()
    }
}

impl RestConfig {
    /// The catalog `name` (how messages name it) with `props`; a later key overrides an earlier
    /// one. Errors: no `uri`, or one that is not an http(s) URL.
    pub fn new(
        name: impl Into<String>,
        props: impl IntoIterator<Item = (String, String)>,
    ) -> crate::Result<RestConfig> {
        let config = RestConfig {
            name: name.into(),
            props: props.into_iter().collect(),
        };
        let uri = config
            .get("uri")
            .ok_or_else(|| config.error("no `uri` configured"))?;
        match url::Url::parse(uri) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(config),
            _ => Err(config.error(&format!("`uri` {uri:?} is not an http:// or https:// URL"))),
        }
    }

    /// The catalog's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A property, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.props.get(key).map(String::as_str)
    }

    /// Every property.
    pub fn props(&self) -> &BTreeMap<String, String> {
        &self.props
    }

    /// The catalog's base URI, without a trailing slash.
    pub fn uri(&self) -> &str {
        self.get("uri").unwrap_or_default().trim_end_matches('/')
    }

    /// A boolean property (`true`/`false`, any case); absent is `false`.
    pub fn flag(&self, key: &str) -> crate::Result<bool> {
        match self.get(key).map(str::to_ascii_lowercase).as_deref() {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(v) => Err(self.error(&format!("`{key}` must be true or false, not {v:?}"))),
        }
    }

    /// `rest-page-size`: how many entries a listing asks for per page (none: the server's).
    pub fn page_size(&self) -> crate::Result<Option<u32>> {
        match self.get("rest-page-size") {
            None => Ok(None),
            Some(v) => match v.parse::<u32>() {
                Ok(n) if n > 0 => Ok(Some(n)),
                _ => Err(self.error(&format!(
                    "`rest-page-size` must be a positive number, not {v:?}"
                ))),
            },
        }
    }

    /// Extra request headers: `header.<name>` properties.
    pub fn headers(&self) -> Vec<(String, String)> {
        self.props
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("header.")?.to_string(), v.clone())))
            .collect()
    }

    /// The configuration a client uses after `GET /v1/config` (spec: the server's `defaults`
    /// are overridden by the client's properties, which are overridden by the server's
    /// `overrides`).
    pub fn merged(
        &self,
        defaults: &BTreeMap<String, String>,
        overrides: &BTreeMap<String, String>,
    ) -> RestConfig {
        let mut props = defaults.clone();
        props.extend(self.props.clone());
        props.extend(overrides.clone());
        RestConfig {
            name: self.name.clone(),
            props,
        }
    }

    /// A configuration error about this catalog.
    pub(crate) fn error(&self, reason: &str) -> crate::Error {
        crate::Error::Catalog {
            catalog: self.name.clone(),
            subject: "configuration".to_string(),
            reason: reason.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(kv: &[(&str, &str)]) -> Vec<(String, String)> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn overrides_beat_client_properties_which_beat_defaults() {
        let c = RestConfig::new(
            "prod",
            props(&[("uri", "http://h/"), ("a", "client"), ("b", "client")]),
        )
        .unwrap();
        let d = props(&[("a", "default"), ("c", "default")])
            .into_iter()
            .collect();
        let o = props(&[("b", "override")]).into_iter().collect();
        let m = c.merged(&d, &o);
        assert_eq!(m.get("a"), Some("client"));
        assert_eq!(m.get("b"), Some("override"));
        assert_eq!(m.get("c"), Some("default"));
        assert_eq!(m.uri(), "http://h");
    }

    #[test]
    fn secrets_stay_out_of_debug_and_bad_values_are_refused() {
        let c = RestConfig::new(
            "p",
            props(&[
                ("uri", "https://x"),
                ("credential", "id:s3cr3t"),
                ("token", "t0k"),
            ]),
        )
        .unwrap();
        let d = format!("{c:?}");
        assert!(!d.contains("s3cr3t") && !d.contains("t0k"), "{d}");
        assert!(RestConfig::new("p", props(&[]))
            .unwrap_err()
            .to_string()
            .contains("no `uri`"));
        assert!(RestConfig::new("p", props(&[("uri", "s3://b")])).is_err());
        let bad = RestConfig::new(
            "p",
            props(&[
                ("uri", "http://x"),
                ("rest-page-size", "0"),
                ("rest.sigv4-enabled", "yes"),
            ]),
        )
        .unwrap();
        assert!(bad.page_size().is_err());
        assert!(bad.flag("rest.sigv4-enabled").is_err());
        assert!(!bad.flag("absent").unwrap());
    }
}
