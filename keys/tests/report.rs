//! The key-visualizer report: a page a strict parser reads, with a legend,
//! key labels on its axis, boundaries wide enough to see, and tooltips that
//! name each cell's keys, time slice, writes and servers.

use cellar_keys::placement::ClusterSpec;
use cellar_keys::syntax::parse;
use cellar_keys::workload::{WorkloadKind, WorkloadSpec};
use cellar_keys::{report, Error, Experiment};

type Result = std::result::Result<(), Box<dyn std::error::Error>>;

/// The page as XML (its `<!DOCTYPE html>` is the only declaration).
fn parse_page(html: &str) -> std::result::Result<roxmltree::Document<'_>, roxmltree::Error> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    roxmltree::Document::parse_with_options(html, options)
}

fn hot_run() -> std::result::Result<cellar_keys::Run, Error> {
    let key = parse(r##"ts(ms) "#" field(order_id)"##)?;
    Experiment::new(
        key,
        WorkloadSpec::new(WorkloadKind::Orders).writes(2000),
        ClusterSpec::hbase(),
    )
    .run()
}

#[test]
fn every_cell_names_its_keys_time_slice_writes_and_server() -> Result {
    let run = hot_run()?;
    let html = report::html(&run, &[]);
    let doc = parse_page(&html)?;
    let cells: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("class") == Some("cell"))
        .collect();
    let lit = run.placement.heat.iter().flatten().filter(|w| **w > 0).count();
    assert_eq!(cells.len(), lit, "one rectangle per lit cell");
    let written: u64 = cells
        .iter()
        .map(|c| {
            let tip = c.first_element_child().and_then(|t| t.text()).unwrap_or_default();
            assert!(tip.starts_with("key"), "{tip}");
            assert!(tip.contains(" to "), "a time slice: {tip}");
            assert!(tip.contains("server #0"), "{tip}");
            let writes = tip.split("; ").nth(2).and_then(|w| w.split(' ').next()).unwrap_or("0");
            writes.replace(',', "").parse::<u64>().unwrap_or(0)
        })
        .sum();
    assert_eq!(written, 2000, "the tooltips add up to every write");
    Ok(())
}

#[test]
fn the_picture_has_a_legend_key_labels_and_visible_boundaries() -> Result {
    let run = hot_run()?;
    let html = report::html(&run, &[]);
    let doc = parse_page(&html)?;
    let with_class = |tag: &str, class: &str| {
        doc.descendants()
            .filter(|n| n.has_tag_name(tag) && n.attribute("class") == Some(class))
            .count()
    };
    assert_eq!(with_class("rect", "legend"), 11);
    assert_eq!(with_class("text", "key-tick"), 5);
    let first_tick = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("key-tick"))
        .and_then(|n| n.text());
    assert_eq!(first_tick, Some("1704067200000#1"));
    let boundaries: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("boundary"))
        .collect();
    // One line per region boundary (a split), not one per time slice.
    assert_eq!(boundaries.len(), run.placement.splits);
    assert!(boundaries.iter().all(|b| b.attribute("stroke-width") == Some("1.5")));
    assert!(!html.contains("http") && !html.contains("<script"));
    Ok(())
}

/// The page says how long the writes took as the span was given: 30 seconds
/// is not "0 min", nor 90 seconds "1 min".
#[test]
fn the_page_gives_the_span_in_the_unit_that_says_it_exactly() -> Result {
    for (span_ms, says) in [
        (30_000, "over 30 s,"),
        (90_000, "over 90 s,"),
        (3_600_000, "over 1 h,"),
        (5_400_000, "over 90 min,"),
        (2 * 86_400_000, "over 2 d,"),
        (1_500, "over 1500 ms,"),
    ] {
        let run = Experiment::new(
            parse("field(customer)")?,
            WorkloadSpec::new(WorkloadKind::Orders).writes(50).span_ms(span_ms),
            ClusterSpec::hbase(),
        )
        .run()?;
        let html = report::html(&run, &[]);
        assert!(
            html.contains(&format!("50 writes {says}")),
            "{span_ms}: {}",
            &html[..html.len().min(2000)]
        );
    }
    Ok(())
}

/// Seed 002: the page explains the key with "What the guides say": the
/// same findings `cellar keys` prints, in a section of their own.
#[test]
fn the_page_has_what_the_guides_say() -> Result {
    let run = hot_run()?;
    let html = report::html(&run, &[]);
    let doc = parse_page(&html)?;
    let section = doc
        .descendants()
        .find(|n| n.has_tag_name("section") && n.attribute("id") == Some("guides"))
        .ok_or("no guides section")?;
    let text: String = section.descendants().filter_map(|n| n.text()).collect();
    let findings = cellar_keys::guides::of_run(&run);
    assert!(!findings.is_empty());
    for f in &findings {
        assert!(text.contains(&f.line()), "{text}");
    }
    assert!(text.contains("ts(ms) leads the key"), "{text}");
    Ok(())
}
