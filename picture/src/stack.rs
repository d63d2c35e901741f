//! The stack: a family's sources over its key space, newest on top.
//!
//! An LSM tree is a pile of sorted runs. This picture draws the pile as it
//! is: one bar per source, the memtable first and then the table files in
//! the order a read consults them (newest first), each bar spanning the keys
//! the source holds, with a dark band along its foot that grows with its
//! share of tombstones (half the bar when every entry is one). Files whose
//! bars overlap are files a read may have to look in.
//!
//! With a read, every bar takes the colour of how the read settled it (see
//! [`crate::colour`]): the read falls through the pile until it knows the
//! answer, and the sources below that stay grey. The data blocks the read
//! fetched are marked in black on the bars that paid for them, placed where
//! the read's key falls (their number comes from the read's [`Trace`];
//! their place in the file is where the key sorts, drawn to scale of the
//! file's blocks).
//!
//! [`Trace`]: cellar_engine::Trace

use cellar_engine::{key, FamilyStats, Settled, SourceKind, SourceTrace, TableInfo};

use crate::colour;
use crate::key_space::{Key, KeySpace};
use crate::svg::{Anchor, Svg};
use crate::thousands;

/// One source of a family: the memtable or a table file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackSource {
    /// Which source (matched against a read's [`SourceTrace`]s).
    pub kind: SourceKind,
    /// Its name as the store's listings print it (`memtable`, `000012.sst`).
    pub name: String,
    /// Entries it holds, versions and tombstones included.
    pub entries: u64,
    /// Tombstones among them.
    pub tombstones: u64,
    /// Its first and last row; `None` when it is empty or the range is not known.
    pub rows: Option<(Key, Key)>,
    /// Data blocks of a table file (`None` for a memtable, which has none).
    pub data_blocks: Option<u64>,
}

impl StackSource {
    /// The active memtable with its entries, tombstones and rows (`None`
    /// when it is empty).
    pub fn memtable(entries: u64, tombstones: u64, rows: Option<(Key, Key)>) -> StackSource {
        StackSource {
            kind: SourceKind::ActiveMemtable,
            name: "memtable".to_string(),
            entries,
            tombstones,
            rows,
            data_blocks: None,
        }
    }

    /// A frozen memtable waiting for its flush (the store counts these but
    /// does not list their contents).
    pub fn frozen_memtable() -> StackSource {
        StackSource {
            kind: SourceKind::FrozenMemtable,
            name: "frozen memtable".to_string(),
            entries: 0,
            tombstones: 0,
            rows: None,
            data_blocks: None,
        }
    }

    /// Table file `file_id` of sorted run `run`, named as the store names it,
    /// with its `(entries, tombstones)`, first and last row, and data blocks.
    pub fn table(
        file_id: u64,
        run: u64,
        (entries, tombstones): (u64, u64),
        rows: (Key, Key),
        data_blocks: u64,
    ) -> StackSource {
        StackSource {
            kind: SourceKind::Table { file_id, run },
            name: format!("{file_id:06}.sst"),
            entries,
            tombstones,
            rows: Some(rows),
            data_blocks: Some(data_blocks),
        }
    }
}

/// A family's sources, newest first, as reads consult them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stack {
    /// What the stack is of (`family loans after the load`).
    pub title: String,
    /// The sources, memtables first, then the table files newest first.
    pub sources: Vec<StackSource>,
}

impl Stack {
    /// The stack of a family of a store: its active memtable, its frozen
    /// memtables, then its table files in the order the store lists them
    /// (the order reads consult them). `family` is the family's statistics
    /// and `tables` the store's table list (other families' files are left
    /// out); `print` turns a row key into text.
    pub fn of_family(family: &FamilyStats, tables: &[TableInfo], print: &dyn Fn(&[u8]) -> String) -> Stack {
        let row = |internal: &[u8]| {
            let bytes = key::parse(internal).map_or_else(|| internal.to_vec(), |k| k.row.to_vec());
            Key {
                text: print(&bytes),
                bytes,
            }
        };
        let mut sources = vec![StackSource::memtable(
            family.memtable_entries,
            family.memtable_tombstones,
            family.memtable_key_range.as_ref().map(|(a, b)| (row(a), row(b))),
        )];
        sources.extend((0..family.frozen_memtables).map(|_| StackSource::frozen_memtable()));
        for t in tables.iter().filter(|t| t.family == family.name) {
            sources.push(StackSource::table(
                t.file_id,
                t.run,
                (t.entries, t.tombstones),
                (row(&t.first_key), row(&t.last_key)),
                t.data_blocks,
            ));
        }
        Stack {
            title: format!("family {}: its sources, newest first", family.name),
            sources,
        }
    }

