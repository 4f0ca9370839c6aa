//! SQL dumps: each PostgreSQL `COPY name (a, b, ...) FROM stdin;` block becomes rows of a table
//! of its own (tab-separated COPY text: no quoting, `\N` for null), and so does each table that
//! `INSERT INTO name [(a, b, ...)] VALUES (...), (...);` statements fill (one row per tuple; the
//! statement's text, spacing and line ends go to the rows' shapes; PostgreSQL and MySQL
//! quoting; a statement on one line or over several, a tuple a line as `pg_dump
//! --rows-per-insert` writes them). Every
//! other line — DDL, `SET`, `SELECT setval(...)`, comments, the `COPY` line itself and the `\.`
//! that ends a block, an INSERT that is not all literals — stays a line of text in the
//! statements table, table 0. The archive keeps the input as a sequence of segments, each a
//! run of rows of one table; rebuilding writes them in order.

use std::ops::Range;

use super::lines::line_at;
use crate::model::{
    Dialect, RawColumn, Shape, ShapeIndex, Shredded, Style, Table, BARE, INSERT_VALUES, NULL,
    QUOTED,
};

/// Name of table 0 of a SQL archive: the lines that are not COPY data.
pub const STATEMENTS: &str = "statements";

/// Whether `sample` (the start of an input) looks like a SQL dump: a `COPY ... FROM stdin;`
/// line, or at least two lines of SQL statements among its first lines and no line that
/// is not valid UTF-8.
pub fn sniff(sample: &[u8]) -> bool {
    // A multi-byte character cut at the sample's end is fine; invalid text elsewhere is not.
    let valid = std::str::from_utf8(sample).map_or_else(|e| e.valid_up_to(), |s| s.len());
    if valid + 4 < sample.len() {
        return false;
    }
    let mut statements = 0;
    for line in sample.split(|&c| c == b'\n').take(2000) {
        let line = trim_cr(line);
        if parse_copy(line).is_some() {
            return true;
        }
        let keyword = |k: &[u8]| line.len() >= k.len() && line[..k.len()].eq_ignore_ascii_case(k);
        if [
            "CREATE TABLE",
            "INSERT INTO",
            "ALTER TABLE",
            "SET ",
            "DROP TABLE",
        ]
        .iter()
        .any(|k| keyword(k.as_bytes()))
        {
            statements += 1;
        }
    }
    statements >= 2
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Parses a COPY line (without its line end): `COPY [schema.]name [(col, ...)] FROM stdin;`.
/// Returns the table name (as spelled, schema included) and the column names, unquoted
/// (empty when the line lists none).
pub fn parse_copy(line: &[u8]) -> Option<(String, Vec<String>)> {
    let line = std::str::from_utf8(line).ok()?;
    let rest = line.strip_prefix("COPY ")?;
    let body = rest.strip_suffix(" FROM stdin;")?;
    let (name, columns) = match body.find(" (") {
        Some(i) => {
            let list = body[i + 2..].strip_suffix(')')?;
            let cols: Vec<String> = list.split(", ").map(unquote).collect();
            if cols.iter().any(String::is_empty) {
                return None;
            }
            (&body[..i], cols)
        }
        None => (body, Vec::new()),
    };
    if name.is_empty() || name.contains(' ') && !name.starts_with('"') {
        return None;
    }
    Some((name.to_string(), columns))
}

fn unquote(name: &str) -> String {
    match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        Some(inner) => inner.replace("\"\"", "\""),
        None => name.trim().to_string(),
    }
}

/// The dialect of a COPY block's rows.
fn copy_dialect(columns: &[String], first_row: &[u8]) -> Dialect {
    let names: Vec<String> = if columns.is_empty() {
        let width = trim_cr(first_row).split(|&c| c == b'\t').count();
        (1..=width).map(|i| format!("c{i}")).collect()
    } else {
        columns.to_vec()
    };
    Dialect {
        delimiter: b'\t',
        style: Style::Copy,
        columns: names.len(),
        header: None,
        log_fields: Vec::new(),
        names,
    }
}

/// One tuple of an INSERT line: each value's span and flag (a string's span is inside its
/// quotes, escapes as written), and the span of the text before each value and after the last.
struct Tuple {
    values: Vec<(Range<usize>, u8)>,
    seps: Vec<Range<usize>>,
    tail: Range<usize>,
}

