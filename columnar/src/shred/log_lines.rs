//! Log lines as leading fields and a message. Most log formats open each line with a few
//! whitespace-separated fields of steady form (a date, a time, a process id, a level, a
//! component) before free text. Each of those fields is a column of its own, typed and coded in
//! row order (times as deltas from the line before), and the rest of the line is a `message`
//! column (coded as templates). The whitespace between fields varies (padded ids, a day
//! written ` 9`), so it goes to the row's shape (see `Shapes`), as do lines with fewer
//! fields. How many fields lead is chosen on a sample by trying each count that most lines
//! reach and keeping the one that compresses smallest.

use std::ops::Range;

use super::lines::{shred_lines, Found};
use crate::model::{Dialect, FieldEnd, LogField, Shape, Shredded, BARE};
use crate::timepattern::TimePattern;

/// Most leading fields tried.
const MAX_FIELDS: usize = 10;

/// Lines of the sample looked at to find how many fields most lines have.
const SNIFF_LINES: usize = 2000;

/// Bytes of the sample each field count is tried on.
const TRIAL_BYTES: usize = 256 << 10;

fn is_gap(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Reads field `f` of a line from `from` (where the field before it ended): the value's
/// start and end, and how many bytes after it belong to the field's end (the text before the
/// next field starts with them); `None` where the line does not have the field.
fn read_field(line: &[u8], from: usize, f: &LogField) -> Option<(usize, usize, usize)> {
    let mut j = from;
    while j < line.len() && is_gap(line[j]) {
        j += 1;
    }
    if j == line.len() || !line[j..].starts_with(&f.open) {
        return None;
    }
    let start = j + f.open.len();
    let token_end = line[start..]
        .iter()
        .position(|&b| is_gap(b))
        .map_or(line.len(), |n| start + n);
    match &f.end {
        FieldEnd::Gap => (token_end > start).then_some((start, token_end, 0)),
        FieldEnd::Suffix(s) => (token_end >= start + s.len() && line[..token_end].ends_with(s))
            .then(|| (start, token_end - s.len(), s.len())),
        FieldEnd::At(b) => line[start..token_end]
            .iter()
            .position(|c| c == b)
            .map(|n| (start, start + n, 1)),
        FieldEnd::Time(p) => p.read(&line[start..]).map(|(n, _)| (start, start + n, 0)),
        FieldEnd::Tokens(n) => {
            let mut end = token_end;
            for _ in 1..*n {
                let next = end + line[end..].iter().take_while(|&&b| is_gap(b)).count();
                if next == line.len() {
                    return None;
                }
                end = line[next..]
                    .iter()
                    .position(|&b| is_gap(b))
                    .map_or(line.len(), |m| next + m);
            }
            Some((start, end, 0))
        }
    }
}

/// Splits `line` into the leading `fields` it has (up to the first it lacks) and a message
/// (the rest, past whitespace): fills `values` (one per column; those the line lacks stay
/// `None`) and returns the line's shape.
fn split_line(line: &[u8], fields: &[LogField], values: &mut [Found]) -> Shape {
    let mut shape = Shape::default();
    let (mut i, mut closing) = (0, 0);
    for (col, f) in fields.iter().enumerate() {
        let Some((start, end, close)) = read_field(line, i + closing, f) else {
            break;
        };
        shape.fields.push((col as u32, line[i..start].to_vec()));
        values[col] = Some((start..end, BARE));
        (i, closing) = (end, close);
    }
    let mut j = i + closing;
    while j < line.len() && is_gap(line[j]) {
        j += 1;
    }
    if j < line.len() {
        shape
            .fields
            .push((fields.len() as u32, line[i..j].to_vec()));
        values[fields.len()] = Some((j..line.len(), BARE));
        i = line.len();
    }
    shape.tail = line[i..].to_vec();
    shape
}

/// The fields of dialect `d` (whitespace-separated tokens where it does not say).
fn fields_of(d: &Dialect) -> Vec<LogField> {
    match d.log_fields.len() {
        0 => vec![LogField::token(); d.columns - 1],
        _ => d.log_fields.clone(),
    }
}

/// Shreds log lines by `d` (a log fields dialect): lines that are not UTF-8, or of a shape
/// past the row group's limit, go to the exceptions.
pub fn shred(src: &[u8], d: &Dialect) -> Shredded {
    let fields = fields_of(d);
    shred_lines(src, d.columns, |line, values| {
        Some(split_line(line, &fields, values))
    })
}

/// The spans of the first [`MAX_FIELDS`] tokens of `line`, the timestamp `time` reads at
/// token `time.0` counted as one; `None` when it does not read there.
fn tokens(line: &[u8], time: Option<(usize, TimePattern)>) -> Option<Vec<&[u8]>> {
    let mut out = Vec::new();
    let mut i = 0;
    while out.len() < MAX_FIELDS {
        while i < line.len() && is_gap(line[i]) {
            i += 1;
        }
        if i == line.len() {
            break;
        }
        let end = match time {
            Some((t, p)) if t == out.len() => i + p.read(&line[i..])?.0,
            _ => line[i..]
                .iter()
                .position(|&b| is_gap(b))
                .map_or(line.len(), |n| i + n),
        };
        out.push(&line[i..end]);
        i = end;
    }
    match time {
        Some((t, _)) if out.len() <= t => None,
        _ => Some(out),
    }
}

/// How a time candidate ranks: calendar spelling, lines read, earliest token, bytes read.
type TimeRank = (bool, usize, std::cmp::Reverse<usize>, usize);

/// The timestamp that starts a token at the same place on most of `lines`: learned from the
/// first lines' tokens (see [`TimePattern::learn`]) and judged on all of them. A calendar
/// spelling is preferred to epoch digits (a counter could pass for those); then the one that
/// reads the most lines, the earliest token, and the longest spelling.
fn learn_time(lines: &[&[u8]], year: i16) -> Option<(usize, TimePattern)> {
    let lines: Vec<&[u8]> = lines.iter().copied().filter(|l| !l.is_empty()).collect();
    let mut candidates: Vec<(usize, TimePattern)> = Vec::new();
    for line in lines.iter().take(8) {
        let mut i = 0;
        for t in 0..MAX_FIELDS {
            while i < line.len() && is_gap(line[i]) {
                i += 1;
            }
            if i == line.len() {
                break;
            }
            for p in TimePattern::learn(&line[i..], year) {
                if !candidates.contains(&(t, p)) {
                    candidates.push((t, p));
                }
            }
            i += line[i..]
                .iter()
                .position(|&b| is_gap(b))
                .unwrap_or(line.len() - i);
        }
    }
    let mut best: Option<(TimeRank, (usize, TimePattern))> = None;
    for &(t, p) in &candidates {
        let (mut count, mut spelled) = (0, 0);
        for line in &lines {
            if let Some(tokens) = tokens(line, Some((t, p))) {
                count += 1;
                spelled += tokens[t].len();
            }
        }
        if count * 2 < lines.len() || count == 0 {
            continue;
        }
        let key = (p.has_calendar(), count, std::cmp::Reverse(t), spelled);
        if best.as_ref().is_none_or(|(k, _)| key > *k) {
            best = Some((key, (t, p)));
        }
    }
    best.map(|(_, b)| b)
}

/// Severity words: a leading token that is one of these (any case) on most lines is `level`.
const LEVELS: [&str; 22] = [
    "TRACE",
    "DEBUG",
    "DBG",
    "INFO",
    "INFORMATION",
    "NOTICE",
    "WARN",
    "WARNING",
    "ERROR",
    "ERR",
    "FATAL",
    "CRIT",
    "CRITICAL",
    "ALERT",
    "EMERG",
    "EMERGENCY",
    "SEVERE",
    "FINE",
    "FINER",
    "FINEST",
    "CONFIG",
    "VERBOSE",
];

/// Android's one-letter levels.
const LETTER_LEVELS: &[u8] = b"VDIWEFA";

/// Wrappers around a level: open, close.
const LEVEL_WRAPS: [(&[u8], &[u8]); 7] = [
    (b"", b""),
    (b"[", b"]"),
    (b"(", b")"),
    (b"<", b">"),
    (b"", b":"),
    (b"[", b"]:"),
    (b"<", b">:"),
];

fn is_level(v: &[u8], letters: bool) -> bool {
    if letters {
        return v.len() == 1 && LETTER_LEVELS.contains(&v[0]);
    }
    LEVELS.iter().any(|l| l.as_bytes().eq_ignore_ascii_case(v))
}

/// What a leading token is on most lines.
#[derive(Clone, Debug, PartialEq)]
enum Role {
    Time(TimePattern),
    /// A level between these wrappers.
    Level(Vec<u8>, Vec<u8>),
    /// `name[pid]` then this suffix (`]` or `]:`): two fields.
    ProcessPid(Vec<u8>),
    /// `[...]`.
    Bracketed,
    /// A token ending in `:` (a component, or a process after a host).
    Colon,
    Int,
    Token,
}

/// Whether `f` holds for at least 90% of `n` values.
fn most(hits: usize, n: usize) -> bool {
    n > 0 && hits * 10 >= n * 9
}

/// The role of token `t` on lines whose tokens are `rows` (those that have it).
fn role_of(rows: &[&Vec<&[u8]>], t: usize) -> Role {
    let values: Vec<&[u8]> = rows.iter().map(|r| r[t]).collect();
    let n = values.len();
    let count = |f: &dyn Fn(&[u8]) -> bool| values.iter().filter(|v| f(v)).count();
    for letters in [false, true] {
        for (open, close) in LEVEL_WRAPS {
            let hits = count(&|v| {
                v.len() > open.len() + close.len()
                    && v.starts_with(open)
                    && v.ends_with(close)
                    && is_level(&v[open.len()..v.len() - close.len()], letters)
            });
            if most(hits, n) {
                return Role::Level(open.to_vec(), close.to_vec());
            }
        }
    }
    for suffix in [&b"]:"[..], b"]"] {
        let hits = count(&|v| {
            v.ends_with(suffix) && {
                let inner = &v[..v.len() - suffix.len()];
                inner.iter().position(|&c| c == b'[').is_some_and(|b| {
                    b > 0 && b + 1 < inner.len() && inner[b + 1..].iter().all(u8::is_ascii_digit)
                })
            }
        });
        if most(hits, n) {
            return Role::ProcessPid(suffix.to_vec());
        }
    }
    if most(
        count(&|v| v.len() > 2 && v[0] == b'[' && v.ends_with(b"]")),
        n,
    ) {
        return Role::Bracketed;
    }
    if most(count(&|v| v.len() > 1 && v.ends_with(b":")), n) {
        return Role::Colon;
    }
    if most(count(&|v| v.iter().all(u8::is_ascii_digit)), n) {
        return Role::Int;
    }
    Role::Token
}

/// Leading fields and their names for `roles` (one per token), up to token `k`; the tokens
/// in `head` (those before the time, or all but the leading integers of them) as one field
/// (several tokens, coded as text).
fn layout(roles: &[Role], k: usize, head: Range<usize>) -> Dialect {
    let mut fields = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let time_first = matches!(roles.first(), Some(Role::Time(_)));
    let name = |names: &mut Vec<String>, want: &str| {
        let n = names.len() + 1;
        names.push(if names.iter().any(|x| x == want) || want.is_empty() {
            format!("f{n}")
        } else {
            want.to_string()
        });
    };
    for (t, role) in roles.iter().take(k).enumerate() {
        if head.contains(&t) {
            if t == head.start {
                fields.push(LogField {
                    open: Vec::new(),
                    end: FieldEnd::Tokens(head.len()),
                });
                name(&mut names, "");
            }
            continue;
        }
        let after_time = t > 0 && matches!(roles[t - 1], Role::Time(_));
        let next_is_process = matches!(roles.get(t + 1), Some(Role::ProcessPid(_) | Role::Colon));
        match role {
            Role::Time(p) => {
                fields.push(LogField {
                    open: Vec::new(),
                    end: FieldEnd::Time(*p),
                });
                name(&mut names, "time");
            }
            Role::Level(open, close) => {
                fields.push(LogField {
                    open: open.clone(),
                    end: match close.is_empty() {
                        true => FieldEnd::Gap,
                        false => FieldEnd::Suffix(close.clone()),
                    },
                });
                name(&mut names, "level");
            }
            Role::ProcessPid(suffix) => {
                fields.push(LogField {
                    open: Vec::new(),
                    end: FieldEnd::At(b'['),
                });
                name(&mut names, "process");
                fields.push(LogField {
                    open: Vec::new(),
                    end: FieldEnd::Suffix(suffix.clone()),
                });
                name(&mut names, "pid");
            }
            Role::Bracketed => {
                fields.push(LogField {
                    open: b"[".to_vec(),
                    end: FieldEnd::Suffix(b"]".to_vec()),
                });
                name(&mut names, "thread");
            }
            Role::Colon => {
                fields.push(LogField {
                    open: Vec::new(),
                    end: FieldEnd::Suffix(b":".to_vec()),
                });
                let host_before = names.last().is_some_and(|n| n == "host");
                name(
                    &mut names,
                    if host_before { "process" } else { "component" },
                );
            }
            Role::Int | Role::Token => {
                fields.push(LogField::token());
                let want = if after_time && next_is_process && *role == Role::Token {
                    "host"
                } else if *role == Role::Int && time_first && !names.iter().any(|n| n == "level") {
                    if names.iter().any(|n| n == "pid") {
                        "thread"
                    } else {
                        "pid"
                    }
                } else {
                    ""
                };
                name(&mut names, want);
            }
        }
    }
    names.push("message".into());
    if fields.iter().all(|f| *f == LogField::token()) {
        // Tokens only: the dialect before version 5 says as much.
        fields.clear();
    }
    Dialect::log_layout(fields, names)
}

/// How many leading tokens (the time counted as one) are present on at least 90% of `rows`.
fn common_positions(rows: &[Vec<&[u8]>]) -> usize {
    let mut count = [0usize; MAX_FIELDS + 1];
    for r in rows {
        count[..r.len()].iter_mut().for_each(|c| *c += 1);
    }
    count[..MAX_FIELDS]
        .iter()
        .take_while(|&&c| most(c, rows.len()))
        .count()
}

/// The layout for log lines like `sample` (whole lines): the time (see [`learn_time`]; a
/// spelling without a year takes `year`) and the roles of the leading tokens most lines
/// share (a level, `process[pid]:`, `[thread]`, `component:`...) name fields; how many
/// leading fields there are is what `size` (the bytes a row group of these lines takes laid
/// out by a dialect) says codes the start of the sample smallest, but never fewer than
/// reach the last named role. A sample without a time may also be whole lines.
pub fn choose(sample: &[u8], year: i16, size: &mut dyn FnMut(&[u8], &Dialect) -> usize) -> Dialect {
    let trial = match sample.len() {
        n if n <= TRIAL_BYTES => sample,
        _ => {
            let cut = sample[..TRIAL_BYTES].iter().rposition(|&c| c == b'\n');
            &sample[..cut.map_or(sample.len(), |c| c + 1)]
        }
    };
    let lines: Vec<&[u8]> = trial.split(|&c| c == b'\n').take(SNIFF_LINES).collect();
    let time = learn_time(&lines, year);
    let rows: Vec<Vec<&[u8]>> = lines.iter().filter_map(|l| tokens(l, time)).collect();
    let common = common_positions(&rows);
    let mut roles = Vec::new();
    for t in 0..common {
        roles.push(match time {
            Some((at, p)) if at == t => Role::Time(p),
            _ => role_of(&rows.iter().filter(|r| r.len() > t).collect::<Vec<_>>(), t),
        });
    }
    // At least the time and the level; at most up to the first role that ends the header
    // (a process or a component), and only as far as the sample codes smaller.
    let low = roles
        .iter()
        .rposition(|r| matches!(r, Role::Time(_) | Role::Level(..)))
        .map_or(1, |p| p + 1);
    let high = roles
        .iter()
        .position(|r| matches!(r, Role::ProcessPid(_) | Role::Colon))
        .map_or(common, |p| p + 1);
    let mut best: Option<(usize, Dialect)> = None;
    if time.is_none() {
        best = Some((size(trial, &Dialect::lines()), Dialect::lines()));
    }
    // Tokens before a time that leads nothing named may also be one field, after the leading
    // integers (a record number) or with them.
    let mut heads: Vec<Range<usize>> = vec![Range::default()];
    if let Some((t, _)) = time {
        if t >= 2
            && roles[..t]
                .iter()
                .all(|r| matches!(r, Role::Token | Role::Int))
        {
            heads.push(0..t);
            let ints = roles[..t].iter().take_while(|r| **r == Role::Int).count();
            if ints > 0 && t - ints >= 2 {
                heads.push(ints..t);
            }
        }
    }
    for k in low..=high {
        for head in &heads {
            let d = layout(&roles, k, head.clone());
            let s = size(trial, &d);
            if best.as_ref().is_none_or(|b| s < b.0) {
                best = Some((s, d));
            }
        }
    }
    best.map_or_else(Dialect::lines, |b| b.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Shapes, ABSENT};
    use crate::rows::rebuild_shaped as rebuild;
    use glyd_core::Level;

    fn round_trip(src: &[u8], k: usize) -> Shredded {
        round_trip_as(src, &Dialect::log_fields(k))
    }

    fn round_trip_as(src: &[u8], d: &Dialect) -> Shredded {
        let s = shred(src, d);
        let cols: Vec<crate::column::Column> = s
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let e = match d.kind_of(i) {
                    Some(kind) => crate::column::encode_as(c, kind, false),
                    None => crate::column::encode(c, false),
                }
                .remove(0);
                crate::column::decode(e.kind, s.rows(), src.len(), e.streams, false).unwrap()
            })
            .collect();
        let (list, ids) = s.shapes.encode();
        let shapes = Shapes::decode(&list, &ids, s.rows(), d.columns, src.len()).unwrap();
        let mut out = Vec::new();
        rebuild(
            &cols,
            &s.terminators,
            &s.exceptions,
            &shapes,
            crate::model::Style::Fields,
            src.len(),
            &mut crate::rebuilt::Rebuilt::kept(&mut out),
        )
        .unwrap();
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(src));
        s
    }

    #[test]
    fn lines_split_into_fields_and_message() {
        let src = concat!(
            "03-17 16:13:38.811  1702  2395 D WindowManager: freezing  display\n",
            "03-17 16:13:38.819  1702 18671 I Power: ok\r\n",
            "short line\n",
            "\n",
            "  lead  and trail  \n",
            "03-17 16:13:39.001 99 1 E X: last"
        )
        .as_bytes();
        let s = round_trip(src, 5);
        assert_eq!(s.rows(), 6);
        assert!(s.exceptions.is_empty());
        assert_eq!(s.columns[2].value(1), b"1702");
        assert_eq!(s.columns[5].value(0), b"WindowManager: freezing  display");
        assert_eq!(s.columns[2].flags[2], ABSENT);
        assert_eq!(s.columns[1].value(4), b"and");
        let mut bad = src.to_vec();
        bad.extend_from_slice(b"\n\xff\xfe not utf-8\n");
        let s = round_trip(&bad, 3);
        assert_eq!(s.exceptions.len(), 1);
    }

    #[test]
    fn regular_leading_tokens_become_fields() {
        let mut log = Vec::new();
        for i in 0..2000u32 {
            log.extend_from_slice(
                format!(
                    "2024-01-02 03:{:02}:{:02},{:03} {} [main] {} value={}\n",
                    i / 60 % 60,
                    i % 60,
                    i * 7 % 1000,
                    ["INFO", "WARN", "DEBUG"][i as usize % 3],
                    ["started job", "stopped job", "queue length"][i as usize % 3],
                    i * 31 % 97
                )
                .as_bytes(),
            );
        }
        let rows: Vec<Vec<&[u8]>> = log
            .split(|&c| c == b'\n')
            .take(400)
            .filter_map(|l| tokens(l, None))
            .collect();
        assert_eq!(common_positions(&rows), 7);
        let d = crate::detect::choose_log_layout(&log, Level::Max, 2024);
        assert_eq!(d.delimiter, crate::model::LOG_FIELDS);
        assert_eq!(&d.names[..2], ["time", "level"]);
        round_trip_as(&log, &d);
        // Free text has no leading fields.
        let prose = b"the quick brown fox\njumps over\nthe lazy dog today\n".repeat(3);
        assert_eq!(
            crate::detect::choose_log_layout(&prose, Level::Max, 2024),
            Dialect::lines()
        );
    }

    /// Lines of a layout, `n` of them, made by `line(i)`.
    fn log_of(n: usize, line: impl Fn(usize) -> String) -> Vec<u8> {
        (0..n).flat_map(|i| (line(i) + "\n").into_bytes()).collect()
    }

    #[test]
    fn layouts_never_seen_get_time_and_level() {
        let lv = |i: usize| ["INFO", "WARN", "ERROR", "DEBUG"][i % 4];
        let words =
            |i: usize| ["started job", "queue is full", "retrying", "done in 3 ms"][i * 7 % 4];
        // A layout, lines of it, columns it must have, the time of its sixth line.
        type Case<'a> = (&'a str, Vec<u8>, Vec<&'a str>, Option<i64>);
        let cases: Vec<Case> = vec![
            (
                "nginx error",
                log_of(300, |i| {
                    format!(
                        "2024/01/02 03:{:02}:{:02} [{}] {}#0: *{} {}",
                        i / 60,
                        i % 60,
                        lv(i).to_lowercase(),
                        100 + i % 3,
                        i,
                        words(i)
                    )
                }),
                vec!["time", "level"],
                Some(1_704_164_405),
            ),
            (
                "access log",
                log_of(300, |i| {
                    format!("10.0.0.{} - - [10/Oct/2000:13:{:02}:{:02} -0700] \"GET /a/{} HTTP/1.0\" 200 {}",
                        i % 7, i / 60, i % 60, i % 13, 1000 + i)
                }),
                vec!["time"],
                Some(971_182_805),
            ),
            (
                "python logging",
                log_of(300, |i| {
                    format!(
                        "2024-01-02 03:{:02}:{:02},{:03} - app.worker - {} - {}",
                        i / 60,
                        i % 60,
                        i * 37 % 1000,
                        lv(i),
                        words(i)
                    )
                }),
                vec!["time", "level"],
                Some(1_704_164_405_185),
            ),
            (
                "RFC 5424 syslog",
                log_of(300, |i| {
                    format!(
                        "2003-10-11T22:{:02}:{:02}.{:03}Z mymachine su {} - {}",
                        i / 60,
                        i % 60,
                        i % 1000,
                        4000 + i % 5,
                        words(i)
                    )
                }),
                vec!["time"],
                Some(1_065_909_605_005),
            ),
            (
                "epoch seconds",
                log_of(300, |i| {
                    format!(
                        "{} host{} {} {}",
                        1_700_000_000 + i * 3,
                        i % 2,
                        lv(i),
                        words(i)
                    )
                }),
                vec!["time", "level"],
                Some(1_700_000_015),
            ),
            (
                "bracketed ISO, level after",
                log_of(300, |i| {
                    format!(
                        "[2021-06-01T10:{:02}:{:02}] <{}> {}",
                        i / 60,
                        i % 60,
                        lv(i),
                        words(i)
                    )
                }),
                vec!["time", "level"],
                Some(1_622_541_605),
            ),
            (
                "Windows CBS",
                log_of(300, |i| {
                    format!(
                        "2016-09-28 04:{:02}:{:02}, {}                  CBS    {}",
                        i / 60,
                        i % 60,
                        ["Info", "Warning", "Error"][i % 3],
                        words(i)
                    )
                }),
                vec!["time", "level"],
                Some(1_475_035_205),
            ),
            (
                "syslog with process[pid]",
                log_of(300, |i| {
                    format!(
                        "Feb {:2} 0{}:0{}:1{} web{} cron[{}]: {}",
                        1 + i / 40,
                        i % 10,
                        i % 7,
                        i % 10,
                        i % 3,
                        200 + i,
                        words(i)
                    )
                }),
                vec!["time"],
                Some(1_075_611_915),
            ),
        ];
        for (what, log, names, fifth) in cases {
            let d = crate::detect::choose_log_layout(&log, Level::Max, 2004);
            for name in names {
                assert!(
                    d.names.iter().any(|n| n == name),
                    "{what}: no {name} in {d:?}"
                );
            }
            let s = round_trip_as(&log, &d);
            assert!(s.exceptions.is_empty(), "{what}");
            let (col, p) = d.log_time().expect(what);
            let v = s.columns[col].value(5);
            assert_eq!(
                p.read(v).map(|(n, t)| (n == v.len(), t)),
                fifth.map(|t| (true, t)),
                "{what}"
            );
        }
    }
}
