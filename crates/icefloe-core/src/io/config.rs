//! Storage configuration handed in by the caller (as delta-kernel-rs's engine hands its kernel
//! the storage): `object_store` option keys, whether ambient credentials may be used, and the
//! caller's environment variables that count as ambient credentials. The core never reads the
//! process environment for it; a front-end that wants `AWS_*` variables honoured passes them
//! in (see [`StorageConfig::with_env`]). The storage option keys the core reads and their
//! defaults are here too.

pub use super::ranged::{BYTES_IN_FLIGHT, IN_FLIGHT_KEY, PART_BYTES, PART_KEY};

/// How to reach storage: options (credentials, region, endpoint) and the ambient-credential
/// policy. Cheap to clone. `Debug` shows option names only, never their values (secrets).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct StorageConfig {
    /// `object_store` configuration keys (`aws_access_key_id`, `aws_endpoint`,
    /// `azure_storage_account_name`, `google_service_account_key`, ...), lower case.
    pub options: Vec<(String, String)>,
    /// Whether credentials found on the machine (instance metadata, web identity, workload
    /// identity) may be used when the options hold none.
    pub ambient: Ambient,
    /// The caller's storage variables (`AWS_*`, `AZURE_*`, `GOOGLE_*`, lower-cased), ambient
    /// credentials like the machine's: under the options for every store with
    /// [`Ambient::Use`], for the table's own store with [`Ambient::TableOnly`], never with
    /// [`Ambient::Refuse`].
    pub env: Vec<(String, String)>,
}

impl StorageConfig {
    /// Options and policy as given. Keys are lower-cased; a later key overrides an earlier one.
    pub fn new(options: impl IntoIterator<Item = (String, String)>, ambient: Ambient) -> Self {
        let mut out: Vec<(String, String)> = Vec::new();
        for (k, v) in options {
            let k = k.to_ascii_lowercase();
            out.retain(|(o, _)| *o != k);
            out.push((k, v));
        }
        StorageConfig {
            options: out,
            ambient,
            env: Vec::new(),
        }
    }

    /// Local files only: no options, no ambient credentials.
    pub fn none() -> Self {
        StorageConfig::new([], Ambient::Refuse)
    }

    /// `options` over the storage variables of an environment (`AWS_*`, `AZURE_*`, `GOOGLE_*`,
    /// as `object_store` names them), with ambient credentials allowed: what a command-line
    /// user expects. The caller passes the environment (`std::env::vars()`).
    pub fn with_env(
        env: impl IntoIterator<Item = (String, String)>,
        options: impl IntoIterator<Item = (String, String)>,
    ) -> Self {
        StorageConfig::new(options, Ambient::Use).with_ambient_env(env)
    }

    /// This configuration with `env`'s storage variables as [`StorageConfig::env`] (other
    /// variables are dropped): a server lending its own environment's credentials passes it
    /// with [`Ambient::TableOnly`].
    pub fn with_ambient_env(mut self, env: impl IntoIterator<Item = (String, String)>) -> Self {
        self.env = env
            .into_iter()
            .filter(|(k, _)| {
                k.starts_with("AWS_") || k.starts_with("AZURE_") || k.starts_with("GOOGLE_")
            })
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect();
        self
    }

    /// The options a store gets: the ambient variables (when this configuration may use
    /// them), then the options, a later key overriding an earlier one.
    pub fn effective_options(&self) -> Vec<(String, String)> {
        let env = match self.ambient {
            Ambient::Refuse => &[][..],
            Ambient::Use | Ambient::TableOnly => &self.env[..],
        };
        let mut out: Vec<(String, String)> = Vec::new();
        for (k, v) in env.iter().chain(&self.options) {
            out.retain(|(o, _)| o != k);
            out.push((k.clone(), v.clone()));
        }
        out
    }

    /// The configuration for a store other than the table's own: with
    /// [`Ambient::TableOnly`], neither the machine's credentials nor the ambient variables.
    pub fn for_other_store(&self) -> StorageConfig {
        match self.ambient {
            Ambient::TableOnly => StorageConfig {
                options: self.options.clone(),
                ambient: Ambient::Refuse,
                env: Vec::new(),
            },
            _ => self.clone(),
        }
    }

