//! Columns stored against another column of their row group: integers as differences from it,
//! in its order or grouped by its values' templates ([`Link`]), text as one value per distinct value of it or as a copy of it
//! ([`Follow`]); the candidates a writer tries, and the resolution a reader runs, bases first.

use super::decoded::{Column, Follow, Link};
use super::infer::stored_flag;
use crate::codec::dict::{check_text_size, entries_streams};
use crate::codec::ints::{int_streams, GROUPED, ORDERED, RELATIVE};
use crate::codec::template::template_keys;
use crate::error::{Error, Result};
use crate::model::{
    all_in_range, has_value, EncodedColumn, FastMap, Kind, RawColumn, Role, Stats, BARE,
};
use crate::wire::put_varint;

/// A text column coded as following another: its flags (where any is not bare), the
/// `entries` streams (none for [`Follow::Copy`]) and the follows stream.
fn following(
    col: &RawColumn,
    stats: &Stats,
    follow: Follow,
    entries: Option<(Vec<u8>, Vec<u8>)>,
) -> EncodedColumn {
    let mut streams = Vec::new();
    if col.flags.iter().any(|&f| f != BARE) {
        streams.push((Role::Flags, col.flags.clone()));
    }
    if let Some((lengths, bytes)) = entries {
        streams.extend([(Role::Lengths, lengths), (Role::Bytes, bytes)]);
    }
    streams.push((Role::Follows, follow.stream()));
    EncodedColumn {
        kind: Kind::Text,
        values: Vec::new(),
        raw_bytes: col.data.len() as u64,
        stats: stats.clone(),
        streams,
    }
}

/// A candidate coding text column `col` as a copy of column `base` (index `b`): every row's
/// value is the same bytes as the base's (a column repeated, as loghub's BGL `Node` and
/// `NodeRepeat`); only `col`'s own flags are stored.
pub fn copy_candidate(
    col: &RawColumn,
    base: &RawColumn,
    b: usize,
    stats: &Stats,
) -> Option<EncodedColumn> {
    let rows = col.rows();
    let same = base.rows() == rows
        && rows > 0
        && base.data == col.data
        && base.ends == col.ends
        && (0..rows).all(|r| has_value(base.flags[r]) || col.value(r).is_empty());
    same.then(|| following(col, stats, Follow::Copy(b), None))
}

/// Most rows looked at before trying whether a column follows another in full.
pub(crate) const FOLLOW_SAMPLE: usize = 1024;

/// A candidate coding text column `col` as following column `base` (index `b`, of `kind`)
/// when every value of the base goes with one value of `col` throughout (an event id and
/// its template): `col`'s value for each distinct base value, in order of first appearance.
/// `None` when some base value goes with two values, or when the base repeats too little
/// (more than half its rows distinct) for this to pay.
pub fn follow_candidate(
    col: &RawColumn,
    base: &RawColumn,
    kind: Kind,
    b: usize,
    stats: &Stats,
) -> Option<EncodedColumn> {
    let rows = col.rows();
    if base.rows() != rows || rows < 2 {
        return None;
    }
    let mut first: FastMap<(u8, &[u8]), u32> = FastMap::default();
    let mut entries: Vec<&[u8]> = Vec::new();
    for limit in [FOLLOW_SAMPLE.min(rows), rows] {
        first.clear();
        entries.clear();
        for row in 0..limit {
            let bv = base.value(row);
            let key = (stored_flag(kind, base.flags[row], bv), bv);
            let v = col.value(row);
            match first.get(&key) {
                Some(&e) if entries[e as usize] != v => return None,
                Some(_) => {}
                None => {
                    if entries.len() >= limit / 2 {
                        return None;
                    }
                    first.insert(key, entries.len() as u32);
                    entries.push(v);
                }
            }
        }
    }
    let entries = entries_streams(entries.iter().copied());
    Some(following(col, stats, Follow::Entries(b), Some(entries)))
}

/// Each row's key among the distinct values of a decoded column, numbered in order of first
/// appearance (a value is its flag and its unquoted spelling, as [`follow_candidate`] saw it).
fn first_appearance_keys(col: &Column, rows: usize) -> Vec<u32> {
    // Keyed by the flag and then the value, in one buffer: looked up without a copy.
    let mut first: FastMap<Vec<u8>, u32> = FastMap::default();
    let mut w = col.writer();
    let mut key = Vec::new();
    (0..rows)
        .map(|_| {
            key.clear();
            key.push(0);
            key[0] = w.value(&mut key);
            match first.get(&key) {
                Some(&k) => k,
                None => {
                    let n = first.len() as u32;
                    first.insert(key.clone(), n);
                    n
                }
            }
        })
        .collect()
}

