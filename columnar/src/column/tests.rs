//! Tests of column typing, coding, links, decoding and spelling.

use arrow_array::StringArray;
use arrow_schema::DataType;
use proptest::prelude::*;

use super::encode::{encode_text, INFER_ROWS};
use super::links::FOLLOW_SAMPLE;
use super::*;
use crate::codec::dict::{check_text_size, entries_streams};
use crate::codec::ints::{
    decode_ints, encode_ints, from_planes, from_planes_blocks, int_streams, INT_CODINGS,
    JUDGE_ROWS, SCALED_PLANES,
};
use crate::model::{
    has_value, text_range, Kind, RawColumn, Role, ABSENT, BARE, MAX_STAT_TEXT, NULL, QUOTED,
};
use crate::spelling::TimeFormat;
use crate::wire::put_varint;

#[test]
fn dictionary_ids_past_the_entries_or_the_input_are_errors() {
    let offsets = [0u32, 3, 5];
    assert!(check_text_size(&[0, 1, 1], &offsets, 100, "ids").is_ok());
    let e = check_text_size(&[0, 2], &offsets, 100, "ids").unwrap_err();
    assert!(e.to_string().contains("past the 2 entries"), "{e}");
    // 3 + 2 bytes of values from 4 bytes of input.
    let e = check_text_size(&[0, 1], &offsets, 4, "ids").unwrap_err();
    assert!(e.to_string().contains("more than the 4 input bytes"), "{e}");
    assert!(check_text_size(&[], &[0], 0, "ids").is_ok());
}

fn typed(values: Vec<i64>, flags: Option<Vec<u8>>, link: Option<Link>) -> Option<Column> {
    Some(Column::Typed {
        kind: Kind::Int,
        flags,
        values,
        link,
        planes: None,
    })
}

fn values(c: &Option<Column>) -> &[i64] {
    match c {
        Some(Column::Typed { values, .. }) => values,
        _ => panic!("not typed"),
    }
}

proptest! {
    /// The range is the smallest and largest value byte for byte, whatever the values
    /// share in their first eight bytes (zero bytes and prefixes included).
    #[test]
    fn text_range_is_the_least_and_greatest_value(
        values in proptest::collection::vec(
            proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a'), any::<u8>()], 0..12),
            0..30,
        ),
    ) {
        let want = values.iter().min().zip(values.iter().max()).and_then(|(a, b)| {
            (a.len() <= MAX_STAT_TEXT && b.len() <= MAX_STAT_TEXT)
                .then(|| (a.clone(), b.clone()))
        });
        prop_assert_eq!(text_range(values.iter()), want);
    }
}

proptest! {
    /// A column with nulls, linked to a key (in its order) or to a like column (as
    /// differences), comes back as it was through every candidate stream.
    #[test]
    fn linked_columns_resolve_to_their_values(
        rows in proptest::collection::vec((any::<i32>(), any::<i32>(), any::<bool>()), 1..200),
        ordered in any::<bool>(),
    ) {
        let base: Vec<i64> = rows.iter().map(|r| i64::from(r.0)).collect();
        let flags: Vec<u8> = rows.iter().map(|r| if r.2 { NULL } else { BARE }).collect();
        let vals: Vec<i64> = rows.iter().filter(|r| !r.2).map(|r| i64::from(r.1)).collect();
        let link = if ordered { Link::Ordered(0) } else { Link::Relative(0) };
        for ints in linked_candidates(&vals, Some(&flags), &base, link) {
            let col = decode(Kind::Int, rows.len(), 0, vec![
                (Role::Flags, flags.clone()),
                (Role::Ints, ints),
            ], true).unwrap();
            let mut cols = vec![typed(base.clone(), None, None), Some(col)];
            resolve_links(&mut cols, rows.len(), 1 << 20).unwrap();
            prop_assert_eq!(values(&cols[1]), &vals[..]);
        }
    }
}

