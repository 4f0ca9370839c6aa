//! A row group: a run of whole records shredded into columns, each column's streams
//! compressed as core chunks, and a checksummed header that says where every chunk is, what
//! kind each column is and its statistics. Encoding verifies itself: a row group whose rebuild
//! would differ from its input is stored as one verbatim exception instead.

use arrow_array::RecordBatch;
use rayon::prelude::*;

use glyd_core::chunk::{decode_chunk, encode_chunk};
use glyd_core::Level;

use crate::arrow_table;
use crate::bytes::{put_varint, zigzag, Cursor};
use crate::column::{self, Coding, Column, Kind, Link, RawColumn, Role, Stats};
use crate::delimited::{self, Dialect, LF};
use crate::error::{Error, Result};
use crate::escapes::{self, Escapes};
use crate::exceptions::Exceptions;
use crate::rebuilt::Rebuilt;
use crate::shape::Shapes;

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

fn kind_code(k: Kind) -> (u8, Option<u8>) {
    match k {
        Kind::Int => (0, None),
        Kind::Decimal(p) => (1, Some(p)),
        Kind::Date => (2, None),
        Kind::Timestamp(f) => (4, Some(f.to_byte())),
        Kind::Text => (3, None),
        Kind::Arrow => (5, None),
    }
}

