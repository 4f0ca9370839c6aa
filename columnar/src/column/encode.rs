//! A column's candidate codings: typed columns as integer streams of each mode, text as plain
//! values, a dictionary, words or templates (judged on the first rows of a long column); the
//! row group keeps the candidate that compresses smallest.

use super::infer::{infer, typed_values};
use crate::codec::dict::{entries_streams, ids_stream, MAX_DICT};
use crate::codec::ints::{int_streams, judged_size, JUDGE_ROWS};
use crate::model::{
    text_range, EncodedColumn, FastMap, FastSet, Kind, RawColumn, Role, Stats, BARE, SAMPLE_ROWS,
};

/// Types and codes one column: one or more candidate codings (the caller keeps the one that
/// compresses smallest). `empty_is_null`: whether an empty bare value in a typed column is a
/// null (CSV) or makes the column text (COPY, where a null has its own spelling).
pub fn encode(col: &RawColumn, empty_is_null: bool) -> Vec<EncodedColumn> {
    // The kind the first rows suggest is checked as every value is parsed, once; only a
    // column whose later values disagree is typed by looking at all of them first.
    let presumed = infer(col, empty_is_null, col.rows().min(INFER_ROWS));
    let typed = (presumed != Kind::Text)
        .then(|| typed_values(col, presumed, empty_is_null).map(|t| (presumed, t)))
        .flatten()
        .or_else(|| {
            let kind = infer(col, empty_is_null, col.rows());
            let t = (kind != Kind::Text).then(|| typed_values(col, kind, empty_is_null));
            t.map(|t| (kind, t.expect("infer checked every value")))
        });
    match typed {
        Some((kind, (flags, values))) => encode_typed(kind, flags, values, col.data.len() as u64),
        None => encode_text(col),
    }
}

/// Codes one column as `kind` (a kind its layout fixes: a log's time), or as [`encode`] would
/// where some value is not of that kind.
pub fn encode_as(col: &RawColumn, kind: Kind, empty_is_null: bool) -> Vec<EncodedColumn> {
    match typed_values(col, kind, empty_is_null) {
        Some((flags, values)) => encode_typed(kind, flags, values, col.data.len() as u64),
        None => encode(col, empty_is_null),
    }
}

/// Rows that suggest a column's kind before all of it is parsed as that kind.
pub(crate) const INFER_ROWS: usize = 64;

/// The candidate codings of a typed column: `flags` per row ([`BARE`] or a null flag), the
/// present rows' `values` in row order, and the bytes they were spelled in.
pub fn encode_typed(
    kind: Kind,
    flags: Vec<u8>,
    values: Vec<i64>,
    raw_bytes: u64,
) -> Vec<EncodedColumn> {
    let nulls = (flags.len() - values.len()) as u64;
    let flagged = flags.iter().any(|&f| f != BARE);
    let stats = Stats {
        nulls,
        int_range: values
            .iter()
            .min()
            .copied()
            .zip(values.iter().max().copied()),
        ..Stats::default()
    };
    let mut streams = Vec::new();
    if flagged {
        streams.push((Role::Flags, flags));
    }
    // One candidate per integer coding; the row group keeps the one that compresses smallest.
    int_streams(&values)
        .into_iter()
        .map(|ints| {
            let mut streams = streams.clone();
            streams.push((Role::Ints, ints));
            EncodedColumn {
                kind,
                values: values.clone(),
                raw_bytes,
                stats: stats.clone(),
                streams,
            }
        })
        .collect()
}

