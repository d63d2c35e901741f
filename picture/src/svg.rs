//! Writing SVG by hand: a string of elements, every text escaped.
//!
//! A picture here is a handful of rectangles, lines and labels, so the writer
//! is small: one method per shape, attributes given as `(name, value)` pairs,
//! and an optional tooltip (an SVG `<title>` child, which every browser shows
//! when the pointer rests on the shape). Every value and every text goes
//! through [`escape`], so a row key holding `<`, `&` or `"` can never break
//! the page or inject markup into it.
//!
//! (The `svg` crate was the alternative; as of 0.18 it leaves `"` unescaped
//! in attribute values, and a picture of a user's keys must not trust them.)
//!
//! Coordinates are in pixels from the top left; numbers are written with at
//! most one decimal, enough for a screen and short enough to keep pages small.

use std::fmt::Write as _;

/// Escapes text for HTML and XML, in element content and in quoted
/// attribute values alike: `&`, `<`, `>`, `"` and `'`.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0 at all: show them
            // the way a key printer would rather than drop them silently.
            c if c.is_control() && c != '\n' && c != '\t' => {
                let _ = write!(out, "\\x{:02X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// A number as SVG wants it: at most one decimal, no trailing `.0`.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "0".to_string();
    }
    let rounded = (x * 10.0).round() / 10.0;
    if rounded.fract() == 0.0 {
        format!("{rounded:.0}")
    } else {
        format!("{rounded:.1}")
    }
}

/// Where a label sits relative to its `x`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// Text starts at `x`.
    Start,
    /// Text is centred on `x`.
    Middle,
    /// Text ends at `x`.
    End,
}

