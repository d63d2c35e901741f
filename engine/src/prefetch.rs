//! Prefetching: asking for a cache line before it is needed.
//!
//! A memtable's work is mostly waiting on memory: a skip-list search follows
//! pointers into nodes scattered over tens of megabytes, a row filter's
//! block is wherever the row's hash lands. When the address is known a
//! little before the bytes are needed, asking for it first lets the load
//! overlap other work. (The table crate has its own, for slices of a block.)

/// Asks the processor to start loading the cache line holding `at`, without
/// waiting for it. A hint only: it reads nothing into the program and never
/// faults, whatever the address (so `at` may lie past the end of a node).
#[inline]
pub(crate) fn prefetch_line(at: *const u8) {
    // SAFETY: `_mm_prefetch` needs SSE, in every x86_64 processor's
    // baseline; it never faults and reads nothing into the program.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}
