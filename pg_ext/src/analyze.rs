//! `ANALYZE` of a foreign table: a uniform sample of the live rows of the snapshot the table
//! reads (reservoir sampling over one streaming pass), from which Postgres computes null
//! fractions, distinct counts, most common values and histograms for join planning.

use pgrx::pg_sys;
use pgrx::{pg_guard, PgMemoryContexts};

use crate::error::{FdwError, OrReport};
use crate::fdw::ScanState;

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
    _elevel: std::os::raw::c_int,
    rows: *mut pg_sys::HeapTuple,
    targrows: std::os::raw::c_int,
    totalrows: *mut f64,
    totaldeadrows: *mut f64,
) -> std::os::raw::c_int {
    let (sampled, seen) = sample(relation, rows, targrows.max(0) as usize).or_report();
    *totalrows = seen as f64;
    *totaldeadrows = 0.0;
    sampled as std::os::raw::c_int
}

/// A small PRNG for the reservoir (xorshift64*): the sample need not be cryptographic.
struct Rng(u64);

impl Rng {
    /// A uniform integer in `0..=n`.
    fn below_or_eq(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let r = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d);
        ((r as u128 * (n as u128 + 1)) >> 64) as u64
    }
}

/// Streams every live row and keeps a uniform sample of `target` in `rows` (Algorithm R).
/// Returns (rows kept, rows seen).
unsafe fn sample(
    relation: pg_sys::Relation,
    rows: *mut pg_sys::HeapTuple,
    target: usize,
) -> Result<(usize, u64), FdwError> {
    let tupdesc = (*relation).rd_att;
    let mut state = ScanState::whole_table((*relation).rd_id, tupdesc, pg_sys::GetUserId())?;
    let natts = (*tupdesc).natts as usize;
    let mut values = vec![pg_sys::Datum::from(0usize); natts];
    let mut nulls = vec![true; natts];
    // Each row's Datums live in a context reset after the row; kept tuples are copied into
    // the caller's (ANALYZE's) context by heap_form_tuple.
    let mut per_row = PgMemoryContexts::new("icefloe analyze row");
    let mut rng = Rng((pg_sys::GetCurrentTimestamp() as u64) | 1);
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
            let j = rng.below_or_eq(seen) as usize;
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
    Ok((kept, seen))
}