proptest! {
    /// A column with nulls grouped by the templates of a text column comes back as it was
    /// through every candidate stream and every coding of the text column.
    #[test]
    fn grouped_columns_resolve_to_their_values(
        rows in proptest::collection::vec(
            (0usize..4, any::<u16>(), any::<i32>(), any::<bool>()),
            1..200,
        ),
    ) {
        let words = ["open", "close blk_", "read ", ""];
        let mut text = RawColumn::default();
        for r in &rows {
            text.push(format!("{}{} x", words[r.0], r.1).as_bytes(), BARE);
        }
        let keys = crate::codec::template::template_keys((0..rows.len()).map(|r| text.value(r)));
        let flags: Vec<u8> = rows.iter().map(|r| if r.3 { NULL } else { BARE }).collect();
        let vals: Vec<i64> = rows.iter().filter(|r| !r.3).map(|r| i64::from(r.2)).collect();
        for coded in encode(&text, true) {
            for ints in linked_candidates(&vals, Some(&flags), &keys, Link::Grouped(0)) {
                let base = decode(coded.kind, rows.len(), 1 << 20, coded.streams.clone(), false)
                    .unwrap();
                let col = decode(Kind::Int, rows.len(), 0, vec![
                    (Role::Flags, flags.clone()),
                    (Role::Ints, ints),
                ], true).unwrap();
                let mut cols = vec![Some(base), Some(col)];
                resolve_links(&mut cols, rows.len(), 1 << 20).unwrap();
                prop_assert_eq!(values(&cols[1]), &vals[..]);
            }
        }
    }
}

/// A dictionary whose entries are further apart than i64::MAX (i64::MIN to 0) decodes:
/// proptest found the decoder adding its gaps in 64 bits.
#[test]
fn integer_dictionaries_span_the_whole_range() {
    let values: Vec<i64> = [i64::MIN, 0, i64::MAX, 0].repeat(4);
    let s = INT_CODINGS[4](&values).unwrap();
    assert_eq!(decode_ints(&s, values.len()).unwrap(), values);
}

/// The kind the first rows suggest holds only if every later value agrees.
#[test]
fn later_values_overrule_the_presumed_kind() {
    let column = |tail: &str| {
        let mut c = RawColumn::default();
        for i in 0..2 * INFER_ROWS {
            c.push(format!("{i}.25").as_bytes(), BARE);
        }
        c.push(tail.as_bytes(), BARE);
        c
    };
    let kind = |tail: &str| encode(&column(tail), true)[0].kind;
    assert_eq!(kind("7.50"), Kind::Decimal(2));
    assert_eq!(kind("7.5"), Kind::Text);
    assert_eq!(kind("7"), Kind::Text);
    assert_eq!(kind("2024-01-01"), Kind::Text);
    let mut ints = RawColumn::default();
    for i in 0..2 * INFER_ROWS {
        ints.push(i.to_string().as_bytes(), BARE);
    }
    ints.push(b"", QUOTED);
    assert_eq!(encode(&ints, true)[0].kind, Kind::Text);
}

/// A long column gets one integer coding, chosen on its first rows; it still decodes to
/// the values where the coding the start suggests (scaled planes) does not fit the rest.
#[test]
fn long_columns_get_one_judged_coding() {
    let n = 4 * JUDGE_ROWS + 1000;
    let mut stepped: Vec<i64> = (0..n as i64).map(|i| (i * 7919 % 1000) * 100).collect();
    let mut odd = stepped.clone();
    odd[n - 1] += 1;
    for values in [std::mem::take(&mut stepped), odd] {
        let streams = int_streams(&values);
        assert_eq!(streams.len(), 1);
        assert_eq!(decode_ints(&streams[0], values.len()).unwrap(), values);
    }
    assert_eq!(int_streams(&(0..n as i64).collect::<Vec<_>>()).len(), 1);
}

/// A long text column is coded plain or as words, whichever its first rows favour, and
/// decodes back either way.
#[test]
fn long_text_columns_get_one_judged_coding() {
    let mut prose = RawColumn::default();
    let mut unique = RawColumn::default();
    for i in 0..4 * JUDGE_ROWS + 10 {
        // Four of sixteen words: every row differs (no dictionary), the words repeat.
        let words = [
            "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dogs", "pack", "my", "box",
            "with", "five", "dozen", "liquor", "jugs",
        ];
        let w = |k: usize| words[(i >> (4 * k)) % 16];
        let v = format!("{} {}, {} {}", w(0), w(1), w(2), w(3));
        prose.push(v.as_bytes(), BARE);
        unique.push(
            format!("{:x} {:x}", i * 2654435761 % 1_000_003, i).as_bytes(),
            BARE,
        );
    }
    for (col, prose) in [(prose, true), (unique, false)] {
        let cands = encode_text(&col);
        let has = |role: Role| {
            cands
                .iter()
                .filter(|c| c.streams.iter().any(|(r, _)| *r == role))
                .count()
        };
        let plain = cands.len() - has(Role::Words) - has(Role::Vars);
        assert!(plain + has(Role::Words) == 1, "plain or words, not both");
        assert_eq!(has(Role::Words), usize::from(prose));
        for c in cands {
            let decoded = decode(Kind::Text, col.rows(), col.data.len(), c.streams, false).unwrap();
            let mut cols = vec![Some(decoded)];
            resolve_links(&mut cols, col.rows(), col.data.len()).unwrap();
            let Some(Column::Text {
                data, offsets, ids, ..
            }) = &cols[0]
            else {
                panic!("a text column decodes to text");
            };
            let entry = |e: usize| &data[offsets[e] as usize..offsets[e + 1] as usize];
            for r in 0..col.rows() {
                let e = ids.as_ref().map_or(r, |ids| ids[r] as usize);
                assert_eq!(entry(e), col.value(r));
            }
        }
    }
}

