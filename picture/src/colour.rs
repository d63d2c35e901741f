//! The colours every picture shares, so one colour means one thing.
//!
//! How a read settled a source is the colour a learner reads first, so those
//! four are far apart and distinguishable with the common colour-vision
//! deficiencies (from the Okabe-Ito palette): free (key range) is light blue,
//! cheap (bloom filter, in memory) is yellow, paid for (searched) is
//! vermillion, and a source the read never reached is pale grey.

use cellar_engine::Settled;

/// A source settled by its key range: no I/O at all.
pub const KEY_RANGE: &str = "#9fd3f2";
/// A source ruled out by its bloom filter: a probe in memory.
pub const FILTER: &str = "#f0c419";
/// A source that was searched: a memtable lookup, or an index lookup and data blocks.
pub const SEARCHED: &str = "#d55e00";
/// A source the read did not reach: the answer was known before it.
pub const NOT_CONSULTED: &str = "#eeeeee";
/// A source when no read is shown.
pub const SOURCE: &str = "#7f9fbf";
/// The memtable when no read is shown.
pub const MEMTABLE: &str = "#a3c98c";
/// Tombstones, drawn as a band across the bottom of a source.
pub const TOMBSTONE: &str = "#3b3b3b";
/// Data blocks that were read.
pub const BLOCK_READ: &str = "#111111";
/// Lines, axes and labels.
pub const INK: &str = "#333333";
/// Grid lines.
pub const GRID: &str = "#dddddd";
/// The first and second series of a chart (layouts compared side by side).
pub const SERIES: [&str; 4] = ["#0072b2", "#e69f00", "#009e73", "#cc79a7"];

/// The colour of a source settled `how`.
pub fn settled(how: Settled) -> &'static str {
    match how {
        Settled::KeyRange => KEY_RANGE,
        Settled::Filter => FILTER,
        Settled::Searched => SEARCHED,
    }
}

/// How a source was settled, in words.
pub fn settled_name(how: Settled) -> &'static str {
    match how {
        Settled::KeyRange => "key range",
        Settled::Filter => "bloom filter",
        Settled::Searched => "searched",
    }
}

/// Brightness for a heat map, `x` in `0..=1`: dark blue through purple and
/// orange to pale yellow, so more writes read as more light (as in Bigtable's
/// Key Visualizer, where the hottest cells are the brightest).
pub fn heat(x: f64) -> String {
    const STOPS: [(f64, [u8; 3]); 4] = [
        (0.0, [16, 18, 48]),
        (0.35, [120, 30, 110]),
        (0.7, [235, 110, 40]),
        (1.0, [255, 245, 170]),
    ];
    let x = if x.is_finite() { x.clamp(0.0, 1.0) } else { 0.0 };
    let mut lo = STOPS[0];
    let mut hi = STOPS[STOPS.len() - 1];
    for pair in STOPS.windows(2) {
        if let [a, b] = pair {
            if x >= a.0 && x <= b.0 {
                lo = *a;
                hi = *b;
                break;
            }
        }
    }
    let t = if hi.0 > lo.0 { (x - lo.0) / (hi.0 - lo.0) } else { 0.0 };
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * t).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(lo.1[0], hi.1[0]),
        mix(lo.1[1], hi.1[1]),
        mix(lo.1[2], hi.1[2])
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heat_scale_runs_from_dark_to_light() {
        assert_eq!(heat(0.0), "#101230");
        assert_eq!(heat(1.0), "#fff5aa");
        assert_eq!(heat(f64::NAN), "#101230");
    }
}
