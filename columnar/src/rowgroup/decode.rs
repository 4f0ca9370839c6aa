//! Decoding a row group: the memory it will need (from its header and chunk headers alone),
//! some or all of its columns decoded in parallel and resolved against each other, and its
//! input rebuilt and checked against the stored size and checksum.

use glyd_core::chunk::decode_chunk;
use rayon::prelude::*;

use super::meta::{ColumnMeta, RowGroupMeta, RowRole, StreamMeta};
use crate::column::{Coding, Column};
use crate::error::{Error, Result};
use crate::fetched::Fetched;
use crate::model::{Dialect, Exceptions, Kind, Role, Shapes, LF};
use crate::rebuilt::Rebuilt;
use crate::wire::Cursor;

/// Where a row group's chunks are read from.
#[derive(Clone, Copy)]
pub enum GroupBytes<'a> {
    /// Bytes of the archive from archive offset `base` on (a whole archive, or one row group
    /// read into a buffer): a chunk outside them is truncated.
    Slice { base: u64, bytes: &'a [u8] },
    /// The ranges a ranged reader holds: a chunk outside them is missing (to be fetched).
    Fetched(&'a Fetched),
}

impl<'a> GroupBytes<'a> {
    /// The chunk of stream `s`, or `None` where these bytes do not hold it.
    fn chunk(&self, s: &StreamMeta) -> Option<&'a [u8]> {
        let end = s.offset.checked_add(s.stored)?;
        match *self {
            GroupBytes::Slice { base, bytes } => {
                let start = usize::try_from(s.offset.checked_sub(base)?).ok()?;
                bytes.get(start..start.checked_add(s.stored as usize)?)
            }
            GroupBytes::Fetched(f) => f.get(s.offset..end),
        }
    }

    /// An error for the chunks of `streams` these bytes lack: truncated for a slice, missing
    /// (naming every range) for fetched bytes.
    fn lacking(&self, streams: &[&StreamMeta]) -> Error {
        match self {
            GroupBytes::Fetched(_) => Error::Missing {
                ranges: streams
                    .iter()
                    .map(|s| s.offset..s.offset + s.stored)
                    .collect(),
            },
            GroupBytes::Slice { .. } => Error::Truncated {
                what: "column chunk",
                offset: streams.first().map_or(0, |s| s.offset),
            },
        }
    }
}

/// Decodes the chunks of `streams` from `src`.
fn decode_streams(
    src: GroupBytes,
    streams: &[StreamMeta],
    limit: usize,
) -> Result<Vec<(u8, Vec<u8>)>> {
    let lacking: Vec<&StreamMeta> = streams.iter().filter(|s| src.chunk(s).is_none()).collect();
    if !lacking.is_empty() {
        return Err(src.lacking(&lacking));
    }
    streams
        .par_iter()
        .map(|s| {
            let chunk = src.chunk(s).expect("checked above");
            Ok((s.role, decode_chunk(chunk, limit, s.offset)?))
        })
        .collect()
}

/// Column `i` of the row group `meta`, or a request error naming how many there are.
fn column_meta(meta: &RowGroupMeta, i: usize) -> Result<&ColumnMeta> {
    meta.columns.get(i).ok_or_else(|| {
        Error::Request(format!(
            "column {i} does not exist (the row group has {})",
            meta.columns.len()
        ))
    })
}

/// Decodes only the streams of chunk `cm` that have one of `roles`, each with its role.
fn chunk_streams(
    src: GroupBytes,
    meta: &RowGroupMeta,
    cm: &ColumnMeta,
    roles: &[Role],
) -> Result<Vec<(u8, Vec<u8>)>> {
    let wanted: Vec<StreamMeta> = cm
        .streams
        .iter()
        .filter(|s| roles.iter().any(|&r| s.role == r as u8))
        .cloned()
        .collect();
    decode_streams(src, &wanted, chunk_limit(meta))
}

/// The stream of `role` among `decoded`, if it is there.
fn stream_of(decoded: &[(u8, Vec<u8>)], role: Role) -> Option<&[u8]> {
    decoded
        .iter()
        .find(|(r, _)| *r == role as u8)
        .map(|(_, b)| b.as_slice())
}

/// How column `i` of the row group `meta` (bytes from `src[0]`) is coded: decodes at most its
/// integers and follows streams, not the column.
pub fn column_coding(src: GroupBytes, meta: &RowGroupMeta, i: usize) -> Result<Coding> {
    let cm = column_meta(meta, i)?;
    let decoded = chunk_streams(src, meta, cm, &[Role::Ints, Role::Follows])?;
    let roles: Vec<Role> = cm
        .streams
        .iter()
        .filter_map(|s| Role::from_u8(s.role))
        .collect();
    Ok(Coding::of(
        cm.kind,
        &roles,
        stream_of(&decoded, Role::Ints),
        stream_of(&decoded, Role::Follows),
    ))
}

