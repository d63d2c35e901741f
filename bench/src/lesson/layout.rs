//! What layout changes (the lesson's `column/layout.mjs`).
//!
//! The same 20,000 records are stored twice: split into four column families
//! (identity, publication, circulation, text), each in files of its own, and
//! in one family holding all ten fields side by side. A store reads whole
//! pages, so the question is how many pages a query touches. The lesson
//! counts raw field bytes only; a real engine stores a key with every cell,
//! so this report also shows what the keys cost, family by family.
//!
//! Beyond the lesson, the same two layouts are stored a second time with
//! LZ4 on (each data block compressed on its own), to answer the question a
//! learner asks next: does compression make the row layout as cheap?

use std::path::Path;

use cellar_sstable::PAGE_SIZE;

use cellar_engine::{Compression, FamilyOptions, RowRange, Store, StoreOptions, TableInfo, WriteBatch};

use super::render::{Differences, Grid, EXPECTED_SAME};
use super::{plural, prepare, ratio, thousands, ReadFigures, LOAD_TIME_MS};
use crate::error::Result;
use crate::progress::{Progress, Silent};

const RECORDS: u64 = 20_000;
/// The record the single-record query reads.
const TARGET: u64 = 4244;
/// The four families and their fields, in the lesson's order.
pub const FAMILIES: [(&str, &[&str]); 4] = [
    ("identity", &["book_id", "title", "author"]),
    ("publication", &["year", "language", "isbn"]),
    ("circulation", &["loan_count", "branch_id", "status"]),
    ("text", &["summary"]),
];
/// The row layout: one family holding all ten fields.
pub const ROW_LAYOUT: &str = "all_fields";
/// Subfolder of the store holding the four families.
pub const FAMILY_LAYOUT_STORE: &str = "family_layout";
/// Subfolder of the store holding the one family.
pub const ROW_LAYOUT_STORE: &str = "row_layout";
/// Subfolders of the two stores again, with LZ4 on.
pub const LZ4_STORES: [&str; 2] = ["family_layout_lz4", "row_layout_lz4"];
/// Records per write batch (20 cells each: both layouts).
const BATCH: u64 = 100;

/// What the lesson printed ("Wide-Column Stores", output of
/// `column/layout.mjs`), cited as printed. These label the "lesson" column
/// only; no cellar figure is computed from them.
mod printed {
    pub const RECORDS: u64 = 20_000;
    pub const TOTAL_BYTES: u64 = 7_666_879;
    /// The row layout's size in 4,096-byte pages.
    pub const TOTAL_PAGES: u64 = 1_872;
    /// Raw field bytes of each family.
    pub const FAMILY_BYTES: [(&str, u64); 4] = [
        ("identity", 1_353_388),
        ("publication", 400_000),
        ("circulation", 204_597),
        ("text", 5_708_894),
    ];
    /// query, row layout pages, family layout pages, ratio
    pub const QUERIES: [(&str, u64, u64, &str); 2] = [
        ("circulation summary across all books", 1_872, 51, "36.71"),
        ("all fields of a single book (4244)", 1, 5, "0.20"),
    ];
}

/// `1 page`, `3,280 pages`.
fn pages(n: u64) -> String {
    plural(n, "page")
}

/// `412 KiB`, `9.3 MiB`: bytes for a sentence.
fn bytes(n: u64) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / f64::from(1 << 20))
    } else {
        format!("{} KiB", thousands(n.div_ceil(1024)))
    }
}

/// The lesson's record `i`: its ten fields as text, as the lesson writes them.
fn field(i: u64, name: &str) -> String {
    match name {
        "book_id" => i.to_string(),
        "title" => format!("Book {i} {}", "a".repeat(30)),
        "author" => format!("Author {} {}", i % 500, "b".repeat(12)),
        "year" => (1960 + i % 65).to_string(),
        "language" => (if i.is_multiple_of(4) { "en" } else { "tr" }).to_string(),
        "isbn" => format!("978-{}", 1_000_000_000 + i),
        "loan_count" => (i % 97).to_string(),
        "branch_id" => (1 + i % 9).to_string(),
        "status" => (if i.is_multiple_of(3) { "on_shelf" } else { "on_loan" }).to_string(),
        "summary" => format!("{} {i}", "c".repeat(280)),
        _ => String::new(),
    }
}

