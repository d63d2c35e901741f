//! The store's clock: milliseconds since the Unix epoch.
//!
//! A write without a timestamp gets the clock's time (the write path keeps
//! its own clock from going backwards), and a family's TTL hides the cells
//! older than the clock's time minus the TTL. Reads, flushes, compactions,
//! recovery and repair all ask this one function.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the system clock is set before it).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
