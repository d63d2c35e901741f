//! The lessons as pictures: one section of an HTML page per lesson, drawn
//! from the report the lesson returned.
//!
//! Each section holds the table the terminal prints, word for word, and the
//! pictures of the same figures: nothing here measures or computes a figure,
//! it only places the ones in the report (see `cellar_picture` for how).
//!
//! * append-only: the family's files stacked over the key space, newest on
//!   top; each of the four reads (and the scan) falling through them; the
//!   stack after the major compaction; space amplification over the writes.
//! * wide-row: one row's data blocks with the slice's blocks marked, and the
//!   blocks each way of asking reads, on one scale.
//! * layout: pages touched per query per layout on one scale (without and
//!   with LZ4), and what each family's files hold: values, keys, and the
//!   rest.
//! * query-first (its section is in `query_first.rs`, beside its report):
//!   entries examined per read on its layout against a filtering scan, the
//!   bytes each layout stores, and the largest partition with and without a
//!   time bucket.

use cellar_picture::chart::{self, Bar, BarGroup, Point, StackedRow};
use cellar_picture::{
    colour, stack, Anchor, Asked, Key, KeySpace, Page, ReadOnStack, Section, Stack, StackSource, Svg,
};

use super::{
    plural, thousands, AppendOnlyReport, FamilyFigures, FileRange, LayoutReport, ReadFigures, WideRowReport, FAMILIES,
    ROW_LAYOUT,
};

/// The page of every lesson in `sections`, in the order given.
pub fn page(sections: Vec<Section>) -> Page {
    let mut page = Page::new("cellar: the wide-column lesson on a real store");
    page.intro(
        "Each section is one lesson program run on a real cellar store: the table the terminal prints \
         (the lesson's figure beside cellar's measured one), then pictures of the same figures. Rest the \
         pointer on a bar or a point for its numbers.",
    );
    for s in sections {
        page.push(s);
    }
    page
}

/// A family's stack as the lesson measured it: the memtable, then the files
/// newest first.
fn stack_of(title: &str, family: &FamilyFigures, files: &[FileRange]) -> Stack {
    let rows = family
        .memtable_rows
        .as_ref()
        .map(|(first, last)| (Key::text(first), Key::text(last)));
    let mut sources = vec![StackSource::memtable(
        family.memtable_entries,
        family.memtable_tombstones,
        rows,
    )];
    let frozen = family.memtables - u64::from(family.memtable_entries > 0);
    sources.extend((0..frozen).map(|_| StackSource::frozen_memtable()));
    for f in files {
        sources.push(StackSource::table(
            f.file_id,
            f.run,
            (f.entries, f.tombstones),
            (Key::text(&f.first_row), Key::text(&f.last_row)),
            f.data_blocks,
        ));
    }
    Stack {
        title: title.to_string(),
        sources,
    }
}

/// `get loan:2 (key never touched): 7 sources visited, 1 data block`.
fn read_label(what: &str, cost: &ReadFigures) -> String {
    format!(
        "{what}: {} visited, {} read, {} examined",
        plural(cost.sources_visited, "source"),
        plural(cost.data_blocks, "data block"),
        entries(cost.entries_examined)
    )
}

/// `1 entry`, `2 entries`.
fn entries(n: u64) -> String {
    if n == 1 {
        "1 entry".to_string()
    } else {
        format!("{} entries", thousands(n))
    }
}

