//! The lesson's figures, measured on real stores. Each lesson runs once per
//! test binary (in a temporary folder) and the tests below read its report.
//! Exact figures are the ones issue 3 requires; the layout lesson's are a
//! shape, since a real engine stores a key with every cell.

use std::sync::OnceLock;

use cellar_bench::lesson::{self, AppendOnlyReport, LayoutReport, QueryFirstReport, WideRowReport};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn run<R>(
    cell: &'static OnceLock<Result<R, String>>,
    f: fn(&std::path::Path) -> cellar_bench::Result<R>,
) -> Result<&'static R, String> {
    cell.get_or_init(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        f(dir.path()).map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(Clone::clone)
}

fn append_only() -> Result<&'static AppendOnlyReport, String> {
    static REPORT: OnceLock<Result<AppendOnlyReport, String>> = OnceLock::new();
    run(&REPORT, lesson::append_only)
}

fn wide_row() -> Result<&'static WideRowReport, String> {
    static REPORT: OnceLock<Result<WideRowReport, String>> = OnceLock::new();
    run(&REPORT, lesson::wide_row)
}

fn layout() -> Result<&'static LayoutReport, String> {
    static REPORT: OnceLock<Result<LayoutReport, String>> = OnceLock::new();
    run(&REPORT, lesson::layout)
}

fn query_first() -> Result<&'static QueryFirstReport, String> {
    static REPORT: OnceLock<Result<QueryFirstReport, String>> = OnceLock::new();
    run(&REPORT, lesson::query_first)
}

// ---- append-only ----

#[test]
fn append_only_keeps_every_write_in_six_files_and_a_memtable() -> TestResult {
    let r = append_only()?;
    let l = &r.loaded;
    assert_eq!(l.entries_written, 160_000);
    assert_eq!(l.stored_entries, 160_000);
    assert_eq!(l.live_entries, 80_000);
    assert_eq!(l.tombstones, 20_000);
    assert_eq!((l.table_files, l.memtables, l.memtable_entries), (6, 1, 10_000));
    assert_eq!(l.places(), 7);
    assert_eq!(l.space_amplification, 2.0);
    assert_eq!(r.files.len(), 6);
    Ok(())
}

/// The lesson's first line starts "100000 records": the records live once
/// the puts are in, from the family's statistics at that point of the load.
#[test]
fn append_only_prints_the_records_the_puts_made_live() -> TestResult {
    let r = append_only()?;
    assert_eq!(r.records(), 100_000);
    let text = r.render();
    let line: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("records"))
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(line.get(..3), Some(&["records", "100,000", "100,000"][..]), "{text}");
    Ok(())
}

#[test]
fn append_only_reads_visit_two_seven_one_seven_sources() -> TestResult {
    let r = append_only()?;
    let got: Vec<(&str, u64, bool)> = r
        .reads
        .iter()
        .map(|p| (p.key.as_str(), p.cost.sources_visited, p.found))
        .collect();
    assert_eq!(
        got,
        [
            ("loan:99996", 2, true),
            ("loan:2", 7, true),
            ("loan:99994", 1, false),
            ("loan:999999", 7, false)
        ]
    );
    let entries: Vec<u64> = r.reads.iter().map(|p| p.cost.entries_examined).collect();
    assert_eq!(entries, [1, 1, 1, 0]);
    Ok(())
}

#[test]
fn never_written_key_reads_no_data_block() -> TestResult {
    let never = &append_only()?.reads[3];
    assert_eq!(never.key, "loan:999999");
    assert_eq!((never.cost.data_blocks, never.cost.pages_touched), (0, 0));
    // It sorts after every file's last key (`loan:99999`): key ranges settle all six.
    assert_eq!(never.cost.settled_by_key_range, 6);
    // The memtable holds deletions of other loans: its row filter rules this one out.
    assert_eq!(never.cost.memtables_filtered, 1);
    assert_eq!(
        never.cost.how_settled(),
        "memtable ruled out by its row filter, 6 key range"
    );
    Ok(())
}

