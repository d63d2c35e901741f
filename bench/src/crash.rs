//! The crash test: kill a writer with SIGKILL at random moments and check
//! that the store it leaves behind holds exactly what was acknowledged.
//!
//! A *child* process (the `crash` binary in its hidden `--child` mode, see
//! [`run_child`]) opens a store with three families and writes numbered
//! batches. Batch `n` puts `n` into several cells of every family, deletes a
//! cell and a whole row written `WINDOW` batches earlier, and moves a counter;
//! it prints `n` only after [`Store::write`] returned, so every printed number
//! is an *acknowledged* batch. Memtables are tiny and compaction eager, so a
//! kill lands in the middle of a flush or a compaction as often as in a write.
//!
//! The *parent* ([`run`]) kills the child after a random delay, reopens the
//! store and rebuilds, from the counter `M` it finds, the exact contents that
//! batches `1..=M` must leave ([`expected_state`]). Because every batch is one
//! log record, the store must equal that state exactly: a difference is a batch
//! applied in part. `M` below the last acknowledged number is a lost batch; `M`
//! above it plus one (the one write that may have been in flight) is a batch
//! that was never written. Every operation of batch `n` carries timestamp `n`,
//! so the expected state does not depend on the clock.
//!
//! With [`SyncPolicy::Never`] a killed *process* still loses nothing (each
//! write reached the kernel before it returned); what the test checks there is
//! that the surviving history is a prefix of the written one.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cellar_engine::{FamilyOptions, RowRange, Store, StoreOptions, SyncPolicy, WriteBatch};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::error::{Error, Result};

/// The families the child writes.
pub const FAMILIES: [&str; 3] = ["a", "b", "c"];
/// A batch deletes what batch `n - WINDOW` wrote, so the live data stays
/// small and tombstones meet their targets in flushes and compactions.
const WINDOW: u64 = 40;
/// Rows overwritten in turn (`hot0`..`hot7`): batch `n` writes `hot{n % HOT}`.
const HOT: u64 = 8;
/// A child stops by itself after this many batches (in case no one kills it).
const CHILD_MAX_BATCHES: u64 = 1_000_000;

/// What one crash run does.
#[derive(Clone, Debug)]
pub struct CrashConfig {
    /// The store folder (two stores are made inside: `always/` and `never/`).
    pub dir: PathBuf,
    /// Kills in total, half with [`SyncPolicy::Always`], half with [`SyncPolicy::Never`].
    pub kills: u64,
    /// Stop early once this much time has passed (the kills done are reported).
    pub time_limit: Option<Duration>,
    /// Seed of the random delays.
    pub seed: u64,
    /// Longest delay between the child's first acknowledged batch and its kill.
    pub max_delay: Duration,
    /// The executable that runs [`run_child`] when given `--child --dir D --sync always|never`.
    pub child_exe: PathBuf,
}

/// What happened at one kill.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KillOutcome {
    /// The sync policy of this phase.
    pub sync: String,
    /// Number of this kill, from 1 over the whole run.
    pub kill: u64,
    /// Highest batch number the child printed (0 = none in this store yet).
    pub acknowledged: u64,
    /// Highest batch number found in the reopened store.
    pub recovered: u64,
    /// Acknowledged batches missing from the store.
    pub lost: u64,
    /// Batches whose cells disagree (some applied, some not).
    pub half_applied: u64,
    /// Batches present that were never written (beyond acknowledged + 1).
    pub unwritten: u64,
    /// The reopen failed (the store refused to open or to read).
    pub reopen_failed: bool,
    /// The first few differences, or the reopen error, for the report.
    pub detail: Vec<String>,
}

/// Totals of a crash run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// Kills done.
    pub kills: u64,
    /// Acknowledged batches lost, summed over the kills.
    pub lost: u64,
    /// Batches applied in part.
    pub half_applied: u64,
    /// Batches seen that were never written.
    pub unwritten: u64,
    /// Reopens that failed.
    pub reopen_failures: u64,
    /// Batches acknowledged in total.
    pub acknowledged: u64,
}

