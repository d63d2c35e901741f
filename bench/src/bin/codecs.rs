//! `codecs`: what compressing and decompressing one data block costs, per
//! codec, on the blocks cellar writes (see `cellar_bench::codecs`).
//!
//! ```text
//! cargo run --release -p cellar-bench --bin codecs
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    let dir = std::env::temp_dir().join(format!("cellar-codecs-{}", std::process::id()));
    let result = cellar_bench::codecs::measure(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    match result {
        Ok(figures) => {
            print!("{}", cellar_bench::codecs::render(&figures));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("codecs: {e}");
            ExitCode::FAILURE
        }
    }
}
