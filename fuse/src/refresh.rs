//! Polling the tables' metadata so new snapshots appear without remounting.

use std::sync::Arc;
use std::time::Duration;

use crate::catalog::MountCatalog;

/// Re-reads every table's metadata every `every` (and, on a warehouse, looks for new tables),
/// forever. Views are keyed by snapshot id, so nothing already rendered goes stale: a refresh
/// only changes which snapshots, refs and tables are listed.
pub async fn poll(catalog: Arc<MountCatalog>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tick.tick().await;
        let changed = catalog.refresh().await;
        if changed > 0 {
            tracing::debug!("refresh: {changed} table(s) changed");
        }
    }
}
