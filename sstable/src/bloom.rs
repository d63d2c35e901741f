//! Bloom filters: "is this key possibly in the file?" without reading it.
//!
//! A read for a key that a table does not hold would cost a data block read
//! just to learn "no". A Bloom filter answers that question from memory: it
//! may say "maybe" for an absent key (a *false positive*, costing a wasted
//! block read) but never "no" for a present one.
//!
//! # How it works
//!
//! The filter is an array of `m` bits, all 0. To add a key, compute `k` bit
//! positions from its hash and set them to 1. To test a key, compute the same
//! positions: if any is 0 the key was never added; if all are 1 it probably was.
//!
//! # The math
//!
//! With `n` keys in `m` bits, a given bit is still 0 after all insertions with
//! probability `(1 - 1/m)^(k·n) ≈ e^(-k·n/m)`. An absent key is a false
//! positive when all `k` of its bits are 1:
//!
//! ```text
//! fpr ≈ (1 - e^(-k·n/m))^k
//! ```
//!
//! Write `b = m/n`, the *bits per key*. For a given `b` the rate is lowest at
//! `k = b · ln 2` (each bit is then 1 with probability ½), giving
//! `fpr ≈ 0.6185^b`. So:
//!
//! | bits/key | k | false positives |
//! |---|---|---|
//! | 5  | 3 | 9.2 % |
//! | 10 | 7 | 0.82 % |
//! | 20 | 14 | 0.0067 % |
//!
//! Every 4.8 extra bits per key divide the rate by 10. Ten bits per key
//! (LevelDB's recommendation) costs 1.25 bytes per key to avoid 99 % of
//! useless block reads.
//!
//! # Hashing
//!
//! The filter key is hashed once, with xxh3 (64 bits). Its low 32 bits are
//! `h1`, its high 32 bits `h2`, and probe `i` sets bit `(h1 + i·h2) mod m`.
//! Kirsch and Mitzenmacher showed this *double hashing* gives the same false
//! positive rate as `k` independent hash functions, for the price of one.
//! Because the builder only needs the 64-bit hash, a table builder streaming
//! millions of entries keeps just 8 bytes per distinct filter key in memory.
//!
//! # Layout
//!
//! ```text
//! filter = bits: ceil(m/8) bytes, bit j at byte j/8, bit j%8 | k: u8
//! ```

use bytes::Bytes;

use crate::prefetch::prefetch;

/// The most probes a filter may use; more cost time for no gain at any
/// sensible bits-per-key, and a larger byte marks a damaged filter.
pub const MAX_PROBES: u32 = 30;

/// Filters smaller than this many bits have a poor false-positive rate when
/// `n` is tiny, so every filter gets at least 64 bits.
const MIN_BITS: u64 = 64;

/// The hash a filter is built over: xxh3, 64 bits, of the filter key.
pub fn filter_hash(filter_key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(filter_key)
}

/// The number of probes for `bits_per_key`: `round(bits_per_key · ln 2)`,
/// clamped to `1..=30`.
pub fn probes_for(bits_per_key: u32) -> u32 {
    let k = (f64::from(bits_per_key) * std::f64::consts::LN_2).round() as u32;
    k.clamp(1, MAX_PROBES)
}

/// The false-positive rate theory predicts for `bits_per_key` bits per key
/// and `k` probes: `(1 - e^(-k/bits_per_key))^k`.
pub fn expected_false_positive_rate(bits_per_key: u32, k: u32) -> f64 {
    if bits_per_key == 0 {
        return 1.0;
    }
    let k = f64::from(k);
    (1.0 - (-k / f64::from(bits_per_key)).exp()).powf(k)
}

/// Collects the hashes of a table's filter keys and turns them into a filter.
#[derive(Debug, Clone)]
pub struct BloomFilterBuilder {
    bits_per_key: u32,
    hashes: Vec<u64>,
}

impl BloomFilterBuilder {
    /// A builder that will spend `bits_per_key` bits per added hash.
    pub fn new(bits_per_key: u32) -> BloomFilterBuilder {
        BloomFilterBuilder {
            bits_per_key,
            hashes: Vec::new(),
        }
    }

