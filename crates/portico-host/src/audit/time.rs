//! Times as the activity log writes and reads them: RFC 3339 in UTC with microseconds
//! (`2026-05-01T12:00:00.123456Z`), microseconds since the Unix epoch inside, and the short
//! forms people type (`90d`, `10m`, `64KiB`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Microseconds since the Unix epoch (negative before it).
pub fn micros(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_micros()).map_or(i64::MIN, |m| -m),
    }
}

/// The time `us` microseconds after the Unix epoch.
pub fn from_micros(us: i64) -> SystemTime {
    if us >= 0 {
        UNIX_EPOCH + Duration::from_micros(us.unsigned_abs())
    } else {
        UNIX_EPOCH - Duration::from_micros(us.unsigned_abs())
    }
}

/// Now, in microseconds since the Unix epoch.
pub fn now_micros() -> i64 {
    micros(SystemTime::now())
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `us` as RFC 3339 in UTC with six fractional digits: `2026-05-01T12:00:00.123456Z`.
pub fn format_micros(us: i64) -> String {
    let secs = us.div_euclid(1_000_000);
    let frac = us.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{frac:06}Z", sod / 3600, sod % 3600 / 60, sod % 60);
    }
    // Every record writes two or three of these: digits by hand, not through `format!`.
    let mut out = *b"0000-00-00T00:00:00.000000Z";
    let mut put = |at: usize, width: usize, mut v: i64| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, y);
    put(5, 2, m);
    put(8, 2, d);
    put(11, 2, sod / 3600);
    put(14, 2, sod % 3600 / 60);
    put(17, 2, sod % 60);
    put(20, 6, frac);
    out.iter().map(|&b| char::from(b)).collect()
}

/// Parses RFC 3339 (`2026-05-01T12:00:00Z`, with any fraction and a `Z` or `±HH:MM` offset; a
/// space may stand for the `T`; no offset means UTC) or a date alone (`2026-05-01`, midnight
/// UTC) into microseconds since the epoch.
pub fn parse_timestamp(s: &str) -> Option<i64> {
    let s = s.trim();
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        if part.is_empty() || !part.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    let days = days_from_civil(y, mo, d);
    if b.len() == 10 {
        return Some(days * 86_400_000_000);
    }
    if !matches!(b[10], b'T' | b't' | b' ') || b.len() < 16 || b[13] != b':' {
        return None;
    }
    let (h, mi) = (num(11..13)?, num(14..16)?);
    let mut i = 16;
    let mut sec = 0;
    if b.get(i) == Some(&b':') {
        sec = num(i + 1..i + 3)?;
        i += 3;
    }
    let mut frac_us = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return None;
        }
        let digits = s.get(start..i.min(start + 6))?;
        frac_us = digits.parse::<i64>().ok()? * 10i64.pow(6 - u32::try_from(digits.len()).ok()?);
    }
    let offset_s = match s.get(i..)? {
        "" | "Z" | "z" => 0,
        rest => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let rb = rest.as_bytes();
            if rb.len() != 6 || rb[3] != b':' {
                return None;
            }
            let oh: i64 = rest.get(1..3)?.parse().ok()?;
            let om: i64 = rest.get(4..6)?.parse().ok()?;
            sign * (oh * 3600 + om * 60)
        }
    };
    if h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_s;
    Some(secs * 1_000_000 + frac_us)
}

/// Parses a duration: a number with a unit, or several (`90d`, `1h30m`, `250ms`, `2w`); units
/// `ms`, `s`, `m`, `h`, `d`, `w`. A bare number is seconds.
///
/// # Errors
/// When it is not one, saying what is expected.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let bad = || format!("`{s}` is not a duration like 90s, 10m, 2h, 7d or 1h30m");
    if t.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = t.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).map_err(|_| bad());
    }
    let mut total = Duration::ZERO;
    let mut rest = t;
    while !rest.is_empty() {
        let n_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
        let n: f64 = rest[..n_end].parse().map_err(|_| bad())?;
        rest = rest[n_end..].trim_start();
        let u_end = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
        let unit = match &rest[..u_end] {
            "ms" => 0.001,
            "s" | "sec" | "secs" => 1.0,
            "m" | "min" | "mins" => 60.0,
            "h" | "hr" | "hrs" => 3600.0,
            "d" | "day" | "days" => 86_400.0,
            "w" | "week" | "weeks" => 604_800.0,
            _ => return Err(bad()),
        };
        total += Duration::try_from_secs_f64(n * unit).map_err(|_| bad())?;
        rest = rest[u_end..].trim_start();
    }
    Ok(total)
}

/// Parses a size in bytes: `65536`, `64KiB`, `1GiB`, `10MB` (KB, MB, GB are powers of 1000;
/// KiB, MiB, GiB of 1024).
///
/// # Errors
/// When it is not one.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let bad = || format!("`{s}` is not a size like 65536, 64KiB, 10MB or 1GiB");
    let n_end = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let n: f64 = t[..n_end].parse().map_err(|_| bad())?;
    let unit: f64 = match t[n_end..].trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "ki" | "kib" => 1024.0,
        "mi" | "mib" => 1024.0 * 1024.0,
        "gi" | "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    let bytes = n * unit;
    if !(0.0..=1.8e19).contains(&bytes) {
        return Err(bad());
    }
    Ok(bytes as u64)
}

/// Parses a point in time as `portico log --since` takes it: RFC 3339, a date, or a duration
/// meaning that long before `now_us` (`10m`, `2h`, `7d`).
///
/// # Errors
/// When it is neither.
pub fn parse_when(s: &str, now_us: i64) -> Result<i64, String> {
    if let Some(t) = parse_timestamp(s) {
        return Ok(t);
    }
    match parse_duration(s) {
        Ok(d) => Ok(now_us.saturating_sub(i64::try_from(d.as_micros()).unwrap_or(i64::MAX))),
        Err(_) => {
            Err(format!("`{s}` is neither a time (2026-05-01T12:00:00Z, 2026-05-01) nor a duration ago (10m, 2h, 7d)"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_parses() {
        for us in [0, 1, 1_700_000_000_123_456, -86_400_000_001, 951_782_400_000_000] {
            assert_eq!(parse_timestamp(&format_micros(us)), Some(us), "{us}");
        }
        assert_eq!(format_micros(951_782_400_000_000), "2000-02-29T00:00:00.000000Z");
        assert_eq!(parse_timestamp("2000-02-29"), Some(951_782_400_000_000));
        assert_eq!(parse_timestamp("2000-02-29T01:00:00+01:00"), Some(951_782_400_000_000));
        assert_eq!(parse_timestamp("2000-02-29 00:00:00.5Z"), Some(951_782_400_500_000));
        assert_eq!(parse_timestamp("2000-02-29T00:00"), Some(951_782_400_000_000));
        assert_eq!(parse_timestamp("yesterday"), None);
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("90d"), Ok(Duration::from_secs(90 * 86_400)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("120"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("soon").is_err());
        assert_eq!(parse_size("64KiB"), Ok(65_536));
        assert_eq!(parse_size("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_size("12"), Ok(12));
        assert!(parse_size("lots").is_err());
        assert_eq!(parse_when("10m", 1_000_000_000), Ok(1_000_000_000 - 600_000_000));
    }
}