#[test]
fn text_lengths_that_would_wrap_are_refused() {
    // 5, then 2^64 − 3: added unchecked, the end would wrap back to 2.
    let mut lengths = vec![5u8];
    put_varint(&mut lengths, u64::MAX - 2);
    let streams = vec![(Role::Lengths, lengths), (Role::Bytes, b"hello".to_vec())];
    assert!(decode(Kind::Text, 2, 1 << 10, streams, false).is_err());
}

proptest! {
    /// Every integer stream decodes to its values: multiples of a step (scaled planes)
    /// and extremes whose differences wrap included.
    #[test]
    fn integer_streams_decode_to_their_values(
        units in proptest::collection::vec(any::<i64>(), 1..300),
        step in prop_oneof![Just(1i64), Just(100), Just(7), any::<i64>()],
        shift in any::<i64>(),
    ) {
        let values: Vec<i64> = units
            .iter()
            .map(|&u| (u % 1000).wrapping_mul(step).wrapping_add(shift))
            .collect();
        let streams = int_streams(&values);
        // A small step over values that do not wrap is always found.
        let exact = (2..=100).contains(&step) && shift.unsigned_abs() < 1 << 60;
        if exact && values.iter().any(|&v| v != values[0]) {
            prop_assert!(streams.iter().any(|s| s[0] == SCALED_PLANES));
        }
        for s in streams {
            prop_assert_eq!(&decode_ints(&s, values.len()).unwrap(), &values);
        }
    }
}

