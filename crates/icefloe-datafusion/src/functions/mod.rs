//! The table functions of a session, each over a table the query names by its first argument
//! (a name as SQL writes it: `'t'`, `'db.events'`):
//!
//! | function | rows |
//! |---|---|
//! | `icefloe_snapshot('t', id)` | snapshot `id` (spec: "Snapshots"), read with its own schema |
//! | `icefloe_as_of('t', time)` | the snapshot current on `main` at `time` (ms since the epoch, ISO-8601 text, or a timestamp) |
//! | `icefloe_ref('t', 'name')` | the snapshot a branch or tag points at (a branch reads with the current schema, a tag with its snapshot's) |
//! | `icefloe_changes('t', from [, to])` | the change feed after `from` up to `to` (default: current), one row per change |
//! | `icefloe_net_changes('t', from [, to])` | the same, one row per `_row_id` with its net effect |
//! | `icefloe_row_history('t', row_id, …)` | every readable version of those rows, oldest first |
//!
//! `from` and `to` are snapshot ids or branch/tag names; `from` NULL starts before the
//! table's first snapshot. The time-travel functions show the session's extra columns
//! ([`crate::ExtraColumns`]); the change feed and row history always carry `_row_id` and
//! `_last_updated_sequence_number` (their rows are matched by them).

mod args;
mod changes;
mod computed;
mod row_history;
mod time_travel;

use std::sync::Arc;

use datafusion::prelude::SessionContext;
use icefloe_core::Table;

use crate::error::SqlError;
use crate::registry::TableRegistry;

pub use computed::ComputedTable;

/// Names of the table functions, all starting with `icefloe_`.
pub const FUNCTIONS: [&str; 6] = [
    "icefloe_snapshot",
    "icefloe_as_of",
    "icefloe_ref",
    "icefloe_changes",
    "icefloe_net_changes",
    "icefloe_row_history",
];

/// Registers every table function in `ctx`, finding tables in `registry`.
pub fn register(ctx: &SessionContext, registry: Arc<TableRegistry>) {
    use time_travel::{Kind, TimeTravel};
    for kind in [Kind::Snapshot, Kind::AsOf, Kind::Ref] {
        let f = TimeTravel {
            kind,
            registry: registry.clone(),
        };
        ctx.register_udtf(kind.signature().name, Arc::new(f));
    }
    for net in [false, true] {
        let f = changes::Changes {
            net,
            registry: registry.clone(),
        };
        ctx.register_udtf(f.signature().name, Arc::new(f));
    }
    ctx.register_udtf(
        row_history::SIGNATURE.name,
        Arc::new(row_history::RowHistory { registry }),
    );
}

/// The table `name` means for `function`.
fn table(registry: &TableRegistry, function: &'static str, name: &str) -> Result<Table, SqlError> {
    registry.get(name).ok_or_else(|| {
        let known = registry.names();
        SqlError::UnknownTable {
            function,
            name: name.to_string(),
            hint: if known.is_empty() {
                " (no table is known to this session)".to_string()
            } else {
                format!(" (known: {})", known.join(", "))
            },
        }
    })
}
