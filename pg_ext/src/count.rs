//! `SELECT count(*) FROM t` answered from metadata, through upper-path (aggregate) pushdown:
//! the sum of the live data files' `record_count` minus each deletion vector's cardinality (a
//! data file has at most one deletion vector, and its `record_count` is its exact
//! cardinality). Where V2 position delete files or equality deletes apply, metadata is not
//! enough (position delete files may overlap and name a row twice): the scan then reads the
//! files and counts the live rows the core returns.
//!
//! Only a plain `count(*)` (one or more, no FILTER, DISTINCT, GROUP BY or HAVING) is pushed,
//! over a foreign table without WHERE conditions or whose conditions only touch identity
//! partition columns (exactly: the core's predicates mean what the conditions mean): then the
//! core proves from partition values that every row of each file left after pruning matches,
//! so the files' counts are the answer.

use pgrx::pg_sys;
use pgrx::{is_a, pg_guard};

use crate::pgutil::list_nodes;

/// `count(*)`'s function OID (`F_COUNT_` in fmgroids.h, fixed since Postgres 7).
const COUNT_STAR_OID: u32 = 2803;

/// Whether `node` is a plain `count(*)`.
unsafe fn is_count_star(node: *mut pg_sys::Node) -> bool {
    if node.is_null() || !is_a(node, pg_sys::NodeTag::T_Aggref) {
        return false;
    }
    let a = node as *mut pg_sys::Aggref;
    (*a).aggfnoid.to_u32() == COUNT_STAR_OID
        && (*a).aggstar
        && (*a).aggdistinct.is_null()
        && (*a).aggorder.is_null()
        && (*a).aggfilter.is_null()
        && (*a).aggkind == b'n' as std::os::raw::c_char
}

/// `GetForeignUpperPaths`: offers a foreign scan that returns the count for a plain
/// `count(*)` over one of our foreign tables without conditions.
#[pg_guard]
pub unsafe extern "C-unwind" fn get_foreign_upper_paths(
    root: *mut pg_sys::PlannerInfo,
    stage: pg_sys::UpperRelationKind::Type,
    input_rel: *mut pg_sys::RelOptInfo,
    output_rel: *mut pg_sys::RelOptInfo,
    _extra: *mut std::ffi::c_void,
) {
    if stage != pg_sys::UpperRelationKind::UPPERREL_GROUP_AGG
        || (*input_rel).reloptkind != pg_sys::RelOptKind::RELOPT_BASEREL
        || (!(*input_rel).baserestrictinfo.is_null()
            && !crate::fdw::rel_plan(input_rel).is_some_and(|p| p.countable))
    {
        return;
    }
    let parse = (*root).parse;
    if !(*parse).groupClause.is_null()
        || !(*parse).groupingSets.is_null()
        || !(*parse).havingQual.is_null()
        || (*parse).hasTargetSRFs
    {
        return;
    }
    let target = (*root).upper_targets[pg_sys::UpperRelationKind::UPPERREL_GROUP_AGG as usize];
    if target.is_null() {
        return;
    }
    let exprs = list_nodes((*target).exprs);
    if exprs.is_empty() || !exprs.iter().all(|e| is_count_star(*e)) {
        return;
    }
    let rti = (*input_rel).relid;
    let rte = *(*root).simple_rte_array.add(rti as usize);
    if rte.is_null() {
        return;
    }
    // [relid, rti, conditions]
    let quals = pg_sys::extract_actual_clauses((*input_rel).baserestrictinfo, false);
    let info = pg_sys::lappend(
        pg_sys::lappend_int(
            pg_sys::lappend_oid(std::ptr::null_mut(), (*rte).relid),
            rti as i32,
        ),
        quals as *mut std::ffi::c_void,
    );
    let (startup, total) = (1.0, 2.0);
    #[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15", feature = "pg16"))]
    let path = pg_sys::create_foreign_upper_path(
        root,
        output_rel,
        target,
        1.0,
        startup,
        total,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        info,
    );
    #[cfg(feature = "pg17")]
    let path = pg_sys::create_foreign_upper_path(
        root,
        output_rel,
        target,
        1.0,
        startup,
        total,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        info,
    );
    #[cfg(feature = "pg18")]
    let path = pg_sys::create_foreign_upper_path(
        root,
        output_rel,
        target,
        1.0,
        0,
        startup,
        total,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        info,
    );
    pg_sys::add_path(output_rel, path as *mut pg_sys::Path);
}

/// The plan of a counting path: no scan relation; its scan tuple is the `count(*)` values.
///
/// # Safety
/// `best_path` must be a path made by [`get_foreign_upper_paths`].
pub unsafe fn plan(
    best_path: *mut pg_sys::ForeignPath,
    tlist: *mut pg_sys::List,
    outer_plan: *mut pg_sys::Plan,
) -> *mut pg_sys::ForeignScan {
    let scan_tlist =
        pg_sys::add_to_flat_tlist(std::ptr::null_mut(), (*(*best_path).path.pathtarget).exprs);
    // fdw_private: [used attnums (none), [relid, rti]]
    let private = pg_sys::lappend(
        pg_sys::lappend(std::ptr::null_mut(), std::ptr::null_mut()),
        (*best_path).fdw_private as *mut std::ffi::c_void,
    );
    pg_sys::make_foreignscan(
        tlist,
        std::ptr::null_mut(),
        0,
        std::ptr::null_mut(),
        private,
        scan_tlist,
        std::ptr::null_mut(),
        outer_plan,
    )
}

/// For a counting plan, the foreign table it counts, its range-table index and the
/// conditions on it (identity partition columns only).
///
/// # Safety
/// `plan` must be one of this wrapper's foreign scans.
pub unsafe fn counted(
    plan: *mut pg_sys::ForeignScan,
) -> Option<(pg_sys::Oid, u32, *mut pg_sys::List)> {
    let private = (*plan).fdw_private;
    if private.is_null() || (*private).length < 2 {
        return None;
    }
    let info = pg_sys::list_nth(private, 1) as *mut pg_sys::List;
    if info.is_null() || (*info).length < 3 {
        return None;
    }
    Some((
        pg_sys::list_nth_oid(info, 0),
        pg_sys::list_nth_int(info, 1) as u32,
        pg_sys::list_nth(info, 2) as *mut pg_sys::List,
    ))
}

/// Whether conditions `quals` on a foreign table are pushed into a count: they are exactly
/// predicates (no parameters: a plan may outlive their values) that the core decides from
/// identity partition values alone, in every partition spec of the table.
///
/// # Safety
/// `quals` must be the base relation's condition list, of range-table entry `rti`.
pub unsafe fn conditions_countable(
    quals: *mut pg_sys::List,
    rti: u32,
    columns: &std::collections::HashMap<i16, crate::quals::PushColumn>,
    table: &icefloe_core::Table,
    schema: &icefloe_core::spec::Schema,
) -> bool {
    let Some(pushed) = crate::quals::extract_exact(quals, rti, columns, std::ptr::null_mut())
    else {
        return false;
    };
    let preds: Vec<_> = pushed.into_iter().map(|p| p.predicate).collect();
    let n = preds.len();
    let pruner = icefloe_core::scan::prune::Pruner::new(table.metadata(), schema, preds);
    pruner.predicates().len() == n && pruner.decided_by_identity_partitions()
}