/// An INSERT line (without its line end) parsed: the table name as spelled, the listed
/// columns (unquoted; empty when none), and its tuples, which cover the line.
struct Insert {
    name: String,
    columns: Vec<String>,
    tuples: Vec<Tuple>,
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Whether `b[i..]` starts with the keyword `k` (any case).
fn keyword(b: &[u8], i: usize, k: &str) -> bool {
    b.len() >= i + k.len() && b[i..i + k.len()].eq_ignore_ascii_case(k.as_bytes())
}

/// The end (past the closing quote) of the quoted identifier or string opening at `i`, where
/// a doubled quote stands for one and, with `backslash`, a backslash escapes the next byte.
fn quoted_end(b: &[u8], i: usize, backslash: bool) -> Option<usize> {
    let q = b[i];
    let mut j = i + 1;
    loop {
        match *b.get(j)? {
            c if c == q && b.get(j + 1) == Some(&q) => j += 2,
            c if c == q => return Some(j + 1),
            b'\\' if backslash => j += 2,
            _ => j += 1,
        }
    }
}

/// The end of the (possibly quoted, possibly schema-qualified) name starting at `i`.
fn name_end(b: &[u8], mut i: usize) -> Option<usize> {
    let start = i;
    while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'(' {
        i = match b[i] {
            b'"' | b'`' => quoted_end(b, i, false)?,
            _ => i + 1,
        };
    }
    (i > start).then_some(i)
}

/// One literal at `i` (after any space): its span, flag and end. A string keeps its inside
/// as spelled; `NULL` is a null; anything else is a bare token (a number, `TRUE`, `DEFAULT`).
fn literal(b: &[u8], i: usize, backslash: bool) -> Option<(Range<usize>, u8, usize)> {
    match *b.get(i)? {
        b'\'' => {
            let end = quoted_end(b, i, backslash)?;
            Some((i + 1..end - 1, QUOTED, end))
        }
        _ => {
            let n = b[i..]
                .iter()
                .take_while(|&&c| !c.is_ascii_whitespace() && !b",()'\"`;".contains(&c))
                .count();
            match &b[i..i + n] {
                [] => None,
                b"NULL" => Some((i..i, NULL, i + n)),
                _ => Some((i..i + n, BARE, i + n)),
            }
        }
    }
}

/// Parses `INSERT INTO name [(columns)] VALUES (literal, ...), ...;` with `backslash`
/// escapes in strings or without: the whole line or nothing.
fn parse_insert_with(b: &[u8], backslash: bool) -> Option<Insert> {
    if !keyword(b, 0, "INSERT INTO ") {
        return None;
    }
    let at = skip_space(b, 12);
    let end = name_end(b, at)?;
    let name = std::str::from_utf8(&b[at..end]).ok()?.to_string();
    let mut i = skip_space(b, end);
    let mut columns = Vec::new();
    if b.get(i) == Some(&b'(') {
        let close = i + memchr::memchr(b')', &b[i..])?;
        let list = std::str::from_utf8(&b[i + 1..close]).ok()?;
        columns = list
            .split(',')
            .map(|c| unquote(c.trim().trim_matches('`')))
            .collect();
        if columns.iter().any(String::is_empty) {
            return None;
        }
        i = skip_space(b, close + 1);
    }
    if !keyword(b, i, "VALUES") {
        return None;
    }
    i += 6;
    let mut tuples = Vec::new();
    let mut cut = 0;
    loop {
        i = skip_space(b, i);
        if b.get(i) != Some(&b'(') {
            return None;
        }
        let mut t = Tuple {
            values: Vec::new(),
            seps: Vec::new(),
            tail: 0..0,
        };
        let mut prev = cut;
        i += 1;
        loop {
            let v = skip_space(b, i);
            let (span, flag, end) = literal(b, v, backslash)?;
            t.seps.push(prev..v);
            t.values.push((span, flag));
            prev = end;
            i = skip_space(b, end);
            match b.get(i) {
                Some(b',') => i += 1,
                Some(b')') => break,
                _ => return None,
            }
        }
        if tuples
            .first()
            .is_some_and(|f: &Tuple| f.values.len() != t.values.len())
        {
            return None;
        }
        i = skip_space(b, i + 1);
        match b.get(i) {
            Some(b',') => {
                t.tail = prev..i;
                cut = i;
                i += 1;
                tuples.push(t);
            }
            Some(b';') if skip_space(b, i + 1) == b.len() => {
                t.tail = prev..b.len();
                tuples.push(t);
                return Some(Insert {
                    name,
                    columns,
                    tuples,
                });
            }
            _ => return None,
        }
    }
}

/// Parses an INSERT line of literals, with strings as standard SQL spells them (a quote
/// doubled) or, failing that, as MySQL does (backslash escapes too).
fn parse_insert(line: &[u8]) -> Option<Insert> {
    parse_insert_with(line, false).or_else(|| parse_insert_with(line, true))
}

/// Longest INSERT statement read over several lines: a statement that has not ended by then
/// stays lines of text (a row group holds a statement whole, and at most 64 MiB).
const MAX_STATEMENT: usize = 16 << 20;

/// An INSERT statement over several lines, as `pg_dump --rows-per-insert` and many SQL tools
/// write them (`VALUES` and then a tuple a line), starting with the line at `start`, which
/// does not parse alone. The statement ends with the first later line that ends with `;`: it
/// parses whole or it is not a statement of literals. Returns it parsed (spans into
/// `src[start..]`), the end of its text, the terminator of its last line and the start of the
/// line after; `None` where it does not parse, or does not end within `src` (or
/// [`MAX_STATEMENT`] bytes).
fn multiline_insert(src: &[u8], start: usize) -> Option<(Insert, usize, u8, usize)> {
    if !keyword(src, start, "INSERT INTO ") {
        return None;
    }
    let mut p = start;
    loop {
        let (line, term, next) = line_at(src, p);
        let end = p + line.len();
        if trim_end(line).ends_with(b";") {
            // A statement ending on its first line parsed alone or not at all.
            return (p > start)
                .then(|| parse_insert(&src[start..end]))
                .flatten()
                .map(|ins| (ins, end, term, next));
        }
        if next >= src.len() || next - start > MAX_STATEMENT {
            return None;
        }
        p = next;
    }
}

/// `b` without trailing whitespace.
fn trim_end(b: &[u8]) -> &[u8] {
    let n = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    &b[..n]
}

/// The dialect of an INSERT table of `arity` values per row; `None` when the statement lists
/// a different number of columns.
fn insert_dialect(columns: &[String], arity: usize) -> Option<Dialect> {
    let names: Vec<String> = match columns.len() {
        0 => (1..=arity).map(|i| format!("c{i}")).collect(),
        n if n == arity => columns.to_vec(),
        _ => return None,
    };
    Some(Dialect {
        delimiter: INSERT_VALUES,
        style: Style::Sql,
        columns: arity,
        header: None,
        log_fields: Vec::new(),
        names,
    })
}

/// Shreds the INSERT lines of a table of dialect `d`: a row per tuple, laid out by its shape
/// (the statement's text before the first tuple goes to its first row, the `;` to its last).
/// Only the last row of a line ends with the line's terminator. A line that does not parse
/// into tuples of the table's width goes to the exceptions.
pub fn shred_inserts(src: &[u8], d: &Dialect) -> Shredded {
    let mut out = Shredded {
        columns: vec![RawColumn::default(); d.columns],
        ..Shredded::default()
    };
    let mut index = ShapeIndex::default();
    let utf8 = std::str::from_utf8(src).is_ok();
    let mut p = 0;
    while p < src.len() {
        let (start, (mut line, mut term, mut next)) = (p, line_at(src, p));
        let mut parsed = parse_insert(line);
        if parsed.is_none() {
            if let Some((ins, end, t, n)) = multiline_insert(src, start) {
                // The statement's inner line ends are part of its rows' shapes.
                (line, term, next) = (&src[start..end], t, n);
                parsed = Some(ins);
            }
        }
        p = next;
        let parsed = parsed
            .filter(|_| utf8 || std::str::from_utf8(line).is_ok())
            .filter(|ins| ins.tuples[0].values.len() == d.columns);
        let Some(ins) = parsed else {
            out.exceptions
                .push(out.terminators.len() as u64, &src[start..next]);
            continue;
        };
        // Shapes first: a line whose shapes overflow the row group's limit stays whole.
        let ids: Option<Vec<u32>> = ins
            .tuples
            .iter()
            .map(|t| {
                let shape = Shape {
                    fields: (0..t.seps.len())
                        .map(|c| (c as u32, line[t.seps[c].clone()].to_vec()))
                        .collect(),
                    tail: line[t.tail.clone()].to_vec(),
                };
                index.intern(shape, &mut out.shapes)
            })
            .collect();
        let Some(ids) = ids else {
            out.exceptions
                .push(out.terminators.len() as u64, &src[start..next]);
            continue;
        };
        let last = ins.tuples.len() - 1;
        for (k, (t, id)) in ins.tuples.iter().zip(ids).enumerate() {
            for (col, (span, flag)) in out.columns.iter_mut().zip(&t.values) {
                col.push(&line[span.clone()], *flag);
            }
            out.shapes.ids.push(id);
            out.terminators
                .push(if k == last { term } else { crate::model::NONE });
        }
    }
    out
}

/// Where a [`Segmenter`] is in the dump.
#[derive(Clone, Debug)]
enum State {
    Statements,
    /// Among INSERT lines into this table.
    Inserts(usize),
    /// After a COPY line, before the block's first row (which picks the table: a COPY line
    /// without a column list takes its width from it; an empty block has no table).
    CopyStart {
        name: String,
        columns: Vec<String>,
    },
    /// Inside a COPY block of this table.
    Copy(usize),
    /// Inside an INSERT statement that began at buffer offset `start` and goes on over more
    /// lines (see [`multiline_insert`]), while the segment of table `open` is open: its table
    /// is known when it ends.
    Statement {
        open: usize,
        start: usize,
    },
}

/// Splits a SQL dump, a line at a time as it arrives, into segments of one table each.
/// Offsets are into the caller's buffer of pending input; [`Segmenter::consumed`] shifts
/// them when the caller drops bytes from its front.
#[derive(Clone, Debug)]
pub struct Segmenter {
    pub tables: Vec<Table>,
    state: State,
    /// Closed segments: table and end offset; the open one starts at the last end.
    closed: Vec<(usize, usize)>,
    /// Bytes of the buffer classified so far (always at a line start).
    scanned: usize,
    /// The INSERT statements over several lines among them, which a row group holds whole.
    statements: Vec<Range<usize>>,
}

impl Default for Segmenter {
    fn default() -> Self {
        Self {
            tables: vec![Table::text(STATEMENTS, Dialect::lines())],
            state: State::Statements,
            closed: Vec::new(),
            scanned: 0,
            statements: Vec::new(),
        }
    }
}

impl Segmenter {
    /// Classifies the complete lines of `buf` not yet seen (and, with `end`, a last line
    /// without a line end).
    pub fn scan(&mut self, buf: &[u8], end: bool) {
        while self.scanned < buf.len() {
            let start = self.scanned;
            let next = match memchr::memchr(b'\n', &buf[start..]) {
                Some(i) => start + i + 1,
                None if end => buf.len(),
                None => return,
            };
            let line = trim_cr(
                buf[start..next]
                    .strip_suffix(b"\n")
                    .unwrap_or(&buf[start..next]),
            );
            self.state = match std::mem::replace(&mut self.state, State::Statements) {
                State::Statements => self.statement_line(0, line, start, next),
                State::Inserts(t) => self.statement_line(t, line, start, next),
                State::CopyStart { .. } if line == b"\\." => State::Statements,
                State::Copy(t) if line == b"\\." => {
                    self.close(t, start);
                    State::Statements
                }
                State::CopyStart { name, columns } => {
                    State::Copy(self.table_for(name, &columns, &buf[start..next]))
                }
                State::Statement { open, start: first } => {
                    let last = end && next == buf.len();
                    if trim_end(line).ends_with(b";") || last || next - first > MAX_STATEMENT {
                        self.statement_end(open, &buf[..next], first)
                    } else {
                        State::Statement { open, start: first }
                    }
                }
                copy => copy,
            };
            self.scanned = next;
        }
        if let (true, State::Statement { open, start }) = (end, &self.state) {
            // The input ended inside it: a statement cut short is lines of text.
            self.state = self.statement_end(*open, buf, *start);
        }
    }

