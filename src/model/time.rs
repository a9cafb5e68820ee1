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
    /// Seconds since the Unix epoch.
    pub fn from_unix(seconds: i64) -> Self {
        Timestamp(seconds)
    }

    pub fn unix(self) -> i64 {
        self.0
    }

    /// Parses any RFC 3339 time (any offset) and converts it to UTC.
    pub fn parse(text: &str) -> Option<Self> {
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

/// Parses a duration such as `45m`, `2h`, `90s`, `1d` or a bare number of seconds.
pub fn parse_duration(text: &str) -> Option<i64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: i64 = digits.parse().ok()?;
    let factor = match unit {
        "" | "s" => 1,
        "m" | "min" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return None,
    };
    n.checked_mul(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_utc_seconds() {
        let t = Timestamp::parse("2026-12-02T14:00:00.750+01:00").unwrap();
        assert_eq!(t.to_string(), "2026-12-02T13:00:00Z");
        assert_eq!(t.day(), "2026-12-02");
        assert_eq!(Timestamp::parse("yesterday"), None);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("45m"), Some(2700));
        assert_eq!(parse_duration("2h"), Some(7200));
        assert_eq!(parse_duration("30"), Some(30));
        assert_eq!(parse_duration("1d"), Some(86_400));
        assert_eq!(parse_duration("m"), None);
        assert_eq!(parse_duration("5w"), None);
    }
}
