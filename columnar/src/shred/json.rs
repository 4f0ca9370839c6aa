//! JSON lines: one object per line, each top-level key a column. A value is kept as spelled:
//! a string's bytes between its quotes (escapes as written, flagged quoted), a number, `true`,
//! `false`, or a nested object or array as its JSON text; `null` is a null and a key the
//! object lacks is absent. A nested object whose keys are stable (judged on the sample) is
//! *flattened*: each of its keys is a column named by its path, `user.id`, `user.name`, so it
//! types, compresses and prunes like a top-level key; its braces and keys are shape text. Everything else on the line — braces, keys, colons, commas and
//! whitespace — is the line's *shape*: which columns it has, in which order, and the literal
//! text before each value and after the last. Shapes repeat, so each row stores a shape id.
//! A line that is not an object of known keys goes to the exceptions, verbatim.

use memchr::memchr2;

use super::lines::{line_at, shred_lines};
use crate::model::{Dialect, Shape, Shredded, Style, BARE, JSON_LINES, NULL, QUOTED};

/// Most columns (distinct top-level keys) a JSON lines table has.
const MAX_COLUMNS: usize = 1024;

/// Where the whitespace starting at `i` ends.
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r') {
        i += 1;
    }
    i
}

/// The end (just past the closing quote) of the string whose opening quote is at `i`.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        let k = j + memchr2(b'"', b'\\', &b[j..])?;
        if b[k] == b'"' {
            return Some(k + 1);
        }
        j = k + 2;
        if j > b.len() {
            return None;
        }
    }
}