    /// The rows at the ends of every source, to span a key space with.
    pub fn keys(&self) -> impl Iterator<Item = &Key> {
        self.sources
            .iter()
            .filter_map(|s| s.rows.as_ref())
            .flat_map(|(a, b)| [a, b])
    }
}

/// What a read asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Asked {
    /// One row (a get, or a slice of its columns).
    Row(Key),
    /// Rows from `from` (inclusive; `None`: the first) to `to` (exclusive; `None`: the end).
    Rows {
        /// First row.
        from: Option<Key>,
        /// End row.
        to: Option<Key>,
    },
}

/// A read to show on a stack: what it asked and what its trace recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadOnStack<'a> {
    /// The read in words (`get loan:2`).
    pub label: String,
    /// What it asked for.
    pub asked: Asked,
    /// Its trace, source by source, newest first.
    pub sources: &'a [SourceTrace],
}

impl ReadOnStack<'_> {
    /// The trace entry of `source`: the same table file, or the memtable of
    /// the same kind in the same place among the memtables.
    fn trace_of(&self, stack: &Stack, index: usize) -> Option<&SourceTrace> {
        let source = stack.sources.get(index)?;
        match source.kind {
            SourceKind::Table { file_id, .. } => self
                .sources
                .iter()
                .find(|t| matches!(t.source, SourceKind::Table { file_id: id, .. } if id == file_id)),
            kind => {
                let nth = stack.sources.iter().take(index).filter(|s| s.kind == kind).count();
                self.sources.iter().filter(|t| t.source == kind).nth(nth)
            }
        }
    }
}

/// How a read left one source, as the picture states it (`data-settled`).
pub fn state_name(trace: Option<&SourceTrace>) -> &'static str {
    match trace {
        Some(t) => colour::settled_name(t.settled),
        None => "not consulted",
    }
}

// The picture's geometry, in pixels.
const WIDTH: f64 = 1060.0;
const LABEL_RIGHT: f64 = 120.0;
const BARS_LEFT: f64 = 130.0;
const BARS_WIDTH: f64 = 560.0;
const NOTE_LEFT: f64 = BARS_LEFT + BARS_WIDTH + 12.0;
const ROW: f64 = 24.0;
const BAR: f64 = 16.0;
const TOP: f64 = 56.0;

fn x_of(space: &KeySpace, key: &[u8]) -> f64 {
    BARS_LEFT + space.position(key) * BARS_WIDTH
}

/// Draws `stack` over `space`, with `read` when given.
pub fn draw(stack: &Stack, space: &KeySpace, read: Option<&ReadOnStack<'_>>) -> Svg {
    let rows_height = ROW * stack.sources.len().max(1) as f64;
    let legend_top = TOP + rows_height + 44.0;
    let mut svg = Svg::new("stack", WIDTH, legend_top + 26.0);
    let heading = match read {
        Some(r) => r.label.clone(),
        None => stack.title.clone(),
    };
    svg.text((10.0, 18.0), Anchor::Start, &heading, &[("font-weight", "bold")]);
    svg.text(
        (LABEL_RIGHT, TOP - 2.0),
        Anchor::End,
        "newest",
        &[("fill", colour::INK), ("font-size", "11")],
    );
    if let Some(r) = read {
        draw_asked(&mut svg, space, &r.asked, TOP - 18.0, TOP + rows_height);
    }
    for (i, source) in stack.sources.iter().enumerate() {
        let trace = read.and_then(|r| r.trace_of(stack, i));
        let y = TOP + i as f64 * ROW;
        draw_source(&mut svg, space, source, y, read, trace);
    }
    svg.text(
        (LABEL_RIGHT, TOP + rows_height + 10.0),
        Anchor::End,
        "oldest",
        &[("fill", colour::INK), ("font-size", "11")],
    );
    draw_axis(&mut svg, space, TOP + rows_height);
    draw_legend(&mut svg, legend_top, read.is_some());
    svg
}

