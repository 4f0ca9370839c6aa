//! A decoded column chunk ([`Column`]): a typed column's values (or still its byte planes), a
//! text column's entries and per-row ids, an Arrow column's array, with the flags of each row
//! and what the column depends on; and [`decode`], which checks every stream as it reads it.
use arrow_array::ArrayRef;

use crate::codec::dict::check_text_size;
use crate::codec::ints::{decode_ints, plane_layout, Planes, GROUPED, ORDERED, RELATIVE};
use crate::error::{Error, Result};
use crate::model::{all_in_range, has_value, Kind, Role, ABSENT, BARE};
use crate::wire::{put_varint, Cursor};

/// How a text column follows another column of its row group, the *base* ([`Role::Follows`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Follow {
    /// One entry per distinct value of column `.0`, in order of first appearance (mode 0).
    Entries(usize),
    /// Each row's value is column `.0`'s value in that row, spelled without quotes (mode 1).
    Copy(usize),
    /// Templates whose ids are stored grouped by column `.0`'s templates ([`Role::GroupedIds`]):
    /// the variables are filled in once that column is read.
    Grouped(usize),
}

impl Follow {
    /// The column followed.
    pub fn base(self) -> usize {
        match self {
            Follow::Entries(b) | Follow::Copy(b) | Follow::Grouped(b) => b,
        }
    }

    /// The follows stream: the base's index, then the mode.
    pub(crate) fn stream(self) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, self.base() as u64);
        out.push(u8::from(matches!(self, Follow::Copy(_))));
        out
    }

    pub(crate) fn parse(stream: &[u8]) -> Result<Follow> {
        let mut c = Cursor::new(stream, 0, "follows stream");
        let b = c.bounded(u64::from(u32::MAX), "followed column")?;
        let follow = match c.u8()? {
            0 => Follow::Entries(b),
            1 => Follow::Copy(b),
            m => return Err(c.corrupt(format!("unknown follows mode {m}"))),
        };
        c.finish()?;
        Ok(follow)
    }
}

/// How a typed column's stored integers depend on another column of its row group.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Link {
    /// Differences from column `.0`'s values in the same rows (integer mode 4).
    Relative(usize),
    /// In the order of column `.0`'s values (integer mode 5).
    Ordered(usize),
    /// Grouped by the template of text column `.0`'s value in each row (integer mode 8): a
    /// pid or a time stored beside the others of its event.
    Grouped(usize),
}

impl Link {
    /// The column this one depends on.
    pub fn base(self) -> usize {
        match self {
            Link::Relative(b) | Link::Ordered(b) | Link::Grouped(b) => b,
        }
    }
}

/// A templated text chunk's templates and each row's template: enough to judge a filter once
/// per template ([`Column::rows_passing`]).
#[derive(Clone, Debug)]
pub struct TemplateCodes {
    /// The templates back to back, and where each ends (after a leading 0).
    pub(crate) data: Vec<u8>,
    pub(crate) offsets: Vec<u32>,
    /// Each row's template.
    pub(crate) ids: Vec<u32>,
    /// Until the ids are put back in row order ([`Follow::Grouped`]): what filling the
    /// holes takes then.
    pub(crate) deferred: Option<Box<Deferred>>,
}

/// A templated chunk's variables and integers streams, and the most bytes its values may
/// take, kept until its ids are in row order.
#[derive(Clone, Debug)]
pub(crate) struct Deferred {
    pub(crate) vars: Vec<u8>,
    pub(crate) ints: Vec<u8>,
    pub(crate) max_text: usize,
}

