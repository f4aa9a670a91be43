//! Vended storage credentials (FileIO properties a REST catalog returns with `loadTable`) that
//! the table's store asks for before each request: S3 keys that expire
//! (`s3.session-token-expires-at-ms`), a GCS OAuth2 token (`gcs.oauth2.token`, expiring at
//! `gcs.oauth2.token-expires-at`), an Azure SAS token that expires
//! (`adls.sas-token.<account host>`, `adls.sas-token-expires-at-ms.<account host>`). Expiring
//! ones are fetched again with `loadTable` once half their lifetime (at most all but a minute
//! of it) has passed, so that a long scan or a long-lived mount keeps reading after the first
//! ones expire. The catalog client renews its own OAuth2 token on the way when that has
//! expired too.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use object_store::aws::AwsCredential;
use object_store::azure::AzureCredential;
use object_store::gcp::GcpCredential;
use object_store::CredentialProvider;
use url::Url;

use super::client::{RestClient, Subject};
use super::storage;
use super::wire::LoadTable;
use crate::catalog::TableIdent;
use crate::io::remote::Credentials;

/// The FileIO property that says when vended S3 credentials expire (epoch milliseconds).
pub(crate) const EXPIRES_AT_MS: &str = "s3.session-token-expires-at-ms";
/// A vended GCS OAuth2 bearer token, and when it expires (epoch milliseconds).
const GCS_TOKEN: &str = "gcs.oauth2.token";
const GCS_EXPIRES_AT: &str = "gcs.oauth2.token-expires-at";
/// Prefixes of a vended Azure SAS token of an account host, and of when it expires.
const ADLS_SAS: &str = "adls.sas-token.";
const ADLS_EXPIRES_AT_MS: &str = "adls.sas-token-expires-at-ms.";

/// Credentials are fetched again at most this long before they expire.
const MARGIN: Duration = Duration::from_secs(60);

/// A credential and when it expires (`None`: never), as FileIO properties give it.
pub(crate) type Expiring<C> = (C, Option<SystemTime>);

/// One kind of vended credential: which store it signs for and how FileIO properties hold it.
pub(crate) trait VendedKind: Send + Sync + 'static {
    /// The store's credential type.
    type Credential: std::fmt::Debug + Send + Sync + 'static;
    /// How errors name the store.
    const STORE: &'static str;
    /// The credential in `props` for the table at `location`, and when it expires (`None`:
    /// never); `Ok(None)` when `props` hold none of this kind.
    fn read(
        props: &BTreeMap<String, String>,
        location: &str,
    ) -> Result<Option<Expiring<Self::Credential>>, String>;
}

/// Vended S3 keys; only expiring ones need a provider (static ones are storage options).
pub(crate) struct S3;
/// A vended GCS OAuth2 token (object_store takes bearer tokens only from a provider).
pub(crate) struct Gcs;
/// A vended Azure SAS token that expires (static ones are storage options).
pub(crate) struct AzureSas;

fn expiry(props: &BTreeMap<String, String>, key: &str) -> Result<Option<SystemTime>, String> {
    props
        .get(key)
        .map(|v| {
            v.trim()
                .parse::<u64>()
                .map(|ms| UNIX_EPOCH + Duration::from_millis(ms))
                .map_err(|_| format!("{key} {v:?} is not a number of milliseconds"))
        })
        .transpose()
}

impl VendedKind for S3 {
    type Credential = AwsCredential;
    const STORE: &'static str = "S3";

    fn read(
        props: &BTreeMap<String, String>,
        _location: &str,
    ) -> Result<Option<Expiring<AwsCredential>>, String> {
        let Some(expires) = expiry(props, EXPIRES_AT_MS)? else {
            return Ok(None);
        };
        let (Some(key_id), Some(secret)) = (
            props.get("s3.access-key-id"),
            props.get("s3.secret-access-key"),
        ) else {
            return Ok(None);
        };
        Ok(Some((
            AwsCredential {
                key_id: key_id.clone(),
                secret_key: secret.clone(),
                token: props.get("s3.session-token").cloned(),
            },
            Some(expires),
        )))
    }
}

impl VendedKind for Gcs {
    type Credential = GcpCredential;
    const STORE: &'static str = "GCS";