/// What one family's table files hold, byte by byte (from the table list).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FamilyBytes {
    /// Family name.
    pub name: String,
    /// Table files.
    pub files: u64,
    /// Cells stored.
    pub cells: u64,
    /// Value bytes (the lesson's "field bytes").
    pub value_bytes: u64,
    /// Internal key bytes before prefix compression.
    pub raw_key_bytes: u64,
    /// Key bytes written, after prefix compression and key-trailer XORs.
    pub stored_key_bytes: u64,
    /// Data block bytes: keys, values, entry headers, restart arrays, trailers.
    pub data_bytes: u64,
    /// Index block bytes.
    pub index_bytes: u64,
    /// Bloom filter bytes.
    pub filter_bytes: u64,
    /// Bytes of the files on disk.
    pub file_bytes: u64,
    /// 4,096-byte pages the files span, each file counted on its own (the
    /// lesson's "pages" of the whole serialized data).
    pub pages: u64,
    /// Data block bytes as they would be with every block stored raw (equal
    /// to `data_bytes` without compression).
    pub uncompressed_data_bytes: u64,
}

impl FamilyBytes {
    fn of(name: &str, tables: &[TableInfo]) -> FamilyBytes {
        let mut f = FamilyBytes {
            name: name.to_string(),
            ..FamilyBytes::default()
        };
        for t in tables.iter().filter(|t| t.family == name) {
            f.files += 1;
            f.cells += t.entries;
            f.value_bytes += t.raw_value_bytes;
            f.raw_key_bytes += t.raw_key_bytes;
            f.stored_key_bytes += t.stored_key_bytes;
            f.data_bytes += t.data_bytes;
            f.index_bytes += t.index_bytes;
            f.filter_bytes += t.filter_bytes;
            f.file_bytes += t.size;
            f.pages += t.size.div_ceil(PAGE_SIZE);
            f.uncompressed_data_bytes += t.uncompressed_data_bytes;
        }
        f
    }

    /// Key bytes per cell as stored.
    pub fn key_bytes_per_cell(&self) -> f64 {
        ratio(self.stored_key_bytes, self.cells)
    }

    /// Key bytes per cell before prefix compression.
    pub fn raw_key_bytes_per_cell(&self) -> f64 {
        ratio(self.raw_key_bytes, self.cells)
    }

    /// Data block bytes that are neither key nor value: entry headers,
    /// restart arrays and block trailers.
    pub fn block_overhead(&self) -> u64 {
        self.data_bytes.saturating_sub(self.stored_key_bytes + self.value_bytes)
    }
}

/// One query asked of both layouts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutQuery {
    /// The lesson's name for it.
    pub name: String,
    /// Requests made to the row layout.
    pub row_requests: u64,
    /// What they cost.
    pub row_layout: ReadFigures,
    /// Cells of the asked fields the row layout returned.
    pub row_cells: u64,
    /// Requests made to the family layout (one per family read).
    pub family_requests: u64,
    /// What they cost, summed.
    pub family_layout: ReadFigures,
    /// Cells of the asked fields the family layout returned.
    pub family_cells: u64,
}

impl LayoutQuery {
    /// Pages the row layout touched / pages the family layout touched.
    pub fn ratio(&self) -> f64 {
        ratio(self.row_layout.pages_touched, self.family_layout.pages_touched)
    }
}

/// Every figure the layout lesson measured.
#[derive(Clone, Debug, PartialEq)]
pub struct LayoutReport {
    /// The four families, then the row layout's family.
    pub families: Vec<FamilyBytes>,
    /// Circulation fields across all books.
    pub circulation: LayoutQuery,
    /// All fields of book 4244.
    pub record: LayoutQuery,
    /// The same, on the two stores written again with LZ4 on.
    pub lz4: Measured,
}

