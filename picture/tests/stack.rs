//! The stack picture of a small real store: one bar per source, newest
//! first, each coloured as the read's trace says it was settled.

use cellar_engine::{FamilyOptions, Settled, SourceKind, Store, StoreOptions};
use cellar_picture::stack::{draw, state_name};
use cellar_picture::{colour, Asked, Key, KeySpace, ReadOnStack, Stack};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn parse(svg: &str) -> Result<roxmltree::Document<'_>, roxmltree::Error> {
    roxmltree::Document::parse(svg)
}

/// Three files (rows a-c, d-f, a-f) and a memtable (rows e-g), no compaction.
fn small_store(dir: &std::path::Path) -> Result<Store, cellar_engine::Error> {
    let store = Store::open(
        dir,
        StoreOptions::default().family_with("f", FamilyOptions::default().compaction_trigger(0)),
    )?;
    for rows in [["a", "b", "c"], ["d", "e", "f"], ["a", "c", "f"]] {
        for row in rows {
            store.put_at("f", row, "c", 1, "v")?;
        }
        store.flush()?;
    }
    store.put_at("f", "e", "c", 2, "newer")?;
    store.delete_at("f", "g", "c", 2)?;
    Ok(store)
}

#[test]
fn one_bar_per_source_newest_first_coloured_as_the_trace_settled_it() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = small_store(dir.path())?;
    let stats = store.stats()?;
    let family = stats.family("f").ok_or("family f")?;
    let tables = store.tables();
    let stack = Stack::of_family(family, &tables, &|b| String::from_utf8_lossy(b).into_owned());
    let (_, trace) = store.get_traced("f", "b", "c")?;
    let read = ReadOnStack {
        label: "get f b c".to_string(),
        asked: Asked::Row(Key::text("b")),
        sources: &trace.sources,
    };
    let space = KeySpace::spanning(stack.keys());
    let svg = draw(&stack, &space, Some(&read)).finish();
    let doc = parse(&svg)?;
    let groups: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("source"))
        .collect();

    // One group per source: the memtable, then the files as the store lists them.
    let names: Vec<&str> = groups.iter().filter_map(|g| g.attribute("data-source")).collect();
    let mut expected = vec!["memtable".to_string()];
    expected.extend(tables.iter().map(|t| format!("{:06}.sst", t.file_id)));
    assert_eq!(names, expected);
    // ... which is the order the read consulted them in.
    let consulted: Vec<String> = trace
        .sources
        .iter()
        .map(|s| match s.source {
            SourceKind::Table { file_id, .. } => format!("{file_id:06}.sst"),
            _ => "memtable".to_string(),
        })
        .collect();
    assert_eq!(consulted, expected[..consulted.len()].to_vec());

    // Each bar has the colour of how the trace settled its source.
    for (group, source) in groups.iter().zip(&trace.sources) {
        let bar = group
            .descendants()
            .find(|n| n.attribute("class") == Some("bar"))
            .ok_or("a bar")?;
        assert_eq!(group.attribute("data-settled"), Some(state_name(Some(source))));
        assert_eq!(bar.attribute("fill"), Some(colour::settled(source.settled)));
    }
    // Row b: the memtable (rows e and g) is ruled out by its row filter, the
    // newest file (rows a, c, f) spans b but its bloom filter rules it out,
    // the file of rows d-f is settled by its key range, and the oldest (a-c)
    // is searched: only it carries a mark of the data blocks read.
    let settled: Vec<Settled> = trace.sources.iter().map(|s| s.settled).collect();
    assert_eq!(
        settled,
        [Settled::Filter, Settled::Filter, Settled::KeyRange, Settled::Searched]
    );
    let marks: Vec<&str> = groups
        .iter()
        .filter(|g| g.descendants().any(|n| n.attribute("class") == Some("blocks-read")))
        .filter_map(|g| g.attribute("data-source"))
        .collect();
    let searched_files: Vec<String> = trace
        .sources
        .iter()
        .filter(|s| s.data_blocks > 0)
        .filter_map(|s| match s.source {
            SourceKind::Table { file_id, .. } => Some(format!("{file_id:06}.sst")),
            _ => None,
        })
        .collect();
    assert_eq!(marks, searched_files);
    assert_eq!(marks.len(), 1);
    Ok(())
}

#[test]
fn without_a_read_each_bar_shows_its_entries_and_tombstones() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = small_store(dir.path())?;
    let stats = store.stats()?;
    let family = stats.family("f").ok_or("family f")?;
    let stack = Stack::of_family(family, &store.tables(), &|b| String::from_utf8_lossy(b).into_owned());
    let space = KeySpace::spanning(stack.keys());
    let svg = draw(&stack, &space, None).finish();
    let doc = parse(&svg)?;
    let memtable = doc
        .descendants()
        .find(|n| n.attribute("data-source") == Some("memtable"))
        .ok_or("the memtable")?;
    assert_eq!(memtable.attribute("data-entries"), Some("2"));
    assert_eq!(memtable.attribute("data-tombstones"), Some("1"));
    assert!(memtable
        .descendants()
        .any(|n| n.attribute("class") == Some("tombstones")));
    let ends: Vec<&str> = doc
        .descendants()
        .filter(|n| matches!(n.attribute("class"), Some("key-first" | "key-last")))
        .filter_map(|n| n.text())
        .collect();
    assert_eq!(ends, ["a", "g"]);
    Ok(())
}
