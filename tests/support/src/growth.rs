//! Growth, not speed: two sizes ten times apart, timed in the same run,
//! compared as a ratio — never an absolute time. A linear path makes the
//! ratio about 10, a quadratic one about 100; the bound sits between.

use std::time::{Duration, Instant};

/// The ratio above which ten times the work is not linear.
pub const BOUND: f64 = 30.0;

/// The fastest of three runs of `f` (noise only ever adds time).
///
/// ```
/// let t = test_support::growth::fastest(|| { std::hint::black_box(1 + 1); });
/// assert!(t < std::time::Duration::from_secs(1));
/// ```
pub fn fastest(f: impl Fn()) -> Duration {
    (0..3)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// Fails unless ten times `what` took under [`BOUND`] times the time.
///
/// ```
/// use std::time::Duration;
/// test_support::growth::assert_linear("the log", Duration::from_millis(10), Duration::from_millis(120));
/// let quadratic = std::panic::catch_unwind(|| {
///     test_support::growth::assert_linear("the log", Duration::from_millis(10), Duration::from_millis(1000))
/// });
/// assert!(quadratic.is_err());
/// ```
pub fn assert_linear(what: &str, small: Duration, large: Duration) {
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-9);
    assert!(
        ratio < BOUND,
        "10× {what} took {ratio:.1}× the time ({small:?} → {large:?}): not linear"
    );
}
