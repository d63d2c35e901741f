//! The key-visualizer picture, as one self-contained HTML file.
//!
//! Drawn the way Bigtable's Key Visualizer draws a table: **time across**
//! (one column per tick), **the key space down** (first key at the top; for
//! range stores a row's height is its share of the distinct keys, for hashed
//! stores its share of the hash space), **brightness for writes**, and thin
//! lines for the region (or ownership) boundaries at the end of each tick, so
//! splits show up as lines that appear and multiply. Below it, one strip per
//! server with its writes per tick.
//!
//! What to look for: a timestamp-first key draws one bright band along the
//! bottom edge that every split leaves where it is (the newest region takes
//! all writes); a salted or hashed key fills the picture evenly; a Zipf key
//! draws a few bright horizontal lines (the hot users), whatever the store.
//!
//! The file uses inline SVG and CSS only: no script, no fonts, no network.

use std::fmt::Write as _;

use crate::encoding::to_string_binary;
use crate::experiment::Run;
use crate::planner::{clock, describe, Execution, Plan};

/// Escapes text for HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Dark blue through orange to pale yellow, for a brightness in `0..=1`.
fn heat_colour(x: f64) -> String {
    let x = x.clamp(0.0, 1.0);
    let stops = [
        (0.0, (16, 18, 48)),
        (0.35, (120, 30, 110)),
        (0.7, (235, 110, 40)),
        (1.0, (255, 245, 170)),
    ];
    let mut lo = stops[0];
    let mut hi = stops[stops.len() - 1];
    for w in stops.windows(2) {
        if let [a, b] = w {
            if x >= a.0 && x <= b.0 {
                lo = *a;
                hi = *b;
            }
        }
    }
    let t = if hi.0 > lo.0 { (x - lo.0) / (hi.0 - lo.0) } else { 0.0 };
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * t).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(lo.1 .0, hi.1 .0),
        mix(lo.1 .1, hi.1 .1),
        mix(lo.1 .2, hi.1 .2)
    )
}

