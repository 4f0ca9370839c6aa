//! The typed spellings record mode recognizes in text fields, parsed only when formatting the
//! value back gives the very same bytes: canonical integers, decimals with a fixed number of
//! places, ISO dates, and timestamps `YYYY-MM-DD HH:MM:SS` (or with a `T`) with a fixed number
//! of fraction digits. Anything else stays text.

use std::mem::MaybeUninit;

/// The most digits a typed value may have: 18 decimal digits always fit in an i64.
const MAX_DIGITS: usize = 18;

/// `-?(0|[1-9][0-9]*)`, at most 18 digits, not `-0`.
pub fn parse_int(b: &[u8]) -> Option<i64> {
    let (neg, digits) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, b),
    };
    if digits.is_empty() || digits.len() > MAX_DIGITS || (digits[0] == b'0' && digits.len() > 1) {
        return None;
    }
    let mut v: i64 = 0;
    for &c in digits {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + i64::from(d);
    }
    if neg {
        (v != 0).then_some(-v)
    } else {
        Some(v)
    }
}

/// `-?(0|[1-9][0-9]*)\.[0-9]+` with at most 18 digits in all: the value scaled by 10^places,
/// and the places. A negative zero (`-0.00`) is not canonical and is refused.
pub fn parse_decimal(b: &[u8]) -> Option<(i64, u8)> {
    let dot = b.iter().position(|&c| c == b'.')?;
    let (int, frac) = (&b[..dot], &b[dot + 1..]);
    if frac.is_empty() || frac.len() > MAX_DIGITS {
        return None;
    }
    let neg = int.first() == Some(&b'-');
    let whole = parse_int(if neg { &int[1..] } else { int })?;
    let digits = int.len() - usize::from(neg) + frac.len();
    if digits > MAX_DIGITS {
        return None;
    }
    let mut v = whole;
    for &c in frac {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + i64::from(d);
    }
    if neg {
        (v != 0).then_some((-v, frac.len() as u8))
    } else {
        Some((v, frac.len() as u8))
    }
}

/// `YYYY-MM-DD` (a real calendar day, year 0000..9999): days since 1970-01-01.
pub fn parse_date(b: &[u8]) -> Option<i64> {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |s: &[u8]| -> Option<i64> {
        s.iter().try_fold(0i64, |v, &c| {
            let d = c.wrapping_sub(b'0');
            (d <= 9).then_some(v * 10 + i64::from(d))
        })
    };
    civil_day(num(&b[..4])?, num(&b[5..7])?, num(&b[8..])?)
}

/// Days since 1970-01-01 of year `y` (0000..=9999), month `m` and day `d`, if that day exists.
pub fn civil_day(y: i64, m: i64, d: i64) -> Option<i64> {
    if !(0..=9999).contains(&y) || !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d))
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Howard Hinnant's days-from-civil: proleptic Gregorian date to days since 1970-01-01.
const fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// Inverse of [`days_from_civil`].
pub(crate) fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// "00" to "99", for writing two digits per division.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// 10^0 ..= 10^19.
const POW10: [u64; 20] = {
    let mut t = [1u64; 20];
    let mut i = 1;
    while i < 20 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// Number of decimal digits of `v` (1 for 0): estimated from the bit length (1233 / 4096 is
/// just over log10 2), then corrected by one comparison.
#[inline(always)]
fn decimal_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    let t = (bits * 1233) >> 12;
    (t + 1 - usize::from(v < POW10[t])).max(1)
}

/// Bytes [`write_digits`] may write: up to 20 digits, stored eight at a time.
const DIGITS_ROOM: usize = 24;

/// Bytes [`write_int`] may write: a sign and [`DIGITS_ROOM`].
const INT_ROOM: usize = 1 + DIGITS_ROOM;

/// Bytes [`write_decimal`] may write: a sign, the whole part, a point and the fraction.
const DECIMAL_ROOM: usize = 2 + 2 * DIGITS_ROOM;

/// Appends the decimal digits of `v` (no sign), at least `width` of them (zero-padded).
pub fn put_digits(out: &mut Vec<u8>, v: u64, width: usize) {
    put_with(out, DIGITS_ROOM, |dst| write_digits(dst, v, width.min(20)))
}