impl CrashReport {
    /// True when nothing went wrong.
    pub fn clean(&self) -> bool {
        self.lost == 0 && self.half_applied == 0 && self.unwritten == 0 && self.reopen_failures == 0
    }

    /// The run's last line.
    pub fn summary(&self) -> String {
        format!(
            "kills {}, acknowledged batches lost {}, half-applied {}, reopen failures {}",
            self.kills, self.lost, self.half_applied, self.reopen_failures
        )
    }
}

/// The store options of the test: three families with tiny memtables, small
/// blocks and eager compaction, so that flushes and compactions are frequent.
pub fn store_options(sync: SyncPolicy) -> StoreOptions {
    let family = FamilyOptions::default()
        .memtable_max_entries(200)
        .compaction_trigger(2)
        .target_file_entries(150)
        .block_size(512);
    let mut options = StoreOptions::default().sync(sync);
    for name in FAMILIES {
        options = options.family_with(name, family.clone());
    }
    options
}

/// Parses `always` / `never`.
pub fn parse_sync(text: &str) -> Option<SyncPolicy> {
    match text {
        "always" => Some(SyncPolicy::Always),
        "never" => Some(SyncPolicy::Never),
        _ => None,
    }
}

fn sync_name(sync: SyncPolicy) -> &'static str {
    match sync {
        SyncPolicy::Always => "always",
        _ => "never",
    }
}

fn row_key(n: u64) -> String {
    format!("n{n:010}")
}

/// The batch numbered `n`.
pub fn batch(n: u64) -> WriteBatch {
    let value = n.to_string();
    let mut b = WriteBatch::new();
    let row = row_key(n);
    b.put_at("a", &row, "v", n, &value);
    b.put_at("a", &row, "w", n, &value);
    b.put_at("b", &row, "v", n, &value);
    b.put_at("c", &row, "v", n, &value);
    let hot = format!("hot{}", n % HOT);
    b.put_at("a", &hot, "x", n, &value);
    b.put_at("b", &hot, "x", n, &value);
    b.put_at("c", "meta", "last", n, &value);
    if n > WINDOW {
        let old = row_key(n - WINDOW);
        b.delete_at("a", &old, "v", n);
        b.delete_row_at("b", &old, n);
        b.delete_at("c", &old, "v", n);
    }
    if n > 2 * WINDOW {
        b.delete_row_at("a", row_key(n - 2 * WINDOW), n);
    }
    b
}

/// A store's visible contents: `(family, row, column) -> value`.
pub type State = BTreeMap<(String, String, String), String>;

/// What batches `1..=m` leave, and nothing else.
pub fn expected_state(m: u64) -> State {
    let mut state = State::new();
    let mut put = |f: &str, r: String, c: &str, v: u64| {
        state.insert((f.to_string(), r, c.to_string()), v.to_string());
    };
    for n in m.saturating_sub(2 * WINDOW - 1).max(1)..=m {
        let row = row_key(n);
        if n + WINDOW > m {
            put("a", row.clone(), "v", n);
            put("b", row.clone(), "v", n);
            put("c", row.clone(), "v", n);
        }
        put("a", row, "w", n);
    }
    for n in m.saturating_sub(HOT - 1).max(1)..=m {
        put("a", format!("hot{}", n % HOT), "x", n);
        put("b", format!("hot{}", n % HOT), "x", n);
    }
    if m > 0 {
        put("c", "meta".into(), "last", m);
    }
    state
}

/// Reads every visible cell of the three families.
pub fn read_state(store: &Store) -> Result<State> {
    let mut state = State::new();
    for family in FAMILIES {
        for row in store.scan(family, &RowRange::all())? {
            let row = row?;
            for cell in row.cells {
                state.insert(
                    (
                        family.to_string(),
                        String::from_utf8_lossy(&row.key).into_owned(),
                        String::from_utf8_lossy(&cell.column).into_owned(),
                    ),
                    String::from_utf8_lossy(&cell.value).into_owned(),
                );
            }
        }
    }
    Ok(state)
}

