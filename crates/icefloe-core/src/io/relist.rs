//! Listings asked for again when their body is cut short: `object_store` retries a listing
//! request that fails (timeouts, 5xx, refused connections) but not a response body that ends
//! early, which a dropped connection mid-listing gives.

use std::time::Duration;

use object_store::path::Path;
use object_store::{ListResult, ObjectStore};

/// Further attempts at a whole listing after the first fails.
const RELISTS: u32 = 3;

/// `store.list_with_delimiter(prefix)`, asked for up to [`RELISTS`] more times (50, 100,
/// 200 ms apart) when it fails other than with `NotFound`.
pub async fn list_with_delimiter(
    store: &dyn ObjectStore,
    prefix: Option<&Path>,
) -> object_store::Result<ListResult> {
    let mut attempt = 0;
    loop {
        match store.list_with_delimiter(prefix).await {
            Err(e) if attempt < RELISTS && !matches!(e, object_store::Error::NotFound { .. }) => {
                tracing::debug!("listing {prefix:?} again: {e}");
                tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
                attempt += 1;
            }
            other => return other,
        }
    }
}
