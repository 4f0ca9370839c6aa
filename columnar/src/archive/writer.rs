//! Writing archives: [`RecordWriter`] takes text as it arrives, cuts it into row groups at
//! record boundaries (and a SQL dump into tables) and encodes them on a pool; [`BatchWriter`]
//! takes Arrow record batches.

use std::io::{self, Write};
use std::ops::Range;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use glyd_core::Level;
use rayon::prelude::*;

use super::format::{footer_bytes, header_bytes, table_bytes, Entry};
use crate::error::{Error, Result};
use crate::model::{Dialect, Format, Style, Table};
use crate::shred::sql_dump::Segmenter;

/// Default input bytes per row group.
pub const DEFAULT_ROW_GROUP: usize = 16 << 20;

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

/// Streaming writer of a record archive. Feed it the input (header line included) through
/// `Write`; call [`RecordWriter::finish`] at the end.
pub struct RecordWriter<W: Write> {
    inner: W,
    /// The archive's tables so far; the first `defined` are in the output.
    tables: Vec<Table>,
    defined: usize,
    /// Splits a SQL dump into tables; `None` for one table of delimited records.
    segmenter: Option<Segmenter>,
    /// The table new row groups are cut for (not a SQL dump's): JSON lines grow it, a table
    /// of the same name with more columns, as new keys appear.
    current: usize,
    opts: WriteOptions,
    threads: usize,
    pool: Option<rayon::ThreadPool>,
    /// Bytes of the dialect's header line not yet seen in the input.
    header_seen: usize,
    pending: Vec<u8>,
    written: u64,
    entries: Vec<Entry>,
    bytes_in: u64,
    /// Key, value pairs for the footer.
    metadata: Vec<(String, String)>,
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
                    let limit = (start + crate::rowgroup::MAX_INPUT as usize).min(n);
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

/// The bytes of lines with one key set in a row that make a row group of their own in a JSON
/// lines stream whose key sets change (see `key_set_breaks`): enough rows that a row group of
/// them codes well alone, and a quarter of a row group at most.
fn key_set_run(row_group_size: usize) -> usize {
    (row_group_size / 4).min(64 << 10)
}

/// The dialect of a table a [`RecordWriter`] defines: it takes text, and defines only tables
/// of text.
fn text(t: &Table) -> &Dialect {
    t.dialect()
        .expect("a RecordWriter defines tables of text only")
}

/// Checks `opts` and makes the writer's own pool of exactly `opts.threads` workers (all cores
/// for 0): row groups and their columns encode on it (`-T 1` really is one thread).
fn workers(opts: &WriteOptions) -> Result<(usize, Option<rayon::ThreadPool>)> {
    if !(1 << 10..=crate::rowgroup::MAX_INPUT as usize).contains(&opts.row_group_size) {
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
    /// A writer of an archive of `format` (a [`crate::Dialect`] for delimited records).
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
            tables: vec![super::format::first_table(&format)],
            defined: 1,
            segmenter: (format == Format::SqlDump).then(Segmenter::default),
            current: 0,
            opts: opts.clone(),
            threads,
            pool,
            header_seen: 0,
            pending: Vec::new(),
            written: head.len() as u64,
            entries: Vec::new(),
            bytes_in: 0,
            metadata: Vec::new(),
        })
    }

    /// Input bytes taken so far.
    pub fn bytes_in(&self) -> u64 {
        self.bytes_in
    }

    /// Keeps `key` = `value` in the archive's footer (see [`crate::ArchiveReader::metadata`]):
    /// where it came from, what it holds. A key set again takes the new value; past 1,024
    /// keys or 1 MiB in all it is refused.
    pub fn set_metadata(&mut self, key: &str, value: &str) -> Result<()> {
        self.metadata.retain(|(k, _)| k != key);
        let bytes: usize = self
            .metadata
            .iter()
            .map(|(k, v)| k.len() + v.len() + 10)
            .sum();
        if self.metadata.len() >= super::format::MAX_METADATA
            || bytes + key.len() + value.len() + 10 > super::format::MAX_METADATA_BYTES
        {
            return Err(Error::Request(format!(
                "metadata {key:?}: an archive keeps at most {} keys and {} bytes of them",
                super::format::MAX_METADATA,
                super::format::MAX_METADATA_BYTES
            )));
        }
        self.metadata.push((key.to_string(), value.to_string()));
        Ok(())
    }

    /// Encodes whole row groups from the pending input; with `all`, everything pending (the
    /// input has ended), otherwise only up to the last line end.
    fn encode_pending(&mut self, all: bool) -> Result<()> {
        let size = self.opts.row_group_size;
        let (segments, whole) = match &mut self.segmenter {
            None if text(&self.tables[self.current]).style == Style::Json => {
                // Row groups end where one long run of a key set gives way to another.
                let mut at = 0;
                let mut segments = Vec::new();
                for b in crate::shred::json::key_set_breaks(&self.pending, key_set_run(size)) {
                    segments.push((self.current, at..b));
                    at = b;
                }
                segments.push((self.current, at..self.pending.len()));
                (segments, Vec::new())
            }
            None => (vec![(self.current, 0..self.pending.len())], Vec::new()),
            Some(seg) => {
                seg.scan(&self.pending, all);
                self.tables.clone_from(&seg.tables);
                (seg.segments(), seg.statements().to_vec())
            }
        };
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
        let encode = || -> Vec<crate::rowgroup::Encoded> {
            pieces
                .par_iter()
                .map(|(t, r)| {
                    crate::rowgroup::encode(
                        &src[r.clone()],
                        *t,
                        text(&tables[*t]),
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
        for ((table, r), g) in pieces.iter().zip(groups) {
            // A row group with columns its table lacks goes to a table that has them.
            let (table, bytes) = match g.added.is_empty() {
                true => (*table, g.bytes),
                false => {
                    let t = self.grown_table(*table, &g.added);
                    (t, crate::rowgroup::with_table(&g.bytes, t)?)
                }
            };
            // A table is defined just before its first row group.
            while self.defined <= table {
                let t = &self.tables[self.defined];
                let def = table_bytes(&t.name, text(t));
                self.inner.write_all(&def)?;
                self.written += def.len() as u64;
                self.defined += 1;
            }
            let columns: Vec<usize> = self.tables.iter().map(Table::columns).collect();
            let meta = crate::rowgroup::parse_header(&bytes, self.written, &columns)?;
            self.entries.push(Entry {
                offset: self.written,
                table,
                rows: meta.rows,
                input_len: r.len() as u64,
            });
            self.inner.write_all(&bytes)?;
            self.written += bytes.len() as u64;
        }
        self.pending.drain(..consumed);
        if let Some(seg) = &mut self.segmenter {
            seg.consumed(consumed);
        }
        Ok(())
    }

    /// The table of table `base`'s name and dialect with columns `added` after its own,
    /// defined anew unless there is one; later row groups are cut for the table of every
    /// column so far.
    fn grown_table(&mut self, base: usize, added: &[String]) -> usize {
        let name = self.tables[base].name.clone();
        let dialect = text(&self.tables[base]).with_added(added);
        let t = self.table_of(&name, dialect);
        // The widest so far: the current table's columns, then any new ones of `t`.
        let current = text(&self.tables[self.current]);
        let more: Vec<String> = self.tables[t]
            .names()
            .iter()
            .filter(|n| !current.names.contains(n))
            .cloned()
            .collect();
        if !more.is_empty() {
            let widest = current.with_added(&more);
            self.current = self.table_of(&name, widest);
        }
        t
    }

    /// The index of the table `name` laid out as `dialect`, added if there is none.
    fn table_of(&mut self, name: &str, dialect: Dialect) -> usize {
        match self
            .tables
            .iter()
            .position(|t| t.name == name && t.dialect() == Some(&dialect))
        {
            Some(t) => t,
            None => {
                self.tables.push(Table::text(name, dialect));
                self.tables.len() - 1
            }
        }
    }

    /// Writes the remaining row groups and the footer; returns the inner writer.
    pub fn finish(mut self) -> Result<W> {
        if let Some(h) = &text(&self.tables[0]).header {
            if self.header_seen < h.len() {
                return Err(Error::Request(
                    "the input ended inside its header line".into(),
                ));
            }
        }
        self.encode_pending(true)?;
        self.inner
            .write_all(&footer_bytes(&self.entries, &self.metadata))?;
        self.inner.flush()?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for RecordWriter<W> {
    fn write(&mut self, mut buf: &[u8]) -> io::Result<usize> {
        let taken = buf.len();
        if let Some(h) = &text(&self.tables[0]).header {
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
                .map(|a| crate::codec::arrow_ipc::size_of(a.as_ref()) as usize)
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
                .map(|b| crate::rowgroup::encode_batch(b, 0, level))
                .collect()
        };
        let encoded = match &self.pool {
            Some(p) => p.install(encode),
            None => encode(),
        }?;
        let columns = [self.schema.fields().len()];
        for g in encoded {
            let meta = crate::rowgroup::parse_header(&g, self.written, &columns)?;
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
        self.inner.write_all(&footer_bytes(&self.entries, &[]))?;
        self.inner.flush()?;
        Ok(self.inner)
    }
}