/// The sorted distinct values of column `i` when it is dictionary-coded text (`None` for a
/// chunk coded any other way), decoding only the dictionary's lengths and bytes: enough to
/// tell whether a value occurs in the chunk without decoding a row.
pub fn chunk_dictionary(
    src: GroupBytes,
    meta: &RowGroupMeta,
    i: usize,
) -> Result<Option<Vec<Vec<u8>>>> {
    let cm = column_meta(meta, i)?;
    let has = |r: Role| cm.streams.iter().any(|s| s.role == r as u8);
    if cm.kind != Kind::Text || !has(Role::Ids) || has(Role::Vars) || has(Role::Follows) {
        return Ok(None);
    }
    let decoded = chunk_streams(src, meta, cm, &[Role::Lengths, Role::Bytes])?;
    let lengths = stream_of(&decoded, Role::Lengths).unwrap_or_default();
    let bytes = stream_of(&decoded, Role::Bytes).unwrap_or_default();
    let mut c = Cursor::new(lengths, meta.offset, "dictionary lengths");
    let (mut entries, mut at) = (Vec::new(), 0usize);
    while !c.is_empty() {
        let n = c.bounded((bytes.len() - at) as u64, "dictionary entry length")?;
        entries.push(bytes[at..at + n].to_vec());
        at += n;
    }
    if at != bytes.len() {
        return Err(Error::corrupt(
            "column chunk",
            meta.offset,
            "dictionary bytes longer than their lengths",
        ));
    }
    Ok(Some(entries))
}

/// Decodes the columns in `which` (all when `None`) of the row group `meta`, whose bytes start
/// at `src[0]` (archive offset `meta.offset`): in parallel on the current rayon pool, or with
/// `parallel` false one after another on the calling thread. With `keep_planes`, for reading
/// as Arrow arrays of each column's own type, integer and decimal chunks may keep their
/// values as planes (see [`crate::codec::ints::Planes`]).
pub fn decode_columns(
    src: GroupBytes,
    meta: &RowGroupMeta,
    which: Option<&[usize]>,
    parallel: bool,
    keep_planes: bool,
) -> Result<Vec<Column>> {
    let limit = chunk_limit(meta);
    let all: Vec<usize> = (0..meta.columns.len()).collect();
    let which = which.unwrap_or(&all);
    let decode_one = |i: usize| -> Result<Column> {
        let cm = column_meta(meta, i)?;
        let streams = decode_streams(src, &cm.streams, limit)?;
        let streams = streams
            .into_iter()
            .map(|(r, b)| (Role::from_u8(r).expect("roles checked at parse"), b))
            .collect();
        crate::column::decode(
            cm.kind,
            meta.rows as usize,
            meta.input_len as usize,
            streams,
            keep_planes,
        )
        .map_err(|e| at_column(e, i, cm.streams.first().map_or(meta.offset, |s| s.offset)))
    };
    let mut slots: Vec<Option<Column>> = (0..meta.columns.len()).map(|_| None).collect();
    let mut unique = which.to_vec();
    unique.sort_unstable();
    unique.dedup();
    let decoded: Vec<(usize, Result<Column>)> = match parallel {
        true => unique.par_iter().map(|&i| (i, decode_one(i))).collect(),
        false => unique.iter().map(|&i| (i, decode_one(i))).collect(),
    };
    for (i, c) in decoded {
        slots[i] = Some(c?);
    }
    // Columns linked to another need that one too, and its base in turn.
    loop {
        let missing: Vec<usize> = slots
            .iter()
            .filter_map(|c| c.as_ref()?.link_base())
            .filter(|&b| b < meta.columns.len() && slots[b].is_none())
            .collect();
        if missing.is_empty() {
            break;
        }
        for b in missing {
            if slots[b].is_none() {
                slots[b] = Some(decode_one(b)?);
            }
        }
    }
    // A link's base is read by value.
    let bases: Vec<usize> = slots
        .iter()
        .filter_map(|c| c.as_ref()?.link_base())
        .collect();
    for b in bases {
        if let Some(Some(c)) = slots.get_mut(b) {
            c.decode_planes()
                .map_err(|e| at_column(e, b, meta.offset))?;
        }
    }
    crate::column::resolve_links(&mut slots, meta.rows as usize, meta.input_len as usize)
        .map_err(|e| at_column(e, usize::MAX, meta.offset))?;
    // A column asked for twice is cloned; otherwise each is moved out once, at its last use.
    Ok(which
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            if which[k + 1..].contains(&i) {
                slots[i].clone().expect("decoded above")
            } else {
                slots[i].take().expect("decoded above")
            }
        })
        .collect())
}

