//! Test hooks: named points in the engine where a test runs code of its own.
//!
//! Some bugs live in the gap between two steps of two threads, a gap that
//! timing alone almost never opens. A hook holds one thread at a named point
//! while a test moves another one through the gap, so the interleaving
//! happens on every run (RocksDB's `SyncPoint` and TiKV's failpoints do the
//! same). Hooks are compiled only into the engine's own unit tests: in every
//! other build [`Inner::hook`](super::Inner::hook) is an empty function the
//! compiler removes.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

/// Code a test runs when a thread reaches a named point.
type Callback = Arc<dyn Fn() + Send + Sync>;

/// The callbacks of one store, by the name of their point.
#[derive(Default)]
pub(crate) struct Hooks {
    callbacks: Mutex<HashMap<&'static str, Callback>>,
}

impl Hooks {
    /// Runs `callback` each time a thread reaches the point `name`.
    pub(crate) fn set(&self, name: &'static str, callback: impl Fn() + Send + Sync + 'static) {
        self.callbacks.lock().insert(name, Arc::new(callback));
    }

    /// Runs the callback of `name`, if any (outside the lock, so a callback
    /// may block, or set other hooks).
    pub(crate) fn run(&self, name: &'static str) {
        let callback = self.callbacks.lock().get(name).cloned();
        if let Some(callback) = callback {
            callback();
        }
    }
}
