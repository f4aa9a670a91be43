//! `ANALYZE` of a foreign table: a uniform sample of the live rows of the snapshot the table
//! reads, from which Postgres computes null fractions, distinct counts, most common values and
//! histograms for join planning. The core draws random positions across every data file in
//! proportion to its `record_count` and reads only those (not a full pass); the row count is
//! exact from metadata where only deletion vectors apply, else estimated from the share of
//! drawn positions that were live. The Iceberg column metrics of the same snapshot then
//! correct the null fractions and histogram ends Postgres computes ([`crate::analyze_metrics`]).

use icefloe_core::scan::sample::SplitMix;
use pgrx::pg_sys;
use pgrx::{pg_guard, PgMemoryContexts};

use crate::analyze_metrics::StatColumn;
use crate::error::{FdwError, OrReport};
use crate::fdw::ScanState;
use icefloe_core::scan::column_stats::ColumnStats;

/// `AnalyzeForeignTable`: every icefloe table can be sampled.
#[pg_guard]
pub unsafe extern "C-unwind" fn analyze_foreign_table(
    _relation: pg_sys::Relation,
    func: *mut pg_sys::AcquireSampleRowsFunc,
    totalpages: *mut pg_sys::BlockNumber,
) -> bool {
    *func = Some(acquire_sample_rows);
    *totalpages = 1;
    true
}

#[pg_guard]
unsafe extern "C-unwind" fn acquire_sample_rows(
    relation: pg_sys::Relation,
    elevel: std::os::raw::c_int,
    rows: *mut pg_sys::HeapTuple,
    targrows: std::os::raw::c_int,
    totalrows: *mut f64,
    totaldeadrows: *mut f64,
) -> std::os::raw::c_int {
    let s = sample(relation, rows, targrows.max(0) as usize).or_report();
    // As heap tables say "N rows in sample" under ANALYZE VERBOSE.
    let fractions = s.metrics.iter().filter(|(_, m)| m.null_fraction.is_some());
    let bounded = s
        .metrics
        .iter()
        .filter(|(_, m)| m.lower.is_some() || m.upper.is_some());
    let line =
        format!(
        "icefloe: drew {} of {} positions in {} data files, read {} live rows, kept {}; {} rows {}; \
         column metrics give the null fraction of {} columns and bounds of {}",
        s.drawn,
        s.records,
        s.files,
        s.seen,
        s.kept,
        s.total,
        if s.exact { "(exact, from metadata)" } else { "(estimated)" },
        fractions.count(),
        bounded.count(),
    );
    if elevel >= pg_sys::INFO as std::os::raw::c_int {
        pgrx::info!("{line}");
    } else {
        pgrx::debug2!("{line}");
    }
    *totalrows = s.total;
    *totaldeadrows = 0.0;
    // Written over the statistics Postgres computes from the sample, once it has stored them.
    crate::analyze_metrics::remember(relation, s.metrics);
    s.kept as std::os::raw::c_int
}

/// What a sample drew and kept.
struct Sampled {
    /// Sample rows stored in the caller's array.
    kept: usize,
    /// Live rows read at the drawn positions.
    seen: u64,
    /// Positions drawn, and the data files' record count they were drawn from.
    drawn: u64,
    records: i64,
    files: usize,
    /// The table's live rows: exact from metadata where only deletion vectors apply.
    total: f64,
    exact: bool,
    /// What the metrics of the sampled snapshot say about the columns.
    metrics: Vec<(StatColumn, ColumnStats)>,
}

/// Draws `OVERSAMPLE_PERCENT`% of `target` random positions (deletes drop some) and keeps a
/// uniform sample of `target` of the live rows read (Algorithm R).
unsafe fn sample(
    relation: pg_sys::Relation,
    rows: *mut pg_sys::HeapTuple,
    target: usize,
) -> Result<Sampled, FdwError> {
    let tupdesc = (*relation).rd_att;
    let seed = (pg_sys::GetCurrentTimestamp() as u64) | 1;
    let draw = (target as u64).saturating_mul(OVERSAMPLE_PERCENT) / 100;
    let (mut state, columns) = ScanState::whole_table(
        (*relation).rd_id,
        tupdesc,
        pg_sys::GetUserId(),
        Some((draw, seed)),
    )?;
    let tasks = state.tasks();
    let records: i64 = tasks.iter().map(|t| t.data_file.record_count.max(0)).sum();
    let exact = icefloe_core::scan::live_count::live_rows_from_metadata(tasks);
    let drawn = icefloe_core::scan::sample::positions_drawn(tasks, draw);
    let files = tasks.len();
    let metrics = columns
        .into_iter()
        .map(|c| {
            let stats = icefloe_core::scan::column_stats::column_stats(tasks, c.field_id, &c.ty);
            (c, stats)
        })
        .collect();
    let natts = (*tupdesc).natts as usize;
    let mut values = vec![pg_sys::Datum::from(0usize); natts];
    let mut nulls = vec![true; natts];
    // Each row's Datums live in a context reset after the row; kept tuples are copied into
    // the caller's (ANALYZE's) context by heap_form_tuple.
    let mut per_row = PgMemoryContexts::new("icefloe analyze row");
    // Not the positions' generator: the reservoir's choices must not follow the draws.
    let mut rng = SplitMix::new(!seed);
    let mut kept = 0usize;
    let mut seen = 0u64;
    loop {
        let more = per_row.switch_to(|_| state.next_row(&mut values, &mut nulls))?;
        if !more {
            break;
        }
        let slot = if kept < target {
            Some(kept)
        } else {
            let j = rng.at_most(seen) as usize;
            (j < target).then_some(j)
        };
        if let Some(i) = slot {
            let tuple = pg_sys::heap_form_tuple(tupdesc, values.as_mut_ptr(), nulls.as_mut_ptr());
            if i < kept {
                pg_sys::heap_freetuple(*rows.add(i));
            } else {
                kept += 1;
            }
            *rows.add(i) = tuple;
        }
        seen += 1;
        per_row.reset();
        if seen.is_multiple_of(8192) {
            pgrx::check_for_interrupts!();
        }
    }
    let total = match exact {
        Some(n) => n as f64,
        None if drawn == 0 => 0.0,
        None => records as f64 * seen as f64 / drawn as f64,
    };
    Ok(Sampled {
        kept,
        seen,
        drawn,
        records,
        files,
        total,
        exact: exact.is_some(),
        metrics,
    })
}

/// Positions drawn per sample row wanted, in percent: a margin for deleted positions.
const OVERSAMPLE_PERCENT: u64 = 125;
