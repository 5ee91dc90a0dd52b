//! How long a server asks a client to wait before trying again:
//! `Retry-After` as seconds or as an HTTP-date (RFC 9110), or OpenAI's
//! `retry-after-ms`.

use std::time::Duration;

/// `Retry-After` in seconds or as an HTTP-date (RFC 9110 §10.2.3; a date
/// passed asks for no wait), or `retry-after-ms`, which OpenAI sends.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    retry_after_at(headers, std::time::SystemTime::now())
}

/// [`retry_after`] as of `now`.
fn retry_after_at(
    headers: &reqwest::header::HeaderMap,
    now: std::time::SystemTime,
) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = text("retry-after")?.trim();
    match value.parse::<f64>() {
        Ok(seconds) => Duration::try_from_secs_f64(seconds).ok(),
        Err(_) => http_date(value).map(|at| at.duration_since(now).unwrap_or(Duration::ZERO)),
    }
}

/// An HTTP-date: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, what RFC
/// 9110 has senders write) read without checking its weekday, which only
/// repeats the date (servers get it wrong); else the obsolete forms.
fn http_date(value: &str) -> Option<std::time::SystemTime> {
    imf_fixdate(value).or_else(|| httpdate::parse_http_date(value).ok())
}

/// `Www, DD Mon YYYY HH:MM:SS GMT`, the weekday not checked.
fn imf_fixdate(value: &str) -> Option<std::time::SystemTime> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (_, rest) = value.split_once(", ")?;
    let fields: Vec<&str> = rest.split(' ').collect();
    let [day, month, year, time, "GMT"] = fields.as_slice() else {
        return None;
    };
    let number = |text: &str, digits: usize| {
        (text.len() == digits && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| text.parse::<i64>().ok())
            .flatten()
    };
    let (day, year) = (number(day, 2)?, number(year, 4)?);
    let month = i64::try_from(MONTHS.iter().position(|m| m == month)? + 1).ok()?;
    let clock: Vec<&str> = time.split(':').collect();
    let [h, m, s] = clock.as_slice() else {
        return None;
    };
    let (h, m, s) = (number(h, 2)?, number(m, 2)?, number(s, 2)?);
    if !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 || year < 1970 {
        return None;
    }
    // Days from 1970-01-01 to the date (Howard Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = u64::try_from(days * 86_400 + h * 3_600 + m * 60 + s).ok()?;
    std::time::UNIX_EPOCH.checked_add(Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r41_retry_after_is_read_as_seconds_or_as_an_http_date() {
        use reqwest::header::{HeaderMap, HeaderValue};
        let now = httpdate::parse_http_date("Sun, 29 Nov 2026 00:00:00 GMT").unwrap();
        let asked = |name: &'static str, value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(name, HeaderValue::from_static(value));
            retry_after_at(&headers, now)
        };
        assert_eq!(asked("retry-after", "7"), Some(Duration::from_secs(7)));
        assert_eq!(
            asked("retry-after", "Sun, 29 Nov 2026 00:00:30 GMT"),
            Some(Duration::from_secs(30))
        );
        // Far ahead: as long as it says (the cap and the timeout then
        // decide); the weekday, here wrong (31 Dec 2099 is a Thursday), is
        // not checked.
        assert_eq!(
            asked("retry-after", "Fri, 31 Dec 2099 23:59:59 GMT"),
            Some(Duration::from_secs(4_102_444_799 - 1_795_910_400))
        );
        assert_eq!(
            asked("retry-after", "Sunday, 29-Nov-26 00:01:00 GMT"),
            Some(Duration::from_secs(60)),
            "the obsolete RFC 850 form"
        );
        assert_eq!(asked("retry-after", "Sun, 29 Foo 2026 00:00:00 GMT"), None);
        assert_eq!(
            asked("retry-after", "Sat, 28 Nov 2026 23:00:00 GMT"),
            Some(Duration::ZERO),
            "a date passed asks for no wait"
        );
        assert_eq!(asked("retry-after", "soon"), None);
        assert_eq!(
            asked("retry-after-ms", "250"),
            Some(Duration::from_millis(250))
        );
    }

    proptest::proptest! {
        #[test]
        fn r41_an_imf_fixdate_reads_as_the_time_it_names(seconds in 0u64..8_000_000_000) {
            let at = std::time::UNIX_EPOCH + Duration::from_secs(seconds);
            proptest::prop_assert_eq!(imf_fixdate(&httpdate::fmt_http_date(at)), Some(at));
        }
    }
}
