//! Read amplification: how much of the tree one read had to consult.
//!
//! An LSM point read asks its sources newest first (memtables, then table
//! files) until it knows the answer; a seek opens a cursor on every source
//! that may hold keys at or after the seek key and merges them. The more
//! sources, the more filter probes, index searches and data blocks per read:
//! that is read amplification, and it is what a compaction strategy trades
//! against write and space amplification.
//!
//! Each engine counts it its own way, so the figures are defined here once:
//!
//! * **sources**: memtables and table files the read consulted beyond their
//!   key range, that is, whose bloom filter or index it asked (a file ruled out
//!   by its first and last key alone is not counted; RocksDB does not count
//!   those either). cellar: its [`cellar_engine::Trace`] minus the sources
//!   settled by key range. RocksDB: `PerfContext` memtable lookups plus SST
//!   bloom probes for a get; child iterators seeked for a seek (one per
//!   memtable, per level-0 file and per deeper level).
//! * **searched**: table files whose index was searched (the filter, if any,
//!   let the read through). RocksDB: SST bloom hits for a get.
//! * **data blocks**: data blocks the read used, from a cache or from a file.
//!   RocksDB: block-cache hits plus block reads.
//!
//! fjall counts block loads only when built with its `metrics` feature, which
//! adds the counting to every read of every run, so it stays off and fjall's
//! read amplification is reported as n/a.

use cellar_engine::{Settled, SourceKind, Trace};

/// What one read consulted (see the module doc for the definitions).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ReadAmp {
    /// Memtables and files consulted beyond their key range.
    pub sources: f64,
    /// Table files whose index was searched.
    pub searched: f64,
    /// Data blocks used.
    pub data_blocks: f64,
}

impl ReadAmp {
    /// The figures of one cellar read, from its trace.
    pub fn of_trace(trace: &Trace) -> ReadAmp {
        let searched_files = trace
            .sources
            .iter()
            .filter(|s| matches!(s.source, SourceKind::Table { .. }) && s.settled == Settled::Searched)
            .count();
        ReadAmp {
            sources: (trace.sources_visited() - trace.settled_by(Settled::KeyRange)) as f64,
            searched: searched_files as f64,
            data_blocks: trace.data_blocks() as f64,
        }
    }

    /// The mean of some reads' figures (`None` if there are none).
    pub fn mean(reads: &[ReadAmp]) -> Option<ReadAmp> {
        if reads.is_empty() {
            return None;
        }
        let n = reads.len() as f64;
        let sum = |f: fn(&ReadAmp) -> f64| reads.iter().map(f).sum::<f64>() / n;
        Some(ReadAmp {
            sources: sum(|r| r.sources),
            searched: sum(|r| r.searched),
            data_blocks: sum(|r| r.data_blocks),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cellar_engine::SourceTrace;

    fn source(source: SourceKind, settled: Settled, data_blocks: u64) -> SourceTrace {
        SourceTrace {
            source,
            settled,
            entries_examined: 0,
            data_blocks,
            data_bytes: 0,
            pages_touched: 0,
            decompressed_bytes: 0,
            cache_hits: 0,
            cache_misses: 0,
            index_lookups: 0,
            filter_checks: 0,
            filter_negatives: 0,
        }
    }

    #[test]
    fn a_trace_counts_sources_past_their_key_range_and_searched_files() {
        let table = |file_id| SourceKind::Table { file_id, run: file_id };
        let trace = Trace {
            sources: vec![
                source(SourceKind::ActiveMemtable, Settled::Searched, 0),
                source(table(1), Settled::KeyRange, 0),
                source(table(2), Settled::Filter, 0),
                source(table(3), Settled::Searched, 2),
            ],
            entries_returned: 1,
        };
        assert_eq!(
            ReadAmp::of_trace(&trace),
            ReadAmp {
                sources: 3.0,
                searched: 1.0,
                data_blocks: 2.0
            }
        );
    }

    #[test]
    fn the_mean_of_reads_is_per_read() {
        let a = ReadAmp {
            sources: 2.0,
            searched: 1.0,
            data_blocks: 1.0,
        };
        let b = ReadAmp {
            sources: 4.0,
            searched: 3.0,
            data_blocks: 0.0,
        };
        assert_eq!(
            ReadAmp::mean(&[a, b]),
            Some(ReadAmp {
                sources: 3.0,
                searched: 2.0,
                data_blocks: 0.5
            })
        );
        assert_eq!(ReadAmp::mean(&[]), None);
    }
}
