//! Times on the command line: cell timestamps and durations.
//!
//! A cell's timestamp is a `u64`, milliseconds since the Unix epoch by
//! convention (the store's clock writes that). Arguments accept either the
//! number (`--ts 1709374500123`, what `get` prints) or an ISO 8601 date in
//! UTC or with an offset (`--ts 2024-03-02`, `2024-03-02T10:15:00Z`,
//! `2024-03-02T11:15:00.123+01:00`), which is what a person has in mind.
//! `--human` prints timestamps back as UTC dates. Durations (a family's
//! TTL, the span of `keys`' workload) are a number and a unit: `90s`,
//! `30m`, `12h`, `7d`, read by one parser, [`parse_duration`].
//!
//! Dates are converted with Howard Hinnant's days-from-civil algorithms: no
//! time zone database is needed for UTC and fixed offsets.

use std::time::Duration;

use crate::Error;

/// Milliseconds in a day.
const DAY_MS: i64 = 86_400_000;

/// Reads a timestamp: milliseconds since the epoch, or an ISO 8601 date.
pub fn parse_timestamp(text: &str) -> Result<u64, Error> {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t
            .parse()
            .map_err(|_| format!("timestamp {text:?} is too large for 64 bits").into());
    }
    let ms = parse_date(t).ok_or_else(|| {
        format!(
            "timestamp {text:?} is neither milliseconds since 1970 nor an ISO 8601 date \
             (2024-03-02, 2024-03-02T10:15:00Z, 2024-03-02T11:15:00.123+01:00)"
        )
    })?;
    u64::try_from(ms).map_err(|_| format!("timestamp {text:?} is before 1970").into())
}

/// [`parse_timestamp`] as clap's value parsers want it.
pub fn timestamp_arg(text: &str) -> Result<u64, String> {
    parse_timestamp(text).map_err(|e| e.to_string())
}

/// [`parse_duration`] as clap's value parsers want it.
pub fn duration_arg(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

/// `YYYY-MM-DD`, optionally followed by `T` (or a space) and
/// `HH:MM[:SS[.fff]]` and a zone: `Z`, `+HH:MM`, `-HH:MM` or `+HHMM`.
/// A date and time without a zone are taken as UTC.
fn parse_date(t: &str) -> Option<i64> {
    let cut = t.len().min(10);
    if !t.is_char_boundary(cut) {
        return None;
    }
    let (date, rest) = t.split_at(cut);
    let mut parts = date.split('-');
    let year: i64 = number(parts.next()?, 4)?;
    let month: i64 = number(parts.next()?, 2)?;
    let day: i64 = number(parts.next()?, 2)?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let mut ms = days_from_civil(year, month, day) * DAY_MS;
    if rest.is_empty() {
        return Some(ms);
    }
    let rest = rest.strip_prefix('T').or_else(|| rest.strip_prefix(' '))?;
    let zone_at = rest.find(['Z', '+', '-']).unwrap_or(rest.len());
    let (clock, zone) = rest.split_at(zone_at);
    let (hms, fraction) = match clock.split_once('.') {
        Some((hms, f)) => (hms, Some(f)),
        None => (clock, None),
    };
    let mut fields = hms.split(':');
    let hour: i64 = number(fields.next()?, 2)?;
    let minute: i64 = number(fields.next()?, 2)?;
    let second: i64 = fields.next().map_or(Some(0), |s| number(s, 2))?;
    if fields.next().is_some() || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    ms += ((hour * 60 + minute) * 60 + second) * 1000;
    if let Some(f) = fraction {
        if f.is_empty() || f.len() > 3 || !f.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let padded = format!("{f:0<3}");
        ms += padded.parse::<i64>().ok()?;
    }
    ms -= match zone {
        "" | "Z" => 0,
        _ => offset_ms(zone)?,
    };
    Some(ms)
}

/// `+HH:MM`, `-HH:MM` or `+HHMM` as milliseconds east of UTC.
fn offset_ms(zone: &str) -> Option<i64> {
    let (sign, digits) = match zone.split_at(1) {
        ("+", d) => (1, d),
        ("-", d) => (-1, d),
        _ => return None,
    };
    let digits = digits.replace(':', "");
    if digits.len() != 4 {
        return None;
    }
    let hours: i64 = number(digits.get(..2)?, 2)?;
    let minutes: i64 = number(digits.get(2..)?, 2)?;
    if hours > 23 || minutes > 59 {
        return None;
    }
    Some(sign * (hours * 60 + minutes) * 60_000)
}

/// Exactly `width` ASCII digits.
fn number(s: &str, width: usize) -> Option<i64> {
    if s.len() != width || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    // Shift the year to start in March, so that the leap day ends it.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Formats milliseconds since the epoch as an ISO 8601 UTC date such as
/// `2024-03-02T10:15:00.000Z`.
pub fn utc_date(ms: u64) -> String {
    let secs = ms / 1000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        ms % 1000
    )
}

/// The inverse of [`days_from_civil`], for days on or after 1970-01-01.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Shift the epoch to 0000-03-01 so that leap days fall at the end of a year.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// A duration as a number and a unit: `500ms`, `90s`, `30m`, `12h`, `7d`.
/// A bare number is refused rather than read in some unit (`--ttl 7` could
/// mean days as well as milliseconds), and so are zero and a duration past
/// 64 bits of milliseconds.
pub fn parse_duration(text: &str) -> Result<Duration, Error> {
    let t = text.trim();
    let bad = || format!("duration {text:?}: write a number and a unit, as 90s, 30m, 12h or 7d");
    let split = t.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() {
        return Err(bad().into());
    }
    let unit_ms: u64 = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(bad().into()),
    };
    let too_large = || format!("duration {text:?} is over 64 bits of milliseconds");
    // Only digits: parsing fails only past u64.
    let n: u64 = digits.parse().map_err(|_| too_large())?;
    let ms = n.checked_mul(unit_ms).ok_or_else(too_large)?;
    if ms == 0 {
        return Err(format!("duration {text:?} is zero").into());
    }
    Ok(Duration::from_millis(ms))
}

