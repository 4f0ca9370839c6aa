//! Finding when a log line was written. Log formats open their lines with a handful of
//! timestamp spellings: ISO 8601 (with log4j's `,` before the milliseconds), syslog's
//! `Jun 14 15:16:01`, Apache's `[Sun Dec 04 04:47:44 2005]`, HDFS's `081109 203615`, Spark's
//! `17/06/09 20:10:40`, Android's `03-17 16:13:38.811` and BGL's
//! `2005-06-03-15.42.50.675872`. [`find_log_time`] looks for the first of them in a line; SQL's
//! `log_time` is built on it.

use crate::codec::template::is_token;
use crate::spelling::civil_day;

use crate::timepattern::{MONTHS, WEEKDAYS};

/// Microseconds since 1970-01-01 00:00:00 (no time zone is applied) of the first timestamp in
/// `line`, trying each place a token starts (not inside `a-b`, `a.b` or `a:b`). Spellings without a year (syslog, Android) take
/// `year`; two-digit years are 20YY.
pub fn find_log_time(line: &[u8], year: i64) -> Option<i64> {
    (0..line.len())
        .filter(|&i| line[i].is_ascii_alphanumeric() && (i == 0 || !is_token(line[i - 1])))
        .find_map(|i| parse_at(&line[i..], year))
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn parse_at(s: &[u8], year: i64) -> Option<i64> {
    if s[0].is_ascii_digit() {
        iso(s)
            .or_else(|| short_ymd(s))
            .or_else(|| packed(s))
            .or_else(|| month_day(s, year))
    } else {
        syslog(s, year)
    }
}

/// Reads `n` digits at `*pos`, advancing it.
fn digits(s: &[u8], pos: &mut usize, n: usize) -> Option<i64> {
    let d = s.get(*pos..*pos + n)?;
    let v = d.iter().try_fold(0i64, |v, &c| {
        c.is_ascii_digit().then(|| v * 10 + i64::from(c - b'0'))
    })?;
    *pos += n;
    Some(v)
}

fn byte(s: &[u8], pos: &mut usize, want: &[u8]) -> Option<u8> {
    let b = *s.get(*pos)?;
    want.contains(&b).then(|| {
        *pos += 1;
        b
    })
}

/// `HH<sep>MM<sep>SS`, then optionally `.` or `,` and 1..=9 fraction digits (kept to the
/// microsecond): microseconds into the day.
fn clock(s: &[u8], pos: &mut usize, sep: u8) -> Option<i64> {
    let h = digits(s, pos, 2)?;
    byte(s, pos, &[sep])?;
    let m = digits(s, pos, 2)?;
    byte(s, pos, &[sep])?;
    let sec = digits(s, pos, 2)?;
    if h > 23 || m > 59 || sec > 60 {
        return None;
    }
    let mut micros = 0;
    if matches!(s.get(*pos), Some(b'.' | b',')) && s.get(*pos + 1).is_some_and(u8::is_ascii_digit) {
        *pos += 1;
        let mut places = 0;
        while let Some(&c) = s.get(*pos).filter(|c| c.is_ascii_digit()) {
            if places < 6 {
                micros = micros * 10 + i64::from(c - b'0');
                places += 1;
            }
            *pos += 1;
        }
        micros *= 10i64.pow(6 - places);
    }
    // The time must end its token (`12:00:00x` is not a time); a `Z` zone may close it.
    if s.get(*pos) == Some(&b'Z') {
        *pos += 1;
    }
    if s.get(*pos).is_some_and(|&c| is_word(c)) {
        return None;
    }
    Some(((h * 60 + m) * 60 + sec) * 1_000_000 + micros)
}

fn stamp(y: i64, m: i64, d: i64, micros_of_day: i64) -> Option<i64> {
    Some(civil_day(y, m, d)? * 86_400_000_000 + micros_of_day)
}

/// `YYYY-MM-DD HH:MM:SS`, with `/` or `.` between the date's parts, `T` before the time, or
/// BGL's `YYYY-MM-DD-HH.MM.SS`.
fn iso(s: &[u8]) -> Option<i64> {
    let mut p = 0;
    let y = digits(s, &mut p, 4)?;
    let sep = byte(s, &mut p, b"-/.")?;
    let m = digits(s, &mut p, 2)?;
    byte(s, &mut p, &[sep])?;
    let d = digits(s, &mut p, 2)?;
    let t = match byte(s, &mut p, b" T-")? {
        b'-' => clock(s, &mut p, b'.')?,
        _ => clock(s, &mut p, b':')?,
    };
    stamp(y, m, d, t)
}

/// Spark's `YY/MM/DD HH:MM:SS`.
fn short_ymd(s: &[u8]) -> Option<i64> {
    let mut p = 0;
    let y = digits(s, &mut p, 2)?;
    byte(s, &mut p, b"/")?;
    let m = digits(s, &mut p, 2)?;
    byte(s, &mut p, b"/")?;
    let d = digits(s, &mut p, 2)?;
    byte(s, &mut p, b" ")?;
    stamp(2000 + y, m, d, clock(s, &mut p, b':')?)
}

/// HDFS's `YYMMDD HHMMSS`.
fn packed(s: &[u8]) -> Option<i64> {
    let mut p = 0;
    let (y, m, d) = (
        digits(s, &mut p, 2)?,
        digits(s, &mut p, 2)?,
        digits(s, &mut p, 2)?,
    );
    byte(s, &mut p, b" ")?;
    let (h, mi, sec) = (
        digits(s, &mut p, 2)?,
        digits(s, &mut p, 2)?,
        digits(s, &mut p, 2)?,
    );
    if s.get(p).is_some_and(|&c| is_word(c)) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    stamp(2000 + y, m, d, ((h * 60 + mi) * 60 + sec) * 1_000_000)
}

/// Android's `MM-DD HH:MM:SS.mmm`.
fn month_day(s: &[u8], year: i64) -> Option<i64> {
    let mut p = 0;
    let m = digits(s, &mut p, 2)?;
    byte(s, &mut p, b"-")?;
    let d = digits(s, &mut p, 2)?;
    byte(s, &mut p, b" ")?;
    stamp(year, m, d, clock(s, &mut p, b':')?)
}

/// Syslog's `Mon DD HH:MM:SS` (day space-padded or not), optionally after a weekday and
/// followed by a year (Apache's `Sun Dec 04 04:47:44 2005`).
fn syslog(s: &[u8], year: i64) -> Option<i64> {
    let name = |p: usize| s.get(p..p + 3);
    let mut p = 0;
    if WEEKDAYS.iter().any(|w| name(p) == Some(&w[..])) && s.get(3) == Some(&b' ') {
        p = 4;
    }
    let m = MONTHS.iter().position(|m| name(p) == Some(&m[..]))? as i64 + 1;
    p += 3;
    byte(s, &mut p, b" ")?;
    let d = if s.get(p) == Some(&b' ') {
        p += 1;
        digits(s, &mut p, 1)?
    } else if s.get(p + 1).is_some_and(u8::is_ascii_digit) {
        digits(s, &mut p, 2)?
    } else {
        digits(s, &mut p, 1)?
    };
    byte(s, &mut p, b" ")?;
    let t = clock(s, &mut p, b':')?;
    let mut q = p;
    let y = match (byte(s, &mut q, b" "), digits(s, &mut q, 4)) {
        (Some(_), Some(y)) if !s.get(q).is_some_and(|&c| is_word(c)) => y,
        _ => year,
    };
    stamp(y, m, d, t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(y: i64, mo: i64, d: i64, h: i64, mi: i64, s: i64, us: i64) -> i64 {
        stamp(y, mo, d, ((h * 60 + mi) * 60 + s) * 1_000_000 + us).unwrap()
    }

    #[test]
    fn loghub_spellings() {
        let cases: [(&str, i64); 11] = [
            (
                "2015-10-18 18:01:47,978 INFO [main]",
                at(2015, 10, 18, 18, 1, 47, 978_000),
            ),
            (
                "2015-07-29 17:41:44,747 - INFO  [Quorum",
                at(2015, 7, 29, 17, 41, 44, 747_000),
            ),
            (
                "2024-02-29T23:59:60.1234567Z x",
                at(2024, 2, 29, 23, 59, 60, 123_456),
            ),
            (
                "Jun 14 15:16:01 combo sshd(pam_unix)[19939]:",
                at(1999, 6, 14, 15, 16, 1, 0),
            ),
            ("Jun  9 05:06:07 combo", at(1999, 6, 9, 5, 6, 7, 0)),
            (
                "[Sun Dec 04 04:47:44 2005] [notice]",
                at(2005, 12, 4, 4, 47, 44, 0),
            ),
            ("081109 203615 148 INFO dfs", at(2008, 11, 9, 20, 36, 15, 0)),
            (
                "17/06/09 20:10:40 INFO executor",
                at(2017, 6, 9, 20, 10, 40, 0),
            ),
            (
                "03-17 16:13:38.811  1702  2395 D",
                at(1999, 3, 17, 16, 13, 38, 811_000),
            ),
            (
                "- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 2005-06-03-15.42.50.675872 R02",
                at(2005, 6, 3, 15, 42, 50, 675_872),
            ),
            (
                "user 42 logged in at 2021/01/02 03:04:05",
                at(2021, 1, 2, 3, 4, 5, 0),
            ),
        ];
        for (line, want) in cases {
            assert_eq!(find_log_time(line.as_bytes(), 1999), Some(want), "{line}");
        }
    }

    #[test]
    fn lines_without_a_time_have_none() {
        for line in [
            "",
            "no time here",
            "2015-13-01 00:00:00",
            "2015-02-30 00:00:00",
            "12:00:00",
            "Jun 14 25:16:01",
            "123456 654321",
            "x2015-10-18 18:01:47",
            "2015-10-18 18:01:47x",
        ] {
            assert_eq!(find_log_time(line.as_bytes(), 1999), None, "{line}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_are_safe(line in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let _ = find_log_time(&line, 1970);
        }
    }
}
