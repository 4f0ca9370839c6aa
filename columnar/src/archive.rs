//! The record archive file: a header (magic, version, level, the input's format and its first
//! table), row groups one after another (each a run of rows of one table; a SQL dump defines
//! further tables along the way), and a footer indexing them. [`RecordWriter`] streams an
//! input into an archive with memory bounded by row group size × threads; [`ArchiveReader`]
//! opens one for random access (tables, schemas, statistics, Arrow batches of some columns and
//! row groups, rebuild); [`rebuild`] turns an archive read from a pipe back into the original
//! bytes.

use std::io::{self, Read, Write};
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{BooleanArray, RecordBatch};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{Field, Schema, SchemaRef};
use rayon::prelude::*;

use glyd_core::Level;

use crate::arrow_table;
use crate::bytes::{put_prefixed, put_varint, Cursor};
use crate::column::{Column, Kind, RowCursor};
use crate::delimited::Dialect;
use crate::error::{Error, Result};
use crate::escapes::{self, Escapes};
use crate::rowgroup::{self, RowGroupMeta, TAG_END, TAG_ROW_GROUP, TAG_TABLE};
use crate::sql::{Segmenter, Table};
use crate::text_test::TextTest;

/// First bytes of every record archive.
pub const MAGIC: [u8; 4] = [0x89, b'G', b'L', b'R'];
/// Last bytes of every record archive.
pub const END_MAGIC: [u8; 4] = [b'R', b'L', b'G', 0x89];
/// The format version this build writes (3: scaled integer planes, Arrow tables).
pub const VERSION: u8 = 3;
/// The oldest format version this build reads (version 2 is version 3 without what it added).
pub const OLDEST_VERSION: u8 = 2;
/// Format tag of delimited text in the header.
const FORMAT_DELIMITED: u8 = 1;
/// Format tag of a SQL dump in the header.
const FORMAT_SQL: u8 = 2;
/// Format tag of an Arrow table (from Parquet) in the header.
const FORMAT_ARROW: u8 = 3;
/// Name of the one table of a delimited archive.
pub const RECORDS: &str = "records";

/// What an input holds, and so how a writer splits it into tables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Format {
    /// One table of delimited records (or lines).
    Delimited(Dialect),
    /// A SQL dump: statements, and a table per COPY block's table.
    Sql,
    /// One table of Arrow data with this schema (a Parquet file's), written by a
    /// [`BatchWriter`]; it rebuilds as Parquet ([`crate::parquet`]).
    Arrow(SchemaRef),
}

/// Guesses the format of `sample` (the start of an input; `whole` when it is all of it): a
/// SQL dump, JSON lines, delimited records, or log lines; `None` for input that is not
/// records.
pub fn detect(sample: &[u8], whole: bool) -> Option<Format> {
    if crate::sql::sniff(sample) {
        return Some(Format::Sql);
    }
    crate::json::sniff(sample, whole)
        .or_else(|| crate::delimited::sniff(sample, whole))
        .map(Format::Delimited)
}

impl From<Dialect> for Format {
    fn from(d: Dialect) -> Self {
        Format::Delimited(d)
    }
}

impl Format {
    /// The tables an archive of this format starts with.
    fn first_table(&self) -> Table {
        match self {
            Format::Delimited(d) => Table {
                name: RECORDS.into(),
                dialect: d.clone(),
            },
            Format::Sql => Segmenter::default().tables.remove(0),
            Format::Arrow(schema) => {
                let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
                Table {
                    name: RECORDS.into(),
                    dialect: Dialect {
                        delimiter: b',',
                        style: crate::column::Style::Csv,
                        columns: names.len(),
                        header: None,
                        names,
                    },
                }
            }
        }
    }
}
/// Default input bytes per row group.
pub const DEFAULT_ROW_GROUP: usize = 16 << 20;

/// Whether `b` starts like a record archive.
pub fn is_archive(b: &[u8]) -> bool {
    b.starts_with(&MAGIC)
}

/// How to write an archive.
#[derive(Clone, Debug)]
pub struct WriteOptions {
    pub level: Level,
    /// Worker threads; 0 means every core.
    pub threads: usize,
    /// Input bytes per row group (cut at a line end), 1 KiB ..= 64 MiB.
    pub row_group_size: usize,
}

impl Default for WriteOptions {
    fn default() -> Self {
        Self {
            level: Level::Max,
            threads: 0,
            row_group_size: DEFAULT_ROW_GROUP,
        }
    }
}

fn header_bytes(f: &Format, level: Level) -> Result<Vec<u8>> {
    let mut desc = Vec::new();
    match f {
        Format::Delimited(d) => {
            desc.push(FORMAT_DELIMITED);
            d.encode(&mut desc);
        }
        Format::Sql => desc.push(FORMAT_SQL),
        Format::Arrow(schema) => {
            desc.push(FORMAT_ARROW);
            put_prefixed(&mut desc, &arrow_table::schema_to_ipc(schema)?);
        }
    }
    let mut out = MAGIC.to_vec();
    out.push(VERSION);
    out.push(level.number());
    put_prefixed(&mut out, &desc);
    let sum = glyd_core::checksum(&out[4..]);
    out.extend_from_slice(&sum.to_le_bytes());
    Ok(out)
}

/// The archive header, parsed: the level it was written at and the format.
struct Header {
    level: u8,
    format: Format,
    len: usize,
}

/// Parses the header at the start of `src`; `Ok(None)` when `src` may be too short to hold it.
fn parse_header(src: &[u8]) -> Result<Option<Header>> {
    if src.len() < 4 {
        return if MAGIC.starts_with(src) {
            Ok(None)
        } else {
            Err(bad_magic(src))
        };
    }
    if !is_archive(src) {
        return Err(bad_magic(src));
    }
    let mut c = Cursor::new(&src[4..], 4, "archive header");
    let parsed = (|| {
        let version = c.u8()?;
        if !(OLDEST_VERSION..=VERSION).contains(&version) {
            return Err(Error::UnsupportedVersion {
                version,
                supported: VERSION,
            });
        }
        let level = c.u8()?;
        let desc = c.prefixed()?;
        let covered = &src[4..c.offset() as usize];
        let sum = u32::from_le_bytes(c.bytes(4)?.try_into().expect("4 bytes"));
        if glyd_core::checksum(covered) != sum {
            return Err(Error::corrupt(
                "archive header",
                6,
                "checksum mismatch (the header is damaged)",
            ));
        }
        let mut d = Cursor::new(desc, 7, "format descriptor");
        let format = match d.u8()? {
            FORMAT_DELIMITED => Format::Delimited(Dialect::decode(&mut d)?),
            FORMAT_SQL => Format::Sql,
            FORMAT_ARROW => Format::Arrow(arrow_table::schema_from_ipc(d.prefixed()?)?),
            f => return Err(d.corrupt(format!("unknown record format {f}"))),
        };
        d.finish()?;
        Ok(Header {
            level,
            format,
            len: c.offset() as usize,
        })
    })();
    match parsed {
        Err(Error::Truncated { .. }) => Ok(None),
        r => r.map(Some),
    }
}

