//! A column as shredding leaves it and as a chunk stores it: each row's value and flag
//! ([`RawColumn`]; a flag says whether the value was quoted, a null or absent), the kinds a
//! chunk is typed as ([`Kind`]), the roles of its streams ([`Role`]), its statistics
//! ([`Stats`]), and a coded chunk ready to compress ([`EncodedColumn`]).

use arrow_schema::{DataType, TimeUnit};
use glyd_core::copy::{extend_from_padded, MARGIN};

use crate::spelling::TimeFormat;
use crate::timepattern::TimePattern;

/// Flag of a value spelled as is.
pub const BARE: u8 = 0;

/// Flag of a value spelled in double quotes (as the style quotes).
pub const QUOTED: u8 = 1;

/// Flag of a null: an empty field in a typed CSV column, or the style's null spelling.
pub const NULL: u8 = 2;

/// Flag of a value the row does not have at all (spelled as nothing, read as a null).
pub const ABSENT: u8 = 3;

/// Whether a row with this flag holds a value.
pub fn has_value(flag: u8) -> bool {
    flag == BARE || flag == QUOTED
}

/// What a column chunk holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Int,
    /// Decimal with this many places after the point (1..=18).
    Decimal(u8),
    /// Days since 1970-01-01, spelled `YYYY-MM-DD`.
    Date,
    /// Units of `10^-places` seconds since 1970-01-01 00:00:00, spelled as the format says.
    Timestamp(TimeFormat),
    /// A log line's time: units of `10^-places` seconds since 1970-01-01 00:00:00 (as
    /// written, no zone applied), spelled as the pattern says.
    LogTime(TimePattern),
    Text,
    /// A column of an Arrow table (the Arrow table coding) stored as Arrow IPC: any type,
    /// nested included; the table's schema gives it.
    Arrow,
}

impl Kind {
    /// Fraction digits of a timestamp kind's units; `None` for other kinds.
    pub fn time_places(self) -> Option<u8> {
        match self {
            Kind::Timestamp(f) => Some(f.places),
            Kind::LogTime(p) => Some(p.places()),
            _ => None,
        }
    }

    /// The Arrow type of the column's values.
    pub fn data_type(self) -> DataType {
        match self {
            Kind::Int => DataType::Int64,
            Kind::Decimal(p) => DataType::Decimal128(18, p as i8),
            Kind::Date => DataType::Date32,
            Kind::Timestamp(f) => DataType::Timestamp(arrow_unit(f.places).0, None),
            Kind::LogTime(p) => DataType::Timestamp(arrow_unit(p.places()).0, None),
            Kind::Text => DataType::Utf8,
            // The table schema holds the real type; a chunk read against another is refused.
            Kind::Arrow => DataType::Binary,
        }
    }

    pub fn name(self) -> String {
        match self {
            Kind::Int => "int".into(),
            Kind::Decimal(p) => format!("decimal({p})"),
            Kind::Date => "date".into(),
            Kind::Timestamp(f) if f.places == 0 => "timestamp".into(),
            Kind::Timestamp(f) => format!("timestamp({})", f.places),
            Kind::LogTime(p) => format!("time '{}'", p.describe()),
            Kind::Text => "text".into(),
            Kind::Arrow => "arrow".into(),
        }
    }
}

/// The Arrow time unit for timestamps in units of `10^-places` seconds, and the factor from
/// those units to it.
pub(crate) fn arrow_unit(places: u8) -> (TimeUnit, i64) {
    let (unit, to) = match places {
        0 => (TimeUnit::Second, 0),
        1..=3 => (TimeUnit::Millisecond, 3),
        _ => (TimeUnit::Microsecond, 6),
    };
    (unit, 10i64.pow(u32::from(to - places)))
}

