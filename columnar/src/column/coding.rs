//! How a column chunk is coded, as `glyd inspect` describes it, read from the chunk's roles and
//! the head of its integer and follows streams.
use super::decoded::{Follow, Link};
use crate::codec::ints::{
    DELTA_PLANES, DICTIONARY, GROUPED, ORDERED, PLANES, RELATIVE, SCALED_PLANES,
};
use crate::model::{Kind, Role};
use crate::wire::Cursor;

/// How a column chunk is coded, as `glyd inspect` shows it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Coding {
    /// Text, one value per row.
    Plain,
    Dictionary,
    Templates,
    /// Templates whose ids are stored grouped by another column's templates.
    GroupedTemplates,
    /// Text as a vocabulary of tokens and each row's token ids (the words codec).
    Words,
    /// Text with one value per distinct value of another column, or that column's values
    /// ([`Role::Follows`]).
    Follows(Follow),
    /// Integers as zigzag varints (mode 0) or their differences (mode 1).
    Varints {
        deltas: bool,
    },
    /// Integers as byte planes of value minus the smallest (mode 2) or of differences (mode 3).
    Planes {
        deltas: bool,
    },
    /// Integers as byte planes of (value minus the smallest) ÷ their common step (mode 6).
    ScaledPlanes,
    /// Integers as ids into a dictionary of their distinct values (mode 7).
    IntDictionary,
    /// Integers stored against another column (integer modes 4, 5 and 8).
    Linked(Link),
    /// A typed column whose every row is null.
    Nulls,
    /// A column of an Arrow table stored as Arrow IPC ([`Kind::Arrow`]).
    Arrow,
}

impl Coding {
    /// The coding of a chunk of `kind` whose streams have `roles`, given the head of its
    /// integers stream and its follows stream (`None` where absent). Bytes that do not parse
    /// describe as the unlinked coding their first byte names; decoding reports them.
    pub fn of(kind: Kind, roles: &[Role], ints: Option<&[u8]>, follows: Option<&[u8]>) -> Coding {
        let index = |b: &[u8]| {
            let mut c = Cursor::new(b, 0, "column index");
            c.bounded(u64::from(u32::MAX), "column index").ok()
        };
        if kind == Kind::Arrow {
            return Coding::Arrow;
        }
        if kind == Kind::Text {
            return match follows.and_then(|f| Follow::parse(f).ok()) {
                Some(f) => Coding::Follows(f),
                None if roles.contains(&Role::GroupedIds) => Coding::GroupedTemplates,
                None if roles.contains(&Role::Vars) => Coding::Templates,
                None if roles.contains(&Role::TokenCounts) => Coding::Words,
                None if roles.contains(&Role::Ids) => Coding::Dictionary,
                None => Coding::Plain,
            };
        }
        let Some(ints) = ints.filter(|i| !i.is_empty()) else {
            return Coding::Nulls;
        };
        let linked = |mode: u8| {
            let b = index(&ints[1..])?;
            Some(Coding::Linked(match mode {
                RELATIVE => Link::Relative(b),
                ORDERED => Link::Ordered(b),
                _ => Link::Grouped(b),
            }))
        };
        match ints[0] {
            m @ (RELATIVE | ORDERED | GROUPED) => {
                linked(m).unwrap_or(Coding::Varints { deltas: false })
            }
            m @ (PLANES | DELTA_PLANES) => Coding::Planes {
                deltas: m == DELTA_PLANES,
            },
            SCALED_PLANES => Coding::ScaledPlanes,
            DICTIONARY => Coding::IntDictionary,
            m => Coding::Varints { deltas: m == 1 },
        }
    }

    /// Names the coding; `name` gives a column's name by index.
    pub fn describe(self, name: impl Fn(usize) -> String) -> String {
        match self {
            Coding::Plain => "plain".into(),
            Coding::Dictionary => "dictionary".into(),
            Coding::Templates => "templates".into(),
            Coding::GroupedTemplates => "templates, grouped ids".into(),
            Coding::Follows(Follow::Grouped(b)) => format!("templates grouped by {}", name(b)),
            Coding::Words => "words".into(),
            Coding::Follows(Follow::Entries(b)) => format!("follows {}", name(b)),
            Coding::Follows(Follow::Copy(b)) => format!("same as {}", name(b)),
            Coding::Varints { deltas: false } => "varints".into(),
            Coding::Varints { deltas: true } => "varint deltas".into(),
            Coding::Planes { deltas: false } => "byte planes".into(),
            Coding::Planes { deltas: true } => "delta byte planes".into(),
            Coding::ScaledPlanes => "scaled byte planes".into(),
            Coding::IntDictionary => "dictionary of values".into(),
            Coding::Linked(Link::Relative(b)) => format!("minus {}", name(b)),
            Coding::Linked(Link::Ordered(b)) => format!("in order of {}", name(b)),
            Coding::Linked(Link::Grouped(b)) => format!("grouped by {}", name(b)),
            Coding::Nulls => "all null".into(),
            Coding::Arrow => "Arrow IPC".into(),
        }
    }
}
