//! Prefetching: asking for memory before it is needed.
//!
//! A read of a table is mostly waiting: a filter probe, a block's restart
//! array, a restart key each land on a cache line nobody touched lately, and
//! each load stalls the processor for a memory latency (about 100 ns from
//! DRAM; more with a page-table walk for a mapped file). When a reader knows
//! several addresses before it needs the first, it can request them all
//! first: the loads then overlap, and it waits about one latency instead of
//! one per address. A prefetch is only a hint: it changes no result and never
//! faults.

use std::ops::Range;

/// Bytes in a cache line (64 on the processors this is tuned for; a larger
/// line only makes some requests repeat one already made).
const CACHE_LINE: usize = 64;

/// Asks the processor to start loading every cache line of `bytes[range]`.
#[inline]
pub(crate) fn prefetch_all(bytes: &[u8], range: Range<usize>) {
    let last = (range.start < range.end).then(|| range.end - 1);
    for at in range.step_by(CACHE_LINE) {
        prefetch(bytes, at);
    }
    // Stepping from an address inside a line may step over the last line.
    if let Some(last) = last {
        prefetch(bytes, last);
    }
}

/// Asks the processor to start loading the cache line holding `bytes[at]`
/// (nothing past the end, or on an architecture without the instruction here).
#[inline]
pub(crate) fn prefetch(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(byte) = bytes.get(at) {
        // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 processor has
        // (it is in the target's baseline), and it never faults nor reads
        // into the program: the pointer is to a live byte anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(std::ptr::from_ref(byte).cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
}
