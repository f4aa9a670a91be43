//! What EXPLAIN shows of a foreign scan: the table and snapshot read, a pushed `count(*)`,
//! the files scanned and skipped, the pruning filters, and (ANALYZE) the rows read.

use std::ffi::CString;

use pgrx::pg_sys;
use pgrx::prelude::*;

use super::execution::state_of;

/// `ExplainForeignScan`: the scan's properties, in EXPLAIN's format.
#[pg_guard]
pub(super) unsafe extern "C-unwind" fn explain_foreign_scan(
    node: *mut pg_sys::ForeignScanState,
    es: *mut pg_sys::ExplainState,
) {
    let Some(state) = state_of(node) else { return };
    let text = |label: &str, value: &str| {
        if let (Ok(l), Ok(v)) = (CString::new(label), CString::new(value)) {
            pg_sys::ExplainPropertyText(l.as_ptr(), v.as_ptr(), es);
        }
    };
    let int = |label: &str, value: i64| {
        if let Ok(l) = CString::new(label) {
            pg_sys::ExplainPropertyInteger(l.as_ptr(), std::ptr::null(), value, es);
        }
    };
    text("Iceberg Table", &state.display);
    match state.snapshot_id {
        Some(id) => text("Snapshot", &id.to_string()),
        None => text("Snapshot", "none (table has no snapshot)"),
    }
    if let Some(agg) = &state.agg {
        let of = if state.pushed.is_empty() {
            ""
        } else {
            ", of the files whose identity partition values satisfy the conditions"
        };
        text(
            "Aggregate",
            &match agg.from_metadata {
                Some(_) => format!(
                    "count(*) from metadata (record counts minus deletion vector cardinalities{of})"
                ),
                None => {
                    format!("count(*) of the rows read (position or equality deletes apply{of})")
                }
            },
        );
    }
    int("Files Scanned", state.stats.kept as i64);
    if (*(*node).ss.ps.plan).parallel_aware {
        int("Units", state.units.len() as i64);
    }
    int("Files Skipped", state.stats.skipped as i64);
    if (*es).analyze {
        int("Rows Read", state.rows_read as i64);
    }
    if !state.pushed.is_empty() {
        text(
            "Pruning Filters",
            &state
                .pushed
                .iter()
                .map(|p| p.display.as_str())
                .collect::<Vec<_>>()
                .join(" AND "),
        );
    }
}