/// Text candidates: a dictionary when values repeat enough (at most half as many distinct
/// values as rows), plain otherwise; and templates with variables when values have tokens
/// with digits.
/// The candidate codings of a text column (plain, dictionary, templates).
pub fn encode_text(col: &RawColumn) -> Vec<EncodedColumn> {
    let rows = col.rows();
    let values = || (0..rows).map(|r| col.value(r));
    let flags = col
        .flags
        .iter()
        .any(|&f| f != BARE)
        .then(|| (Role::Flags, col.flags.clone()));
    let limit = MAX_DICT.min(rows / 2);
    let candidate = |stats: Stats, streams: Vec<(Role, Vec<u8>)>| EncodedColumn {
        kind: Kind::Text,
        values: Vec::new(),
        raw_bytes: col.data.len() as u64,
        stats,
        streams: flags.iter().cloned().chain(streams).collect(),
    };
    // A dictionary pays when values repeat; the first rows tell whether they do, before a
    // column of unique text fills a hash table.
    // Each distinct value numbered in order of first appearance, and each row's number: one
    // lookup a row.
    let mut seen: FastMap<&[u8], u32> = FastMap::default();
    let mut first_ids: Vec<u32> = Vec::new();
    let sample = SAMPLE_ROWS.min(rows);
    let repeats = values().take(sample).collect::<FastSet<_>>().len() * 2 <= sample.max(2);
    for v in values().take(if repeats { rows } else { 0 }) {
        let id = match seen.get(v) {
            Some(&id) => id,
            None if seen.len() >= limit => {
                seen.clear();
                first_ids.clear();
                break;
            }
            None => {
                let id = seen.len() as u32;
                seen.insert(v, id);
                id
            }
        };
        first_ids.push(id);
    }
    // The range over the distinct values where a dictionary has them: far fewer compares.
    let stats = Stats {
        text_range: if seen.is_empty() {
            text_range(values())
        } else {
            text_range(seen.keys().copied())
        },
        ..Stats::default()
    };
    let mut out = Vec::new();
    if seen.is_empty() {
        // Plain or as words. A long column is judged on its first rows, and only the coding
        // that compresses smaller there is made (as integers are, in `int_streams`).
        let words = crate::codec::words::pays(col);
        let (plain, words) = if !words || rows < 4 * JUDGE_ROWS {
            (true, words)
        } else {
            let head = col.head(JUDGE_ROWS);
            let (lengths, bytes) = entries_streams((0..JUDGE_ROWS).map(|r| head.value(r)));
            let plain = judged_size(&lengths) + judged_size(&bytes);
            let words = crate::codec::words::encode(&head).map(|w| {
                [w.lengths, w.bytes, w.counts, w.words, w.separators]
                    .iter()
                    .map(|s| judged_size(s))
                    .sum::<usize>()
            });
            match words {
                Some(w) if w < plain => (false, true),
                _ => (true, false),
            }
        };
        if let Some(w) = words.then(|| crate::codec::words::encode(col)).flatten() {
            out.push(candidate(
                stats.clone(),
                vec![
                    (Role::Lengths, w.lengths),
                    (Role::Bytes, w.bytes),
                    (Role::TokenCounts, w.counts),
                    (Role::Words, w.words),
                    (Role::Separators, w.separators),
                ],
            ));
        }
        if plain || out.is_empty() {
            let (lengths, bytes) = entries_streams(values());
            out.insert(
                0,
                candidate(
                    stats.clone(),
                    vec![(Role::Lengths, lengths), (Role::Bytes, bytes)],
                ),
            );
        }
    } else {
        let mut dict: Vec<(&[u8], u32)> = seen.into_iter().collect();
        dict.sort_unstable();
        let mut rank = vec![0u32; dict.len()];
        for (i, &(_, first)) in dict.iter().enumerate() {
            rank[first as usize] = i as u32;
        }
        let ids = ids_stream(first_ids.iter().map(|&f| rank[f as usize]), dict.len());
        let (lengths, bytes) = entries_streams(dict.iter().map(|&(v, _)| v));
        let mut s = stats.clone();
        s.distinct = Some(dict.len() as u64);
        out.push(candidate(
            s,
            vec![
                (Role::Ids, ids),
                (Role::Lengths, lengths),
                (Role::Bytes, bytes),
            ],
        ));
    }
    let templated = crate::codec::template::pays(values().take(sample))
        .then(|| crate::codec::template::encode(values(), limit.max(1)))
        .flatten();
    if let Some(t) = templated {
        if !t.vars.is_empty() {
            let ids = ids_stream(t.ids.iter().copied(), t.templates.len());
            let (lengths, bytes) = entries_streams(t.templates.iter().map(Vec::as_slice));
            out.push(candidate(
                stats,
                vec![
                    (Role::Ids, ids),
                    (Role::Lengths, lengths),
                    (Role::Bytes, bytes),
                    (Role::Vars, t.vars),
                    (Role::Ints, t.ints),
                ],
            ));
        }
    }
    out
}
