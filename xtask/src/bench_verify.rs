//! `cargo xtask bench chain`: what a user's `agentctx verify` costs on
//! realistic shapes, against `sha256sum` of the same file (C2, D111:
//! verify at hashing speed).
//!
//! Each shape is written through `agentctx append` (so its lines are as
//! agentctx writes them, with the head record and checkpoints beside it)
//! into a temporary directory under `target/`:
//!
//! - `w5`: the 100,000-message W5 file (`w5 files`: its snapshot 32
//!   messages before the end);
//! - `instances`, `array`, `object`, `long`: the wide shapes of
//!   `cargo xtask bench wide` (200,000 one-write instances; one 1,000,000-
//!   integer array; one 1,000,000-key object; 100,000 writes over 1,000
//!   keys).
//!
//! Every round runs `agentctx verify --chain FILE` (row
//! `C2-verify-chain-SHAPE-vs-sha256sum`, judged), `agentctx verify FILE`
//! (row `C2-verify-fold-SHAPE-vs-sha256sum`: the log folded again, the
//! snapshot's views compared with the fold; printed, not judged) and
//! `sha256sum FILE`, each a whole process (a sample is the median of three
//! runs back to back), the order turning every round; the ratios are per
//! round. Knob: `VERIFY_ROUNDS` (11: the smallest
//! shapes take tens of milliseconds, and fewer rounds leave their spread
//! too wide to judge).

use crate::bench_cli::{knob, median, run_ok, time};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A shape's name and how its lines are written (in any spelling: they
/// are appended through agentctx).
type Writer = fn(&mut dyn Write) -> std::io::Result<()>;

const WIDE: [(&str, Writer); 4] = [
    ("instances", crate::bench_wide::instances),
    ("array", crate::bench_wide::array),
    ("object", crate::bench_wide::object),
    ("long", crate::bench_wide::long),
];

pub(crate) fn run(target: &Path) -> Result<Vec<Value>, String> {
    let bin = crate::release_dir()?.join("agentctx");
    let rounds = knob("VERIFY_ROUNDS", 11).max(1);
    let dir = tempfile::Builder::new()
        .prefix("bench-verify")
        .tempdir_in(target)
        .map_err(|e| format!("cannot make a directory under {}: {e}", target.display()))?;
    let mut shapes: Vec<(String, PathBuf)> = Vec::new();
    let args: [&std::ffi::OsStr; 3] = ["files".as_ref(), dir.path().as_os_str(), "100000".as_ref()];
    let made = crate::probe("w5", &args)?;
    let w5 = made["files"][0]["path"].as_str().unwrap_or_default();
    shapes.push(("w5".into(), PathBuf::from(w5)));
    for (name, write) in WIDE {
        let source = dir.path().join(format!("{name}.source.jsonl"));
        let mut out = std::io::BufWriter::new(
            std::fs::File::create(&source).map_err(|e| format!("cannot write {name}: {e}"))?,
        );
        write(&mut out)
            .and_then(|()| out.flush())
            .map_err(|e| format!("cannot write {name}: {e}"))?;
        drop(out);
        let path = dir.path().join(format!("{name}.jsonl"));
        std::fs::write(&path, "").map_err(|e| format!("cannot write {name}: {e}"))?;
        let file = path.display().to_string();
        run_ok(&bin, &["append", &file, &format!("@{}", source.display())])?;
        shapes.push((name.into(), path));
    }
    let mut rows = Vec::new();
    for (name, path) in &shapes {
        eprintln!("xtask: verify {name}, {rounds} rounds");
        rows.extend(measure(&bin, name, path, rounds)?);
    }
    Ok(rows)
}

/// `verify --chain`, `verify` and `sha256sum` of `path` in turns.
fn measure(bin: &Path, name: &str, path: &Path, rounds: usize) -> Result<[Value; 2], String> {
    let file = path.display().to_string();
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    // Each sample the median of three runs back to back: a run of the
    // smaller shapes is a few tens of milliseconds, and one late wake-up
    // would swing its round's ratio.
    let thrice = |bin: &Path, args: &[&str]| -> Result<u128, String> {
        let runs = [time(bin, args)?, time(bin, args)?, time(bin, args)?];
        Ok(median(runs.to_vec()) as u128)
    };
    let hashed = || thrice(bin, &["verify", "--chain", &file]);
    let folded = || thrice(bin, &["verify", &file]);
    let summed = || thrice(Path::new("sha256sum"), &[&file]);
    let mut samples: [Vec<u128>; 3] = Default::default();
    // Round 0 warms the page cache and the binary.
    for round in 0..=rounds {
        let mut taken = [0u128; 3];
        for step in 0..3 {
            let which = (round + step) % 3;
            taken[which] = match which {
                0 => hashed()?,
                1 => folded()?,
                _ => summed()?,
            };
        }
        if round > 0 {
            for (samples, taken) in samples.iter_mut().zip(taken) {
                samples.push(taken);
            }
        }
    }
    let [hashed, folded, summed] = samples;
    let row = |workload: String, ours: &[u128], what: &str| {
        let ratios: Vec<f64> = ours
            .iter()
            .zip(&summed)
            .map(|(&o, &s)| o as f64 / s as f64)
            .collect();
        json!({
            "workload": workload,
            "ours_ns": median(ours.to_vec()),
            "baseline": format!("`sha256sum` of the same {bytes}-byte file ({what}), in turns"),
            "baseline_ns": median(summed.clone()),
            "ratio": median(ours.to_vec()) / median(summed.clone()),
            "ratios": ratios,
            "rounds": rounds,
        })
    };
    Ok([
        row(
            format!("C2-verify-chain-{name}-vs-sha256sum"),
            &hashed,
            "`agentctx verify --chain FILE`",
        ),
        row(
            format!("C2-verify-fold-{name}-vs-sha256sum"),
            &folded,
            "`agentctx verify FILE`, the log folded again",
        ),
    ])
}
