//! The write time stamped on output messages (`_date`, R20).
//!
//! Times are `std::time::SystemTime`, so no date library's version is part
//! of this crate's API (D60: semver hygiene); chrono only formats them.

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use std::time::{SystemTime, UNIX_EPOCH};

/// Where `_date` comes from. Injectable so tests and replays are exact.
pub trait Clock {
    /// The current time.
    fn now(&self) -> SystemTime;
}

/// The system clock (the default).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock stopped at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedClock(SystemTime);

impl FixedClock {
    /// A clock stopped at `time`.
    pub fn at(time: SystemTime) -> FixedClock {
        FixedClock(time)
    }

    /// A clock stopped at `text`, an RFC 3339 date (a year from 0000 to
    /// 9999, any offset; kept in UTC).
    ///
    /// # Errors
    ///
    /// [`Error::Date`](crate::Error::Date) when `text` is not an RFC 3339 date.
    ///
    /// ```
    /// use agent_output::{Clock, FixedClock};
    /// use std::time::{Duration, UNIX_EPOCH};
    /// let clock = FixedClock::parse("1970-01-01T01:00:01.5+01:00")?;
    /// assert_eq!(clock.now(), UNIX_EPOCH + Duration::from_millis(1500));
    /// assert_eq!(
    ///     FixedClock::parse("10000-01-01T00:00:00Z").unwrap_err().to_string(),
    ///     "\"10000-01-01T00:00:00Z\" is not RFC 3339: input contains invalid characters"
    /// );
    /// # Ok::<(), agent_output::Error>(())
    /// ```
    pub fn parse(text: &str) -> Result<FixedClock, crate::Error> {
        match DateTime::parse_from_rfc3339(text) {
            Ok(time) => Ok(FixedClock(SystemTime::from(time.with_timezone(&Utc)))),
            Err(e) => Err(crate::Error::Date {
                text: text.to_owned(),
                reason: e.to_string(),
            }),
        }
    }
}

impl Clock for FixedClock {
    fn now(&self) -> SystemTime {
        self.0
    }
}

/// RFC 3339 in UTC with a `Z` and only as many fraction digits as needed
/// (D12: _date format); a time outside the years 0000 to 9999 has no such form.
pub(crate) fn stamp(time: SystemTime) -> Result<String, crate::Error> {
    let utc = match time.duration_since(UNIX_EPOCH) {
        Ok(after) => TimeDelta::from_std(after)
            .ok()
            .and_then(|d| DateTime::UNIX_EPOCH.checked_add_signed(d)),
        Err(before) => TimeDelta::from_std(before.duration())
            .ok()
            .and_then(|d| DateTime::UNIX_EPOCH.checked_sub_signed(d)),
    };
    let text = utc.map(|t| t.to_rfc3339_opts(SecondsFormat::AutoSi, true));
    match text {
        // Years 0000–9999 are exactly the ones written with four digits.
        Some(text) if text.as_bytes().get(4) == Some(&b'-') => Ok(text),
        _ => Err(crate::Error::Date {
            text: format!("{time:?}"),
            reason: "the clock's time is outside the years 0000 to 9999".into(),
        }),
    }
}
