//! Resident memory of a benchmark process, split into what the process
//! allocated and what it mapped from files.
//!
//! Linux counts a process's resident set (RSS) as three parts
//! (`/proc/<pid>/status`): `RssAnon`, anonymous memory (heap, stacks, a block
//! cache, memtables); `RssFile`, pages of files mapped into the process that
//! are resident right now; and `RssShmem`. A page of a table file that cellar
//! reads through its memory map counts in `RssFile` as soon as it is touched,
//! although it is the OS page cache's page, shared, clean, and dropped by the
//! kernel under memory pressure. An engine that reads its files with `pread`
//! (RocksDB, fjall) copies blocks into anonymous memory (its block cache) and
//! leaves the file pages in the page cache, where they count in no process's
//! RSS at all. So RSS alone favours the `pread` engines; the two parts are
//! reported apart.
//!
//! `VmHWM` is the kernel's exact peak of the whole RSS. The kernel keeps no
//! peak of each part, so a [`Sampler`] thread reads the parts every
//! [`SAMPLE_EVERY`] and keeps their maxima (a peak shorter than that can be missed).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often a [`Sampler`] reads `/proc`.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(10);

/// One reading of a process's memory, in KiB.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Memory {
    /// Anonymous resident memory (`RssAnon`).
    pub anon_kib: u64,
    /// Resident pages of mapped files (`RssFile`).
    pub file_kib: u64,
    /// The kernel's peak of the whole RSS since start or the last reset (`VmHWM`).
    pub hwm_kib: u64,
}

impl Memory {
    /// Reads `/proc/<pid>/status` (`pid` = `self` for this process).
    pub fn of(pid: &str) -> Option<Memory> {
        parse_status(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
    }

    /// The element-wise maximum of two readings.
    pub fn max(self, other: Memory) -> Memory {
        Memory {
            anon_kib: self.anon_kib.max(other.anon_kib),
            file_kib: self.file_kib.max(other.file_kib),
            hwm_kib: self.hwm_kib.max(other.hwm_kib),
        }
    }
}

/// The `RssAnon`, `RssFile` and `VmHWM` fields of a `/proc/<pid>/status` text.
pub fn parse_status(status: &str) -> Option<Memory> {
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    Some(Memory {
        anon_kib: field("RssAnon:")?,
        file_kib: field("RssFile:")?,
        hwm_kib: field("VmHWM:")?,
    })
}

/// Resets this process's `VmHWM` to its current RSS (Linux: write 5 to
/// `clear_refs`); false if the kernel refuses.
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Samples a process's memory in a thread of its own and keeps the peaks.
pub struct Sampler {
    pid: String,
    stop: Arc<AtomicBool>,
    peaks: Arc<[AtomicU64; 3]>,
    thread: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Starts sampling process `pid` (`self`, or a child's id).
    pub fn start(pid: String) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let peaks: Arc<[AtomicU64; 3]> = Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]);
        let thread = {
            let (stop, peaks, pid) = (Arc::clone(&stop), Arc::clone(&peaks), pid.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(m) = Memory::of(&pid) {
                        let [anon, file, hwm] = &*peaks;
                        anon.fetch_max(m.anon_kib, Ordering::Relaxed);
                        file.fetch_max(m.file_kib, Ordering::Relaxed);
                        hwm.fetch_max(m.hwm_kib, Ordering::Relaxed);
                    }
                    std::thread::sleep(SAMPLE_EVERY);
                }
            })
        };
        Sampler {
            pid,
            stop,
            peaks,
            thread: Some(thread),
        }
    }

    /// The peaks seen since the start or the last [`Sampler::reset`],
    /// with one more reading taken now (so `VmHWM` is the kernel's exact peak
    /// while the process lives).
    pub fn peaks(&self) -> Memory {
        let [anon, file, hwm] = &*self.peaks;
        let sampled = Memory {
            anon_kib: anon.load(Ordering::Relaxed),
            file_kib: file.load(Ordering::Relaxed),
            hwm_kib: hwm.load(Ordering::Relaxed),
        };
        Memory::of(&self.pid).map_or(sampled, |now| sampled.max(now))
    }

    /// Forgets the peaks (after [`reset_peak`], so `VmHWM` starts over too).
    pub fn reset(&self) {
        for p in self.peaks.iter() {
            p.store(0, Ordering::Relaxed);
        }
    }

    /// Stops sampling and returns the peaks.
    pub fn stop(mut self) -> Memory {
        let peaks = self.peaks();
        self.halt();
        peaks
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_are_read_in_kib() {
        let status = "Name:\tpeers\nVmPeak:\t  900 kB\nVmHWM:\t   5120 kB\nVmRSS:\t   4096 kB\n\
                      RssAnon:\t    3072 kB\nRssFile:\t    1000 kB\nRssShmem:\t  24 kB\n";
        assert_eq!(
            parse_status(status),
            Some(Memory {
                anon_kib: 3072,
                file_kib: 1000,
                hwm_kib: 5120
            })
        );
        assert_eq!(parse_status("VmHWM:\t1 kB\n"), None);
    }

    #[test]
    fn a_sampler_sees_an_allocation_of_this_process() {
        let sampler = Sampler::start("self".into());
        let block = vec![7u8; 64 << 20];
        std::thread::sleep(SAMPLE_EVERY * 5);
        let peaks = sampler.stop();
        assert!(block.iter().all(|b| *b == 7));
        assert!(peaks.anon_kib >= 64 << 10, "{peaks:?}");
        assert!(peaks.hwm_kib >= peaks.anon_kib, "{peaks:?}");
    }
}