/// Appends what `write` writes to the front of the `room` bytes it is given; it returns how
/// many it wrote.
#[inline(always)]
fn put_with(out: &mut Vec<u8>, room: usize, write: impl FnOnce(&mut [MaybeUninit<u8>]) -> usize) {
    out.reserve(room);
    let len = out.len();
    let n = write(&mut out.spare_capacity_mut()[..room]);
    assert!(n <= room);
    // SAFETY: the writer initialised the first `n` bytes of the spare capacity.
    unsafe { out.set_len(len + n) };
}

/// Appends each of `values` as `write` spells it (into at most `room` bytes, returning how
/// many it wrote), and after each, the end of its spelling to `ends`: one reservation for all.
#[inline(always)]
fn put_each(
    values: &[i64],
    room: usize,
    data: &mut Vec<u8>,
    ends: &mut Vec<usize>,
    write: impl Fn(&mut [MaybeUninit<u8>], i64) -> usize,
) {
    data.reserve(values.len() * room);
    ends.reserve(values.len());
    let start = data.len();
    let spare = &mut data.spare_capacity_mut()[..values.len() * room];
    let mut at = 0;
    for &v in values {
        // Every value before this one took at most `room` bytes, so `room` are left.
        at += write(&mut spare[at..at + room], v).min(room);
        ends.push(start + at);
    }
    // SAFETY: each writer initialised the bytes it counted, back to back from `start`.
    unsafe { data.set_len(start + at) };
}

/// Appends every value of an integer column as [`put_int`] would, and each one's end to `ends`.
pub fn put_ints(values: &[i64], data: &mut Vec<u8>, ends: &mut Vec<usize>) {
    put_each(values, INT_ROOM, data, ends, write_int)
}

/// Appends every value of a decimal column as [`put_decimal`] would, and each one's end.
pub fn put_decimals(values: &[i64], places: u8, data: &mut Vec<u8>, ends: &mut Vec<usize>) {
    put_each(values, DECIMAL_ROOM, data, ends, |dst, v| {
        write_decimal(dst, v, places)
    })
}

/// FAST PATH: writes the decimal digits of `v`, at least `width` (at most 20) of them, to the
/// front of `dst` (at least [`DIGITS_ROOM`] bytes) and returns how many. Below 10^16 (nearly
/// every value in records) the digits are made eight at a time in a register
/// ([`eight_digits`]) and stored with 8-byte writes, the leading zeros cut by where the next
/// write starts: a division per digit pair, one long dependency chain, was most of the cost
/// of spelling a column.
#[inline(always)]
fn write_digits(dst: &mut [MaybeUninit<u8>], v: u64, width: usize) -> usize {
    assert!(dst.len() >= DIGITS_ROOM && width <= 20);
    // Stores 8 bytes at `at`, which is at most 16, within the room asserted above.
    let store = |dst: &mut [MaybeUninit<u8>], at: usize, word: u64| {
        dst[at..at + 8].copy_from_slice(&word.to_le_bytes().map(MaybeUninit::new));
    };
    if v < 100_000_000 && width <= 8 {
        let n = decimal_len(v).max(width);
        // First digit lowest: shifting right drops the leading zeros.
        store(dst, 0, eight_digits(v as u32) >> (8 * (8 - n)));
        return n;
    }
    if v < 10_000_000_000_000_000 && width <= 16 {
        let (high, low) = (v / 100_000_000, v % 100_000_000);
        let n = decimal_len(high).max(width.saturating_sub(8));
        store(dst, 0, eight_digits(high as u32) >> (8 * (8 - n)));
        store(dst, n, eight_digits(low as u32));
        return n + 8;
    }
    // The rest, last digit first, two per division.
    let n = decimal_len(v).max(width);
    let mut v = v;
    let mut i = n;
    while v >= 100 {
        let p = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        dst[i].write(PAIRS[p]);
        dst[i + 1].write(PAIRS[p + 1]);
    }
    if v >= 10 {
        let p = v as usize * 2;
        i -= 2;
        dst[i].write(PAIRS[p]);
        dst[i + 1].write(PAIRS[p + 1]);
    } else {
        i -= 1;
        dst[i].write(b'0' + v as u8);
    }
    for b in &mut dst[..i] {
        b.write(b'0');
    }
    n
}

/// Writes `v` as [`put_int`] spells it to the front of `dst` (at least [`INT_ROOM`] bytes);
/// returns how many bytes.
#[inline(always)]
fn write_int(dst: &mut [MaybeUninit<u8>], v: i64) -> usize {
    // The sign is written either way and kept only for a negative value (no branch).
    let sign = usize::from(v < 0);
    dst[0].write(b'-');
    sign + write_digits(&mut dst[sign..], v.unsigned_abs(), 1)
}

