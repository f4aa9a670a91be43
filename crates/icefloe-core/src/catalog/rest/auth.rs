//! How requests to a REST catalog authenticate: a bearer `token`; an OAuth2 client credentials
//! grant (`credential` = `client_id:client_secret`, at `oauth2-server-uri` or the catalog's
//! `/v1/oauth/tokens`, with `scope`), its token refreshed before it expires and when the catalog
//! answers 401 or 419; or AWS SigV4 signing (`rest.sigv4-enabled`), as AWS Glue and S3 Tables
//! require. The OAuth2 exchange is the `oauth2` crate's, the signature `aws-sigv4`'s.

use std::time::{Duration, Instant, SystemTime};

use tokio::sync::Mutex;

use super::config::RestConfig;

/// The scope PyIceberg and Iceberg Java ask for when none is configured.
const DEFAULT_SCOPE: &str = "catalog";
/// The service name SigV4 signs for when `rest.signing-name` is not set (Iceberg Java's).
const DEFAULT_SIGNING_NAME: &str = "execute-api";

/// The authentication of one catalog.
pub(crate) enum Auth {
    /// No credential: requests go as they are.
    None,
    /// A fixed bearer token.
    Bearer(String),
    /// Tokens from an OAuth2 client credentials grant.
    OAuth2(OAuth2),
    /// AWS Signature Version 4 on every request.
    SigV4(SigV4),
}

/// An OAuth2 client of the catalog's token endpoint.
pub(crate) struct OAuth2 {
    token_url: String,
    client_id: String,
    client_secret: String,
    scope: String,
    current: Mutex<Option<Issued>>,
}

/// A token and when to fetch the next one.
struct Issued {
    token: String,
    refresh_at: Option<Instant>,
}

/// SigV4 signing settings and the key pair to sign with.
pub(crate) struct SigV4 {
    name: String,
    region: String,
    access_key_id: String,
    secret_access_key: String,
    session_token: Option<String>,
}

impl Auth {
    /// The authentication `config` asks for. Errors: SigV4 without a region or key pair.
    pub(crate) fn from_config(config: &RestConfig) -> crate::Result<Auth> {
        let any = |keys: &[&str]| keys.iter().find_map(|k| config.get(k)).map(str::to_string);
        if config.flag("rest.sigv4-enabled")? {
            let region = any(&["rest.signing-region", "client.region", "s3.region"])
                .ok_or_else(|| config.error("rest.sigv4-enabled needs rest.signing-region"))?;
            let access_key_id = any(&["rest.access-key-id", "client.access-key-id"]);
            let secret_access_key = any(&["rest.secret-access-key", "client.secret-access-key"]);
            let (Some(access_key_id), Some(secret_access_key)) = (access_key_id, secret_access_key)
            else {
                return Err(config.error(
                    "rest.sigv4-enabled needs an AWS key pair (client.access-key-id and client.secret-access-key, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)",
                ));
            };
            return Ok(Auth::SigV4(SigV4 {
                name: any(&["rest.signing-name"]).unwrap_or_else(|| DEFAULT_SIGNING_NAME.into()),
                region,
                access_key_id,
                secret_access_key,
                session_token: any(&["rest.session-token", "client.session-token"]),
            }));
        }
        if let Some(token) = config.get("token") {
            return Ok(Auth::Bearer(token.to_string()));
        }
        if let Some(credential) = config.get("credential") {
            let (id, secret) = credential.split_once(':').unwrap_or(("", credential));
            let token_url = match config.get("oauth2-server-uri") {
                Some(u) => u.to_string(),
                None => format!("{}/v1/oauth/tokens", config.uri()),
            };
            return Ok(Auth::OAuth2(OAuth2 {
                token_url,
                client_id: id.to_string(),
                client_secret: secret.to_string(),
                scope: config.get("scope").unwrap_or(DEFAULT_SCOPE).to_string(),
                current: Mutex::new(None),
            }));
        }
        Ok(Auth::None)
    }

    /// Adds the credential to `request`: the bearer token (fetching or refreshing an OAuth2
    /// token first when needed) or the SigV4 signature.
    pub(crate) async fn apply(
        &self,
        request: &mut http::Request<Vec<u8>>,
        http: &reqwest::Client,
        catalog: &str,
    ) -> crate::Result<()> {
        let bearer = match self {
            Auth::None => return Ok(()),
            Auth::Bearer(t) => t.clone(),
            Auth::OAuth2(o) => o.token(http, catalog).await?,
            Auth::SigV4(s) => return s.sign(request, catalog),
        };
        let value = http::HeaderValue::from_str(&format!("Bearer {bearer}")).map_err(|_| {
            auth_error(
                catalog,
                "the bearer token holds characters a header cannot carry",
            )
        })?;
        request
            .headers_mut()
            .insert(http::header::AUTHORIZATION, value);
        Ok(())
    }

    /// After a 401 or 419: drops the OAuth2 token so the next request fetches a new one.
    /// `true` when a retry can help (only an OAuth2 token can be renewed).
    pub(crate) async fn expired(&self) -> bool {
        match self {
            Auth::OAuth2(o) => {
                *o.current.lock().await = None;
                true
            }
            _ => false,
        }
    }
}

fn auth_error(catalog: &str, reason: impl std::fmt::Display) -> crate::Error {
    crate::Error::Catalog {
        catalog: catalog.to_string(),
        subject: "authenticating requests".to_string(),
        reason: reason.to_string(),
    }
}

