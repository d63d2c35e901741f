//! Plain-text tables for the lesson reports: aligned columns, free lines of
//! explanation between rows, and the list of differences from the lesson.

/// An aligned table: the first column left-aligned, the others right-aligned.
#[derive(Default)]
pub(crate) struct Grid {
    lines: Vec<Line>,
    /// Columns after the first that are left-aligned too (notes).
    left: Vec<usize>,
}

enum Line {
    Cells(Vec<String>),
    Text(String),
}

impl Grid {
    pub(crate) fn new() -> Grid {
        Grid::default()
    }

    /// Left-aligns column `i` (a column of notes rather than figures).
    pub(crate) fn left_align(&mut self, i: usize) -> &mut Self {
        self.left.push(i);
        self
    }

    /// A row of cells.
    pub(crate) fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Self {
        self.lines
            .push(Line::Cells(cells.into_iter().map(Into::into).collect()));
        self
    }

    /// The two header rows of a table of reads: `label`, then three figures
    /// the lesson prints (each as lesson and cellar columns), then what only
    /// cellar measures: data blocks, pages touched, filter negatives.
    pub(crate) fn read_headers(&mut self, label: &str, figures: [&str; 3]) -> &mut Self {
        let [a, b, c] = figures;
        self.row(["", a, "", b, "", c, "", "data", "pages", "filter"]);
        self.row([
            label,
            "lesson",
            "cellar",
            "lesson",
            "cellar",
            "lesson",
            "cellar",
            "blocks",
            "touched",
            "negatives",
        ])
    }

    /// A line of text under the previous row, indented, outside the columns.
    pub(crate) fn text(&mut self, text: impl Into<String>) -> &mut Self {
        self.lines.push(Line::Text(text.into()));
        self
    }

    pub(crate) fn render(&self, out: &mut String) {
        let mut widths: Vec<usize> = Vec::new();
        for line in &self.lines {
            if let Line::Cells(cells) = line {
                for (i, c) in cells.iter().enumerate() {
                    let w = c.chars().count();
                    match widths.get_mut(i) {
                        Some(width) => *width = (*width).max(w),
                        None => widths.push(w),
                    }
                }
            }
        }
        for line in &self.lines {
            let text = match line {
                Line::Text(t) => format!("    {t}"),
                Line::Cells(cells) => {
                    let mut s = String::new();
                    for (i, c) in cells.iter().enumerate() {
                        let w = widths.get(i).copied().unwrap_or(0);
                        if i == 0 {
                            s.push_str(&format!("{c:<w$}"));
                        } else if self.left.contains(&i) {
                            s.push_str(&format!("  {c:<w$}"));
                        } else {
                            s.push_str(&format!("  {c:>w$}"));
                        }
                    }
                    s
                }
            };
            out.push_str(text.trim_end());
            out.push('\n');
        }
    }
}

/// The figures where cellar and the lesson differ, each with its reason.
#[derive(Default)]
pub(crate) struct Differences {
    lines: Vec<String>,
    notes: Vec<String>,
}

/// The reason given when a figure the engine should reproduce exactly does
/// not: it would be a bug in the engine or in the lesson's code, not a
/// difference of models.
pub(crate) const EXPECTED_SAME: &str =
    "Unexpected: cellar writes the same data with the same formulas and should measure the same figure; \
     this is a bug to report.";

impl Differences {
    pub(crate) fn new() -> Differences {
        Differences::default()
    }

    /// Records a difference when the two figures, as printed, are not the same.
    /// `why` is the reason, said in full.
    pub(crate) fn check(&mut self, what: &str, lesson: &str, cellar: &str, why: &str) {
        if lesson != cellar {
            self.lines
                .push(format!("{what}: lesson {lesson}, cellar {cellar}. {why}"));
        }
    }

    pub(crate) fn render(&self, out: &mut String) {
        if self.lines.is_empty() {
            out.push_str("cellar measures every figure of this lesson exactly as the lesson prints it.\n");
            return;
        }
        out.push_str("where cellar differs from the lesson, and why:\n");
        for line in &self.lines {
            out.push_str(&format!("  - {line}\n"));
        }
    }

    /// A remark that is not a difference of figures (same count, different
    /// meaning; what the engine shows that the lesson could not).
    pub(crate) fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }

    pub(crate) fn render_notes(&self, out: &mut String) {
        if self.notes.is_empty() {
            return;
        }
        out.push_str("notes:\n");
        for note in &self.notes {
            out.push_str(&format!("  - {note}\n"));
        }
    }
}
