//! Remote object stores (S3, GCS, Azure Blob) built from the caller's storage configuration
//! (its options over the environment variables it passes as ambient credentials, when those
//! may be used); the process environment is never read here.
//!
//! Every store retries with exponential backoff: requests that time out, lose their connection
//! or are answered 5xx, 408 or 429, and response bodies cut short (resumed by range while the
//! object's ETag is unchanged). The policy is `object_store`'s [`RetryConfig`], set with
//! [`RETRY_KEYS`](super::config::RETRY_KEYS) (the names delta-rs uses); a request that still
//! fails is an error naming the object, which every reader turns into a failed scan (a delete
//! file that cannot be fetched is never read as "no deletes").

#![cfg(feature = "cloud")]

use std::sync::Arc;

use object_store::{BackoffConfig, ObjectStore, ObjectStoreScheme, RetryConfig};
use url::Url;

use super::config::{Ambient, StorageConfig};

/// The retry policy `options` set ([`RETRY_KEYS`](super::config::RETRY_KEYS)), over
/// `object_store`'s defaults.
pub fn retry_config(options: &[(String, String)]) -> Result<RetryConfig, String> {
    let mut retry = RetryConfig {
        backoff: BackoffConfig::default(),
        ..RetryConfig::default()
    };
    let duration = |k: &str, v: &str| {
        humantime::parse_duration(v.trim()).map_err(|e| {
            format!("storage option {k}={v:?}: not a duration such as 250ms or 30s ({e})")
        })
    };
    for (k, v) in options {
        match k.as_str() {
            "max_retries" => {
                retry.max_retries = v.trim().parse().map_err(|_| {
                    format!("storage option max_retries={v:?}: not a whole number of retries")
                })?
            }
            "retry_timeout" => retry.retry_timeout = duration(k, v)?,
            "backoff_config.init_backoff" => retry.backoff.init_backoff = duration(k, v)?,
            "backoff_config.max_backoff" => retry.backoff.max_backoff = duration(k, v)?,
            "backoff_config.base" => {
                retry.backoff.base = v
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|b| b.is_finite() && *b >= 1.0)
                    .ok_or_else(|| {
                        format!(
                            "storage option backoff_config.base={v:?}: not a number of at least 1"
                        )
                    })?
            }
            _ => {}
        }
    }
    Ok(retry)
}

/// Opens the remote store at `url` (scheme and bucket or container) with `storage`'s
/// [effective options](StorageConfig::effective_options) (`object_store` configuration keys,
/// plus [`RETRY_KEYS`](super::config::RETRY_KEYS)). With [`Ambient::Refuse`] and no credential
/// among the options, requests are sent unsigned rather than with credentials found on the
/// machine.
pub fn open_remote(url: &Url, storage: &StorageConfig) -> Result<Arc<dyn ObjectStore>, String> {
    open_remote_with(url, storage, None)
}

/// Credentials asked for before each request (cached by the provider), for the store of their
/// kind: vended credentials that expire and are fetched again, or a vended bearer token.
#[derive(Debug, Clone)]
pub enum Credentials {
    /// S3 keys.
    S3(object_store::aws::AwsCredentialProvider),
    /// A GCS OAuth2 bearer token.
    Gcs(object_store::gcp::GcpCredentialProvider),
    /// An Azure SAS token (or another Azure credential).
    Azure(object_store::azure::AzureCredentialProvider),
}