#[test]
fn untouched_key_is_searched_in_one_file_only() -> TestResult {
    let r = append_only()?;
    let untouched = &r.reads[1];
    assert_eq!(untouched.key, "loan:2");
    assert_eq!(untouched.cost.data_blocks, 1);
    assert_eq!(
        (untouched.cost.settled_by_key_range, untouched.cost.settled_by_filter),
        (2, 3)
    );
    // Three files' bloom filters and the memtable's row filter.
    assert_eq!(
        (untouched.cost.filter_negatives, untouched.cost.memtables_filtered),
        (4, 1)
    );
    assert_eq!(
        untouched.cost.how_settled(),
        "memtable ruled out by its row filter, 2 key range, 3 filter, 1 searched (1 block)"
    );
    Ok(())
}

#[test]
fn key_ranges_overlap_because_keys_sort_as_text() -> TestResult {
    let r = append_only()?;
    // The oldest file holds loans 1-25,000, which as text span loan:1 ..= loan:9999.
    let oldest = r.files.last().ok_or("no files")?;
    assert_eq!(
        (oldest.first_row.as_str(), oldest.last_row.as_str()),
        ("loan:1", "loan:9999")
    );
    let covering = r.files.iter().filter(|f| f.covers("loan:2")).count();
    assert_eq!(covering, 4);
    Ok(())
}

#[test]
fn full_scan_examines_every_entry_for_half_as_many_records() -> TestResult {
    let s = &append_only()?.scan;
    assert_eq!(s.sources_visited, 7);
    assert_eq!(s.entries_examined, 160_000);
    assert_eq!(s.entries_returned, 80_000);
    assert!(s.data_blocks > 0 && s.pages_touched >= s.data_blocks);
    Ok(())
}

#[test]
fn major_compaction_leaves_four_files_of_live_entries() -> TestResult {
    let r = append_only()?;
    let c = &r.compacted;
    assert_eq!((c.stored_entries, c.live_entries, c.tombstones), (80_000, 80_000, 0));
    assert_eq!((c.table_files, c.memtables), (4, 0));
    assert_eq!(c.space_amplification, 1.0);
    assert_eq!(c.space_amplification_bytes, 1.0);
    assert_eq!(
        (r.scan_after.entries_examined, r.scan_after.entries_returned),
        (80_000, 80_000)
    );
    Ok(())
}

#[test]
fn compaction_reports_the_bytes_it_read_and_wrote() -> TestResult {
    let r = append_only()?;
    assert_eq!((r.compaction.input_files, r.compaction.output_files), (7, 4));
    assert_eq!(
        (r.compaction.input_entries, r.compaction.output_entries),
        (160_000, 80_000)
    );
    assert_eq!(r.compacted.compaction_bytes_read, r.compaction.input_bytes);
    assert_eq!(r.compacted.compaction_bytes_written, r.compaction.output_bytes);
    assert!(r.compaction.output_bytes < r.compaction.input_bytes);
    // By bytes the tombstones weigh less than the records they hide.
    assert!(r.loaded.space_amplification_bytes > 1.0 && r.loaded.space_amplification_bytes < 2.0);
    Ok(())
}

#[test]
fn append_only_table_shows_no_difference_from_the_lesson() -> TestResult {
    let text = append_only()?.render();
    assert!(
        text.contains("cellar measures every figure of this lesson exactly"),
        "{text}"
    );
    assert!(text.contains("settled: memtable ruled out by its row filter, 2 key range, 3 filter, 1 searched (1 block)"));
    Ok(())
}

// ---- wide-row ----

#[test]
fn wide_row_loads_263867_loans_into_5000_rows() -> TestResult {
    let r = wide_row()?;
    assert_eq!(r.by_book.stored_entries, 263_867);
    assert_eq!(r.by_member.stored_entries, 263_867);
    assert_eq!(r.book_rows, 5_000);
    assert_eq!(format!("{:.1}", r.average_row()), "52.8");
    assert_eq!((r.widest_row.as_str(), r.widest_columns), ("book:1", 4_000));
    // Read from table files: nothing left in memtables.
    assert_eq!((r.by_book.memtables, r.by_book.table_files), (0, 1));
    Ok(())
}

/// The lesson's first line starts "5000 books": cellar prints the rows its
/// scan of `by_book` counted beside it.
#[test]
fn wide_row_prints_the_books_it_counted() -> TestResult {
    let text = wide_row()?.render();
    let books: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("books (rows)"))
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(books, ["books", "(rows)", "5,000", "5,000"], "{text}");
    Ok(())
}