/// Puts a column number and archive offset into a column decoding error.
fn at_column(e: Error, i: usize, offset: u64) -> Error {
    match e {
        Error::Corrupt { what, detail, .. } => Error::Corrupt {
            what,
            offset,
            detail: if i == usize::MAX {
                detail
            } else {
                format!("column {i}: {detail}")
            },
        },
        e => e,
    }
}

/// The most bytes any stream of a row group can decode to: integers take at most 10 bytes per
/// input byte, and everything else less.
/// Bytes a reader holds per row of each decoded column at most (a value, its null flag, its
/// text offset and dictionary id), for [`decode_need`].
const ROW_BYTES: u64 = 24;

/// An upper bound on the memory that decoding row group `meta` (bytes from `src[0]`) takes:
/// its rebuilt input, every chunk decoded (sizes from the chunk headers, nothing decoded), and
/// the per-row entries of each column. A reader compares it with its memory limit before it
/// decodes anything, so a small archive that declares huge row groups is refused up front.
pub fn decode_need(src: GroupBytes, meta: &RowGroupMeta) -> Result<u64> {
    let mut need = meta.input_len;
    let streams = meta
        .columns
        .iter()
        .flat_map(|c| &c.streams)
        .chain(&meta.row_streams);
    for s in streams {
        let head = match src.chunk(s) {
            Some(head) => head,
            // A ranged reader decodes only the chunks it fetched.
            None if matches!(src, GroupBytes::Fetched(_)) => continue,
            None => return Err(src.lacking(&[s])),
        };
        need = need.saturating_add(glyd_core::chunk::declared_size(head, s.offset)?);
    }
    let cells = meta.rows.saturating_mul(meta.columns.len() as u64 + 1);
    Ok(need.saturating_add(cells.saturating_mul(ROW_BYTES)))
}

/// [`decode_need`] checked against `limit`: the need, or an error naming the row group.
pub fn check_need(src: GroupBytes, meta: &RowGroupMeta, limit: u64) -> Result<u64> {
    let need = decode_need(src, meta)?;
    if need > limit {
        return Err(glyd_core::Error::MemoryLimit {
            what: "row group",
            offset: meta.offset,
            needed: need,
            limit,
        }
        .into());
    }
    Ok(need)
}

fn chunk_limit(meta: &RowGroupMeta) -> usize {
    (meta.input_len as usize)
        .saturating_mul(10)
        .saturating_add(64)
}

/// Rebuilds the row group's input and appends it to `out`, checking it against the stored
/// size and checksum.
pub fn rebuild(src: GroupBytes, meta: &RowGroupMeta, d: &Dialect, out: &mut Vec<u8>) -> Result<()> {
    let start = out.len();
    out.reserve(meta.input_len as usize);
    rebuild_into(src, meta, d, &mut Rebuilt::kept(out))?;
    let rebuilt = &out[start..];
    check_rebuilt(meta, rebuilt.len(), glyd_core::checksum(rebuilt))
}

/// Rebuilds the row group's input and passes it to `take` a piece at a time, while each piece
/// is still in cache (`buf` is scratch space, reused). Checks the stored size and checksum at
/// the end: an error then means `take` has had bytes that are not the input.
pub fn rebuild_passing(
    src: GroupBytes,
    meta: &RowGroupMeta,
    d: &Dialect,
    buf: &mut Vec<u8>,
    take: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let mut sum = glyd_core::Checksum::default();
    let mut len = 0;
    let mut pass = |piece: &[u8]| {
        sum.update(piece);
        len += piece.len();
        take(piece)
    };
    let mut out = Rebuilt::passed_on(buf, &mut pass);
    rebuild_into(src, meta, d, &mut out)?;
    out.pass_on()?;
    check_rebuilt(meta, len, sum.value())
}

/// An error unless `len` bytes with checksum `sum` are the row group's input, as its header
/// says.
fn check_rebuilt(meta: &RowGroupMeta, len: usize, sum: u32) -> Result<()> {
    if len as u64 != meta.input_len || sum != meta.input_checksum {
        return Err(Error::corrupt(
            "row group",
            meta.offset,
            format!(
                "rebuilt {len} bytes that do not match the stored size {} and checksum",
                meta.input_len
            ),
        ));
    }
    Ok(())
}