/// A decoded column chunk.
#[derive(Clone, Debug)]
pub enum Column {
    Typed {
        kind: Kind,
        flags: Option<Vec<u8>>,
        /// The present (non-null) values, in row order; until `resolve_links` has run on
        /// a column with a `link`, the sequence the link stores. Empty where `planes` holds
        /// them.
        values: Vec<i64>,
        /// The column these values depend on, and how.
        link: Option<Link>,
        /// The values still as byte planes, where the chunk was decoded for reading as Arrow
        /// (see [`decode`]); `Column::values_decoded` turns them into `values`.
        planes: Option<Box<Planes>>,
    },
    Text {
        flags: Option<Vec<u8>>,
        /// Entries: every row's value, or the dictionary when `ids` is set.
        data: Vec<u8>,
        offsets: Vec<u32>,
        ids: Option<Vec<u32>>,
        /// The column this one follows (see [`Role::Follows`]): until `resolve_links` has
        /// run, the entries are one per distinct value of that column (or none, for a copy)
        /// and `ids` is unset.
        follows: Option<Follow>,
        /// A templated chunk's codes, kept beside its values (every row's, filled in).
        templates: Option<Box<TemplateCodes>>,
    },
    /// A column of an Arrow table as its Arrow IPC stream (see [`Kind::Arrow`]).
    Arrow(Vec<u8>),
}

impl Column {
    /// The column this one is linked to (typed) or follows (text), if any.
    pub fn link_base(&self) -> Option<usize> {
        match self {
            Column::Typed { link: Some(l), .. } => Some(l.base()),
            Column::Text {
                follows: Some(f), ..
            } => Some(f.base()),
            _ => None,
        }
    }

    /// Turns a typed chunk's values kept as planes (see [`decode`]) into `values`, for uses
    /// that read them other than as Arrow arrays of the chunk's own type.
    pub fn decode_planes(&mut self) -> Result<()> {
        if let Column::Typed { values, planes, .. } = self {
            if let Some(p) = planes.take() {
                *values = p.values(0..p.layout.count, |v| v)?;
            }
        }
        Ok(())
    }

    /// A text column's bytes: every value's, or its dictionary entries'.
    pub fn text_bytes(&self) -> Option<&[u8]> {
        match self {
            Column::Text { data, .. } => Some(data),
            _ => None,
        }
    }
}

/// Whether byte `at` of valid UTF-8 `data` begins a character (or is its end).
pub(crate) fn char_boundary(data: &[u8], at: u32) -> bool {
    let at = at as usize;
    at == data.len() || data.get(at).is_some_and(|&b| (b as i8) >= -0x40)
}

/// Where the next range of a column's rows begins, for [`Column::to_arrow_rows`], and what
/// the column's earlier ranges made that later ones reuse.
#[derive(Default)]
pub struct RowCursor {
    /// Where the range's first value lies in a typed column's values.
    pub(crate) next_value: usize,
    /// A text column's bytes and dictionary entries as Arrow views.
    pub(crate) views: Option<TextViews>,
    /// A typed column's values spelled as text, all rows.
    pub(crate) spelled: Option<ArrayRef>,
}

/// The longest value an Arrow view holds inline, in the view itself.
pub(crate) const INLINE_VIEW: u32 = 12;

/// A text column's bytes as an Arrow buffer, for `Utf8View` arrays of its rows.
pub(crate) struct TextViews {
    pub(crate) buffer: arrow_buffer::Buffer,
    /// A dictionary column's entries as views of `buffer` (empty for other columns).
    pub(crate) entries: Vec<u128>,
    /// `buffer` is valid UTF-8 (and, for a dictionary, each entry begins and ends on a
    /// character boundary).
    pub(crate) utf8: bool,
    /// A dictionary whose every entry is at most [`INLINE_VIEW`] bytes.
    pub(crate) short_entries: bool,
}

/// Refuses a decimal kind with places a reader cannot spell (the writer makes 1 to 18).
fn check_places(kind: Kind) -> Result<()> {
    match kind {
        Kind::Decimal(p) if !(1..=18).contains(&p) => Err(Error::corrupt(
            "column chunk",
            0,
            format!("decimal with {p} places"),
        )),
        _ => Ok(()),
    }
}

/// Takes the stream for `role` out of `streams` (empty when the chunk did not store it).
fn take(streams: &mut [(Role, Vec<u8>)], role: Role) -> Option<Vec<u8>> {
    streams
        .iter_mut()
        .find(|(r, _)| *r == role)
        .map(|(_, s)| std::mem::take(s))
}

