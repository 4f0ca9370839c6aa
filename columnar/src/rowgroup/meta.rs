//! A row group's header: its table, input size, row count and checksum, and per column its
//! kind, statistics and streams (role and stored size); written by the encoder, parsed and
//! bounds-checked by every reader before anything else.

use crate::error::{Error, Result};
use crate::model::{Kind, Role, Stats};
use crate::wire::{put_varint, zigzag, Cursor};

/// The largest row group input a reader accepts (writers cut them smaller).
pub const MAX_INPUT: u64 = 64 << 20;

/// Row-level streams, after the columns' streams.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RowRole {
    Terminators = 0,
    ExceptionIndex = 1,
    ExceptionBytes = 2,
    /// JSON lines: the shape list, and one shape id per row.
    Shapes = 3,
    ShapeIds = 4,
}

/// Where one compressed stream lies in the archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamMeta {
    pub role: u8,
    /// Archive offset of the chunk.
    pub offset: u64,
    pub stored: u64,
}

/// One column chunk's description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnMeta {
    pub kind: Kind,
    /// Bytes of the column's values as spelled in the input.
    pub raw_bytes: u64,
    pub stats: Stats,
    pub streams: Vec<StreamMeta>,
}

impl ColumnMeta {
    /// Compressed bytes of the chunk.
    pub fn stored(&self) -> u64 {
        self.streams.iter().map(|s| s.stored).sum()
    }
}

/// A row group's header, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowGroupMeta {
    /// Archive offset of the row group (its tag byte).
    pub offset: u64,
    /// The table (of the archive's tables) whose rows these are.
    pub table: usize,
    pub rows: u64,
    /// Bytes of input the row group rebuilds to.
    pub input_len: u64,
    /// glyd-core checksum of those bytes.
    pub input_checksum: u32,
    pub columns: Vec<ColumnMeta>,
    pub row_streams: Vec<StreamMeta>,
    /// Archive offset just past the row group.
    pub end: u64,
}

/// A kind's code and the byte after it; a log time's pattern follows those (see
/// [`put_kind`]).
pub(crate) fn kind_code(k: Kind) -> (u8, Option<u8>) {
    match k {
        Kind::Int => (0, None),
        Kind::Decimal(p) => (1, Some(p)),
        Kind::Date => (2, None),
        Kind::Timestamp(f) => (4, Some(f.to_byte())),
        Kind::Text => (3, None),
        Kind::Arrow => (5, None),
        Kind::LogTime(_) => (6, None),
    }
}

/// Appends kind `k` as a column's header gives it: its code, then its format byte or pattern.
pub(crate) fn put_kind(out: &mut Vec<u8>, k: Kind) {
    let (code, extra) = kind_code(k);
    out.push(code);
    out.extend(extra);
    if let Kind::LogTime(p) = k {
        p.encode(out);
    }
}

pub(crate) fn put_stats(out: &mut Vec<u8>, s: &Stats) {
    let bits = u8::from(s.int_range.is_some())
        | u8::from(s.text_range.is_some()) << 1
        | u8::from(s.distinct.is_some()) << 2;
    out.push(bits);
    put_varint(out, s.nulls);
    if let Some((a, b)) = s.int_range {
        put_varint(out, zigzag(a));
        put_varint(out, zigzag(b));
    }
    if let Some((a, b)) = &s.text_range {
        crate::wire::put_prefixed(out, a);
        crate::wire::put_prefixed(out, b);
    }
    if let Some(d) = s.distinct {
        put_varint(out, d);
    }
}

fn get_stats(c: &mut Cursor<'_>, rows: u64) -> Result<Stats> {
    let bits = c.u8()?;
    if bits > 7 {
        return Err(c.corrupt(format!("unknown statistics flags {bits:#x}")));
    }
    let nulls = c.bounded(rows, "null count")? as u64;
    let int_range = if bits & 1 != 0 {
        let (a, b) = (c.signed()?, c.signed()?);
        if a > b {
            return Err(c.corrupt(format!("minimum {a} above maximum {b}")));
        }
        Some((a, b))
    } else {
        None
    };
    let text_range = if bits & 2 != 0 {
        let (a, b) = (c.prefixed()?.to_vec(), c.prefixed()?.to_vec());
        if a > b || a.len() > crate::model::MAX_STAT_TEXT || b.len() > crate::model::MAX_STAT_TEXT {
            return Err(c.corrupt("text minimum above maximum, or longer than 64 bytes"));
        }
        Some((a, b))
    } else {
        None
    };
    let distinct = if bits & 4 != 0 {
        Some(c.bounded(rows, "distinct count")? as u64)
    } else {
        None
    };
    Ok(Stats {
        nulls,
        int_range,
        text_range,
        distinct,
    })
}

