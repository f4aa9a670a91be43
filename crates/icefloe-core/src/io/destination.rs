//! Where a process sends storage requests, when someone else names it: the Postgres
//! wrapper's servers (set by roles that are not superusers) and plans that reach a cluster's
//! scheduler and executors. An endpoint chosen by another party points the process's requests
//! (and the credentials it signs them with) at any host, internal services included, so such
//! an endpoint is taken only under a prefix the process's operator allows; names that become
//! part of a host name (a region, an account) must look like such names.

use crate::Error;

/// Storage options whose value is a URL requests go to.
pub const ENDPOINT_KEYS: &[&str] = &[
    "aws_endpoint",
    "aws_endpoint_url",
    "endpoint",
    "endpoint_url",
    "azure_storage_endpoint",
    "azure_endpoint",
    "google_base_url",
];

/// Storage options that change the host or how it is reached (plain HTTP, unchecked
/// certificates, the Azure emulator or Fabric hosts).
pub const DESTINATION_FLAG_KEYS: &[&str] = &[
    "allow_http",
    "aws_allow_http",
    "allow_invalid_certificates",
    "azure_use_emulator",
    "azure_use_fabric_endpoint",
];

/// Whether option `key` names where requests go: an [`ENDPOINT_KEYS`] URL or a
/// [`DESTINATION_FLAG_KEYS`] flag.
pub fn is_destination_key(key: &str) -> bool {
    ENDPOINT_KEYS.contains(&key) || DESTINATION_FLAG_KEYS.contains(&key)
}

/// Storage options whose value becomes part of a host name (`s3.<region>.amazonaws.com`,
/// `<account>.blob.core.windows.net`).
pub const HOST_PART_KEYS: &[&str] = &[
    "aws_region",
    "region",
    "azure_storage_account_name",
    "account_name",
    "google_bucket",
];

/// Whether `value` can only be a part of a host name: letters, digits, `-`, `.` and `_`
/// (no `/`, `@`, `:` or `#` that would end the host and start another).
pub fn is_host_part(value: &str) -> bool {
    value
        .trim()
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_')
}

/// Whether URL `dest` lies under allowed prefix `prefix`: the same scheme, host and port, and
/// a path below the prefix's path (compared after URL parsing, so that no spelling of another
/// host, such as `http://allowed@evil/` or a trailing dot, passes).
pub fn endpoint_allowed(dest: &str, prefix: &str) -> bool {
    let (Ok(d), Ok(p)) = (url::Url::parse(dest.trim()), url::Url::parse(prefix.trim())) else {
        return false;
    };
    if !d.username().is_empty() || d.password().is_some() {
        return false;
    }
    let dir = |u: &url::Url| {
        let path = u.path().trim_end_matches('/');
        format!("{path}/")
    };
    d.scheme() == p.scheme()
        && d.host_str().is_some()
        && d.host_str() == p.host_str()
        && d.port_or_known_default() == p.port_or_known_default()
        && dir(&d).starts_with(&dir(&p))
}