/// Writes `v / 10^places` as [`put_decimal`] spells it to the front of `dst` (at least
/// [`DECIMAL_ROOM`] bytes); returns how many bytes.
#[inline(always)]
fn write_decimal(dst: &mut [MaybeUninit<u8>], v: i64, places: u8) -> usize {
    let sign = usize::from(v < 0);
    dst[0].write(b'-');
    let (whole, fraction) = split_places(v.unsigned_abs(), places);
    let mut at = sign + write_digits(&mut dst[sign..], whole, 1);
    dst[at].write(b'.');
    at += 1;
    at + write_digits(&mut dst[at..], fraction, usize::from(places).min(20))
}

/// The eight decimal digits of `v` (< 10^8, zero-padded) as ASCII, the first digit in the
/// lowest byte: `v` splits into two lanes of four digits, each lane into two of two digits,
/// each of those into two digits, every split one multiply-shift over all lanes together
/// (`x / 100 = x * 5243 >> 19` below 43,699 and `x / 10 = x * 103 >> 10` below 179, so no
/// lane's product reaches the next lane).
#[inline(always)]
fn eight_digits(v: u32) -> u64 {
    let x = u64::from(v / 10_000) | u64::from(v % 10_000) << 32;
    let hundreds = ((x * 5243) >> 19) & 0x0000_007f_0000_007f;
    let y = hundreds | (x - hundreds * 100) << 16;
    let tens = ((y * 103) >> 10) & 0x000f_000f_000f_000f;
    let z = tens | (y - tens * 10) << 8;
    z | 0x3030_3030_3030_3030
}

/// FAST PATH: appends the first `n` bytes of `bytes` with one copy of fixed size `N`, which
/// the compiler turns into a few moves (a copy of variable length is a call to memcpy).
#[inline(always)]
fn push_prefix<const N: usize>(out: &mut Vec<u8>, bytes: &[u8; N], n: usize) {
    assert!(n <= N);
    out.reserve(N);
    let len = out.len();
    // SAFETY: `reserve(N)` leaves at least N writable bytes after `len`; the first `n <= N`
    // of them are then initialised from `bytes`.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.as_mut_ptr().add(len), N);
        out.set_len(len + n);
    }
}

/// Appends `v` as [`parse_int`] reads it.
pub fn put_int(out: &mut Vec<u8>, v: i64) {
    put_with(out, INT_ROOM, |dst| write_int(dst, v))
}

/// Appends `v / 10^places` as [`parse_decimal`] reads it.
pub fn put_decimal(out: &mut Vec<u8>, v: i64, places: u8) {
    put_with(out, DECIMAL_ROOM, |dst| write_decimal(dst, v, places))
}

/// `(a / 10^places, a % 10^places)`, with constant divisors for the common places (a division
/// by a variable costs several times a multiplication).
#[inline(always)]
fn split_places(a: u64, places: u8) -> (u64, u64) {
    macro_rules! by_constant {
        ($($p:literal)*) => {
            match places {
                $($p => (a / 10u64.pow($p), a % 10u64.pow($p)),)*
                _ => {
                    let p = 10u64.pow(u32::from(places));
                    (a / p, a % p)
                }
            }
        };
    }
    by_constant!(0 1 2 3 4 5 6)
}

/// How a timestamp is spelled: `YYYY-MM-DD`, a separator (` ` or `T`), `HH:MM:SS`, then
/// `.` and `places` fraction digits when `places > 0`. Stored as one byte: the places in the
/// low nibble, bit 4 set for the `T` separator.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct TimeFormat {
    pub places: u8,
    pub t: bool,
}

/// Most fraction digits of a timestamp (microseconds: years 0000..=9999 fit in an i64).
pub const MAX_TIME_PLACES: u8 = 6;

impl TimeFormat {
    pub fn to_byte(self) -> u8 {
        self.places | u8::from(self.t) << 4
    }

    pub fn from_byte(b: u8) -> Option<Self> {
        let f = TimeFormat {
            places: b & 0x0f,
            t: b & 0x10 != 0,
        };
        (b & !0x1f == 0 && f.places <= MAX_TIME_PLACES).then_some(f)
    }

    /// Units per second.
    pub fn scale(self) -> i64 {
        10i64.pow(u32::from(self.places))
    }
}

