//! `icefloe_snapshot`, `icefloe_as_of` and `icefloe_ref`: a table at another snapshot
//! (spec: "Snapshots", "Snapshot References"), chosen by the core's selector.

use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::error::Result;
use icefloe_core::SnapshotSelector;

use super::args::Signature;
use crate::registry::TableRegistry;
use crate::table::IcefloeTable;

/// How the snapshot is named.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    Snapshot,
    AsOf,
    Ref,
}

impl Kind {
    pub fn signature(self) -> Signature {
        let (name, usage) = match self {
            Kind::Snapshot => ("icefloe_snapshot", "icefloe_snapshot('table', snapshot_id)"),
            Kind::AsOf => (
                "icefloe_as_of",
                "icefloe_as_of('table', time), time as milliseconds since the epoch, ISO-8601 text or a timestamp",
            ),
            Kind::Ref => ("icefloe_ref", "icefloe_ref('table', 'branch or tag')"),
        };
        Signature {
            name,
            usage,
            min: 2,
            max: Some(2),
        }
    }
}

/// A time-travel table function.
#[derive(Debug)]
pub(super) struct TimeTravel {
    pub kind: Kind,
    pub registry: Arc<TableRegistry>,
}

impl TableFunctionImpl for TimeTravel {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let sig = self.kind.signature();
        let values = sig.values(args.exprs(), args.session())?;
        let name = sig.text(&values[0], "the table")?;
        let table = super::table(&self.registry, sig.name, &name)?;
        let selector = match self.kind {
            Kind::Snapshot => SnapshotSelector::Id(sig.int(&values[1], "the snapshot id")?),
            Kind::AsOf => SnapshotSelector::AsOf(sig.instant_ms(&values[1], "the time")?),
            Kind::Ref => SnapshotSelector::Ref(sig.text(&values[1], "the branch or tag")?),
        };
        Ok(Arc::new(IcefloeTable::at(
            table,
            &selector,
            self.registry.extra(),
        )?))
    }
}