/// Rebuilds a column chunk of `rows` rows and `kind` from its decoded streams, checking that
/// they agree with each other (lengths, counts, ids, flags) and that its text values come to
/// at most `max_text` bytes (the row group's input size: a dictionary or template cannot make
/// a reader build more than the input held).
pub fn decode(
    kind: Kind,
    rows: usize,
    max_text: usize,
    mut streams: Vec<(Role, Vec<u8>)>,
    keep_planes: bool,
) -> Result<Column> {
    let bad = |detail: String| Error::corrupt("column chunk", 0, detail);
    if kind == Kind::Arrow {
        return match streams.as_mut_slice() {
            [(Role::Bytes, ipc)] => Ok(Column::Arrow(std::mem::take(ipc))),
            _ => Err(bad("an Arrow column chunk is one stream of bytes".into())),
        };
    }
    let flags = take(&mut streams, Role::Flags);
    if let Some(f) = &flags {
        if f.len() != rows {
            return Err(bad(format!("{} flags for {rows} rows", f.len())));
        }
        if let Some(&x) = f.iter().find(|&&x| x > ABSENT) {
            return Err(bad(format!("flag {x} in a {} column", kind.name())));
        }
    }
    if kind != Kind::Text {
        let present = flags
            .as_ref()
            .map_or(rows, |f| f.iter().filter(|&&x| has_value(x)).count());
        let ints = take(&mut streams, Role::Ints).ok_or_else(|| bad("no integer stream".into()))?;
        // Integers and decimals without nulls or links may stay as planes (dates and times
        // are checked for range, which needs their values).
        if keep_planes && flags.is_none() && matches!(kind, Kind::Int | Kind::Decimal(_)) {
            if let Some((at, layout)) = plane_layout(&ints, present)?.filter(|(_, l)| !l.deltas) {
                check_places(kind)?;
                return Ok(Column::Typed {
                    kind,
                    flags,
                    values: Vec::new(),
                    link: None,
                    planes: Some(Box::new(Planes {
                        stream: ints,
                        at,
                        layout,
                    })),
                });
            }
        }
        let (values, link) = match ints.first() {
            Some(&mode @ (RELATIVE | ORDERED | GROUPED)) => {
                let mut c = Cursor::new(&ints[1..], 0, "integer stream");
                let base = c.bounded(u64::from(u32::MAX), "base column")?;
                let at = ints.len() - c.remaining();
                let link = match mode {
                    RELATIVE => Link::Relative(base),
                    ORDERED => Link::Ordered(base),
                    _ => Link::Grouped(base),
                };
                (decode_ints(&ints[at..], present)?, Some(link))
            }
            _ => (decode_ints(&ints, present)?, None),
        };
        if link.is_none() && !all_in_range(kind, &values) {
            return Err(bad("date outside years 0000..=9999".into()));
        }
        check_places(kind)?;
        return Ok(Column::Typed {
            kind,
            flags,
            values,
            link,
            planes: None,
        });
    }
    let lengths = take(&mut streams, Role::Lengths).unwrap_or_default();
    let data = take(&mut streams, Role::Bytes).unwrap_or_default();
    let ids = take(&mut streams, Role::Ids);
    let vars = take(&mut streams, Role::Vars);
    let counts = take(&mut streams, Role::TokenCounts);
    let (words, separators) = (
        take(&mut streams, Role::Words),
        take(&mut streams, Role::Separators),
    );
    if counts.is_none() && (words.is_some() || separators.is_some()) {
        return Err(bad("word ids without token counts".into()));
    }
    if vars.is_some() && ids.is_none() {
        return Err(bad("template variables without template ids".into()));
    }
    let follows = match take(&mut streams, Role::Follows) {
        Some(f) if ids.is_none() => Some(Follow::parse(&f)?),
        Some(_) => return Err(bad("a followed column with ids of its own".into())),
        None => None,
    };
    if matches!(follows, Some(Follow::Copy(_))) && !(lengths.is_empty() && data.is_empty()) {
        return Err(bad("a copied column with values of its own".into()));
    }
    let entries = if ids.is_some() || follows.is_some() {
        lengths.len()
    } else {
        rows
    };
    let mut c = Cursor::new(&lengths, 0, "text lengths");
    let mut offsets = Vec::with_capacity(entries.min(lengths.len()) + 1);
    offsets.push(0u32);
    let mut end = 0u64;
    while !c.is_empty() {
        // Checked: a length near 2^64 must not wrap around to a smaller end.
        end = end
            .checked_add(c.varint()?)
            .filter(|&e| e <= data.len() as u64)
            .ok_or_else(|| bad("text lengths run past the text bytes".into()))?;
        offsets.push(end as u32);
    }
    if end != data.len() as u64 {
        return Err(bad("text bytes longer than their lengths".into()));
    }
    let entry_count = offsets.len() - 1;
    if let Some(counts) = counts {
        if ids.is_some() || vars.is_some() || follows.is_some() {
            return Err(bad("words with ids, variables or follows".into()));
        }
        let (values, ends) = crate::codec::words::decode(
            &data,
            &offsets,
            &counts,
            &words.unwrap_or_default(),
            &separators.unwrap_or_default(),
            rows,
            max_text,
        )
        .map_err(bad)?;
        return Ok(Column::plain_text(flags, values, ends));
    }
    let mut ids = match ids {
        None if follows.is_some() => None,
        None => {
            if entry_count != rows {
                return Err(bad(format!("{entry_count} text values for {rows} rows")));
            }
            None
        }
        Some(raw) => {
            let (&width, body) = raw
                .split_first()
                .ok_or_else(|| bad("empty id stream".into()))?;
            if !(width == 1 || width == 2) || body.len() != rows * usize::from(width) {
                return Err(bad(format!(
                    "id stream of width {width} and {} bytes for {rows} rows",
                    body.len()
                )));
            }
            let ids: Vec<u32> = if width == 1 {
                body.iter().map(|&b| u32::from(b)).collect()
            } else {
                body.chunks_exact(2)
                    .map(|p| u32::from(u16::from_le_bytes([p[0], p[1]])))
                    .collect()
            };
            check_text_size(&ids, &offsets, max_text, "dictionary ids")?;
            Some(ids)
        }
    };
    let grouped = take(&mut streams, Role::GroupedIds);
    if grouped.is_some() && vars.is_none() {
        return Err(bad("grouped ids without templates".into()));
    }
    if let Some(vars) = &vars {
        // Templates: fill the holes now; the column is then every row's value, with the
        // codes kept for filters (see `Column::rows_passing`).
        let ids = ids
            .take()
            .ok_or_else(|| bad("template variables without template ids".into()))?;
        let ints = take(&mut streams, Role::Ints).unwrap_or_default();
        if let Some(g) = grouped {
            // Ids in another column's order: the holes are filled once it is read.
            let mut c = Cursor::new(&g, 0, "grouped ids stream");
            let base = c.bounded(u64::from(u32::MAX), "base column")?;
            c.finish()?;
            return Ok(Column::Text {
                flags,
                data: Vec::new(),
                offsets: vec![0],
                ids: None,
                follows: Some(Follow::Grouped(base)),
                templates: Some(Box::new(TemplateCodes {
                    data,
                    offsets,
                    ids,
                    deferred: Some(Box::new(Deferred {
                        vars: vars.clone(),
                        ints,
                        max_text,
                    })),
                })),
            });
        }
        let mut values = Vec::new();
        let mut ends = Vec::with_capacity(rows + 1);
        ends.push(0u32);
        crate::codec::template::decode(
            &data,
            &offsets,
            &ids,
            vars,
            &ints,
            max_text,
            &mut values,
            &mut ends,
        )
        .map_err(bad)?;
        return Ok(Column::Text {
            flags,
            data: values,
            offsets: ends,
            ids: None,
            follows: None,
            templates: Some(Box::new(TemplateCodes {
                data,
                offsets,
                ids,
                deferred: None,
            })),
        });
    }
    Ok(Column::Text {
        flags,
        data,
        offsets,
        ids,
        follows,
        templates: None,
    })
}

impl Column {
    /// A text column of every row's value back to back (`offsets`: 0, then each row's end).
    fn plain_text(flags: Option<Vec<u8>>, data: Vec<u8>, offsets: Vec<u32>) -> Column {
        Column::Text {
            flags,
            data,
            offsets,
            ids: None,
            follows: None,
            templates: None,
        }
    }

    pub(crate) fn flag(flags: &Option<Vec<u8>>, row: usize) -> u8 {
        flags.as_ref().map_or(BARE, |f| f[row])
    }
}
