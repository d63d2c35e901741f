//! `--report FILE` of `explain` and `files`: the store drawn as the lessons
//! draw theirs, in one self-contained HTML page.
//!
//! `files --report` draws each family as a stack of its sources over its key
//! space (memtable first, then the table files newest first, each with its
//! entries and tombstones); `explain --report` draws the read's family the
//! same way with every source coloured by how the read settled it and the
//! data blocks it read marked. The pictures come from `cellar-picture`, from
//! the same `Stats`, table list and `Trace` the text output prints.

use std::io::Write;
use std::path::Path;

use cellar::{key, RowRange, Trace};
use cellar_picture::{stack, Asked, Key, KeySpace, Page, ReadOnStack, Section, Stack};

use crate::format::escape;
use crate::opened::Opened;
use crate::Error;

/// Refuses a `--report` path that cannot be written, before any work is
/// done: a folder, or a file in a folder that does not exist. A lesson runs
/// for seconds to minutes before it writes its page, and a command that
/// printed its answer and then failed would leave a script unsure which
/// part to trust.
pub fn check_report_path(path: &Path) -> Result<(), Error> {
    if path.is_dir() {
        return Err(format!("{} is a folder: --report names the HTML file to write", path.display()).into());
    }
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !folder.is_dir() {
        return Err(format!(
            "{}: folder {} does not exist: --report writes a file, not its folder",
            path.display(),
            folder.display()
        )
        .into());
    }
    Ok(())
}

/// A row key to draw.
fn key_of(bytes: &[u8]) -> Key {
    Key {
        bytes: bytes.to_vec(),
        text: escape(bytes),
    }
}

/// The stack of `family` as the store holds it now.
fn stack_of(store: &Opened, family: &str) -> Result<Stack, Error> {
    let stats = store.stats()?;
    let f = stats
        .family(family)
        .ok_or_else(|| format!("unknown column family {family:?}"))?;
    Ok(Stack::of_family(f, &store.tables(), &escape))
}

/// The rows a scan asks for, its prefix folded into its bounds.
pub fn asked_rows(range: &RowRange) -> Asked {
    let mut from = range.from.as_deref().map(<[u8]>::to_vec);
    let mut to = range.to.as_deref().map(<[u8]>::to_vec);
    if let Some(prefix) = range.prefix.as_deref() {
        if from.as_deref().is_none_or(|f| f < prefix) {
            from = Some(prefix.to_vec());
        }
        if let Some(end) = key::prefix_successor(prefix) {
            if to.as_deref().is_none_or(|t| t > end.as_slice()) {
                to = Some(end);
            }
        }
    }
    Asked::Rows {
        from: from.as_deref().map(key_of),
        to: to.as_deref().map(key_of),
    }
}

/// The row a get or a slice asks for.
pub fn asked_row(row: &[u8]) -> Asked {
    Asked::Row(key_of(row))
}

fn write_page(page: &Page, path: &Path, out: &mut dyn Write) -> Result<(), Error> {
    std::fs::write(path, page.finish()).map_err(|e| format!("{}: {e}", path.display()))?;
    writeln!(out, "report written to {}", path.display())?;
    Ok(())
}

/// `explain ... --report FILE`: the family's stack with the read through it.
pub fn explain(
    store: &Opened,
    family: &str,
    label: &str,
    asked: Asked,
    trace: &Trace,
    path: &Path,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let stack = stack_of(store, family)?;
    let extra: Vec<Key> = match &asked {
        Asked::Row(k) => vec![k.clone()],
        Asked::Rows { from, to } => from.iter().chain(to).cloned().collect(),
    };
    let space = KeySpace::spanning(stack.keys().chain(&extra));
    let read = ReadOnStack {
        label: format!(
            "{label}: sources visited {}, data blocks read {}, entries examined {}",
            trace.sources_visited(),
            trace.data_blocks(),
            trace.entries_examined()
        ),
        asked,
        sources: &trace.sources,
    };
    let mut page = Page::new(&format!("cellar explain {label}"));
    let mut s = Section::new("read", &format!("family {family}"));
    s.figure(&stack::draw(&stack, &space, None), "The family's sources before the read: the memtable, then the table files in the order a read consults them (newest first), each bar spanning its first to its last row in byte order, the dark band at its foot growing with its share of tombstones.");
    s.figure(&stack::draw(&stack, &space, Some(&read)), "The read through them: each source coloured by how it was settled (light blue: key range, yellow: bloom filter, vermillion: searched, grey: not reached), the data blocks read marked in black where the asked rows fall.");
    page.push(s);
    write_page(&page, path, out)
}

/// `files --report FILE`: one stack per family.
pub fn files(store: &Opened, path: &Path, out: &mut dyn Write) -> Result<(), Error> {
    let mut page = Page::new("cellar files");
    page.intro("Each family as a stack of its sources: the memtable, then the table files in the order a read consults them (newest first). A bar spans the source's first to last row in byte order; the dark band at its foot grows with its share of tombstones. Rest the pointer on a bar for its key range and counts.");
    for family in store.families() {
        let stack = stack_of(store, &family)?;
        let space = KeySpace::spanning(stack.keys());
        let mut s = Section::new(&family, &format!("family {family}"));
        s.figure(
            &stack::draw(&stack, &space, None),
            &format!("{} source(s).", stack.sources.len()),
        );
        page.push(s);
    }
    write_page(&page, path, out)
}
