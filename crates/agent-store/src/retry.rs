//! The one retry loop for compare-and-append: attempt, and after a
//! conflict wait a little and attempt again, up to [`MAX_ATTEMPTS`] times.
//! [`Store::commit`](crate::Store::commit), [`Store::commit_with`](crate::Store::commit_with)
//! and the PostgreSQL store's commit all retry through it, so they give up
//! alike.

use crate::{Error, MAX_ATTEMPTS, Result};

/// Runs `attempt` until it returns
/// anything but [`Error::Conflict`], backing off after each conflict; after
/// [`MAX_ATTEMPTS`] conflicts, [`Error::Contended`] naming `name`.
pub(crate) fn retry_on_conflict<T>(
    name: &str,
    mut attempt: impl FnMut() -> Result<T>,
) -> Result<T> {
    for n in 0..MAX_ATTEMPTS {
        match attempt() {
            Err(Error::Conflict { .. }) => backoff(n),
            other => return other,
        }
    }
    Err(Error::Contended {
        name: name.to_owned(),
        attempts: MAX_ATTEMPTS,
    })
}

/// Waits a little longer after each conflict, a random part of a doubling
/// limit (50 µs, 100 µs, … up to about 51 ms), so writers that keep
/// colliding spread out instead of colliding again in step.
fn backoff(attempt: usize) {
    let limit = 50u64 << attempt.min(10);
    std::thread::sleep(std::time::Duration::from_micros(jitter(limit)));
}

/// A number in `limit/2 ..= limit`, different per thread and call: the low
/// bits of the clock mixed with the thread's id (no randomness is needed
/// beyond writers not agreeing).
fn jitter(limit: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(nanos);
    hasher.write(format!("{:?}", std::thread::current().id()).as_bytes());
    limit / 2 + hasher.finish() % (limit / 2 + 1)
}