/// A timestamp spelled as [`TimeFormat`] says, as units of `10^-places` seconds since
/// 1970-01-01 00:00:00, with its format.
pub fn parse_timestamp(b: &[u8]) -> Option<(i64, TimeFormat)> {
    if b.len() < 19 || b[13] != b':' || b[16] != b':' || !(b[10] == b' ' || b[10] == b'T') {
        return None;
    }
    let days = parse_date(&b[..10])?;
    let two = |i: usize| -> Option<i64> {
        let (h, l) = (b[i].wrapping_sub(b'0'), b[i + 1].wrapping_sub(b'0'));
        // (Lazily: a byte that is not a digit must not be multiplied.)
        (h <= 9 && l <= 9).then(|| i64::from(h) * 10 + i64::from(l))
    };
    let (h, m, sec) = (two(11)?, two(14)?, two(17)?);
    if h > 23 || m > 59 || sec > 59 {
        return None;
    }
    let places = match b.get(19) {
        None => 0,
        Some(b'.') => (b.len() - 20) as u8,
        Some(_) => return None,
    };
    if b.len() > 19 && !(1..=MAX_TIME_PLACES).contains(&places) {
        return None;
    }
    let fmt = TimeFormat {
        places,
        t: b[10] == b'T',
    };
    let mut frac = 0i64;
    for &c in b.get(20..).unwrap_or_default() {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        frac = frac * 10 + i64::from(d);
    }
    let secs = days * 86400 + h * 3600 + m * 60 + sec;
    Some((secs * fmt.scale() + frac, fmt))
}

/// The least and greatest timestamp [`parse_timestamp`] can produce in format `f`: the first
/// instant of the first day and the last of the last.
pub fn timestamp_range(f: TimeFormat) -> (i64, i64) {
    let day = 86400 * f.scale();
    (FIRST_DAY * day, (LAST_DAY + 1) * day - 1)
}

/// Reads `YYYY-MM-DD` dates as [`parse_date`] does, remembering recent months: a date column
/// keeps to a few hundred months, and a month's first day and length, once known, leave two
/// digits to read per date instead of eight and the calendar arithmetic.
pub struct DateReader {
    /// By a hash of the first eight bytes (`YYYY-MM-`, as a little-endian integer, which is
    /// never 0): those bytes, the month's first day and its length in days.
    months: Box<[(u64, i64, i64); Self::SLOTS]>,
}

impl Default for DateReader {
    fn default() -> Self {
        DateReader {
            months: Box::new([(0, 0, 0); Self::SLOTS]),
        }
    }
}

impl DateReader {
    const SLOTS: usize = 256;

    /// Days since 1970-01-01 of the date `b` spells; `None` where [`parse_date`] says `None`.
    #[inline]
    pub fn read(&mut self, b: &[u8]) -> Option<i64> {
        let (head, day) = match b {
            &[y0, y1, y2, y3, h, m0, m1, h2, d0, d1] => ([y0, y1, y2, y3, h, m0, m1, h2], [d0, d1]),
            _ => return None,
        };
        let key = u64::from_le_bytes(head);
        let slot = &mut self.months[(key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize];
        if slot.0 != key {
            let on = |d: &[u8; 2]| {
                let mut b = [0; 10];
                b[..8].copy_from_slice(&head);
                b[8..].copy_from_slice(d);
                parse_date(&b)
            };
            let first = on(b"01")?;
            // Four days after the 28th is the next month's (32 - length)th day.
            let (_, _, over) = civil_from_days(on(b"28")? + 4);
            *slot = (key, first, 32 - over);
        }
        let (d0, d1) = (day[0].wrapping_sub(b'0'), day[1].wrapping_sub(b'0'));
        if d0 > 9 || d1 > 9 {
            return None;
        }
        let d = i64::from(d0 * 10 + d1);
        (1..=slot.2).contains(&d).then_some(slot.1 + d - 1)
    }
}

/// Spells dates, remembering recent ones: a date column repeats and revisits its values, and
/// the calendar arithmetic costs more than a lookup.
#[derive(Default)]
pub struct DateSpeller {
    cache: Vec<(i64, [u8; 10])>,
}

impl DateSpeller {
    const SLOTS: usize = 4096;