    /// Adds one key, given by its [`filter_hash`].
    pub fn add_hash(&mut self, hash: u64) {
        self.hashes.push(hash);
    }

    /// Number of hashes added.
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// True when no hash has been added.
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// The serialized filter: `max(n · bits_per_key, 64)` bits rounded up to
    /// whole bytes, then one byte holding `k`.
    pub fn finish(&self) -> Vec<u8> {
        let k = probes_for(self.bits_per_key);
        let wanted = (self.hashes.len() as u64).saturating_mul(u64::from(self.bits_per_key));
        let num_bytes = wanted.max(MIN_BITS).div_ceil(8);
        let num_bits = num_bytes * 8;
        let mut filter = vec![0u8; num_bytes as usize];
        for &hash in &self.hashes {
            for bit in probe_positions(hash, k, num_bits) {
                if let Some(byte) = filter.get_mut((bit / 8) as usize) {
                    *byte |= 1 << (bit % 8);
                }
            }
        }
        filter.push(k as u8); // k <= 30
        filter
    }
}

/// The `k` bit positions of `hash` in a filter of `num_bits` bits:
/// `(h1 + i·h2) mod m` for `i` in `0..k`.
///
/// Computed by adding `h2 mod m` to the last position and wrapping, which
/// gives the same positions with two divisions instead of `k` (a 64-bit
/// division costs tens of cycles, a filter probe is asked of every table).
fn probe_positions(hash: u64, k: u32, num_bits: u64) -> impl Iterator<Item = u64> {
    let m = num_bits.max(1);
    let step = (hash >> 32) % m;
    let mut position = (hash & 0xffff_ffff) % m;
    (0..k).map(move |_| {
        let this = position;
        // Both are below m, which is far below 2^63: no overflow.
        position += step;
        if position >= m {
            position -= m;
        }
        this
    })
}

/// A serialized Bloom filter, read-only.
#[derive(Debug, Clone)]
pub struct BloomFilter {
    bits: Bytes,
    num_bits: u64,
    k: u32,
}

impl BloomFilter {
    /// Wraps a filter written by [`BloomFilterBuilder::finish`]. `None` if it
    /// is malformed: no bit array, or `k` outside `1..=30`.
    pub fn decode(data: Bytes) -> Option<BloomFilter> {
        let (&k, bits) = data.split_last()?;
        let k = u32::from(k);
        if bits.is_empty() || !(1..=MAX_PROBES).contains(&k) {
            return None;
        }
        let num_bits = bits.len() as u64 * 8;
        let bits = data.slice(..bits.len());
        Some(BloomFilter { bits, num_bits, k })
    }

    /// False only if the key with this [`filter_hash`] was certainly never added.
    ///
    /// The probes land far apart in the bit array, each a likely cache miss
    /// in a large filter. Their lines are all requested first, so the
    /// misses overlap: a read waits about one memory latency per filter, not
    /// one per probe answered (a "maybe" answers all `k`).
    pub fn may_contain(&self, hash: u64) -> bool {
        for bit in probe_positions(hash, self.k, self.num_bits) {
            prefetch(&self.bits, (bit / 8) as usize);
        }
        probe_positions(hash, self.k, self.num_bits).all(|bit| {
            self.bits
                .get((bit / 8) as usize)
                .is_some_and(|byte| byte & (1 << (bit % 8)) != 0)
        })
    }

    /// Number of probes per key.
    pub fn probes(&self) -> u32 {
        self.k
    }