/// A decoded column's `rows` values (unquoted, a null's value empty) back to back, and their
/// offsets (0, then the end of each); `Err(())` once they pass `max_text` bytes.
fn values_of(
    col: &Column,
    rows: usize,
    max_text: usize,
) -> std::result::Result<(Vec<u8>, Vec<u32>), ()> {
    let mut w = col.writer();
    let (mut data, mut ends) = (Vec::new(), Vec::with_capacity(rows + 1));
    ends.push(0);
    for _ in 0..rows {
        w.value(&mut data);
        if data.len() > max_text {
            return Err(());
        }
        ends.push(data.len() as u32);
    }
    Ok((data, ends))
}

/// Integer stream candidates for `values` (a column's present values; `flags` its flags, if
/// any) linked to the base column whose values in every row are `base_values` (for
/// [`Link::Grouped`], its values' [`template_keys`]).
pub fn linked_candidates(
    values: &[i64],
    flags: Option<&[u8]>,
    base_values: &[i64],
    link: Link,
) -> Vec<Vec<u8>> {
    let seq = linked_sequence(values, flags, base_values, link);
    let mode = match link {
        Link::Relative(_) => RELATIVE,
        Link::Ordered(_) => ORDERED,
        Link::Grouped(_) => GROUPED,
    };
    int_streams(&seq)
        .into_iter()
        .map(|inner| {
            let mut out = vec![mode];
            put_varint(&mut out, link.base() as u64);
            out.extend_from_slice(&inner);
            out
        })
        .collect()
}

/// The sequence a linked column stores: differences from the base in the same rows, or the
/// values in the base's order (for [`Link::Grouped`], `base_values` are its template keys).
pub fn linked_sequence(
    values: &[i64],
    flags: Option<&[u8]>,
    base_values: &[i64],
    link: Link,
) -> Vec<i64> {
    match link {
        Link::Relative(_) => present_rows(flags, base_values.len())
            .zip(values)
            .map(|(row, &v)| v.wrapping_sub(base_values[row]))
            .collect(),
        Link::Ordered(_) | Link::Grouped(_) => order_of(base_values, flags)
            .into_iter()
            .map(|i| values[i])
            .collect(),
    }
}

/// The rows holding a value (flag [`BARE`]), in order.
fn present_rows(flags: Option<&[u8]>, rows: usize) -> impl Iterator<Item = usize> + '_ {
    (0..rows).filter(move |&r| flags.is_none_or(|f| has_value(f[r])))
}

/// For a column with `flags` (rows without them all present), the indexes of its present
/// values in the stable ascending order of `key`'s values in their rows.
pub fn order_of(key: &[i64], flags: Option<&[u8]>) -> Vec<usize> {
    let rows: Vec<usize> = present_rows(flags, key.len()).collect();
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&i| key[rows[i]]);
    order
}

/// Whether a decoded column still depends on another.
fn is_linked(c: &Column) -> bool {
    c.link_base().is_some()
}