    fn read(
        props: &BTreeMap<String, String>,
        _location: &str,
    ) -> Result<Option<Expiring<GcpCredential>>, String> {
        let Some(token) = props.get(GCS_TOKEN) else {
            return Ok(None);
        };
        Ok(Some((
            GcpCredential {
                bearer: token.clone(),
            },
            expiry(props, GCS_EXPIRES_AT)?,
        )))
    }
}

impl VendedKind for AzureSas {
    type Credential = AzureCredential;
    const STORE: &'static str = "Azure";

    fn read(
        props: &BTreeMap<String, String>,
        location: &str,
    ) -> Result<Option<Expiring<AzureCredential>>, String> {
        let Some(host) = Url::parse(location)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
        else {
            return Ok(None);
        };
        let (Some(sas), Some(expires)) = (
            props.get(&format!("{ADLS_SAS}{host}")),
            expiry(props, &format!("{ADLS_EXPIRES_AT_MS}{host}"))?,
        ) else {
            return Ok(None);
        };
        let pairs = url::form_urlencoded::parse(sas.trim_start_matches('?').as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        Ok(Some((AzureCredential::SASToken(pairs), Some(expires))))
    }
}

/// When to fetch a credential expiring at `expires` again: after half its lifetime, and at
/// most a minute before it expires.
fn refresh_at(now: SystemTime, expires: SystemTime) -> SystemTime {
    let lifetime = expires.duration_since(now).unwrap_or_default();
    (now + lifetime / 2).max(expires.checked_sub(MARGIN).unwrap_or(now))
}

/// A vended credential of one table, fetched again from the catalog before it expires.
pub(crate) struct Vended<K: VendedKind> {
    client: Arc<RestClient>,
    /// The table's `loadTable` URL and the headers asking for vended credentials.
    url: Url,
    headers: Vec<(&'static str, &'static str)>,
    table: TableIdent,
    /// The metadata location, which picks the `storage-credentials` entry.
    location: String,
    /// The credential and when to fetch it again (`None`: it does not expire).
    current: tokio::sync::Mutex<(Arc<K::Credential>, Option<SystemTime>)>,
    kind: PhantomData<K>,
}

impl<K: VendedKind> std::fmt::Debug for Vended<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vended")
            .field("store", &K::STORE)
            .field("table", &self.table.to_string())
            .finish_non_exhaustive()
    }
}

impl<K: VendedKind> Vended<K> {
    /// A provider seeded with the credential of the first `loadTable` (FileIO properties
    /// `props`), or `None` when `props` hold none of this kind.
    fn new(
        client: Arc<RestClient>,
        url: Url,
        headers: Vec<(&'static str, &'static str)>,
        table: TableIdent,
        location: &str,
        props: &BTreeMap<String, String>,
    ) -> Option<Vended<K>> {
        let (first, expires) = K::read(props, location).ok()??;
        Some(Vended {
            client,
            url,
            headers,
            table,
            location: location.to_string(),
            current: tokio::sync::Mutex::new((
                Arc::new(first),
                expires.map(|e| refresh_at(SystemTime::now(), e)),
            )),
            kind: PhantomData,
        })
    }
}

#[async_trait]
impl<K: VendedKind> CredentialProvider for Vended<K> {
    type Credential = K::Credential;

    async fn get_credential(&self) -> object_store::Result<Arc<K::Credential>> {
        let mut current = self.current.lock().await;
        if current.1.is_none_or(|at| SystemTime::now() < at) {
            return Ok(current.0.clone());
        }
        let generic = |reason: String| object_store::Error::Generic {
            store: K::STORE,
            source: reason.into(),
        };
        let load: LoadTable = self
            .client
            .get(self.url.clone(), &self.headers, Subject::Table(&self.table))
            .await
            .map_err(|e| generic(format!("fetching new vended credentials: {e}")))?;
        let props = storage::for_location(&load.config, &load.storage_credentials, &self.location);
        match K::read(&props, &self.location)
            .map_err(|r| generic(format!("{}: {r}", self.table)))?
        {
            Some((fresh, expires)) => {
                *current = (
                    Arc::new(fresh),
                    expires.map(|e| refresh_at(SystemTime::now(), e)),
                )
            }
            None => {
                return Err(generic(format!(
                    "the catalog stopped vending {} credentials for {}",
                    K::STORE,
                    self.table
                )))
            }
        }
        Ok(current.0.clone())
    }
}