/// What one pair of stores (the four families and the one family) holds,
/// and what the two queries cost on them.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// The four families, then the row layout's family.
    pub families: Vec<FamilyBytes>,
    /// Circulation fields across all books.
    pub circulation: LayoutQuery,
    /// All fields of book 4244.
    pub record: LayoutQuery,
}

impl Measured {
    /// The bytes of a family by name.
    pub fn family(&self, name: &str) -> Option<&FamilyBytes> {
        self.families.iter().find(|f| f.name == name)
    }
}

impl LayoutReport {
    /// The bytes of a family by name.
    pub fn family(&self, name: &str) -> Option<&FamilyBytes> {
        self.families.iter().find(|f| f.name == name)
    }

    /// Records stored: the rows the row layout's scan (the circulation
    /// query) returned.
    pub fn records(&self) -> u64 {
        self.circulation.row_layout.entries_returned
    }
}

/// Runs the layout lesson in `dir` (created if missing, must be empty).
pub fn layout(dir: &Path) -> Result<LayoutReport> {
    layout_with(dir, &Silent)
}

/// [`layout()`], reporting the load's progress.
pub fn layout_with(dir: &Path, progress: &dyn Progress) -> Result<LayoutReport> {
    prepare(dir)?;
    // Two stores, as the lesson compares two layouts of the same records. Both
    // store repeated column names as copies (`tail_copies`), as a wide table
    // in HBase would use a data block encoding: a key per cell stays, but its
    // column name is not stored again for every row.
    let family = FamilyOptions::default().compaction_trigger(0).tail_copies(true);
    let plain = open_pair(dir, [FAMILY_LAYOUT_STORE, ROW_LAYOUT_STORE], &family)?;
    // The same two again with LZ4 on, and no block cache: every query reads
    // each block it needs from the file, as the stores without compression
    // do, so pages touched compare like with like.
    let lz4 = open_pair(dir, LZ4_STORES, &family.clone().compression(Compression::Lz4))?;
    load(&[&plain, &lz4], progress)?;
    let (families, circulation, record) = measure(&plain)?;
    let (lz4_families, lz4_circulation, lz4_record) = measure(&lz4)?;
    Ok(LayoutReport {
        families,
        circulation,
        record,
        lz4: Measured {
            families: lz4_families,
            circulation: lz4_circulation,
            record: lz4_record,
        },
    })
}

/// The two stores of one run: the four families, and the one family.
struct Pair {
    families_store: Store,
    row_store: Store,
}

/// Opens the pair of stores in the subfolders `names` of `dir`, every family
/// with options `family`.
fn open_pair(dir: &Path, names: [&str; 2], family: &FamilyOptions) -> Result<Pair> {
    let [families_name, row_name] = names;
    let mut options = StoreOptions::default().block_cache_bytes(0);
    for (name, _) in FAMILIES {
        options = options.family_with(name, family.clone());
    }
    let families_store = Store::open(dir.join(families_name), options)?;
    let row_store = Store::open(
        dir.join(row_name),
        StoreOptions::default()
            .block_cache_bytes(0)
            .family_with(ROW_LAYOUT, family.clone()),
    )?;
    Ok(Pair {
        families_store,
        row_store,
    })
}