/// One value at `i`: its end, flag, and the bytes kept as the column's value.
fn scan_value(b: &[u8], i: usize) -> Option<(usize, u8, std::ops::Range<usize>)> {
    match *b.get(i)? {
        b'"' => {
            let end = string_end(b, i)?;
            Some((end, QUOTED, i + 1..end - 1))
        }
        b'{' | b'[' => {
            // Nested: kept as its JSON text; brackets balance outside strings.
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some((j + 1, BARE, i..j + 1));
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        b'n' if b[i..].starts_with(b"null") => Some((i + 4, NULL, i..i)),
        b't' if b[i..].starts_with(b"true") => Some((i + 4, BARE, i..i + 4)),
        b'f' if b[i..].starts_with(b"false") => Some((i + 5, BARE, i..i + 5)),
        b'-' | b'0'..=b'9' => {
            let n = b[i..]
                .iter()
                .take_while(|&&c| matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                .count();
            Some((i + n, BARE, i..i + n))
        }
        _ => None,
    }
}

/// One member of a parsed object line.
struct Member {
    /// The key's bytes in the line's key arena: for a member of a flattened object, its path
    /// (`user.id`).
    key: std::ops::Range<usize>,
    /// Where the literal text before the value starts (after the previous value).
    sep_start: usize,
    /// Where the value's spelling starts (its opening quote, for a string).
    value_start: usize,
    value: std::ops::Range<usize>,
    flag: u8,
}

/// Deepest flattened object.
const MAX_FLAT_DEPTH: usize = 8;

/// A line's members, their keys in an arena, and the path being read.
#[derive(Default)]
struct Members {
    list: Vec<Member>,
    keys: Vec<u8>,
    path: Vec<u8>,
}

impl Members {
    fn key(&self, m: &Member) -> &[u8] {
        &self.keys[m.key.clone()]
    }
}

/// Reads the object whose `{` is at `i` into `out`: its members, and those of the objects
/// under the key paths `flat` says are flattened (recursively); `prev_end` is where the last
/// value read ended. Returns where the object ends (past its `}`).
fn members_of(
    b: &[u8],
    mut i: usize,
    depth: usize,
    prev_end: &mut usize,
    out: &mut Members,
    flat: &dyn Fn(&[u8]) -> bool,
) -> Option<usize> {
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(b, i)?;
        let key = i + 1..key_end - 1;
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        let outer = out.path.len();
        out.path.extend_from_slice(&b[key]);
        let end = if b.get(i) == Some(&b'{') && depth < MAX_FLAT_DEPTH && flat(&out.path) {
            out.path.push(b'.');
            members_of(b, i, depth + 1, prev_end, out, flat)?
        } else {
            let (end, flag, value) = scan_value(b, i)?;
            let k = out.keys.len();
            out.keys.extend_from_slice(&out.path);
            out.list.push(Member {
                key: k..out.keys.len(),
                sep_start: *prev_end,
                value_start: i,
                value,
                flag,
            });
            *prev_end = end;
            end
        };
        out.path.truncate(outer);
        i = skip_ws(b, end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return Some(i + 1),
            _ => return None,
        }
    }
}

/// Parses a line (without its terminator) as one JSON object, flattening the objects under
/// the key paths `flat` names; returns where the text after the last value starts. `None`
/// when the line is not exactly one object.
fn parse_object_flat(b: &[u8], out: &mut Members, flat: &dyn Fn(&[u8]) -> bool) -> Option<usize> {
    out.list.clear();
    out.keys.clear();
    out.path.clear();
    let i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut prev_end = 0;
    let end = members_of(b, i, 0, &mut prev_end, out, flat)?;
    (skip_ws(b, end) == b.len()).then_some(prev_end)
}

/// [`parse_object_flat`] with no object flattened.
fn parse_object(b: &[u8], out: &mut Members) -> Option<usize> {
    parse_object_flat(b, out, &|_| false)
}

/// A line's set of top-level keys as a number, the same for the same keys in any order;
/// `None` when the line is not one JSON object.
fn key_set(line: &[u8], members: &mut Members) -> Option<u64> {
    use std::hash::BuildHasher;
    parse_object(line, members)?;
    Some(
        members
            .list
            .iter()
            .fold(members.list.len() as u64, |sum, m| {
                sum.wrapping_add(rustc_hash::FxBuildHasher.hash_one(members.key(m)))
            }),
    )
}

/// Where the whole lines `src` pass from one key set to another, each held by lines of at
/// least `run` bytes in a row (lines between such runs, and lines that are not objects, go
/// with the run before them). A stream that carries several sources in turns (a shipper's
/// batches, or keys that appear for good) is cut there, so that each row group codes one
/// source's columns as they would code apart: types, links between columns, dictionaries.
pub fn key_set_breaks(src: &[u8], run: usize) -> Vec<usize> {
    let mut members = Members::default();
    let mut breaks = Vec::new();
    // The key set of the last long run, and the run being read: its key set and start.
    let mut long: Option<u64> = None;
    let mut current: Option<(u64, usize)> = None;
    let mut at = 0;
    let mut end_run = |current: Option<(u64, usize)>, end: usize, breaks: &mut Vec<usize>| {
        if let Some((set, start)) = current {
            if end - start >= run {
                if long.is_some_and(|l| l != set) {
                    breaks.push(start);
                }
                long = Some(set);
            }
        }
    };
    while at < src.len() {
        let end = memchr::memchr(b'\n', &src[at..]).map_or(src.len(), |i| at + i + 1);
        let line = src[at..end].strip_suffix(b"\n").unwrap_or(&src[at..end]);
        if let Some(set) = key_set(line, &mut members) {
            if current.is_none_or(|(c, _)| c != set) {
                end_run(current, at, &mut breaks);
                current = Some((set, at));
            }
        }
        at = end;
    }
    end_run(current, src.len(), &mut breaks);
    breaks
}

/// Most distinct keys a nested object may have across the sample to be flattened.
const MAX_FLAT_KEYS: usize = 64;

/// The top-level keys of `lines` (JSON objects) whose values are objects with stable keys:
/// objects on two lines or more, whose distinct keys number at most [`MAX_FLAT_KEYS`] and
/// at most half the objects (a map keyed by ids is not flattened).
fn stable_objects(lines: &[&[u8]]) -> crate::model::FastSet<Vec<u8>> {
    let mut seen: crate::model::FastMap<Vec<u8>, (usize, crate::model::FastSet<Vec<u8>>)> =
        Default::default();
    let (mut members, mut nested) = (Members::default(), Members::default());
    for line in lines {
        if parse_object(line, &mut members).is_none() {
            continue;
        }
        for m in &members.list {
            let value = &line[m.value.clone()];
            if value.first() != Some(&b'{') || parse_object(value, &mut nested).is_none() {
                continue;
            }
            let entry = seen.entry(members.key(m).to_vec()).or_default();
            entry.0 += 1;
            for n in &nested.list {
                if entry.1.len() <= MAX_FLAT_KEYS {
                    entry.1.insert(nested.key(n).to_vec());
                }
            }
        }
    }
    seen.into_iter()
        .filter(|(_, (objects, keys))| {
            *objects >= 2
                && !keys.is_empty()
                && keys.len() <= MAX_FLAT_KEYS
                && keys.len() * 2 <= *objects
        })
        .map(|(k, _)| k)
        .collect()
}

/// The key paths under which objects are flattened, as dialect `names` say: every path
/// before a `.` in a name (`user` for `user.id`).
fn flattened(names: &[String]) -> crate::model::FastSet<Vec<u8>> {
    let mut out = crate::model::FastSet::default();
    for n in names {
        for (i, _) in n.match_indices('.') {
            out.insert(n.as_bytes()[..i].to_vec());
        }
    }
    out
}

/// The JSON lines dialect of `sample`, if at least 90% of its lines (at least two, or all of a
/// whole input) are JSON objects: its columns are their keys, in the order first seen, a
/// stable nested object's keys by their paths (see [`stable_objects`]).
pub fn sniff(sample: &[u8], whole: bool) -> Option<Dialect> {
    let cut = if whole {
        sample
    } else {
        &sample[..sample.iter().rposition(|&c| c == b'\n')? + 1]
    };
    let mut objects_lines: Vec<&[u8]> = Vec::new();
    let mut lines = 0usize;
    let mut members = Members::default();
    let mut p = 0;
    while p < cut.len() && lines < 10_000 {
        let (line, _, next) = line_at(cut, p);
        p = next;
        if line.is_empty() {
            continue;
        }
        lines += 1;
        if std::str::from_utf8(line).is_ok() && parse_object(line, &mut members).is_some() {
            objects_lines.push(line);
        }
    }
    let objects = objects_lines.len();
    let enough = objects >= 2 || (whole && objects == lines && objects > 0);
    if !enough || (objects as f64) < lines as f64 * 0.9 {
        return None;
    }
    let stable = stable_objects(&objects_lines);
    let flat = |path: &[u8]| stable.contains(path);
    let mut names: Vec<Vec<u8>> = Vec::new();
    let mut seen = crate::model::FastSet::default();
    for line in &objects_lines {
        if parse_object_flat(line, &mut members, &flat).is_none() {
            continue;
        }
        for m in &members.list {
            let key = members.key(m);
            if names.len() < MAX_COLUMNS && seen.insert(key.to_vec()) {
                names.push(key.to_vec());
            }
        }
    }
    if names.is_empty() {
        return None;
    }
    Some(Dialect {
        delimiter: JSON_LINES,
        style: Style::Json,
        columns: names.len(),
        header: None,
        log_fields: Vec::new(),
        names: names
            .iter()
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .collect(),
    })
}

/// Shreds JSON lines by `d` (a dialect [`sniff`] made). A key `d` does not name becomes a new
/// column after its columns (absent from the rows before), up to [`MAX_COLUMNS`] in all, named
/// in [`Shredded::added`] in the order the keys first appeared. A line whose object repeats a
/// key, or would pass that bound, stays verbatim.
pub fn shred(src: &[u8], d: &Dialect) -> Shredded {
    let mut index: crate::model::FastMap<Vec<u8>, u32> = d
        .names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_bytes().to_vec(), i as u32))
        .collect();
    let mut added: Vec<String> = Vec::new();
    let mut members = Members::default();
    let flat_paths = flattened(&d.names);
    let flat = |path: &[u8]| flat_paths.contains(path);
    // Keys new in the line being read.
    let mut fresh: Vec<Vec<u8>> = Vec::new();
    let mut shredded = shred_lines(src, d.columns, |line, values| {
        let row = 'row: {
            let Some(tail_start) = parse_object_flat(line, &mut members, &flat) else {
                break 'row None;
            };
            let mut shape = Shape {
                fields: Vec::with_capacity(members.list.len()),
                tail: line[tail_start..].to_vec(),
            };
            for m in &members.list {
                let key = members.key(m);
                let col = match index.get(key) {
                    Some(&c) => c as usize,
                    // A key new to the table: its column comes after those known so far.
                    None if fresh.iter().any(|f| f == key) => break 'row None,
                    None => {
                        let c = index.len() + fresh.len();
                        if c >= MAX_COLUMNS || std::str::from_utf8(key).is_err() {
                            break 'row None;
                        }
                        fresh.push(key.to_vec());
                        c
                    }
                };
                if values.len() <= col {
                    values.resize(col + 1, None);
                }
                if values[col].is_some() {
                    break 'row None; // a key twice in one object
                }
                values[col] = Some((m.value.clone(), m.flag));
                shape
                    .fields
                    .push((col as u32, line[m.sep_start..m.value_start].to_vec()));
            }
            Some(shape)
        };
        match &row {
            // The line is a row: its new keys are columns from here on.
            Some(_) => {
                for k in fresh.drain(..) {
                    added.push(String::from_utf8_lossy(&k).into_owned());
                    index.insert(k, index.len() as u32);
                }
            }
            None => {
                fresh.clear();
                values.truncate(index.len());
            }
        }
        row
    });
    shredded.added = added;
    shredded
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column::Column;
    use crate::model::Shapes;
    use crate::rows::rebuild_shaped as rebuild;

    #[test]
    fn objects_parse_into_members_and_shapes() {
        let line = br#" {"a": 1, "b":"x\"y" ,"c":{"d":[1,"]"]},"e":null,"f":true}  "#;
        let mut m = Members::default();
        let tail = parse_object(line, &mut m).unwrap();
        let keys: Vec<&[u8]> = m.list.iter().map(|x| m.key(x)).collect();
        assert_eq!(keys, [&b"a"[..], b"b", b"c", b"e", b"f"]);
        assert_eq!(&line[m.list[1].value.clone()], br#"x\"y"#);
        assert_eq!(&line[m.list[2].value.clone()], br#"{"d":[1,"]"]}"#);
        assert_eq!(m.list[3].flag, NULL);
        assert_eq!(&line[tail..], b"}  ");
        assert_eq!(
            &line[m.list[1].sep_start..m.list[1].value_start],
            br#", "b":"#
        );
        // Flattened: `c`'s members by their paths, its braces and keys shape text.
        let tail = parse_object_flat(line, &mut m, &|p| p == b"c").unwrap();
        let keys: Vec<&[u8]> = m.list.iter().map(|x| m.key(x)).collect();
        assert_eq!(keys, [&b"a"[..], b"b", b"c.d", b"e", b"f"]);
        assert_eq!(
            &line[m.list[2].sep_start..m.list[2].value_start],
            br#" ,"c":{"d":"#
        );
        assert_eq!(
            &line[m.list[3].sep_start..m.list[3].value_start],
            br#"},"e":"#
        );
        assert_eq!(&line[tail..], b"}  ");
        for bad in [
            &br#"{"a":1"#[..],
            br#"{"a":1}x"#,
            br#"{"a" 1}"#,
            br#"{a:1}"#,
            br#"[1]"#,
            br#"{"a":"unterminated}"#,
            br#"{"a":nul}"#,
            br#"{"a":1,}"#,
            br#"{"c":{"d":1,}}"#,
        ] {
            assert!(
                parse_object_flat(bad, &mut m, &|p| p == b"c").is_none(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(parse_object(b"{ }", &mut m), Some(0));
    }

    /// The columns of `s` (of an input of `len` bytes), coded and decoded.
    fn coded(s: &Shredded, len: usize) -> Vec<Column> {
        s.columns
            .iter()
            .map(|c| {
                let e = crate::column::encode(c, false).remove(0);
                crate::column::decode(e.kind, s.rows(), len, e.streams, false).unwrap()
            })
            .collect()
    }

    /// Shreds `src` as sniffed and rebuilds it: the dialect's names, and the shredded input.
    fn round_trip(src: &[u8]) -> (Vec<String>, Shredded) {
        let d = sniff(src, true).unwrap();
        let s = shred(src, &d);
        let cols = coded(&s, src.len());
        let mut out = Vec::new();
        rebuild(
            &cols,
            &s.terminators,
            &s.exceptions,
            &s.shapes,
            Style::Json,
            src.len(),
            &mut crate::rebuilt::Rebuilt::kept(&mut out),
        )
        .unwrap();
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(src));
        let mut names = d.names.clone();
        names.extend(s.added.iter().cloned());
        (names, s)
    }

    #[test]
    fn stable_nested_objects_are_columns_by_path() {
        let mut src = String::new();
        for i in 0..20 {
            src += &format!(
                "{{\"t\":{i},\"user\":{{\"id\":{},\"name\":\"u{i}\", \"geo\":{{\"c\":\"x\"}}}},\
                 \"counts\":{{\"k{i}\":1}}}}\n",
                i % 3
            );
        }
        // Not an object on one line, an empty one on another, a new key on a third.
        src += "{\"t\":20,\"user\":null,\"counts\":{}}\n";
        src += "{\"t\":21,\"user\":{},\"counts\":{}}\n";
        src += "{\"t\":22,\"user\":{\"id\":1,\"new\":[1]},\"counts\":{}}\n";
        let (names, s) = round_trip(src.as_bytes());
        // `counts` is keyed by ids: kept as JSON text. `geo` under `user` stays text too (only
        // top-level objects are judged).
        assert_eq!(
            names,
            [
                "t",
                "user.id",
                "user.name",
                "user.geo",
                "counts",
                "user",
                "user.new"
            ]
        );
        assert!(s.exceptions.rows.is_empty());
    }

    #[test]
    fn json_lines_shred_and_rebuild_exactly() {
        let src = concat!(
            "{\"id\":1,\"ts\":\"2024-01-02T03:04:05\",\"msg\":\"ok\"}\n",
            "{\"id\":2, \"ts\":\"2024-01-02T03:04:06\",\"msg\":null}\r\n",
            "{\"msg\":\"reordered\",\"id\":3}\n",
            "not json\n",
            "{\"id\":4,\"extra\":1}\n",
            "{\"id\":5,\"id\":6}\n",
            "{\"id\":-0.5e3,\"ts\":\"2024-01-02T03:04:07\",\"msg\":\"\\u00e9\"}"
        )
        .as_bytes();
        // One line in seven is not an object: too many to sniff as JSON lines, but not to
        // shred as them.
        assert!(sniff(src, true).is_none());
        let good: Vec<u8> = src
            .split_inclusive(|&c| c == b'\n')
            .filter(|l| l.starts_with(b"{"))
            .flatten()
            .copied()
            .collect();
        let d = sniff(&good, true).unwrap();
        assert_eq!(d.names, ["id", "ts", "msg", "extra"]);
        let s = shred(src, &d);
        assert_eq!(s.rows(), 5);
        assert_eq!(s.exceptions.rows, [3, 4]);
        // The first and last lines share a shape.
        assert_eq!(s.shapes.list.len(), 4);
        let cols = coded(&s, src.len());
        let (list, ids) = s.shapes.encode();
        let shapes = Shapes::decode(&list, &ids, s.rows(), d.columns, src.len()).unwrap();
        assert_eq!(shapes, s.shapes);
        let mut out = Vec::new();
        rebuild(
            &cols,
            &s.terminators,
            &s.exceptions,
            &shapes,
            Style::Json,
            src.len(),
            &mut crate::rebuilt::Rebuilt::kept(&mut out),
        )
        .unwrap();
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(src));
        // The timestamps, quoted in JSON, are typed.
        let ts = crate::column::encode(&s.columns[1], false).remove(0);
        assert!(matches!(ts.kind, crate::model::Kind::Timestamp(_)));
    }

    #[test]
    fn key_set_breaks_fall_between_long_runs_of_different_keys() {
        let a = |i: usize| format!("{{\"ts\":{i},\"msg\":\"m\"}}\n");
        let a2 = |i: usize| format!("{{\"msg\":\"m\", \"ts\":{i}}}\n"); // same keys
        let b = |i: usize| format!("{{\"ts\":{i},\"msg\":\"m\",\"trace\":\"t{i}\"}}\n");
        let mut src = String::new();
        (0..50).for_each(|i| src += &a(i));
        (0..50).for_each(|i| src += &a2(i));
        let first = src.len();
        (0..3).for_each(|i| src += &b(i)); // short: no break of its own
        src += "not json\n";
        (0..100).for_each(|i| src += &a(i));
        let second = src.len();
        (0..100).for_each(|i| src += &b(i));
        let breaks = key_set_breaks(src.as_bytes(), 500);
        assert_eq!(breaks, [second]);
        assert!(first < second);
        // Round-robin sources never make a long run: no break.
        let mut mixed = String::new();
        (0..300).for_each(|i| mixed += &(if i % 2 == 0 { a(i) } else { b(i) }));
        assert!(key_set_breaks(mixed.as_bytes(), 500).is_empty());
    }

    #[test]
    fn sniffs_only_json_lines() {
        assert!(sniff(b"{\"a\":1}\n{\"a\":2}\n", true).is_some());
        assert!(sniff(b"a,b\n1,2\n", true).is_none());
        assert!(sniff(b"{\"a\":1}\nplain\nplain\n", true).is_none());
        assert!(sniff(b"{}\n{}\n", true).is_none());
    }
}
