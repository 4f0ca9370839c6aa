//! Encoding a row group: shred, type and code every column (trying links between columns),
//! keep each column's smallest candidate, compress the streams as chunks, and rebuild the
//! result to check it; a row group whose rebuild would differ is stored as one verbatim
//! exception instead.

use arrow_array::RecordBatch;
use glyd_core::chunk::encode_chunk;
use glyd_core::Level;
use rayon::prelude::*;

use super::decode::{decode_columns, rebuild_passing, GroupBytes};
use super::meta::{parse_header, put_kind, put_stats, put_streams, RowRole, TAG_ROW_GROUP};
use crate::codec::ints::local_estimate;
use crate::codec::template::template_keys;
use crate::column::Link;
use crate::error::{Error, Result};
use crate::escapes::{self, Escapes};
use crate::model::{Dialect, Kind, RawColumn, Role, Stats, BARE, LF};
use crate::wire::{put_varint, Cursor};

/// Shreds, codes and compresses one row group of `src` (whole records of table number
/// `table`, laid out as `d`), returning its bytes as they go into the archive (tag first) and
/// the columns it added to `d`. Verifies the result rebuilds to `src`.
/// `escapes`: those of the table's text values (see [`crate::escapes`]).
pub fn encode(src: &[u8], table: usize, d: &Dialect, escapes: Escapes, level: Level) -> Encoded {
    let shredded = crate::shred::shred(src, d);
    let grown = d.with_added(&shredded.added);
    let out = encode_shredded(src, table, &shredded, d, escapes, level);
    match verify(&out, src, table, &grown) {
        Ok(()) => Encoded {
            bytes: out,
            added: shredded.added,
        },
        Err(_) => {
            // Not expected; but whatever went wrong, the input is kept, a line at a time.
            let mut verbatim = crate::model::Shredded {
                columns: vec![Default::default(); d.columns],
                ..Default::default()
            };
            for line in src.split_inclusive(|&c| c == b'\n') {
                verbatim.exceptions.push(0, line);
            }
            Encoded {
                bytes: encode_shredded(src, table, &verbatim, d, escapes, level),
                added: Vec::new(),
            }
        }
    }
}

/// A row group as [`encode`] made it.
pub struct Encoded {
    /// The row group's bytes, tag first.
    pub bytes: Vec<u8>,
    /// Names of the columns it has past its dialect's (JSON keys the dialect did not name):
    /// it belongs to a table of the dialect with these added.
    pub added: Vec<String>,
}

/// `group` (a row group's bytes, as [`encode`] made them) moved to table number `table`: its
/// header says so, with its length and checksum made again; the chunks are unchanged.
pub fn with_table(group: &[u8], table: usize) -> Result<Vec<u8>> {
    let mut c = Cursor::new(group, 0, "row group");
    c.u8()?;
    let header = c.prefixed()?;
    c.bytes(4)?;
    let chunks = &group[c.offset() as usize..];
    let mut h = Cursor::new(header, 0, "row group header");
    h.varint()?;
    let mut body = Vec::with_capacity(header.len() + 8);
    put_varint(&mut body, table as u64);
    body.extend_from_slice(&header[h.offset() as usize..]);
    let mut out = vec![TAG_ROW_GROUP];
    put_varint(&mut out, body.len() as u64);
    out.extend_from_slice(&body);
    out.extend_from_slice(&glyd_core::checksum(&body).to_le_bytes());
    out.extend_from_slice(chunks);
    Ok(out)
}

