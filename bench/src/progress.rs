//! Progress of a load, for a person watching a terminal.
//!
//! A lesson loads tens or hundreds of thousands of cells before it measures
//! anything. [`Progress`] is how it says how far it has got; the library never
//! draws anything itself. [`Silent`] ignores it (tests, the plain library
//! functions); [`TerminalBar`] draws an indicatif bar on stderr, but only once
//! a load has run for a second (a fast load should not flash a bar), and never
//! when stderr is not a terminal (indicatif's stderr target hides itself then,
//! so a redirected run prints only the tables).

use std::cell::RefCell;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A load shows a bar only after running this long.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// Receives the progress of a load.
pub trait Progress {
    /// A load of `total` steps (cells written) begins.
    fn start(&self, what: &str, total: u64);
    /// `steps` more steps are done.
    fn advance(&self, steps: u64);
    /// The load is over.
    fn finish(&self);
}

/// Ignores progress.
#[derive(Clone, Copy, Debug, Default)]
pub struct Silent;

impl Progress for Silent {
    fn start(&self, _what: &str, _total: u64) {}
    fn advance(&self, _steps: u64) {}
    fn finish(&self) {}
}

/// A progress bar on stderr for loads that take over a second.
#[derive(Debug, Default)]
pub struct TerminalBar {
    load: RefCell<Option<Load>>,
}

#[derive(Debug)]
struct Load {
    bar: ProgressBar,
    started: Instant,
    shown: bool,
}

impl TerminalBar {
    /// A bar that draws nothing until a load has run for a second.
    pub fn new() -> TerminalBar {
        TerminalBar::default()
    }
}

impl Progress for TerminalBar {
    fn start(&self, what: &str, total: u64) {
        // Hidden at first: the draw target is switched to stderr in `advance`
        // once the load has lasted long enough to be worth a bar.
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template("{msg} [{bar:30}] {human_pos}/{human_len} cells, {eta} left")
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(what.to_string());
        *self.load.borrow_mut() = Some(Load {
            bar,
            started: Instant::now(),
            shown: false,
        });
    }

    fn advance(&self, steps: u64) {
        if let Some(load) = self.load.borrow_mut().as_mut() {
            load.bar.inc(steps);
            if !load.shown && load.started.elapsed() >= SHOW_AFTER {
                // `stderr()` checks whether stderr is a terminal and draws
                // nothing when it is not (a pipe, a file, CI).
                load.bar.set_draw_target(ProgressDrawTarget::stderr());
                load.shown = true;
            }
        }
    }

    fn finish(&self) {
        if let Some(load) = self.load.borrow_mut().take() {
            load.bar.finish_and_clear();
        }
    }
}