    pub fn put(&mut self, out: &mut Vec<u8>, days: i64) {
        if self.cache.is_empty() {
            self.cache = vec![(i64::MIN, [0; 10]); Self::SLOTS];
        }
        let slot = &mut self.cache[days as usize & (Self::SLOTS - 1)];
        if slot.0 != days {
            if !date_in_range(days) {
                // Not cached (readers refuse such dates anyway).
                return put_date(out, days);
            }
            let (y, m, d) = civil_from_days(days);
            let mut b = *b"0000-00-00";
            for (i, v) in [(0, y / 100), (2, y % 100), (5, m), (8, d)] {
                b[i..i + 2].copy_from_slice(&PAIRS[v as usize * 2..v as usize * 2 + 2]);
            }
            *slot = (days, b);
        }
        push_prefix(out, &slot.1, 10);
    }
}

impl DateSpeller {
    /// Appends timestamp `v` spelled as `f` says.
    pub fn put_timestamp(&mut self, out: &mut Vec<u8>, v: i64, f: TimeFormat) {
        let scale = f.scale();
        let secs = v.div_euclid(scale);
        let day = secs.div_euclid(86400);
        let sod = secs.rem_euclid(86400) as usize;
        self.put(out, day);
        let mut clock = *b" 00:00:00";
        if f.t {
            clock[0] = b'T';
        }
        for (i, x) in [(1, sod / 3600), (4, sod / 60 % 60), (7, sod % 60)] {
            clock[i..i + 2].copy_from_slice(&PAIRS[x * 2..x * 2 + 2]);
        }
        push_prefix(out, &clock, 9);
        if f.places > 0 {
            out.push(b'.');
            put_digits(out, v.rem_euclid(scale) as u64, usize::from(f.places));
        }
    }
}

/// Appends `days` since 1970-01-01 as `YYYY-MM-DD`.
pub fn put_date(out: &mut Vec<u8>, days: i64) {
    let (y, m, d) = civil_from_days(days);
    put_digits(out, y as u64, 4);
    out.push(b'-');
    put_digits(out, m as u64, 2);
    out.push(b'-');
    put_digits(out, d as u64, 2);
}

/// Whether `days` is a date [`parse_date`] can produce (years 0000..=9999).
pub fn date_in_range(days: i64) -> bool {
    (FIRST_DAY..=LAST_DAY).contains(&days)
}

/// The days of 0000-01-01 and 9999-12-31: the dates [`parse_date`] reads.
pub const FIRST_DAY: i64 = days_from_civil(0, 1, 1);
pub const LAST_DAY: i64 = days_from_civil(9999, 12, 31);

#[cfg(test)]
mod tests {
    #[test]
    fn timestamps_with_bytes_past_the_digits_are_not_timestamps() {
        // Found by fuzzing: `0xff` where an hour's digit goes overflowed the digit check.
        assert_eq!(parse_timestamp(b"2006-02-15 \xff4:34:33"), None);
        assert_eq!(parse_timestamp(b"2006-02-15 04:\xff4:33"), None);
        assert!(parse_timestamp(b"2006-02-15 04:34:33").is_some());
    }

    use super::*;

    /// Whether `v` is a timestamp [`parse_timestamp`] can produce in format `f`.
    fn timestamp_in_range(v: i64, f: TimeFormat) -> bool {
        date_in_range(v.div_euclid(f.scale()).div_euclid(86400))
    }
    use proptest::prelude::*;