    /// Size of the bit array in bits.
    pub fn num_bits(&self) -> u64 {
        self.num_bits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_positions_are_h1_plus_i_times_h2_modulo_the_bits() {
        // The positions written into every filter: the incremental sum must
        // give exactly the formula's, or stored filters would read wrong.
        let mut hash = 0x9E37_79B9_7F4A_7C15_u64;
        for num_bits in [1, 7, 64, 1000, 1 << 20, (1 << 33) + 17, u64::from(u32::MAX) * 3] {
            for _ in 0..200 {
                hash = hash.rotate_left(17).wrapping_mul(0xff51_afd7_ed55_8ccd) ^ 0x2545_f491;
                let (h1, h2) = (hash & 0xffff_ffff, hash >> 32);
                let formula: Vec<u64> = (0..MAX_PROBES).map(|i| (h1 + u64::from(i) * h2) % num_bits).collect();
                let positions: Vec<u64> = probe_positions(hash, MAX_PROBES, num_bits).collect();
                assert_eq!(positions, formula, "hash {hash:#x}, {num_bits} bits");
            }
        }
    }

    fn filter_over(keys: impl Iterator<Item = String>, bits_per_key: u32) -> Option<BloomFilter> {
        let mut builder = BloomFilterBuilder::new(bits_per_key);
        for key in keys {
            builder.add_hash(filter_hash(key.as_bytes()));
        }
        BloomFilter::decode(Bytes::from(builder.finish()))
    }

    #[test]
    fn probes_are_bits_per_key_times_ln2_rounded_and_clamped() {
        assert_eq!(probes_for(0), 1);
        assert_eq!(probes_for(1), 1);
        assert_eq!(probes_for(5), 3);
        assert_eq!(probes_for(10), 7);
        assert_eq!(probes_for(20), 14);
        assert_eq!(probes_for(100), 30);
    }

    #[test]
    fn theory_predicts_082_percent_at_10_bits_per_key() {
        let rate = expected_false_positive_rate(10, 7);
        assert!((rate - 0.008_19).abs() < 0.000_01, "{rate}");
    }

    #[test]
    fn filter_size_is_bits_per_key_times_keys_plus_the_k_byte() {
        let mut builder = BloomFilterBuilder::new(10);
        for i in 0..10_000u64 {
            builder.add_hash(filter_hash(&i.to_le_bytes()));
        }
        let bytes = builder.finish();
        assert_eq!(bytes.len(), 12_501); // 100,000 bits = 12,500 bytes, + k
        assert_eq!(bytes.last(), Some(&7));
    }

    #[test]
    fn empty_filter_has_64_bits_and_contains_nothing() -> Result<(), String> {
        let bytes = BloomFilterBuilder::new(10).finish();
        assert_eq!(bytes, [0, 0, 0, 0, 0, 0, 0, 0, 7]);
        let filter = BloomFilter::decode(Bytes::from(bytes)).ok_or("decode")?;
        assert_eq!(filter.num_bits(), 64);
        assert!(!filter.may_contain(filter_hash(b"anything")));
        Ok(())
    }

    #[test]
    fn added_keys_are_never_reported_absent() -> Result<(), String> {
        let filter = filter_over((0..10_000).map(|i| format!("key{i}")), 10).ok_or("decode")?;
        for i in 0..10_000 {
            assert!(filter.may_contain(filter_hash(format!("key{i}").as_bytes())), "key{i}");
        }
        Ok(())
    }

    #[test]
    fn ten_bits_per_key_gives_about_one_percent_false_positives() -> Result<(), String> {
        let filter = filter_over((0..10_000).map(|i| format!("key{i}")), 10).ok_or("decode")?;
        assert_eq!(filter.probes(), 7);
        let false_positives = (0..100_000)
            .filter(|i| filter.may_contain(filter_hash(format!("absent{i}").as_bytes())))
            .count();
        let rate = false_positives as f64 / 100_000.0;
        // Theory: 0.82 %. A good hash lands close; a bad one would not.
        assert!((0.005..0.02).contains(&rate), "false-positive rate {rate}");
        Ok(())
    }

    #[test]
    fn malformed_filters_do_not_decode() {
        assert!(BloomFilter::decode(Bytes::new()).is_none());
        assert!(BloomFilter::decode(Bytes::from_static(&[7])).is_none()); // no bits
        assert!(BloomFilter::decode(Bytes::from_static(&[0xff, 0])).is_none()); // k = 0
        assert!(BloomFilter::decode(Bytes::from_static(&[0xff, 31])).is_none()); // k > 30
        assert!(BloomFilter::decode(Bytes::from_static(&[0xff, 30])).is_some());
    }
}