fn put_stats(out: &mut Vec<u8>, s: &Stats) {
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
        crate::bytes::put_prefixed(out, a);
        crate::bytes::put_prefixed(out, b);
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
        if a > b || a.len() > column::MAX_STAT_TEXT || b.len() > column::MAX_STAT_TEXT {
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

fn put_streams(out: &mut Vec<u8>, streams: &[(u8, usize)]) {
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

/// Shreds, codes and compresses one row group of `src` (whole records of table number
/// `table`, laid out as `d`), returning its bytes as they go into the archive (tag first).
/// Verifies the result rebuilds to `src`.
/// `escapes`: those of the table's text values (see [`crate::escapes`]).
pub fn encode(src: &[u8], table: usize, d: &Dialect, escapes: Escapes, level: Level) -> Vec<u8> {
    let shredded = delimited::shred(src, d);
    let empty_is_null = d.style.empty_is_null();
    let out = encode_shredded(src, table, &shredded, empty_is_null, escapes, level);
    match verify(&out, src, table, d) {
        Ok(()) => out,
        Err(_) => {
            // Not expected; but whatever went wrong, the input is kept whole.
            let mut verbatim = delimited::Shredded {
                columns: vec![Default::default(); d.columns],
                ..Default::default()
            };
            if !src.is_empty() {
                verbatim.exceptions.push(0, src);
            }
            encode_shredded(src, table, &verbatim, empty_is_null, escapes, level)
        }
    }
}

/// Codes one row group of an Arrow table (see [`crate::arrow_table`]): `batch`'s columns,
/// returning the row group's bytes (tag first). Verifies that it reads back as `batch`; in
/// the unexpected case that it does not, every column is stored as Arrow IPC instead.
///
/// The header's input size is the Arrow data's size (IPC bytes for IPC columns, at least one
/// per row), which bounds what a reader decodes; its checksum is 0, since there are no input
/// bytes to rebuild: every chunk carries its own.
pub fn encode_batch(batch: &RecordBatch, table: usize, level: Level) -> Result<Vec<u8>> {
    let coded = batch
        .columns()
        .par_iter()
        .map(arrow_table::encode_array)
        .collect::<Result<Vec<_>>>()?;
    let (raw, mut candidates): (Vec<RawColumn>, Vec<_>) = coded.into_iter().unzip();
    add_linked_candidates(&mut candidates, &raw);
    let out = assemble_batch(batch, table, candidates, level);
    if verify_batch(&out, batch, table).is_ok() {
        return Ok(out);
    }
    let ipc = batch
        .columns()
        .iter()
        .map(|a| {
            let ipc = arrow_table::array_to_ipc(a)?;
            Ok(vec![column::EncodedColumn {
                kind: Kind::Arrow,
                values: Vec::new(),
                raw_bytes: ipc.len() as u64,
                stats: Stats {
                    nulls: a.null_count() as u64,
                    ..Stats::default()
                },
                streams: vec![(Role::Bytes, ipc)],
            }])
        })
        .collect::<Result<Vec<_>>>()?;
    let out = assemble_batch(batch, table, ipc, level);
    verify_batch(&out, batch, table)?;
    Ok(out)
}

fn assemble_batch(
    batch: &RecordBatch,
    table: usize,
    candidates: Vec<Vec<column::EncodedColumn>>,
    level: Level,
) -> Vec<u8> {
    let rows = batch.num_rows() as u64;
    let size: u64 = candidates.iter().map(|c| c[0].raw_bytes).sum();
    assemble(
        table,
        (size.max(rows), rows, 0),
        candidates,
        Vec::new(),
        level,
    )
}

fn verify_batch(encoded: &[u8], batch: &RecordBatch, table: usize) -> Result<()> {
    let mut columns = vec![0; table + 1];
    columns[table] = batch.num_columns();
    let meta = parse_header(encoded, 0, &columns)?;
    let decoded = decode_columns(encoded, &meta, None, true, false)?;
    for ((c, a), f) in decoded
        .iter()
        .zip(batch.columns())
        .zip(batch.schema().fields())
    {
        let back = arrow_table::to_target(c, batch.num_rows(), f.data_type())?;
        if back.to_data() != a.to_data() {
            return Err(Error::corrupt(
                "row group",
                0,
                format!("column {} reads back differently", f.name()),
            ));
        }
    }
    Ok(())
}

fn verify(encoded: &[u8], src: &[u8], table: usize, d: &Dialect) -> Result<()> {
    let mut columns = vec![0; table + 1];
    columns[table] = d.columns;
    let meta = parse_header(encoded, 0, &columns)?;
    // Compared with the input a piece at a time, as the pieces come (and their size and
    // checksum at the end).
    let mut at = 0;
    let mut same = |piece: &[u8]| {
        if src.get(at..at + piece.len()) != Some(piece) {
            return Err(Error::corrupt(
                "row group",
                0,
                format!("rebuild differs from its input within bytes {at}.."),
            ));
        }
        at += piece.len();
        Ok(())
    };
    VERIFY_BUFFER.with_borrow_mut(|buf| rebuild_passing(encoded, &meta, d, buf, &mut same))?;
    debug_assert_eq!(at, src.len(), "the size was checked");
    Ok(())
}

thread_local! {
    /// Scratch for [`verify`]'s rebuilds, one per thread, reused.
    static VERIFY_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn encode_shredded(
    src: &[u8],
    table: usize,
    s: &delimited::Shredded,
    empty_is_null: bool,
    escapes: Escapes,
    level: Level,
) -> Vec<u8> {
    let mut candidates: Vec<Vec<column::EncodedColumn>> = s
        .columns
        .par_iter()
        .map(|c| {
            let mut cands = column::encode(c, empty_is_null);
            // Statistics describe values as read: where escapes are undone, the text range
            // is of the undone values (a filter compares with those).
            if escapes.in_bytes(&c.data) {
                let range = column::text_range(
                    (0..c.rows()).map(|r| escapes::as_read(escapes, c.value(r))),
                );
                for e in cands.iter_mut().filter(|e| e.kind == Kind::Text) {
                    e.stats.text_range = range.clone();
                }
            }
            cands
        })
        .collect();
    add_linked_candidates(&mut candidates, &s.columns);
    let mut row_streams: Vec<(u8, Vec<u8>)> = Vec::new();
    if s.terminators.iter().any(|&t| t != LF) {
        row_streams.push((RowRole::Terminators as u8, s.terminators.clone()));
    }
    if !s.exceptions.is_empty() {
        let (index, bytes) = s.exceptions.encode();
        row_streams.push((RowRole::ExceptionIndex as u8, index));
        row_streams.push((RowRole::ExceptionBytes as u8, bytes));
    }
    if !s.shapes.list.is_empty() {
        let (list, ids) = s.shapes.encode();
        row_streams.push((RowRole::Shapes as u8, list));
        row_streams.push((RowRole::ShapeIds as u8, ids));
    }
    let sum = glyd_core::checksum(src);
    assemble(
        table,
        (src.len() as u64, s.rows() as u64, sum),
        candidates,
        row_streams,
        level,
    )
}

/// Compresses every stream of every candidate, keeps each column's smallest, and lays out the
/// row group: tag, header (`table`; `input` = the input's size, rows and checksum; each
/// column's kind, statistics and streams; the row streams), chunks.
fn assemble(
    table: usize,
    input: (u64, u64, u32),
    candidates: Vec<Vec<column::EncodedColumn>>,
    row_streams: Vec<(u8, Vec<u8>)>,
    level: Level,
) -> Vec<u8> {
    // Every non-empty stream of every candidate becomes a chunk; all compress in parallel.
    let compress = |b: &[u8]| {
        let mut out = Vec::new();
        if !b.is_empty() {
            encode_chunk(b, level, &mut out);
        }
        out
    };
    let compressed: Vec<Vec<Vec<Vec<u8>>>> = candidates
        .par_iter()
        .map(|cands| {
            cands
                .par_iter()
                .map(|c| c.streams.par_iter().map(|(_, b)| compress(b)).collect())
                .collect()
        })
        .collect();
    let row_chunks: Vec<Vec<u8>> = row_streams.par_iter().map(|(_, b)| compress(b)).collect();
    // Each column keeps its smallest candidate.
    let mut columns = Vec::with_capacity(candidates.len());
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    for (cands, packed) in candidates.into_iter().zip(compressed) {
        let size = |p: &Vec<Vec<u8>>| p.iter().map(Vec::len).sum::<usize>();
        let best = (0..cands.len())
            .min_by_key(|&i| size(&packed[i]))
            .expect("every column has a candidate");
        let (c, p) = cands
            .into_iter()
            .zip(packed)
            .nth(best)
            .expect("best is a candidate");
        columns.push(c);
        chunks.extend(p);
    }
    chunks.extend(row_chunks);
    let mut sizes = chunks.iter().map(Vec::len);
    let (input_len, rows, input_checksum) = input;
    let mut header = Vec::new();
    put_varint(&mut header, table as u64);
    put_varint(&mut header, input_len);
    put_varint(&mut header, rows);
    header.extend_from_slice(&input_checksum.to_le_bytes());
    put_varint(&mut header, columns.len() as u64);
    let listed = |streams: Vec<(u8, usize)>| -> Vec<(u8, usize)> {
        streams.into_iter().filter(|&(_, n)| n > 0).collect()
    };
    for c in &columns {
        let (code, places) = kind_code(c.kind);
        header.push(code);
        header.extend(places);
        put_varint(&mut header, c.raw_bytes);
        put_stats(&mut header, &c.stats);
        let streams: Vec<(u8, usize)> = c
            .streams
            .iter()
            .map(|(r, _)| (*r as u8, sizes.next().expect("one size per stream")))
            .collect();
        let mut streams = listed(streams);
        streams.sort_unstable();
        put_streams(&mut header, &streams);
    }
    let streams: Vec<(u8, usize)> = row_streams
        .iter()
        .map(|(r, _)| (*r, sizes.next().expect("one size per stream")))
        .collect();
    put_streams(&mut header, &listed(streams));
    // Chunks go in the order the header lists them: by column, then by role.
    let mut out = vec![TAG_ROW_GROUP];
    put_varint(&mut out, header.len() as u64);
    out.extend_from_slice(&header);
    out.extend_from_slice(&glyd_core::checksum(&header).to_le_bytes());
    let mut k = 0;
    for c in &columns {
        let mut order: Vec<(Role, usize)> = c
            .streams
            .iter()
            .enumerate()
            .map(|(i, (r, _))| (*r, k + i))
            .collect();
        order.sort_unstable();
        for (_, i) in order {
            out.extend_from_slice(&chunks[i]);
        }
        k += c.streams.len();
    }
    for chunk in &chunks[k..] {
        out.extend_from_slice(chunk);
    }
    out
}

/// Most key columns whose order other columns are tried in.
const MAX_KEYS: usize = 2;

/// Rows that [`add_linked_candidates`] looks at to judge a link.
const LINK_SAMPLE: usize = 1 << 14;

/// Adds candidates that code a typed column through another column of the row group, when a
/// quick estimate says that beats the column on its own by a fifth: as differences from an
/// earlier column of the same kind without nulls (a ship date from an order date), or in the
/// order of a *key*, a column of distinct values without nulls that is not in order itself
/// (a table dumped out of key order: its dates read in key order ascend). Keys are never
/// linked themselves, and differences only go to earlier columns, so links cannot cycle.
/// And a repeating text column whose value is a function of an earlier column's (an event
/// template of its event id) gets a candidate that stores one value per value of that column.
fn add_linked_candidates(candidates: &mut [Vec<column::EncodedColumn>], raw: &[RawColumn]) {
    let typed = |c: &column::EncodedColumn| c.kind != Kind::Text && c.kind != Kind::Arrow;
    let flags = |c: &column::EncodedColumn| -> Option<Vec<u8>> {
        c.streams
            .iter()
            .find(|(r, _)| *r == Role::Flags)
            .map(|(_, f)| f.clone())
    };
    let keys: Vec<usize> = (0..candidates.len())
        .filter(|&k| {
            let c = &candidates[k][0];
            if !typed(c) || c.stats.nulls > 0 || c.values.len() < 2 {
                return false;
            }
            if c.values.windows(2).all(|w| w[0] <= w[1]) {
                return false;
            }
            // A repeat among the first values rules a column out before sorting all of it
            // (a column of 200,000 part numbers repeats within 16,384 rows; within 1,024 it
            // seldom does).
            let head = &c.values[..c.values.len().min(LINK_SAMPLE)];
            if head.iter().collect::<column::FastSet<_>>().len() < head.len() {
                return false;
            }
            let mut sorted = c.values.clone();
            sorted.sort_unstable();
            sorted.windows(2).all(|w| w[0] < w[1])
        })
        .take(MAX_KEYS)
        .collect();
    let mut extra = Vec::new();
    for j in 0..candidates.len() {
        let cj = &candidates[j][0];
        if !typed(cj) || keys.contains(&j) {
            continue;
        }
        let fj = flags(cj);
        // Links are judged on the first rows (all of them where some are null: values and
        // rows then do not line up); the row group then keeps whichever codes smallest.
        let sample = if fj.is_none() {
            cj.values.len().min(LINK_SAMPLE)
        } else {
            cj.values.len()
        };
        let own = column::varint_estimate(&cj.values[..sample]);
        let relative = (0..j)
            .filter(|&i| {
                let ci = &candidates[i][0];
                ci.kind == cj.kind && ci.stats.nulls == 0
            })
            .map(Link::Relative);
        let ordered = keys.iter().map(|&k| Link::Ordered(k));
        let best = relative
            .chain(ordered)
            .map(|link| {
                let base = &candidates[link.base()][0].values;
                let rows = if fj.is_none() { sample } else { base.len() };
                let seq = column::linked_sequence(
                    &cj.values[..sample],
                    fj.as_deref(),
                    &base[..rows],
                    link,
                );
                (column::varint_estimate(&seq), link)
            })
            .min_by_key(|&(est, _)| est);
        if let Some((est, link)) = best {
            if est * 5 < own * 4 {
                let base = &candidates[link.base()][0].values;
                for ints in column::linked_candidates(&cj.values, fj.as_deref(), base, link) {
                    extra.push((j, ints));
                }
            }
        }
    }
    let mut following = Vec::new();
    for j in 0..candidates.len() {
        let cj = &candidates[j][0];
        if cj.kind != Kind::Text {
            continue;
        }
        if let Some(c) = (0..j).find_map(|i| column::copy_candidate(&raw[j], &raw[i], i, &cj.stats))
        {
            following.push((j, c));
            continue;
        }
        // Only text that repeats (it has a dictionary) can follow another's values.
        if cj.stats.distinct.is_none() {
            continue;
        }
        // Of the columns it follows, the one with fewest values to store.
        let found = (0..j)
            .filter_map(|i| {
                column::follow_candidate(&raw[j], &raw[i], candidates[i][0].kind, i, &cj.stats)
            })
            .min_by_key(|c| c.streams.iter().map(|(_, s)| s.len()).sum::<usize>());
        following.extend(found.map(|c| (j, c)));
    }
    for (j, c) in following {
        candidates[j].push(c);
    }
    for (j, ints) in extra {
        let c = &candidates[j][0];
        let mut streams: Vec<(Role, Vec<u8>)> = c
            .streams
            .iter()
            .filter(|(r, _)| *r != Role::Ints)
            .cloned()
            .collect();
        streams.push((Role::Ints, ints));
        let linked = column::EncodedColumn {
            kind: c.kind,
            values: Vec::new(),
            raw_bytes: c.raw_bytes,
            stats: c.stats.clone(),
            streams,
        };
        candidates[j].push(linked);
    }
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
                    crate::text::TimeFormat::from_byte(b)
                        .ok_or_else(|| h.corrupt(format!("unknown timestamp format {b:#x}")))?,
                )
            }
            5 => Kind::Arrow,
            k => return Err(h.corrupt(format!("unknown column kind {k}"))),
        };
        let raw_bytes = h.bounded(input_len, "column size")? as u64;
        let stats = get_stats(&mut h, rows)?;
        let streams = get_streams(&mut h, &mut at, Role::Separators as u8)?;
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

/// Decodes the chunks of `streams` (from `src`, which starts at archive offset `base`).
fn decode_streams(
    src: &[u8],
    base: u64,
    streams: &[StreamMeta],
    limit: usize,
) -> Result<Vec<(u8, Vec<u8>)>> {
    streams
        .par_iter()
        .map(|s| {
            let start = (s.offset - base) as usize;
            let chunk = src
                .get(start..start + s.stored as usize)
                .ok_or(Error::Truncated {
                    what: "column chunk",
                    offset: s.offset,
                })?;
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
    src: &[u8],
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
    decode_streams(src, meta.offset, &wanted, chunk_limit(meta))
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
pub fn column_coding(src: &[u8], meta: &RowGroupMeta, i: usize) -> Result<Coding> {
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
pub fn chunk_dictionary(src: &[u8], meta: &RowGroupMeta, i: usize) -> Result<Option<Vec<Vec<u8>>>> {
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
/// values as planes (see [`column::Planes`]).
pub fn decode_columns(
    src: &[u8],
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
        let streams = decode_streams(src, meta.offset, &cm.streams, limit)?;
        let streams = streams
            .into_iter()
            .map(|(r, b)| (Role::from_u8(r).expect("roles checked at parse"), b))
            .collect();
        column::decode(
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
    column::resolve_links(&mut slots, meta.rows as usize, meta.input_len as usize)
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
pub fn decode_need(src: &[u8], meta: &RowGroupMeta) -> Result<u64> {
    let mut need = meta.input_len;
    let streams = meta
        .columns
        .iter()
        .flat_map(|c| &c.streams)
        .chain(&meta.row_streams);
    for s in streams {
        let at = (s.offset - meta.offset) as usize;
        let head = src.get(at..).ok_or(Error::Truncated {
            what: "column chunk",
            offset: s.offset,
        })?;
        need = need.saturating_add(glyd_core::chunk::declared_size(head, s.offset)?);
    }
    let cells = meta.rows.saturating_mul(meta.columns.len() as u64 + 1);
    Ok(need.saturating_add(cells.saturating_mul(ROW_BYTES)))
}

/// [`decode_need`] checked against `limit`: the need, or an error naming the row group.
pub fn check_need(src: &[u8], meta: &RowGroupMeta, limit: u64) -> Result<u64> {
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
pub fn rebuild(src: &[u8], meta: &RowGroupMeta, d: &Dialect, out: &mut Vec<u8>) -> Result<()> {
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
    src: &[u8],
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

/// Rebuilds the row group's input into `out` (see [`Rebuilt`]).
fn rebuild_into(src: &[u8], meta: &RowGroupMeta, d: &Dialect, out: &mut Rebuilt) -> Result<()> {
    let columns = decode_columns(src, meta, None, true, false)?;
    let mut rows = decode_streams(src, meta.offset, &meta.row_streams, chunk_limit(meta))?;
    let mut take = |role: RowRole| {
        rows.iter_mut()
            .find(|(r, _)| *r == role as u8)
            .map(|(_, b)| std::mem::take(b))
    };
    let terminators = match take(RowRole::Terminators) {
        Some(t) if t.len() as u64 == meta.rows && t.iter().all(|&x| x <= delimited::NONE) => t,
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
            crate::shape::rebuild(
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
        delimited::rebuild(&columns, &terminators, &exceptions, d, limit, out)
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
