//! Running compactions: merging runs into one and installing the result.
//!
//! What to merge is decided in [`crate::compaction`]; this module executes it:
//! a merge of the input runs through the [`Compactor`]'s drop rules, output
//! cut at the family's target size, one manifest edit that removes the inputs
//! and adds the outputs, and a new version. Input files are only marked
//! obsolete: the last version (or snapshot) that lists them deletes them.

use super::*;

impl Inner {
    /// One automatic (size-tiered) compaction, if some family needs one.
    pub(super) fn compact_minor(&self) -> Result<bool> {
        let v = self.current();
        for fam in v.families.values() {
            if fam.options.compaction_trigger == 0 {
                continue;
            }
            let lock = self.compaction_lock(fam.id);
            let Some(_guard) = lock.try_lock() else {
                continue;
            };
            let v = self.current();
            let Some(fam) = v.families.get(&fam.id) else {
                continue;
            };
            let runs = fam.runs();
            let sizes: Vec<u64> = runs.iter().map(|r| r.iter().map(|t| t.meta.size).sum()).collect();
            if let Some(range) = compaction::choose(&sizes, fam.options.compaction_trigger) {
                let bottommost = range.end == runs.len();
                let inputs: Vec<Arc<TableFile>> =
                    runs.get(range).unwrap_or_default().iter().flatten().cloned().collect();
                self.run_compaction(fam, inputs, bottommost)?;
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Merges `inputs` (whole runs, adjacent in age) into one new run and installs it.
    pub(super) fn run_compaction(
        &self,
        fam: &FamilyVersion,
        inputs: Vec<Arc<TableFile>>,
        bottommost: bool,
    ) -> Result<CompactionReport> {
        // Every reader of the version this compaction installs reads at this
        // sequence number or a later one (see `Inner::snapshot`).
        let horizon = self.visible_seq.load(Ordering::Acquire);
        let expire_before = fam.options.expire_before(now_ms());
        let mut cursors = Vec::with_capacity(inputs.len());
        for t in &inputs {
            cursors.push(source::whole_file_cursor(t)?);
        }
        let mut merge = MergeIterator::new(cursors);
        let mut compactor = Compactor::new(horizon, fam.options.max_versions, expire_before, bottommost);
        let run = self.next_file.fetch_add(1, Ordering::SeqCst);
        let mut out = TableOutput::new(&fam.dir, &self.next_file, &fam.options, run, true);
        let mut seen = 0u64;
        let mut zeroed = Vec::new();
        while merge.valid() {
            if compactor.keep(merge.key()) {
                // Bottommost output is the oldest data of the family, and every
                // reader of the new version sees all of it: its sequence
                // numbers order nothing any more, so they are zeroed.
                let entry_key = if bottommost {
                    key::zero_sequence_into(merge.key(), &mut zeroed);
                    zeroed.as_slice()
                } else {
                    merge.key()
                };
                out.add(entry_key, &merge.value())?;
            }
            merge.next()?;
            seen += 1;
            if seen.is_multiple_of(4096) && self.shutting_down.load(Ordering::Relaxed) {
                return Err(Error::InvalidArgument("compaction interrupted by close".into()));
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

        let mut install = self.install.lock();
        let current = self.current();
        let Some(now) = current.families.get(&fam.id) else {
            return Ok(report);
        };
        let mut edits: Vec<Edit> = inputs
            .iter()
            .map(|t| Edit::RemoveTable {
                family: fam.id,
                file_id: t.meta.file_id,
            })
            .collect();
        edits.extend(outputs.iter().map(|t| Edit::AddTable {
            family: fam.id,
            table: t.meta.clone(),
        }));
        edits.push(Edit::NextFileNumber(self.next_file.load(Ordering::SeqCst)));
        self.commit(&mut install, &edits)?;
        let input_ids: Vec<u64> = inputs.iter().map(|t| t.meta.file_id).collect();
        let mut f = (**now).clone();
        f.tables.retain(|t| !input_ids.contains(&t.meta.file_id));
        f.tables.extend(outputs.into_iter().map(Arc::new));
        FamilyVersion::order_tables(&mut f.tables);
        self.set_current(current.with_family(f));
        drop(install);
        // The inputs are deleted when the last version (or snapshot) listing them goes.
        for t in &inputs {
            t.mark_obsolete();
        }
        fam.counters.compactions.fetch_add(1, Ordering::Relaxed);
        fam.counters
            .compaction_bytes_read
            .fetch_add(report.input_bytes, Ordering::Relaxed);
        fam.counters
            .compaction_bytes_written
            .fetch_add(report.output_bytes, Ordering::Relaxed);
        Ok(report)
    }
}