impl Anchor {
    fn name(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// One SVG picture being written.
#[derive(Clone, Debug)]
pub struct Svg {
    width: f64,
    height: f64,
    class: String,
    body: String,
}

impl Svg {
    /// An empty picture of `width` x `height` pixels; `class` names what it
    /// shows (tests and style sheets find pictures by it).
    pub fn new(class: &str, width: f64, height: f64) -> Svg {
        Svg {
            width,
            height,
            class: class.to_string(),
            body: String::new(),
        }
    }

    /// Its width in pixels.
    pub fn width(&self) -> f64 {
        self.width
    }

    /// Its height in pixels.
    pub fn height(&self) -> f64 {
        self.height
    }

    /// Grows the picture to at least `height` pixels (for pictures whose
    /// height is known only once everything is drawn).
    pub fn fit_height(&mut self, height: f64) {
        self.height = self.height.max(height);
    }

    fn open(&mut self, name: &str, attrs: &[(&str, &str)]) {
        self.body.push('<');
        self.body.push_str(name);
        for (key, value) in attrs {
            let _ = write!(self.body, " {key}=\"{}\"", escape(value));
        }
    }

    /// An element with `attrs`, and a tooltip when `title` is given.
    fn shape(&mut self, name: &str, attrs: &[(&str, &str)], title: Option<&str>) {
        self.open(name, attrs);
        match title {
            Some(t) => {
                let _ = write!(self.body, "><title>{}</title></{name}>", escape(t));
            }
            None => self.body.push_str("/>"),
        }
    }

    /// A rectangle; `attrs` gives at least its `fill`.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, attrs: &[(&str, &str)], title: Option<&str>) {
        let (x, y, w, h) = (num(x), num(y), num(w.max(0.0)), num(h.max(0.0)));
        let mut all: Vec<(&str, &str)> = vec![("x", &x), ("y", &y), ("width", &w), ("height", &h)];
        all.extend_from_slice(attrs);
        self.shape("rect", &all, title);
    }

    /// A straight line; `attrs` gives at least its `stroke`.
    pub fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), attrs: &[(&str, &str)], title: Option<&str>) {
        let (x1, y1, x2, y2) = (num(x1), num(y1), num(x2), num(y2));
        let mut all: Vec<(&str, &str)> = vec![("x1", &x1), ("y1", &y1), ("x2", &x2), ("y2", &y2)];
        all.extend_from_slice(attrs);
        self.shape("line", &all, title);
    }

    /// A line through `points`.
    pub fn polyline(&mut self, points: &[(f64, f64)], attrs: &[(&str, &str)]) {
        let list: Vec<String> = points.iter().map(|&(x, y)| format!("{},{}", num(x), num(y))).collect();
        let list = list.join(" ");
        let mut all: Vec<(&str, &str)> = vec![("points", &list), ("fill", "none")];
        all.extend_from_slice(attrs);
        self.shape("polyline", &all, None);
    }

    /// A dot of radius `r` at `(x, y)`.
    pub fn circle(&mut self, (x, y): (f64, f64), r: f64, attrs: &[(&str, &str)], title: Option<&str>) {
        let (x, y, r) = (num(x), num(y), num(r));
        let mut all: Vec<(&str, &str)> = vec![("cx", &x), ("cy", &y), ("r", &r)];
        all.extend_from_slice(attrs);
        self.shape("circle", &all, title);
    }

    /// A label whose baseline starts, centres or ends at `(x, y)`.
    pub fn text(&mut self, (x, y): (f64, f64), anchor: Anchor, text: &str, attrs: &[(&str, &str)]) {
        let (x, y) = (num(x), num(y));
        let mut all: Vec<(&str, &str)> = vec![("x", &x), ("y", &y)];
        if anchor != Anchor::Start {
            all.push(("text-anchor", anchor.name()));
        }
        all.extend_from_slice(attrs);
        self.open("text", &all);
        let _ = write!(self.body, ">{}</text>", escape(text));
    }

    /// Opens a group: the shapes until [`Svg::end_group`] belong together
    /// (one source of a stack, one bar of a chart), and `attrs` (often
    /// `data-*` names) say what they stand for.
    pub fn group(&mut self, attrs: &[(&str, &str)], title: Option<&str>) {
        self.open("g", attrs);
        self.body.push('>');
        if let Some(t) = title {
            let _ = write!(self.body, "<title>{}</title>", escape(t));
        }
    }

    /// Closes the group opened last.
    pub fn end_group(&mut self) {
        self.body.push_str("</g>");
    }

    /// The picture as an `<svg>` element, to be placed in an HTML page.
    ///
    /// No `xmlns` attribute: inside HTML the parser puts `<svg>` in the SVG
    /// namespace itself, and the page then names no address at all.
    pub fn finish(&self) -> String {
        format!(
            "<svg class=\"{}\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\">{}</svg>",
            escape(&self.class),
            num(self.width),
            num(self.height),
            num(self.width),
            num(self.height),
            self.body
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_markup_character_is_escaped() {
        assert_eq!(escape(r#"a<b>&"c'"#), "a&lt;b&gt;&amp;&quot;c&#39;");
    }

    #[test]
    fn control_bytes_are_shown_not_written() {
        assert_eq!(escape("a\u{1}b"), "a\\x01b");
    }

    #[test]
    fn numbers_keep_one_decimal_at_most() {
        assert_eq!(num(12.0), "12");
        assert_eq!(num(12.345), "12.3");
        assert_eq!(num(f64::NAN), "0");
    }

    #[test]
    fn a_tooltip_and_a_label_are_escaped_inside_their_elements() {
        let mut svg = Svg::new("t", 10.0, 10.0);
        svg.rect(0.0, 0.0, 5.0, 5.0, &[("fill", "#000")], Some("row <1>"));
        svg.text((1.0, 2.0), Anchor::End, "a&b", &[]);
        assert_eq!(
            svg.finish(),
            "<svg class=\"t\" width=\"10\" height=\"10\" viewBox=\"0 0 10 10\" role=\"img\">\
             <rect x=\"0\" y=\"0\" width=\"5\" height=\"5\" fill=\"#000\"><title>row &lt;1&gt;</title></rect>\
             <text x=\"1\" y=\"2\" text-anchor=\"end\">a&amp;b</text></svg>"
        );
    }
}
