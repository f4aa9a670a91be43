//! Row history from lineage, all read-only: the change feed between snapshots
//! ([`changes`]), every readable version of a row ([`row_history`]), what snapshot expiry
//! would remove and when ([`retention`]), and files no metadata references ([`orphans`]).

pub mod changes;
pub mod orphans;
pub mod range;
pub mod readable;
pub mod retention;
pub mod retention_report;
pub mod row_history;

pub use changes::{ChangeFeed, ChangeFeedBuilder, ChangeType};
