//! A layout added after launch: staged, backfilled in bounded batches while
//! writes go on, readable only when complete, and never out of step.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::*;

use cellar_tables::{BackfillOptions, Error, LayoutSpec, LayoutState, Params, Planned, Record, Table};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

fn by_warehouse() -> LayoutSpec {
    LayoutSpec::new(
        "orders_by_warehouse",
        r##"pad(warehouse,4) | revts(ms,19) "#" pad(order_id,10)"##,
    )
    .time("shipped_at")
}

fn loaded(dir: &std::path::Path, n: i64) -> Result<Table> {
    let table = orders_table(dir)?;
    for id in 0..n {
        let placed = T0 + id as u64 * HOUR;
        table.insert(&order(id, id % 4, placed, id % 3, placed + DAY, "placed"))?;
    }
    Ok(table)
}

fn consistent(table: &Table) -> Result {
    let report = table.verify()?;
    if !report.is_consistent() {
        return Err(format!("verify:\n{report}").into());
    }
    Ok(())
}

#[test]
fn a_staged_layout_takes_every_write_but_serves_no_read_until_its_backfill_ends() -> Result {
    let dir = tempfile::tempdir()?;
    let table = loaded(dir.path(), 30)?;
    table.stage_layout(&by_warehouse())?;
    let report = table.insert(&order(100, 1, T0, 2, T0 + DAY, "placed"))?;
    assert_eq!(report.entries, 4, "the staged layout is written too");
    let params = Params::new().eq("warehouse", 2);
    match table.plan(&latest_shipments(3), &params)? {
        Planned::Unserved { reasons, .. } => assert_eq!(reasons.len(), 3, "the building layout is not considered"),
        Planned::Served(c) => return Err(format!("served by {}", c.layout).into()),
    }
    consistent(&table)?;
    let mut backfill = table.backfill("orders_by_warehouse", BackfillOptions { batch_records: 8 })?;
    assert!(matches!(
        table.backfill("orders_by_warehouse", BackfillOptions::default()),
        Err(Error::BackfillRunning(_))
    ));
    let mut steps = 0;
    while !backfill.step()? {
        steps += 1;
        consistent(&table)?;
        assert!(!table.definition().layout("orders_by_warehouse")?.is_readable());
    }
    assert_eq!(steps, 3, "31 records in batches of 8: 3 full batches, then the last");
    let progress = backfill.progress().clone();
    assert_eq!((progress.batches, progress.examined, progress.copied), (4, 31, 31));
    assert_eq!(progress.entries_written, 31);
    drop(backfill);
    assert!(matches!(
        table.backfill("orders_by_warehouse", BackfillOptions::default()),
        Err(Error::NothingToBackfill(_))
    ));
    let answer = table.query(&latest_shipments(3), &params)?;
    assert_eq!(answer.layout, "orders_by_warehouse");
    assert_eq!(ids(&answer.records), [29, 26, 23]);
    consistent(&table)
}

#[test]
fn writes_between_a_batch_read_and_its_copies_are_skipped_not_overwritten() -> Result {
    let dir = tempfile::tempdir()?;
    let table = loaded(dir.path(), 40)?;
    table.stage_layout(&by_warehouse())?;
    let mut backfill = table.backfill("orders_by_warehouse", BackfillOptions { batch_records: 10 })?;
    // The first batch reads orders 0..=9; before it copies them, a writer
    // moves order 3 to another warehouse, deletes order 4 and changes order
    // 5's status. Copying what the batch read would put order 3 back in its
    // old warehouse, resurrect order 4 and undo order 5's change.
    backfill.step_while(&mut || {
        table.update(&key(3), &Record::new().with("warehouse", 7))?;
        table.delete(&key(4))?;
        table.update(&key(5), &Record::new().with("status", "shipped"))?;
        Ok(())
    })?;
    assert_eq!((backfill.progress().copied, backfill.progress().skipped), (7, 3));
    consistent(&table)?;
    while !backfill.step()? {}
    assert_eq!((backfill.progress().copied, backfill.progress().skipped), (37, 3));
    drop(backfill);
    consistent(&table)?;
    let moved = table.query(&latest_shipments(5), &Params::new().eq("warehouse", 7))?;
    assert_eq!(ids(&moved.records), [3]);
    Ok(())
}

#[test]
fn a_backfill_ends_even_when_writers_insert_faster_than_it_copies() -> Result {
    let dir = tempfile::tempdir()?;
    let table = loaded(dir.path(), 40)?;
    table.stage_layout(&by_warehouse())?;
    let mut backfill = table.backfill("orders_by_warehouse", BackfillOptions { batch_records: 3 })?;
    let mut next = 1000;
    let mut steps = 0;
    // Each batch copies 3 records while 5 new ones land after its cursor:
    // a backfill chasing the live source would never reach its end.
    while !backfill.step_while(&mut || {
        for _ in 0..5 {
            next += 1;
            table.insert(&order(next, 1, T0, 2, T0 + DAY, "placed"))?;
        }
        Ok(())
    })? {
        steps += 1;
        if steps > 100 {
            return Err("the backfill is still running after 100 batches".into());
        }
    }
    assert_eq!(steps, 13, "the 40 records there when it started, 3 at a time");
    assert_eq!(backfill.progress().copied, 40);
    drop(backfill);
    consistent(&table)?;
    assert_eq!(table.verify()?.layouts[3].cells, 40 + 70);
    Ok(())
}