/// The storage options a process takes from a plan another process made for `table`, under
/// its own `own` options (lower-case keys; its options, then its storage variables): a
/// host-name part must look like one; an endpoint the process sets itself is its own (the
/// plan's is dropped); an endpoint it does not set is taken only under an `allowed` prefix,
/// and the plan's [`DESTINATION_FLAG_KEYS`] only with such an endpoint.
/// Errors: [`Error::DestinationRefused`] naming the option and value otherwise (reading the
/// table from wherever the process would go instead could give another table's rows).
pub fn accept_plan_options(
    table: &str,
    plan: &[(String, String)],
    own: &dyn Fn(&str) -> Option<String>,
    allowed: &[String],
) -> crate::Result<Vec<(String, String)>> {
    let refuse = |key: &str, value: &str, why: String| Error::DestinationRefused {
        table: table.to_string(),
        option: key.to_string(),
        value: value.to_string(),
        reason: why,
    };
    let mut out = Vec::new();
    let mut endpoint_taken = false;
    for (k, v) in plan {
        if HOST_PART_KEYS.contains(&k.as_str()) && !is_host_part(v) {
            return Err(refuse(
                k,
                v,
                "not a name of letters, digits, '-', '.' and '_' (it becomes part of a host name)"
                    .into(),
            ));
        }
        if ENDPOINT_KEYS.contains(&k.as_str()) {
            if own(k).is_some() {
                continue;
            }
            if !allowed.iter().any(|a| endpoint_allowed(v, a)) {
                return Err(refuse(
                    k,
                    v,
                    format!(
                        "this process sets no {k} of its own and allows no such endpoint (allowed: {})",
                        if allowed.is_empty() {
                            "none".to_string()
                        } else {
                            allowed.join(", ")
                        }
                    ),
                ));
            }
            endpoint_taken = true;
        }
        out.push((k.clone(), v.clone()));
    }
    // Flags come with an endpoint the process allowed; otherwise its own settings hold.
    Ok(out
        .into_iter()
        .filter(|(k, _)| {
            !DESTINATION_FLAG_KEYS.contains(&k.as_str()) || (endpoint_taken && own(k).is_none())
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn endpoints_are_compared_as_parsed_urls() {
        let p = "http://127.0.0.1:9000/";
        assert!(endpoint_allowed("http://127.0.0.1:9000", p));
        assert!(endpoint_allowed("http://127.0.0.1:9000/bucket", p));
        assert!(!endpoint_allowed("https://127.0.0.1:9000", p), "scheme");
        assert!(!endpoint_allowed("http://127.0.0.1:9001", p), "port");
        assert!(!endpoint_allowed(
            "http://127.0.0.1:9000@169.254.169.254/",
            p
        ));
        assert!(!endpoint_allowed(
            "http://169.254.169.254/?http://127.0.0.1:9000",
            p
        ));
        assert!(
            !endpoint_allowed("http://user@127.0.0.1:9000/", p),
            "userinfo"
        );
        assert!(!endpoint_allowed(
            "http://127.0.0.1:9000/",
            "http://127.0.0.1:9000/only"
        ));
        assert!(!endpoint_allowed("not a url", p));
    }

    #[test]
    fn host_parts_are_names() {
        assert!(is_host_part("eu-west-1"));
        assert!(is_host_part("my_account.x"));
        for bad in ["evil.com/", "a@b", "x:80", "a#b", "a b", "eu-west-1?"] {
            assert!(!is_host_part(bad), "{bad}");
        }
    }

    /// A plan's endpoint: the process's own wins; otherwise only under an allowed prefix, with
    /// the plan's flags; never an endpoint it does not allow, never a host-name part that is not
    /// a name.
    #[test]
    fn a_plan_names_only_allowed_destinations() {
        let plan = opts(&[
            ("aws_endpoint", "http://10.0.0.5:9000"),
            ("aws_allow_http", "true"),
            ("aws_region", "us-east-1"),
            ("read_slice_bytes", "1024"),
        ]);
        let none = |_: &str| None;
        let own_endpoint = |k: &str| (k == "aws_endpoint").then(|| "http://minio:9000".to_string());
        // Not allowed, not its own: refused, naming the option and value.
        let e = accept_plan_options("s3://b/t", &plan, &none, &[]).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("aws_endpoint") && msg.contains("http://10.0.0.5:9000"),
            "{msg}"
        );
        assert!(msg.contains("s3://b/t"), "{msg}");
        // Its own endpoint wins; the plan's flag does not come with it.
        let got = accept_plan_options("t", &plan, &own_endpoint, &[]).unwrap();
        assert_eq!(
            got,
            opts(&[("aws_region", "us-east-1"), ("read_slice_bytes", "1024")])
        );
        // Allowed: the endpoint and its flag.
        let got =
            accept_plan_options("t", &plan, &none, &["http://10.0.0.5:9000/".into()]).unwrap();
        assert_eq!(got, plan);
        // A flag without an endpoint is dropped (the process's own settings hold).
        let got = accept_plan_options(
            "t",
            &opts(&[("allow_invalid_certificates", "true")]),
            &none,
            &[],
        )
        .unwrap();
        assert!(got.is_empty());
        // A region that ends the host name.
        let bad = opts(&[("aws_region", "evil.com/x?")]);
        assert!(accept_plan_options("t", &bad, &none, &[]).is_err());
        // The Azure and GCS endpoints follow the same rule.
        for k in ["azure_storage_endpoint", "google_base_url", "endpoint"] {
            let p = opts(&[(k, "http://169.254.169.254/")]);
            assert!(accept_plan_options("t", &p, &none, &[]).is_err(), "{k}");
        }
    }
}
