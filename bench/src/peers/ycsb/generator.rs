//! YCSB's request generators, as its Java client computes them.
//!
//! * [`Zipfian`]: item `i` (0-based) is drawn with probability proportional
//!   to `1 / (i + 1)^0.99`, by the method of Gray et al., "Quickly Generating
//!   Billion-Record Synthetic Databases" (SIGMOD 1994), which YCSB's
//!   `ZipfianGenerator` uses: one uniform draw and one `pow` per item, after
//!   precomputing `zeta(n) = sum 1/i^theta`.
//! * [`ScrambledZipfian`]: a zipfian draw over 10^10 items, hashed (FNV-1a,
//!   [`fnv_hash64`]) and taken modulo the record count, so the popular records
//!   are scattered over the key space instead of being records 0, 1, 2...
//!   YCSB precomputed `zeta(10^10, 0.99)` = [`ZETAN`] for this.
//! * [`SkewedLatest`]: workload D's "latest" distribution: a zipfian draw
//!   counted back from the newest record, so recent inserts are the hottest.
//! * [`Uniform`]: workload E's scan lengths.
//!
//! What differs from the Java: the uniform draws come from the benchmark's
//! seeded [`Rng`] (so every engine sees the same operations), not from
//! `java.util.Random`; the distributions are the same.

use crate::peers::workloads::Rng;

/// YCSB's zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// Items of the zipfian draw under a scrambled zipfian (`ITEM_COUNT`).
pub const ITEM_COUNT: i64 = 10_000_000_000;
/// `zeta(ITEM_COUNT, 0.99)`, as YCSB precomputed it.
pub const ZETAN: f64 = 26.469_028_201_783_02;

