//! `icefloe_changes` and `icefloe_net_changes`: the core's change feed (spec: "Row Lineage";
//! the columns of `icefloe changes`: `_change_type`, `_change_ordinal`,
//! `_commit_snapshot_id`, `_change_sequence_number`, `_row_id`,
//! `_last_updated_sequence_number`, then the table's columns).

use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use futures::FutureExt;
use icefloe_core::history::ChangeFeed;
use icefloe_core::{SnapshotSelector, Table};

use super::args::{integer, Signature};
use super::computed::ComputedTable;
use crate::error::SqlError;
use crate::registry::TableRegistry;

/// A change feed table function.
#[derive(Debug)]
pub(super) struct Changes {
    pub net: bool,
    pub registry: Arc<TableRegistry>,
}

impl Changes {
    pub fn signature(&self) -> Signature {
        let (name, usage) = if self.net {
            (
                "icefloe_net_changes",
                "icefloe_net_changes('table', from [, to]), from and to snapshot ids or branch/tag names, from NULL for since the table's creation",
            )
        } else {
            (
                "icefloe_changes",
                "icefloe_changes('table', from [, to]), from and to snapshot ids or branch/tag names, from NULL for since the table's creation",
            )
        };
        Signature {
            name,
            usage,
            min: 2,
            max: Some(3),
        }
    }
}

/// A snapshot argument: an id, or a branch or tag name; `None` for NULL.
fn snapshot(
    sig: &Signature,
    table: &Table,
    v: &ScalarValue,
    what: &str,
) -> Result<Option<i64>, SqlError> {
    if v.is_null() {
        return Ok(None);
    }
    let sel = match integer(v) {
        Some(id) => SnapshotSelector::Id(id),
        None => SnapshotSelector::Ref(sig.text(v, what)?),
    };
    let s = table
        .select(&sel)?
        .ok_or_else(|| sig.error("the table has no snapshot"))?;
    Ok(Some(s.snapshot_id))
}

impl TableFunctionImpl for Changes {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let sig = self.signature();
        self.registry.check_local(sig.name)?;
        let values = sig.values(args.exprs(), args.session())?;
        let name = sig.text(&values[0], "the table")?;
        let table = super::table(&self.registry, sig.name, &name)?;
        let mut b = ChangeFeed::builder().net(self.net);
        b = match snapshot(&sig, &table, &values[1], "from")? {
            Some(id) => b.from_snapshot(id),
            None => b.from_creation(),
        };
        if let Some(v) = values.get(2) {
            if let Some(id) = snapshot(&sig, &table, v, "to")? {
                b = b.to_snapshot(id);
            }
        }
        let feed = Arc::new(b.build(&table).map_err(SqlError::from)?);
        let schema = feed.schema();
        let compute = Arc::new(move || {
            let feed = feed.clone();
            async move { feed.batches().await }.boxed()
        });
        Ok(Arc::new(ComputedTable::new(
            format!("{}('{name}')", sig.name),
            schema,
            compute,
        )))
    }
}