/// Round trips are counted, one per engine read whose trace a figure sums,
/// not written down: the reads' costs carry them.
#[test]
fn requests_are_the_reads_each_figure_sums() -> TestResult {
    for p in &wide_row()?.paths {
        assert_eq!((p.requests, p.cost.requests), (1, 1), "{}", p.name);
    }
    let l = layout()?;
    for q in [&l.circulation, &l.record] {
        assert_eq!(q.row_requests, q.row_layout.requests, "{}", q.name);
        assert_eq!(q.family_requests, q.family_layout.requests, "{}", q.name);
    }
    assert_eq!(l.record.family_layout.requests, 4, "one read per family");
    assert_eq!(l.record.family_layout.sources.len() % 4, 0);
    Ok(())
}

#[test]
fn march_slice_of_book_3_examines_333_columns_in_one_read() -> TestResult {
    let slice = &wide_row()?.paths[0];
    assert_eq!(
        (slice.requests, slice.cost.entries_examined, slice.result),
        (1, 333, 333)
    );
    assert_eq!(slice.cost.files_visited, 1);
    Ok(())
}

#[test]
fn whole_row_of_book_3_returns_4000_columns() -> TestResult {
    let whole = &wide_row()?.paths[1];
    assert_eq!(
        (whole.requests, whole.cost.entries_examined, whole.result),
        (1, 4_000, 4_000)
    );
    Ok(())
}

#[test]
fn member_layout_scans_every_cell_for_the_same_answer() -> TestResult {
    let member = &wide_row()?.paths[2];
    assert_eq!(
        (member.requests, member.cost.entries_examined, member.result),
        (1, 263_867, 333)
    );
    Ok(())
}

#[test]
fn slice_touches_fewer_pages_than_the_row_and_the_row_fewer_than_the_scan() -> TestResult {
    let p = &wide_row()?.paths;
    assert!(p[0].cost.pages_touched > 0);
    assert!(p[0].cost.pages_touched < p[1].cost.pages_touched);
    assert!(p[1].cost.pages_touched < p[2].cost.pages_touched);
    Ok(())
}

#[test]
fn both_layouts_double_the_entries_written() -> TestResult {
    let r = wide_row()?;
    assert_eq!(r.entries_written, 527_734);
    assert_eq!(format!("{:.1}", r.write_amplification()), "2.0");
    let disk = r.log_bytes_written + r.flush_bytes_written + r.compaction_bytes_written;
    assert_eq!(
        r.physical_write_amplification,
        disk as f64 / r.user_bytes_written as f64
    );
    // Every cell is on disk twice, in the log and in a table file. Whether
    // the two copies weigh more than the lesson's 2.0 is the formats' doing
    // (a log that wrote each cell whole did; see the rendered note).
    assert!(r.log_bytes_written > 0 && r.flush_bytes_written > 0);
    Ok(())
}

#[test]
fn wide_row_table_shows_no_difference_from_the_lesson() -> TestResult {
    let text = wide_row()?.render();
    assert!(
        text.contains("cellar measures every figure of this lesson exactly"),
        "{text}"
    );
    Ok(())
}

// ---- layout ----

#[test]
fn layout_stores_exactly_the_lessons_field_bytes() -> TestResult {
    let r = layout()?;
    for (family, bytes) in [
        ("identity", 1_353_388),
        ("publication", 400_000),
        ("circulation", 204_597),
        ("text", 5_708_894),
        ("all_fields", 7_666_879),
    ] {
        assert_eq!(r.family(family).map(|f| f.value_bytes), Some(bytes), "{family}");
    }
    Ok(())
}

/// The lesson's first line, "20000 records, 7666879 bytes total, 1872
/// pages": each figure beside cellar's, measured (rows counted by the
/// row layout's scan, pages of its table files).
#[test]
fn layout_prints_the_lessons_records_bytes_and_pages() -> TestResult {
    let r = layout()?;
    assert_eq!(r.records(), 20_000);
    let row = r.family("all_fields").ok_or("no row layout")?;
    assert!(row.pages >= row.file_bytes.div_ceil(4096), "{row:?}");
    assert!(row.pages <= row.file_bytes.div_ceil(4096) + row.files, "{row:?}");
    let text = r.render();
    let line = |label: &str| {
        text.lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_default()
            .to_string()
    };
    let records: Vec<String> = line("records ").split_whitespace().map(str::to_string).collect();
    assert_eq!(records, ["records", "20,000", "20,000"], "{text}");
    let pages: Vec<String> = line("pages, all records")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(
        pages,
        [
            "pages,",
            "all",
            "records",
            "1,872",
            &cellar_picture::thousands(row.pages)
        ],
        "{text}"
    );
    assert!(
        text.contains("  - pages, all records: lesson 1,872 pages, cellar "),
        "{text}"
    );
    Ok(())
}

