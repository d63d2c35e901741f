//! What the criterion benches share: their timing and stopping cleanly on a
//! failed setup. (db_bench's key shapes and random numbers come from
//! `cellar_bench::peers::workloads`, which each bench imports itself.)

use std::time::Duration;

use criterion::Criterion;

/// Criterion's settings for every bench: 1 s of warm-up, 3 s of measurement.
pub fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

/// Stops the bench with a message: setup that fails (a temporary file, a
/// corrupt block) leaves nothing to measure.
#[cold]
pub fn fail(what: &str, e: impl std::fmt::Display) -> ! {
    eprintln!("bench setup failed: {what}: {e}");
    std::process::exit(1)
}

/// The value of `r`, or [`fail`].
pub fn ok<T, E: std::fmt::Display>(what: &str, r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| fail(what, e))
}