impl AppendOnlyReport {
    /// The lesson's section of the report page: its table, its stacks, its
    /// reads and its amplification over time.
    pub fn section(&self) -> Section {
        let mut s = Section::new(
            "append-only",
            "append-only: every write is a new entry, a delete is a tombstone",
        );
        s.preformatted(&self.render());
        let loaded = stack_of(
            &format!(
                "family loans after {} writes: newest on top",
                thousands(self.loaded.entries_written)
            ),
            &self.loaded,
            &self.files,
        );
        let compacted = stack_of(
            "the same family after the major compaction",
            &self.compacted,
            &self.compacted_files,
        );
        let read_keys: Vec<Key> = self.reads.iter().map(|r| Key::text(&r.key)).collect();
        let space = KeySpace::spanning(loaded.keys().chain(compacted.keys()).chain(&read_keys));

        s.subheading("The files, stacked over the key space");
        s.figure(
            &stack::draw(&loaded, &space, None),
            &format!(
                "One bar per source, newest on top: the memtable ({} entries), then the {} table files in the \
                 order a read consults them. A bar spans the rows its file holds, from its first to its last \
                 key in byte order; the dark band along its foot grows with its share of tombstones (half the bar when \
                 every entry is one). Keys sort \
                 as text, so a file of 25,000 consecutive loans spans almost the whole key space, and every file \
                 overlaps the others.",
                thousands(self.loaded.memtable_entries),
                self.loaded.table_files
            ),
        );
        s.subheading("Four reads, falling through the stack");
        for (read, key) in self.reads.iter().zip(&read_keys) {
            let on_stack = ReadOnStack {
                label: read_label(&format!("get {} ({})", read.key, read.name), &read.cost),
                asked: Asked::Row(key.clone()),
                sources: &read.cost.sources,
            };
            s.figure(
                &stack::draw(&loaded, &space, Some(&on_stack)),
                &format!(
                    "The dashed line is the row asked for. Each source takes the colour of how the read settled \
                     it: light blue, skipped by its key range; yellow, ruled out by its bloom filter; vermillion, \
                     searched; grey, never reached because the answer was known. Black marks the data blocks \
                     read. Settled: {}; {}.",
                    read.cost.how_settled(),
                    if read.found { "found" } else { "missing" }
                ),
            );
        }
        let scan = ReadOnStack {
            label: read_label("scan of every row", &self.scan),
            asked: Asked::Rows { from: None, to: None },
            sources: &self.scan.sources,
        };
        s.figure(
            &stack::draw(&loaded, &space, Some(&scan)),
            &format!(
                "A scan cannot stop at the first answer: it merges every source and reads every data block, \
                 {} entries for {} live rows.",
                thousands(self.scan.entries_examined),
                thousands(self.scan.entries_returned)
            ),
        );
        s.subheading("After the major compaction");
        s.figure(
            &stack::draw(&compacted, &space, None),
            &format!(
                "Compaction merged the {} sources into {} files of live entries side by side: no tombstone is \
                 left, no two files overlap, and a read now finds at most one file whose key range covers its row.",
                self.loaded.places(),
                self.compacted.table_files
            ),
        );
        s.subheading("Compact and watch amplification drop");
        s.figure(
            &self.amplification_chart(),
            "Space amplification (entries stored / entries a reader can see), measured from the store's \
             statistics every 10,000 writes. It stays at 1.00 while every write is a new record, rises as \
             updates add second versions and deletes add tombstones while hiding records, and falls back to \
             1.00 when the major compaction drops what no reader can see.",
        );
        s
    }

    fn amplification_chart(&self) -> Svg {
        let mut points: Vec<Point> = self
            .amplification
            .iter()
            .map(|p| Point {
                x: p.writes as f64,
                y: p.space_amplification,
                note: format!(
                    "after {} writes: {} stored / {} live = {:.2}",
                    thousands(p.writes),
                    thousands(p.stored_entries),
                    thousands(p.live_entries),
                    p.space_amplification
                ),
                label: None,
            })
            .collect();
        let phase = |writes: u64| match writes {
            100_000 => Some("end of the puts"),
            140_000 => Some("end of the updates"),
            160_000 => Some("end of the deletes"),
            _ => None,
        };
        for p in &mut points {
            if let Some(text) = phase(p.x as u64) {
                p.label = Some(format!("{text}: {:.2}", p.y));
            }
        }
        let last = self.amplification.last().map_or(0, |p| p.writes);
        points.push(Point {
            x: last as f64,
            y: self.compacted.space_amplification,
            note: format!(
                "after the major compaction: {} stored / {} live = {:.2}",
                thousands(self.compacted.stored_entries),
                thousands(self.compacted.live_entries),
                self.compacted.space_amplification
            ),
            label: Some(format!("major compaction: {:.2}", self.compacted.space_amplification)),
        });
        chart::line(
            "amplification",
            "space amplification over the writes",
            "writes (100,000 puts, then 40,000 updates, then 20,000 deletes)",
            "stored / live entries",
            &points,
        )
    }
}

impl WideRowReport {
    /// The lesson's section of the report page: its table, the row's blocks
    /// with the slice's marked, and the blocks each path read on one scale.
    pub fn section(&self) -> Section {
        let mut s = Section::new("wide-row", "wide-row: a book's loans as the columns of one row");
        s.preformatted(&self.render());
        if let [slice, whole, member] = self.paths.as_slice() {
            s.subheading("One row, block by block");
            s.figure(
                &self.row_strip(slice, whole),
                &format!(
                    "The row book:3 ({} columns, sorted by name) as the data blocks the whole-row read fetched, \
                     left to right. Vermillion: the {} the March slice read, placed where March's {} columns \
                     start in the row (after {} earlier ones): the index finds the block where the range starts \
                     and the read stops where it ends.",
                    thousands(whole.result),
                    plural(slice.cost.data_blocks, "block"),
                    thousands(slice.result),
                    thousands(self.columns_before_slice)
                ),
            );
            s.subheading("The same question, three ways, on one scale");
            let group = |title: &str, f: fn(&ReadFigures) -> u64, unit: &str| BarGroup {
                label: title.to_string(),
                bars: [slice, whole, member]
                    .iter()
                    .zip(colour::SERIES)
                    .map(|(p, c)| Bar {
                        label: p.name.clone(),
                        value: f(&p.cost) as f64,
                        printed: plural(f(&p.cost), unit),
                        colour: c,
                    })
                    .collect(),
            };
            s.figure(
                &chart::bars(
                    "wide-row-cost",
                    "what each way of asking read",
                    &[
                        group("data blocks read", |c| c.data_blocks, "block"),
                        group("pages touched", |c| c.pages_touched, "page"),
                    ],
                ),
                &format!(
                    "All bars share one scale. The member-partitioned layout answers the same question only by \
                     reading its whole file ({} blocks), because the loans of book 3 are spread over every member's row.",
                    thousands(member.cost.data_blocks)
                ),
            );
        }
        s
    }

