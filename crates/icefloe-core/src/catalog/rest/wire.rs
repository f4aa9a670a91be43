//! The JSON bodies of the REST catalog protocol that this client reads (OpenAPI spec
//! `open-api/rest-catalog-open-api.yaml`: CatalogConfig, ListNamespacesResponse,
//! ListTablesResponse, LoadTableResult, ErrorModel).

use std::collections::BTreeMap;

use serde::Deserialize;

/// `GET /v1/config`.
#[derive(Debug, Deserialize, Default)]
pub struct CatalogConfig {
    #[serde(default)]
    pub defaults: BTreeMap<String, String>,
    #[serde(default)]
    pub overrides: BTreeMap<String, String>,
}

/// `GET /v1/{prefix}/namespaces`: each namespace as its list of levels.
#[derive(Debug, Deserialize)]
pub struct ListNamespaces {
    #[serde(default)]
    pub namespaces: Vec<Vec<String>>,
    #[serde(rename = "next-page-token", default)]
    pub next_page_token: Option<String>,
}

/// A table identifier as the protocol writes it.
#[derive(Debug, Deserialize)]
pub struct Identifier {
    pub namespace: Vec<String>,
    pub name: String,
}

/// `GET /v1/{prefix}/namespaces/{namespace}/tables`.
#[derive(Debug, Deserialize)]
pub struct ListTables {
    #[serde(default)]
    pub identifiers: Vec<Identifier>,
    #[serde(rename = "next-page-token", default)]
    pub next_page_token: Option<String>,
}

/// One entry of `storage-credentials`: configuration for the paths under `prefix`.
#[derive(Debug, Deserialize, Clone)]
pub struct StorageCredential {
    pub prefix: String,
    #[serde(default)]
    pub config: BTreeMap<String, String>,
}

/// `GET /v1/{prefix}/namespaces/{namespace}/tables/{table}`.
#[derive(Debug, Deserialize)]
pub struct LoadTable {
    #[serde(rename = "metadata-location", default)]
    pub metadata_location: Option<String>,
    pub metadata: serde_json::Value,
    #[serde(default)]
    pub config: BTreeMap<String, String>,
    #[serde(rename = "storage-credentials", default)]
    pub storage_credentials: Vec<StorageCredential>,
}

/// An error answer: `{"error": {"message", "type", "code"}}`.
#[derive(Debug, Deserialize)]
pub struct ErrorModel {
    pub error: ErrorBody,
}

/// The body of [`ErrorModel`].
#[derive(Debug, Deserialize)]
pub struct ErrorBody {
    #[serde(default)]
    pub message: String,
    #[serde(rename = "type", default)]
    pub kind: String,
}
