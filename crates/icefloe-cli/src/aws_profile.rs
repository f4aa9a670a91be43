//! AWS shared config and credentials files (`~/.aws/config`, `~/.aws/credentials`, or
//! `AWS_CONFIG_FILE`, `AWS_SHARED_CREDENTIALS_FILE`) and their profiles (`AWS_PROFILE`, else
//! `default`), read by the AWS SDK's own loader (`aws-config`) as the AWS CLI reads them: keys,
//! session tokens, `credential_process` and the profile's `region`. They count as the user's
//! ambient credentials, under `AWS_*` variables (which win, as in the AWS CLI) and
//! `--storage-option`. Profiles that assume a role (`role_arn`), use SSO or web identity need
//! the SDK's HTTP clients, which are not built in: they are an error naming the profile.

use aws_config::meta::region::ProvideRegion;
use aws_config::profile::{ProfileFileCredentialsProvider, ProfileFileRegionProvider};
use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::ProvideCredentials;

/// `env` with the selected profile's credentials (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`) and region (`AWS_REGION`) added where `env`
/// sets none. Without `AWS_PROFILE`, a missing `default` profile adds nothing. Errors: a
/// profile named by `AWS_PROFILE` that does not exist or cannot give credentials.
pub fn with_profile(mut env: Vec<(String, String)>) -> anyhow::Result<Vec<(String, String)>> {
    let get = |env: &[(String, String)], k: &str| {
        env.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    };
    let named = get(&env, "AWS_PROFILE").or_else(|| get(&env, "AWS_DEFAULT_PROFILE"));
    let need_keys = get(&env, "AWS_ACCESS_KEY_ID").is_none();
    let need_region =
        get(&env, "AWS_REGION").is_none() && get(&env, "AWS_DEFAULT_REGION").is_none();
    if !need_keys && !need_region {
        return Ok(env);
    }
    let profile = named.clone().unwrap_or_else(|| "default".to_string());
    let (keys, region) = resolve(&profile, need_keys, need_region)?;
    match keys {
        Ok(Some(c)) => {
            env.push(("AWS_ACCESS_KEY_ID".into(), c.access_key_id().to_string()));
            env.push((
                "AWS_SECRET_ACCESS_KEY".into(),
                c.secret_access_key().to_string(),
            ));
            if let Some(t) = c.session_token() {
                env.push(("AWS_SESSION_TOKEN".into(), t.to_string()));
            }
        }
        Ok(None) => {}
        // No such profile, and none was asked for: nothing to add.
        Err(CredentialsError::CredentialsNotLoaded(_)) if named.is_none() => {}
        Err(e) => anyhow::bail!(
            "AWS profile {profile:?}: {} (profiles that assume a role, use SSO or web identity are not read: export their credentials, e.g. eval \"$(aws configure export-credentials --profile {profile} --format env)\")",
            error_chain(&e)
        ),
    }
    if let Some(r) = region {
        env.push(("AWS_REGION".into(), r));
    }
    Ok(env)
}

type Resolved = (
    Result<Option<aws_credential_types::Credentials>, CredentialsError>,
    Option<String>,
);

/// Runs the SDK's loaders on a thread of their own (they are async; the caller may be inside a
/// runtime already).
fn resolve(profile: &str, keys: bool, region: bool) -> anyhow::Result<Resolved> {
    let profile = profile.to_string();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(rt.block_on(async {
            let creds = if keys {
                ProfileFileCredentialsProvider::builder()
                    .profile_name(&profile)
                    .build()
                    .provide_credentials()
                    .await
                    .map(Some)
            } else {
                Ok(None)
            };
            let region = if region {
                ProfileFileRegionProvider::builder()
                    .profile_name(&profile)
                    .build()
                    .region()
                    .await
                    .map(|r| r.to_string())
            } else {
                None
            };
            (creds, region)
        }))
    })
    .join()
    .map_err(|_| anyhow::anyhow!("reading AWS profile files panicked"))?
}

/// An error and its sources, one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !out.contains(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        cur = s.source();
    }
    out
}
