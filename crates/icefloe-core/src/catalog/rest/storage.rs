//! The storage configuration a REST catalog hands out with a table (its `config`, and the
//! `storage-credentials` entry whose `prefix` is the longest one the table's location starts
//! with: vended credentials), in Iceberg's FileIO property names, turned into the
//! `object_store` option keys the storage layer takes.

use std::collections::BTreeMap;

use super::wire::StorageCredential;

/// Iceberg FileIO property → `object_store` option, one to one.
const DIRECT: &[(&str, &str)] = &[
    ("s3.access-key-id", "aws_access_key_id"),
    ("s3.secret-access-key", "aws_secret_access_key"),
    ("s3.session-token", "aws_session_token"),
    ("s3.endpoint", "aws_endpoint"),
    ("s3.region", "aws_region"),
    ("client.region", "aws_region"),
    ("adls.account-name", "azure_storage_account_name"),
    ("adls.account-key", "azure_storage_account_key"),
    ("gcs.service-account-key", "google_service_account_key"),
];

/// The FileIO properties that apply to `location`: `config`, overridden by the best-matching
/// `storage-credentials` entry.
pub(crate) fn for_location(
    config: &BTreeMap<String, String>,
    credentials: &[StorageCredential],
    location: &str,
) -> BTreeMap<String, String> {
    let mut props = config.clone();
    if let Some(best) = credentials
        .iter()
        .filter(|c| location.starts_with(&c.prefix))
        .max_by_key(|c| c.prefix.len())
    {
        props.extend(best.config.clone());
    }
    props
}

/// `object_store` options for the FileIO properties `props` of a table at `location`.
pub(crate) fn object_store_options(
    props: &BTreeMap<String, String>,
    location: &str,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (from, to) in DIRECT {
        if let Some(v) = props.get(*from) {
            out.push((to.to_string(), v.clone()));
        }
    }
    if props
        .get("s3.endpoint")
        .is_some_and(|e| e.starts_with("http://"))
    {
        out.push(("aws_allow_http".into(), "true".into()));
    }
    if let Some(v) = props.get("s3.path-style-access") {
        let virtual_hosted = !v.eq_ignore_ascii_case("true");
        out.push((
            "aws_virtual_hosted_style_request".into(),
            virtual_hosted.to_string(),
        ));
    }
    // `adls.sas-token.<account host>`: the SAS token of the account the table is in.
    if let Some(host) = url::Url::parse(location)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
    {
        if let Some(sas) = props.get(&format!("adls.sas-token.{host}")) {
            out.push(("azure_storage_sas_token".into(), sas.clone()));
            if let Some(account) = host.split('.').next() {
                out.push(("azure_storage_account_name".into(), account.to_string()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn vended_s3_credentials_become_object_store_options() {
        let config = map(&[
            ("s3.access-key-id", "table-wide"),
            ("s3.endpoint", "http://127.0.0.1:9000"),
        ]);
        let creds = vec![
            StorageCredential {
                prefix: "s3://b/".into(),
                config: map(&[("s3.access-key-id", "bucket")]),
            },
            StorageCredential {
                prefix: "s3://b/db/t".into(),
                config: map(&[
                    ("s3.access-key-id", "AK"),
                    ("s3.secret-access-key", "SK"),
                    ("s3.session-token", "ST"),
                ]),
            },
            StorageCredential {
                prefix: "s3://other/".into(),
                config: map(&[("s3.access-key-id", "no")]),
            },
        ];
        let props = for_location(&config, &creds, "s3://b/db/t/metadata/v1.metadata.json");
        let opts = object_store_options(&props, "s3://b/db/t");
        let get = |k: &str| opts.iter().find(|(o, _)| o == k).map(|(_, v)| v.as_str());
        assert_eq!(get("aws_access_key_id"), Some("AK"));
        assert_eq!(get("aws_secret_access_key"), Some("SK"));
        assert_eq!(get("aws_session_token"), Some("ST"));
        assert_eq!(get("aws_endpoint"), Some("http://127.0.0.1:9000"));
        assert_eq!(get("aws_allow_http"), Some("true"));
    }

    #[test]
    fn adls_sas_token_of_the_tables_account() {
        let props = map(&[
            ("adls.sas-token.acct.dfs.core.windows.net", "sv=1&sig=x"),
            ("adls.sas-token.other.dfs.core.windows.net", "no"),
        ]);
        let opts = object_store_options(&props, "abfss://c@acct.dfs.core.windows.net/wh/t");
        assert!(opts.contains(&("azure_storage_sas_token".into(), "sv=1&sig=x".into())));
        assert!(opts.contains(&("azure_storage_account_name".into(), "acct".into())));
    }
}
