//! Hot paths of `cellar-engine`, through what it exposes: internal key
//! encoding (`key::encode`, a public module), memtable insert (a `Store::put`
//! into an empty store's memtable, log on without fsync, nothing flushed) and
//! the merge iterator step (a full `Store::scan` of a compacted store, per
//! row). The memtable and the merge iterator are crate-private, so these go
//! through the store: each figure includes the layers above them.
//!
//! ```text
//! cargo bench -p cellar-bench --bench engine
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use cellar_engine::key::{self, Kind};
use cellar_engine::{RowRange, Store, StoreOptions};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

mod common;
use cellar_bench::peers::workloads::{key, Rng, VALUE_BYTES};
use common::{config, ok};

const FAMILY: &str = "bench";
const COLUMN: &[u8] = b"v";
/// Puts into one store before a fresh one is opened: 100,000 entries of
/// ~130 bytes stay well inside the default 64 MiB memtable, so none is flushed.
const PUTS_PER_STORE: u64 = 100_000;
/// Rows of the scanned store.
const SCAN_ROWS: u64 = 200_000;

fn open(dir: &std::path::Path) -> Store {
    ok("open store", Store::open(dir, StoreOptions::default().family(FAMILY)))
}

fn key_encoding(c: &mut Criterion) {
    let mut group = c.benchmark_group("key");
    group.throughput(Throughput::Elements(1));
    let mut i = 0u64;
    group.bench_function("encode_db_bench_row", |b| {
        b.iter(|| {
            i += 1;
            black_box(key::encode(black_box(&key(i)), COLUMN, 0, i, Kind::Put))
        });
    });
    group.bench_function("encode_text_row", |b| {
        let row = *b"user000000001234";
        b.iter(|| {
            i += 1;
            black_box(key::encode(black_box(&row), COLUMN, 0, i, Kind::Put))
        });
    });
    group.finish();
}

fn memtable_insert(c: &mut Criterion) {
    let value = [7u8; VALUE_BYTES];
    let mut group = c.benchmark_group("memtable");
    group.throughput(Throughput::Elements(1));
    for (name, random) in [("put_random", true), ("put_sequential", false)] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut left = iters;
                let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
                while left > 0 {
                    let n = left.min(PUTS_PER_STORE);
                    left -= n;
                    // A fresh, empty store; opening and closing it are not timed.
                    let dir = ok("temporary folder", tempfile::tempdir());
                    let store = open(dir.path());
                    let start = Instant::now();
                    for i in 0..n {
                        let k = if random { rng.below(u64::MAX) } else { i };
                        ok("put", store.put(FAMILY, key(k), COLUMN, value));
                    }
                    total += start.elapsed();
                    drop(store);
                }
                total
            });
        });
    }
    group.finish();
}

fn merge_scan(c: &mut Criterion) {
    let dir = ok("temporary folder", tempfile::tempdir());
    let store = open(dir.path());
    let value = [7u8; VALUE_BYTES];
    let mut rng = Rng::new(0x1234_5678_9ABC_DEF1);
    for _ in 0..SCAN_ROWS * 2 {
        ok("put", store.put(FAMILY, key(rng.below(SCAN_ROWS * 2)), COLUMN, value));
    }
    ok("flush", store.flush());
    ok("compact", store.compact(FAMILY));
    ok("wait", store.wait_for_background_work());
    let rows = ok("count", store.scan(FAMILY, &RowRange::all())).count() as u64;

    let mut group = c.benchmark_group("merge");
    group.sample_size(10);
    group.throughput(Throughput::Elements(rows));
    group.bench_function("full_scan_compacted", |b| {
        b.iter(|| {
            let mut cells = 0usize;
            for row in ok("scan", store.scan(FAMILY, &RowRange::all())) {
                cells += ok("scan row", row).cells.len();
            }
            black_box(cells)
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = key_encoding, memtable_insert, merge_scan
}
criterion_main!(benches);
