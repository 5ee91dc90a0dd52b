//! The write time stamped on output messages (`_date`, R20).

use chrono::{DateTime, SecondsFormat, Utc};

/// Where `_date` comes from. Injectable so tests and replays are exact.
pub trait Clock {
    /// The current time.
    fn now(&self) -> DateTime<Utc>;
}

/// The system clock (the default).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock stopped at one instant.
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub DateTime<Utc>);

impl Clock for FixedClock {
    fn now(&self) -> DateTime<Utc> {
        self.0
    }
}

/// RFC 3339 in UTC with a `Z` and only as many fraction digits as needed.
pub(crate) fn stamp(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}
