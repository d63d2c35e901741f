//! # cellar-picture: what the store looks like
//!
//! The ideas of an LSM tree are spatial: files stacked newest to oldest over
//! a key space, a read falling through them until one settles it, compaction
//! folding many runs into one. This crate draws them, as SVG inside one
//! self-contained HTML page, from the figures the engine measured: it never
//! computes a figure of its own, it only places the ones it is given.
//!
//! Reading order:
//!
//! 1. [`svg`]: the writer, and the escaping every text goes through.
//! 2. [`page`]: the HTML page and its sections (no script, no font, no address).
//! 3. [`colour`]: one colour per meaning, shared by every picture.
//! 4. [`key_space`]: byte-order keys placed along a line.
//! 5. [`stack`]: a family's sources over its key space, and a read through them.
//! 6. [`chart`]: bars on one scale, stacked bars, a line over time.
//!
//! The pictures themselves are drawn by the code that owns their figures:
//! the lessons (`cellar-bench`), `cellar explain` and `files` (the CLI), and
//! the key designer's report (`cellar-keys`).
#![deny(missing_docs)]

pub mod chart;
pub mod colour;
pub mod key_space;
pub mod page;
pub mod stack;
pub mod svg;

pub use key_space::{Key, KeySpace};
pub use page::{Page, Section};
pub use stack::{Asked, ReadOnStack, Stack, StackSource};
pub use svg::{escape, Anchor, Svg};

/// `n` with thousands separators: `263,867`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
