//! The key-visualizer picture, as one self-contained HTML file.
//!
//! Drawn the way Bigtable's Key Visualizer draws a table: **time across**
//! (one column per time slice), **the key space down** (first key at the
//! top), **brightness for writes**, and lines for the region (or ownership)
//! boundaries. The key space is the same in every column: for range stores a
//! row of the picture is an equal share of the distinct keys the whole run
//! writes, for hashed stores an equal share of the hash space. So a key keeps
//! its height, a split draws a line that starts when it happens and stays
//! where it is, and a legend turns brightness back into writes per cell.
//! Below the map, one strip per server with its writes per time slice.
//! Every cell, strip and line has a tooltip naming its keys, its time slice,
//! its writes and its servers.
//!
//! What to look for: a timestamp-first key draws one bright **diagonal** from
//! the top left to the bottom right (each slice writes keys larger than every
//! key before, so the hot spot walks down the key space) and the region
//! boundaries pile up just behind it, while one server strip at a time is
//! lit; a salted key draws one short diagonal per salt bucket, side by side,
//! and lights every server; a Zipf key draws a few bright horizontal lines
//! (the hot users), whatever the store.
//!
//! The file uses inline SVG and CSS only: no script, no fonts, no address.

use std::collections::BTreeMap;

use cellar_picture::{colour, thousands, Anchor, Page, Section, Svg};

use crate::encoding::{to_string_binary, DAY_MS, HOUR_MS};
use crate::experiment::Run;
use crate::guides;
use crate::placement::Placement;
use crate::planner::{clock, describe, Execution, Plan};

/// Where the map sits in the picture, and how big a cell is.
struct Geometry {
    left: f64,
    top: f64,
    cell_w: f64,
    cell_h: f64,
    ticks: usize,
    bins: usize,
}

impl Geometry {
    fn of(p: &Placement) -> Geometry {
        let ticks = p.heat.len().max(1);
        let bins = p.heat.first().map_or(1, Vec::len).max(1);
        Geometry {
            left: 200.0,
            top: 30.0,
            cell_w: (720 / ticks).max(4) as f64,
            cell_h: (400 / bins).max(2) as f64,
            ticks,
            bins,
        }
    }
    fn width(&self) -> f64 {
        self.cell_w * self.ticks as f64
    }
    fn height(&self) -> f64 {
        self.cell_h * self.bins as f64
    }
}

/// Keys printed on the picture are cut to this many characters.
const KEY_LABEL: usize = 26;

fn short(text: &str) -> String {
    if text.chars().count() <= KEY_LABEL {
        text.to_string()
    } else {
        let cut: String = text.chars().take(KEY_LABEL - 1).collect();
        format!("{cut}…")
    }
}

/// The time of day of `ms`, to the second (UTC).
fn time_of_day(ms: u64) -> String {
    let s = ms / 1000;
    format!("{:02}:{:02}:{:02}", s / 3600 % 24, s / 60 % 60, s % 60)
}

/// The keys of picture row `bin`, in words.
fn bin_keys(p: &Placement, bin: usize, bins: usize) -> String {
    if p.model.is_range() {
        match p.bin_keys.get(bin).and_then(Option::as_ref) {
            Some((lo, hi)) if lo == hi => format!("key {}", to_string_binary(lo)),
            Some((lo, hi)) => format!("keys {} .. {}", to_string_binary(lo), to_string_binary(hi)),
            None => "no key".to_string(),
        }
    } else {
        let lo = (u128::from(u64::MAX) + 1) * bin as u128 / bins as u128;
        let hi = (u128::from(u64::MAX) + 1) * (bin as u128 + 1) / bins as u128 - 1;
        format!("hashes {lo:#018x} .. {hi:#018x}")
    }
}