/// Codes one row group of an Arrow table (see `column::arrow_table`): `batch`'s columns,
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
        .map(crate::column::encode_array)
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
            let ipc = crate::codec::arrow_ipc::array_to_ipc(a)?;
            Ok(vec![crate::model::EncodedColumn {
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
    candidates: Vec<Vec<crate::model::EncodedColumn>>,
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
    let bytes = GroupBytes::Slice {
        base: 0,
        bytes: encoded,
    };
    let decoded = decode_columns(bytes, &meta, None, true, false)?;
    for ((c, a), f) in decoded
        .iter()
        .zip(batch.columns())
        .zip(batch.schema().fields())
    {
        let back = crate::column::to_target(c, batch.num_rows(), f.data_type())?;
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
    let bytes = GroupBytes::Slice {
        base: 0,
        bytes: encoded,
    };
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
    VERIFY_BUFFER.with_borrow_mut(|buf| rebuild_passing(bytes, &meta, d, buf, &mut same))?;
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
    s: &crate::model::Shredded,
    d: &Dialect,
    escapes: Escapes,
    level: Level,
) -> Vec<u8> {
    let empty_is_null = d.style.empty_is_null();
    let mut candidates: Vec<Vec<crate::model::EncodedColumn>> = s
        .columns
        .par_iter()
        .enumerate()
        .map(|(i, c)| {
            let mut cands = match d.kind_of(i) {
                Some(kind) => crate::column::encode_as(c, kind, empty_is_null),
                None => crate::column::encode(c, empty_is_null),
            };
            // Statistics describe values as read: where escapes are undone, the text range
            // is of the undone values (a filter compares with those).
            if escapes.in_bytes(&c.data) {
                let range = crate::model::text_range(
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
    candidates: Vec<Vec<crate::model::EncodedColumn>>,
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
        put_kind(&mut header, c.kind);
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

/// Candidate `c` stored as `streams` instead (the same kind, size and statistics).
fn restreamed(
    c: &crate::model::EncodedColumn,
    streams: Vec<(Role, Vec<u8>)>,
) -> crate::model::EncodedColumn {
    crate::model::EncodedColumn {
        kind: c.kind,
        values: Vec::new(),
        raw_bytes: c.raw_bytes,
        stats: c.stats.clone(),
        streams,
    }
}

/// A text chunk's ids stream (a width byte, then each row's id in that many bytes, low byte
/// first) as numbers; `None` for a stream of another shape.
fn ids_of(stream: &[u8]) -> Option<Vec<i64>> {
    let (&width, body) = stream.split_first()?;
    match width {
        1 => Some(body.iter().map(|&b| i64::from(b)).collect()),
        2 if body.len() % 2 == 0 => Some(
            body.chunks_exact(2)
                .map(|p| i64::from(u16::from_le_bytes([p[0], p[1]])))
                .collect(),
        ),
        _ => None,
    }
}

/// Most key columns whose order other columns are tried in.
const MAX_KEYS: usize = 2;

/// Most text columns whose templates other columns are tried grouped by.
const MAX_GROUP_BASES: usize = 4;

/// Rows that [`add_linked_candidates`] looks at to judge a link.
const LINK_SAMPLE: usize = 1 << 14;

/// Adds candidates that code a typed column through another column of the row group, when a
/// quick estimate says that beats the column on its own by a fifth: as differences from an
/// earlier column of the same kind without nulls (a ship date from an order date), or in the
/// order of a *key*, a column of distinct values without nulls that is not in order itself
/// (a table dumped out of key order: its dates read in key order ascend). Keys are never
/// linked themselves, and differences only go to earlier columns, so links cannot cycle.
/// And a repeating text column whose value is a function of an earlier column's (an event
/// template of its event id) gets a candidate that stores one value per value of that column;
/// an integer column whose values sit better beside those of the same template of a text
/// column (a log's pids by event) gets one stored grouped by it.
fn add_linked_candidates(candidates: &mut [Vec<crate::model::EncodedColumn>], raw: &[RawColumn]) {
    let typed = |c: &crate::model::EncodedColumn| c.kind != Kind::Text && c.kind != Kind::Arrow;
    let flags = |c: &crate::model::EncodedColumn| -> Option<Vec<u8>> {
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
            if head.iter().collect::<crate::model::FastSet<_>>().len() < head.len() {
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
        let own = crate::codec::ints::varint_estimate(&cj.values[..sample]);
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
                let seq = crate::column::linked_sequence(
                    &cj.values[..sample],
                    fj.as_deref(),
                    &base[..rows],
                    link,
                );
                (crate::codec::ints::varint_estimate(&seq), link)
            })
            .min_by_key(|&(est, _)| est);
        if let Some((est, link)) = best {
            if est * 5 < own * 4 {
                let base = &candidates[link.base()][0].values;
                for ints in crate::column::linked_candidates(&cj.values, fj.as_deref(), base, link)
                {
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
        if let Some(c) =
            (0..j).find_map(|i| crate::column::copy_candidate(&raw[j], &raw[i], i, &cj.stats))
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
                crate::column::follow_candidate(
                    &raw[j],
                    &raw[i],
                    candidates[i][0].kind,
                    i,
                    &cj.stats,
                )
            })
            .min_by_key(|c| c.streams.iter().map(|(_, s)| s.len()).sum::<usize>());
        following.extend(found.map(|c| (j, c)));
    }
    // Text columns that follow none are the bases an integer column may be grouped by (its
    // values listed by their rows' templates there): as roots they close no cycle.
    let bases: Vec<(usize, Vec<i64>)> = (0..candidates.len())
        .filter(|&i| candidates[i][0].kind == Kind::Text && following.iter().all(|f| f.0 != i))
        .filter(|&i| raw[i].rows() >= 2 && raw[i].flags.iter().all(|&f| f == BARE))
        .filter_map(|i| {
            let n = raw[i].rows().min(LINK_SAMPLE);
            let keys = template_keys((0..n).map(|r| raw[i].value(r)));
            let groups = keys.iter().max().map_or(0, |&k| k as usize + 1);
            (groups >= 2 && groups * 4 <= n).then_some((i, keys))
        })
        .take(MAX_GROUP_BASES)
        .collect();
    for (j, cands) in candidates.iter().enumerate() {
        let cj = &cands[0];
        if !typed(cj) || keys.contains(&j) || flags(cj).is_some() {
            continue;
        }
        let sample = cj.values.len().min(LINK_SAMPLE);
        let own = local_estimate(&cj.values[..sample]);
        let best = bases
            .iter()
            .filter(|(i, _)| raw[*i].rows() == cj.values.len())
            .map(|(i, keys)| {
                let link = Link::Grouped(*i);
                let seq = crate::column::linked_sequence(
                    &cj.values[..sample],
                    None,
                    &keys[..sample],
                    link,
                );
                (local_estimate(&seq), link)
            })
            .min_by_key(|&(est, _)| est);
        if let Some((_, link)) = best.filter(|&(est, _)| est * 10 < own * 9) {
            let base = &raw[link.base()];
            let keys = template_keys((0..base.rows()).map(|r| base.value(r)));
            for ints in crate::column::linked_candidates(&cj.values, None, &keys, link) {
                extra.push((j, ints));
            }
        }
    }
    // A templated text column whose templates go with an earlier root's (an event's message
    // with the tokens before it) may store its template ids grouped by that column's
    // templates: only ever by an earlier column, so these links cannot cycle either.
    let mut grouped_ids = Vec::new();
    for (j, cands) in candidates.iter().enumerate() {
        let Some(templated) = cands
            .iter()
            .find(|c| c.streams.iter().any(|(r, _)| *r == Role::Vars))
        else {
            continue;
        };
        let Some(ids) = templated
            .streams
            .iter()
            .find(|(r, _)| *r == Role::Ids)
            .and_then(|(_, s)| ids_of(s))
        else {
            continue;
        };
        let sample = ids.len().min(LINK_SAMPLE);
        let own = local_estimate(&ids[..sample]);
        let best = bases
            .iter()
            .filter(|(i, _)| *i < j && raw[*i].rows() == ids.len())
            .map(|(i, keys)| {
                let seq = crate::column::linked_sequence(
                    &ids[..sample],
                    None,
                    &keys[..sample],
                    Link::Grouped(*i),
                );
                (local_estimate(&seq), *i)
            })
            .min_by_key(|&(est, _)| est);
        if let Some((_, i)) = best.filter(|&(est, _)| est * 10 < own * 9) {
            let base = &raw[i];
            let keys = template_keys((0..base.rows()).map(|r| base.value(r)));
            let width = templated
                .streams
                .iter()
                .find(|(r, _)| *r == Role::Ids)
                .map_or(1, |(_, s)| s[0]);
            let order = crate::column::order_of(&keys, None);
            let mut stream = vec![width];
            for &row in &order {
                let id = ids[row] as u16;
                stream.extend_from_slice(&id.to_le_bytes()[..usize::from(width)]);
            }
            let mut base_index = Vec::new();
            put_varint(&mut base_index, i as u64);
            let mut streams: Vec<(Role, Vec<u8>)> = templated
                .streams
                .iter()
                .map(|(r, s)| {
                    (
                        *r,
                        if *r == Role::Ids {
                            stream.clone()
                        } else {
                            s.clone()
                        },
                    )
                })
                .collect();
            streams.push((Role::GroupedIds, base_index));
            grouped_ids.push((j, restreamed(templated, streams)));
        }
    }
    for (j, c) in grouped_ids {
        candidates[j].push(c);
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
        let linked = restreamed(c, streams);
        candidates[j].push(linked);
    }
}
