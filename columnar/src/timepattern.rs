//! Timestamps spelled as a log writes them: a [`TimePattern`] is a short program of elements
//! (year, month number or name, day zero- or space-padded, weekday, hour, minute, second,
//! fraction digits, epoch digits) and literal bytes, learned from a line by its structure
//! ([`TimePattern::learn`]). A pattern reads a spelling to a number of units of
//! `10^-places` seconds since 1970-01-01 00:00:00 (the wall time as written: no zone is
//! applied) and spells that number back to the same bytes: [`TimePattern::read`] accepts only
//! the one spelling [`TimePattern::spell`] gives, so a log's time column rebuilds exactly.
//! Spellings without a year take the pattern's assumed year (see [`TimePattern::year`]).

use crate::spelling::{civil_day, civil_from_days, put_digits};

/// Month names as logs spell them.
pub(crate) const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// Weekday names, Monday first.
pub(crate) const WEEKDAYS: [&[u8; 3]; 7] = [b"Mon", b"Tue", b"Wed", b"Thu", b"Fri", b"Sat", b"Sun"];

/// The current year (UTC), assumed for spellings without one where nothing better is known.
pub fn this_year() -> i16 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    year_of(secs)
}

/// The year (UTC) of `secs` since 1970-01-01 00:00:00.
pub fn year_of(secs: i64) -> i16 {
    civil_from_days(secs.div_euclid(86400)).0.clamp(0, 9999) as i16
}

/// Most elements (literal bytes included) of a pattern.
pub const MAX_ELEMENTS: usize = 28;

/// Most fraction digits (microseconds).
pub const MAX_PLACES: u8 = 6;

// Element codes: below 0x80 a literal byte; these above.
const YEAR4: u8 = 0x80;
/// Two-digit year: 70..=99 are 19YY, 00..=69 are 20YY.
const YEAR2: u8 = 0x81;
const MONTH2: u8 = 0x82;
/// `Jan` .. `Dec`.
const MONTH_NAME: u8 = 0x83;
const DAY2: u8 = 0x84;
/// Day padded to two with a space (` 9`, `14`).
const DAY_SPACE: u8 = 0x85;
/// Day without padding (`9`, `14`).
const DAY1: u8 = 0x86;
/// `Mon` .. `Sun`, checked against the date.
const WEEKDAY: u8 = 0x87;
const HOUR2: u8 = 0x88;
const MINUTE2: u8 = 0x89;
const SECOND2: u8 = 0x8a;
/// 0x91..=0x96: that many fraction digits.
const FRACTION: u8 = 0x90;
/// 0xa0, 0xa3, 0xa6: epoch digits (no leading zero) in units of 10^-0, 10^-3, 10^-6 s.
const EPOCH: u8 = 0xa0;

/// A timestamp spelling: elements, and the year assumed when none is spelled.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct TimePattern {
    elements: [u8; MAX_ELEMENTS],
    len: u8,
    /// The year of spellings that have none.
    pub year: i16,
}

impl std::fmt::Debug for TimePattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TimePattern({:?}, year {})", self.describe(), self.year)
    }
}

/// Whether `c` may continue a token (a pattern must end where its token does).
fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

impl TimePattern {
    fn new(elements: &[u8], year: i16) -> Option<Self> {
        (elements.len() <= MAX_ELEMENTS).then(|| {
            let mut e = [0; MAX_ELEMENTS];
            e[..elements.len()].copy_from_slice(elements);
            TimePattern {
                elements: e,
                len: elements.len() as u8,
                year,
            }
        })
    }

    pub fn elements(&self) -> &[u8] {
        &self.elements[..usize::from(self.len)]
    }

    /// Fraction digits of the stored units (seconds are 0).
    pub fn places(&self) -> u8 {
        self.elements()
            .iter()
            .find_map(|&e| match e {
                0x91..=0x96 => Some(e - FRACTION),
                0xa3 | 0xa6 => Some(e - EPOCH),
                _ => None,
            })
            .unwrap_or(0)
    }

