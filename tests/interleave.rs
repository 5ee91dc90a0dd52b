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
//! land in the tails, which the median ignores. A round runs ours, the
//! baseline twice, ours again (A B B A), so each batch follows one of its
//! own side and one of the other (caches, CPU frequency, the allocator's
//! free memory). The caller reports the per-round ratios;
//! `cargo xtask bench` turns them into a median and a spread and says
//! when the spread is too wide to judge (D51: interleaved ratios).

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
///
/// A round runs four batches, ours, the baseline, the baseline, ours:
/// round after round (A B B A A B B A …) every batch follows one of its
/// own side and one of the other, so what one side leaves behind (caches,
/// the allocator's free memory) weighs on both alike. With one batch each
/// and the order turning every round, W3's rounds alternated between
/// about 0.5 and 1.6 with the order, and their median moved with it.
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
    for _ in 0..rounds {
        let (mut ours_took, mut base_took) = (Duration::ZERO, Duration::ZERO);
        for is_ours in [true, false, false, true] {
            if is_ours {
                ours_took += (0..a.batch).map(|_| ours()).sum::<Duration>();
            } else {
                base_took += (0..b.batch).map(|_| base()).sum::<Duration>();
            }
        }
        a.per_round
            .push(ours_took.as_nanos() as f64 / (2 * a.batch) as f64);
        b.per_round
            .push(base_took.as_nanos() as f64 / (2 * b.batch) as f64);
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