/// How many verbatim records (exceptions) row group `meta` holds: the entries of its exception
/// index, which alone is decoded.
pub fn verbatim_count(src: GroupBytes, meta: &RowGroupMeta) -> Result<u64> {
    let index: Vec<StreamMeta> = meta
        .row_streams
        .iter()
        .filter(|s| s.role == RowRole::ExceptionIndex as u8)
        .cloned()
        .collect();
    if let Some(s) = index.first() {
        // Counted when an archive is opened, before any memory limit is set: an index that
        // declares more than a quarter of the default limit is refused.
        let head = src.chunk(s).ok_or_else(|| src.lacking(&[s]))?;
        let declared = glyd_core::chunk::declared_size(head, s.offset)?;
        let bound = glyd_core::DEFAULT_MEMORY_LIMIT / 4;
        if declared > bound {
            return Err(glyd_core::Error::MemoryLimit {
                what: "exception index",
                offset: s.offset,
                needed: declared,
                limit: bound,
            }
            .into());
        }
    }
    let Some((_, head)) = decode_streams(src, &index, chunk_limit(meta))?.pop() else {
        return Ok(0);
    };
    let mut c = Cursor::new(&head, meta.offset, "exception index");
    let mut n = 0;
    while !c.is_empty() {
        c.varint()?;
        c.varint()?;
        n += 1;
    }
    Ok(n)
}

/// The verbatim records (exceptions) of row group `meta`, in order.
pub fn verbatim(src: GroupBytes, meta: &RowGroupMeta) -> Result<Exceptions> {
    let wanted: Vec<StreamMeta> = meta
        .row_streams
        .iter()
        .filter(|s| {
            s.role == RowRole::ExceptionIndex as u8 || s.role == RowRole::ExceptionBytes as u8
        })
        .cloned()
        .collect();
    let mut streams = decode_streams(src, &wanted, chunk_limit(meta))?;
    let mut take = |role: RowRole| {
        streams
            .iter_mut()
            .find(|(r, _)| *r == role as u8)
            .map(|(_, b)| std::mem::take(b))
    };
    match (take(RowRole::ExceptionIndex), take(RowRole::ExceptionBytes)) {
        (None, None) => Ok(Exceptions::default()),
        (Some(i), b) => Exceptions::decode(&i, b.unwrap_or_default(), meta.rows),
        (None, Some(_)) => Err(Error::corrupt(
            "row group",
            meta.offset,
            "exception bytes without an exception index",
        )),
    }
}

/// Rebuilds the row group's input into `out` (see [`Rebuilt`]).
fn rebuild_into(
    src: GroupBytes,
    meta: &RowGroupMeta,
    d: &Dialect,
    out: &mut Rebuilt,
) -> Result<()> {
    let columns = decode_columns(src, meta, None, true, false)?;
    let mut rows = decode_streams(src, &meta.row_streams, chunk_limit(meta))?;
    let mut take = |role: RowRole| {
        rows.iter_mut()
            .find(|(r, _)| *r == role as u8)
            .map(|(_, b)| std::mem::take(b))
    };
    let terminators = match take(RowRole::Terminators) {
        Some(t) if t.len() as u64 == meta.rows && t.iter().all(|&x| x <= crate::model::NONE) => t,
        Some(_) => {
            return Err(Error::corrupt(
                "row group",
                meta.offset,
                "terminator stream does not match the row count",
            ))
        }
        None => vec![LF; meta.rows as usize],
    };
    let exceptions = match (take(RowRole::ExceptionIndex), take(RowRole::ExceptionBytes)) {
        (None, None) => Exceptions::default(),
        (Some(i), b) => Exceptions::decode(&i, b.unwrap_or_default(), meta.rows)?,
        (None, Some(_)) => {
            return Err(Error::corrupt(
                "row group",
                meta.offset,
                "exception bytes without an exception index",
            ))
        }
    };
    let limit = meta.input_len as usize;
    if d.style.shaped() {
        let shapes = match (take(RowRole::Shapes), take(RowRole::ShapeIds)) {
            (Some(list), ids) => Shapes::decode(
                &list,
                &ids.unwrap_or_default(),
                meta.rows as usize,
                d.columns,
                limit,
            ),
            (None, _) if meta.rows == 0 => Ok(Shapes::default()),
            (None, _) => Err(Error::corrupt(
                "row group",
                meta.offset,
                "shaped rows without shapes",
            )),
        };
        shapes.and_then(|shapes| {
            crate::rows::rebuild_shaped(
                &columns,
                &terminators,
                &exceptions,
                &shapes,
                d.style,
                limit,
                out,
            )
        })
    } else {
        crate::rows::rebuild_delimited(&columns, &terminators, &exceptions, d, limit, out)
    }
    .map_err(|e| match e {
        Error::Corrupt { what, detail, .. } => Error::Corrupt {
            what,
            offset: meta.offset,
            detail,
        },
        e => e,
    })
}