/// The label of the key axis at picture row `bin`.
fn axis_key(p: &Placement, bin: usize, bins: usize) -> String {
    if p.model.is_range() {
        p.bin_keys
            .get(bin)
            .and_then(Option::as_ref)
            .map_or_else(String::new, |(lo, _)| short(&to_string_binary(lo)))
    } else {
        let lo = (u128::from(u64::MAX) + 1) * bin as u128 / bins as u128;
        format!("hash {:#06x}…", lo >> 48)
    }
}

fn servers_text(servers: &[usize]) -> String {
    let names: Vec<String> = servers.iter().map(|s| format!("#{s}")).collect();
    match names.len() {
        0 => "no server".to_string(),
        1 => format!("server {}", names.join("")),
        _ => format!("servers {}", names.join(", ")),
    }
}

/// The heat map, its axes, its boundaries, its legend and the server strips.
fn picture(run: &Run) -> Svg {
    let p = &run.placement;
    let g = Geometry::of(p);
    let (left, top, width, height) = (g.left, g.top, g.width(), g.height());
    let max = p.heat.iter().flatten().copied().max().unwrap_or(0).max(1);
    let strip = 14.0;
    let legend_top = top + height + 44.0;
    let servers_top = legend_top + 70.0;
    let mut svg = Svg::new(
        "key-visualizer",
        left + width + 30.0,
        servers_top + strip * p.servers as f64 + 20.0,
    );
    svg.rect(left, top, width, height, &[("fill", &colour::heat(0.0))], None);
    let slice = |t: usize| {
        let start = p.tick_start_ms + p.tick_ms * t as u64;
        format!("{} to {}", time_of_day(start), time_of_day(start + p.tick_ms))
    };
    for (t, column) in p.heat.iter().enumerate() {
        for (b, &w) in column.iter().enumerate() {
            if w == 0 {
                continue;
            }
            let servers = p
                .heat_servers
                .get(t)
                .and_then(|row| row.get(b))
                .map_or_else(String::new, |s| servers_text(s));
            let tip = format!(
                "{}; {}; {} write{}; {servers}",
                bin_keys(p, b, g.bins),
                slice(t),
                thousands(w),
                if w == 1 { "" } else { "s" }
            );
            svg.rect(
                left + t as f64 * g.cell_w,
                top + b as f64 * g.cell_h,
                g.cell_w,
                g.cell_h,
                &[("class", "cell"), ("fill", &colour::heat(brightness(w, max)))],
                Some(&tip),
            );
        }
    }
    draw_boundaries(&mut svg, p, &g);
    // The key axis: the first key of a few rows, with a tick.
    let marks = 5.min(g.bins);
    for i in 0..marks {
        let bin = if marks == 1 { 0 } else { i * (g.bins - 1) / (marks - 1) };
        let y = top + bin as f64 * g.cell_h;
        svg.line((left - 4.0, y), (left, y), &[("stroke", colour::INK)], None);
        svg.text(
            (left - 6.0, y + 4.0),
            Anchor::End,
            &axis_key(p, bin, g.bins),
            &[("class", "key-tick"), ("font-family", "monospace"), ("font-size", "11")],
        );
    }
    svg.text(
        (left, top - 10.0),
        Anchor::Start,
        "key space ↓ (first key at the top)",
        &[],
    );
    // The time axis: start, middle, end.
    let end_ms = p.tick_start_ms + p.tick_ms * g.ticks as u64;
    for (x, ms, anchor) in [
        (left, p.tick_start_ms, Anchor::Start),
        (left + width / 2.0, (p.tick_start_ms + end_ms) / 2, Anchor::Middle),
        (left + width, end_ms, Anchor::End),
    ] {
        svg.line(
            (x, top + height),
            (x, top + height + 4.0),
            &[("stroke", colour::INK)],
            None,
        );
        svg.text((x, top + height + 16.0), anchor, &clock(ms), &[("class", "time-tick")]);
    }
    svg.text(
        (left + width / 2.0, top + height + 30.0),
        Anchor::Middle,
        &format!("time → ({} slices of {:.0} s)", g.ticks, p.tick_ms as f64 / 1000.0),
        &[],
    );
    draw_legend(&mut svg, left, legend_top, max);
    draw_servers(&mut svg, p, &g, servers_top, strip, &slice);
    svg
}

