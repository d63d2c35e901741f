//! Plain charts: bars on one scale, stacked bars, and a line over time.
//!
//! Each chart draws the figures it is given and writes every figure beside
//! its mark, so a reader never has to estimate a length: the picture shows
//! the proportion, the label the number.

use crate::colour;
use crate::svg::{num, Anchor, Svg};

const WIDTH: f64 = 1060.0;
const LABEL_RIGHT: f64 = 250.0;
const PLOT_LEFT: f64 = 260.0;
const PLOT_WIDTH: f64 = 620.0;

/// One bar: what it is, its value, its colour, and the value as printed.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// What the bar measures (`row layout`).
    pub label: String,
    /// Its length.
    pub value: f64,
    /// The value as the terminal prints it (`1,886 pages`).
    pub printed: String,
    /// Its fill.
    pub colour: &'static str,
}

/// A group of bars under one name (`circulation fields, all books`).
#[derive(Clone, Debug, PartialEq)]
pub struct BarGroup {
    /// The group's name.
    pub label: String,
    /// Its bars, top to bottom.
    pub bars: Vec<Bar>,
}

/// Horizontal bars, all groups on one linear scale.
pub fn bars(class: &str, title: &str, groups: &[BarGroup]) -> Svg {
    let rows: usize = groups.iter().map(|g| g.bars.len() + 1).sum();
    let mut svg = Svg::new(class, WIDTH, 40.0 + 20.0 * rows as f64 + 10.0);
    svg.text((10.0, 18.0), Anchor::Start, title, &[("font-weight", "bold")]);
    let max = groups
        .iter()
        .flat_map(|g| &g.bars)
        .map(|b| b.value)
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    let mut y = 36.0;
    for group in groups {
        svg.text(
            (10.0, y + 12.0),
            Anchor::Start,
            &group.label,
            &[("font-weight", "bold")],
        );
        y += 20.0;
        for bar in &group.bars {
            let w = (bar.value / max * PLOT_WIDTH).max(1.0);
            svg.group(
                &[
                    ("class", "bar"),
                    ("data-label", &bar.label),
                    ("data-value", &num(bar.value)),
                ],
                Some(&format!("{}, {}: {}", group.label, bar.label, bar.printed)),
            );
            svg.text((LABEL_RIGHT, y + 12.0), Anchor::End, &bar.label, &[]);
            svg.rect(PLOT_LEFT, y + 2.0, w, 14.0, &[("fill", bar.colour)], None);
            svg.text((PLOT_LEFT + w + 6.0, y + 13.0), Anchor::Start, &bar.printed, &[]);
            svg.end_group();
            y += 20.0;
        }
    }
    svg
}

/// A row of stacked segments (`family identity: values, keys, overhead`).
#[derive(Clone, Debug, PartialEq)]
pub struct StackedRow {
    /// What the row is.
    pub label: String,
    /// Its segments, left to right: a name, a value (and the fill of the
    /// segment comes from the chart's series).
    pub segments: Vec<(String, f64)>,
    /// The row's total as printed.
    pub printed: String,
}

/// Rows of stacked segments on one scale, with a legend of the series
/// (`series[i]` names segment `i` of every row).
pub fn stacked(class: &str, title: &str, series: &[&str], rows: &[StackedRow]) -> Svg {
    let mut svg = Svg::new(class, WIDTH, 70.0 + 22.0 * rows.len() as f64);
    svg.text((10.0, 18.0), Anchor::Start, title, &[("font-weight", "bold")]);
    let max = rows
        .iter()
        .map(|r| r.segments.iter().map(|s| s.1).sum::<f64>())
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    let mut y = 32.0;
    for row in rows {
        svg.group(&[("class", "stacked-row"), ("data-label", &row.label)], None);
        svg.text((LABEL_RIGHT, y + 13.0), Anchor::End, &row.label, &[]);
        let mut x = PLOT_LEFT;
        for (i, (name, value)) in row.segments.iter().enumerate() {
            let w = value / max * PLOT_WIDTH;
            let fill = colour::SERIES
                .get(i % colour::SERIES.len())
                .copied()
                .unwrap_or(colour::SOURCE);
            svg.rect(
                x,
                y + 2.0,
                w,
                16.0,
                &[("fill", fill), ("data-segment", name), ("data-value", &num(*value))],
                Some(&format!("{}: {name} {}", row.label, crate::thousands(*value as u64))),
            );
            x += w;
        }
        svg.text((x + 6.0, y + 14.0), Anchor::Start, &row.printed, &[]);
        svg.end_group();
        y += 22.0;
    }
    let mut x = PLOT_LEFT;
    for (i, name) in series.iter().enumerate() {
        let fill = colour::SERIES
            .get(i % colour::SERIES.len())
            .copied()
            .unwrap_or(colour::SOURCE);
        svg.rect(x, y + 6.0, 12.0, 12.0, &[("fill", fill)], None);
        svg.text((x + 16.0, y + 16.0), Anchor::Start, name, &[("font-size", "11")]);
        x += 30.0 + 6.5 * name.len() as f64;
    }
    svg
}