fn draw_asked(svg: &mut Svg, space: &KeySpace, asked: &Asked, top: f64, bottom: f64) {
    match asked {
        Asked::Row(key) => {
            let x = x_of(space, &key.bytes);
            svg.line(
                (x, top),
                (x, bottom),
                &[("stroke", colour::INK), ("stroke-dasharray", "3 3")],
                None,
            );
            let anchor = if x > BARS_LEFT + BARS_WIDTH * 0.8 {
                Anchor::End
            } else {
                Anchor::Middle
            };
            svg.text((x, top - 2.0), anchor, &key.text, &[("font-size", "11")]);
        }
        Asked::Rows { from, to } => {
            let a = from.as_ref().map_or(BARS_LEFT, |k| x_of(space, &k.bytes));
            let b = to.as_ref().map_or(BARS_LEFT + BARS_WIDTH, |k| x_of(space, &k.bytes));
            svg.rect(
                a,
                top,
                (b - a).max(1.0),
                bottom - top,
                &[("fill", colour::INK), ("fill-opacity", "0.06")],
                Some("the rows the read asked for"),
            );
            let label = match (from, to) {
                (None, None) => "every row".to_string(),
                (from, to) => format!(
                    "rows {} .. {}",
                    from.as_ref().map_or("(first)", |k| k.text.as_str()),
                    to.as_ref().map_or("(end)", |k| k.text.as_str())
                ),
            };
            svg.text(
                ((a + b) / 2.0, top - 2.0),
                Anchor::Middle,
                &label,
                &[("font-size", "11")],
            );
        }
    }
}

fn draw_source(
    svg: &mut Svg,
    space: &KeySpace,
    source: &StackSource,
    y: f64,
    read: Option<&ReadOnStack<'_>>,
    trace: Option<&SourceTrace>,
) {
    let state = match read {
        Some(_) => state_name(trace),
        None => "none",
    };
    let fill = match (read, trace) {
        (None, _) if !matches!(source.kind, SourceKind::Table { .. }) => colour::MEMTABLE,
        (None, _) => colour::SOURCE,
        (Some(_), Some(t)) => colour::settled(t.settled),
        (Some(_), None) => colour::NOT_CONSULTED,
    };
    let range = source.rows.as_ref().map_or("keys not recorded".to_string(), |(a, b)| {
        format!("{} .. {}", a.text, b.text)
    });
    let contents = format!(
        "{}, {}",
        plural(source.entries, "entry", "entries"),
        plural(source.tombstones, "tombstone", "tombstones")
    );
    let outcome = read.map(|_| outcome(source, trace));
    let tooltip = match &outcome {
        Some(o) => format!("{}: {range}; {contents}; {o}", source.name),
        None => format!("{}: {range}; {contents}", source.name),
    };
    svg.group(
        &[
            ("class", "source"),
            ("data-source", &source.name),
            ("data-settled", state),
            ("data-entries", &source.entries.to_string()),
            ("data-tombstones", &source.tombstones.to_string()),
        ],
        Some(&tooltip),
    );
    let top = y + (ROW - BAR) / 2.0;
    svg.text((LABEL_RIGHT, top + BAR - 4.0), Anchor::End, &source.name, &[]);
    let (a, b) = match (&source.rows, source.entries) {
        (_, 0) => (BARS_LEFT, BARS_LEFT),
        (Some((first, last)), _) => (x_of(space, &first.bytes), x_of(space, &last.bytes)),
        (None, _) => (BARS_LEFT, BARS_LEFT + BARS_WIDTH),
    };
    let width = (b - a).max(3.0);
    if source.entries > 0 {
        let mut attrs = vec![
            ("class", "bar"),
            ("fill", fill),
            ("stroke", colour::INK),
            ("stroke-width", "0.5"),
        ];
        if source.rows.is_none() {
            attrs.push(("stroke-dasharray", "4 2"));
        }
        svg.rect(a, top, width, BAR, &attrs, None);
        if source.tombstones > 0 {
            // Half the bar's height when every entry is a tombstone, so the
            // bar's own colour always shows above the band.
            let share = source.tombstones as f64 / source.entries as f64;
            let h = (BAR / 2.0 * share).max(1.5);
            svg.rect(
                a,
                top + BAR - h,
                width,
                h,
                &[
                    ("class", "tombstones"),
                    ("fill", colour::TOMBSTONE),
                    ("fill-opacity", "0.75"),
                ],
                None,
            );
        }
    }
    if let (Some(r), Some(t)) = (read, trace) {
        if t.data_blocks > 0 {
            let (x, w) = block_mark(space, &r.asked, a, width, t.data_blocks, source.data_blocks);
            svg.rect(
                x,
                top + BAR / 2.0 - 4.0,
                w,
                8.0,
                &[
                    ("class", "blocks-read"),
                    ("data-blocks", &t.data_blocks.to_string()),
                    ("fill", colour::BLOCK_READ),
                ],
                None,
            );
        }
    }
    let note = match outcome {
        Some(o) => o,
        None if source.kind == SourceKind::FrozenMemtable => "frozen, waiting for its flush".to_string(),
        None if source.entries == 0 => "empty".to_string(),
        None => contents,
    };
    svg.text((NOTE_LEFT, top + BAR - 4.0), Anchor::Start, &note, &[]);
    svg.end_group();
}

