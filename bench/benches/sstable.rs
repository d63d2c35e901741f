//! Hot paths of `cellar-sstable`, through its public API: building and seeking
//! a data block, building a table and seeking in it, building and probing a
//! Bloom filter. Entries are db_bench's shape: 16-byte keys, 100-byte values.
//!
//! ```text
//! cargo bench -p cellar-bench --bench sstable
//! ```

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use cellar_sstable::{
    filter_hash, Block, BlockBuilder, BloomFilter, BloomFilterBuilder, Table, TableBuilder, TableOptions,
};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

mod common;
use cellar_bench::peers::workloads::{key, Rng, KEY_BYTES, VALUE_BYTES};
use common::{config, fail, ok};

/// Entries of the table and filter benches.
const TABLE_ENTRIES: u64 = 100_000;

fn value(i: u64) -> [u8; VALUE_BYTES] {
    let mut v = [0u8; VALUE_BYTES];
    for (j, b) in v.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31).wrapping_add(j as u8);
    }
    v
}

/// Entries that fill one 4 KiB block (TableOptions' default block size).
fn block_entries() -> u64 {
    (4096 / (KEY_BYTES + VALUE_BYTES + 3)) as u64
}

fn build_block(builder: &mut BlockBuilder, n: u64) -> Vec<u8> {
    for i in 0..n {
        builder.add(&key(i), &value(i));
    }
    builder.finish()
}

fn block(c: &mut Criterion) {
    let n = block_entries();
    let restart_interval = TableOptions::default().restart_interval;
    let mut group = c.benchmark_group("block");
    group.throughput(Throughput::Elements(n));
    group.bench_function("build_4k", |b| {
        let mut builder = BlockBuilder::new(restart_interval);
        b.iter(|| black_box(build_block(&mut builder, n)));
    });

    let contents = build_block(&mut BlockBuilder::new(restart_interval), n);
    let block = ok(
        "decode block",
        Block::new(Bytes::from(contents), Arc::from(Path::new("bench.sst")), 0),
    );
    group.throughput(Throughput::Elements(1));
    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
    group.bench_function("seek_4k", |b| {
        let mut iter = block.iter();
        b.iter(|| {
            let target = key(rng.below(n));
            ok("block seek", iter.seek(&target));
            black_box(iter.valid() && iter.key() == target)
        });
    });
    group.bench_function("scan_4k", |b| {
        b.iter(|| {
            let mut iter = block.iter();
            ok("block seek_to_first", iter.seek_to_first());
            let mut n = 0u64;
            while iter.valid() {
                n += iter.key().len() as u64;
                ok("block next", iter.next());
            }
            black_box(n)
        });
    });
    group.finish();
}

fn write_table(path: &Path, n: u64) -> cellar_sstable::Result<()> {
    let mut builder = TableBuilder::create(path, TableOptions::default())?;
    for i in 0..n {
        let k = key(i);
        builder.add(&k, &value(i), &k, false)?;
    }
    builder.finish()?;
    Ok(())
}

fn table(c: &mut Criterion) {
    let dir = ok("temporary folder", tempfile::tempdir());
    let mut group = c.benchmark_group("table");
    group.sample_size(10);
    group.throughput(Throughput::Elements(TABLE_ENTRIES));
    group.bench_function("build_100k", |b| {
        let path = dir.path().join("build.sst");
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                ok("build table", write_table(&path, TABLE_ENTRIES));
                total += start.elapsed();
                ok("remove table", std::fs::remove_file(&path));
            }
            total
        });
    });

    let path = dir.path().join("seek.sst");
    ok("build table", write_table(&path, TABLE_ENTRIES));
    let table = Arc::new(ok("open table", Table::open(&path)));
    group.sample_size(100);
    group.throughput(Throughput::Elements(1));
    let mut rng = Rng::new(0x2545_F491_4F6C_DD1D);
    group.bench_function("seek_and_value_100k", |b| {
        let mut iter = table.iter();
        b.iter(|| {
            let target = key(rng.below(TABLE_ENTRIES));
            ok("table seek", iter.seek(&target));
            black_box(iter.valid().then(|| iter.value()))
        });
    });
    group.bench_function("seek_and_10_next_100k", |b| {
        let mut iter = table.iter();
        b.iter(|| {
            ok("table seek", iter.seek(&key(rng.below(TABLE_ENTRIES))));
            let mut bytes = 0;
            for _ in 0..10 {
                if !iter.valid() {
                    break;
                }
                bytes += iter.value().len();
                ok("table next", iter.next());
            }
            black_box(bytes)
        });
    });
    group.finish();
}

fn bloom(c: &mut Criterion) {
    let bits = TableOptions::default().bloom_bits_per_key;
    let hashes: Vec<u64> = (0..TABLE_ENTRIES).map(|i| filter_hash(&key(i))).collect();
    let mut group = c.benchmark_group("bloom");
    group.throughput(Throughput::Elements(TABLE_ENTRIES));
    group.bench_function("build_100k", |b| {
        b.iter(|| {
            let mut builder = BloomFilterBuilder::new(bits);
            for h in &hashes {
                builder.add_hash(*h);
            }
            black_box(builder.finish())
        });
    });

    let mut builder = BloomFilterBuilder::new(bits);
    for h in &hashes {
        builder.add_hash(*h);
    }
    let Some(filter) = BloomFilter::decode(Bytes::from(builder.finish())) else {
        fail("decode filter", "BloomFilter::decode refused its own output")
    };
    group.throughput(Throughput::Elements(1));
    group.bench_function("hash_16b_key", |b| {
        let mut i = 0u64;
        b.iter(|| {
            i += 1;
            black_box(filter_hash(black_box(&key(i))))
        });
    });
    let mut rng = Rng::new(0x1234_5678_9ABC_DEF1);
    group.bench_function("probe_present", |b| {
        b.iter(|| {
            let h = hashes
                .get(rng.below(TABLE_ENTRIES) as usize)
                .copied()
                .unwrap_or_default();
            black_box(filter.may_contain(h))
        });
    });
    group.bench_function("probe_absent", |b| {
        let mut i = TABLE_ENTRIES;
        b.iter(|| {
            i += 1;
            black_box(filter.may_contain(filter_hash(&key(i))))
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = block, table, bloom
}
criterion_main!(benches);