impl OAuth2 {
    /// The current token, fetched when there is none or when it is about to expire.
    async fn token(&self, http: &reqwest::Client, catalog: &str) -> crate::Result<String> {
        let mut current = self.current.lock().await;
        if let Some(issued) = current.as_ref() {
            if issued.refresh_at.is_none_or(|at| Instant::now() < at) {
                return Ok(issued.token.clone());
            }
        }
        let issued = self.fetch(http, catalog).await?;
        let token = issued.token.clone();
        *current = Some(issued);
        Ok(token)
    }

    /// The client credentials grant (RFC 6749 section 4.4), credentials in the form body as
    /// Iceberg's clients send them.
    async fn fetch(&self, http: &reqwest::Client, catalog: &str) -> crate::Result<Issued> {
        use oauth2::basic::BasicClient;
        use oauth2::{AuthType, ClientId, ClientSecret, Scope, TokenResponse, TokenUrl};
        let url = TokenUrl::new(self.token_url.clone())
            .map_err(|e| auth_error(catalog, format!("token endpoint {}: {e}", self.token_url)))?;
        let client = BasicClient::new(ClientId::new(self.client_id.clone()))
            .set_client_secret(ClientSecret::new(self.client_secret.clone()))
            .set_auth_type(AuthType::RequestBody)
            .set_token_uri(url);
        let send = OAuthHttp(http.clone());
        let asked = Instant::now();
        let response = client
            .exchange_client_credentials()
            .add_scope(Scope::new(self.scope.clone()))
            .request_async(&send)
            .await
            .map_err(|e| {
                auth_error(
                    catalog,
                    format!(
                        "OAuth2 token request to {} failed: {}",
                        self.token_url,
                        oauth_reason(&e)
                    ),
                )
            })?;
        // Refresh a tenth of the lifetime (at most a minute) before the token expires.
        let refresh_at = response.expires_in().map(|life| {
            let margin = (life / 10).min(Duration::from_secs(60));
            asked + life.saturating_sub(margin)
        });
        Ok(Issued {
            token: response.access_token().secret().clone(),
            refresh_at,
        })
    }
}

/// The catalog's HTTP client as the `oauth2` crate's transport.
struct OAuthHttp(reqwest::Client);

impl<'c> oauth2::AsyncHttpClient<'c> for OAuthHttp {
    type Error = reqwest::Error;
    type Future = std::pin::Pin<
        Box<
            dyn std::future::Future<Output = Result<oauth2::HttpResponse, reqwest::Error>>
                + Send
                + 'c,
        >,
    >;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(send_oauth(self.0.clone(), request))
    }
}

/// Sends the `oauth2` crate's request with the catalog's HTTP client.
async fn send_oauth(
    http: reqwest::Client,
    req: oauth2::HttpRequest,
) -> Result<oauth2::HttpResponse, reqwest::Error> {
    let response = http.execute(reqwest::Request::try_from(req)?).await?;
    let mut out = http::Response::builder().status(response.status());
    for (k, v) in response.headers() {
        out = out.header(k, v);
    }
    let body = response.bytes().await?.to_vec();
    Ok(out
        .body(body)
        .expect("status and headers come from a response"))
}

/// The part of an OAuth2 failure a person needs: the server's error code and description.
fn oauth_reason<E: std::error::Error>(
    e: &oauth2::RequestTokenError<E, oauth2::basic::BasicErrorResponse>,
) -> String {
    match e {
        oauth2::RequestTokenError::ServerResponse(r) => {
            let code = crate::io::store_error::reply_kind(r.error().as_ref())
                .unwrap_or_else(|| "an error".into());
            match r
                .error_description()
                .map(String::as_str)
                .and_then(crate::io::store_error::reply_excerpt)
            {
                Some(d) => format!("{code} ({d})"),
                None => code,
            }
        }
        oauth2::RequestTokenError::Request(e) => format!("cannot reach it: {e}"),
        // Never the body: the token URI may reach a service that is not an OAuth2 server.
        oauth2::RequestTokenError::Parse(e, body) => format!(
            "not an OAuth2 token response ({}; {} bytes)",
            crate::io::store_error::json_reason(e.inner()),
            body.len()
        ),
        oauth2::RequestTokenError::Other(s) => s.clone(),
    }
}

impl SigV4 {
    /// Signs `request` in place (headers `authorization`, `x-amz-date`, and
    /// `x-amz-security-token` with a session token).
    fn sign(&self, request: &mut http::Request<Vec<u8>>, catalog: &str) -> crate::Result<()> {
        use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
        use aws_sigv4::sign::v4;
        let identity = aws_credential_types::Credentials::new(
            &self.access_key_id,
            &self.secret_access_key,
            self.session_token.clone(),
            None,
            "icefloe",
        )
        .into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(&self.name)
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| auth_error(catalog, format!("SigV4: {e}")))?
            .into();
        let headers: Vec<(&str, &str)> = request
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)))
            .collect();
        let uri = request.uri().to_string();
        let signable = SignableRequest::new(
            request.method().as_str(),
            uri,
            headers.into_iter(),
            SignableBody::Bytes(request.body()),
        )
        .map_err(|e| auth_error(catalog, format!("SigV4: {e}")))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| auth_error(catalog, format!("SigV4: {e}")))?
            .into_parts();
        instructions.apply_to_request_http1x(request);
        Ok(())
    }
}
