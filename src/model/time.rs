//! Timestamps as the state branch stores them: RFC 3339, UTC, whole seconds.
//!
//! The model never reads a clock; callers pass `now` in (see `LOOPX_NOW`).

use std::fmt;

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A point in time, truncated to whole seconds, always UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The last time the state holds, 9999-12-31T23:59:59Z: RFC 3339 has
    /// four-digit years, and a later time could not be read back.
    pub const MAX: Timestamp = Timestamp(253_402_300_799);

    /// Seconds since the Unix epoch.
    pub fn from_unix(seconds: i64) -> Self {
        Timestamp(seconds)
    }

    pub fn unix(self) -> i64 {
        self.0
    }

    /// Parses any RFC 3339 time (any offset) and converts it to UTC.
    pub fn parse(text: &str) -> Option<Self> {
        if let Some(t) = parse_canonical(text.as_bytes()) {
            return Some(Timestamp(t));
        }
        DateTime::parse_from_rfc3339(text.trim())
            .ok()
            .map(|t| Timestamp(t.with_timezone(&Utc).timestamp()))
    }

    pub fn plus_seconds(self, seconds: i64) -> Self {
        Timestamp(self.0.saturating_add(seconds))
    }

    /// Seconds from `self` until `later` (negative when `later` is earlier).
    pub fn seconds_until(self, later: Timestamp) -> i64 {
        later.0 - self.0
    }

    /// The calendar day in UTC, `yyyy-mm-dd` (used to shard run records).
    pub fn day(self) -> String {
        self.datetime().format("%Y-%m-%d").to_string()
    }

    fn datetime(self) -> DateTime<Utc> {
        Utc.timestamp_opt(self.0, 0)
            .single()
            .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.datetime().to_rfc3339_opts(SecondsFormat::Secs, true))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Timestamp::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("`{text}` is not an RFC 3339 time")))
    }
}

/// The fast path for the form we write, `YYYY-MM-DDTHH:MM:SSZ` (the state
/// holds thousands of them); anything else goes through chrono.
fn parse_canonical(b: &[u8]) -> Option<i64> {
    if b.len() != 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'Z'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        b[r].iter().try_fold(0i64, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
        })
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let days_in_month = [
        31,
        if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) {
            29
        } else {
            28
        },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&mo)
        || d < 1
        || d > days_in_month[(mo - 1) as usize]
        || h > 23
        || mi > 59
        || s > 59
    {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + mi * 60 + s)
}

/// Parses a duration such as `45m`, `2h`, `90s`, `1d`, `1w`, parts such as
/// `1h30m`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Option<i64> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse().ok();
    }
    // Parts such as `1h30m` or `1d12h`: each a number and its unit.
    let mut rest = text;
    let mut total: i64 = 0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let split = rest.find(|c: char| !c.is_ascii_digit())?;
        let (digits, tail) = rest.split_at(split);
        let n: i64 = digits.parse().ok()?;
        let end = tail
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(end);
        let factor = match unit {
            "s" => 1,
            "m" | "min" => 60,
            "h" => 3600,
            "d" => 86_400,
            "w" => 7 * 86_400,
            _ => return None,
        };
        total = total.checked_add(n.checked_mul(factor)?)?;
        rest = next;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_have_parts() {
        assert_eq!(parse_duration("90"), Some(90));
        assert_eq!(parse_duration("1h30m"), Some(5400));
        assert_eq!(parse_duration("1d12h"), Some(129_600));
        assert_eq!(parse_duration("1w"), Some(604_800));
        assert_eq!(parse_duration("2min"), Some(120));
        for bad in ["", "h", "1x", "1h30", "-1h", "1.5h", "1h 30m"] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn parses_and_prints_utc_seconds() {
        let t = Timestamp::parse("2026-12-02T14:00:00.750+01:00").unwrap();
        assert_eq!(t.to_string(), "2026-12-02T13:00:00Z");
        assert_eq!(t.day(), "2026-12-02");
        assert_eq!(Timestamp::parse("yesterday"), None);
    }

    #[test]
    fn the_fast_path_agrees_with_chrono() {
        for text in [
            "1970-01-01T00:00:00Z",
            "2000-02-29T23:59:59Z",
            "2026-12-02T10:00:00Z",
            "2100-03-01T00:00:00Z",
            "1969-12-31T23:59:59Z",
        ] {
            let chrono = DateTime::parse_from_rfc3339(text).unwrap().timestamp();
            assert_eq!(parse_canonical(text.as_bytes()), Some(chrono), "{text}");
        }
        assert_eq!(parse_canonical(b"2026-02-30T00:00:00Z"), None);
        assert_eq!(parse_canonical(b"2026-12-02T10:00:00+01:00"), None);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("45m"), Some(2700));
        assert_eq!(parse_duration("2h"), Some(7200));
        assert_eq!(parse_duration("30"), Some(30));
        assert_eq!(parse_duration("1d"), Some(86_400));
        assert_eq!(parse_duration("m"), None);
        assert_eq!(parse_duration("5w"), Some(3_024_000));
        assert_eq!(parse_duration("5y"), None);
    }
}