fn bad_magic(src: &[u8]) -> Error {
    Error::BadMagic {
        found: src
            .iter()
            .take(4)
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// A table definition item: tag, the definition's length and bytes (name, dialect), checksum.
fn table_bytes(t: &Table) -> Vec<u8> {
    let mut body = Vec::new();
    put_prefixed(&mut body, t.name.as_bytes());
    t.dialect.encode(&mut body);
    let mut out = vec![TAG_TABLE];
    put_prefixed(&mut out, &body);
    out.extend_from_slice(&glyd_core::checksum(&body).to_le_bytes());
    out
}

/// Parses the table definition item at `src[0]` (archive offset `offset`); returns it and its
/// length.
fn parse_table(src: &[u8], offset: u64) -> Result<(Table, usize)> {
    let mut c = Cursor::new(src, offset, "table definition");
    if c.u8()? != TAG_TABLE {
        return Err(c.corrupt("expected a table definition"));
    }
    let body = c.prefixed()?;
    let at = c.offset() - body.len() as u64;
    let sum = u32::from_le_bytes(c.bytes(4)?.try_into().expect("4 bytes"));
    if glyd_core::checksum(body) != sum {
        return Err(Error::corrupt(
            "table definition",
            at,
            "checksum mismatch (the definition is damaged)",
        ));
    }
    let mut b = Cursor::new(body, at, "table definition");
    let name = String::from_utf8_lossy(b.prefixed()?).into_owned();
    let dialect = Dialect::decode(&mut b)?;
    b.finish()?;
    Ok((Table { name, dialect }, (c.offset() - offset) as usize))
}

/// One row group's entry in the footer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    offset: u64,
    table: usize,
    rows: u64,
    input_len: u64,
}

fn footer_bytes(entries: &[Entry]) -> Vec<u8> {
    let mut f = vec![TAG_END];
    put_varint(&mut f, entries.len() as u64);
    let mut prev = 0;
    for e in entries {
        put_varint(&mut f, e.offset - prev);
        prev = e.offset;
        put_varint(&mut f, e.table as u64);
        put_varint(&mut f, e.rows);
        put_varint(&mut f, e.input_len);
    }
    let sum = glyd_core::checksum(&f);
    f.extend_from_slice(&sum.to_le_bytes());
    let len = f.len() as u32 + 8;
    f.extend_from_slice(&len.to_le_bytes());
    f.extend_from_slice(&END_MAGIC);
    f
}

/// Parses a footer (from its tag byte to the end magic) that is exactly `f`, at `offset`.
fn parse_footer(f: &[u8], offset: u64) -> Result<Vec<Entry>> {
    let n = f.len();
    if n < 13 || f[n - 4..] != END_MAGIC {
        return Err(Error::corrupt("footer", offset, "missing end magic"));
    }
    let len = u32::from_le_bytes(f[n - 8..n - 4].try_into().expect("4 bytes"));
    if len as usize != n {
        return Err(Error::corrupt(
            "footer",
            offset,
            format!("footer length {len} where the footer is {n} bytes"),
        ));
    }
    let body = &f[..n - 12];
    let sum = u32::from_le_bytes(f[n - 12..n - 8].try_into().expect("4 bytes"));
    if glyd_core::checksum(body) != sum {
        return Err(Error::corrupt(
            "footer",
            offset,
            "checksum mismatch (the footer is damaged)",
        ));
    }
    let mut c = Cursor::new(body, offset, "footer");
    if c.u8()? != TAG_END {
        return Err(c.corrupt("expected the end of the row groups"));
    }
    let count = c.bounded(c.remaining() as u64 / 4, "row group count")?;
    let mut entries = Vec::with_capacity(count);
    let mut at = 0u64;
    for _ in 0..count {
        at = at.saturating_add(c.varint()?);
        entries.push(Entry {
            offset: at,
            table: c.bounded(u64::from(u32::MAX), "table index")?,
            rows: c.varint()?,
            input_len: c.varint()?,
        });
    }
    c.finish()?;
    Ok(entries)
}

/// Streaming writer of a record archive. Feed it the input (header line included) through
/// `Write`; call [`RecordWriter::finish`] at the end.
pub struct RecordWriter<W: Write> {
    inner: W,
    /// The archive's tables so far; the first `defined` are in the output.
    tables: Vec<Table>,
    defined: usize,
    /// Splits a SQL dump into tables; `None` for one table of delimited records.
    segmenter: Option<Segmenter>,
    opts: WriteOptions,
    threads: usize,
    pool: Option<rayon::ThreadPool>,
    /// Bytes of the dialect's header line not yet seen in the input.
    header_seen: usize,
    pending: Vec<u8>,
    written: u64,
    entries: Vec<Entry>,
    bytes_in: u64,
}

/// Cuts `buf[range]` into row groups of about `size` bytes at line ends, outside the spans
/// `whole` (sorted statements over several lines, each held whole by one row group). The
/// range's last, unterminated line is left for later unless `all`. Returns the pieces and
/// where they end.
fn cut(
    buf: &[u8],
    range: Range<usize>,
    size: usize,
    all: bool,
    whole: &[Range<usize>],
) -> (Vec<Range<usize>>, usize) {
    let mut pieces = Vec::new();
    let (mut start, n) = (range.start, range.end);
    while start < n {
        let end = if n - start <= size {
            if all {
                n
            } else {
                match memchr::memrchr(b'\n', &buf[start..n]) {
                    Some(i) => start + i + 1,
                    None => break,
                }
            }
        } else {
            // Cut after the last line end within the size; a line longer than the row group
            // limit is cut there (its pieces become exceptions, nothing is lost).
            match memchr::memrchr(b'\n', &buf[start..start + size]) {
                Some(i) => start + i + 1,
                None => {
                    let limit = (start + rowgroup::MAX_INPUT as usize).min(n);
                    match memchr::memchr(b'\n', &buf[start + size..limit]) {
                        Some(i) => start + size + i + 1,
                        None if limit < n || all => limit,
                        None => break,
                    }
                }
            }
        };
        // Not inside a statement: before it, or after it where it starts the piece.
        let at = whole.partition_point(|s| s.end <= end);
        let end = match whole.get(at) {
            Some(s) if s.start < end && s.start > start => s.start,
            Some(s) if s.start < end => s.end,
            _ => end,
        };
        pieces.push(start..end);
        start = end;
    }
    (pieces, start)
}

/// Checks `opts` and makes the writer's own pool of exactly `opts.threads` workers (all cores
/// for 0): row groups and their columns encode on it (`-T 1` really is one thread).
fn workers(opts: &WriteOptions) -> Result<(usize, Option<rayon::ThreadPool>)> {
    if !(1 << 10..=rowgroup::MAX_INPUT as usize).contains(&opts.row_group_size) {
        return Err(Error::Request(format!(
            "row group size {} is outside 1 KiB ..= 64 MiB",
            opts.row_group_size
        )));
    }
    let threads = glyd_core::resolve_threads(opts.threads);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .ok();
    Ok((threads, pool))
}

impl<W: Write> RecordWriter<W> {
    /// A writer of an archive of `format` (a [`Dialect`] for delimited records).
    pub fn new(mut inner: W, format: impl Into<Format>, opts: &WriteOptions) -> Result<Self> {
        let format = format.into();
        let (threads, pool) = workers(opts)?;
        if let Format::Arrow(_) = format {
            return Err(Error::Request(
                "an Arrow table is written by a BatchWriter, not from text".into(),
            ));
        }
        let head = header_bytes(&format, opts.level)?;
        inner.write_all(&head)?;
        Ok(Self {
            inner,
            tables: vec![format.first_table()],
            defined: 1,
            segmenter: (format == Format::Sql).then(Segmenter::default),
            opts: opts.clone(),
            threads,
            pool,
            header_seen: 0,
            pending: Vec::new(),
            written: head.len() as u64,
            entries: Vec::new(),
            bytes_in: 0,
        })
    }

    /// Input bytes taken so far.
    pub fn bytes_in(&self) -> u64 {
        self.bytes_in
    }

    /// Encodes whole row groups from the pending input; with `all`, everything pending (the
    /// input has ended), otherwise only up to the last line end.
    fn encode_pending(&mut self, all: bool) -> Result<()> {
        let (segments, whole) = match &mut self.segmenter {
            None => (vec![(0, 0..self.pending.len())], Vec::new()),
            Some(seg) => {
                seg.scan(&self.pending, all);
                self.tables.clone_from(&seg.tables);
                (seg.segments(), seg.statements().to_vec())
            }
        };
        let size = self.opts.row_group_size;
        let mut pieces: Vec<(usize, Range<usize>)> = Vec::new();
        let mut consumed = 0;
        let last = segments.len().saturating_sub(1);
        for (i, (table, range)) in segments.into_iter().enumerate() {
            // Every segment but the open last one ends at a line end, whole.
            let (cuts, end) = cut(&self.pending, range, size, all || i < last, &whole);
            pieces.extend(cuts.into_iter().map(|r| (table, r)));
            consumed = end;
        }
        let (level, tables) = (self.opts.level, &self.tables);
        let src = &self.pending;
        let encode = || -> Vec<Vec<u8>> {
            pieces
                .par_iter()
                .map(|(t, r)| {
                    rowgroup::encode(
                        &src[r.clone()],
                        *t,
                        &tables[*t].dialect,
                        tables[*t].escapes(),
                        level,
                    )
                })
                .collect()
        };
        let groups = match &self.pool {
            Some(p) => p.install(encode),
            None => encode(),
        };
        let columns: Vec<usize> = self.tables.iter().map(|t| t.dialect.columns).collect();
        for ((table, r), g) in pieces.iter().zip(groups) {
            // A table is defined just before its first row group.
            while self.defined <= *table {
                let def = table_bytes(&self.tables[self.defined]);
                self.inner.write_all(&def)?;
                self.written += def.len() as u64;
                self.defined += 1;
            }
            let meta = rowgroup::parse_header(&g, self.written, &columns)?;
            self.entries.push(Entry {
                offset: self.written,
                table: *table,
                rows: meta.rows,
                input_len: r.len() as u64,
            });
            self.inner.write_all(&g)?;
            self.written += g.len() as u64;
        }
        self.pending.drain(..consumed);
        if let Some(seg) = &mut self.segmenter {
            seg.consumed(consumed);
        }
        Ok(())
    }

    /// Writes the remaining row groups and the footer; returns the inner writer.
    pub fn finish(mut self) -> Result<W> {
        if let Some(h) = &self.tables[0].dialect.header {
            if self.header_seen < h.len() {
                return Err(Error::Request(
                    "the input ended inside its header line".into(),
                ));
            }
        }
        self.encode_pending(true)?;
        self.inner.write_all(&footer_bytes(&self.entries))?;
        self.inner.flush()?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for RecordWriter<W> {
    fn write(&mut self, mut buf: &[u8]) -> io::Result<usize> {
        let taken = buf.len();
        if let Some(h) = &self.tables[0].dialect.header {
            let k = (h.len() - self.header_seen).min(buf.len());
            if buf[..k] != h[self.header_seen..self.header_seen + k] {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "the input does not start with the header line its dialect was sniffed from",
                ));
            }
            self.header_seen += k;
            buf = &buf[k..];
        }
        // Taken a batch of row groups at a time, so that one large write holds no more than
        // that in memory (and copies no more than that at once). A pending line longer than
        // a batch takes all the rest at once: it stays pending until its end comes.
        let batch = self.opts.row_group_size * self.threads;
        while !buf.is_empty() {
            let room = batch.saturating_sub(self.pending.len());
            let k = if room == 0 {
                buf.len()
            } else {
                room.min(buf.len())
            };
            self.pending.extend_from_slice(&buf[..k]);
            buf = &buf[k..];
            if self.pending.len() >= batch {
                self.encode_pending(false).map_err(io::Error::other)?;
            }
        }
        self.bytes_in += taken as u64;
        Ok(taken)
    }

    /// Encodes every complete line taken so far as row groups and flushes them to the inner
    /// writer (for long-running pipes: `tail -f app.csv | glyd -r`).
    fn flush(&mut self) -> io::Result<()> {
        self.encode_pending(false).map_err(io::Error::other)?;
        self.inner.flush()
    }
}

/// Streaming writer of an Arrow table archive ([`Format::Arrow`]): feed it record batches of
/// one schema with [`BatchWriter::write`], then [`BatchWriter::finish`]. Rows are regrouped
/// into row groups of about the row group size of Arrow data, encoded on all workers; memory
/// stays bounded by row group size × threads.
pub struct BatchWriter<W: Write> {
    inner: W,
    schema: SchemaRef,
    opts: WriteOptions,
    threads: usize,
    pool: Option<rayon::ThreadPool>,
    /// Rows not yet in a row group, and their Arrow size.
    pending: Vec<RecordBatch>,
    pending_size: usize,
    /// Whole row groups waiting to be encoded together.
    groups: Vec<RecordBatch>,
    written: u64,
    entries: Vec<Entry>,
}

impl<W: Write> BatchWriter<W> {
    /// A writer of a table with `schema`.
    pub fn new(mut inner: W, schema: SchemaRef, opts: &WriteOptions) -> Result<Self> {
        let (threads, pool) = workers(opts)?;
        let head = header_bytes(&Format::Arrow(schema.clone()), opts.level)?;
        inner.write_all(&head)?;
        Ok(Self {
            inner,
            schema,
            opts: opts.clone(),
            threads,
            pool,
            pending: Vec::new(),
            pending_size: 0,
            groups: Vec::new(),
            written: head.len() as u64,
            entries: Vec::new(),
        })
    }

    /// Takes `batch` (of the writer's schema), encoding row groups as they fill.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.schema().fields() != self.schema.fields() {
            return Err(Error::Request(format!(
                "a batch with schema {} written to a table of schema {}",
                batch.schema(),
                self.schema
            )));
        }
        let size = self.opts.row_group_size;
        let mut rest = batch.clone();
        while rest.num_rows() > 0 {
            let bytes: usize = rest
                .columns()
                .iter()
                .map(|a| arrow_table::size_of(a.as_ref()) as usize)
                .sum();
            // Rows that fill the current group, at this batch's average row size.
            let room = size.saturating_sub(self.pending_size);
            let per_row = bytes.div_ceil(rest.num_rows()).max(1);
            let take = (room / per_row).clamp(1, rest.num_rows());
            let piece = rest.slice(0, take);
            self.pending_size += per_row * take;
            self.pending.push(piece);
            rest = rest.slice(take, rest.num_rows() - take);
            if self.pending_size >= size {
                self.close_group()?;
            }
        }
        if self.groups.len() >= self.threads {
            self.encode_groups()?;
        }
        Ok(())
    }

    /// Makes the pending rows one row group.
    fn close_group(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let group = arrow_select::concat::concat_batches(&self.schema, &self.pending)
            .map_err(|e| Error::Request(format!("gathering rows into a row group: {e}")))?;
        self.pending.clear();
        self.pending_size = 0;
        self.groups.push(group);
        Ok(())
    }

    fn encode_groups(&mut self) -> Result<()> {
        let level = self.opts.level;
        let groups = &self.groups;
        let encode = || -> Result<Vec<Vec<u8>>> {
            groups
                .par_iter()
                .map(|b| rowgroup::encode_batch(b, 0, level))
                .collect()
        };
        let encoded = match &self.pool {
            Some(p) => p.install(encode),
            None => encode(),
        }?;
        let columns = [self.schema.fields().len()];
        for g in encoded {
            let meta = rowgroup::parse_header(&g, self.written, &columns)?;
            self.entries.push(Entry {
                offset: self.written,
                table: 0,
                rows: meta.rows,
                input_len: meta.input_len,
            });
            self.inner.write_all(&g)?;
            self.written += g.len() as u64;
        }
        self.groups.clear();
        Ok(())
    }

    /// Writes the remaining row groups and the footer; returns the inner writer.
    pub fn finish(mut self) -> Result<W> {
        self.close_group()?;
        self.encode_groups()?;
        self.inner.write_all(&footer_bytes(&self.entries))?;
        self.inner.flush()?;
        Ok(self.inner)
    }
}