/// The vended credential provider for the table at `location` (FileIO properties `props` of
/// its first `loadTable`), when the store needs one: expiring S3 keys or SAS tokens, any GCS
/// token. `url` and `headers` fetch the table again.
pub(crate) fn vended_credentials(
    client: Arc<RestClient>,
    url: Url,
    headers: Vec<(&'static str, &'static str)>,
    table: &TableIdent,
    location: &str,
    props: &BTreeMap<String, String>,
) -> Option<Credentials> {
    let scheme = crate::io::parse_location(location).ok()?.scheme;
    let (c, t) = (client, table.clone());
    match scheme.as_str() {
        "s3" => Vended::<S3>::new(c, url, headers, t, location, props)
            .map(|v| Credentials::S3(Arc::new(v))),
        "gs" => Vended::<Gcs>::new(c, url, headers, t, location, props)
            .map(|v| Credentials::Gcs(Arc::new(v))),
        "az" | "abfs" | "abfss" | "adl" | "azure" => {
            Vended::<AzureSas>::new(c, url, headers, t, location, props)
                .map(|v| Credentials::Azure(Arc::new(v)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms_from_now(secs: u64) -> String {
        (SystemTime::now() + Duration::from_secs(secs))
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis()
            .to_string()
    }

    #[test]
    fn refreshed_after_half_the_lifetime_or_a_minute_before_expiry() {
        let now = SystemTime::now();
        let left = |secs| {
            refresh_at(now, now + Duration::from_secs(secs))
                .duration_since(now)
                .unwrap()
        };
        assert_eq!(left(10), Duration::from_secs(5));
        assert_eq!(left(3600), Duration::from_secs(3540));
        assert_eq!(refresh_at(now, now - Duration::from_secs(5)), now);
    }

    #[test]
    fn each_kind_reads_its_properties() {
        let at = ms_from_now(10);
        let s3 = BTreeMap::from([
            ("s3.access-key-id".to_string(), "AK".to_string()),
            ("s3.secret-access-key".to_string(), "SK".to_string()),
            (EXPIRES_AT_MS.to_string(), at.clone()),
        ]);
        let (c, e) = S3::read(&s3, "s3://b/t").unwrap().unwrap();
        assert_eq!((c.key_id.as_str(), e.is_some()), ("AK", true));
        let mut no_expiry = s3.clone();
        no_expiry.remove(EXPIRES_AT_MS);
        assert!(S3::read(&no_expiry, "s3://b/t").unwrap().is_none());
        let mut bad = s3.clone();
        bad.insert(EXPIRES_AT_MS.into(), "soon".into());
        assert!(S3::read(&bad, "s3://b/t").is_err());

        let gcs = BTreeMap::from([(GCS_TOKEN.to_string(), "ya29.tok".to_string())]);
        let (c, e) = Gcs::read(&gcs, "gs://b/t").unwrap().unwrap();
        assert_eq!((c.bearer.as_str(), e), ("ya29.tok", None));
        let mut expiring = gcs.clone();
        expiring.insert(GCS_EXPIRES_AT.into(), at.clone());
        assert!(Gcs::read(&expiring, "gs://b/t")
            .unwrap()
            .unwrap()
            .1
            .is_some());

        let host = "acct.dfs.core.windows.net";
        let loc = format!("abfss://c@{host}/wh/t");
        let azure = BTreeMap::from([
            (format!("{ADLS_SAS}{host}"), "sv=2024&sig=a%2Bb".to_string()),
            (format!("{ADLS_EXPIRES_AT_MS}{host}"), at),
        ]);
        match AzureSas::read(&azure, &loc).unwrap().unwrap().0 {
            AzureCredential::SASToken(pairs) => assert_eq!(
                pairs,
                vec![
                    ("sv".to_string(), "2024".to_string()),
                    ("sig".to_string(), "a+b".to_string())
                ]
            ),
            other => panic!("{other:?}"),
        }
        let other_account = "abfss://c@other.dfs.core.windows.net/wh/t";
        assert!(AzureSas::read(&azure, other_account).unwrap().is_none());
    }
}