    fn is_epoch(&self) -> bool {
        self.elements()
            .iter()
            .any(|e| (EPOCH..EPOCH + 7).contains(e))
    }

    /// Whether the spelling is a calendar date and time (not epoch digits).
    pub fn has_calendar(&self) -> bool {
        !self.is_epoch()
    }

    /// Whether the spelling has a year (else values are in [`TimePattern::year`]).
    pub fn has_year(&self) -> bool {
        self.is_epoch() || self.elements().iter().any(|&e| e == YEAR4 || e == YEAR2)
    }

    /// The pattern with `year` assumed where no year is spelled.
    pub fn with_year(mut self, year: i16) -> Self {
        self.year = year;
        self
    }

    /// A strftime-like description (`%b %e %H:%M:%S`), for people.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        for &e in self.elements() {
            match e {
                0..=0x7f if e == b'%' => s.push_str("%%"),
                0..=0x7f => s.push(char::from(e)),
                YEAR4 => s.push_str("%Y"),
                YEAR2 => s.push_str("%y"),
                MONTH2 => s.push_str("%m"),
                MONTH_NAME => s.push_str("%b"),
                DAY2 => s.push_str("%d"),
                DAY_SPACE => s.push_str("%e"),
                DAY1 => s.push_str("%-d"),
                WEEKDAY => s.push_str("%a"),
                HOUR2 => s.push_str("%H"),
                MINUTE2 => s.push_str("%M"),
                SECOND2 => s.push_str("%S"),
                0x91..=0x96 => s.push_str(&format!("%{}f", e - FRACTION)),
                EPOCH => s.push_str("%s"),
                0xa3 => s.push_str("%s(ms)"),
                0xa6 => s.push_str("%s(us)"),
                _ => s.push('?'),
            }
        }
        s
    }

    /// Stored form: the year (2 bytes, little-endian), the element count, the elements.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.year.to_le_bytes());
        out.push(self.len);
        out.extend_from_slice(self.elements());
    }

    /// Reads [`TimePattern::encode`]'s form; `None` for a form no pattern has.
    pub fn decode(c: &mut crate::wire::Cursor<'_>) -> crate::error::Result<Self> {
        let year = i16::from_le_bytes(c.bytes(2)?.try_into().expect("2 bytes"));
        let len = usize::from(c.u8()?);
        let elements = c.bytes(len.min(c.remaining()))?;
        let valid = len <= MAX_ELEMENTS
            && elements.len() == len
            && elements.iter().all(|&e| {
                e < 0x80
                    || (YEAR4..=SECOND2).contains(&e)
                    || (0x91..=0x96).contains(&e)
                    || [EPOCH, 0xa3, 0xa6].contains(&e)
            });
        match TimePattern::new(elements, year) {
            Some(p) if valid && (0..=9999).contains(&year) => Ok(p),
            _ => Err(c.corrupt("not a time pattern")),
        }
    }

    /// Reads the spelling at the start of `s`: its length and value, if `s` starts with one
    /// this pattern spells exactly and the token ends there.
    pub fn read(&self, s: &[u8]) -> Option<(usize, i64)> {
        let mut p = 0;
        let (mut y, mut mo, mut d) = (i64::from(self.year), 1, 1);
        let (mut h, mut mi, mut sec, mut frac) = (0i64, 0i64, 0i64, 0i64);
        let mut weekday = None;
        let mut epoch = None;
        let digits = |p: &mut usize, n: usize| -> Option<i64> {
            let d = s.get(*p..*p + n)?;
            let mut v = 0i64;
            for &c in d {
                let x = c.wrapping_sub(b'0');
                if x > 9 {
                    return None;
                }
                v = v * 10 + i64::from(x);
            }
            *p += n;
            Some(v)
        };
        for &e in self.elements() {
            match e {
                0..=0x7f => {
                    if s.get(p) != Some(&e) {
                        return None;
                    }
                    p += 1;
                }
                YEAR4 => y = digits(&mut p, 4)?,
                YEAR2 => {
                    let v = digits(&mut p, 2)?;
                    y = if v >= 70 { 1900 + v } else { 2000 + v };
                }
                MONTH2 => mo = digits(&mut p, 2)?,
                MONTH_NAME => {
                    let n = s.get(p..p + 3)?;
                    mo = MONTHS.iter().position(|m| &m[..] == n)? as i64 + 1;
                    p += 3;
                }
                DAY2 => d = digits(&mut p, 2)?,
                DAY_SPACE => {
                    d = if s.get(p) == Some(&b' ') {
                        p += 1;
                        digits(&mut p, 1)?
                    } else {
                        let v = digits(&mut p, 2)?;
                        (v >= 10).then_some(v)?
                    }
                }
                DAY1 => {
                    d = digits(&mut p, 1)?;
                    if s.get(p).is_some_and(u8::is_ascii_digit) {
                        d = d * 10 + digits(&mut p, 1)?;
                        if d < 10 {
                            return None;
                        }
                    }
                }
                WEEKDAY => {
                    let n = s.get(p..p + 3)?;
                    weekday = Some(WEEKDAYS.iter().position(|w| &w[..] == n)? as i64);
                    p += 3;
                }
                HOUR2 => h = digits(&mut p, 2)?,
                MINUTE2 => mi = digits(&mut p, 2)?,
                SECOND2 => sec = digits(&mut p, 2)?,
                0x91..=0x96 => frac = digits(&mut p, usize::from(e - FRACTION))?,
                _ => {
                    // Epoch digits: no leading zero, at most 18.
                    let n = s[p..].iter().take_while(|c| c.is_ascii_digit()).count();
                    if n == 0 || n > 18 || (n > 1 && s[p] == b'0') {
                        return None;
                    }
                    epoch = Some(digits(&mut p, n)?);
                }
            }
        }
        if s.get(p).is_some_and(|&c| is_word(c)) {
            return None;
        }
        if let Some(v) = epoch {
            let scale = 10i64.pow(u32::from(self.places() - (self.epoch_places())));
            return Some((p, v.checked_mul(scale)?.checked_add(frac)?));
        }
        if h > 23 || mi > 59 || sec > 59 {
            return None;
        }
        let day = civil_day(y, mo, d)?;
        if weekday.is_some_and(|w| w != (day + 3).rem_euclid(7)) {
            return None;
        }
        let secs = day * 86400 + (h * 60 + mi) * 60 + sec;
        Some((p, secs * 10i64.pow(u32::from(self.places())) + frac))
    }

    /// Places of the epoch element's own digits (0 for seconds, 3 for milliseconds...).
    fn epoch_places(&self) -> u8 {
        self.elements()
            .iter()
            .find_map(|&e| (EPOCH..EPOCH + 7).contains(&e).then(|| e - EPOCH))
            .unwrap_or(0)
    }

    /// The least and greatest value this pattern reads (spelling outside them is refused).
    pub fn range(&self) -> (i64, i64) {
        let scale = 10i64.pow(u32::from(self.places()));
        if self.is_epoch() {
            return (0, i64::MAX);
        }
        let (first, last) = match self.elements().iter().find(|&&e| e == YEAR4 || e == YEAR2) {
            Some(&YEAR4) => (0, 9999),
            Some(_) => (1970, 2069),
            None => (i64::from(self.year), i64::from(self.year)),
        };
        let day = |y, m, d| civil_day(y, m, d).expect("a day of 0000..=9999") * 86400 * scale;
        (day(first, 1, 1), day(last, 12, 31) + 86400 * scale - 1)
    }

    /// Appends `v` (a value [`TimePattern::read`] could give: within [`TimePattern::range`])
    /// as this pattern spells it.
    pub fn spell(&self, out: &mut Vec<u8>, v: i64) {
        let scale = 10i64.pow(u32::from(self.places()));
        let secs = v.div_euclid(scale);
        let frac = v.rem_euclid(scale) as u64;
        let day = secs.div_euclid(86400);
        let sod = secs.rem_euclid(86400) as u64;
        let (y, mo, d) = if self.is_epoch() {
            (0, 1, 1)
        } else {
            civil_from_days(day)
        };
        for &e in self.elements() {
            match e {
                0..=0x7f => out.push(e),
                YEAR4 => put_digits(out, y.rem_euclid(10000) as u64, 4),
                YEAR2 => put_digits(out, y.rem_euclid(100) as u64, 2),
                MONTH2 => put_digits(out, mo as u64, 2),
                MONTH_NAME => out.extend_from_slice(MONTHS[(mo - 1) as usize]),
                DAY2 => put_digits(out, d as u64, 2),
                DAY_SPACE if d < 10 => {
                    out.push(b' ');
                    put_digits(out, d as u64, 1);
                }
                DAY_SPACE | DAY1 => put_digits(out, d as u64, if d < 10 { 1 } else { 2 }),
                WEEKDAY => out.extend_from_slice(WEEKDAYS[(day + 3).rem_euclid(7) as usize]),
                HOUR2 => put_digits(out, sod / 3600, 2),
                MINUTE2 => put_digits(out, sod / 60 % 60, 2),
                SECOND2 => put_digits(out, sod % 60, 2),
                0x91..=0x96 => put_digits(out, frac, usize::from(e - FRACTION)),
                _ => {
                    let units = v / 10i64.pow(u32::from(self.places() - self.epoch_places()));
                    crate::spelling::put_int(out, units);
                }
            }
        }
    }

    /// The patterns that read a timestamp at the start of `s` (the text where a token
    /// starts), from the structure of its digits, names and separators: a date (year, month
    /// and day in any of the usual orders, the month as a number or a name, with or without
    /// a year or a weekday), a separator, a clock (`:` or `.` between its parts) with any
    /// fraction after `.` or `,`, a year or a `Z` after it; or epoch seconds, milliseconds or
    /// microseconds. Brackets around the timestamp are part of it. Best guesses first (where
    /// day and month could be either, the year-first and month-first orders).
    pub fn learn(s: &[u8], year: i16) -> Vec<TimePattern> {
        let s = &s[..s.len().min(64)];
        let mut out = Vec::new();
        let open = match s.first() {
            Some(&c @ (b'[' | b'(' | b'<')) => Some(c),
            _ => None,
        };
        let body = &s[usize::from(open.is_some())..];
        let mut heads: Vec<Vec<u8>> = Vec::new();
        for date in dates(body) {
            let mut e: Vec<u8> = open.into_iter().collect();
            e.extend_from_slice(&date);
            heads.push(e);
        }
        for head in heads {
            for clock in clocks(s, &head, year) {
                out.push(clock);
            }
        }
        // Epoch digits: 10 (seconds, with any fraction), 13 or 16 in a plausible range
        // (2001-09-09 .. 2286-11-20), so that other counters are not taken for times.
        let run = body.iter().take_while(|c| c.is_ascii_digit()).count();
        if !body.get(run).is_some_and(|&c| is_word(c)) {
            let mut e: Vec<u8> = open.into_iter().collect();
            match run {
                10 => {
                    e.push(EPOCH);
                    let f = fraction_digits(&body[run..]);
                    if let Some((sep, n)) = f {
                        e.extend_from_slice(&[sep, FRACTION + n]);
                    }
                }
                13 => e.push(EPOCH + 3),
                16 => e.push(EPOCH + 6),
                _ => e.clear(),
            }
            if !e.is_empty() {
                if let Some(c) = open {
                    e.push(closer(c));
                }
                for e in [
                    e.clone(),
                    e[..e.len() - usize::from(open.is_some())].to_vec(),
                ] {
                    out.extend(TimePattern::new(&e, year));
                }
            }
        }
        out.retain(|p| p.read(s).is_some());
        let mut seen = Vec::new();
        out.retain(|p| {
            let new = !seen.contains(p);
            seen.push(*p);
            new
        });
        out
    }
}