proptest! {
    /// Byte planes decode alike on the fast path this CPU takes and on the baseline path,
    /// across block boundaries, at every width.
    #[test]
    fn planes_decode_alike_on_every_path(
        bytes in proptest::collection::vec(any::<u8>(), 0..20_000),
        width in 0usize..=8,
    ) {
        let count = bytes.len().checked_div(width).unwrap_or(bytes.len() % 5000);
        let planes: Vec<&[u8]> = (0..width).map(|k| &bytes[k * count..(k + 1) * count]).collect();
        let want: Vec<i64> = (0..count)
            .map(|i| {
                let u = (0..width).fold(0u64, |u, k| u | u64::from(planes[k][i]) << (8 * k));
                u as i64
            })
            .collect();
        prop_assert_eq!(&from_planes(&planes, 0..count, |u| u as i64), &want);
        prop_assert_eq!(&from_planes_blocks(&planes, 0..count, |u| u as i64), &want);
        // Any range of them, as a batch reads them.
        let (a, b) = (count / 3, count - count / 5);
        prop_assert_eq!(&from_planes(&planes, a..b, |u| u as i64), &want[a..b]);
    }

    /// Integers and decimals kept as planes for reading read as batches of any size as
    /// the same arrays as their values decoded first, in every integer coding.
    #[test]
    fn chunks_kept_as_planes_read_as_their_values(
        values in proptest::collection::vec(any::<i64>(), 1..300),
        shift in 0u32..63,
        scale in 1i64..1000,
        batch in 1usize..100,
    ) {
        let values: Vec<i64> = values.iter().map(|&v| (v >> shift).wrapping_mul(scale)).collect();
        let rows = values.len();
        for (kind, target) in [
            (Kind::Int, DataType::Int64),
            (Kind::Decimal(2), DataType::Decimal128(18, 2)),
        ] {
            for ints in INT_CODINGS.iter().filter_map(|c| c(&values)) {
                let streams = vec![(Role::Ints, ints)];
                let eager = decode(kind, rows, 0, streams.clone(), false).unwrap();
                let lazy = decode(kind, rows, 0, streams, true).unwrap();
                let whole = eager.to_arrow(rows, &target).unwrap();
                let mut cursor = RowCursor::default();
                for start in (0..rows).step_by(batch) {
                    let range = start..(start + batch).min(rows);
                    let a = lazy.to_arrow_rows(rows, range.clone(), &mut cursor, &target).unwrap();
                    prop_assert_eq!(a.to_data(), whole.slice(range.start, range.len()).to_data());
                }
                let mut decoded = lazy.clone();
                decoded.decode_planes().unwrap();
                prop_assert_eq!(
                    decoded.to_arrow(rows, &target).unwrap().to_data(),
                    whole.to_data()
                );
            }
        }
    }

    /// Values that repeat code as a dictionary of them (ids of one or two bytes, entries as far
    /// apart as the 64-bit range allows) and decode back; any damage to the stream is an error
    /// or other values, never a panic.
    #[test]
    fn repeating_values_code_as_a_dictionary(
        pool in proptest::collection::vec(any::<i64>(), 1..400),
        picks in proptest::collection::vec(any::<u16>(), 800..2000),
        extremes in any::<bool>(),
        cut in any::<usize>(),
        flip in any::<(usize, u8)>(),
    ) {
        let mut pool = pool;
        if extremes {
            pool.extend([i64::MIN, i64::MAX, 0]);
        }
        let values: Vec<i64> = picks.iter().map(|&p| pool[usize::from(p) % pool.len()]).collect();
        let s = INT_CODINGS[4](&values).expect("repeating values have a dictionary");
        prop_assert_eq!(s[0], 7);
        prop_assert_eq!(&decode_ints(&s, values.len()).unwrap(), &values);
        let _ = decode_ints(&s[..cut % s.len()], values.len());
        let mut bad = s.clone();
        let at = flip.0 % bad.len();
        bad[at] ^= flip.1;
        let _ = decode_ints(&bad, values.len());
    }

    /// Varints decode to their values where small ones come in runs of eight or more (read
    /// eight at a time) and where runs are cut by larger ones.
    #[test]
    fn varint_runs_decode_to_their_values(
        values in proptest::collection::vec(
            prop_oneof![8 => -64i64..64, 1 => any::<i64>()],
            0..3000,
        ),
    ) {
        let s = encode_ints(&values);
        prop_assert_eq!(&decode_ints(&s, values.len()).unwrap(), &values);
    }
}

/// Codes `col` as following `base` (column 0), as a copy of it when `copy`, and decodes
/// it back through [`resolve_links`]: each row's flag and value.
fn through_follows(col: &RawColumn, base: &RawColumn, copy: bool) -> Option<Vec<(u8, Vec<u8>)>> {
    let base_coded = encode(base, true).remove(0);
    let stats = encode(col, true).remove(0).stats;
    let f = if copy {
        copy_candidate(col, base, 0, &stats)?
    } else {
        follow_candidate(col, base, base_coded.kind, 0, &stats)?
    };
    let rows = col.rows();
    let base_col = decode(base_coded.kind, rows, 1 << 20, base_coded.streams, false).unwrap();
    let col = decode(Kind::Text, rows, 1 << 20, f.streams, false).unwrap();
    let mut cols = vec![Some(base_col), Some(col)];
    resolve_links(&mut cols, rows, 1 << 20).unwrap();
    let mut w = cols[1].as_ref().unwrap().writer();
    Some(
        (0..rows)
            .map(|_| {
                let mut v = Vec::new();
                (w.value(&mut v), v)
            })
            .collect(),
    )
}

fn raw(values: &[(&str, u8)]) -> RawColumn {
    let mut c = RawColumn::default();
    for (v, f) in values {
        c.push(v.as_bytes(), *f);
    }
    c
}

