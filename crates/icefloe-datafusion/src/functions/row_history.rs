//! `icefloe_row_history`: every readable version of rows by `_row_id`, oldest first, as
//! `icefloe history --row-id` prints them, with each version's retention evaluated now under
//! the table's snapshot retention (spec: "Snapshot Retention Policy").

use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::error::Result;
use futures::FutureExt;
use icefloe_core::history::retention::{ExpiryRun, Overrides, Policy};
use icefloe_core::history::row_history::{row_history, row_history_schema, RowSelector};

use super::args::Signature;
use super::computed::ComputedTable;
use crate::registry::TableRegistry;

pub(super) const SIGNATURE: Signature = Signature {
    name: "icefloe_row_history",
    usage: "icefloe_row_history('table', row_id [, row_id …])",
    min: 2,
    max: None,
};

/// The row history table function.
#[derive(Debug)]
pub(super) struct RowHistory {
    pub registry: Arc<TableRegistry>,
}

impl TableFunctionImpl for RowHistory {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let sig = SIGNATURE;
        self.registry.check_local(sig.name)?;
        let values = sig.values(args.exprs(), args.session())?;
        let name = sig.text(&values[0], "the table")?;
        let table = super::table(&self.registry, sig.name, &name)?;
        let ids = values[1..]
            .iter()
            .map(|v| sig.int(v, "a row id"))
            .collect::<Result<Vec<_>, _>>()?;
        let schema = row_history_schema(&table);
        let compute = Arc::new(move || {
            let table = table.clone();
            let sel = RowSelector::RowIds(ids.clone());
            async move {
                let now = chrono::Utc::now().timestamp_millis();
                let run =
                    ExpiryRun::evaluate(&table, Policy::Iceberg, Overrides::default(), now).await?;
                let batch =
                    row_history(&table, &sel, Some((&run.expiry, &run.kept.snapshots))).await?;
                Ok(vec![batch])
            }
            .boxed()
        });
        Ok(Arc::new(ComputedTable::new(
            format!("{}('{name}')", sig.name),
            schema,
            compute,
        )))
    }
}
