//! The record archive file: a header (magic, version, level, the format's dialect), row groups
//! one after another, and a footer indexing them. [`RecordWriter`] streams an input into an
//! archive with memory bounded by row group size × threads; [`ArchiveReader`] opens one for
//! random access (schema, statistics, Arrow batches of some columns and row groups, rebuild);
//! [`rebuild`] turns an archive read from a pipe back into the original bytes.

use std::io::{self, Read, Write};
use std::ops::Range;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Field, Schema, SchemaRef};
use rayon::prelude::*;

use glyd_core::Level;

use crate::bytes::{put_prefixed, put_varint, Cursor};
use crate::column::Kind;
use crate::delimited::Dialect;
use crate::error::{Error, Result};
use crate::rowgroup::{self, RowGroupMeta, TAG_END, TAG_ROW_GROUP};

/// First bytes of every record archive.
pub const MAGIC: [u8; 4] = [0x89, b'G', b'L', b'R'];
/// Last bytes of every record archive.
pub const END_MAGIC: [u8; 4] = [b'R', b'L', b'G', 0x89];
/// The format version this build writes and reads.
pub const VERSION: u8 = 1;
/// Format tag of delimited text in the header.
const FORMAT_DELIMITED: u8 = 1;
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

fn header_bytes(d: &Dialect, level: Level) -> Vec<u8> {
    let mut desc = vec![FORMAT_DELIMITED];
    d.encode(&mut desc);
    let mut out = MAGIC.to_vec();
    out.push(VERSION);
    out.push(level.number());
    put_prefixed(&mut out, &desc);
    let sum = glyd_core::checksum(&out[4..]);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// The archive header, parsed: the level it was written at and the dialect.
struct Header {
    level: u8,
    dialect: Dialect,
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
        if version != VERSION {
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
        let format = d.u8()?;
        if format != FORMAT_DELIMITED {
            return Err(d.corrupt(format!("unknown record format {format}")));
        }
        let dialect = Dialect::decode(&mut d)?;
        d.finish()?;
        Ok(Header {
            level,
            dialect,
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

/// One row group's entry in the footer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    offset: u64,
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
    let count = c.bounded(c.remaining() as u64 / 3, "row group count")?;
    let mut entries = Vec::with_capacity(count);
    let mut at = 0u64;
    for _ in 0..count {
        at = at.saturating_add(c.varint()?);
        entries.push(Entry {
            offset: at,
            rows: c.varint()?,
            input_len: c.varint()?,
        });
    }
    c.finish()?;
    Ok(entries)
}

/// Streaming writer of a record archive for input in `dialect`. Feed it the input (header
/// line included) through `Write`; call [`RecordWriter::finish`] at the end.
pub struct RecordWriter<W: Write> {
    inner: W,
    dialect: Dialect,
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

impl<W: Write> RecordWriter<W> {
    pub fn new(mut inner: W, dialect: Dialect, opts: &WriteOptions) -> Result<Self> {
        if !(1 << 10..=rowgroup::MAX_INPUT as usize).contains(&opts.row_group_size) {
            return Err(Error::Request(format!(
                "row group size {} is outside 1 KiB ..= 64 MiB",
                opts.row_group_size
            )));
        }
        let threads = glyd_core::resolve_threads(opts.threads);
        // Our own pool of exactly `threads` workers: row groups and their columns encode on
        // it (`-T 1` really is one thread).
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .ok();
        let head = header_bytes(&dialect, opts.level);
        inner.write_all(&head)?;
        Ok(Self {
            inner,
            dialect,
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
        let size = self.opts.row_group_size;
        let mut pieces: Vec<Range<usize>> = Vec::new();
        let mut start = 0;
        let n = self.pending.len();
        while start < n {
            let end = if n - start <= size {
                if all {
                    n
                } else {
                    match memchr::memrchr(b'\n', &self.pending[start..]) {
                        Some(i) => start + i + 1,
                        None => break,
                    }
                }
            } else {
                // Cut after the last line end within the size; a line longer than the row
                // group limit is cut there (its pieces become exceptions, nothing is lost).
                let window = &self.pending[start..start + size];
                match memchr::memrchr(b'\n', window) {
                    Some(i) => start + i + 1,
                    None => {
                        let limit = (start + rowgroup::MAX_INPUT as usize).min(n);
                        match memchr::memchr(b'\n', &self.pending[start + size..limit]) {
                            Some(i) => start + size + i + 1,
                            None if limit < n || all => limit,
                            None => break,
                        }
                    }
                }
            };
            pieces.push(start..end);
            start = end;
        }
        let (level, d) = (self.opts.level, &self.dialect);
        let src = &self.pending;
        let encode = || -> Vec<Vec<u8>> {
            pieces
                .par_iter()
                .map(|r| rowgroup::encode(&src[r.clone()], d, level))
                .collect()
        };
        let groups = match &self.pool {
            Some(p) => p.install(encode),
            None => encode(),
        };
        for (r, g) in pieces.iter().zip(groups) {
            let meta = rowgroup::parse_header(&g, self.written, d.columns)?;
            self.entries.push(Entry {
                offset: self.written,
                rows: meta.rows,
                input_len: r.len() as u64,
            });
            self.inner.write_all(&g)?;
            self.written += g.len() as u64;
        }
        self.pending.drain(..start);
        Ok(())
    }

    /// Writes the remaining row groups and the footer; returns the inner writer.
    pub fn finish(mut self) -> Result<W> {
        if let Some(h) = &self.dialect.header {
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
        if let Some(h) = &self.dialect.header {
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
        self.pending.extend_from_slice(buf);
        self.bytes_in += taken as u64;
        if self.pending.len() >= self.opts.row_group_size * self.threads {
            self.encode_pending(false).map_err(io::Error::other)?;
        }
        Ok(taken)
    }

    /// Encodes every complete line taken so far as row groups and flushes them to the inner
    /// writer (for long-running pipes: `tail -f app.csv | glyd -r`).
    fn flush(&mut self) -> io::Result<()> {
        self.encode_pending(false).map_err(io::Error::other)?;
        self.inner.flush()
    }
}

/// A record archive held in memory, indexed for random access.
pub struct ArchiveReader {
    data: Vec<u8>,
    level: u8,
    dialect: Dialect,
    header_len: usize,
    groups: Vec<RowGroupMeta>,
    schema: SchemaRef,
}

impl ArchiveReader {
    /// Opens the archive file at `path`.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::from_bytes(std::fs::read(path)?)
    }

    /// Indexes the archive in `data`: checks the header, the footer and every row group header.
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
        let mut groups = Vec::with_capacity(entries.len());
        let mut at = header.len as u64;
        for (i, e) in entries.iter().enumerate() {
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
            let meta =
                rowgroup::parse_header(&data[at as usize..footer_at], at, header.dialect.columns)?;
            if meta.rows != e.rows || meta.input_len != e.input_len || meta.end > footer_at as u64 {
                return Err(Error::corrupt(
                    "row group header",
                    at,
                    format!("row group {i} disagrees with the footer"),
                ));
            }
            at = meta.end;
            groups.push(meta);
        }
        if at != footer_at as u64 {
            return Err(Error::corrupt(
                "archive",
                at,
                "bytes between the last row group and the footer",
            ));
        }
        let schema = schema_of(&header.dialect, &groups);
        Ok(Self {
            data,
            level: header.level,
            dialect: header.dialect,
            header_len: header.len,
            groups,
            schema,
        })
    }

    /// The Arrow schema: one nullable field per column, typed when every row group agrees.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    pub fn dialect(&self) -> &Dialect {
        &self.dialect
    }

    /// The level number the archive was written at.
    pub fn level(&self) -> u8 {
        self.level
    }

    pub fn row_groups(&self) -> &[RowGroupMeta] {
        &self.groups
    }

    /// Total rows.
    pub fn rows(&self) -> u64 {
        self.groups.iter().map(|g| g.rows).sum()
    }

    /// Bytes the archive rebuilds to.
    pub fn input_len(&self) -> u64 {
        self.dialect.header.as_ref().map_or(0, |h| h.len() as u64)
            + self.groups.iter().map(|g| g.input_len).sum::<u64>()
    }

    /// Size of the archive in bytes.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Index of the column named `name`.
    pub fn column_index(&self, name: &str) -> Result<usize> {
        self.dialect
            .names
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| {
                Error::Request(format!(
                    "no column named {name:?}; the archive has {}",
                    self.dialect.names.join(", ")
                ))
            })
    }

    /// One batch per row group in `groups`, holding the columns in `projection` (all when
    /// `None`), decoding only those columns' chunks.
    pub fn read(
        &self,
        projection: Option<&[usize]>,
        groups: Range<usize>,
    ) -> Result<Vec<RecordBatch>> {
        let cols: Vec<usize> = match projection {
            Some(p) => p.to_vec(),
            None => (0..self.dialect.columns).collect(),
        };
        let schema = Arc::new(
            self.schema
                .project(&cols)
                .map_err(|e| Error::Request(e.to_string()))?,
        );
        let metas = self.groups.get(groups.clone()).ok_or_else(|| {
            Error::Request(format!(
                "row groups {groups:?} out of range (the archive has {})",
                self.groups.len()
            ))
        })?;
        metas
            .par_iter()
            .map(|g| {
                let src = &self.data[g.offset as usize..g.end as usize];
                let columns = rowgroup::decode_columns(src, g, Some(&cols))?;
                let arrays = columns
                    .iter()
                    .zip(&cols)
                    .map(|(c, &i)| c.to_arrow(g.rows as usize, self.schema.field(i).data_type()))
                    .collect::<Result<Vec<_>>>()?;
                RecordBatch::try_new(schema.clone(), arrays)
                    .map_err(|e| Error::corrupt("row group", g.offset, e.to_string()))
            })
            .collect()
    }

    /// Writes the original input to `out`; returns its length.
    pub fn rebuild_to(&self, mut out: impl Write) -> Result<u64> {
        let mut total = 0u64;
        if let Some(h) = &self.dialect.header {
            out.write_all(h)?;
            total += h.len() as u64;
        }
        let threads = rayon::current_num_threads().max(1);
        for batch in self.groups.chunks(threads) {
            let parts: Vec<Result<Vec<u8>>> = batch
                .par_iter()
                .map(|g| {
                    let mut buf = Vec::new();
                    let src = &self.data[g.offset as usize..g.end as usize];
                    rowgroup::rebuild(src, g, &self.dialect, &mut buf)?;
                    Ok(buf)
                })
                .collect();
            for p in parts {
                let p = p?;
                out.write_all(&p)?;
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

/// Each column's Arrow type: its kind's when every row group with rows agrees, else Utf8.
fn schema_of(d: &Dialect, groups: &[RowGroupMeta]) -> SchemaRef {
    let fields: Vec<Field> = (0..d.columns)
        .map(|i| {
            let mut kinds = groups
                .iter()
                .filter(|g| g.rows > 0)
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
/// original input to `out`; returns its length.
pub fn rebuild(mut src: impl Read, mut out: impl Write) -> Result<u64> {
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
    let d = header.dialect;
    let mut total = 0u64;
    if let Some(h) = &d.header {
        out.write_all(h)?;
        total += h.len() as u64;
    }
    let mut offset = header.len as u64;
    buf.drain(..header.len);
    let mut entries = Vec::new();
    loop {
        // Enough bytes for the tag, header length and header, then the chunks it lists.
        if buf.is_empty() && read_more(&mut src, &mut buf, 1)? == 0 {
            return Err(Error::Truncated {
                what: "footer",
                offset,
            });
        }
        if buf[0] == TAG_END {
            while read_more(&mut src, &mut buf, 1 << 16)? > 0 {}
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
        if buf[0] != TAG_ROW_GROUP {
            return Err(Error::corrupt(
                "archive",
                offset,
                format!("unknown item tag {}", buf[0]),
            ));
        }
        let meta = loop {
            match rowgroup::parse_header(&buf, offset, d.columns) {
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
        let len = (meta.end - offset) as usize;
        while buf.len() < len {
            let want = len - buf.len();
            if read_more(&mut src, &mut buf, want)? == 0 {
                return Err(Error::Truncated {
                    what: "row group",
                    offset,
                });
            }
        }
        let mut part = Vec::with_capacity(meta.input_len as usize);
        rowgroup::rebuild(&buf[..len], &meta, &d, &mut part)?;
        out.write_all(&part)?;
        total += part.len() as u64;
        entries.push(Entry {
            offset,
            rows: meta.rows,
            input_len: meta.input_len,
        });
        buf.drain(..len);
        offset = meta.end;
    }
}

/// Appends up to `n` more bytes from `src` to `buf`; returns how many (0 at the end).
fn read_more(src: &mut impl Read, buf: &mut Vec<u8>, n: usize) -> Result<usize> {
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
