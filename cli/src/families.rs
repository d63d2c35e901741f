//! Column families: `create` with a family's options, `families`, which
//! lists each family with them, `alter` to change them, and `drop-family`
//! and `truncate` (HBase's `drop` and `truncate` of a table).
//!
//! A family's options say how its data is kept (HBase's column family
//! attributes: `VERSIONS`, `TTL`, `BLOOMFILTER`, `BLOCKSIZE`,
//! `DATA_BLOCK_ENCODING`, `COMPRESSION`); the manifest records them, so every later open of
//! the store uses them. `create --family loans --max-versions 3` is HBase's
//! `create 't', {NAME => 'loans', VERSIONS => 3}`.

use std::io::Write;
use std::time::Duration;

use cellar::{Compaction, Compression, FamilyOptions, Settle, Store};
use serde_json::{json, Value};

use crate::clock::{self, duration_text};
use crate::format;
use crate::opened::Opened;
use crate::store_cmds::{known_family_in, Context};
use crate::Error;

/// The options `create` can give the families it creates.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct CreateArgs {
    /// Versions kept of each cell [default: 1].
    #[arg(long, value_name = "N")]
    pub max_versions: Option<u32>,
    /// Cells older than this are hidden, then dropped by compaction: 90s, 30m,
    /// 12h, 7d [default: none].
    #[arg(long, value_name = "DURATION", value_parser = clock::duration_arg)]
    pub ttl: Option<Duration>,
    /// Bloom filter bits per row key; 0 for no filter [default: 10, about 1%
    /// false positives].
    #[arg(long, value_name = "N")]
    pub bloom_bits: Option<u32>,
    /// Target size of a data block [default: 4096].
    #[arg(long, value_name = "BYTES")]
    pub block_size: Option<usize>,
    /// Store a column name repeated from row to row as a copy of an earlier
    /// key's (smaller files, slower reads) [default: off].
    #[arg(long)]
    pub tail_copies: bool,
    /// Compress each data block of new tables: none, lz4, zstd (level 3) or
    /// zstd:LEVEL (1 to 22) [default: none].
    #[arg(long, value_name = "CODEC", value_parser = compression_arg)]
    pub compression: Option<Compression>,
    /// Compact automatically when this many similar-sized runs sit side by
    /// side (tiered), or level 0 holds this many runs (leveled); 0 turns it
    /// off [default: 4].
    #[arg(long, value_name = "RUNS")]
    pub compaction_trigger: Option<usize>,
    /// How runs are merged: leveled (one run per level, each ten times the
    /// one above, a 256 MiB base: fewer runs per read, less space, more
    /// rewrites) or tiered (runs of similar size merged together: fewer
    /// rewrites) [default: leveled].
    #[arg(long, value_name = "leveled|tiered", value_parser = compaction_arg)]
    pub compaction: Option<Compaction>,
    /// Merge the family into one run once its writes pause (HBase's major
    /// compaction of a quiet table): `off`, `on`, or IDLE[,FLOOR[,PERCENT%]],
    /// e.g. 5s,64MiB,5%: after IDLE without a write, when its tables hold
    /// FLOOR or more and PERCENT of it lies outside the run a settle leaves
    /// [default: 1s,256MiB,3%].
    #[arg(long, value_name = "WHEN", value_parser = settle_arg)]
    pub settle: Option<SettleArg>,
}

/// What `--settle` says: off, or the settle to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SettleArg(pub Option<Settle>);

impl CreateArgs {
    /// Whether any option was given.
    pub fn any(&self) -> bool {
        self.max_versions.is_some()
            || self.ttl.is_some()
            || self.bloom_bits.is_some()
            || self.block_size.is_some()
            || self.tail_copies
            || self.compression.is_some()
            || self.compaction_trigger.is_some()
            || self.compaction.is_some()
            || self.settle.is_some()
    }

    /// `base` with the options given here.
    pub fn apply(&self, mut base: FamilyOptions) -> FamilyOptions {
        if let Some(n) = self.max_versions {
            base.max_versions = n;
        }
        if let Some(ttl) = self.ttl {
            base.ttl = Some(ttl);
        }
        if let Some(bits) = self.bloom_bits {
            base.bloom_bits_per_key = bits;
        }
        if let Some(bytes) = self.block_size {
            base.block_size = bytes;
        }
        if self.tail_copies {
            base.tail_copies = true;
        }
        if let Some(compression) = self.compression {
            base.compression = compression;
        }
        if let Some(runs) = self.compaction_trigger {
            base.compaction_trigger = runs;
        }
        if let Some(compaction) = self.compaction {
            base.compaction = compaction;
        }
        if let Some(SettleArg(settle)) = self.settle {
            base.settle_when_idle = settle;
        }
        base
    }
}