/// Flushes a loaded pair and runs the two queries on it.
fn measure(pair: &Pair) -> Result<(Vec<FamilyBytes>, LayoutQuery, LayoutQuery)> {
    let Pair {
        families_store,
        row_store,
    } = pair;
    for store in [families_store, row_store] {
        store.flush()?;
        store.wait_for_background_work()?;
    }

    let mut tables = families_store.tables();
    tables.extend(row_store.tables());
    let mut families: Vec<FamilyBytes> = FAMILIES
        .iter()
        .map(|(name, _)| FamilyBytes::of(name, &tables))
        .collect();
    families.push(FamilyBytes::of(ROW_LAYOUT, &tables));

    // Circulation across all books: the row layout has to read every row whole.
    let circulation_fields: &[&str] = FAMILIES[2].1;
    let is_circulation = |column: &[u8]| circulation_fields.iter().any(|f| f.as_bytes() == column);
    let (rows, trace) = row_store.scan_traced(ROW_LAYOUT, &RowRange::all())?;
    let row_cells = rows
        .iter()
        .flat_map(|r| &r.cells)
        .filter(|c| is_circulation(&c.column))
        .count() as u64;
    let row_layout = ReadFigures::from(&trace);
    drop(rows);
    let (rows, trace) = families_store.scan_traced(FAMILIES[2].0, &RowRange::all())?;
    let family_cells = rows.iter().map(|r| r.cells.len() as u64).sum();
    let family_layout = ReadFigures::from(&trace);
    let circulation = LayoutQuery {
        name: printed::QUERIES[0].0.to_string(),
        row_requests: row_layout.requests,
        row_layout,
        row_cells,
        family_requests: family_layout.requests,
        family_layout,
        family_cells,
    };
    drop(rows);

    // One record: one row read in the row layout, one per family otherwise.
    let row = format!("book:{TARGET}");
    let (cells, trace) = row_store.get_row_traced(ROW_LAYOUT, &row)?;
    let row_cells = cells.len() as u64;
    let row_layout = ReadFigures::from(&trace);
    let mut family_layout = ReadFigures::none();
    let mut family_cells = 0;
    for (name, _) in FAMILIES {
        let (cells, trace) = families_store.get_row_traced(name, &row)?;
        family_cells += cells.len() as u64;
        family_layout.add(&ReadFigures::from(&trace));
    }
    let record = LayoutQuery {
        name: printed::QUERIES[1].0.to_string(),
        row_requests: row_layout.requests,
        row_layout,
        row_cells,
        family_requests: family_layout.requests,
        family_layout,
        family_cells,
    };
    Ok((families, circulation, record))
}

/// Writes every record twice into each pair: field by field into its family
/// in one store, and into the one family of the other.
fn load(pairs: &[&Pair], progress: &dyn Progress) -> Result<()> {
    progress.start("layout: loading", RECORDS * 20 * pairs.len() as u64);
    let mut by_family = WriteBatch::new();
    let mut by_row = WriteBatch::new();
    for i in 1..=RECORDS {
        let row = format!("book:{i}");
        for (family, fields) in FAMILIES {
            for &name in fields {
                let value = field(i, name);
                by_family.put_at(family, &row, name, LOAD_TIME_MS, &value);
                by_row.put_at(ROW_LAYOUT, &row, name, LOAD_TIME_MS, &value);
            }
        }
        if i.is_multiple_of(BATCH) || i == RECORDS {
            for pair in pairs {
                pair.families_store.write(&by_family)?;
                pair.row_store.write(&by_row)?;
                progress.advance((by_family.len() + by_row.len()) as u64);
            }
            by_family = WriteBatch::new();
            by_row = WriteBatch::new();
        }
    }
    progress.finish();
    Ok(())
}