    /// Reads one `key=value` option (`--storage-option`), checking that some store knows the
    /// key: `object_store` ignores keys it does not know, so a misspelt credential would
    /// otherwise be dropped without a word.
    pub fn parse_option(text: &str) -> crate::Result<(String, String)> {
        let Some((k, v)) = text.split_once('=') else {
            return Err(crate::Error::InvalidArgument(format!(
                "storage option {text:?} is not of the form key=value (e.g. aws_region=eu-west-1)"
            )));
        };
        let key = k.trim().to_ascii_lowercase();
        if !is_known_key(&key) {
            return Err(crate::Error::InvalidArgument(format!(
                "unknown storage option {key:?}: give an object_store configuration key such as aws_region, aws_endpoint, aws_access_key_id, azure_storage_account_name, google_service_account_key or allow_http"
            )));
        }
        Ok((key, v.to_string()))
    }

    /// The read-ahead slice size of Parquet files in object stores, storage option
    /// [`READ_SLICE_KEY`] (bytes of the projected columns per slice; `0` reads each row group
    /// whole): default [`SLICE_BYTES`]. Errors: not a whole number.
    pub fn read_slice_bytes(&self) -> crate::Result<u64> {
        match self.get(READ_SLICE_KEY) {
            None => Ok(SLICE_BYTES),
            Some(v) => v.trim().parse().map_err(|_| {
                crate::Error::InvalidArgument(format!(
                    "storage option {READ_SLICE_KEY}={v:?}: not a whole number of bytes"
                ))
            }),
        }
    }

    /// How data files in object stores are fetched: requests of at most [`PART_KEY`] bytes
    /// (default [`PART_BYTES`]) within [`IN_FLIGHT_KEY`] bytes in flight (default
    /// [`BYTES_IN_FLIGHT`]); see [`super::ranged`]. Errors: not a whole number above 0.
    pub fn ranged_fetch(&self) -> crate::Result<super::ranged::RangedFetch> {
        let bytes = |key: &str, default: u64| match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    crate::Error::InvalidArgument(format!(
                        "storage option {key}={v:?}: not a whole number of bytes above 0"
                    ))
                }),
        };
        Ok(super::ranged::RangedFetch::new(
            bytes(PART_KEY, PART_BYTES)?,
            bytes(IN_FLIGHT_KEY, BYTES_IN_FLIGHT)?,
        ))
    }

    /// The options that can hold no credential ([`is_shareable_key`]): what may travel with a
    /// plan to another process (where, how to connect, how to read), never a key, secret,
    /// token, password or signature.
    pub fn shareable_options(&self) -> Vec<(String, String)> {
        self.options
            .iter()
            .filter(|(k, _)| is_shareable_key(k))
            .cloned()
            .collect()
    }

    /// The value of option `key` (lower case), if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Option keys that never hold a credential, beside the destination keys
/// ([`super::destination::is_destination_key`]): region, addressing and connection settings.
/// Every other key (keys, secrets, tokens, passwords, SAS, service accounts, and any key not
/// listed) stays in the process that was given it.
const SHAREABLE_KEYS: &[&str] = &[
    "aws_region",
    "region",
    "aws_virtual_hosted_style_request",
    "virtual_hosted_style_request",
    "aws_s3_express",
    "aws_checksum_algorithm",
    "azure_storage_account_name",
    "account_name",
    "connect_timeout",
    "timeout",
    "pool_idle_timeout",
    "pool_max_idle_per_host",
    "http1_only",
    "http2_only",
    "user_agent",
];

/// Whether option `key` (lower case) is one a plan may carry to another process: listed in
/// [`SHAREABLE_KEYS`], a destination key (taken by the receiver only as
/// [`super::destination::accept_plan_options`] says), or one of the core's reading, limit and
/// retry settings.
pub fn is_shareable_key(key: &str) -> bool {
    SHAREABLE_KEYS.contains(&key)
        || super::destination::is_destination_key(key)
        || [READ_SLICE_KEY, PART_KEY, IN_FLIGHT_KEY].contains(&key)
        || LIMIT_KEYS.iter().any(|(k, _)| *k == key)
        || RETRY_KEYS.contains(&key)
}

/// The storage option that sets the read-ahead slice size ([`StorageConfig::read_slice_bytes`]).
pub const READ_SLICE_KEY: &str = "read_slice_bytes";

/// Compressed bytes of the projected columns a slice aims at, by default (storage option
/// `read_slice_bytes`).
pub const SLICE_BYTES: u64 = 4 << 20;

/// The storage options that set [`ReadLimits`](super::ReadLimits), with the field each sets
/// and its default.
pub const LIMIT_KEYS: &[(&str, u64)] = &[
    ("max_metadata_bytes", 1 << 30),
    ("max_version_hint_bytes", 1 << 20),
    ("max_listing_entries", 1_000_000),
    ("max_manifest_bytes", 1 << 30),
    ("max_footer_bytes", 256 << 20),
];