/// A point of a line chart, with what to say about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Position across.
    pub x: f64,
    /// Height.
    pub y: f64,
    /// The tooltip (`after 120,000 writes: 1.20`).
    pub note: String,
    /// A label written beside the point, if any (`compaction`).
    pub label: Option<String>,
}

/// A line chart: `points` joined in order (a point at the same `x` as the one
/// before draws a vertical step, as an event that takes no writes does).
pub fn line(class: &str, title: &str, x_axis: &str, y_axis: &str, points: &[Point]) -> Svg {
    const TOP: f64 = 40.0;
    const HEIGHT: f64 = 240.0;
    let left = 90.0;
    let width = 760.0;
    let mut svg = Svg::new(class, WIDTH, TOP + HEIGHT + 60.0);
    svg.text((10.0, 18.0), Anchor::Start, title, &[("font-weight", "bold")]);
    let x_max = points.iter().map(|p| p.x).fold(0.0, f64::max).max(1.0);
    let y_max = nice_ceiling(points.iter().map(|p| p.y).fold(0.0, f64::max));
    let to_px = |p: &Point| (left + p.x / x_max * width, TOP + HEIGHT - p.y / y_max * HEIGHT);
    // Grid and axes: four steps up, four across.
    for i in 0..=4 {
        let f = f64::from(i) / 4.0;
        let y = TOP + HEIGHT - f * HEIGHT;
        svg.line((left, y), (left + width, y), &[("stroke", colour::GRID)], None);
        svg.text((left - 6.0, y + 4.0), Anchor::End, &format!("{:.2}", f * y_max), &[]);
        let x = left + f * width;
        svg.line(
            (x, TOP + HEIGHT),
            (x, TOP + HEIGHT + 4.0),
            &[("stroke", colour::INK)],
            None,
        );
        svg.text(
            (x, TOP + HEIGHT + 17.0),
            Anchor::Middle,
            &crate::thousands((f * x_max).round() as u64),
            &[],
        );
    }
    svg.line((left, TOP), (left, TOP + HEIGHT), &[("stroke", colour::INK)], None);
    svg.line(
        (left, TOP + HEIGHT),
        (left + width, TOP + HEIGHT),
        &[("stroke", colour::INK)],
        None,
    );
    svg.text((left + width / 2.0, TOP + HEIGHT + 36.0), Anchor::Middle, x_axis, &[]);
    svg.text((left - 6.0, TOP - 10.0), Anchor::Start, y_axis, &[]);
    let px: Vec<(f64, f64)> = points.iter().map(to_px).collect();
    svg.polyline(&px, &[("stroke", colour::SERIES[0]), ("stroke-width", "2.5")]);
    for (p, (x, y)) in points.iter().zip(&px) {
        svg.circle(
            (*x, *y),
            4.0,
            &[
                ("class", "point"),
                ("data-x", &num(p.x)),
                ("data-y", &format!("{:.2}", p.y)),
                ("fill", colour::SERIES[0]),
            ],
            Some(&p.note),
        );
        if let Some(label) = &p.label {
            svg.text((x + 8.0, y + 4.0), Anchor::Start, label, &[]);
        }
    }
    svg
}

/// A round number at or above `x`, for the top of an axis (1, 2, 2.5, 5 x 10^n).
fn nice_ceiling(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 || !x.is_finite() {
        return 1.0;
    }
    let base = 10f64.powf(x.log10().floor());
    for step in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if step * base >= x {
            return step * base;
        }
    }
    10.0 * base
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_tops_are_round_numbers() {
        assert_eq!(nice_ceiling(2.0), 2.0);
        assert_eq!(nice_ceiling(2.1), 2.5);
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(1_886.0), 2_000.0);
    }
}