/// Reads `--compression`.
fn compression_arg(text: &str) -> Result<Compression, String> {
    Compression::parse(text).ok_or_else(|| format!("{text:?} is not none, lz4, zstd or zstd:LEVEL (1 to 22)"))
}

/// Reads `--compaction`.
fn compaction_arg(text: &str) -> Result<Compaction, String> {
    match text {
        "tiered" => Ok(Compaction::SizeTiered),
        "leveled" => Ok(Compaction::LEVELED),
        _ => Err(format!("{text:?} is not tiered or leveled")),
    }
}

/// Reads `--settle`: `off`, `on` (the defaults), or an idle time with an
/// optional byte floor and percentage, each left at its default when not
/// given (`5s`, `5s,64MiB`, `5s,64MiB,5%`). Out-of-range values are
/// refused when the options are checked, as the library refuses them.
fn settle_arg(text: &str) -> Result<SettleArg, String> {
    let bad = || format!("{text:?} is not off, on, or IDLE[,FLOOR[,PERCENT%]] as in 5s,64MiB,5%");
    match text {
        "off" => return Ok(SettleArg(None)),
        "on" => return Ok(SettleArg(Some(Settle::default()))),
        _ => {}
    }
    let mut settle = Settle::default();
    let mut parts = text.split(',');
    let idle = parts.next().ok_or_else(bad)?;
    settle.idle = clock::parse_duration(idle).map_err(|e| e.to_string())?;
    if let Some(floor) = parts.next() {
        settle.min_bytes = bytes_arg(floor.trim()).ok_or_else(bad)?;
    }
    if let Some(percent) = parts.next() {
        let digits = percent.trim().strip_suffix('%').unwrap_or(percent.trim());
        settle.min_above_percent = digits.parse().map_err(|_| bad())?;
    }
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok(SettleArg(Some(settle)))
}

/// A byte count as `bytes_text` prints it, spaces optional: `1000`,
/// `64KiB`, `256 MiB`, `2GiB`.
fn bytes_arg(text: &str) -> Option<u64> {
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let size: u64 = match unit.trim() {
        "" | "bytes" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(size)
}

/// `alter FAMILY [options]`: the options given change, the others stay.
#[derive(Debug, clap::Args)]
pub struct AlterArgs {
    /// Column family.
    pub family: String,
    #[command(flatten)]
    pub options: CreateArgs,
    /// Keep cells for ever (remove the TTL).
    #[arg(long, conflicts_with = "ttl")]
    pub no_ttl: bool,
    /// Store every column name in full again (new files only).
    #[arg(long, conflicts_with = "tail_copies")]
    pub no_tail_copies: bool,
}

/// An option's help without its "[default: ...]": `alter` shares `create`'s
/// options, but one it is not given stays as the family has it.
pub fn without_default(arg: clap::Arg) -> clap::Arg {
    let Some(help) = arg.get_help().map(ToString::to_string) else {
        return arg;
    };
    match (help.find(" [default: "), help.rfind(']')) {
        (Some(start), Some(end)) if end > start => {
            let rest = help.get(end + 1..).unwrap_or_default();
            let trimmed = format!("{}{rest}", help.get(..start).unwrap_or_default());
            arg.help(trimmed)
        }
        _ => arg,
    }
}

/// `drop-family FAMILY --yes` and `truncate FAMILY --yes`.
#[derive(Debug, clap::Args)]
pub struct ConfirmArgs {
    /// Column family.
    pub family: String,
    /// Yes, delete its cells: they cannot be brought back.
    #[arg(long)]
    pub yes: bool,
}

/// `alter`: new options for a family, printed back.
pub fn alter(store: &Store, a: &AlterArgs, out: &mut dyn Write) -> Result<(), Error> {
    known_family_in(&store.families(), &a.family)?;
    let mut options = a.options.apply(store.family_options(&a.family)?);
    if a.no_ttl {
        options.ttl = None;
    }
    if a.no_tail_copies {
        options.tail_copies = false;
    }
    store.alter_family(&a.family, options.clone())?;
    writeln!(out, "{}: {}", a.family, options_text(&options))?;
    Ok(())
}

/// Which of the two is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Removal {
    /// The family goes.
    Drop,
    /// The family stays, empty.
    Truncate,
}