/// Resolves the columns linked to another (see [`Link`]) into their own values, and the text
/// columns that follow another into per-row ids, bases first. `columns` holds the decoded
/// columns of a row group of `rows` rows by index (`None` where not decoded); every base a
/// column names must be decoded; a [`Link`]'s base must be typed (like it, for
/// [`Link::Relative`]) and without nulls; links must not form a cycle; a following column's
/// values may come to at most `max_text` bytes.
pub fn resolve_links(columns: &mut [Option<Column>], rows: usize, max_text: usize) -> Result<()> {
    let bad = |detail: String| Error::corrupt("column chunk", 0, detail);
    loop {
        let (mut waiting, mut resolved) = (false, false);
        for j in 0..columns.len() {
            if let Some(Column::Text {
                follows: Some(follow),
                ..
            }) = &columns[j]
            {
                let (follow, b) = (*follow, follow.base());
                let base = match columns.get(b) {
                    Some(Some(base)) if b != j && is_linked(base) => {
                        waiting = true;
                        continue;
                    }
                    Some(Some(Column::Arrow(_))) => {
                        return Err(bad(format!(
                            "column {j} follows column {b}, an Arrow column"
                        )))
                    }
                    Some(Some(base)) if b != j => base,
                    _ => {
                        return Err(bad(format!(
                            "column {j} follows column {b}, which is not decoded"
                        )))
                    }
                };
                if let Follow::Grouped(_) = follow {
                    let (data, ends) = values_of(base, rows, max_text)
                        .map_err(|_| bad(format!("column {j}'s base column {b} is too long")))?;
                    let keys =
                        template_keys(ends.windows(2).map(|w| &data[w[0] as usize..w[1] as usize]));
                    let Some(Column::Text {
                        follows,
                        data,
                        offsets,
                        templates: Some(t),
                        ..
                    }) = &mut columns[j]
                    else {
                        return Err(bad(format!("column {j} has grouped ids and no templates")));
                    };
                    let Some(deferred) = t.deferred.take() else {
                        return Err(bad(format!("column {j}'s templates are filled in already")));
                    };
                    if t.ids.len() != rows {
                        return Err(bad(format!(
                            "column {j} has {} ids for {rows} rows",
                            t.ids.len()
                        )));
                    }
                    let mut ids = vec![0; rows];
                    for (&id, row) in t.ids.iter().zip(order_of(&keys, None)) {
                        ids[row] = id;
                    }
                    let (mut values, mut ends) = (Vec::new(), vec![0u32]);
                    crate::codec::template::decode(
                        &t.data,
                        &t.offsets,
                        &ids,
                        &deferred.vars,
                        &deferred.ints,
                        deferred.max_text,
                        &mut values,
                        &mut ends,
                    )
                    .map_err(|e| bad(format!("column {j}: {e}")))?;
                    t.ids = ids;
                    (*data, *offsets, *follows) = (values, ends, None);
                    resolved = true;
                    continue;
                }
                let copied = match follow {
                    Follow::Entries(_) | Follow::Grouped(_) => None,
                    Follow::Copy(_) => Some(
                        values_of(base, rows, max_text)
                            .map_err(|_| bad(format!("column {j} copies too many bytes")))?,
                    ),
                };
                let keys = copied.is_none().then(|| first_appearance_keys(base, rows));
                let Some(Column::Text {
                    follows,
                    ids,
                    offsets,
                    data,
                    ..
                }) = &mut columns[j]
                else {
                    unreachable!()
                };
                *follows = None;
                resolved = true;
                if let Some((values, ends)) = copied {
                    (*data, *offsets) = (values, ends);
                    continue;
                }
                let keys = keys.expect("entries follow keys");
                let distinct = keys.iter().max().map_or(0, |&k| k as usize + 1);
                if distinct != offsets.len() - 1 {
                    return Err(bad(format!(
                        "column {j} has {} values for the {distinct} values of column {b}",
                        offsets.len() - 1
                    )));
                }
                check_text_size(&keys, offsets, max_text, &format!("column {j}'s values"))?;
                *ids = Some(keys);
                continue;
            }
            let Some(Column::Typed {
                link: Some(link),
                kind,
                ..
            }) = &columns[j]
            else {
                continue;
            };
            let (link, kind, b) = (*link, *kind, link.base());
            let base_values = match columns.get(b) {
                Some(Some(base)) if b != j && is_linked(base) => {
                    waiting = true;
                    continue;
                }
                Some(Some(base @ Column::Text { .. }))
                    if b != j && matches!(link, Link::Grouped(_)) =>
                {
                    let (data, ends) = values_of(base, rows, max_text)
                        .map_err(|_| bad(format!("column {j}'s base column {b} is too long")))?;
                    template_keys(ends.windows(2).map(|w| &data[w[0] as usize..w[1] as usize]))
                }
                // Without nulls: no flags, or every row a value (quoted ones, in JSON).
                Some(Some(Column::Typed {
                    kind: k,
                    flags,
                    values,
                    link: None,
                    planes,
                })) if b != j
                    && !matches!(link, Link::Grouped(_))
                    && (*k == kind || matches!(link, Link::Ordered(_)))
                    && flags
                        .as_ref()
                        .is_none_or(|f| f.iter().all(|&x| has_value(x))) =>
                {
                    match planes {
                        Some(p) => p.values(0..p.layout.count, |v| v)?,
                        None => values.clone(),
                    }
                }
                _ => {
                    return Err(bad(format!(
                        "column {j} is linked to column {b}, which is not a column it can \
                         follow (a typed column without nulls, or text for mode 8)"
                    )))
                }
            };
            let Some(Column::Typed {
                values,
                link: slot,
                flags,
                ..
            }) = &mut columns[j]
            else {
                unreachable!()
            };
            let rows = flags.as_ref().map_or(values.len(), Vec::len);
            if rows != base_values.len() {
                return Err(bad(format!(
                    "column {j} and its base column {b} differ in length"
                )));
            }
            let flags = flags.as_deref();
            match link {
                Link::Relative(_) => {
                    for (v, row) in values.iter_mut().zip(present_rows(flags, rows)) {
                        *v = v.wrapping_add(base_values[row]);
                    }
                }
                Link::Ordered(_) | Link::Grouped(_) => {
                    let mut out = vec![0; values.len()];
                    for (&v, i) in values.iter().zip(order_of(&base_values, flags)) {
                        out[i] = v;
                    }
                    *values = out;
                }
            }
            if !all_in_range(kind, values) {
                return Err(bad("date outside years 0000..=9999".into()));
            }
            *slot = None;
            resolved = true;
        }
        if !waiting {
            return Ok(());
        }
        if !resolved {
            return Err(bad("columns linked in a cycle".into()));
        }
    }
}
