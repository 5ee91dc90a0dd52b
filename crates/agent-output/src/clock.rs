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

impl FixedClock {
    /// A clock stopped at `text`, an RFC 3339 date (a year from 0000 to
    /// 9999, any offset; kept in UTC).
    ///
    /// # Errors
    ///
    /// [`Error::Date`](crate::Error::Date) when `text` is not an RFC 3339 date.
    ///
    /// ```
    /// use agent_output::{Clock, FixedClock};
    /// let clock = FixedClock::parse("2026-01-02T04:04:05+01:00")?;
    /// assert_eq!(clock.now().to_rfc3339(), "2026-01-02T03:04:05+00:00");
    /// assert_eq!(
    ///     FixedClock::parse("10000-01-01T00:00:00Z").unwrap_err().to_string(),
    ///     "\"10000-01-01T00:00:00Z\" is not RFC 3339: input contains invalid characters"
    /// );
    /// # Ok::<(), agent_output::Error>(())
    /// ```
    pub fn parse(text: &str) -> Result<FixedClock, crate::Error> {
        match DateTime::parse_from_rfc3339(text) {
            Ok(time) => Ok(FixedClock(time.with_timezone(&Utc))),
            Err(e) => Err(crate::Error::Date {
                text: text.to_owned(),
                reason: e.to_string(),
            }),
        }
    }
}

impl Clock for FixedClock {
    fn now(&self) -> DateTime<Utc> {
        self.0
    }
}

/// RFC 3339 in UTC with a `Z` and only as many fraction digits as needed.
pub(crate) fn stamp(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}
