//! Rough timing probe (not a benchmark): fill and read 1M keys.
use cellar::{FamilyOptions, RowRange, Store, StoreOptions};
use std::time::Instant;
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir()?;
    let store = Store::open(
        dir.path(),
        StoreOptions::default().family_with("d", FamilyOptions::default()),
    )?;
    let value = vec![b'x'; 100];
    let t = Instant::now();
    for i in 0..n {
        store.put("d", format!("{i:016}"), "", &value)?;
    }
    println!("fillseq {:.0} ops/s", n as f64 / t.elapsed().as_secs_f64());
    store.flush()?;
    store.wait_for_background_work()?;
    let t = Instant::now();
    let mut x = 12345u64;
    for _ in 0..n / 5 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let k = (x >> 33) % n;
        store.get("d", format!("{k:016}"), "")?;
    }
    println!("readrandom {:.0} ops/s", (n / 5) as f64 / t.elapsed().as_secs_f64());
    let t = Instant::now();
    let c = store.scan("d", &RowRange::all())?.count();
    println!("readseq {:.0} ops/s ({c})", c as f64 / t.elapsed().as_secs_f64());
    Ok(())
}