    /// The row's blocks as a strip, the slice's highlighted.
    fn row_strip(&self, slice: &super::PathRead, whole: &super::PathRead) -> Svg {
        let blocks = whole.cost.data_blocks.max(1);
        let read = slice.cost.data_blocks.min(blocks);
        let columns = whole.result.max(1);
        // The first block of the slice: where its first column falls among the row's.
        let start = (self.columns_before_slice * blocks / columns).min(blocks - read);
        let (left, width) = (40.0, 960.0);
        let w = width / blocks as f64;
        let mut svg = Svg::new("row-blocks", 1060.0, 110.0);
        svg.text(
            (10.0, 18.0),
            Anchor::Start,
            &format!(
                "book:3: {} data blocks; the slice read {}",
                thousands(blocks),
                thousands(read)
            ),
            &[("font-weight", "bold")],
        );
        for b in 0..blocks {
            let in_slice = (start..start + read).contains(&b);
            let fill = if in_slice { colour::SEARCHED } else { colour::KEY_RANGE };
            svg.rect(
                left + b as f64 * w,
                34.0,
                (w - 2.0).max(1.0),
                36.0,
                &[
                    ("class", if in_slice { "block slice" } else { "block" }),
                    ("fill", fill),
                    ("stroke", colour::INK),
                    ("stroke-width", "0.5"),
                ],
                Some(&format!(
                    "block {} of {}{}",
                    b + 1,
                    blocks,
                    if in_slice { ": read by the slice" } else { "" }
                )),
            );
        }
        svg.text((left, 88.0), Anchor::Start, "loan|2024-01-…", &[("font-size", "11")]);
        svg.text(
            (left + width, 88.0),
            Anchor::End,
            "… loan|2024-12-…",
            &[("font-size", "11")],
        );
        svg
    }
}

impl LayoutReport {
    /// The lesson's section of the report page: its tables, pages touched per
    /// query per layout, and what each family's files hold.
    pub fn section(&self) -> Section {
        let mut s = Section::new(
            "layout",
            "layout: column families against one family holding every field",
        );
        s.preformatted(&self.render());
        s.subheading("Pages touched, per query and layout, on one scale, without and with LZ4");
        let bar = |label: &str, pages: u64, colour: &'static str| Bar {
            label: label.to_string(),
            value: pages as f64,
            printed: plural(pages, "page"),
            colour,
        };
        let groups: Vec<BarGroup> = [
            (&self.circulation, &self.lz4.circulation),
            (&self.record, &self.lz4.record),
        ]
        .into_iter()
        .map(|(q, z)| BarGroup {
            label: q.name.clone(),
            bars: vec![
                bar("one family, every field", q.row_layout.pages_touched, colour::SERIES[0]),
                bar("the same, LZ4", z.row_layout.pages_touched, colour::SERIES[3]),
                bar("four families", q.family_layout.pages_touched, colour::SERIES[1]),
                bar("the same, LZ4", z.family_layout.pages_touched, colour::SERIES[2]),
            ],
        })
        .collect();
        s.figure(
            &chart::bars("layout-pages", "pages touched", &groups),
            &format!(
                "Every bar is on the same scale. Reading the circulation fields of every book touches {:.1} times \
                 fewer pages when they live in a family of their own ({:.1} times with LZ4 on both stores: \
                 compression shrinks the row layout's long text more, but it still reads every field); reading \
                 one whole record touches more, one read per family.",
                self.circulation.ratio(),
                self.lz4.circulation.ratio()
            ),
        );
        s.subheading("What each family's files hold");
        let mut names: Vec<&str> = FAMILIES.iter().map(|(n, _)| *n).collect();
        names.push(ROW_LAYOUT);
        let rows: Vec<StackedRow> = names
            .iter()
            .filter_map(|n| self.family(n))
            .map(|f| StackedRow {
                label: if f.name == ROW_LAYOUT {
                    format!("{} (every field)", f.name)
                } else {
                    format!("family {}", f.name)
                },
                segments: vec![
                    ("values".to_string(), f.value_bytes as f64),
                    ("keys, as stored".to_string(), f.stored_key_bytes as f64),
                    (
                        "block overhead, index, filter".to_string(),
                        (f.block_overhead() + f.index_bytes + f.filter_bytes) as f64,
                    ),
                ],
                printed: format!("{} bytes on disk", thousands(f.file_bytes)),
            })
            .collect();
        s.figure(
            &chart::stacked(
                "layout-bytes",
                "bytes in each family's table files",
                &["values", "keys, as stored", "block overhead, index, filter"],
                &rows,
            ),
            "Every cell carries its key (row, column, timestamp and sequence, prefix-compressed), a cost per cell \
             rather than per byte of data: in the family of small circulation fields the keys outweigh the values.",
        );
        s
    }
}