proptest! {
    /// A text column that is a function of another (typed or text, with nulls) comes
    /// back value for value when coded as following it.
    #[test]
    fn following_columns_resolve_to_their_values(
        keys in proptest::collection::vec(0u8..6, 2..300),
        typed_base in any::<bool>(),
    ) {
        let spell = |k: u8| match (k, typed_base) {
            (0, _) => String::new(),
            (k, true) => (u32::from(k) * 7).to_string(),
            (k, false) => format!("E{k}"),
        };
        let base: Vec<(String, u8)> = keys.iter().map(|&k| (spell(k), BARE)).collect();
        let col: Vec<(String, u8)> = keys
            .iter()
            .map(|&k| (format!("template {}", k % 4), if k == 5 { QUOTED } else { BARE }))
            .collect();
        let as_raw = |v: &[(String, u8)]| {
            raw(&v.iter().map(|(s, f)| (s.as_str(), *f)).collect::<Vec<_>>())
        };
        let (base, col) = (as_raw(&base), as_raw(&col));
        let distinct: std::collections::HashSet<u8> = keys.iter().copied().collect();
        let want = |col: &RawColumn| -> Vec<(u8, Vec<u8>)> {
            (0..col.rows()).map(|r| (col.flags[r], col.value(r).to_vec())).collect()
        };
        match through_follows(&col, &base, false) {
            Some(got) => prop_assert_eq!(got, want(&col)),
            // Refused only where the base has too many distinct values to pay.
            None => prop_assert!(distinct.len() > keys.len().min(FOLLOW_SAMPLE) / 2),
        }
        // The base's own values, some quoted, copied.
        let mut copy = base.clone();
        for (f, k) in copy.flags.iter_mut().zip(&keys) {
            if k % 2 == 1 {
                *f = QUOTED;
            }
        }
        let got = through_follows(&copy, &base, true);
        prop_assert_eq!(got, Some(want(&copy)));
        prop_assert!(through_follows(&col, &base, true).is_none());
    }
}

proptest! {
    /// Every coding of a text column (plain, dictionary, templates) gives the Arrow strings
    /// and nulls that the row writer spells.
    #[test]
    fn text_as_arrow_matches_the_writer(
        rows in proptest::collection::vec((0u8..8, 0u8..4), 1..400),
    ) {
        let values: Vec<(String, u8)> = rows
            .iter()
            .map(|&(k, f)| match f {
                2 => (String::new(), NULL),
                3 => (String::new(), ABSENT),
                f => (format!("user {k} id {}", k * 13), f),
            })
            .collect();
        let col = raw(&values.iter().map(|(s, f)| (s.as_str(), *f)).collect::<Vec<_>>());
        for coded in encode(&col, false) {
            let decoded = decode(coded.kind, col.rows(), 1 << 20, coded.streams, false).unwrap();
            let array = decoded.to_arrow(col.rows(), &DataType::Utf8).unwrap();
            let strings = array.as_any().downcast_ref::<StringArray>().unwrap();
            let mut w = decoded.writer();
            for row in 0..col.rows() {
                let mut v = Vec::new();
                let present = has_value(w.value(&mut v));
                prop_assert_eq!(arrow_array::Array::is_valid(strings, row), present, "row {}", row);
                if present {
                    prop_assert_eq!(strings.value(row).as_bytes(), v.as_slice());
                }
            }
        }
    }
}