impl LayoutReport {
    /// The lesson's tables, lesson and cellar side by side, then the differences.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut diffs = Differences::new();
        out.push_str("== layout: column families against one family holding every field ==\n");
        out.push_str(&format!(
            "{} records of ten fields: a store with four families (identity, publication, circulation, text)\n\
             against a store with one family `{ROW_LAYOUT}`; a page is 4,096 bytes. Flushed before reading.\n\n",
            thousands(RECORDS)
        ));
        let row = self.family(ROW_LAYOUT).cloned().unwrap_or_default();
        let mut g = Grid::new();
        g.row(["records, field bytes, pages", "lesson", "cellar"]);
        g.row([
            "records".to_string(),
            thousands(printed::RECORDS),
            thousands(self.records()),
        ]);
        diffs.check(
            "records",
            &thousands(printed::RECORDS),
            &thousands(self.records()),
            EXPECTED_SAME,
        );
        g.row([
            "all records".to_string(),
            thousands(printed::TOTAL_BYTES),
            thousands(row.value_bytes),
        ]);
        diffs.check(
            "field bytes, all records",
            &thousands(printed::TOTAL_BYTES),
            &thousands(row.value_bytes),
            EXPECTED_SAME,
        );
        for (name, bytes) in printed::FAMILY_BYTES {
            let cellar = self.family(name).map(|f| f.value_bytes).unwrap_or(0);
            g.row([format!("family {name}"), thousands(bytes), thousands(cellar)]);
            diffs.check(
                &format!("field bytes, {name}"),
                &thousands(bytes),
                &thousands(cellar),
                EXPECTED_SAME,
            );
        }
        g.row([
            "pages, all records".to_string(),
            thousands(printed::TOTAL_PAGES),
            thousands(row.pages),
        ]);
        diffs.check(
            "pages, all records",
            &pages(printed::TOTAL_PAGES),
            &pages(row.pages),
            &format!(
                "The lesson's pages hold the field bytes alone. cellar's row layout is {} of {} bytes: \
                 the same field bytes, a key with each of its {} cells ({} bytes as stored), {} bytes of \
                 entry headers, restart arrays and trailers, its index ({} bytes), filter ({} bytes) and footer.",
                plural(row.files, "table file"),
                thousands(row.file_bytes),
                thousands(row.cells),
                thousands(row.stored_key_bytes),
                thousands(row.block_overhead()),
                thousands(row.index_bytes),
                thousands(row.filter_bytes),
            ),
        );
        g.render(&mut out);

        out.push_str("\nwhat each family's table files hold (bytes):\n");
        let mut g = Grid::new();
        g.row([
            "family",
            "cells",
            "values",
            "keys, raw",
            "keys, stored",
            "key/cell",
            "block overhead",
            "index",
            "filter",
            "file",
        ]);
        for f in &self.families {
            g.row([
                f.name.clone(),
                thousands(f.cells),
                thousands(f.value_bytes),
                thousands(f.raw_key_bytes),
                thousands(f.stored_key_bytes),
                format!("{:.1}", f.key_bytes_per_cell()),
                thousands(f.block_overhead()),
                thousands(f.index_bytes),
                thousands(f.filter_bytes),
                thousands(f.file_bytes),
            ]);
        }
        g.render(&mut out);
        out.push_str(
            "keys, raw: the internal key of every cell (row, column, 16-byte timestamp and sequence);\n\
             keys, stored: what is left once each key shares its front with the previous key (prefix\n\
             compression), copies a repeated column name from an earlier key (tail copies, on in both\n\
             stores) and stores its timestamp and sequence as XORs against the previous key's;\n\
             block overhead: entry headers, restart arrays and block trailers.\n",
        );