#[test]
fn family_layout_wins_the_circulation_query() -> TestResult {
    let q = &layout()?.circulation;
    assert_eq!((q.row_cells, q.family_cells), (60_000, 60_000));
    // The lesson's 36.7 counts field bytes only; with a key in every cell
    // cellar measures 11.6 (see the report's differences). Issue 3 asks for
    // at least 10.
    assert!(q.ratio() >= 10.0, "ratio {}", q.ratio());
    Ok(())
}

#[test]
fn family_layout_loses_the_single_record_query() -> TestResult {
    let q = &layout()?.record;
    assert_eq!((q.row_cells, q.family_cells), (10, 10));
    assert_eq!((q.row_requests, q.family_requests), (1, 4));
    assert!(
        q.family_layout.pages_touched > q.row_layout.pages_touched,
        "family {} pages, row {} pages",
        q.family_layout.pages_touched,
        q.row_layout.pages_touched
    );
    Ok(())
}

#[test]
fn every_cell_carries_a_key_larger_than_a_circulation_value() -> TestResult {
    let r = layout()?;
    let c = r.family("circulation").ok_or("no circulation family")?;
    assert_eq!(c.cells, 60_000);
    assert!(
        c.stored_key_bytes < c.raw_key_bytes,
        "prefix compression saves key bytes"
    );
    // Raw, a key holds its row, its column name (loan_count, branch_id or
    // status: 8.3 bytes on average) and 20 bytes of separators, timestamp and
    // sequence. As stored, the row is shared, the column name copied from the
    // row before and the timestamp and sequence XORed: a few bytes remain.
    assert!(c.raw_key_bytes_per_cell() > 8.3 + 20.0);
    let per_cell = c.key_bytes_per_cell();
    assert!(
        per_cell < c.raw_key_bytes_per_cell() / 4.0,
        "{per_cell} key bytes per cell"
    );
    assert!(c.stored_key_bytes > c.value_bytes);
    Ok(())
}

// ---- the report page (`cellar lesson --report`) ----

/// The page of all three lessons, as `cellar lesson all --report` writes it.
fn report_page() -> Result<String, String> {
    let sections = vec![layout()?.section(), wide_row()?.section(), append_only()?.section()];
    Ok(lesson::page(sections).finish())
}

fn parse_page(html: &str) -> Result<roxmltree::Document<'_>, roxmltree::Error> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    roxmltree::Document::parse_with_options(html, options)
}

fn section<'a, 'i>(doc: &'a roxmltree::Document<'i>, id: &str) -> Result<roxmltree::Node<'a, 'i>, String> {
    doc.descendants()
        .find(|n| n.has_tag_name("section") && n.attribute("id") == Some(id))
        .ok_or(format!("no section {id}"))
}

fn pictures<'a, 'i>(section: roxmltree::Node<'a, 'i>) -> Vec<&'a str> {
    section
        .descendants()
        .filter(|n| n.has_tag_name("svg"))
        .filter_map(|n| n.attribute("class"))
        .collect()
}

#[test]
fn report_has_a_section_per_lesson_with_its_table_and_pictures() -> TestResult {
    let html = report_page()?;
    let doc = parse_page(&html)?;
    let ids: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("section"))
        .filter_map(|n| n.attribute("id"))
        .collect();
    assert_eq!(ids, ["layout", "wide-row", "append-only"]);
    // Each section's first <pre> is the terminal's table, word for word.
    for (id, text) in [
        ("layout", layout()?.render()),
        ("wide-row", wide_row()?.render()),
        ("append-only", append_only()?.render()),
    ] {
        let pre = section(&doc, id)?
            .descendants()
            .find(|n| n.has_tag_name("pre"))
            .and_then(|n| n.text())
            .ok_or("a table")?;
        assert_eq!(pre, text, "section {id}");
    }
    assert_eq!(pictures(section(&doc, "layout")?), ["layout-pages", "layout-bytes"]);
    assert_eq!(pictures(section(&doc, "wide-row")?), ["row-blocks", "wide-row-cost"]);
    assert_eq!(
        pictures(section(&doc, "append-only")?),
        [
            "stack",
            "stack",
            "stack",
            "stack",
            "stack",
            "stack",
            "stack",
            "amplification"
        ],
        "the stack, four reads, the scan, the stack after compaction, amplification"
    );
    Ok(())
}