/// Where to mark the blocks a read fetched from a bar spanning `a ..
/// a + width`: at the asked row (wide as the blocks' share of the file), or
/// over the asked rows that the bar covers.
fn block_mark(space: &KeySpace, asked: &Asked, a: f64, width: f64, read: u64, blocks: Option<u64>) -> (f64, f64) {
    let share = blocks.map_or(1.0, |n| (read as f64 / n.max(1) as f64).min(1.0));
    let b = a + width;
    match asked {
        Asked::Row(key) => {
            let w = (width * share).max(3.0);
            let centre = x_of(space, &key.bytes).clamp(a, b);
            ((centre - w / 2.0).clamp(a, (b - w).max(a)), w)
        }
        Asked::Rows { from, to } => {
            let lo = from.as_ref().map_or(a, |k| x_of(space, &k.bytes)).max(a);
            let hi = to.as_ref().map_or(b, |k| x_of(space, &k.bytes)).min(b);
            (lo.min(hi), (hi - lo).max(3.0))
        }
    }
}

/// What a read did at a source, in words.
fn outcome(source: &StackSource, trace: Option<&SourceTrace>) -> String {
    let Some(t) = trace else {
        return "not consulted: answer already known".to_string();
    };
    match t.settled {
        Settled::KeyRange => "key range: the row is outside".to_string(),
        // A memtable's bloom filter is its row filter, kept as it is written.
        Settled::Filter if source.data_blocks.is_none() => "row filter: absent".to_string(),
        Settled::Filter => "bloom filter: absent".to_string(),
        Settled::Searched if source.data_blocks.is_none() => {
            format!(
                "searched in memory, {} examined",
                plural(t.entries_examined, "entry", "entries")
            )
        }
        Settled::Searched => format!(
            "searched: {} ({}), {}",
            plural(t.data_blocks, "block", "blocks"),
            plural(t.pages_touched, "page", "pages"),
            plural(t.entries_examined, "entry", "entries")
        ),
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{} {many}", thousands(n))
    }
}

fn draw_axis(svg: &mut Svg, space: &KeySpace, y: f64) {
    let y = y + 6.0;
    svg.line(
        (BARS_LEFT, y),
        (BARS_LEFT + BARS_WIDTH, y),
        &[("stroke", colour::INK)],
        None,
    );
    for x in [BARS_LEFT, BARS_LEFT + BARS_WIDTH] {
        svg.line((x, y - 3.0), (x, y + 3.0), &[("stroke", colour::INK)], None);
    }
    svg.text(
        (BARS_LEFT, y + 15.0),
        Anchor::Start,
        &space.first().text,
        &[("class", "key-first")],
    );
    svg.text(
        (BARS_LEFT + BARS_WIDTH, y + 15.0),
        Anchor::End,
        &space.last().text,
        &[("class", "key-last")],
    );
    svg.text(
        (BARS_LEFT + BARS_WIDTH / 2.0, y + 15.0),
        Anchor::Middle,
        "row keys in byte order",
        &[("fill", colour::INK), ("font-size", "11")],
    );
}

fn draw_legend(svg: &mut Svg, y: f64, with_read: bool) {
    let items: Vec<(&str, &str)> = if with_read {
        vec![
            (colour::KEY_RANGE, "key range: skipped, no I/O"),
            (colour::FILTER, "bloom filter: absent"),
            (colour::SEARCHED, "searched"),
            (colour::NOT_CONSULTED, "not consulted"),
            (colour::BLOCK_READ, "data blocks read"),
            (colour::TOMBSTONE, "tombstone share"),
        ]
    } else {
        vec![
            (colour::MEMTABLE, "memtable"),
            (colour::SOURCE, "table file"),
            (colour::TOMBSTONE, "tombstone share (band height)"),
        ]
    };
    let mut x = BARS_LEFT;
    for (fill, label) in items {
        svg.rect(
            x,
            y - 10.0,
            12.0,
            12.0,
            &[("fill", fill), ("stroke", colour::INK), ("stroke-width", "0.5")],
            None,
        );
        svg.text((x + 16.0, y), Anchor::Start, label, &[("font-size", "11")]);
        x += 22.0 + 6.5 * label.len() as f64;
    }
}