/// The report for a run, with its plans if they were made.
pub fn html(run: &Run, plans: &[(Plan, Execution)]) -> String {
    let p = &run.placement;
    let ex = &run.experiment;
    let ticks = p.heat.len().max(1);
    let bins = p.heat.first().map_or(1, Vec::len).max(1);
    let cw = (720 / ticks).max(4) as f64;
    let ch = (400 / bins).max(2) as f64;
    let (left, top) = (150.0, 10.0);
    let width = cw * ticks as f64;
    let height = ch * bins as f64;
    let max = p.heat.iter().flatten().copied().max().unwrap_or(0).max(1) as f64;

    let mut svg = String::new();
    let strip = 14.0;
    let servers_top = top + height + 40.0;
    let total_h = servers_top + strip * p.servers as f64 + 30.0;
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{total_h}" font-family="monospace" font-size="11">"#,
        left + width + 20.0
    );
    let _ = write!(
        svg,
        r##"<rect x="{left}" y="{top}" width="{width}" height="{height}" fill="#101230"/>"##
    );
    for (t, column) in p.heat.iter().enumerate() {
        for (b, &w) in column.iter().enumerate() {
            if w == 0 {
                continue;
            }
            let _ = write!(
                svg,
                r#"<rect x="{}" y="{}" width="{cw}" height="{ch}" fill="{}"><title>{} writes</title></rect>"#,
                left + t as f64 * cw,
                top + b as f64 * ch,
                heat_colour((w as f64 / max).sqrt()),
                w
            );
        }
    }
    for (t, lines) in p.boundaries.iter().enumerate() {
        // Thousands of vnode boundaries would paint the picture solid.
        if lines.len() > 400 {
            continue;
        }
        for y in lines {
            let y = top + y * height;
            let _ = write!(
                svg,
                r##"<line x1="{}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#6fd3ff" stroke-width="0.7" opacity="0.8"/>"##,
                left + t as f64 * cw,
                left + (t + 1) as f64 * cw
            );
        }
    }
    let first_key = run.keys.iter().min().map(|k| to_string_binary(k)).unwrap_or_default();
    let last_key = run.keys.iter().max().map(|k| to_string_binary(k)).unwrap_or_default();
    let (top_label, bottom_label) = if ex.cluster.model.is_range() {
        (first_key, last_key)
    } else {
        ("hash 0".to_string(), "hash 2^64".to_string())
    };
    let short = |s: &str| s.chars().take(20).collect::<String>();
    let _ = write!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="end">{}</text><text x="{}" y="{}" text-anchor="end">{}</text>"#,
        left - 6.0,
        top + 10.0,
        esc(&short(&top_label)),
        left - 6.0,
        top + height,
        esc(&short(&bottom_label))
    );
    let t_end = p.tick_start_ms + p.tick_ms * ticks as u64;
    let _ = write!(
        svg,
        r#"<text x="{left}" y="{}">{}</text><text x="{}" y="{}" text-anchor="end">{}</text><text x="{}" y="{}" text-anchor="middle">time →</text>"#,
        top + height + 14.0,
        clock(p.tick_start_ms),
        left + width,
        top + height + 14.0,
        clock(t_end),
        left + width / 2.0,
        top + height + 14.0
    );
    let per_server = p.writes_per_server();
    let total = per_server.iter().sum::<u64>().max(1);
    let smax = p.writes.iter().flatten().copied().max().unwrap_or(0).max(1) as f64;
    let _ = write!(
        svg,
        r#"<text x="{left}" y="{}">writes per server</text>"#,
        servers_top - 6.0
    );
    for s in 0..p.servers {
        let y = servers_top + s as f64 * strip;
        let w = per_server.get(s).copied().unwrap_or(0);
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="end">#{s} {:.1}%</text>"#,
            left - 6.0,
            y + strip - 3.0,
            100.0 * w as f64 / total as f64
        );
        for (t, tick) in p.writes.iter().enumerate() {
            let v = tick.get(s).copied().unwrap_or(0);
            let _ = write!(
                svg,
                r#"<rect x="{}" y="{y}" width="{cw}" height="{}" fill="{}"><title>server {s}: {v} writes</title></rect>"#,
                left + t as f64 * cw,
                strip - 2.0,
                heat_colour(v as f64 / smax)
            );
        }
    }
    svg.push_str("</svg>");

    let mut body = String::new();
    let _ = write!(
        body,
        "<h1>Row key: <code>{}</code></h1>\n<p>workload <b>{}</b>, {} writes over {} min, seed {}; store: {}, {} servers{}</p>\n",
        esc(&ex.key.to_string()),
        ex.workload.kind.name(),
        ex.workload.writes,
        ex.workload.span_ms / 60_000,
        ex.workload.seed,
        esc(&ex.cluster.model.to_string()),
        ex.cluster.servers,
        if ex.cluster.presplit > 1 {
            format!(", pre-split into {}", ex.cluster.presplit)
        } else {
            String::new()
        }
    );
    body.push_str("<pre>");
    for line in run.verdict.lines() {
        let _ = writeln!(body, "{}", esc(&line));
    }
    let _ = writeln!(
        body,
        "key size: {} to {} bytes, mean {:.1}; {} bytes over all writes; {} distinct rows; {} splits",
        run.sizes.min,
        run.sizes.max,
        run.sizes.mean,
        run.sizes.total,
        run.distinct_rows(),
        p.splits
    );
    let _ = writeln!(body, "sample keys: {}", esc(&run.sample_keys(3).join("  ")));
    body.push_str("</pre>\n");
    let _ =
        write!(
        body,
        "<p>Time runs left to right, the key space top (first key) to bottom (last key); brighter means more writes. \
         Blue lines are {} boundaries at the end of each time slice.</p>\n{svg}\n",
        if ex.cluster.model.is_range() { "region" } else { "ownership" }
    );
    if !plans.is_empty() {
        body.push_str("<h2>Reads</h2>\n<pre>");
        for (plan, exec) in plans {
            for line in describe(plan, Some(exec), !ex.cluster.model.is_range()) {
                let _ = writeln!(body, "{}", esc(&line));
            }
        }
        body.push_str("</pre>\n");
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>cellar keys: {}</title>\n\
         <style>body{{font-family:sans-serif;max-width:1000px;margin:1em auto;background:#fafafa}}\
         pre{{background:#fff;border:1px solid #ddd;padding:.6em;overflow-x:auto}}</style></head>\n<body>\n{body}</body></html>\n",
        esc(&ex.key.to_string())
    )
}