#[test]
fn report_references_nothing_outside_the_file() -> TestResult {
    let html = report_page()?;
    for outside in [
        "http:", "https:", "src=", "<script", "<link", "url(", "@import", "<img", "<iframe",
    ] {
        assert!(!html.contains(outside), "the page contains {outside}");
    }
    let doc = parse_page(&html)?;
    for n in doc.descendants() {
        if let Some(href) = n.attribute("href") {
            assert!(href.starts_with('#'), "a link out of the page: {href}");
        }
    }
    Ok(())
}

#[test]
fn report_pictures_show_the_terminals_figures() -> TestResult {
    let html = report_page()?;
    let doc = parse_page(&html)?;
    let r = append_only()?;
    let ao = section(&doc, "append-only")?;
    let stacks: Vec<_> = ao
        .descendants()
        .filter(|n| n.has_tag_name("svg") && n.attribute("class") == Some("stack"))
        .collect();
    // The first stack: the memtable, then the files the table lists, with
    // their entries and tombstones.
    let sources = |svg: &roxmltree::Node| -> Vec<(String, String, String)> {
        svg.descendants()
            .filter(|n| n.attribute("class") == Some("source"))
            .map(|n| {
                let a = |k| n.attribute(k).unwrap_or_default().to_string();
                (a("data-source"), a("data-entries"), a("data-settled"))
            })
            .collect()
    };
    let loaded = sources(stacks.first().ok_or("a stack")?);
    let mut expected = vec![(
        "memtable".to_string(),
        r.loaded.memtable_entries.to_string(),
        "none".to_string(),
    )];
    expected.extend(r.files.iter().map(|f| {
        (
            format!("{:06}.sst", f.file_id),
            f.entries.to_string(),
            "none".to_string(),
        )
    }));
    assert_eq!(loaded, expected);
    // Each read's stack: the sources it consulted, settled as its trace says.
    for (read, svg) in r.reads.iter().zip(stacks.iter().skip(1)) {
        let drawn = sources(svg);
        let settled: Vec<&str> = drawn.iter().map(|(_, _, s)| s.as_str()).collect();
        let visited = settled.iter().filter(|s| **s != "not consulted").count() as u64;
        assert_eq!(visited, read.cost.sources_visited, "{}", read.name);
        let searched = settled.iter().filter(|s| **s == "searched").count() as u64;
        assert_eq!(searched, read.cost.searched, "{}", read.name);
        let blocks: u64 = svg
            .descendants()
            .filter(|n| n.attribute("class") == Some("blocks-read"))
            .filter_map(|n| n.attribute("data-blocks")?.parse::<u64>().ok())
            .sum();
        assert_eq!(blocks, read.cost.data_blocks, "{}", read.name);
    }
    // Amplification: the last point of the load is the table's 2.00, the
    // point after compaction its 1.00.
    let points: Vec<&str> = ao
        .descendants()
        .filter(|n| n.attribute("class") == Some("point"))
        .filter_map(|n| n.attribute("data-y"))
        .collect();
    let terminal = r.render();
    let (load_end, after) = (points[points.len() - 2], points[points.len() - 1]);
    assert_eq!(load_end, format!("{:.2}", r.loaded.space_amplification));
    assert_eq!(after, format!("{:.2}", r.compacted.space_amplification));
    // The terminal's rows: `space amplification, entries  <lesson>  <cellar>`,
    // after the load and after the compaction.
    let printed: Vec<&str> = terminal
        .lines()
        .filter_map(|l| l.strip_prefix("space amplification, entries"))
        .filter_map(|rest| rest.split_whitespace().nth(1))
        .collect();
    assert_eq!(printed, [load_end, after]);
    assert_eq!(points.len(), 17, "16 measurements of the load, one after compaction");
    // The layout's bars are the pages the table prints.
    let l = layout()?;
    let bars: Vec<&str> = section(&doc, "layout")?
        .descendants()
        .filter(|n| n.attribute("class") == Some("bar"))
        .filter_map(|n| n.attribute("data-value"))
        .collect();
    let pages = [
        l.circulation.row_layout.pages_touched,
        l.lz4.circulation.row_layout.pages_touched,
        l.circulation.family_layout.pages_touched,
        l.lz4.circulation.family_layout.pages_touched,
        l.record.row_layout.pages_touched,
        l.lz4.record.row_layout.pages_touched,
        l.record.family_layout.pages_touched,
        l.lz4.record.family_layout.pages_touched,
    ];
    assert_eq!(bars, pages.map(|p| p.to_string()));
    // The wide row: the strip has the whole row's blocks, the slice's marked.
    let w = wide_row()?;
    let strip = section(&doc, "wide-row")?;
    let count = |class: &str| {
        strip
            .descendants()
            .filter(|n| n.has_tag_name("rect") && n.attribute("class").is_some_and(|c| c.starts_with(class)))
            .count() as u64
    };
    assert_eq!(count("block"), w.paths[1].cost.data_blocks);
    assert_eq!(count("block slice"), w.paths[0].cost.data_blocks);
    Ok(())
}