#[test]
fn follows_only_a_function_and_checks_what_it_reads() {
    let base = raw(&[("1", BARE), ("2", BARE), ("1", BARE), ("2", BARE)]);
    let good = raw(&[("a", BARE), ("b", BARE), ("a", BARE), ("b", BARE)]);
    let bad = raw(&[("a", BARE), ("b", BARE), ("c", BARE), ("b", BARE)]);
    assert!(through_follows(&good, &base, false).is_some());
    // Base value 1 goes with both `a` and `c`: not a function.
    assert!(through_follows(&bad, &base, false).is_none());

    let text = |entries: &[&str], follows: usize| {
        let (lengths, bytes) = entries_streams(entries.iter().map(|e| e.as_bytes()));
        let f = Follow::Entries(follows).stream();
        decode(
            Kind::Text,
            4,
            1 << 20,
            vec![
                (Role::Lengths, lengths),
                (Role::Bytes, bytes),
                (Role::Follows, f),
            ],
            false,
        )
        .unwrap()
    };
    let ints = || typed(vec![1, 2, 1, 2], None, None);
    // One entry for two base values.
    let mut short = vec![ints(), Some(text(&["a"], 0))];
    assert!(resolve_links(&mut short, 4, 1 << 20).is_err());
    // Two columns that follow each other.
    let mut cycle = vec![Some(text(&["a", "b"], 1)), Some(text(&["a", "b"], 0))];
    assert!(resolve_links(&mut cycle, 4, 1 << 20).is_err());
    // A base that was not decoded, or is the column itself.
    let mut missing = vec![None, Some(text(&["a", "b"], 0))];
    assert!(resolve_links(&mut missing, 4, 1 << 20).is_err());
    let mut own = vec![Some(text(&["a", "b"], 0))];
    assert!(resolve_links(&mut own, 4, 1 << 20).is_err());
    // Values that would expand past the row group's input.
    let mut big = vec![ints(), Some(text(&["aaaa", "bbbb"], 0))];
    assert!(resolve_links(&mut big, 4, 15).is_err());
    let mut fits = vec![ints(), Some(text(&["aaaa", "bbbb"], 0))];
    assert!(resolve_links(&mut fits, 4, 16).is_ok());

    // A copy has no values of its own, and copies no more than the input holds.
    let copy = |streams: Vec<(Role, Vec<u8>)>| decode(Kind::Text, 4, 1 << 20, streams, false);
    let follows = (Role::Follows, Follow::Copy(0).stream());
    let (lengths, bytes) = entries_streams([&b"a"[..]].into_iter());
    assert!(copy(vec![
        (Role::Lengths, lengths),
        (Role::Bytes, bytes),
        follows.clone()
    ])
    .is_err());
    let mut big = vec![ints(), Some(copy(vec![follows.clone()]).unwrap())];
    assert!(resolve_links(&mut big, 4, 3).is_err());
    let mut fits = vec![ints(), Some(copy(vec![follows]).unwrap())];
    assert!(resolve_links(&mut fits, 4, 4).is_ok());
    assert!(Follow::parse(&[0, 2]).is_err());
    assert!(Follow::parse(&[0]).is_err());
}

#[test]
fn kinds_fit_every_value() {
    let col = |values: &[&str]| {
        let mut c = RawColumn::default();
        for v in values {
            c.push(v.as_bytes(), BARE);
        }
        encode(&c, true).remove(0).kind
    };
    // An integer before a decimal: neither kind fits both.
    assert_eq!(col(&["5", "5.25"]), Kind::Text);
    assert_eq!(col(&["5.50", "", "-0.25"]), Kind::Decimal(2));
    assert_eq!(
        col(&["2024-01-02 03:04:05", "2024-01-02 03:04:06"]),
        Kind::Timestamp(TimeFormat {
            places: 0,
            t: false
        })
    );
    assert_eq!(
        col(&["2024-01-02 03:04:05", "2024-01-02T03:04:06"]),
        Kind::Text
    );
}

#[test]
fn chains_resolve_and_cycles_are_refused() {
    // Column 2 differs from column 1, which is column 0's values in key order.
    let mut cols = vec![
        typed(vec![3, 1, 2], None, None),
        typed(vec![10, 30, 20], None, Some(Link::Ordered(0))),
        typed(vec![1, 1, 1], None, Some(Link::Relative(1))),
    ];
    // Listed in key order 1, 2, 3 (rows 1, 2, 0): row 0 gets 20, row 1 10, row 2 30.
    resolve_links(&mut cols, 3, 1 << 20).unwrap();
    assert_eq!(values(&cols[1]), [20, 10, 30]);
    assert_eq!(values(&cols[2]), [21, 11, 31]);
    let mut cycle = vec![
        typed(vec![1, 2], None, Some(Link::Relative(1))),
        typed(vec![1, 2], None, Some(Link::Ordered(0))),
    ];
    assert!(resolve_links(&mut cycle, 2, 1 << 20).is_err());
    let mut own = vec![typed(vec![1, 2], None, Some(Link::Relative(0)))];
    assert!(resolve_links(&mut own, 2, 1 << 20).is_err());
    let mut nulls = vec![
        typed(vec![1], Some(vec![BARE, NULL]), None),
        typed(vec![1, 2], None, Some(Link::Relative(0))),
    ];
    assert!(resolve_links(&mut nulls, 2, 1 << 20).is_err());
    // Quoted values (JSON strings typed as dates) are values, not nulls.
    let mut quoted = vec![
        typed(vec![5, 6], Some(vec![QUOTED, BARE]), None),
        typed(vec![1, 2], None, Some(Link::Relative(0))),
    ];
    resolve_links(&mut quoted, 2, 1 << 20).unwrap();
    assert_eq!(values(&quoted[1]), [6, 8]);
}
