//! The bytes of the tables that flush and compaction write, pinned.
//!
//! Flush and compaction are the hottest loops of a write-heavy load: every
//! cell passes the merge, the drop rule and the table builder once per
//! rewrite, so they are tuned often. A tuning must not change a file's bytes
//! (old files must still read, and the format pages describe these bytes),
//! so this test writes the same wide rows, with overwritten versions, cell
//! and row deletions and expired cells, into families of every shape, and
//! compares a digest of every table file after the flushes and after a
//! major compaction with the digest the format's code wrote when the test
//! was added (commit 3f6195a). A change that alters one byte of one table
//! fails here, and says which family and which step.

use std::path::Path;
use std::time::Duration;

use cellar_engine::{inspect, Compaction, FamilyOptions, Store, StoreOptions, WriteBatch};

/// FNV-1a over `bytes`, continuing from `hash`.
fn fnv(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x100_0000_01b3);
    }
    hash
}

/// One digest of the family's table files: each file's digest, sorted (a
/// file's number depends on when the background thread took it, its bytes
/// do not), then folded together, with the count of files.
fn tables_digest(family_dir: &Path) -> Result<(usize, u64), Box<dyn std::error::Error>> {
    let mut digests = Vec::new();
    for entry in std::fs::read_dir(family_dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "sst") {
            digests.push(fnv(0xcbf2_9ce4_8422_2325, &std::fs::read(&path)?));
        }
    }
    digests.sort_unstable();
    let folded = digests
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, d| fnv(h, &d.to_le_bytes()));
    Ok((digests.len(), folded))
}

/// One digest of what the manifest records of the family's tables (the
/// key, sequence and timestamp ranges the read path settles sources by),
/// sorted as [`tables_digest`], file numbers left out.
fn manifest_digest(store_dir: &Path, family: &str) -> Result<u64, Box<dyn std::error::Error>> {
    let dump = inspect::dump_manifest(&inspect::live_manifest(store_dir)?)?;
    let mut digests: Vec<u64> = dump
        .families
        .iter()
        .filter(|f| f.name == family)
        .flat_map(|f| &f.tables)
        .map(|t| {
            let numbers = [
                t.size,
                t.entries,
                t.tombstones,
                t.sequences.0,
                t.sequences.1,
                t.timestamps.0,
                t.timestamps.1,
            ];
            let h = numbers
                .iter()
                .fold(0xcbf2_9ce4_8422_2325, |h, n| fnv(h, &n.to_le_bytes()));
            fnv(fnv(h, &t.first_key), &t.last_key)
        })
        .collect();
    digests.sort_unstable();
    Ok(digests
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, d| fnv(h, &d.to_le_bytes())))
}

/// A row key of 20-odd bytes (as YCSB's `user` + hash), one with a zero
/// byte (escaped in the key) every 97 rows.
fn row(i: u64) -> Vec<u8> {
    let mut r = format!("user{}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 10_000_000_000_000).into_bytes();
    if i.is_multiple_of(97) {
        r.push(0);
        r.push(b'z');
    }
    r
}

/// Timestamps in µs: `PAST` is decades old (expired under any TTL the test
/// sets), `FUTURE` never expires.
const PAST: u64 = 1_000_000;
const FUTURE: u64 = 4_000_000_000_000_000;

/// Writes rows of up to 40 ten-byte fields, then overwrites, deletes and
/// expires some of them, in batches of one row as a YCSB load does.
fn write_rows(store: &Store, family: &str) -> cellar_engine::Result<()> {
    for i in 0..600u64 {
        let mut batch = WriteBatch::new();
        let r = row(i);
        // Most rows are current; every seventh is old (expired where the
        // family has a TTL).
        let ts = if i % 7 == 3 { PAST + i } else { FUTURE + i };
        for f in 0..(10 + i % 31) {
            batch.put_at(family, &r, format!("field{f}"), ts, format!("v{:09}", i * 131 + f));
        }
        store.write(&batch)?;
    }
    for i in (0..600u64).step_by(5) {
        let mut batch = WriteBatch::new();
        let r = row(i);
        match i % 4 {
            0 => batch.put_at(family, &r, "field3", FUTURE + 10_000 + i, "newer vers"),
            1 => batch.delete_at(family, &r, "field1", FUTURE + 10_000 + i),
            2 => batch.delete_row_at(family, &r, FUTURE + 10_000 + i),
            // The same timestamp again: the later write replaces the earlier.
            _ => batch.put_at(
                family,
                &r,
                "field2",
                if i % 7 == 3 { PAST + i } else { FUTURE + i },
                "same time!",
            ),
        };
        store.write(&batch)?;
    }
    Ok(())
}

#[test]
fn flush_and_compaction_write_the_same_table_bytes_as_the_format_always_has() -> Result<(), Box<dyn std::error::Error>>
{
    let dir = tempfile::tempdir()?;
    // Small memtables and files: several flushes, several blocks and files,
    // so block, file and row cuts all happen.
    let base = FamilyOptions::default()
        .memtable_max_entries(3_000)
        .compaction_trigger(0)
        .settle_when_idle(None)
        .block_size(1024);
    let families = [
        (
            "tiered",
            base.clone()
                .compaction(Compaction::SizeTiered)
                .target_file_entries(4_000),
        ),
        ("leveled", base.clone().target_file_bytes(48 * 1024)),
        ("copies", base.clone().tail_copies(true).max_versions(3)),
        ("ttl", base.clone().ttl(Duration::from_secs(3600))),
    ];
    let mut options = StoreOptions::default();
    for (name, family) in &families {
        options = options.family_with(name, family.clone());
    }
    let store = Store::open(dir.path(), options)?;
    let mut digests = Vec::new();
    for (name, _) in &families {
        write_rows(&store, name)?;
        store.flush_family(name)?;
        store.wait_for_background_work()?;
        digests.push((*name, "flushed", tables_digest(&dir.path().join(name))?));
        digests.push((*name, "flushed, manifest", (0, manifest_digest(dir.path(), name)?)));
        store.compact(name)?;
        store.wait_for_background_work()?;
        digests.push((*name, "compacted", tables_digest(&dir.path().join(name))?));
        digests.push((*name, "compacted, manifest", (0, manifest_digest(dir.path(), name)?)));
    }
    // Recorded on commit 3f6195a: (family, step, (table files, digest)).
    let expected = vec![
        ("tiered", "flushed", (5, 6597132955068437601)),
        ("tiered", "flushed, manifest", (0, 494202153131384489)),
        ("tiered", "compacted", (4, 11195063097254283137)),
        ("tiered", "compacted, manifest", (0, 13882073509604967187)),
        ("leveled", "flushed", (5, 13252666976964210894)),
        ("leveled", "flushed, manifest", (0, 11570259945464698810)),
        ("leveled", "compacted", (6, 9300737012565711597)),
        ("leveled", "compacted, manifest", (0, 3461182512568071309)),
        ("copies", "flushed", (5, 36101338446518147)),
        ("copies", "flushed, manifest", (0, 11726556004966982615)),
        ("copies", "compacted", (1, 16500590883733744701)),
        ("copies", "compacted, manifest", (0, 8998349040720406245)),
        ("ttl", "flushed", (5, 10628137461834391171)),
        ("ttl", "flushed, manifest", (0, 14670388734229559283)),
        ("ttl", "compacted", (1, 2966778826396643145)),
        ("ttl", "compacted, manifest", (0, 17157824059583867034)),
    ];
    assert_eq!(digests, expected);
    Ok(())
}