#[test]
fn space_amplification_stays_at_one_through_the_puts_then_rises_to_two() -> TestResult {
    let r = append_only()?;
    let writes: Vec<u64> = r.amplification.iter().map(|p| p.writes).collect();
    assert_eq!(writes, (1..=16).map(|i| i * 10_000).collect::<Vec<_>>());
    for p in &r.amplification {
        let expected = if p.writes <= 100_000 {
            1.0
        } else if p.writes <= 140_000 {
            // Each update adds a second version of a live record.
            p.writes as f64 / 100_000.0
        } else {
            // Each delete adds a tombstone and hides a record.
            p.writes as f64 / (100_000 - (p.writes - 140_000)) as f64
        };
        assert!((p.space_amplification - expected).abs() < 1e-9, "{p:?}");
    }
    let last = r.amplification.last().map(|p| p.space_amplification);
    assert_eq!(last, Some(r.loaded.space_amplification));
    Ok(())
}

#[test]
fn with_lz4_both_layouts_store_the_same_cells_in_fewer_bytes() -> TestResult {
    let r = layout()?;
    for f in &r.families {
        let z = r.lz4.family(&f.name).ok_or("no LZ4 family")?;
        assert_eq!(
            (z.cells, z.value_bytes, z.raw_key_bytes),
            (f.cells, f.value_bytes, f.raw_key_bytes)
        );
        // The compressed store's blocks, built raw, are the plain store's blocks.
        assert_eq!(z.uncompressed_data_bytes, f.data_bytes, "{}", f.name);
        assert!(
            z.data_bytes < f.data_bytes / 2,
            "{}: {} of {}",
            f.name,
            z.data_bytes,
            f.data_bytes
        );
    }
    Ok(())
}

#[test]
fn lz4_narrows_the_family_layouts_lead_on_circulation_but_it_still_wins() -> TestResult {
    let r = layout()?;
    let (q, z) = (&r.circulation, &r.lz4.circulation);
    assert_eq!((z.row_cells, z.family_cells), (q.row_cells, q.family_cells));
    assert!(z.row_layout.pages_touched < q.row_layout.pages_touched);
    assert!(z.family_layout.pages_touched < q.family_layout.pages_touched);
    // Long repetitive text compresses more than small cells whose keys are
    // already prefix-compressed: the row layout gains more.
    let shrink = |name: &str| {
        r.lz4
            .family(name)
            .map_or(0.0, |f| f.uncompressed_data_bytes as f64 / f.data_bytes as f64)
    };
    assert!(shrink("all_fields") > shrink("circulation"));
    assert!(z.ratio() < q.ratio());
    assert!(z.ratio() > 1.0, "LZ4 ratio {}", z.ratio());
    // Every block was read from the file and decompressed: no block cache.
    assert!(z.row_layout.decompressed_bytes > z.row_layout.data_bytes);
    Ok(())
}

// ---- query-first ----