fn closer(open: u8) -> u8 {
    match open {
        b'[' => b']',
        b'(' => b')',
        _ => b'>',
    }
}

/// `.` or `,` and then `n` (1..=6) digits at the start of `s`.
fn fraction_digits(s: &[u8]) -> Option<(u8, u8)> {
    let sep = *s.first().filter(|&&c| c == b'.' || c == b',')?;
    let n = s[1..].iter().take_while(|c| c.is_ascii_digit()).count();
    (1..=usize::from(MAX_PLACES))
        .contains(&n)
        .then_some((sep, n as u8))
}

/// Candidate date elements for the start of `s`, each followed by what may come after.
fn dates(s: &[u8]) -> Vec<Vec<u8>> {
    let run = |from: usize| {
        s[from.min(s.len())..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let alpha = |from: usize| {
        s[from.min(s.len())..]
            .iter()
            .take_while(|c| c.is_ascii_alphabetic())
            .count()
    };
    let mut out = Vec::new();
    let first = run(0);
    let sep = s.get(first).copied().filter(|c| b"-/.".contains(c));
    if let Some(sep) = sep {
        let second = run(first + 1);
        let third_sep = s.get(first + 1 + second).copied();
        let third = if third_sep == Some(sep) {
            run(first + 2 + second)
        } else {
            0
        };
        match (first, second, third) {
            (4, 2, 2) => out.push(vec![YEAR4, sep, MONTH2, sep, DAY2]),
            (2, 2, 4) => {
                out.push(vec![MONTH2, sep, DAY2, sep, YEAR4]);
                out.push(vec![DAY2, sep, MONTH2, sep, YEAR4]);
            }
            (2, 2, 2) => {
                out.push(vec![YEAR2, sep, MONTH2, sep, DAY2]);
                out.push(vec![MONTH2, sep, DAY2, sep, YEAR2]);
                out.push(vec![DAY2, sep, MONTH2, sep, YEAR2]);
            }
            (2, 2, 0) => {
                out.push(vec![MONTH2, sep, DAY2]);
                out.push(vec![DAY2, sep, MONTH2]);
            }
            _ => {}
        }
        // Day, month name, year: `10/Oct/2000`, `04-Dec-2005`.
        if matches!(first, 1 | 2) && alpha(first + 1) == 3 {
            let day = if first == 2 { DAY2 } else { DAY1 };
            out.push(vec![day, sep, MONTH_NAME, sep, YEAR4]);
            out.push(vec![DAY1, sep, MONTH_NAME, sep, YEAR4]);
        }
    }
    match first {
        8 => out.push(vec![YEAR4, MONTH2, DAY2]),
        6 => out.push(vec![YEAR2, MONTH2, DAY2]),
        1 | 2 if s.get(first) == Some(&b' ') && alpha(first + 1) == 3 => {
            // `4 Dec 2005`, `04 Dec 2005`
            for day in [DAY2, DAY1] {
                out.push(vec![day, b' ', MONTH_NAME, b' ', YEAR4]);
            }
        }
        _ => {}
    }
    // Month names: `Jun 14`, `Jun  9`, `Sun Dec 04`, `Dec 04 2005`.
    if first == 0 && alpha(0) == 3 {
        let weekday = WEEKDAYS.iter().any(|w| s.starts_with(&w[..])) && s.get(3) == Some(&b' ');
        let prefix: &[u8] = if weekday { &[WEEKDAY, b' '] } else { &[] };
        for day in [DAY_SPACE, DAY2, DAY1] {
            let mut e = prefix.to_vec();
            e.extend_from_slice(&[MONTH_NAME, b' ', day]);
            out.push(e.clone());
            e.extend_from_slice(&[b' ', YEAR4]);
            out.push(e);
        }
    }
    out
}

/// Complete patterns: `head` (a date's elements) then a clock and what may close it, those
/// that read `s`.
fn clocks(s: &[u8], head: &[u8], year: i16) -> Vec<TimePattern> {
    let mut out = Vec::new();
    let packed = head.ends_with(&[MONTH2, DAY2]) && !head.contains(&b'-');
    for between in [b' ', b'T', b'-', b':', b'_'] {
        for colon in [b':', b'.', 0] {
            if colon == 0 && !packed {
                continue;
            }
            let mut e = head.to_vec();
            e.push(between);
            if colon == 0 {
                e.extend_from_slice(&[HOUR2, MINUTE2, SECOND2]);
            } else {
                e.extend_from_slice(&[HOUR2, colon, MINUTE2, colon, SECOND2]);
            }
            // Only the spelling's own head has to match for the rest to be worth trying.
            let Some(p) = prefix_end(&e, s) else { continue };
            let mut tails: Vec<Vec<u8>> = vec![Vec::new()];
            if let Some((sep, n)) = fraction_digits(&s[p..]) {
                tails.insert(0, vec![sep, FRACTION + n]);
            }
            for tail in tails {
                let mut t = e.clone();
                t.extend_from_slice(&tail);
                // After the clock: a year (`... 04:47:44 2005`), a `Z`, a closing bracket.
                let mut ends: Vec<Vec<u8>> = vec![Vec::new()];
                if !head.contains(&YEAR4) && !head.contains(&YEAR2) {
                    ends.insert(0, vec![b' ', YEAR4]);
                }
                for end in ends {
                    let mut u = t.clone();
                    u.extend_from_slice(&end);
                    let mut forms = vec![u.clone()];
                    if let Some(r) = prefix_end(&u, s) {
                        if s.get(r) == Some(&b'Z') {
                            let mut z = u.clone();
                            z.push(b'Z');
                            forms.insert(0, z);
                        }
                    }
                    for f in forms {
                        if let Some(&c @ (b'[' | b'(' | b'<')) = f.first() {
                            let mut closed = f.clone();
                            closed.push(closer(c));
                            out.extend(TimePattern::new(&closed, year));
                        }
                        out.extend(TimePattern::new(&f, year));
                    }
                }
            }
        }
    }
    out
}

/// Where the elements `e` end reading the start of `s` by form alone (digits where digits
/// go, names where names go, literals), or `None`.
fn prefix_end(e: &[u8], s: &[u8]) -> Option<usize> {
    let mut p = 0;
    let digits = |p: &mut usize, n: usize| -> Option<()> {
        s.get(*p..*p + n)?
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| *p += n)
    };
    for &x in e {
        match x {
            0..=0x7f => {
                (s.get(p) == Some(&x)).then_some(())?;
                p += 1;
            }
            YEAR4 => digits(&mut p, 4)?,
            MONTH_NAME | WEEKDAY => {
                s.get(p..p + 3)?
                    .iter()
                    .all(u8::is_ascii_alphabetic)
                    .then_some(())?;
                p += 3;
            }
            DAY_SPACE if s.get(p) == Some(&b' ') => {
                p += 1;
                digits(&mut p, 1)?
            }
            DAY1 => {
                digits(&mut p, 1)?;
                if s.get(p).is_some_and(u8::is_ascii_digit) {
                    p += 1;
                }
            }
            0x91..=0x96 => digits(&mut p, usize::from(x - FRACTION))?,
            _ => digits(&mut p, 2)?,
        }
    }
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Patterns learned from spellings of many layouts (the first each learns).
    fn learned() -> Vec<TimePattern> {
        [
            "2015-10-18 18:01:47,978",
            "Jun  9 05:06:07",
            "[Sun Dec 04 04:47:44 2005]",
            "081109 203615",
            "17/06/09 20:10:40",
            "03-17 16:13:38.811",
            "2005-06-03-15.42.50.675872",
            "10/Oct/2000:13:55:36",
            "2003-10-11T22:14:15.003Z",
            "1117838570",
            "1700000000.25",
            "20240102 030405",
            "4 Dec 2005 01:02:03",
        ]
        .iter()
        .map(|s| TimePattern::learn(s.as_bytes(), 2004)[0])
        .collect()
    }

    #[test]
    fn spellings_are_learned_by_structure() {
        let cases = [
            (
                "2015-10-18 18:01:47,978 INFO",
                "%Y-%m-%d %H:%M:%S,%3f",
                1_445_191_307_978,
            ),
            ("Jun  9 05:06:07 host", "%b %e %H:%M:%S", 1_086_757_567),
            (
                "[Sun Dec 04 04:47:44 2005] [notice]",
                "[%a %b %d %H:%M:%S %Y]",
                1_133_671_664,
            ),
            ("081109 203615 148", "%y%m%d %H%M%S", 1_226_262_975),
            ("17/06/09 20:10:40 INFO", "%y/%m/%d %H:%M:%S", 1_497_039_040),
            (
                "03-17 16:13:38.811  1702",
                "%m-%d %H:%M:%S.%3f",
                1_079_540_018_811,
            ),
            (
                "2005-06-03-15.42.50.675872 R02",
                "%Y-%m-%d-%H.%M.%S.%6f",
                1_117_813_370_675_872,
            ),
            (
                "[10/Oct/2000:13:55:36 -0700]",
                "[%d/%b/%Y:%H:%M:%S",
                971_186_136,
            ),
            ("1117838570 2005.06.03", "%s", 1_117_838_570),
        ];
        for (s, form, value) in cases {
            let p = TimePattern::learn(s.as_bytes(), 2004)
                .into_iter()
                .find(|p| p.describe() == form)
                .unwrap_or_else(|| panic!("{s}: {:?}", TimePattern::learn(s.as_bytes(), 2004)));
            let (n, v) = p.read(s.as_bytes()).unwrap();
            assert_eq!(v, value, "{s}");
            let mut out = Vec::new();
            p.spell(&mut out, v);
            assert_eq!(&out[..], &s.as_bytes()[..n], "{s}");
        }
    }

    #[test]
    fn only_exact_spellings_read() {
        let p = TimePattern::learn(b"Jun 14 15:16:01", 2004)[0];
        assert_eq!(p.describe(), "%b %e %H:%M:%S");
        for bad in [
            "Jun 09 15:16:01",
            "Jun 14 15:16:01x",
            "Jun 31 15:16:01",
            "Jun 14 24:16:01",
        ] {
            assert_eq!(p.read(bad.as_bytes()), None, "{bad}");
        }
        let apache = TimePattern::learn(b"[Sun Dec 04 04:47:44 2005]", 2004)[0];
        // The weekday must be the date's.
        assert_eq!(apache.read(b"[Mon Dec 04 04:47:44 2005]"), None);
        assert!(TimePattern::learn(b"12345 not a time", 2004).is_empty());
        assert!(TimePattern::learn(b"99999999999999999999", 2004).is_empty());
    }

    proptest::proptest! {
        #[test]
        fn values_in_range_spell_and_read_back(which in 0usize..13, at in 0.0f64..1.0) {
            let p = learned()[which];
            let (low, high) = p.range();
            let high = high.min(low.saturating_add(400 * 366 * 86400 * 1_000_000));
            let v = low + ((high - low) as f64 * at) as i64;
            let mut out = Vec::new();
            p.spell(&mut out, v);
            proptest::prop_assert_eq!(p.read(&out), Some((out.len(), v)), "{}", String::from_utf8_lossy(&out));
        }

        #[test]
        fn any_bytes_are_safe(s in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40)) {
            for p in TimePattern::learn(&s, 2004) {
                proptest::prop_assert!(p.read(&s).is_some());
            }
            let mut c = crate::wire::Cursor::new(&s, 0, "pattern");
            if let Ok(p) = TimePattern::decode(&mut c) {
                let _ = p.read(&s);
            }
        }
    }
}
