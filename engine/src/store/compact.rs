//! Running compactions: merging runs into one and installing the result.
//!
//! What to merge is decided in [`crate::compaction`]; this module executes it:
//! a merge of the input runs through the [`Compactor`]'s drop rules, output
//! cut at the family's target size, one manifest edit that removes the inputs
//! and adds the outputs, and a new version (see `install`). Input files are
//! only marked obsolete: the last version (or snapshot) that lists them
//! deletes them.

use super::*;

/// How a compaction ended.
pub(super) enum Compacted {
    /// Its output replaced its inputs.
    Installed(CompactionReport),
    /// The store began to close while it ran: nothing was installed, and its
    /// output files were removed.
    Interrupted,
}

/// The family as a long merge needs it: its files, options and counters,
/// not its memtables. A merge takes seconds; holding the version it started
/// from would keep every memtable flushed meanwhile in memory until it ends
/// (measured on single 1M-record YCSB loads: peak anonymous memory 284 and
/// 291 MiB holding the version, 212 and 183 MiB without).
pub(super) fn without_memtables(fam: &FamilyVersion) -> FamilyVersion {
    FamilyVersion {
        active: Arc::new(Memtable::new()),
        frozen: Vec::new(),
        ..fam.clone()
    }
}

impl Inner {
    /// One automatic compaction, if some family needs one: whatever its
    /// strategy chooses ([`compaction::choose`]) from its files' shapes.
    pub(super) fn compact_minor(&self) -> Result<bool> {
        let ids: Vec<u32> = self
            .current()
            .families
            .values()
            .filter(|f| f.options.compaction_trigger != 0)
            .map(|f| f.id)
            .collect();
        for id in ids {
            let lock = self.compaction_lock(id);
            let Some(_guard) = lock.try_lock() else {
                continue;
            };
            let v = self.current();
            let Some(fam) = v.families.get(&id) else {
                continue;
            };
            let shapes: Vec<FileShape<'_>> = fam.tables.iter().map(|t| t.shape()).collect();
            let choice = compaction::choose(&shapes, &fam.options);
            let by_id = |id: u64| fam.tables.iter().find(|t| t.meta.file_id == id).cloned();
            match choice {
                None => continue,
                Some(Choice::Move { file_id, level, run }) => {
                    let Some(file) = by_id(file_id) else {
                        continue;
                    };
                    self.move_table(fam, &file, level, run)?;
                    return Ok(true);
                }
                Some(Choice::Merge {
                    inputs,
                    level,
                    run,
                    bottommost,
                }) => {
                    let inputs: Vec<Arc<TableFile>> = inputs.into_iter().filter_map(by_id).collect();
                    let run = run.unwrap_or_else(|| self.next_file.fetch_add(1, Ordering::SeqCst));
                    let fam = without_memtables(fam);
                    drop(v);
                    // A compaction cut short by close ends the thread's work.
                    return match self.run_compaction(&fam, inputs, bottommost, level, run)? {
                        Compacted::Installed(_) => Ok(true),
                        Compacted::Interrupted => Ok(false),
                    };
                }
            }
        }
        Ok(false)
    }

    /// Merges all of a family's files into one run (at the last level, for
    /// a leveled family): the work of [`Store::compact`], once its memtable
    /// is flushed. Like a minor compaction it merges a copy of the family
    /// without memtables and lets the version go first: a major compaction
    /// of a large family takes minutes, and writes go on meanwhile.
    pub(super) fn compact_major(&self, id: u32, name: &str) -> Result<CompactionReport> {
        let lock = self.compaction_lock(id);
        let _guard = lock.lock();
        let fam = {
            let v = self.current();
            let Some(fam) = v.families.get(&id) else {
                return Err(Error::UnknownFamily(name.to_string()));
            };
            without_memtables(fam)
        };
        if fam.tables.is_empty() {
            return Ok(CompactionReport::default());
        }
        let level = match fam.options.compaction {
            crate::options::Compaction::SizeTiered => 0,
            crate::options::Compaction::Leveled { .. } => compaction::LAST_LEVEL,
        };
        let run = self.next_file.fetch_add(1, Ordering::SeqCst);
        match self.run_compaction(&fam, fam.tables.clone(), true, level, run)? {
            Compacted::Installed(report) => Ok(report),
            // Close runs only once no call holds the store, so no caller is
            // here to see this; said plainly all the same.
            Compacted::Interrupted => Err(Error::WritesStopped("the store is closing".into())),
        }
    }

    /// Moves one file to another level and run without rewriting it (its
    /// rows share no file there): one manifest edit, the same file. A run of
    /// its own takes a number from the file counter, recorded as used with
    /// the edit by `Inner::install` (else a later open or repair gives it to
    /// another run of the family, and the read path reads the two as one).
    fn move_table(&self, fam: &FamilyVersion, file: &Arc<TableFile>, level: u32, run: Option<u64>) -> Result<()> {
        let run = run.unwrap_or_else(|| self.next_file.fetch_add(1, Ordering::SeqCst));
        let moved = Arc::new(file.moved(level, run));
        self.install(|base| {
            let Some(now) = base.current.families.get(&fam.id) else {
                return Err(Error::UnknownFamily(fam.name.clone()));
            };
            let edits = vec![
                Edit::RemoveTable {
                    family: fam.id,
                    file_id: file.meta.file_id,
                },
                Edit::AddTable {
                    family: fam.id,
                    table: moved.meta.clone(),
                },
            ];
            let mut f = (**now).clone();
            for t in f.tables.iter_mut() {
                if t.meta.file_id == file.meta.file_id {
                    *t = moved.clone();
                }
            }
            FamilyVersion::order_tables(&mut f.tables);
            // Counted before the new version is swapped in, as a flush is.
            fam.counters.compactions.fetch_add(1, Ordering::Relaxed);
            Ok((Change::new(edits, base.current.with_family(f)), ()))
        })?;
        self.hook("compaction::installed");
        Ok(())
    }