        out.push('\n');
        let mut g = Grid::new();
        g.row(["", "row layout", "", "family layout", "", "ratio", ""]);
        g.row([
            "query (pages touched)",
            "lesson",
            "cellar",
            "lesson",
            "cellar",
            "lesson",
            "cellar",
        ]);
        for (q, (name, row_pages, family_pages, lesson_ratio)) in
            [&self.circulation, &self.record].into_iter().zip(printed::QUERIES)
        {
            g.row([
                name.to_string(),
                thousands(row_pages),
                thousands(q.row_layout.pages_touched),
                thousands(family_pages),
                thousands(q.family_layout.pages_touched),
                lesson_ratio.to_string(),
                format!("{:.2}", q.ratio()),
            ]);
            g.text(format!(
                "row layout: {} in {}, {} asked-for cells among {} examined",
                plural(q.row_layout.data_blocks, "data block"),
                plural(q.row_requests, "request"),
                thousands(q.row_cells),
                thousands(q.row_layout.entries_examined),
            ));
            g.text(format!(
                "family layout: {} in {}, {} asked-for cells among {} examined",
                plural(q.family_layout.data_blocks, "data block"),
                plural(q.family_requests, "request"),
                thousands(q.family_cells),
                thousands(q.family_layout.entries_examined),
            ));
        }
        g.render(&mut out);
        self.explain_queries(&mut diffs, &row);
        out.push('\n');
        diffs.render(&mut out);
        diffs.render_notes(&mut out);
        self.render_lz4(&mut out);
        out
    }

    /// Beyond the lesson: the same stores with LZ4 on, beside the default.
    fn render_lz4(&self, out: &mut String) {
        out.push_str(
            "\nbeyond the lesson: both stores again with LZ4 on (each data block compressed on its own,\n\
             kept compressed only if that saves 1/8; no block cache, so a query reads every block it needs\n\
             from the file, as above):\n",
        );
        let mut g = Grid::new();
        g.row(["family", "data blocks", "with LZ4", "smaller", "file", "with LZ4"]);
        let mut shrink = Vec::new();
        for f in &self.families {
            let z = self.lz4.family(&f.name).cloned().unwrap_or_default();
            let factor = ratio(z.uncompressed_data_bytes, z.data_bytes);
            shrink.push((f.name.clone(), factor));
            g.row([
                f.name.clone(),
                thousands(f.data_bytes),
                thousands(z.data_bytes),
                format!("{factor:.1}x"),
                thousands(f.file_bytes),
                thousands(z.file_bytes),
            ]);
        }
        g.render(out);

        out.push('\n');
        let mut g = Grid::new();
        g.row(["", "row layout", "", "family layout", "", "ratio", ""]);
        g.row([
            "query (pages touched)",
            "default",
            "LZ4",
            "default",
            "LZ4",
            "default",
            "LZ4",
        ]);
        for (q, z) in [
            (&self.circulation, &self.lz4.circulation),
            (&self.record, &self.lz4.record),
        ] {
            g.row([
                q.name.clone(),
                thousands(q.row_layout.pages_touched),
                thousands(z.row_layout.pages_touched),
                thousands(q.family_layout.pages_touched),
                thousands(z.family_layout.pages_touched),
                format!("{:.2}", q.ratio()),
                format!("{:.2}", z.ratio()),
            ]);
            g.text(format!(
                "with LZ4: row layout {} decompressed from {} read, family layout {} from {}",
                bytes(z.row_layout.decompressed_bytes),
                bytes(z.row_layout.data_bytes),
                bytes(z.family_layout.decompressed_bytes),
                bytes(z.family_layout.data_bytes),
            ));
        }
        g.render(out);
        out.push_str(&self.explain_lz4(&shrink));
    }

    /// What LZ4 changed, and why, in a few sentences built from the figures.
    fn explain_lz4(&self, shrink: &[(String, f64)]) -> String {
        let factor = |name: &str| shrink.iter().find(|(n, _)| n == name).map_or(1.0, |(_, f)| *f);
        let (row, circulation) = (factor(ROW_LAYOUT), factor(FAMILIES[2].0));
        let (q, z) = (&self.circulation, &self.lz4.circulation);
        let helps_more = if row > circulation {
            format!(
                "LZ4 helps the row layout more: its blocks shrink {row:.1}x against {circulation:.1}x for the \
                 circulation family. The row layout's blocks are mostly long text (titles, authors, the \
                 280-byte summaries) that repeats itself, where the circulation family's are mostly keys \
                 that prefix compression and tail copies have already squeezed, around values of a few bytes."
            )
        } else {
            format!(
                "LZ4 helps the circulation family more: its blocks shrink {circulation:.1}x against {row:.1}x \
                 for the row layout."
            )
        };
        let verdict = if z.ratio() > 1.0 {
            format!(
                "The family layout still wins the circulation query, by {:.2}x instead of {:.2}x: compression \
                 shrinks the bytes a query reads, not which fields it reads. The row layout still reads (and now \
                 also decompresses) every field of every row to find three of them; the family layout reads \
                 only the three.",
                z.ratio(),
                q.ratio()
            )
        } else {
            format!(
                "With LZ4 the row layout wins the circulation query ({:.2}x): its text compresses so well that \
                 reading every field costs fewer pages than the circulation family's keys.",
                z.ratio()
            )
        };
        let r = &self.lz4.record;
        format!(
            "what LZ4 changed:\n  - {helps_more}\n  - {verdict}\n  - One record: {} against {} with LZ4 ({} \
             against {} without); the blocks a point read needs are smaller, but a read still needs one block per \
             family.\n",
            pages(r.family_layout.pages_touched),
            pages(r.row_layout.pages_touched),
            self.record.family_layout.pages_touched,
            self.record.row_layout.pages_touched,
        )
    }

    /// One line per query figure that differs from the lesson's, with the
    /// bytes that make the difference.
    fn explain_queries(&self, diffs: &mut Differences, row: &FamilyBytes) {
        let circulation = self.family(FAMILIES[2].0).cloned().unwrap_or_default();
        let [(c_name, c_row, c_family, c_ratio), (r_name, r_row, r_family, r_ratio)] = printed::QUERIES;
        let c = &self.circulation;
        diffs.check(
            &format!("{c_name}, row layout"),
            &pages(c_row),
            &pages(c.row_layout.pages_touched),
            &format!(
                "The lesson's pages hold field bytes only ({} bytes). cellar's row-layout file also stores a key \
                 with each of its {} cells ({} bytes as stored, {:.1} per cell) and {} bytes of \
                 entry headers, restart arrays and trailers; the query reads every one of its {} data blocks.",
                thousands(row.value_bytes),
                thousands(row.cells),
                thousands(row.stored_key_bytes),
                row.key_bytes_per_cell(),
                thousands(row.block_overhead()),
                thousands(c.row_layout.data_blocks)
            ),
        );
        diffs.check(
            &format!("{c_name}, family layout"),
            &pages(c_family),
            &pages(c.family_layout.pages_touched),
            &format!(
                "The circulation fields are {} bytes, {:.1} per cell; each cell also carries its key: row, \
                 column name, timestamp and sequence, {:.1} bytes raw and {:.1} as stored ({} bytes in all). \
                 In this family the keys outweigh the values {:.0} to 1.",
                thousands(circulation.value_bytes),
                ratio(circulation.value_bytes, circulation.cells),
                circulation.raw_key_bytes_per_cell(),
                circulation.key_bytes_per_cell(),
                thousands(circulation.stored_key_bytes),
                ratio(circulation.stored_key_bytes, circulation.value_bytes)
            ),
        );
        diffs.check(
            &format!("{c_name}, ratio"),
            c_ratio,
            &format!("{:.2}", c.ratio()),
            "The key every cell carries is a fixed cost per cell, not per byte of data, so it weighs most in \
             the family of small fields: it shrinks the family layout's advantage, which stays large.",
        );
        let r = &self.record;
        diffs.check(
            &format!("{r_name}, row layout"),
            &pages(r_row),
            &pages(r.row_layout.pages_touched),
            &format!(
                "The record's ten cells with their keys take {} here, and blocks are cut at about \
                 4,096 bytes without regard to page boundaries, so a block usually spans 2 pages.",
                plural(r.row_layout.data_blocks, "data block")
            ),
        );
        diffs.check(
            &format!("{r_name}, family layout"),
            &pages(r_family),
            &pages(r.family_layout.pages_touched),
            &format!(
                "One read per family: {} requests, {} data blocks, most of them spanning 2 pages (in the lesson \
                 each family's fields sit on 1 page, and one record's fields cross into a 5th).",
                r.family_requests, r.family_layout.data_blocks
            ),
        );
        diffs.check(
            &format!("{r_name}, ratio"),
            r_ratio,
            &format!("{:.2}", r.ratio()),
            "Follows from the pages above: the family layout still loses this query.",
        );
        diffs.note(format!(
            "the lesson's shape holds on disk: the family layout reads {:.1} times fewer pages for the \
             circulation fields ({} against {}) and more for one whole record ({} against {}).",
            c.ratio(),
            thousands(c.family_layout.pages_touched),
            thousands(c.row_layout.pages_touched),
            r.family_layout.pages_touched,
            r.row_layout.pages_touched
        ));
    }
}

impl std::fmt::Display for LayoutReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}