/// The highest batch number a store holds (its counter), 0 if none.
fn recovered_batch(state: &State) -> u64 {
    state
        .get(&("c".to_string(), "meta".to_string(), "last".to_string()))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The batch a cell belongs to, for counting half-applied batches.
fn batch_of(key: &(String, String, String), value: Option<&String>) -> u64 {
    if let Some(n) = key.1.strip_prefix('n').and_then(|d| d.parse().ok()) {
        return n;
    }
    value.and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Compares a reopened store with what was acknowledged: fills `lost`,
/// `half_applied`, `unwritten` and `detail` of `outcome`.
pub fn check(state: &State, acknowledged: u64, outcome: &mut KillOutcome) {
    let m = recovered_batch(state);
    outcome.recovered = m;
    outcome.lost = acknowledged.saturating_sub(m);
    outcome.unwritten = m.saturating_sub(acknowledged + 1);
    let expected = expected_state(m);
    let mut bad_batches = std::collections::BTreeSet::new();
    for (key, want) in &expected {
        let got = state.get(key);
        if got != Some(want) {
            bad_batches.insert(batch_of(key, Some(want)));
            if outcome.detail.len() < 5 {
                outcome.detail.push(format!("{key:?}: expected {want}, found {got:?}"));
            }
        }
    }
    for (key, got) in state {
        if !expected.contains_key(key) {
            bad_batches.insert(batch_of(key, Some(got)));
            if outcome.detail.len() < 5 {
                outcome.detail.push(format!("{key:?}: unexpected value {got}"));
            }
        }
    }
    outcome.half_applied = bad_batches.len() as u64;
    if outcome.lost > 0 {
        outcome
            .detail
            .push(format!("acknowledged up to {acknowledged}, store holds up to {m}"));
    }
}

/// The child: opens the store at `dir`, continues numbering after the batch
/// the store holds, and writes batches forever, printing each number to `out`
/// (flushed) after its write returned.
pub fn run_child(dir: &Path, sync: SyncPolicy, out: &mut dyn Write) -> Result<()> {
    let store = Store::open(dir, store_options(sync))?;
    let last = store
        .get("c", "meta", "last")?
        .and_then(|c| String::from_utf8_lossy(&c.value).parse::<u64>().ok())
        .unwrap_or(0);
    for n in last + 1..=last + CHILD_MAX_BATCHES {
        store.write(&batch(n))?;
        // A closed pipe means the parent is gone: stop writing.
        if writeln!(out, "{n}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
    Ok(())
}

/// Spawns a child on `dir`, kills it with SIGKILL after a random delay, and
/// returns the highest number it printed (`None` if it printed none).
fn kill_one(config: &CrashConfig, dir: &Path, sync: SyncPolicy, rng: &mut StdRng) -> Result<Option<u64>> {
    let exe = &config.child_exe;
    let mut child = Command::new(exe)
        .args(["--child", "--sync", sync_name(sync), "--dir"])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| Error::io(exe, e))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| Error::io(exe, std::io::Error::other("child has no stdout")))?;
    // The last printed number + 1 (0 = none yet), updated by a reader thread
    // so the parent can sleep and kill while the child writes.
    let printed = Arc::new(AtomicU64::new(0));
    let reader = {
        let printed = Arc::clone(&printed);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(n) = line.trim().parse::<u64>() {
                    printed.fetch_max(n + 1, Ordering::SeqCst);
                }
            }
        })
    };
    // One kill in ten lands at a random moment from the start, often during
    // the open (log replay, recovery flushes); the others after the child's
    // first acknowledged batch, in the middle of the writes, flushes and
    // compactions.
    let max_delay = config.max_delay.as_micros().max(1) as u64;
    let delay = Duration::from_micros(rng.random_range(0..max_delay));
    if rng.random_range(0..10u32) != 0 {
        let started = Instant::now();
        while printed.load(Ordering::SeqCst) == 0 && started.elapsed() < Duration::from_secs(30) {
            if child.try_wait().map_err(|e| Error::io(exe, e))?.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    std::thread::sleep(delay);
    child.kill().map_err(|e| Error::io(exe, e))?; // SIGKILL
    child.wait().map_err(|e| Error::io(exe, e))?;
    // The pipe is closed now: the reader drains every line the child printed.
    let _ = reader.join();
    Ok(printed.load(Ordering::SeqCst).checked_sub(1))
}

/// Runs the crash test: `config.kills` kills, the first half with
/// [`SyncPolicy::Always`], the second with [`SyncPolicy::Never`], each phase on
/// its own store. `on_kill` sees the outcome of every kill.
pub fn run(config: &CrashConfig, on_kill: &mut dyn FnMut(&KillOutcome)) -> Result<CrashReport> {
    let mut rng = StdRng::seed_from_u64(config.seed);
    let mut report = CrashReport::default();
    let started = Instant::now();
    let always_kills = config.kills.div_ceil(2);
    for (sync, kills) in [
        (SyncPolicy::Always, always_kills),
        (SyncPolicy::Never, config.kills - always_kills),
    ] {
        let dir = config.dir.join(sync_name(sync));
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        // What the store held after the last reopen: a kill before the
        // child prints anything acknowledges nothing new. A store left by an
        // earlier run in the same folder is continued.
        let mut acknowledged = {
            let store = Store::open(&dir, store_options(sync))?;
            recovered_batch(&read_state(&store)?)
        };
        for _ in 0..kills {
            if config.time_limit.is_some_and(|limit| started.elapsed() >= limit) {
                return Ok(report);
            }
            if let Some(n) = kill_one(config, &dir, sync, &mut rng)? {
                report.acknowledged += n.saturating_sub(acknowledged);
                acknowledged = acknowledged.max(n);
            }
            report.kills += 1;
            let mut outcome = KillOutcome {
                sync: sync_name(sync).to_string(),
                kill: report.kills,
                acknowledged,
                ..KillOutcome::default()
            };
            let reopened = Store::open(&dir, store_options(sync)).and_then(|store| {
                store.verify()?;
                Ok(store)
            });
            match reopened.map_err(Error::from).and_then(|store| read_state(&store)) {
                Ok(state) => {
                    check(&state, acknowledged, &mut outcome);
                    // The next child continues after what the store holds.
                    acknowledged = acknowledged.max(outcome.recovered);
                }
                Err(e) => {
                    outcome.reopen_failed = true;
                    outcome.detail.push(e.to_string());
                }
            }
            report.lost += outcome.lost;
            report.half_applied += outcome.half_applied;
            report.unwritten += outcome.unwritten;
            report.reopen_failures += u64::from(outcome.reopen_failed);
            on_kill(&outcome);
            if outcome.reopen_failed {
                // A store that does not open cannot be tested further.
                break;
            }
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_state_keeps_a_window_of_rows() {
        assert!(expected_state(0).is_empty());
        let s = expected_state(3);
        // Rows 1..=3 in a (v, w), b, c; hot1..hot3 in a and b; the counter.
        assert_eq!(s.len(), 3 * 4 + 3 * 2 + 1);
        let s = expected_state(200);
        // Window of 40 rows with v in a/b/c, 80 rows with w in a, 8 hot rows in a/b, the counter.
        assert_eq!(s.len(), 40 * 3 + 80 + 8 * 2 + 1);
    }

    #[test]
    fn a_store_missing_one_cell_of_a_batch_counts_as_half_applied() {
        let mut state = expected_state(100);
        state.remove(&("b".to_string(), row_key(99), "v".to_string()));
        let mut outcome = KillOutcome::default();
        check(&state, 100, &mut outcome);
        assert_eq!((outcome.lost, outcome.half_applied, outcome.unwritten), (0, 1, 0));
        let mut outcome = KillOutcome::default();
        check(&expected_state(97), 100, &mut outcome);
        assert_eq!((outcome.lost, outcome.half_applied, outcome.unwritten), (3, 0, 0));
    }
}
