//! One self-contained HTML page: sections of text, tables and pictures.
//!
//! The page must open anywhere, offline, years from now: so it carries its
//! style sheet inline, its pictures as inline SVG, and it names no script, no
//! font, no image file and no address. It is also well-formed XML (every
//! element closed, every text escaped, no HTML-only entities), so a strict
//! parser reads it as surely as a browser does, and the tests use one.

use std::fmt::Write as _;

use crate::svg::{escape, Svg};

/// The page's style: readable type, pictures on white, tables in a fixed font
/// small enough that the widest lesson table (164 columns) keeps its rows on
/// one line at full width (longer notes wrap).
const STYLE: &str = "body{font-family:sans-serif;max-width:1200px;margin:1em auto;padding:0 1em;\
background:#fafafa;color:#222}\
h1{font-size:1.6em}h2{font-size:1.3em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}\
h3{font-size:1.05em;margin-top:1.5em}\
pre{background:#fff;border:1px solid #ddd;padding:.6em;white-space:pre-wrap;font-size:11px}\
figure{margin:1em 0}figcaption{font-size:.9em;color:#444;max-width:1000px;margin-top:.3em}\
svg{background:#fff;border:1px solid #ddd;font-family:sans-serif;font-size:12px}\
nav a{margin-right:1em}";

/// A part of a page under one heading: paragraphs, preformatted tables and
/// figures, in the order they were added.
#[derive(Clone, Debug)]
pub struct Section {
    id: String,
    heading: String,
    body: String,
}

impl Section {
    /// An empty section; `id` is its anchor in the page (`#id`).
    pub fn new(id: &str, heading: &str) -> Section {
        Section {
            id: id.to_string(),
            heading: heading.to_string(),
            body: String::new(),
        }
    }

    /// Its anchor.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// A sub-heading.
    pub fn subheading(&mut self, text: &str) -> &mut Self {
        let _ = writeln!(self.body, "<h3>{}</h3>", escape(text));
        self
    }

    /// A paragraph of plain text.
    pub fn paragraph(&mut self, text: &str) -> &mut Self {
        let _ = writeln!(self.body, "<p>{}</p>", escape(text));
        self
    }

    /// Text kept exactly as given, in a fixed font: the terminal's tables.
    pub fn preformatted(&mut self, text: &str) -> &mut Self {
        let _ = writeln!(self.body, "<pre>{}</pre>", escape(text));
        self
    }

    /// A picture with a caption saying how to read it.
    pub fn figure(&mut self, picture: &Svg, caption: &str) -> &mut Self {
        let _ = writeln!(
            self.body,
            "<figure>{}<figcaption>{}</figcaption></figure>",
            picture.finish(),
            escape(caption)
        );
        self
    }
}

/// A whole page: a title, a line of links to its sections, the sections.
#[derive(Clone, Debug)]
pub struct Page {
    title: String,
    intro: Vec<String>,
    sections: Vec<Section>,
}

impl Page {
    /// An empty page.
    pub fn new(title: &str) -> Page {
        Page {
            title: title.to_string(),
            intro: Vec::new(),
            sections: Vec::new(),
        }
    }

    /// A paragraph under the title.
    pub fn intro(&mut self, text: &str) -> &mut Self {
        self.intro.push(text.to_string());
        self
    }

    /// Appends a section.
    pub fn push(&mut self, section: Section) -> &mut Self {
        self.sections.push(section);
        self
    }

    /// The page as HTML.
    pub fn finish(&self) -> String {
        let mut out = String::new();
        let title = escape(&self.title);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>\
             <meta name=\"viewport\" content=\"width=device-width\"/><title>{title}</title>\
             <style>{STYLE}</style></head>\n<body>\n<h1>{title}</h1>\n"
        );
        for p in &self.intro {
            let _ = writeln!(out, "<p>{}</p>", escape(p));
        }
        if self.sections.len() > 1 {
            out.push_str("<nav>");
            for s in &self.sections {
                let _ = write!(out, "<a href=\"#{}\">{}</a>", escape(&s.id), escape(&s.heading));
            }
            out.push_str("</nav>\n");
        }
        for s in &self.sections {
            let _ = write!(
                out,
                "<section id=\"{}\"><h2>{}</h2>\n{}</section>\n",
                escape(&s.id),
                escape(&s.heading),
                s.body
            );
        }
        out.push_str("</body></html>\n");
        out
    }
}