/// Like [`open_remote`]; the store signs with `credentials` when given (and of its kind),
/// instead of the credentials among the options.
pub fn open_remote_with(
    url: &Url,
    storage: &StorageConfig,
    credentials: Option<Credentials>,
) -> Result<Arc<dyn ObjectStore>, String> {
    let mut opts = storage.effective_options();
    let (scheme, _) = ObjectStoreScheme::parse(url).map_err(|e| e.to_string())?;
    // Explicit credentials sign every request.
    if storage.ambient == Ambient::Refuse && credentials.is_none() {
        if let Some(skip) = unsigned_without_credentials(&scheme, &opts) {
            opts.push((skip.to_string(), "true".to_string()));
        }
    }
    let retry = retry_config(&opts)?;
    /// Applies the options a builder knows (the others belong to other stores or are retry
    /// keys), then the retry policy.
    macro_rules! build {
        ($builder:ty) => {
            build!($builder, |b| b)
        };
        ($builder:ty, $more:expr) => {{
            let b = opts.iter().fold(
                <$builder>::new().with_url(url.as_str()),
                |b, (k, v)| match k.parse() {
                    Ok(key) => b.with_config(key, v.clone()),
                    Err(_) => b,
                },
            );
            let b = $more(b.with_retry(retry));
            Arc::new(b.build().map_err(|e| e.to_string())?) as Arc<dyn ObjectStore>
        }};
    }
    Ok(match scheme {
        ObjectStoreScheme::AmazonS3 => build!(
            object_store::aws::AmazonS3Builder,
            |b: object_store::aws::AmazonS3Builder| match credentials {
                Some(Credentials::S3(c)) => b.with_credentials(c),
                _ => b,
            }
        ),
        ObjectStoreScheme::GoogleCloudStorage => build!(
            object_store::gcp::GoogleCloudStorageBuilder,
            |b: object_store::gcp::GoogleCloudStorageBuilder| match credentials {
                Some(Credentials::Gcs(c)) => b.with_credentials(c),
                _ => b,
            }
        ),
        ObjectStoreScheme::MicrosoftAzure => build!(
            object_store::azure::MicrosoftAzureBuilder,
            |b: object_store::azure::MicrosoftAzureBuilder| match credentials {
                Some(Credentials::Azure(c)) => b.with_credentials(c),
                _ => b,
            }
        ),
        other => return Err(format!("{other:?} is not a remote object store")),
    })
}

/// The option that makes a store send unsigned requests, when `opts` hold no credential for it.
fn unsigned_without_credentials(
    scheme: &ObjectStoreScheme,
    opts: &[(String, String)],
) -> Option<&'static str> {
    let has = |keys: &[&str]| opts.iter().any(|(k, _)| keys.contains(&k.as_str()));
    let (creds, skip): (&[&str], &str) = match scheme {
        ObjectStoreScheme::AmazonS3 => (
            &["aws_access_key_id", "access_key_id"],
            "aws_skip_signature",
        ),
        ObjectStoreScheme::GoogleCloudStorage => (
            &[
                "google_service_account",
                "google_service_account_path",
                "google_service_account_key",
                "google_application_credentials",
                "service_account",
                "service_account_key",
            ],
            "google_skip_signature",
        ),
        _ => (
            &[
                "azure_storage_account_key",
                "azure_storage_access_key",
                "azure_storage_sas_key",
                "azure_storage_sas_token",
                "azure_client_secret",
                "azure_storage_token",
                "access_key",
                "sas_key",
            ],
            "azure_skip_signature",
        ),
    };
    (!has(creds)).then_some(skip)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn opts(kv: &[(&str, &str)]) -> Vec<(String, String)> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn retry_keys_set_the_policy_and_bad_values_are_errors() {
        let r = retry_config(&opts(&[
            ("max_retries", "3"),
            ("retry_timeout", "20s"),
            ("backoff_config.init_backoff", "10ms"),
            ("backoff_config.max_backoff", "1s"),
            ("backoff_config.base", "3"),
        ]))
        .unwrap();
        assert_eq!(r.max_retries, 3);
        assert_eq!(r.retry_timeout, Duration::from_secs(20));
        assert_eq!(r.backoff.init_backoff, Duration::from_millis(10));
        assert_eq!(r.backoff.max_backoff, Duration::from_secs(1));
        assert_eq!(r.backoff.base, 3.0);
        let d = retry_config(&[]).unwrap();
        assert_eq!(d.max_retries, 10);
        for bad in [
            ("max_retries", "-1"),
            ("retry_timeout", "soon"),
            ("backoff_config.base", "0.5"),
            ("backoff_config.base", "NaN"),
        ] {
            let e = retry_config(&opts(&[bad])).unwrap_err();
            assert!(e.contains(bad.0), "{e}");
        }
    }

    #[test]
    fn a_bad_retry_option_fails_opening_the_store() {
        let url = Url::parse("s3://bucket/").unwrap();
        let config = |kv| StorageConfig::new(opts(kv), Ambient::Refuse);
        let e = open_remote(&url, &config(&[("MAX_RETRIES", "many")]))
            .map(|_| ())
            .unwrap_err();
        assert!(e.contains("max_retries"), "{e}");
        assert!(open_remote(&url, &config(&[("aws_region", "eu-west-1")])).is_ok());
    }
}