/// `drop-family` and `truncate`: refused without `--yes`; then what went.
pub fn remove(store: &Store, a: &ConfirmArgs, removal: Removal, out: &mut dyn Write) -> Result<(), Error> {
    let (command, what) = match removal {
        Removal::Drop => ("drop-family", "the family and every cell in it"),
        Removal::Truncate => ("truncate", "every cell of the family (its options stay)"),
    };
    known_family_in(&store.families(), &a.family)?;
    if !a.yes {
        return Err(format!("{command} {} deletes {what}, for good: add --yes to go ahead", a.family).into());
    }
    let tables: Vec<_> = store.tables().into_iter().filter(|t| t.family == a.family).collect();
    let bytes: u64 = tables.iter().map(|t| t.size).sum();
    match removal {
        Removal::Drop => store.drop_family(&a.family)?,
        Removal::Truncate => store.truncate_family(&a.family)?,
    }
    let done = match removal {
        Removal::Drop => "dropped family",
        Removal::Truncate => "truncated",
    };
    writeln!(
        out,
        "{done} {}: {} table file(s), {bytes} bytes, and its memtable deleted",
        a.family,
        tables.len()
    )?;
    Ok(())
}

/// Creates each family in `names` that the store lacks, with `options`;
/// returns the names it created.
pub fn ensure(store: &Store, names: &[String], options: &FamilyOptions) -> Result<Vec<String>, Error> {
    let existing = store.families();
    let mut created = Vec::new();
    for name in names {
        if !existing.contains(name) && !created.contains(name) {
            store.create_family(name, options.clone())?;
            created.push(name.clone());
        }
    }
    Ok(created)
}

/// `create`: the families named by `--family` exist (created now, or before
/// with the same options); prints the store's families.
pub fn create(ctx: &Context, store: &Store, a: &CreateArgs, out: &mut dyn Write) -> Result<(), Error> {
    if ctx.families.is_empty() {
        return Err("create needs --family NAME (repeat it for several)".into());
    }
    let wanted = a.apply(FamilyOptions::default());
    let created = ensure(store, &ctx.families, &wanted)?;
    for name in &ctx.families {
        if a.any() && !created.contains(name) && store.family_options(name)? != wanted {
            return Err(format!(
                "family {name:?} already exists with other options (see `cellar families`); \
                 `alter` changes them"
            )
            .into());
        }
    }
    writeln!(
        out,
        "store {} has families: {}",
        ctx.dir.display(),
        store.families().join(", ")
    )?;
    Ok(())
}

/// A family's options in one line, as `dump-manifest` prints them.
pub fn options_text(o: &FamilyOptions) -> String {
    format!(
        "max versions {}, ttl {}, bloom bits {}, block size {}, tail copies {}, compaction {}, settle {}",
        o.max_versions,
        o.ttl.map_or_else(|| "-".to_string(), duration_text),
        o.bloom_bits_per_key,
        o.block_size,
        if o.tail_copies { "on" } else { "off" },
        compaction_text(o),
        settle_text(o.settle_when_idle)
    )
}

/// When the family is settled at rest: its idle time, byte floor and
/// percentage outside the run a settle leaves ("1s idle, 256 MiB, 3%"), or
/// "off".
fn settle_text(settle: Option<Settle>) -> String {
    match settle {
        None => "off".to_string(),
        Some(s) => format!(
            "{} idle, {}, {}%",
            duration_text(s.idle),
            bytes_text(s.min_bytes),
            s.min_above_percent
        ),
    }
}

/// A byte count in the largest binary unit that divides it: "256 MiB",
/// "64 KiB", "1000 bytes".
fn bytes_text(bytes: u64) -> String {
    for (unit, size) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= size && bytes.is_multiple_of(size) {
            return format!("{} {unit}", bytes / size);
        }
    }
    format!("{bytes} bytes")
}

/// `tiered` or `leveled`, as `--compaction` takes it.
fn compaction_name(compaction: Compaction) -> &'static str {
    match compaction {
        Compaction::SizeTiered => "tiered",
        Compaction::Leveled { .. } => "leveled",
    }
}

/// The strategy and its trigger: "leveled, 4 runs", "tiered, off".
fn compaction_text(o: &FamilyOptions) -> String {
    let trigger = match o.compaction_trigger {
        0 => "off".to_string(),
        n => format!("{n} runs"),
    };
    format!("{}, {trigger}", compaction_name(o.compaction))
}