/// A duration as the shortest exact `parse_duration` text: `7d`, `90s`.
pub fn duration_text(d: Duration) -> String {
    let ms = d.as_millis();
    for (unit, size) in [("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)] {
        if ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_print_as_utc() {
        assert_eq!(utc_date(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc_date(1_709_374_500_123), "2024-03-02T10:15:00.123Z");
    }

    #[test]
    fn timestamps_read_as_milliseconds_or_iso_8601() -> Result<(), Error> {
        assert_eq!(parse_timestamp("1709374500123")?, 1_709_374_500_123);
        assert_eq!(parse_timestamp("2024-03-02T10:15:00.123Z")?, 1_709_374_500_123);
        assert_eq!(parse_timestamp("2024-03-02T11:15:00.123+01:00")?, 1_709_374_500_123);
        assert_eq!(parse_timestamp("2024-03-02 05:15:00.123-0500")?, 1_709_374_500_123);
        assert_eq!(parse_timestamp("2024-03-02T10:15")?, 1_709_374_500_000);
        assert_eq!(parse_timestamp("2024-03-02T10:15:00.5Z")?, 1_709_374_500_500);
        assert_eq!(parse_timestamp("2024-06-01")?, 1_717_200_000_000);
        assert_eq!(parse_timestamp("1970-01-01")?, 0);
        assert_eq!(parse_timestamp("2000-02-29")?, 951_782_400_000);
        Ok(())
    }

    #[test]
    fn every_printed_date_reads_back() -> Result<(), Error> {
        for ms in [0, 1, 951_782_400_000, 1_709_374_500_123, 4_102_444_799_999] {
            assert_eq!(parse_timestamp(&utc_date(ms))?, ms);
        }
        Ok(())
    }

    #[test]
    fn impossible_dates_are_errors() {
        for bad in [
            "2023-02-29",
            "2024-13-01",
            "2024-03-02T24:00Z",
            "2024-03-02T10:15:00.1234Z",
            "2024-3-2",
            "1969-12-31",
            "yesterday",
            "",
            "99999999999999999999",
            "2024-03-02T10:15+1",
        ] {
            assert!(parse_timestamp(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_have_a_unit() -> Result<(), Error> {
        assert_eq!(parse_duration("7d")?, Duration::from_secs(7 * 86_400));
        assert_eq!(parse_duration("90s")?, Duration::from_secs(90));
        assert_eq!(parse_duration("250ms")?, Duration::from_millis(250));
        assert!(parse_duration("7").is_err());
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("3w").is_err());
        assert_eq!(duration_text(Duration::from_secs(7 * 86_400)), "7d");
        assert_eq!(duration_text(Duration::from_secs(90)), "90s");
        assert_eq!(duration_text(Duration::from_millis(1500)), "1500ms");
        Ok(())
    }

    /// A number and a unit too large for 64 bits of milliseconds was told
    /// to "write a number and a unit", which it had.
    #[test]
    fn a_duration_past_64_bits_of_milliseconds_says_so() {
        for text in ["213503982335d", "99999999999999999999s"] {
            assert_eq!(
                parse_duration(text).err().map(|e| e.to_string()),
                Some(format!("duration {text:?} is over 64 bits of milliseconds")),
            );
        }
        assert!(
            parse_duration("213503982334d").is_ok(),
            "the largest whole number of days"
        );
        assert_eq!(
            parse_duration("d").err().map(|e| e.to_string()),
            Some("duration \"d\": write a number and a unit, as 90s, 30m, 12h or 7d".to_string())
        );
    }
}