    #[test]
    fn canonical_spellings_only() {
        for ok in ["0", "7", "-7", "123456789012345678", "-100"] {
            let v = parse_int(ok.as_bytes()).unwrap();
            let mut out = Vec::new();
            put_int(&mut out, v);
            assert_eq!(out, ok.as_bytes());
        }
        for bad in [
            "",
            "-",
            "-0",
            "007",
            "+1",
            "1e3",
            "1234567890123456789",
            " 1",
        ] {
            assert_eq!(parse_int(bad.as_bytes()), None, "{bad}");
        }
        for ok in ["0.04", "24386.67", "-1.50", "0.000", "-0.01"] {
            let (v, p) = parse_decimal(ok.as_bytes()).unwrap();
            let mut out = Vec::new();
            put_decimal(&mut out, v, p);
            assert_eq!(out, ok.as_bytes());
        }
        for bad in ["1.", ".5", "-0.00", "01.5", "1.2.3", "1,5", "-.5"] {
            assert_eq!(parse_decimal(bad.as_bytes()), None, "{bad}");
        }
        for ok in [
            "1996-03-13",
            "2000-02-29",
            "0000-01-01",
            "9999-12-31",
            "1969-12-31",
        ] {
            let v = parse_date(ok.as_bytes()).unwrap();
            let mut out = Vec::new();
            put_date(&mut out, v);
            assert_eq!(out, ok.as_bytes());
        }
        for (ok, secs) in [
            ("1970-01-01 00:00:00", 0),
            ("2005-05-30 01:56:11", 1_117_418_171),
            ("1969-12-31T23:59:59.500", -500),
        ] {
            let (v, f) = parse_timestamp(ok.as_bytes()).unwrap();
            assert_eq!(v, secs);
            let mut out = Vec::new();
            DateSpeller::default().put_timestamp(&mut out, v, f);
            assert_eq!(out, ok.as_bytes());
        }
        for bad in [
            "2005-05-30 24:00:00",
            "2005-05-30 01:56:60",
            "2005-05-30 01:56:11.",
            "2005-05-30 01:56:11.1234567",
            "2005-05-30 01:56:11Z",
            "2005-05-30_01:56:11",
        ] {
            assert_eq!(parse_timestamp(bad.as_bytes()), None, "{bad}");
        }
        for bad in [
            "1996-3-13",
            "1900-02-29",
            "1996-13-01",
            "1996-00-10",
            "19960313",
            "1996-03-32",
        ] {
            assert_eq!(parse_date(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn eight_digits_spell_every_digit_pattern() {
        // Each power of ten, one either side of it, and every digit in every place.
        let mut values = vec![0u64, 99_999_999, u64::MAX];
        for p in 0..20 {
            let t = 10u64.pow(p);
            values.extend([t - 1, t, t + 1]);
            values.extend((1..10).filter_map(|d: u64| d.checked_mul(t)));
        }
        for v in values {
            for width in 0..=20 {
                let mut out = Vec::new();
                put_digits(&mut out, v, width);
                assert_eq!(out, format!("{v:0width$}").as_bytes(), "{v} {width}");
            }
        }
    }

    /// Every day number of every month of leap and common years, century years included.
    #[test]
    fn date_reader_knows_month_lengths() {
        let mut reader = DateReader::default();
        for y in [0, 1900, 1970, 2000, 2023, 2024, 2100, 9999] {
            for m in 0..=13 {
                for d in 0..=32 {
                    let s = format!("{y:04}-{m:02}-{d:02}");
                    assert_eq!(reader.read(s.as_bytes()), parse_date(s.as_bytes()), "{}", s);
                }
            }
        }
    }

    proptest! {
        /// Every canonical spelling parses and formats back exactly; nothing else parses.
        /// Canonical, judged apart from the parsers: no leading zero, no negative zero, at
        /// most 18 digits, a decimal with at least one place.
        #[test]
        fn parsed_values_format_back_exactly(s in "-?[0-9]{0,20}(\\.[0-9]{0,20})?") {
            let b = s.as_bytes();
            let (neg, body) = s.strip_prefix('-').map_or((false, &s[..]), |r| (true, r));
            let (int, frac) = body.split_once('.').map_or((body, None), |(i, f)| (i, Some(f)));
            let digits = int.len() + frac.map_or(0, str::len);
            let zero = body.bytes().all(|c| c == b'0' || c == b'.');
            let canonical = !int.is_empty()
                && (int == "0" || !int.starts_with('0'))
                && digits <= 18
                && !(neg && zero);
            match parse_int(b) {
                Some(v) => {
                    let mut out = Vec::new();
                    put_int(&mut out, v);
                    prop_assert_eq!(&out[..], b);
                }
                None => prop_assert!(!(canonical && frac.is_none()), "{} did not parse", s),
            }
            match parse_decimal(b) {
                Some((v, p)) => {
                    let mut out = Vec::new();
                    put_decimal(&mut out, v, p);
                    prop_assert_eq!(&out[..], b);
                }
                None => prop_assert!(
                    !(canonical && frac.is_some_and(|f| !f.is_empty())),
                    "{} did not parse",
                    s
                ),
            }
        }

        #[test]
        fn dates_round_trip(days in -719528i64..2932896, other in -719528i64..2932896) {
            let mut out = Vec::new();
            put_date(&mut out, days);
            prop_assert!(date_in_range(days));
            prop_assert_eq!(parse_date(&out), Some(days));
            // The caching speller spells the same, hit or miss.
            let mut speller = DateSpeller::default();
            let mut cached = Vec::new();
            for d in [days, other, days, days + 4096] {
                cached.clear();
                speller.put(&mut cached, d);
                let mut want = Vec::new();
                put_date(&mut want, d);
                prop_assert_eq!(&cached, &want);
            }
        }

        /// The month-caching reader reads what `parse_date` reads, hit or miss, valid or not
        /// (days past a month's end, February 29th, bad digits in the day).
        #[test]
        fn date_reader_reads_as_parse_date(
            dates in proptest::collection::vec(
                "[0-9]{4}-(0[0-9]|1[0-3])-([0-3][0-9]|[0-9:/][0-9:/])|.{0,11}", 1..40),
        ) {
            let mut reader = DateReader::default();
            for d in dates.iter().chain(&dates) {
                prop_assert_eq!(reader.read(d.as_bytes()), parse_date(d.as_bytes()), "{}", d);
            }
        }

        #[test]
        fn timestamp_ranges_bound_the_timestamps_in_range(v in any::<i64>(), places in 0u8..=6) {
            let f = TimeFormat { places, t: false };
            let (low, high) = timestamp_range(f);
            prop_assert_eq!((low..=high).contains(&v), timestamp_in_range(v, f));
            prop_assert!(timestamp_in_range(low, f) && timestamp_in_range(high, f));
            prop_assert!(!timestamp_in_range(low - 1, f) && !timestamp_in_range(high + 1, f));
        }

        #[test]
        fn timestamps_spell_back_exactly(
            s in "[0-9]{4}-[01][0-9]-[0-3][0-9][ T][0-2][0-9]:[0-6][0-9]:[0-6][0-9](\\.[0-9]{0,8})?",
        ) {
            let b = s.as_bytes();
            if let Some((v, f)) = parse_timestamp(b) {
                prop_assert!(timestamp_in_range(v, f));
                let mut out = Vec::new();
                DateSpeller::default().put_timestamp(&mut out, v, f);
                prop_assert_eq!(&out[..], b);
                prop_assert_eq!(TimeFormat::from_byte(f.to_byte()), Some(f));
            }
        }

        #[test]
        fn digits_pad_to_their_width(
            big in any::<u64>(),
            small in 0u64..1_000_000_000,
            width in 0usize..22,
        ) {
            // Values below 10^8 and 10^16 are made eight digits at a time; the rest divide.
            for v in [big, big >> 10, big >> 20, small, small / 1000, small % 100] {
                let mut out = vec![b'x'];
                put_digits(&mut out, v, width);
                let plain = v.to_string();
                let pad = "0".repeat(width.min(20).saturating_sub(plain.len()));
                prop_assert_eq!(String::from_utf8(out).unwrap(), format!("x{pad}{plain}"));
            }
        }

        #[test]
        fn columns_spell_as_their_values_do(
            values in proptest::collection::vec(any::<i64>(), 0..40),
            shift in 0u32..64,
            places in 0u8..20,
        ) {
            // Typical magnitudes too, not only huge ones.
            let values: Vec<i64> = values.iter().map(|v| v >> shift).collect();
            let (mut data, mut ends) = (b"x".to_vec(), vec![1]);
            put_ints(&values, &mut data, &mut ends);
            let (mut want, mut want_ends) = (b"x".to_vec(), vec![1]);
            for &v in &values {
                put_int(&mut want, v);
                prop_assert_eq!(parse_int(&want[*want_ends.last().unwrap()..]), (v != i64::MIN && v.unsigned_abs() < 10u64.pow(18)).then_some(v));
                want_ends.push(want.len());
            }
            prop_assert_eq!(&data, &want);
            prop_assert_eq!(&ends, &want_ends);
            let (mut data, mut ends) = (Vec::new(), Vec::new());
            put_decimals(&values, places, &mut data, &mut ends);
            let mut want = Vec::new();
            for (&v, &end) in values.iter().zip(&ends) {
                put_decimal(&mut want, v, places);
                prop_assert_eq!(want.len(), end);
                let a = v.unsigned_abs();
                let p = 10u128.pow(u32::from(places));
                let spelled = format!(
                    "{}{}.{:0width$}",
                    if v < 0 { "-" } else { "" },
                    u128::from(a) / p,
                    u128::from(a) % p,
                    width = usize::from(places)
                );
                prop_assert!(want.ends_with(spelled.as_bytes()));
            }
            prop_assert_eq!(&data, &want);
        }
    }
}