    /// The state after the INSERT statement over several lines that began at `start` ends
    /// with the last line of `buf` (or the input ends, or it grew too long): rows of its
    /// table if it parses, lines of text otherwise.
    fn statement_end(&mut self, open: usize, buf: &[u8], start: usize) -> State {
        let table = multiline_insert(buf, start).and_then(|(ins, ..)| self.table_of(ins));
        if table.is_some() {
            self.statements.push(start..buf.len());
        }
        self.after_statement(open, start, table)
    }

    /// The table an INSERT statement fills (defined now if new); `None` when its column
    /// list and its tuples differ in width.
    fn table_of(&mut self, ins: Insert) -> Option<usize> {
        let d = insert_dialect(&ins.columns, ins.tuples[0].values.len())?;
        Some(self.table_with(ins.name, d))
    }

    /// The state after a statement at `start` that is rows of `table` (or, `None`, a line
    /// of text), read while the segment of table `open` is open.
    fn after_statement(&mut self, open: usize, start: usize, table: Option<usize>) -> State {
        if table.unwrap_or(0) != open {
            self.close(open, start);
        }
        table.map_or(State::Statements, State::Inserts)
    }

    /// The state after `line` (`start..next` of the buffer), read outside COPY data while
    /// the open segment is of table `open` (0, or an INSERT table).
    fn statement_line(&mut self, open: usize, line: &[u8], start: usize, next: usize) -> State {
        if let Some((name, columns)) = parse_copy(line) {
            if open != 0 {
                self.close(open, start);
            }
            self.close(0, next);
            return State::CopyStart { name, columns };
        }
        let parsed = parse_insert(line);
        if parsed.is_none() && keyword(line, 0, "INSERT INTO ") && !trim_end(line).ends_with(b";") {
            // Its table is known when the statement ends, on a later line.
            return State::Statement { open, start };
        }
        let table = parsed.and_then(|ins| self.table_of(ins));
        self.after_statement(open, start, table)
    }