/// Whether every decoded value is one `kind`'s parser could have produced (readers refuse
/// others: they could not be spelled back). Judged on the least and greatest value, a loop
/// without branches; integer and decimal columns have no bounds to check.
pub(crate) fn all_in_range(kind: Kind, values: &[i64]) -> bool {
    let (low, high) = match kind {
        Kind::Date => (crate::spelling::FIRST_DAY, crate::spelling::LAST_DAY),
        Kind::Timestamp(f) => crate::spelling::timestamp_range(f),
        Kind::LogTime(p) => p.range(),
        _ => return true,
    };
    let (least, greatest) = values
        .iter()
        .fold((i64::MAX, i64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    values.is_empty() || (low <= least && greatest <= high)
}

/// The streams a column chunk is stored as.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Role {
    Flags = 0,
    Ints = 1,
    Lengths = 2,
    Bytes = 3,
    Ids = 4,
    Vars = 5,
    /// A text column that *follows* another (a varint, that column's index, then a `Follow`
    /// mode byte): its value is a function of the other's, stored once per distinct value of
    /// the other, or the other's value itself.
    Follows = 6,
    /// A text column coded as words (the words codec): tokens per row; then the ids of the
    /// tokens that start a row or follow a separator, and of those that follow a word.
    TokenCounts = 7,
    Words = 8,
    Separators = 9,
    /// A templated text column whose ids stream lists the rows' template ids grouped by the
    /// templates of another column's values (a varint, that column's index), as integer mode 8
    /// lists values.
    GroupedIds = 10,
}

impl Role {
    pub fn from_u8(b: u8) -> Option<Role> {
        Some(match b {
            0 => Role::Flags,
            1 => Role::Ints,
            2 => Role::Lengths,
            3 => Role::Bytes,
            4 => Role::Ids,
            5 => Role::Vars,
            6 => Role::Follows,
            7 => Role::TokenCounts,
            8 => Role::Words,
            9 => Role::Separators,
            10 => Role::GroupedIds,
            _ => return None,
        })
    }
}

/// A column as the shredder saw it: each row's value (unquoted) and its flag.
#[derive(Default, Clone, Debug)]
pub struct RawColumn {
    pub data: Vec<u8>,
    /// End of each row's value in `data`.
    pub ends: Vec<u32>,
    pub flags: Vec<u8>,
}

impl RawColumn {
    pub fn rows(&self) -> usize {
        self.ends.len()
    }

    pub fn value(&self, row: usize) -> &[u8] {
        let start = if row == 0 { 0 } else { self.ends[row - 1] };
        &self.data[start as usize..self.ends[row] as usize]
    }

    /// A copy of the first `n` rows (all of them if there are fewer).
    pub fn head(&self, n: usize) -> RawColumn {
        let n = n.min(self.rows());
        let end = if n == 0 { 0 } else { self.ends[n - 1] as usize };
        RawColumn {
            data: self.data[..end].to_vec(),
            ends: self.ends[..n].to_vec(),
            flags: self.flags[..n].to_vec(),
        }
    }

    pub fn push(&mut self, value: &[u8], flag: u8) {
        self.data.extend_from_slice(value);
        self.ends.push(self.data.len() as u32);
        self.flags.push(flag);
    }

    /// Pushes `src[start..end]` with `flag`: [`RawColumn::push`] for a value cut from a larger
    /// input, copied with one wide copy where the input goes on long enough after it (most
    /// values are a few bytes, and a call to memcpy costs more than copying them).
    #[inline]
    pub fn push_from(&mut self, src: &[u8], start: usize, end: usize, flag: u8) {
        if end + MARGIN <= src.len() {
            extend_from_padded(&mut self.data, src, start, end - start);
        } else {
            self.data.extend_from_slice(&src[start..end]);
        }
        self.ends.push(self.data.len() as u32);
        self.flags.push(flag);
    }
}

/// A column chunk's statistics, for pruning row groups by predicate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub nulls: u64,
    /// Smallest and largest value: i64 for typed kinds (scaled decimals, days for dates).
    pub int_range: Option<(i64, i64)>,
    /// Smallest and largest text value as a read presents it (escapes undone: see
    /// the escapes), when both are at most [`MAX_STAT_TEXT`] bytes.
    pub text_range: Option<(Vec<u8>, Vec<u8>)>,
    /// Distinct values, when known exactly (dictionary-coded text).
    pub distinct: Option<u64>,
}

/// Longest text kept as a min/max statistic.
pub const MAX_STAT_TEXT: usize = 64;

/// The smallest and largest of `values`, when both are at most [`MAX_STAT_TEXT`] bytes.
pub fn text_range<V: AsRef<[u8]> + Clone>(
    values: impl Iterator<Item = V>,
) -> Option<(Vec<u8>, Vec<u8>)> {
    // Each value is first compared by its first eight bytes in one integer: where those
    // differ from the smallest's and the largest's (nearly every value) the order is settled
    // without comparing bytes one call at a time.
    let mut values = values.map(|v| (order_key(v.as_ref()), v));
    let first = values.next()?;
    let (mut low, mut high) = (first.clone(), first);
    for (k, v) in values {
        if k < low.0 || (k == low.0 && v.as_ref() < low.1.as_ref()) {
            low = (k, v);
        } else if k > high.0 || (k == high.0 && v.as_ref() > high.1.as_ref()) {
            high = (k, v);
        }
    }
    let (a, b) = (low.1, high.1);
    (a.as_ref().len() <= MAX_STAT_TEXT && b.as_ref().len() <= MAX_STAT_TEXT)
        .then(|| (a.as_ref().to_vec(), b.as_ref().to_vec()))
}

/// The first eight bytes of `v` as a big-endian integer, zero-padded: a key that orders
/// values as their bytes do wherever two keys differ (equal keys settle nothing).
#[inline(always)]
fn order_key(v: &[u8]) -> u64 {
    match v.first_chunk::<8>() {
        Some(head) => u64::from_be_bytes(*head),
        None => {
            let mut head = [0u8; 8];
            head[..v.len()].copy_from_slice(v);
            u64::from_be_bytes(head)
        }
    }
}

/// A column chunk ready to store: kind, statistics and uncompressed streams.
pub struct EncodedColumn {
    pub kind: Kind,
    /// A typed column's present values (for candidates relative to other columns).
    pub values: Vec<i64>,
    /// Bytes of the values as they were spelled (quotes and delimiters not counted).
    pub raw_bytes: u64,
    pub stats: Stats,
    pub streams: Vec<(Role, Vec<u8>)>,
}

/// Rows looked at to decide whether a dictionary or templates are worth trying.
pub(crate) const SAMPLE_ROWS: usize = 1024;

/// Hash maps keyed by column values: a fast hash (FxHash); the keys are the input's own bytes
/// and nothing here needs protection from chosen collisions beyond a slower encode.
pub type FastMap<K, V> = rustc_hash::FxHashMap<K, V>;

pub type FastSet<K> = rustc_hash::FxHashSet<K>;
