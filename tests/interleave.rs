//! Ratios from interleaved runs: ours and a baseline take turns in
//! short batches, round after round, and every round gives one ratio.
//!
//! Measured in separate windows (criterion runs each benchmark on its
//! own for seconds), a ratio divides two numbers taken under different
//! loads; on a shared machine the same code gave W2 1.27 in one run and
//! 2.18 in another. Here each round times a batch of ours and a batch of
//! the baseline back to back (about [`BATCH`] each), so whatever load the
//! machine has in that fraction of a second weighs on both, and the
//! round's ratio is nearly free of it; rounds whose load changed midway
//! land in the tails, which the median ignores. Which side goes first
//! alternates (AB, BA, AB, …) so neither always runs in the other's wake
//! (caches, CPU frequency). The caller reports the per-round ratios;
//! `cargo xtask bench` turns them into a median and a spread and says
//! when the spread is too wide to judge (decision D51).

use agent_core::{json, json::Value};
use std::time::{Duration, Instant};

/// About how long one side's batch runs in a round: short enough that the
/// machine's load seldom changes within a round, long enough that timer
/// and loop overhead vanish. One iteration when an iteration takes longer.
pub const BATCH: Duration = Duration::from_millis(50);

/// One side's per-iteration times, one number per round (ns).
#[derive(Debug, Default, Clone)]
pub struct Side {
    /// Mean time of one iteration in each round's batch.
    pub per_round: Vec<f64>,
    /// Iterations in each batch.
    pub batch: usize,
}

/// Times `f` once, dropping its result inside the timing (as criterion's
/// `iter` does): what it took.
pub fn timed<T>(f: impl FnOnce() -> T) -> Duration {
    let started = Instant::now();
    drop(std::hint::black_box(f()));
    started.elapsed()
}

/// Times `f` once, dropping its result after the timing (as criterion's
/// `iter_batched` does): for a result that outlives its making.
pub fn timed_before_drop<T>(f: impl FnOnce() -> T) -> Duration {
    let started = Instant::now();
    let out = std::hint::black_box(f());
    let took = started.elapsed();
    drop(out);
    took
}

/// How many iterations of something taking `one` fill a [`BATCH`].
fn batch_for(one: Duration) -> usize {
    let one = one.as_nanos().max(1);
    usize::try_from(BATCH.as_nanos() / one)
        .unwrap_or(usize::MAX)
        .max(1)
}

/// Runs `ours` and `base` in turns for `rounds` rounds after one warm-up
/// iteration each (which also sizes the batches). Each closure runs one
/// iteration and returns the time it counts, so set-up it does inside
/// (say, cloning the input a write consumes) can stay out of the timing.
pub fn interleave(
    rounds: usize,
    mut ours: impl FnMut() -> Duration,
    mut base: impl FnMut() -> Duration,
) -> (Side, Side) {
    let mut a = Side {
        batch: batch_for(ours()),
        ..Side::default()
    };
    let mut b = Side {
        batch: batch_for(base()),
        ..Side::default()
    };
    for round in 0..rounds {
        for first in [round % 2 == 0, round % 2 != 0] {
            let (side, run): (&mut Side, &mut dyn FnMut() -> Duration) = if first {
                (&mut a, &mut ours)
            } else {
                (&mut b, &mut base)
            };
            let total: Duration = (0..side.batch).map(|_| run()).sum();
            side.per_round
                .push(total.as_nanos() as f64 / side.batch as f64);
        }
    }
    (a, b)
}

/// Groups samples taken one of each in turns (`ours[i]` beside
/// `base[i]`) into rounds of `per_round` pairs: each round's ratio is the
/// median of its `ours` over the median of its `base`, so one stalled
/// `fsync` moves a round's ratio no more than any other sample does.
pub fn rounds_of_pairs(ours: &[u128], base: &[u128], per_round: usize) -> (Side, Side) {
    let per_round = per_round.max(1);
    let mut a = Side {
        batch: per_round,
        ..Side::default()
    };
    let mut b = a.clone();
    for (x, y) in ours.chunks(per_round).zip(base.chunks(per_round)) {
        a.per_round
            .push(median(x.iter().map(|&n| n as f64).collect()));
        b.per_round
            .push(median(y.iter().map(|&n| n as f64).collect()));
    }
    (a, b)
}

/// The median of `samples` (the upper middle one of an even count), 0 for none.
pub fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

/// The per-round ratios ours ÷ baseline.
pub fn ratios(ours: &Side, base: &Side) -> Vec<f64> {
    ours.per_round
        .iter()
        .zip(&base.per_round)
        .map(|(o, b)| o / b)
        .collect()
}

/// A summary row: the medians of each side's per-iteration times (for
/// orientation), the per-round ratios ours ÷ baseline (what
/// `cargo xtask bench` judges), and how the rounds were run.
pub fn row(workload: &str, baseline: &str, ours: &Side, base: &Side) -> Value {
    let ratios = ratios(ours, base);
    json!({
        "workload": workload,
        "ours_ns": median(ours.per_round.clone()),
        "baseline": baseline,
        "baseline_ns": median(base.per_round.clone()),
        "ratio": median(ratios.clone()),
        "ratios": ratios,
        "rounds": ratios.len(),
        "batch": [ours.batch, base.batch],
        "method": "interleaved",
    })
}