    /// Merges `inputs` (whole runs adjacent in age, or a leveled family's
    /// files of two neighbouring levels) into run `run` at `level`, and
    /// installs the result.
    pub(super) fn run_compaction(
        &self,
        fam: &FamilyVersion,
        inputs: Vec<Arc<TableFile>>,
        bottommost: bool,
        level: u32,
        run: u64,
    ) -> Result<Compacted> {
        // Every reader of the version this compaction installs reads at this
        // sequence number or a later one (it only grows, and a snapshot reads
        // it holding the version lock, after the install; see
        // `Inner::snapshot`). The drop rule keeps what such a reader may see,
        // and a bottommost output writes the sequence numbers up to it as 0:
        // they order nothing for such a reader. A newer one (a write whose
        // memtable was flushed before it became visible) keeps its number, so
        // no snapshot sees it early.
        let horizon = self.visible_seq.load(Ordering::Acquire);
        let expire_before = fam.options.expire_before(now_ms());
        let mut cursors = Vec::with_capacity(inputs.len());
        for t in &inputs {
            cursors.push(source::whole_file_cursor(t)?);
        }
        let mut merge = MergeIterator::new(cursors);
        self.hook("compaction::merging");
        let mut compactor = Compactor::new(horizon, fam.options.max_versions, expire_before, bottommost);
        let mut out = TableOutput::new(&fam.dir, &self.next_file, &fam.options, run, level, true);
        let mut seen = 0u64;
        let mut rewritten = Vec::new();
        while merge.valid() {
            // The key is decoded once, by the drop rule, which hands its
            // suffix and row on to the output.
            let merged_key = merge.key();
            let Some(judged) = compactor.judge(merged_key) else {
                // Dropping `out` removes the files written so far; the
                // inputs stay as they are.
                return Err(merge.undecodable_key());
            };
            let (ts, seq, kind) = (judged.timestamp, judged.sequence, judged.kind);
            let row = compactor.row();
            match judged.keep {
                Keep::Entry => {
                    let (entry_key, seq) = if bottommost && seq <= horizon {
                        key::zero_sequence_into(merged_key, &mut rewritten);
                        (rewritten.as_slice(), 0)
                    } else {
                        (merged_key, seq)
                    };
                    // The value lent from its block: no reference count raised per entry.
                    merge.with_value(|value| out.add(entry_key, value, row, (ts, seq, kind)))?;
                }
                Keep::AsDeletion => {
                    key::cell_deletion_into(merged_key, &mut rewritten);
                    out.add(&rewritten, &[], row, (ts, seq, key::Kind::DeleteCell))?;
                }
                Keep::Drop => {}
            }
            merge.next()?;
            seen += 1;
            if seen.is_multiple_of(4096) && self.shutting_down.load(Ordering::Relaxed) {
                // Dropping `out` removes the files written so far.
                return Ok(Compacted::Interrupted);
            }
        }
        let outputs = out.finish()?;
        let report = CompactionReport {
            input_files: inputs.len() as u64,
            input_bytes: inputs.iter().map(|t| t.meta.size).sum(),
            input_entries: inputs.iter().map(|t| t.meta.entries).sum(),
            output_files: outputs.len() as u64,
            output_bytes: outputs.iter().map(|t| t.meta.size).sum(),
            output_entries: outputs.iter().map(|t| t.meta.entries).sum(),
        };

        let input_ids: Vec<u64> = inputs.iter().map(|t| t.meta.file_id).collect();
        self.install(|base| {
            let Some(now) = base.current.families.get(&fam.id) else {
                return Err(Error::UnknownFamily(fam.name.clone()));
            };
            let mut edits: Vec<Edit> = input_ids
                .iter()
                .map(|&file_id| Edit::RemoveTable {
                    family: fam.id,
                    file_id,
                })
                .collect();
            edits.extend(outputs.iter().map(|t| Edit::AddTable {
                family: fam.id,
                table: t.meta.clone(),
            }));
            let mut f = (**now).clone();
            f.tables.retain(|t| !input_ids.contains(&t.meta.file_id));
            let version = base.current.with_family(f);
            let tables = outputs.into_iter().map(|t| (fam.id, t)).collect();
            // Counted before the new version is swapped in: counted after,
            // a `stats` read in between saw the outputs without the
            // compaction that wrote them. (If the manifest append then
            // fails, the bytes were read and written all the same.)
            fam.counters.compactions.fetch_add(1, Ordering::Relaxed);
            fam.counters
                .compaction_bytes_read
                .fetch_add(report.input_bytes, Ordering::Relaxed);
            fam.counters
                .compaction_bytes_written
                .fetch_add(report.output_bytes, Ordering::Relaxed);
            Ok((Change { edits, tables, version }, ()))
        })?;
        // The inputs are deleted when the last version (or snapshot) listing them goes.
        for t in &inputs {
            t.mark_obsolete();
        }
        self.hook("compaction::installed");
        Ok(Compacted::Installed(report))
    }
}