/// Storage options that set the retry policy, with what they take:
/// - `max_retries`: retries per request after the first attempt (0 disables them; default 10);
/// - `retry_timeout`: no retry is started this long after the first attempt (default `3m`);
/// - `backoff_config.init_backoff`: the first wait (default `100ms`);
/// - `backoff_config.max_backoff`: the longest wait (default `15s`);
/// - `backoff_config.base`: the factor each wait grows by (default 2; waits are jittered).
///
/// Durations are written as `250ms`, `30s`, `2m` (`timeout` and `connect_timeout`, the limits of
/// one request and of connecting, are `object_store`'s own keys and take the same form).
pub const RETRY_KEYS: &[&str] = &[
    "max_retries",
    "retry_timeout",
    "backoff_config.init_backoff",
    "backoff_config.max_backoff",
    "backoff_config.base",
];

/// Whether a store may use credentials it finds on the machine (environment variables,
/// instance metadata, default credential files) besides the options it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Ambient {
    /// Use them (a command-line user's own credentials).
    #[default]
    Use,
    /// Never (a server process acting for other people).
    Refuse,
    /// For the store the table was opened in only; other stores that files of the table are
    /// in are opened without them (a server lending its credentials for one warehouse, whose
    /// tables' metadata must not lead them elsewhere).
    TableOnly,
}

/// Whether one of the object stores takes configuration key `key`.
fn is_known_key(key: &str) -> bool {
    if [READ_SLICE_KEY, PART_KEY, IN_FLIGHT_KEY].contains(&key)
        || LIMIT_KEYS.iter().any(|(k, _)| *k == key)
    {
        return true;
    }
    #[cfg(feature = "cloud")]
    {
        use std::str::FromStr;
        object_store::aws::AmazonS3ConfigKey::from_str(key).is_ok()
            || object_store::gcp::GoogleConfigKey::from_str(key).is_ok()
            || object_store::azure::AzureConfigKey::from_str(key).is_ok()
            || object_store::ClientConfigKey::from_str(key).is_ok()
            || RETRY_KEYS.contains(&key)
    }
    #[cfg(not(feature = "cloud"))]
    {
        let _ = key;
        false
    }
}

impl std::fmt::Debug for StorageConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageConfig")
            .field(
                "options",
                &self.options.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("ambient", &self.ambient)
            .field("env", &self.env.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_keys_win_and_env_is_filtered() {
        let c = StorageConfig::with_env(
            [
                ("AWS_REGION".to_string(), "eu-west-1".to_string()),
                ("HOME".to_string(), "/root".to_string()),
            ],
            [("aws_region".to_string(), "us-east-1".to_string())],
        );
        assert_eq!(c.get("aws_region"), Some("us-east-1"));
        assert_eq!(c.options.len(), 1);
        assert_eq!(
            c.env,
            vec![("aws_region".to_string(), "eu-west-1".to_string())]
        );
        assert_eq!(c.ambient, Ambient::Use);
        assert_eq!(
            c.effective_options(),
            vec![("aws_region".to_string(), "us-east-1".to_string())]
        );
        // The environment's variables reach the table's store only when ambient credentials
        // are lent, and never another store under TableOnly.
        let env = [("AWS_ACCESS_KEY_ID".to_string(), "AKIA".to_string())];
        let lent = StorageConfig::new([], Ambient::TableOnly).with_ambient_env(env.clone());
        assert_eq!(lent.effective_options().len(), 1);
        assert!(lent.for_other_store().effective_options().is_empty());
        assert_eq!(lent.for_other_store().ambient, Ambient::Refuse);
        let refused = StorageConfig::new([], Ambient::Refuse).with_ambient_env(env.clone());
        assert!(refused.effective_options().is_empty());
        let used = StorageConfig::with_env(env, []);
        assert_eq!(used.for_other_store().effective_options().len(), 1);
        let secret = StorageConfig::new(
            [("aws_secret_access_key".into(), "s3cr3t".into())],
            Ambient::Refuse,
        );
        assert!(!format!("{secret:?}").contains("s3cr3t"));
        assert_eq!(
            StorageConfig::parse_option("AWS_Region=eu-west-1=x").unwrap(),
            ("aws_region".to_string(), "eu-west-1=x".to_string())
        );
        for ok in [
            "aws_endpoint=x",
            "allow_http=true",
            "azure_storage_account_name=a",
            "google_base_url=u",
            "max_retries=3",
            "backoff_config.init_backoff=10ms",
            "timeout=2s",
        ] {
            assert!(StorageConfig::parse_option(ok).is_ok(), "{ok}");
        }
        assert!(StorageConfig::parse_option("aws_secret_acess_key=x").is_err());
        assert!(StorageConfig::parse_option("novalue").is_err());
    }
}