    /// The index of the table `name` with these columns, defined now if new.
    fn table_for(&mut self, name: String, columns: &[String], first_row: &[u8]) -> usize {
        self.table_with(name, copy_dialect(columns, first_row))
    }

    /// The index of the table `name` of `dialect`, defined now if new.
    fn table_with(&mut self, name: String, dialect: Dialect) -> usize {
        if let Some(i) = self
            .tables
            .iter()
            .position(|t| t.name == name && t.dialect() == Some(&dialect))
        {
            return i;
        }
        self.tables.push(Table::text(name, dialect));
        self.tables.len() - 1
    }

    fn close(&mut self, table: usize, end: usize) {
        let start = self.closed.last().map_or(0, |&(_, e)| e);
        if end > start {
            self.closed.push((table, end));
        }
    }

    /// The segments classified so far: closed ones, then the open one (which may grow).
    pub fn segments(&self) -> Vec<(usize, std::ops::Range<usize>)> {
        let mut out = Vec::with_capacity(self.closed.len() + 1);
        let mut start = 0;
        for &(t, end) in &self.closed {
            out.push((t, start..end));
            start = end;
        }
        // The open segment ends where a statement still being read begins.
        let (open, end) = match self.state {
            State::Copy(t) | State::Inserts(t) => (t, self.scanned),
            State::Statement { open, start } => (open, start),
            _ => (0, self.scanned),
        };
        if end > start {
            out.push((open, start..end));
        }
        out
    }