#[test]
fn each_path_reads_its_layout_and_examines_about_what_it_returns() -> TestResult {
    let r = query_first()?;
    let layouts: Vec<(&str, u64)> = r
        .paths
        .iter()
        .chain([&r.after_launch])
        .map(|p| (p.layout.as_str(), p.requests))
        .collect();
    assert_eq!(
        layouts,
        [
            ("orders_by_customer", 1),
            ("items_by_order", 1),
            ("orders_by_warehouse_day", 1),
            ("orders_by_warehouse_day", 7),
            ("orders", 1),
            ("orders_by_warehouse", 1),
        ]
    );
    for p in r.paths.iter().chain([&r.after_launch]) {
        // At most the limit plus the one entry the merge looked ahead at.
        assert!(
            p.layout_cost.entries_examined <= p.returned + 1,
            "{}: {} examined for {}",
            p.path,
            p.layout_cost.entries_examined,
            p.returned
        );
        assert!(p.returned > 0, "{} returned nothing", p.path);
    }
    assert_eq!(r.paths[0].returned, 20);
    assert_eq!(r.paths[0].layout_cost.entries_examined, 21);
    Ok(())
}

#[test]
fn a_filtering_scan_examines_every_record_of_the_source_of_truth() -> TestResult {
    let r = query_first()?;
    for p in &r.paths {
        let records = if p.scanned == "orders" { r.orders } else { r.items };
        assert_eq!(p.scan_cost.entries_examined, records, "{}", p.path);
    }
    let inserted_during_backfill = r.writes_during_backfill.0;
    assert_eq!(
        r.after_launch.scan_cost.entries_examined,
        r.orders + inserted_during_backfill
    );
    Ok(())
}

#[test]
fn every_order_is_written_into_its_three_layouts_and_a_reroute_moves_one_row() -> TestResult {
    let r = query_first()?;
    assert_eq!((r.orders, r.order_entries), (20_000, 60_000));
    assert_eq!(r.write_amplification(), 3.0);
    assert_eq!(r.item_entries, r.items);
    assert_eq!((r.reroutes, r.reroute_moved, r.reroute_entries), (500, 500, 2_000));
    assert_eq!((r.status_updates, r.status_moved, r.status_entries), (4_000, 0, 12_000));
    Ok(())
}

#[test]
fn the_backfill_copies_what_was_there_and_skips_what_writers_moved_meanwhile() -> TestResult {
    let r = query_first()?;
    let b = &r.backfill;
    assert_eq!((b.batches, b.examined, b.copied, b.skipped), (21, 20_000, 19_900, 100));
    assert!(b.done);
    assert_eq!(r.writes_during_backfill.0, 210);
    assert!(r.verified.iter().all(|(_, _, ok)| *ok), "{:?}", r.verified);
    Ok(())
}

#[test]
fn a_day_bucket_bounds_the_largest_partition() -> TestResult {
    let r = query_first()?;
    assert_eq!(r.without_bucket.partitions, 4);
    assert!(r.without_bucket.largest_records > 4_000);
    assert!(r.with_bucket.largest_records < 100);
    assert!(r.with_bucket.partitions > 700);
    Ok(())
}

#[test]
fn query_first_report_section_holds_its_table_and_three_pictures() -> TestResult {
    let r = query_first()?;
    let html = lesson::page(vec![r.section()]).finish();
    let doc = parse_page(&html)?;
    let s = section(&doc, "query-first")?;
    let pre = s
        .descendants()
        .find(|n| n.has_tag_name("pre"))
        .and_then(|n| n.text())
        .ok_or("a table")?;
    assert_eq!(pre, r.render());
    assert_eq!(
        pictures(s),
        ["query-first-reads", "query-first-bytes", "query-first-partitions"]
    );
    // The bytes per layout are the ones the table prints.
    let bytes: Vec<&str> = s
        .descendants()
        .filter(|n| n.has_tag_name("svg") && n.attribute("class") == Some("query-first-bytes"))
        .flat_map(|svg| svg.descendants())
        .filter(|n| n.attribute("class") == Some("bar"))
        .filter_map(|n| n.attribute("data-value"))
        .collect();
    let printed: Vec<String> = r.layouts.iter().map(|l| l.family.table_bytes.to_string()).collect();
    assert_eq!(bytes, printed);
    assert_eq!(
        r.layouts.iter().filter(|l| l.source_of_truth).count(),
        2,
        "orders and items_by_order"
    );
    Ok(())
}