/// A record archive held in memory, indexed for random access.
pub struct ArchiveReader {
    data: Vec<u8>,
    level: u8,
    tables: Vec<Table>,
    header_len: usize,
    groups: Vec<RowGroupMeta>,
    /// One schema per table.
    schemas: Vec<SchemaRef>,
    /// Whether this is an Arrow table ([`Format::Arrow`]), which rebuilds as Parquet.
    arrow: bool,
    /// The most memory decoding may hold at once (see [`ArchiveReader::with_memory_limit`]).
    memory: u64,
}

impl ArchiveReader {
    /// Opens the archive file at `path`.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::from_bytes(std::fs::read(path)?)
    }

    /// Indexes the archive in `data`: checks the header, the footer, every table definition
    /// and every row group header.
    pub fn from_bytes(data: Vec<u8>) -> Result<Self> {
        let header = parse_header(&data)?.ok_or(Error::Truncated {
            what: "archive header",
            offset: 0,
        })?;
        let n = data.len();
        let trailer = n
            .checked_sub(8)
            .filter(|&t| t >= header.len)
            .ok_or(Error::Truncated {
                what: "footer",
                offset: n as u64,
            })?;
        let footer_len = u32::from_le_bytes(data[trailer..trailer + 4].try_into().expect("4"));
        let footer_at = n
            .checked_sub(footer_len as usize)
            .filter(|&f| f >= header.len)
            .ok_or_else(|| {
                Error::corrupt("footer", trailer as u64, "footer length past the start")
            })?;
        let entries = parse_footer(&data[footer_at..], footer_at as u64)?;
        let mut tables = vec![header.format.first_table()];
        let mut groups = Vec::with_capacity(entries.len());
        let mut at = header.len as u64;
        let define = |at: &mut u64, tables: &mut Vec<Table>| -> Result<()> {
            while (*at as usize) < footer_at && data[*at as usize] == TAG_TABLE {
                let (t, len) = parse_table(&data[*at as usize..footer_at], *at)?;
                tables.push(t);
                *at += len as u64;
            }
            Ok(())
        };
        for (i, e) in entries.iter().enumerate() {
            define(&mut at, &mut tables)?;
            if e.offset != at {
                return Err(Error::corrupt(
                    "footer",
                    footer_at as u64,
                    format!(
                        "row group {i} listed at byte {} but found at {at}",
                        e.offset
                    ),
                ));
            }
            let counts: Vec<usize> = tables.iter().map(|t| t.dialect.columns).collect();
            let meta = rowgroup::parse_header(&data[at as usize..footer_at], at, &counts)?;
            if meta.rows != e.rows
                || meta.input_len != e.input_len
                || meta.table != e.table
                || meta.end > footer_at as u64
            {
                return Err(Error::corrupt(
                    "row group header",
                    at,
                    format!("row group {i} disagrees with the footer"),
                ));
            }
            at = meta.end;
            groups.push(meta);
        }
        define(&mut at, &mut tables)?;
        if at != footer_at as u64 {
            return Err(Error::corrupt(
                "archive",
                at,
                "bytes between the last row group and the footer",
            ));
        }
        let schemas = match &header.format {
            Format::Arrow(schema) => vec![schema.clone()],
            _ => (0..tables.len())
                .map(|t| schema_of(t, &tables[t].dialect, &groups))
                .collect(),
        };
        if let (Format::Arrow(_), true) = (&header.format, tables.len() > 1) {
            return Err(Error::corrupt(
                "archive",
                header.len as u64,
                "a table definition in an Arrow table archive",
            ));
        }
        Ok(Self {
            data,
            level: header.level,
            tables,
            header_len: header.len,
            groups,
            schemas,
            arrow: matches!(header.format, Format::Arrow(_)),
            memory: glyd_core::DEFAULT_MEMORY_LIMIT,
        })
    }

    /// Sets the memory limit: row groups decoded at once (in parallel, or one whose columns
    /// decode in parallel) may together need at most `bytes` (see [`rowgroup::decode_need`]);
    /// a row group that alone needs more is an error naming it, before anything is decoded.
    /// The default is [`glyd_core::DEFAULT_MEMORY_LIMIT`].
    pub fn with_memory_limit(mut self, bytes: u64) -> Self {
        self.memory = bytes.max(1);
        self
    }

    /// Splits `groups` into runs decoded together: each at most `max` row groups whose needs
    /// sum to at most the memory limit.
    fn runs(&self, groups: &[RowGroupMeta], max: usize) -> Result<Vec<Range<usize>>> {
        let mut runs = Vec::new();
        let (mut start, mut held) = (0, 0u64);
        for (i, g) in groups.iter().enumerate() {
            let src = &self.data[g.offset as usize..g.end as usize];
            let need = rowgroup::check_need(src, g, self.memory)?;
            if i > start && (i - start == max.max(1) || held + need > self.memory) {
                runs.push(start..i);
                (start, held) = (i, 0);
            }
            held += need;
        }
        if start < groups.len() {
            runs.push(start..groups.len());
        }
        Ok(runs)
    }

    /// Whether the archive holds an Arrow table (from Parquet): it rebuilds as a Parquet file
    /// of the same Arrow data, not as the original bytes.
    pub fn is_arrow(&self) -> bool {
        self.arrow
    }

    /// The archive's tables: one for delimited records; for a SQL dump, the statements (table
    /// 0) and a table per COPY block's table.
    pub fn tables(&self) -> &[Table] {
        &self.tables
    }

    /// Index of the table named `name`.
    pub fn table_index(&self, name: &str) -> Result<usize> {
        self.tables
            .iter()
            .position(|t| t.name == name)
            .ok_or_else(|| {
                Error::Request(format!(
                    "no table named {name:?}; the archive has {}",
                    self.table_names().join(", ")
                ))
            })
    }

    fn table_names(&self) -> Vec<&str> {
        self.tables.iter().map(|t| t.name.as_str()).collect()
    }

    /// The Arrow schema of table 0 (the only table of a delimited archive).
    pub fn schema(&self) -> SchemaRef {
        self.schemas[0].clone()
    }

    /// The Arrow schema of table `table`: one nullable field per column, typed when every row
    /// group agrees.
    pub fn table_schema(&self, table: usize) -> Result<SchemaRef> {
        self.schemas.get(table).cloned().ok_or_else(|| {
            Error::Request(format!(
                "table {table} does not exist (the archive has {})",
                self.tables.len()
            ))
        })
    }

    /// The dialect of table 0.
    pub fn dialect(&self) -> &Dialect {
        &self.tables[0].dialect
    }

    /// The level number the archive was written at.
    pub fn level(&self) -> u8 {
        self.level
    }

    /// Every row group, in input order.
    pub fn row_groups(&self) -> &[RowGroupMeta] {
        &self.groups
    }

    /// Indexes (into [`row_groups`](Self::row_groups)) of the row groups of table `table`.
    pub fn groups_of(&self, table: usize) -> Vec<usize> {
        (0..self.groups.len())
            .filter(|&g| self.groups[g].table == table)
            .collect()
    }

    /// Total rows of every table.
    pub fn rows(&self) -> u64 {
        self.groups.iter().map(|g| g.rows).sum()
    }

    /// Bytes the archive rebuilds to.
    pub fn input_len(&self) -> u64 {
        self.dialect().header.as_ref().map_or(0, |h| h.len() as u64)
            + self.groups.iter().map(|g| g.input_len).sum::<u64>()
    }

    /// Size of the archive in bytes.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Index of the column named `name` in table 0.
    pub fn column_index(&self, name: &str) -> Result<usize> {
        self.column_index_in(0, name)
    }

    /// Index of the column named `name` in table `table`.
    pub fn column_index_in(&self, table: usize, name: &str) -> Result<usize> {
        let t = self
            .tables
            .get(table)
            .ok_or_else(|| Error::Request(format!("table {table} does not exist")))?;
        t.dialect
            .names
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| {
                Error::Request(format!(
                    "no column named {name:?} in table {}; it has {}",
                    t.name,
                    t.dialect.names.join(", ")
                ))
            })
    }

    /// Row group `group`'s header and bytes.
    fn group(&self, group: usize) -> Result<(&RowGroupMeta, &[u8])> {
        let g = self.groups.get(group).ok_or_else(|| {
            Error::Request(format!(
                "row group {group} out of range (the archive has {})",
                self.groups.len()
            ))
        })?;
        let src = &self.data[g.offset as usize..g.end as usize];
        rowgroup::check_need(src, g, self.memory)?;
        Ok((g, src))
    }

    /// How column `column` of row group `group` is coded (decodes at most two small streams).
    pub fn coding(&self, group: usize, column: usize) -> Result<crate::column::Coding> {
        let (g, src) = self.group(group)?;
        rowgroup::column_coding(src, g, column)
    }

    /// The distinct values of column `column` of row group `group` when that chunk is
    /// dictionary-coded text, sorted, as a read presents them (escapes undone); `None` when
    /// it is coded another way.
    pub fn dictionary(&self, group: usize, column: usize) -> Result<Option<Vec<Vec<u8>>>> {
        let (g, src) = self.group(group)?;
        let e = self.tables[g.table].escapes();
        let Some(mut entries) = rowgroup::chunk_dictionary(src, g, column)? else {
            return Ok(None);
        };
        if entries.iter().any(|v| e.in_bytes(v)) {
            // Two spellings may read as one value, and undoing escapes may change the order.
            entries = entries
                .iter()
                .map(|v| escapes::as_read(e, v).into_owned())
                .collect();
            entries.sort_unstable();
            entries.dedup();
        }
        Ok(Some(entries))
    }

    /// One batch per row group in `groups` (all of one table), holding the columns in
    /// `projection` (all when `None`), decoding only those columns' chunks.
    pub fn read(
        &self,
        projection: Option<&[usize]>,
        groups: Range<usize>,
    ) -> Result<Vec<RecordBatch>> {
        let metas = self.groups.get(groups.clone()).ok_or_else(|| {
            Error::Request(format!(
                "row groups {groups:?} out of range (the archive has {})",
                self.groups.len()
            ))
        })?;
        let table = metas.first().map_or(0, |g| g.table);
        if let Some(g) = metas.iter().find(|g| g.table != table) {
            return Err(Error::Request(format!(
                "row groups {groups:?} span tables {} and {}; read one table at a time",
                self.tables[table].name, self.tables[g.table].name
            )));
        }
        let cols: Vec<usize> = match projection {
            Some(p) => p.to_vec(),
            None => (0..self.tables[table].dialect.columns).collect(),
        };
        let full = &self.schemas[table];
        let schema = Arc::new(
            full.project(&cols)
                .map_err(|e| Error::Request(e.to_string()))?,
        );
        let mut batches = Vec::with_capacity(metas.len());
        for run in self.runs(metas, usize::MAX)? {
            batches.extend(self.read_run(&metas[run], &cols, &schema)?);
        }
        Ok(batches)
    }

    /// [`ArchiveReader::read`] of row groups `metas` decoded together, in parallel.
    fn read_run(
        &self,
        metas: &[RowGroupMeta],
        cols: &[usize],
        schema: &SchemaRef,
    ) -> Result<Vec<RecordBatch>> {
        let full = &self.schemas[metas.first().map_or(0, |g| g.table)];
        metas
            .par_iter()
            .map(|g| {
                let src = &self.data[g.offset as usize..g.end as usize];
                let columns = self.decode_for_arrow(src, g, cols, true)?;
                let rows = g.rows as usize;
                let e = self.tables[g.table].escapes();
                let arrays = columns
                    .iter()
                    .zip(cols)
                    .zip(escaped_columns(&columns, e))
                    .map(|((c, &i), escaped)| {
                        let target = full.field(i).data_type();
                        if self.arrow {
                            arrow_table::to_target(c, rows, target)
                        } else if escaped {
                            Ok(escapes::unescape_array(c.to_arrow(rows, target)?, e))
                        } else {
                            c.to_arrow(rows, target)
                        }
                    })
                    .collect::<Result<Vec<_>>>()?;
                RecordBatch::try_new(schema.clone(), arrays)
                    .map_err(|e| Error::corrupt("row group", g.offset, e.to_string()))
            })
            .collect()
    }

    /// Columns `cols` of row group `g` (bytes `src`), decoded to be read as Arrow arrays of
    /// the table's schema: integer and decimal chunks keep their planes (see
    /// [`column::Planes`]) except where the schema reads the column as text (its row groups
    /// disagree on its kind), which is spelled from its values.
    fn decode_for_arrow(
        &self,
        src: &[u8],
        g: &RowGroupMeta,
        cols: &[usize],
        parallel: bool,
    ) -> Result<Vec<Column>> {
        let mut columns = rowgroup::decode_columns(src, g, Some(cols), parallel, !self.arrow)?;
        let schema = &self.schemas[g.table];
        for (c, &i) in columns.iter_mut().zip(cols) {
            if let Column::Typed { kind, .. } = c {
                if kind.data_type() != *schema.field(i).data_type() {
                    c.decode_planes()?;
                }
            }
        }
        Ok(columns)
    }

    /// Row group `group`'s columns in `projection` (all when `None`) as batches of at most
    /// `batch_rows` rows; with `string_views`, Utf8 columns come as Utf8View (as DataFusion's
    /// own Parquet scans read strings: cheaper to make from a dictionary, and to group by).
    /// The chunks decode once, here, in parallel on the current rayon pool; each batch's
    /// Arrow arrays are made when the iterator yields it, so a query reads them while they
    /// are still in cache (rather than slices of arrays for the whole row group, long since
    /// evicted).
    pub fn read_batches(
        &self,
        projection: Option<&[usize]>,
        group: usize,
        batch_rows: usize,
        string_views: bool,
    ) -> Result<GroupBatches> {
        self.group_batches(projection, group, batch_rows, string_views, true)
    }

    /// [`ArchiveReader::read_batches`] with the chunks decoded one after another on the
    /// calling thread: a one-core reader's, which then finds them in its own cache (a hop to
    /// a pool thread cost TPC-H Q6 over an archive a tenth of its time).
    pub fn read_batches_here(
        &self,
        projection: Option<&[usize]>,
        group: usize,
        batch_rows: usize,
        string_views: bool,
    ) -> Result<GroupBatches> {
        self.group_batches(projection, group, batch_rows, string_views, false)
    }

    fn group_batches(
        &self,
        projection: Option<&[usize]>,
        group: usize,
        batch_rows: usize,
        string_views: bool,
        parallel: bool,
    ) -> Result<GroupBatches> {
        let (g, src) = self.group(group)?;
        let cols: Vec<usize> = match projection {
            Some(p) => p.to_vec(),
            None => (0..self.tables[g.table].dialect.columns).collect(),
        };
        let stored = self.schemas[g.table]
            .project(&cols)
            .map_err(|e| Error::Request(e.to_string()))?;
        let schema = Arc::new(if string_views {
            with_string_views(&stored)
        } else {
            stored.clone()
        });
        let rows = g.rows as usize;
        let mut columns = self.decode_for_arrow(src, g, &cols, parallel)?;
        // Arrow tables' columns convert whole (their chunks are Arrow IPC), then slice.
        let whole = if self.arrow {
            let arrays = columns
                .iter()
                .zip(stored.fields().iter().zip(schema.fields()))
                .map(|(c, (s, f))| {
                    let a = arrow_table::to_target(c, rows, s.data_type())?;
                    match s.data_type() == f.data_type() {
                        true => Ok(a),
                        false => arrow_cast::cast(&a, f.data_type())
                            .map_err(|e| Error::corrupt("column chunk", g.offset, e.to_string())),
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            columns.clear();
            Some(arrays)
        } else {
            None
        };
        let escapes = self.tables[g.table].escapes();
        Ok(GroupBatches {
            cursors: columns.iter().map(|_| Default::default()).collect(),
            escaped: escaped_columns(&columns, escapes),
            escapes,
            columns,
            whole,
            schema,
            rows,
            keep: None,
            next_row: 0,
            batch_rows: batch_rows.max(1),
            offset: g.offset,
        })
    }

    /// Writes the original input to `out` (for an Arrow table, a Parquet file of its data);
    /// returns its length. Each row group is checked against its stored size and checksum;
    /// on one thread its bytes go out as they are rebuilt, so after an error `out` may hold
    /// part of the row group that failed (the command line's `glyd -d` checks each row group
    /// before writing it: see [`rebuild`]).
    pub fn rebuild_to(&self, mut out: impl Write) -> Result<u64> {
        if self.arrow {
            return crate::parquet::write_table(self, out);
        }
        let mut total = 0u64;
        if let Some(h) = &self.dialect().header {
            out.write_all(h)?;
            total += h.len() as u64;
        }
        let threads = rayon::current_num_threads().max(1);
        if threads == 1 {
            // Each row group's bytes go out a piece at a time, while they are in cache.
            let mut buf = Vec::new();
            let mut write = |piece: &[u8]| out.write_all(piece).map_err(Error::from);
            for g in &self.groups {
                let src = &self.data[g.offset as usize..g.end as usize];
                rowgroup::check_need(src, g, self.memory)?;
                let d = &self.tables[g.table].dialect;
                rowgroup::rebuild_passing(src, g, d, &mut buf, &mut write)?;
                total += g.input_len;
            }
            return Ok(total);
        }
        // One output buffer per thread, reused: a fresh one would be faulted in page by page.
        let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); threads];
        for run in self.runs(&self.groups, threads)? {
            let batch = &self.groups[run];
            batch
                .par_iter()
                .zip(bufs.par_iter_mut())
                .map(|(g, buf)| {
                    buf.clear();
                    let src = &self.data[g.offset as usize..g.end as usize];
                    rowgroup::rebuild(src, g, &self.tables[g.table].dialect, buf)
                })
                .collect::<Result<()>>()?;
            for p in &bufs[..batch.len()] {
                out.write_all(p)?;
                total += p.len() as u64;
            }
        }
        Ok(total)
    }

    /// Length of the archive header.
    pub fn header_len(&self) -> usize {
        self.header_len
    }
}

