//! Emptying and filling the scan's tuple slot once per row without pgrx's FFI guard.
//!
//! Every `pg_sys` call goes through a `sigsetjmp` guard (so that an `ERROR` raised in C becomes
//! a Rust panic). `ExecClearTuple` and `ExecStoreVirtualTuple` are called for every row the
//! scan returns, and the guard around them cost more than the rest of the row on narrow
//! queries. Neither can raise an error on the path taken here, so the guard buys nothing:
//! - storing a virtual tuple only sets the slot's flags (what `ExecStoreVirtualTuple` does);
//! - clearing a heap or virtual slot that owns no tuple (`TTS_FLAG_SHOULDFREE` unset: the scan
//!   only ever stores virtual tuples) only resets fields. Any other slot goes through the
//!   guarded `pg_sys::ExecClearTuple`.

use pgrx::pg_sys;

/// Empties `slot`, as `ExecClearTuple` does.
///
/// # Safety
/// `slot` is a valid tuple slot.
pub unsafe fn clear(slot: *mut pg_sys::TupleTableSlot) {
    let flags = u32::from((*slot).tts_flags);
    let ops = (*slot).tts_ops;
    let plain = std::ptr::eq(ops, &raw const pg_sys::TTSOpsHeapTuple)
        || std::ptr::eq(ops, &raw const pg_sys::TTSOpsVirtual);
    if flags & pg_sys::TTS_FLAG_EMPTY != 0 {
        return;
    }
    match (*ops).clear {
        // SAFETY: heap and virtual slots' `clear` without a tuple to free only resets fields:
        // it cannot raise an error, so no guard is needed.
        Some(clear) if plain && flags & pg_sys::TTS_FLAG_SHOULDFREE == 0 => clear(slot),
        _ => {
            pg_sys::ExecClearTuple(slot);
        }
    }
}

/// Marks the values and nulls written into `slot` (an empty slot) as its tuple, as
/// `ExecStoreVirtualTuple` does.
///
/// # Safety
/// `slot` is a valid, empty tuple slot whose `tts_values`/`tts_isnull` hold every attribute.
pub unsafe fn store_virtual(slot: *mut pg_sys::TupleTableSlot) {
    (*slot).tts_flags &= !(pg_sys::TTS_FLAG_EMPTY as u16);
    (*slot).tts_nvalid = (*(*slot).tts_tupleDescriptor).natts as pg_sys::AttrNumber;
}
