//! Vended S3 credentials that expire (`s3.session-token-expires-at-ms`): the table's store asks
//! for credentials before each request, and they are fetched again with `loadTable` once half
//! their lifetime (at most all but a minute of it) has passed, so that a long scan or a
//! long-lived mount keeps reading after the first ones expire. The catalog client renews its
//! own OAuth2 token on the way when that has expired too.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use object_store::aws::AwsCredential;
use object_store::CredentialProvider;
use url::Url;

use super::client::{RestClient, Subject};
use super::storage;
use super::wire::LoadTable;
use crate::catalog::TableIdent;

/// The FileIO property that says when vended S3 credentials expire (epoch milliseconds).
pub(crate) const EXPIRES_AT_MS: &str = "s3.session-token-expires-at-ms";

/// Credentials are fetched again at most this long before they expire.
const MARGIN: Duration = Duration::from_secs(60);

/// Vended S3 credentials of one table, fetched again from the catalog before they expire.
pub(crate) struct VendedS3 {
    client: Arc<RestClient>,
    /// The table's `loadTable` URL and the headers asking for vended credentials.
    url: Url,
    headers: Vec<(&'static str, &'static str)>,
    table: TableIdent,
    /// The metadata location, which picks the `storage-credentials` entry.
    location: String,
    current: tokio::sync::Mutex<(Arc<AwsCredential>, SystemTime)>,
}

impl std::fmt::Debug for VendedS3 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VendedS3")
            .field("table", &self.table.to_string())
            .finish_non_exhaustive()
    }
}

impl VendedS3 {
    /// A provider seeded with the credentials of the first `loadTable` (FileIO properties
    /// `props`), or `None` when they do not expire or are not S3 keys.
    pub(crate) fn new(
        client: Arc<RestClient>,
        url: Url,
        headers: Vec<(&'static str, &'static str)>,
        table: TableIdent,
        location: &str,
        props: &BTreeMap<String, String>,
    ) -> Option<VendedS3> {
        let first = credential(props).ok()??;
        Some(VendedS3 {
            client,
            url,
            headers,
            table,
            location: location.to_string(),
            current: tokio::sync::Mutex::new(first),
        })
    }
}

/// The S3 credential in `props` and when to fetch it again; `None` when it has no expiry.
fn credential(
    props: &BTreeMap<String, String>,
) -> Result<Option<(Arc<AwsCredential>, SystemTime)>, String> {
    let Some(expires) = props.get(EXPIRES_AT_MS) else {
        return Ok(None);
    };
    let ms: u64 = expires
        .trim()
        .parse()
        .map_err(|_| format!("{EXPIRES_AT_MS} {expires:?} is not a number of milliseconds"))?;
    let (Some(key_id), Some(secret)) = (
        props.get("s3.access-key-id"),
        props.get("s3.secret-access-key"),
    ) else {
        return Ok(None);
    };
    let now = SystemTime::now();
    let expires = UNIX_EPOCH + Duration::from_millis(ms);
    let lifetime = expires.duration_since(now).unwrap_or_default();
    let refresh = (now + lifetime / 2).max(expires.checked_sub(MARGIN).unwrap_or(now));
    Ok(Some((
        Arc::new(AwsCredential {
            key_id: key_id.clone(),
            secret_key: secret.clone(),
            token: props.get("s3.session-token").cloned(),
        }),
        refresh,
    )))
}

#[async_trait]
impl CredentialProvider for VendedS3 {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        let mut current = self.current.lock().await;
        if SystemTime::now() < current.1 {
            return Ok(current.0.clone());
        }
        let generic = |reason: String| object_store::Error::Generic {
            store: "S3",
            source: reason.into(),
        };
        let load: LoadTable = self
            .client
            .get(self.url.clone(), &self.headers, Subject::Table(&self.table))
            .await
            .map_err(|e| generic(format!("fetching new vended credentials: {e}")))?;
        let props = storage::for_location(&load.config, &load.storage_credentials, &self.location);
        match credential(&props).map_err(|r| generic(format!("{}: {r}", self.table)))? {
            Some(fresh) => *current = fresh,
            None => {
                return Err(generic(format!(
                    "the catalog stopped vending expiring S3 credentials for {}",
                    self.table
                )))
            }
        }
        Ok(current.0.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refreshed_after_half_the_lifetime_or_a_minute_before_expiry() {
        let at = |secs: u64| {
            let ms = (SystemTime::now() + Duration::from_secs(secs))
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_millis();
            BTreeMap::from([
                ("s3.access-key-id".to_string(), "AK".to_string()),
                ("s3.secret-access-key".to_string(), "SK".to_string()),
                (EXPIRES_AT_MS.to_string(), ms.to_string()),
            ])
        };
        let now = SystemTime::now();
        let (c, short) = credential(&at(10)).unwrap().unwrap();
        assert_eq!(c.key_id, "AK");
        let left = short.duration_since(now).unwrap();
        assert!(left <= Duration::from_secs(6) && left >= Duration::from_secs(4));
        let (_, long) = credential(&at(3600)).unwrap().unwrap();
        let left = long.duration_since(now).unwrap();
        // `at` reads the clock after `now`: allow for the time between.
        assert!(left > Duration::from_secs(3500) && left <= Duration::from_secs(3541));
        let mut no_expiry = at(10);
        no_expiry.remove(EXPIRES_AT_MS);
        assert!(credential(&no_expiry).unwrap().is_none());
        let mut bad = at(10);
        bad.insert(EXPIRES_AT_MS.into(), "soon".into());
        assert!(credential(&bad).is_err());
    }
}
