//! SQL dumps: each PostgreSQL `COPY name (a, b, ...) FROM stdin;` block becomes rows of a table
//! of its own (tab-separated COPY text: no quoting, `\N` for null), while every other line —
//! DDL, `SET`, `SELECT setval(...)`, comments, the `COPY` line itself and the `\.` that ends a
//! block — stays a line of text in the statements table, table 0. The archive keeps the input
//! as a sequence of segments, each a run of rows of one table; rebuilding writes them in order.

use crate::delimited::{Dialect, Style};

/// Name of table 0 of a SQL archive: the lines that are not COPY data.
pub const STATEMENTS: &str = "statements";

/// One table of an archive: its name and how its rows are laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    pub name: String,
    pub dialect: Dialect,
}

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
        names,
    }
}

/// Where a [`Segmenter`] is in the dump.
#[derive(Clone, Debug)]
enum State {
    Statements,
    /// After a COPY line, before the block's first row (which picks the table: a COPY line
    /// without a column list takes its width from it; an empty block has no table).
    CopyStart {
        name: String,
        columns: Vec<String>,
    },
    /// Inside a COPY block of this table.
    Copy(usize),
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
}

impl Default for Segmenter {
    fn default() -> Self {
        Self {
            tables: vec![Table {
                name: STATEMENTS.into(),
                dialect: Dialect::lines(),
            }],
            state: State::Statements,
            closed: Vec::new(),
            scanned: 0,
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
                State::Statements => match parse_copy(line) {
                    Some((name, columns)) => {
                        self.close(0, next);
                        State::CopyStart { name, columns }
                    }
                    None => State::Statements,
                },
                State::CopyStart { .. } if line == b"\\." => State::Statements,
                State::Copy(t) if line == b"\\." => {
                    self.close(t, start);
                    State::Statements
                }
                State::CopyStart { name, columns } => {
                    State::Copy(self.table_for(name, &columns, &buf[start..next]))
                }
                copy => copy,
            };
            self.scanned = next;
        }
    }

    /// The index of the table `name` with these columns, defined now if new.
    fn table_for(&mut self, name: String, columns: &[String], first_row: &[u8]) -> usize {
        let dialect = copy_dialect(columns, first_row);
        if let Some(i) = self
            .tables
            .iter()
            .position(|t| t.name == name && t.dialect == dialect)
        {
            return i;
        }
        self.tables.push(Table { name, dialect });
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
        if self.scanned > start {
            let open = match self.state {
                State::Copy(t) => t,
                _ => 0,
            };
            out.push((open, start..self.scanned));
        }
        out
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
        assert_eq!(s.tables[2].dialect.names, ["c1", "c2", "c3"]);
        assert_eq!(s.tables[1].dialect.style, Style::Copy);
        s.consumed(segs[2].1.end);
        assert_eq!(s.segments()[0], (2, 0..6));
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