/// A cell's brightness: the square root of its share of the busiest cell's
/// writes, so a cell with a quarter of the writes still glows at half.
fn brightness(writes: u64, max: u64) -> f64 {
    (writes as f64 / max.max(1) as f64).sqrt()
}

/// Region boundaries as lines from the slice they appear in to the slice
/// they last exist in: one line per boundary, not one per slice, and wide
/// enough to see. Thousands of vnode boundaries would paint the map solid,
/// so a slice with more than 400 is left out.
fn draw_boundaries(svg: &mut Svg, p: &Placement, g: &Geometry) {
    let mut open: BTreeMap<u64, usize> = BTreeMap::new();
    let mut lines: Vec<(f64, usize, usize)> = Vec::new();
    for t in 0..=g.ticks {
        let here: Vec<f64> = p
            .boundaries
            .get(t)
            .filter(|b| b.len() <= 400)
            .cloned()
            .unwrap_or_default();
        let keys: Vec<u64> = here.iter().map(|y| y.to_bits()).collect();
        let ended: Vec<u64> = open.keys().filter(|k| !keys.contains(k)).copied().collect();
        for k in ended {
            if let Some(start) = open.remove(&k) {
                lines.push((f64::from_bits(k), start, t));
            }
        }
        for k in keys {
            open.entry(k).or_insert(t);
        }
    }
    let what = if p.model.is_range() { "region" } else { "ownership" };
    for (y, from, to) in lines {
        let y = g.top + y * g.height();
        let start = p.tick_start_ms + p.tick_ms * from as u64;
        svg.line(
            (g.left + from as f64 * g.cell_w, y),
            (g.left + to as f64 * g.cell_w, y),
            &[("class", "boundary"), ("stroke", "#6fd3ff"), ("stroke-width", "1.5")],
            Some(&format!("{what} boundary, from {}", time_of_day(start))),
        );
    }
}

/// The colour scale, in writes per cell.
fn draw_legend(svg: &mut Svg, left: f64, top: f64, max: u64) {
    svg.text(
        (left, top),
        Anchor::Start,
        "writes per cell (one key row, one time slice):",
        &[],
    );
    let steps = 10;
    let w = 36.0;
    for i in 0..=steps {
        let x = f64::from(i) / f64::from(steps);
        // The inverse of `brightness`: the writes a cell needs to glow at x.
        let writes = (x * x * max as f64).round() as u64;
        let label = if i == 0 { "0".to_string() } else { thousands(writes) };
        let px = left + f64::from(i) * w;
        svg.rect(
            px,
            top + 8.0,
            w,
            14.0,
            &[("class", "legend"), ("fill", &colour::heat(x))],
            Some(&format!("{label} writes")),
        );
        if i % 2 == 0 {
            svg.text(
                (px + w / 2.0, top + 36.0),
                Anchor::Middle,
                &label,
                &[("font-size", "11")],
            );
        }
    }
    svg.line(
        (left + (f64::from(steps) + 1.0) * w + 20.0, top + 15.0),
        (left + (f64::from(steps) + 1.0) * w + 50.0, top + 15.0),
        &[("stroke", "#6fd3ff"), ("stroke-width", "1.5")],
        None,
    );
    svg.text(
        (left + (f64::from(steps) + 1.0) * w + 56.0, top + 19.0),
        Anchor::Start,
        "region boundary",
        &[],
    );
}