pub(crate) fn put_streams(out: &mut Vec<u8>, streams: &[(u8, usize)]) {
    out.push(streams.len() as u8);
    for &(role, stored) in streams {
        out.push(role);
        put_varint(out, stored as u64);
    }
}

fn get_streams(c: &mut Cursor<'_>, at: &mut u64, max_role: u8) -> Result<Vec<StreamMeta>> {
    let n = c.u8()?;
    let mut out: Vec<StreamMeta> = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let role = c.u8()?;
        if role > max_role || out.iter().any(|s| s.role >= role) {
            return Err(c.corrupt(format!(
                "stream role {role} unknown, repeated or out of order"
            )));
        }
        let stored = c.bounded(u64::from(u32::MAX), "stream size")? as u64;
        out.push(StreamMeta {
            role,
            offset: *at,
            stored,
        });
        *at += stored;
    }
    Ok(out)
}

/// Tag byte of a row group.
pub const TAG_ROW_GROUP: u8 = 1;

/// Tag byte of the archive's end (footer follows).
pub const TAG_END: u8 = 0;

/// Tag byte of a table definition (a SQL dump's tables after the first).
pub const TAG_TABLE: u8 = 2;

/// Parses the row group whose tag byte is `src[0]`, at archive offset `offset`, in an archive
/// whose tables have `columns[t]` columns. `src` may extend past the row group; only its
/// header is read.
pub fn parse_header(src: &[u8], offset: u64, columns: &[usize]) -> Result<RowGroupMeta> {
    let mut c = Cursor::new(src, offset, "row group header");
    if c.u8()? != TAG_ROW_GROUP {
        return Err(c.corrupt("expected a row group"));
    }
    let body = c.prefixed()?;
    let start = c.offset() - body.len() as u64;
    let stored_sum = u32::from_le_bytes(c.bytes(4)?.try_into().expect("4 bytes"));
    if glyd_core::checksum(body) != stored_sum {
        return Err(Error::corrupt(
            "row group header",
            start,
            "checksum mismatch (the header is damaged)",
        ));
    }
    let mut at = c.offset();
    let mut h = Cursor::new(body, start, "row group header");
    let table = h.varint()?;
    let columns = *columns
        .get(usize::try_from(table).unwrap_or(usize::MAX))
        .ok_or_else(|| {
            h.corrupt(format!(
                "table {table}, where the archive defines {} so far",
                columns.len()
            ))
        })?;
    let table = table as usize;
    let input_len = h.bounded(MAX_INPUT, "input size")? as u64;
    // Every row but an unterminated last one takes at least one byte of input.
    let rows = h.bounded(input_len + 1, "row count")? as u64;
    let input_checksum = u32::from_le_bytes(h.bytes(4)?.try_into().expect("4 bytes"));
    let ncols = h.bounded(columns as u64, "column count")?;
    if ncols != columns {
        return Err(h.corrupt(format!("{ncols} columns where the archive has {columns}")));
    }
    let mut metas = Vec::with_capacity(ncols);
    for _ in 0..ncols {
        let kind = match h.u8()? {
            0 => Kind::Int,
            1 => match h.u8()? {
                p @ 1..=18 => Kind::Decimal(p),
                p => return Err(h.corrupt(format!("decimal with {p} places"))),
            },
            2 => Kind::Date,
            3 => Kind::Text,
            4 => {
                let b = h.u8()?;
                Kind::Timestamp(
                    crate::spelling::TimeFormat::from_byte(b)
                        .ok_or_else(|| h.corrupt(format!("unknown timestamp format {b:#x}")))?,
                )
            }
            5 => Kind::Arrow,
            6 => Kind::LogTime(crate::timepattern::TimePattern::decode(&mut h)?),
            k => return Err(h.corrupt(format!("unknown column kind {k}"))),
        };
        let raw_bytes = h.bounded(input_len, "column size")? as u64;
        let stats = get_stats(&mut h, rows)?;
        let streams = get_streams(&mut h, &mut at, Role::GroupedIds as u8)?;
        metas.push(ColumnMeta {
            kind,
            raw_bytes,
            stats,
            streams,
        });
    }
    let row_streams = get_streams(&mut h, &mut at, RowRole::ShapeIds as u8)?;
    h.finish()?;
    Ok(RowGroupMeta {
        offset,
        table,
        rows,
        input_len,
        input_checksum,
        columns: metas,
        row_streams,
        end: at,
    })
}