/// A uniform draw in `[0, 1)` with 53 bits of precision.
pub fn next_f64(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 bytes of `val`, low byte
/// first, then Java's `Math.abs` (which leaves `i64::MIN` negative).
pub fn fnv_hash64(mut val: i64) -> i64 {
    const OFFSET_BASIS: u64 = 0xCBF2_9CE4_8422_2325;
    const PRIME: i64 = 1_099_511_628_211;
    let mut hash = OFFSET_BASIS as i64;
    for _ in 0..8 {
        let octet = val & 0xff;
        val >>= 8;
        hash ^= octet;
        hash = hash.wrapping_mul(PRIME);
    }
    hash.wrapping_abs()
}

/// `sum_{i=st}^{n-1} 1 / (i + 1)^theta`, added to `initial`.
fn zeta(st: i64, n: i64, theta: f64, initial: f64) -> f64 {
    (st..n).fold(initial, |sum, i| sum + 1.0 / ((i + 1) as f64).powf(theta))
}

/// YCSB's `ZipfianGenerator`: items `base..base + items`, the first the most popular.
#[derive(Clone, Debug)]
pub struct Zipfian {
    items: i64,
    base: i64,
    theta: f64,
    zeta2theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    count_for_zeta: i64,
}

impl Zipfian {
    /// Items `min..=max`, computing `zeta` (a sum over every item).
    pub fn new(min: i64, max: i64) -> Zipfian {
        let items = max - min + 1;
        Zipfian::with_zetan(min, max, zeta(0, items, ZIPFIAN_CONSTANT, 0.0))
    }

    /// Items `min..=max`, with `zeta(items)` given.
    pub fn with_zetan(min: i64, max: i64, zetan: f64) -> Zipfian {
        let items = max - min + 1;
        let theta = ZIPFIAN_CONSTANT;
        let zeta2theta = zeta(0, 2, theta, 0.0);
        Zipfian {
            items,
            base: min,
            theta,
            zeta2theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan),
            count_for_zeta: items,
        }
    }

    /// A draw over the generator's own items.
    pub fn next(&mut self, rng: &mut Rng) -> i64 {
        self.next_long(self.items, rng)
    }

    /// A draw over `item_count` items. When the count grew since the last
    /// call, `zeta` is extended by the new items (YCSB's incremental update,
    /// which keeps `eta`'s `2 / items` at the count given at construction).
    /// A smaller count is used as is, without recomputing `zeta` (YCSB's
    /// default, `allowitemcountdecrease = false`).
    pub fn next_long(&mut self, item_count: i64, rng: &mut Rng) -> i64 {
        self.draw(item_count, next_f64(rng))
    }

    /// [`Zipfian::next_long`] for the uniform draw `u` in `[0, 1)`: the
    /// Java's `nextLong` after its `random.nextDouble()`.
    fn draw(&mut self, item_count: i64, u: f64) -> i64 {
        if item_count > self.count_for_zeta {
            self.zetan = zeta(self.count_for_zeta, item_count, self.theta, self.zetan);
            self.count_for_zeta = item_count;
            self.eta = (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2theta / self.zetan);
        }
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        self.base + (item_count as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as i64
    }
}

/// YCSB's `ScrambledZipfianGenerator` over `min..=max`.
#[derive(Clone, Debug)]
pub struct ScrambledZipfian {
    min: i64,
    item_count: i64,
    zipfian: Zipfian,
}

impl ScrambledZipfian {
    /// Items `min..=max`.
    pub fn new(min: i64, max: i64) -> ScrambledZipfian {
        ScrambledZipfian {
            min,
            item_count: max - min + 1,
            zipfian: Zipfian::with_zetan(0, ITEM_COUNT, ZETAN),
        }
    }

    /// The next item.
    pub fn next(&mut self, rng: &mut Rng) -> i64 {
        self.draw(next_f64(rng))
    }

    /// [`ScrambledZipfian::next`] for the uniform draw `u` in `[0, 1)`.
    fn draw(&mut self, u: f64) -> i64 {
        let items = self.zipfian.items;
        self.min + fnv_hash64(self.zipfian.draw(items, u)) % self.item_count
    }
}

/// YCSB's `SkewedLatestGenerator`: the newest record the most popular.
#[derive(Clone, Debug)]
pub struct SkewedLatest {
    zipfian: Zipfian,
}

impl SkewedLatest {
    /// Over records `0..=last`, `last` the newest acknowledged insert.
    pub fn new(last: i64) -> SkewedLatest {
        SkewedLatest {
            zipfian: Zipfian::new(0, last - 1),
        }
    }

    /// The next record, `last` being the newest now.
    pub fn next(&mut self, last: i64, rng: &mut Rng) -> i64 {
        self.draw(last, next_f64(rng))
    }

    /// [`SkewedLatest::next`] for the uniform draw `u` in `[0, 1)`.
    fn draw(&mut self, last: i64, u: f64) -> i64 {
        last - self.zipfian.draw(last, u)
    }
}

/// YCSB's `UniformLongGenerator` over `lo..=hi`.
#[derive(Clone, Copy, Debug)]
pub struct Uniform {
    lo: u64,
    hi: u64,
}

impl Uniform {
    /// Numbers `lo..=hi`.
    pub fn new(lo: u64, hi: u64) -> Uniform {
        Uniform { lo, hi }
    }

    /// The next number.
    pub fn next(&self, rng: &mut Rng) -> u64 {
        self.lo + rng.below(self.hi - self.lo + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn counts(n: usize, mut draw: impl FnMut() -> i64) -> HashMap<i64, usize> {
        let mut counts = HashMap::new();
        for _ in 0..n {
            *counts.entry(draw()).or_default() += 1;
        }
        counts
    }

    fn most_popular(counts: &HashMap<i64, usize>) -> (i64, usize) {
        counts
            .iter()
            .map(|(k, c)| (*k, *c))
            .max_by_key(|(k, c)| (*c, -*k))
            .unwrap_or_default()
    }

    #[test]
    fn fnv_hash_matches_ycsb_keys() {
        // YCSB's first keys with the default hashed insert order are
        // user6284781860667377211, user8517097267634966620, ...
        assert_eq!(fnv_hash64(0), 6_284_781_860_667_377_211);
        assert_eq!(fnv_hash64(1), 8_517_097_267_634_966_620);
        assert_eq!(fnv_hash64(999_999), 2_744_965_632_448_235_251);
    }

    /// The first uniform draws of `java.util.Random(1)` (`nextDouble`).
    const JAVA_RANDOM_1: [f64; 22] = [
        0.7308781907032909,
        0.41008081149220166,
        0.20771484130971707,
        0.3327170559595112,
        0.9677559094241207,
        0.006117182265761301,
        0.9637047970232077,
        0.9398653887819098,
        0.9471949176631939,
        0.9370821488959696,
        0.3971743421847056,
        0.34751802920311026,
        0.29405703200403677,
        0.5064836273262351,
        0.11596708803265776,
        0.7705358800791777,
        0.65989270869342,
        0.15674689056984625,
        0.3782020453210553,
        0.13976268290375116,
        0.6949479796024919,
        0.8052277714737137,
    ];

    /// Given the same uniform draws, each generator returns what YCSB's Java
    /// returns. The expected values were printed by YCSB's own classes
    /// (master, `site.ycsb.generator`, compiled and run with Java 17, with
    /// `ZipfianGenerator`'s one `ThreadLocalRandom.current().nextDouble()`
    /// replaced by the next of these draws, restarted for each generator):
    /// `new ZipfianGenerator(0, 999)`, `new ScrambledZipfianGenerator(0, 9999)`
    /// and `new SkewedLatestGenerator(new CounterGenerator(1000))`, twenty
    /// `nextValue()`s each (the latest one's counter advanced by 100 after ten).
    /// A Java constructor draws once (`nextValue()` at its end; the latest
    /// generator's twice), so its first value is from the second draw on.
    #[test]
    fn generators_return_what_ycsbs_java_returns_for_the_same_draws() {
        let us = |from: usize, n: usize| JAVA_RANDOM_1.iter().copied().skip(from).take(n);
        let mut z = Zipfian::new(0, 999);
        let zipf: Vec<i64> = us(1, 20).map(|u| z.draw(1000, u)).collect();
        assert_eq!(
            zipf,
            [10, 2, 5, 785, 0, 761, 637, 673, 623, 9, 6, 4, 23, 0, 177, 75, 1, 8, 1, 99]
        );
        let mut s = ScrambledZipfian::new(0, 9_999);
        let scrambled: Vec<i64> = us(1, 20).map(|u| s.draw(u)).collect();
        assert_eq!(
            scrambled,
            [
                864, 8016, 279, 9008, 7211, 4099, 5486, 2337, 5726, 2690, 4864, 6335, 6209, 2964, 1726, 5751, 6834,
                584, 2308, 5513
            ]
        );
        let mut l = SkewedLatest::new(999);
        let mut latest: Vec<i64> = us(2, 10).map(|u| l.draw(999, u)).collect();
        latest.extend(us(12, 10).map(|u| l.draw(1099, u)));
        assert_eq!(
            latest,
            [
                997, 994, 215, 999, 238, 363, 327, 376, 990, 993, 1095, 1074, 1099, 904, 1015, 1098, 1090, 1098, 989,
                845
            ]
        );
    }

    #[test]
    fn zipfian_favours_the_first_item_by_one_over_zeta() {
        let mut rng = Rng::new(3);
        let mut z = Zipfian::new(0, 999);
        let counts = counts(200_000, || z.next(&mut rng));
        assert!(counts.keys().all(|k| (0..1000).contains(k)));
        // P(0) = 1 / zeta(1000, 0.99) = 12.9%; P(1) = P(0) / 2^0.99 = 6.5%.
        let share = |k| *counts.get(&k).unwrap_or(&0) as f64 / 200_000.0;
        assert!((share(0) - 0.1294).abs() < 0.005, "{}", share(0));
        assert!((share(1) - 0.0650).abs() < 0.004, "{}", share(1));
    }

    #[test]
    fn scrambled_zipfian_scatters_the_hot_item_by_its_hash() {
        let mut rng = Rng::new(5);
        let mut z = ScrambledZipfian::new(0, 9_999);
        let counts = counts(200_000, || z.next(&mut rng));
        assert!(counts.keys().all(|k| (0..10_000).contains(k)));
        // Item 0 of the 10^10-item draw (P = 1/ZETAN = 3.8%) lands on fnv(0) % 10000.
        let (hot, count) = most_popular(&counts);
        assert_eq!(hot, 6_284_781_860_667_377_211 % 10_000);
        let share = count as f64 / 200_000.0;
        assert!((share - 1.0 / ZETAN).abs() < 0.004, "{share}");
    }

    #[test]
    fn skewed_latest_favours_the_newest_record_and_follows_inserts() {
        let mut rng = Rng::new(7);
        let mut latest = SkewedLatest::new(999);
        let before = counts(50_000, || latest.next(999, &mut rng));
        assert!(before.keys().all(|k| (0..=999).contains(k)));
        assert_eq!(most_popular(&before).0, 999);
        let after = counts(50_000, || latest.next(1099, &mut rng));
        assert!(after.keys().all(|k| (0..=1099).contains(k)));
        assert_eq!(most_popular(&after).0, 1099);
    }

    #[test]
    fn uniform_covers_its_bounds() {
        let mut rng = Rng::new(9);
        let u = Uniform::new(1, 100);
        let c = counts(20_000, || u.next(&mut rng) as i64);
        assert_eq!(c.len(), 100);
        assert_eq!((c.keys().min(), c.keys().max()), (Some(&1), Some(&100)));
    }
}