/// Each column's Arrow type in table `table`: its kind's when every row group of the table
/// with rows agrees, else Utf8.
fn schema_of(table: usize, d: &Dialect, groups: &[RowGroupMeta]) -> SchemaRef {
    let fields: Vec<Field> = (0..d.columns)
        .map(|i| {
            let mut kinds = groups
                .iter()
                .filter(|g| g.table == table && g.rows > 0)
                .map(|g| g.columns[i].kind);
            let first = kinds.next().unwrap_or(Kind::Text);
            let kind = if kinds.all(|k| k == first) {
                first
            } else {
                Kind::Text
            };
            Field::new(d.names[i].clone(), kind.data_type(), true)
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// Reads a record archive from `src` (a pipe will do: it is read front to back) and writes the
/// original input to `out` (for an Arrow table, read whole, a Parquet file of its data);
/// returns its length. Memory is limited to [`glyd_core::DEFAULT_MEMORY_LIMIT`] (see
/// [`rebuild_with_limit`]).
pub fn rebuild(src: impl Read, out: impl Write) -> Result<u64> {
    rebuild_with_limit(src, out, glyd_core::DEFAULT_MEMORY_LIMIT)
}

/// [`rebuild`] holding at most `memory` bytes for a row group (its stored bytes, then what
/// decoding it needs, see [`rowgroup::decode_need`]): a row group that needs more is refused
/// with an error naming it before its bytes are read.
pub fn rebuild_with_limit(mut src: impl Read, mut out: impl Write, memory: u64) -> Result<u64> {
    let mut buf = Vec::new();
    let header = loop {
        if let Some(h) = parse_header(&buf)? {
            break h;
        }
        if read_more(&mut src, &mut buf, 64)? == 0 {
            return Err(Error::Truncated {
                what: "archive header",
                offset: 0,
            });
        }
    };
    if let Format::Arrow(_) = header.format {
        // Parquet is written from the footer back: the archive is read whole first.
        src.read_to_end(&mut buf)?;
        return ArchiveReader::from_bytes(buf)?
            .with_memory_limit(memory)
            .rebuild_to(out);
    }
    let mut tables = vec![header.format.first_table()];
    let mut total = 0u64;
    if let Some(h) = &tables[0].dialect.header {
        out.write_all(h)?;
        total += h.len() as u64;
    }
    let mut offset = header.len as u64;
    buf.drain(..header.len);
    let mut entries = Vec::new();
    // One output buffer for every row group: a fresh one would be faulted in page by page.
    let mut part = Vec::new();
    loop {
        // Enough bytes for the tag, header length and header, then the chunks it lists.
        if buf.is_empty() && read_more(&mut src, &mut buf, 1)? == 0 {
            return Err(Error::Truncated {
                what: "footer",
                offset,
            });
        }
        if buf[0] == TAG_END {
            // A footer holds four varints per row group and a few fields: anything much
            // longer is not one, and a pipe that keeps sending must not fill memory.
            let most = 64 + 48 * entries.len();
            while read_more(&mut src, &mut buf, 1 << 16)? > 0 {
                if buf.len() > most {
                    return Err(Error::corrupt(
                        "footer",
                        offset,
                        format!(
                            "longer than a footer of {} row groups can be",
                            entries.len()
                        ),
                    ));
                }
            }
            let got = parse_footer(&buf, offset)?;
            if got != entries {
                return Err(Error::corrupt(
                    "footer",
                    offset,
                    "its row group index disagrees with the row groups read",
                ));
            }
            return Ok(total);
        }
        if buf[0] == TAG_TABLE {
            let (t, len) = loop {
                match parse_table(&buf, offset) {
                    Err(Error::Truncated { .. }) => {
                        if read_more(&mut src, &mut buf, 1 << 10)? == 0 {
                            return Err(Error::Truncated {
                                what: "table definition",
                                offset,
                            });
                        }
                    }
                    r => break r?,
                }
            };
            tables.push(t);
            buf.drain(..len);
            offset += len as u64;
            continue;
        }
        if buf[0] != TAG_ROW_GROUP {
            return Err(Error::corrupt(
                "archive",
                offset,
                format!("unknown item tag {}", buf[0]),
            ));
        }
        let columns: Vec<usize> = tables.iter().map(|t| t.dialect.columns).collect();
        let meta = loop {
            match rowgroup::parse_header(&buf, offset, &columns) {
                Err(Error::Truncated { .. }) => {
                    if read_more(&mut src, &mut buf, 1 << 12)? == 0 {
                        return Err(Error::Truncated {
                            what: "row group header",
                            offset,
                        });
                    }
                }
                r => break r?,
            }
        };
        let len = meta.end - offset;
        if len > memory {
            return Err(glyd_core::Error::MemoryLimit {
                what: "row group",
                offset,
                needed: len,
                limit: memory,
            }
            .into());
        }
        let len = len as usize;
        while buf.len() < len {
            let want = len - buf.len();
            if read_more(&mut src, &mut buf, want)? == 0 {
                return Err(Error::Truncated {
                    what: "row group",
                    offset,
                });
            }
        }
        part.clear();
        rowgroup::check_need(&buf[..len], &meta, memory)?;
        rowgroup::rebuild(&buf[..len], &meta, &tables[meta.table].dialect, &mut part)?;
        out.write_all(&part)?;
        total += part.len() as u64;
        entries.push(Entry {
            offset,
            table: meta.table,
            rows: meta.rows,
            input_len: meta.input_len,
        });
        buf.drain(..len);
        offset = meta.end;
    }
}

/// Appends up to `n` more bytes from `src` to `buf`; returns how many (0 at the end). At most
/// 1 MiB is asked for at a time, so the buffer grows with what arrives, never ahead of it.
fn read_more(src: &mut impl Read, buf: &mut Vec<u8>, n: usize) -> Result<usize> {
    let n = n.min(1 << 20);
    let start = buf.len();
    buf.resize(start + n, 0);
    let got = loop {
        match src.read(&mut buf[start..]) {
            Ok(k) => break k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                buf.truncate(start);
                return Err(e.into());
            }
        }
    };
    buf.truncate(start + got);
    Ok(got)
}

/// `schema` with its Utf8 fields as Utf8View.
pub fn with_string_views(schema: &Schema) -> Schema {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            arrow_schema::DataType::Utf8 => f
                .as_ref()
                .clone()
                .with_data_type(arrow_schema::DataType::Utf8View),
            _ => f.as_ref().clone(),
        })
        .collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// Which of a row group's decoded `columns` hold escapes `e` to undo when read as Arrow (see
/// [`escapes`]): one scan of each text column's bytes.
fn escaped_columns(columns: &[Column], e: Escapes) -> Vec<bool> {
    columns
        .iter()
        .map(|c| c.text_bytes().is_some_and(|b| e.in_bytes(b)))
        .collect()
}

/// The batches of one row group ([`ArchiveReader::read_batches`]).
pub struct GroupBatches {
    columns: Vec<Column>,
    /// The columns whose values hold the table's `escapes` (undone in each batch).
    escaped: Vec<bool>,
    escapes: Escapes,
    /// Where each column's next batch begins (see [`Column::to_arrow_rows`]).
    cursors: Vec<RowCursor>,
    /// An Arrow table's arrays, converted whole.
    whole: Option<Vec<arrow_array::ArrayRef>>,
    schema: SchemaRef,
    rows: usize,
    /// The rows a query keeps (see [`GroupBatches::keep_only`]); all when `None`.
    keep: Option<BooleanBuffer>,
    next_row: usize,
    batch_rows: usize,
    /// The row group's offset in the archive, for errors.
    offset: u64,
}

impl GroupBatches {
    /// Keeps only the rows whose value in column `column` (of the projection) passes `test`,
    /// judged on the chunk's codes (see [`Column::rows_passing`]): a dictionary's once per
    /// distinct value (escapes undone), a templated chunk's once per template where that
    /// settles it; null rows go. Batches then hold only the rows kept, and a batch's worth of
    /// rows none of which is kept is never made. Returns whether it applied: `false` (every
    /// row kept) where the chunk is coded neither way.
    pub fn keep_only(&mut self, column: usize, test: &TextTest) -> bool {
        let e = self.escapes;
        let escaped = self.escaped.get(column).copied().unwrap_or(true);
        let passing = match self.columns.get(column) {
            Some(c) => c.rows_passing(|v| escapes::as_read(e, v), escaped, test),
            None => None,
        };
        let Some(passing) = passing.filter(|p| p.len() == self.rows) else {
            return false;
        };
        let passing = BooleanBuffer::from(passing);
        self.keep = Some(match self.keep.take() {
            Some(k) => &k & &passing,
            None => passing,
        });
        true
    }

    /// Rows of the row group that its batches hold.
    pub fn rows_kept(&self) -> usize {
        self.keep.as_ref().map_or(self.rows, |k| k.count_set_bits())
    }
}

impl Iterator for GroupBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        let (range, kept) = loop {
            if self.next_row >= self.rows {
                return None;
            }
            let range = self.next_row..(self.next_row + self.batch_rows).min(self.rows);
            self.next_row = range.end;
            let kept = self
                .keep
                .as_ref()
                .map(|k| k.slice(range.start, range.len()));
            match &kept {
                Some(k) if k.count_set_bits() == 0 => {
                    for (c, cursor) in self.columns.iter().zip(&mut self.cursors) {
                        c.skip_rows(range.clone(), cursor);
                    }
                }
                _ => break (range, kept),
            }
        };
        let arrays = match &self.whole {
            Some(arrays) => Ok(arrays
                .iter()
                .map(|a| a.slice(range.start, range.len()))
                .collect()),
            None => self
                .columns
                .iter()
                .zip(&mut self.cursors)
                .zip(self.schema.fields())
                .zip(&self.escaped)
                .map(|(((c, cursor), f), &escaped)| {
                    let a = c.to_arrow_rows(self.rows, range.clone(), cursor, f.data_type())?;
                    Ok(match escaped {
                        true => escapes::unescape_array(a, self.escapes),
                        false => a,
                    })
                })
                .collect::<Result<Vec<_>>>(),
        };
        let corrupt =
            |e: arrow_schema::ArrowError| Error::corrupt("row group", self.offset, e.to_string());
        let batch = arrays.and_then(|arrays| {
            let opts = arrow_array::RecordBatchOptions::new().with_row_count(Some(range.len()));
            let batch = RecordBatch::try_new_with_options(self.schema.clone(), arrays, &opts)
                .map_err(corrupt)?;
            match kept {
                Some(k) if k.count_set_bits() < range.len() => {
                    arrow_select::filter::filter_record_batch(&batch, &BooleanArray::new(k, None))
                        .map_err(corrupt)
                }
                _ => Ok(batch),
            }
        });
        if batch.is_err() {
            // One error ends the row group.
            self.next_row = self.rows;
        }
        Some(batch)
    }
}