/// `families`: each family and its options.
pub fn list(ctx: &Context, store: &Opened, out: &mut dyn Write) -> Result<(), Error> {
    let mut families = Vec::new();
    for name in store.families() {
        let options = store.family_options(&name)?;
        families.push((name, options));
    }
    if ctx.json {
        let list: Vec<Value> = families
            .iter()
            .map(|(name, o)| {
                json!({
                    "name": name,
                    "max_versions": o.max_versions,
                    "ttl_ms": o.ttl.map(|t| t.as_millis() as u64),
                    "bloom_bits_per_key": o.bloom_bits_per_key,
                    "block_size": o.block_size,
                    "tail_copies": o.tail_copies,
                    "compression": o.compression.to_string(),
                    "compaction": compaction_name(o.compaction),
                    "compaction_trigger": o.compaction_trigger,
                    "memtable_max_bytes": o.memtable_max_bytes,
                    "target_file_bytes": o.target_file_bytes,
                    "settle_when_idle": o.settle_when_idle.map(|s| json!({
                        "idle_ms": s.idle.as_millis() as u64,
                        "min_bytes": s.min_bytes,
                        "min_above_percent": s.min_above_percent,
                    })),
                })
            })
            .collect();
        writeln!(out, "{}", Value::Array(list))?;
        return Ok(());
    }
    let rows: Vec<Vec<String>> = families
        .iter()
        .map(|(name, o)| {
            vec![
                name.clone(),
                o.max_versions.to_string(),
                o.ttl.map_or_else(|| "-".to_string(), duration_text),
                o.bloom_bits_per_key.to_string(),
                o.block_size.to_string(),
                if o.tail_copies { "on" } else { "off" }.to_string(),
                o.compression.to_string(),
                compaction_text(o),
                settle_text(o.settle_when_idle),
            ]
        })
        .collect();
    let headers = [
        "family",
        "max versions",
        "ttl",
        "bloom bits",
        "block size",
        "tail copies",
        "compression",
        "compaction",
        "settle at rest",
    ];
    write!(out, "{}", format::table(&headers, &rows))?;
    writeln!(
        out,
        "{} famil{}",
        families.len(),
        if families.len() == 1 { "y" } else { "ies" }
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settle_prints_its_idle_time_floor_and_percentage_or_off() {
        assert_eq!(settle_text(Some(Settle::default())), "1s idle, 256 MiB, 3%");
        let own = Settle {
            idle: Duration::from_millis(500),
            min_bytes: 64 << 10,
            min_above_percent: 1,
        };
        assert_eq!(settle_text(Some(own)), "500ms idle, 64 KiB, 1%");
        assert_eq!(settle_text(None), "off");
        assert_eq!(bytes_text(1000), "1000 bytes");
        assert_eq!(bytes_text(3 << 30), "3 GiB");
        assert_eq!(bytes_text(0), "0 bytes");
    }

    #[test]
    fn settle_reads_off_on_and_an_idle_time_with_an_optional_floor_and_percentage() {
        assert_eq!(settle_arg("off"), Ok(SettleArg(None)));
        assert_eq!(settle_arg("on"), Ok(SettleArg(Some(Settle::default()))));
        let idle = |ms| Duration::from_millis(ms);
        let own = |ms, min_bytes, min_above_percent| {
            Ok(SettleArg(Some(Settle {
                idle: idle(ms),
                min_bytes,
                min_above_percent,
            })))
        };
        assert_eq!(settle_arg("5s"), own(5000, 256 << 20, 3));
        assert_eq!(settle_arg("5s,64MiB"), own(5000, 64 << 20, 3));
        assert_eq!(settle_arg("500ms,64MiB,5%"), own(500, 64 << 20, 5));
        assert_eq!(settle_arg("2m, 1 GiB, 10"), own(120_000, 1 << 30, 10));
        // What `families` prints reads back, spaces and all.
        assert_eq!(settle_arg("1s,1000 bytes,1%"), own(1000, 1000, 1));
        for bad in [
            "",
            "fast",
            "5",
            "5s,64MB",
            "5s,64MiB,five",
            "5s,1,2,3",
            "5s,99999999999999GiB",
        ] {
            assert!(settle_arg(bad).is_err(), "{bad:?} read as a settle");
        }
    }
}