#[test]
fn a_backfill_stopped_part_way_resumes_from_its_stored_cursor() -> Result {
    let dir = tempfile::tempdir()?;
    {
        let table = loaded(dir.path(), 40)?;
        table.stage_layout(&by_warehouse())?;
        let mut backfill = table.backfill("orders_by_warehouse", BackfillOptions { batch_records: 10 })?;
        backfill.step()?;
        backfill.step()?;
    }
    let table = orders_table(dir.path())?;
    let state = table.definition().layout("orders_by_warehouse")?.state.clone();
    let LayoutState::Building { cursor: Some(cursor) } = state else {
        return Err(format!("expected a cursor, found {state:?}").into());
    };
    assert_eq!(cursor.row, b"0000000019", "the last order copied");
    consistent(&table)?;
    table.insert(&order(100, 1, T0, 2, T0 + DAY, "placed"))?;
    let report = table
        .backfill("orders_by_warehouse", BackfillOptions { batch_records: 10 })?
        .run(&mut |_| {})?;
    assert_eq!((report.examined, report.copied), (21, 21), "orders 20..=39 and 100");
    consistent(&table)?;
    assert_eq!(table.verify()?.layouts[3].cells, 41);
    Ok(())
}

#[test]
fn a_backfill_racing_a_writer_thread_leaves_every_layout_in_step() -> Result {
    let dir = tempfile::tempdir()?;
    let table = Arc::new(loaded(dir.path(), 300)?);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (table, stop) = (table.clone(), stop.clone());
        std::thread::spawn(move || -> std::result::Result<u64, String> {
            let mut rng = StdRng::seed_from_u64(15);
            let mut writes = 0;
            let mut next_id = 300i64;
            while !stop.load(Ordering::Relaxed) || writes < 200 {
                let id = rng.random_range(0..next_id);
                let outcome = match rng.random_range(0..4) {
                    0 => table.update(&key(id), &Record::new().with("warehouse", rng.random_range(0..5i64))),
                    1 => table.delete(&key(id)).map(|_| Default::default()),
                    2 => table.update(&key(id), &Record::new().with("status", "shipped")),
                    _ => {
                        next_id += 1;
                        let t = T0 + rng.random_range(0..100u64) * HOUR;
                        table.insert(&order(next_id, 1, t, 2, t + DAY, "placed"))
                    }
                };
                match outcome {
                    Ok(_) | Err(Error::NotFound { .. }) => writes += 1,
                    Err(e) => return Err(e.to_string()),
                }
            }
            Ok(writes)
        })
    };
    let report = table.add_layout(&by_warehouse(), BackfillOptions { batch_records: 7 }, &mut |_| {
        std::thread::yield_now()
    })?;
    stop.store(true, Ordering::Relaxed);
    let writes = writer.join().map_err(|_| "writer panicked")??;
    assert!(writes >= 200);
    assert!(report.batches >= 300 / 7);
    consistent(&table)?;
    for warehouse in 0..5 {
        let params = Params::new().eq("warehouse", warehouse);
        let path = latest_shipments(10);
        assert_eq!(
            table.query(&path, &params)?.records,
            table.filtering_scan(&path, &params)?.records
        );
    }
    Ok(())
}

/// In families with a TTL a record expires from every layout together only
/// if every copy carries the record's own time: a backfilled copy is written
/// with the time of the source cell it copies, not the time of the copy, or
/// it outlives its source (a stale entry the layout still serves).
#[test]
fn a_backfilled_copy_expires_with_its_source() -> Result {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};
    let dir = tempfile::tempdir()?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as u64;
    let ttl = cellar_engine::FamilyOptions::default().ttl(Duration::from_millis(1500));
    let written_at = now - 1000;
    {
        let options = cellar_tables::TableOptions::default()
            .family_options(ttl.clone())
            .fixed_time(written_at);
        let table = Table::create(open_store(dir.path())?, &orders_schema(), options)?;
        table.insert(&order(7, 42, written_at, 1, written_at, "placed"))?;
    }
    // Half a second before the record expires, a layout is added by the clock.
    let table = Table::open(
        open_store(dir.path())?,
        "orders",
        cellar_tables::TableOptions::default().family_options(ttl),
    )?;
    table.add_layout(&by_warehouse(), BackfillOptions::default(), &mut |_| {})?;
    assert!(table.verify()?.is_consistent());
    std::thread::sleep(Duration::from_millis(700));
    let report = table.verify()?;
    assert_eq!(report.records, 0, "the source's record has expired");
    assert!(report.is_consistent(), "{report}");
    Ok(())
}