    /// The INSERT statements over several lines in the segments so far: a row group is not
    /// cut inside one.
    pub fn statements(&self) -> &[Range<usize>] {
        &self.statements
    }

    /// The caller dropped the first `n` bytes of its buffer (whole segments, then whole lines
    /// of the open one).
    pub fn consumed(&mut self, n: usize) {
        self.closed.retain_mut(|(_, end)| {
            if *end <= n {
                false
            } else {
                *end -= n;
                true
            }
        });
        self.scanned -= n;
        if let State::Statement { start, .. } = &mut self.state {
            *start -= n;
        }
        self.statements.retain_mut(|r| {
            if r.end <= n {
                false
            } else {
                *r = r.start.saturating_sub(n)..r.end - n;
                true
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_copy_lines() {
        assert_eq!(
            parse_copy(b"COPY public.actor (actor_id, first_name, \"Last Name\") FROM stdin;"),
            Some((
                "public.actor".into(),
                vec!["actor_id".into(), "first_name".into(), "Last Name".into()]
            ))
        );
        assert_eq!(
            parse_copy(b"COPY t FROM stdin;"),
            Some(("t".into(), vec![]))
        );
        assert_eq!(parse_copy(b"COPY t (a) TO stdout;"), None);
        assert_eq!(parse_copy(b"COPY t (a, ) FROM stdin;"), None);
        assert_eq!(parse_copy(b"-- COPY t FROM stdin;"), None);
    }

    #[test]
    fn statements_over_several_lines_are_rows_of_their_table() {
        let dump = b"SET x = 1;\nINSERT INTO a VALUES\n\t(1, 'x'),\r\n\t(2, 'y;');\n\
            INSERT INTO a VALUES (3, 'z');\nSELECT 1;\nINSERT INTO a VALUES\n(4,\n'w');\n\
            INSERT INTO b VALUES\n(5, now());\nINSERT INTO a VALUES\n(6, 'v')\n";
        // Fed a byte at a time: a statement's table is known only at its end.
        let mut s = Segmenter::default();
        for n in 0..dump.len() {
            s.scan(&dump[..n], false);
            let segs = s.segments();
            assert!(segs.last().is_none_or(|(_, r)| r.end <= n));
        }
        s.scan(dump, true);
        let segs = s.segments();
        let spans: Vec<(usize, &[u8])> = segs.iter().map(|(t, r)| (*t, &dump[r.clone()])).collect();
        assert_eq!(
            spans,
            [
                (0, &b"SET x = 1;\n"[..]),
                (1, b"INSERT INTO a VALUES\n\t(1, 'x'),\r\n\t(2, 'y;');\nINSERT INTO a VALUES (3, 'z');\n"),
                (0, b"SELECT 1;\n"),
                (1, b"INSERT INTO a VALUES\n(4,\n'w');\n"),
                // Not literals, and never ended: lines of text.
                (0, b"INSERT INTO b VALUES\n(5, now());\nINSERT INTO a VALUES\n(6, 'v')\n"),
            ]
        );
        assert_eq!(s.tables.len(), 2);
        let statements: Vec<&[u8]> = s.statements().iter().map(|r| &dump[r.clone()]).collect();
        assert_eq!(statements, [&spans[1].1[..45], spans[3].1]);
        // The rows, each value from its own line.
        let rows: Vec<u8> = [spans[1].1, spans[3].1].concat();
        let shredded = shred_inserts(&rows, s.tables[1].dialect().unwrap());
        assert!(shredded.exceptions.is_empty());
        assert_eq!(shredded.columns[0].data, b"1234");
        assert_eq!(shredded.columns[1].data, b"xy;zw");
    }

    #[test]
    fn segments_a_dump() {
        let dump = b"SET x = 1;\nCOPY a (i, s) FROM stdin;\n1\tx\n2\t\\N\n\\.\n\nCOPY t FROM stdin;\n5\t6\t7\n\\.\nCOPY a (i, s) FROM stdin;\n3\ty\n\\.\n";
        let mut s = Segmenter::default();
        // Fed in two pieces, cut inside a line.
        s.scan(&dump[..30], false);
        s.scan(dump, true);
        let segs = s.segments();
        let tables: Vec<usize> = segs.iter().map(|(t, _)| *t).collect();
        assert_eq!(tables, [0, 1, 0, 2, 0, 1, 0]);
        let spans: Vec<&[u8]> = segs.iter().map(|(_, r)| &dump[r.clone()]).collect();
        assert_eq!(spans[1], b"1\tx\n2\t\\N\n");
        assert_eq!(spans[3], b"5\t6\t7\n");
        assert_eq!(spans.concat(), dump);
        assert_eq!(s.tables[2].dialect().unwrap().names, ["c1", "c2", "c3"]);
        assert_eq!(s.tables[1].dialect().unwrap().style, Style::Copy);
        s.consumed(segs[2].1.end);
        assert_eq!(s.segments()[0], (2, 0..6));
    }

    /// The rows an INSERT line gives: per tuple, its values as (flag, text).
    fn tuples(line: &str) -> Option<Vec<Vec<(u8, String)>>> {
        let b = line.as_bytes();
        let ins = parse_insert(b)?;
        Some(
            ins.tuples
                .iter()
                .map(|t| {
                    t.values
                        .iter()
                        .map(|(r, f)| (*f, line[r.clone()].to_string()))
                        .collect()
                })
                .collect(),
        )
    }

    #[test]
    fn parses_insert_lines() {
        let q = |s: &str| (QUOTED, s.to_string());
        let bare = |s: &str| (BARE, s.to_string());
        let null = (NULL, String::new());
        assert_eq!(
            tuples("INSERT INTO public.actor VALUES (1, 'PENELOPE', 'O''Neil', NULL);"),
            Some(vec![vec![
                bare("1"),
                q("PENELOPE"),
                q("O''Neil"),
                null.clone()
            ]])
        );
        // MySQL: backquoted names, many tuples, backslash escapes.
        assert_eq!(
            tuples(
                "INSERT INTO `film` (`id`,`title`) VALUES (1,'It\\'s'),(2,'a\\\\'),(-3.5,'')  ;"
            ),
            Some(vec![
                vec![bare("1"), q("It\\'s")],
                vec![bare("2"), q("a\\\\")],
                vec![bare("-3.5"), q("")],
            ])
        );
        let ins = parse_insert(b"INSERT INTO `film` (`id`,`title`) VALUES (1,'x');").unwrap();
        assert_eq!(
            (ins.name.as_str(), &ins.columns[..]),
            ("`film`", &["id".to_string(), "title".to_string()][..])
        );
        for bad in [
            "INSERT INTO t VALUES (1, 2)",
            "INSERT INTO t VALUES (1, 2); -- trailing",
            "INSERT INTO t VALUES (1, 2), (3);",
            "INSERT INTO t VALUES ('a'::text);",
            "INSERT INTO t VALUES (E'a');",
            "INSERT INTO t VALUES (now());",
            "INSERT INTO t VALUES ();",
            "INSERT INTO t SELECT 1;",
            "INSERT INTO t VALUES ('unterminated);",
        ] {
            assert!(tuples(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn inserts_become_tables_and_rebuild() {
        let dump = concat!(
            "SET x = 1;\n",
            "INSERT INTO a VALUES (1, 'x', NULL);\n",
            "INSERT INTO a VALUES (2,'y','2006-02-15 04:34:33'),(3, 'z''s', '2006-02-15 04:34:34');\r\n",
            "INSERT INTO b (k) VALUES (7);\n",
            "INSERT INTO a VALUES (now(), 'x', NULL);\n",
            "INSERT INTO a VALUES (4, 'w', NULL);\n",
        )
        .as_bytes();
        let mut s = Segmenter::default();
        s.scan(dump, true);
        let segs = s.segments();
        let tables: Vec<usize> = segs.iter().map(|(t, _)| *t).collect();
        assert_eq!(tables, [0, 1, 2, 0, 1]);
        assert_eq!(s.tables[2].dialect().unwrap().names, ["k"]);
        assert_eq!(s.tables[1].dialect().unwrap().style, Style::Sql);
        let (_, rows) = &segs[1];
        let d = s.tables[1].dialect().unwrap();
        let shredded = shred_inserts(&dump[rows.clone()], d);
        assert_eq!(shredded.rows(), 3);
        assert!(shredded.exceptions.is_empty());
        assert_eq!(shredded.columns[1].value(2), b"z''s");
        assert_eq!(shredded.columns[2].flags, [NULL, QUOTED, QUOTED]);
        assert_eq!(
            shredded.terminators,
            [crate::model::LF, crate::model::NONE, crate::model::CRLF]
        );
        // A line of another width is kept whole.
        let odd = b"INSERT INTO a VALUES (1, 2);\n";
        assert_eq!(shred_inserts(odd, d).exceptions.len(), 1);
    }

    #[test]
    fn sniffs_dumps_not_csv() {
        assert!(sniff(b"--\nCOPY public.a (x) FROM stdin;\n1\n\\.\n"));
        assert!(sniff(
            b"CREATE TABLE a (x int);\nINSERT INTO a VALUES (1);\n"
        ));
        assert!(!sniff(b"a,b\n1,2\n"));
        assert!(!sniff(b"INSERT INTO is a phrase\nonce\n"));
    }
}