fn draw_servers(svg: &mut Svg, p: &Placement, g: &Geometry, top: f64, strip: f64, slice: &dyn Fn(usize) -> String) {
    let per_server = p.writes_per_server();
    let total = per_server.iter().sum::<u64>().max(1);
    let most = p.writes.iter().flatten().copied().max().unwrap_or(0).max(1);
    svg.text(
        (g.left, top - 6.0),
        Anchor::Start,
        "writes per server and time slice",
        &[],
    );
    for s in 0..p.servers {
        let y = top + s as f64 * strip;
        let w = per_server.get(s).copied().unwrap_or(0);
        svg.text(
            (g.left - 6.0, y + strip - 3.0),
            Anchor::End,
            &format!("#{s} {:.1}%", 100.0 * w as f64 / total as f64),
            &[],
        );
        for (t, tick) in p.writes.iter().enumerate() {
            let v = tick.get(s).copied().unwrap_or(0);
            svg.rect(
                g.left + t as f64 * g.cell_w,
                y,
                g.cell_w,
                strip - 2.0,
                &[("class", "server"), ("fill", &colour::heat(v as f64 / most as f64))],
                Some(&format!("server #{s}, {}: {} writes", slice(t), thousands(v))),
            );
        }
    }
}

/// A span in the largest unit that says it exactly (`2 d`, `90 min`,
/// `30 s`, `1500 ms`): whole minutes alone would print 30 seconds as 0.
fn span_text(ms: u64) -> String {
    const UNITS: [(u64, &str); 4] = [(DAY_MS, "d"), (HOUR_MS, "h"), (60_000, "min"), (1000, "s")];
    UNITS
        .iter()
        .find(|(unit, _)| ms >= *unit && ms.is_multiple_of(*unit))
        .map_or_else(|| format!("{ms} ms"), |(unit, name)| format!("{} {name}", ms / unit))
}

/// The report for a run, with its plans if they were made.
pub fn html(run: &Run, plans: &[(Plan, Execution)]) -> String {
    let p = &run.placement;
    let ex = &run.experiment;
    let key = ex.key.to_string();
    let mut page = Page::new(&format!("cellar keys: {key}"));
    let mut s = Section::new("placement", &format!("Row key: {key}"));
    s.paragraph(&format!(
        "workload {}, {} writes over {}, seed {}; store: {}, {} servers{}",
        ex.workload.kind.name(),
        ex.workload.writes,
        span_text(ex.workload.span_ms),
        ex.workload.seed,
        ex.cluster.model,
        ex.cluster.servers,
        if ex.cluster.presplit > 1 {
            format!(", pre-split into {}", ex.cluster.presplit)
        } else {
            String::new()
        }
    ));
    let mut text = String::new();
    for line in run.verdict.lines() {
        text.push_str(&line);
        text.push('\n');
    }
    text.push_str(&format!(
        "key size: {} to {} bytes, mean {:.1}; {} bytes over all writes; {} distinct rows; {} splits\n",
        run.sizes.min,
        run.sizes.max,
        run.sizes.mean,
        run.sizes.total,
        run.distinct_rows(),
        p.splits
    ));
    text.push_str(&format!("sample keys: {}\n", run.sample_keys(3).join("  ")));
    s.preformatted(&text);
    let caption = format!(
        "Time runs left to right, the key space from the first key (top) to the last (bottom); {}. \
         A cell's brightness is its writes against the busiest cell's (square-root scale, see the legend). \
         Blue lines are {} boundaries, from the time slice they appear in. Rest the pointer on a cell \
         for its keys, time slice, writes and servers.",
        if p.model.is_range() {
            "each row of the picture is an equal share of the distinct keys the whole run writes"
        } else {
            "each row of the picture is an equal share of the hash space"
        },
        if p.model.is_range() { "region" } else { "ownership" }
    );
    s.figure(&picture(run), &caption);
    page.push(s);
    let mut s = Section::new("guides", "What the guides say");
    s.preformatted(&(guides::lines(&guides::of_run(run)).join("\n") + "\n"));
    page.push(s);
    if !plans.is_empty() {
        let mut s = Section::new("reads", "Reads");
        let mut text = String::new();
        for (plan, exec) in plans {
            for line in describe(plan, Some(exec), !ex.cluster.model.is_range()) {
                text.push_str(&line);
                text.push('\n');
            }
        }
        s.preformatted(&text);
        page.push(s);
    }
    page.finish()
}
