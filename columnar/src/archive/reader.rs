//! Reading archives with random access: tables and schemas, statistics, dictionaries, Arrow
//! batches of some columns and row groups (decoded within the memory limit), and the text the
//! row groups rebuild to.

use std::io::Write;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, RecordBatch, StringArray, StringViewArray};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use rayon::prelude::*;

use super::format::{parse_footer, parse_header, parse_table};
use super::tables::{raw_name, read_meta, read_tables, schema_of, TableMap};
use crate::column::{Column, RowCursor};
use crate::error::{Error, Result};
use crate::escapes::{self, Escapes};
use crate::fetched::Fetched;
use crate::model::{Dialect, Format, Table};
use crate::predicate::TextTest;
use crate::rowgroup::{GroupBytes, RowGroupMeta, RowRole, TAG_TABLE};
use crate::wire::Cursor;

/// A record archive held in memory, indexed for random access. Its tables and row groups are
/// as it reads (see `tables.rs`): a JSON lines archive's tables of one name are one table, and
/// verbatim records are rows of a `_raw` column.
pub struct ArchiveReader {
    /// The archive's bytes: all of them, or (opened by ranges) what has been fetched.
    data: Fetched,
    level: u8,
    /// The tables as read.
    tables: Vec<Table>,
    header_len: usize,
    /// The row groups as read: their table's number and columns in its terms, verbatim
    /// records counted as rows.
    groups: Vec<RowGroupMeta>,
    /// The tables as stored (row groups decode and rebuild by these).
    stored_tables: Vec<Table>,
    /// The row groups as stored.
    stored: Vec<RowGroupMeta>,
    /// How each stored table's columns read.
    maps: Vec<TableMap>,
    /// Verbatim records per row group.
    verbatim: Vec<u64>,
    /// Per table as read: the name of its verbatim-records column, when it has any.
    raw: Vec<Option<String>>,
    /// One schema per table as read.
    schemas: Vec<SchemaRef>,
    /// Whether this is an Arrow table ([`Format::Arrow`]), which rebuilds as Parquet.
    arrow: bool,
    /// The most memory decoding may hold at once (see [`ArchiveReader::with_memory_limit`]).
    memory: u64,
    /// The footer's metadata, as the writer set it.
    metadata: Vec<(String, String)>,
}

impl ArchiveReader {
    /// The key, value pairs the writer kept in the footer ([`crate::RecordWriter::set_metadata`]),
    /// in the order set. Not part of the Arrow schema: archives of one table may differ here.
    pub fn metadata(&self) -> &[(String, String)] {
        &self.metadata
    }

    /// Opens the archive file at `path`.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::from_bytes(std::fs::read(path)?)
    }

    /// Indexes the archive in `data`: checks the header, the footer, every table definition
    /// and every row group header.
    pub fn from_bytes(data: Vec<u8>) -> Result<Self> {
        let data = Fetched::whole(data);
        Ok(Self::index(&data)?.holding(data))
    }

    /// This reader, holding `data` (what it was indexed from).
    pub(crate) fn holding(mut self, data: Fetched) -> Self {
        self.data = data;
        self
    }

    /// Indexes an archive from the ranges of it in `data` (see [`crate::RangedOpen`], which
    /// says what to fetch): its header, footer, table definitions, row group headers and
    /// exception indexes. [`Error::Missing`] names ranges it needs and does not have. The
    /// reader holds none of `data` (see [`ArchiveReader::holding`]).
    pub(crate) fn index(data: &Fetched) -> Result<Self> {
        let head = data.from(0);
        let header = match parse_header(head)? {
            Some(h) => h,
            None if (head.len() as u64) < data.len() => {
                let want = (head.len() as u64 * 2).max(4096).min(data.len());
                return Err(Error::Missing {
                    ranges: std::iter::once(0..want).collect(),
                });
            }
            None => {
                return Err(Error::Truncated {
                    what: "archive header",
                    offset: 0,
                })
            }
        };
        let n = data.len();
        let trailer =
            n.checked_sub(8)
                .filter(|&t| t >= header.len as u64)
                .ok_or(Error::Truncated {
                    what: "footer",
                    offset: n,
                })?;
        let footer_len = data.need(trailer..trailer + 4, "footer")?;
        let footer_len = u32::from_le_bytes(footer_len.try_into().expect("4"));
        let footer_at = n
            .checked_sub(u64::from(footer_len))
            .filter(|&f| f >= header.len as u64)
            .ok_or_else(|| Error::corrupt("footer", trailer, "footer length past the start"))?;
        let (entries, metadata) = parse_footer(data.need(footer_at..n, "footer")?, footer_at)?;
        let mut tables = vec![crate::archive::first_table(&header.format)];
        let mut groups = Vec::with_capacity(entries.len());
        let mut at = header.len as u64;
        // Table definitions lie between row groups: from `at` up to `next`, where the next
        // row group (or the footer) starts.
        let define = |at: &mut u64, next: u64, tables: &mut Vec<Table>| -> Result<()> {
            if *at >= next {
                return Ok(());
            }
            let gap = data.need(*at..next, "table definition")?;
            let mut used = 0;
            while used < gap.len() && gap[used] == TAG_TABLE {
                let (t, len) = parse_table(&gap[used..], *at + used as u64)?;
                tables.push(t);
                used += len;
            }
            *at += used as u64;
            Ok(())
        };
        for (i, e) in entries.iter().enumerate() {
            let next = e.offset.max(at).min(footer_at);
            define(&mut at, next, &mut tables)?;
            if e.offset != at {
                return Err(Error::corrupt(
                    "footer",
                    footer_at,
                    format!(
                        "row group {i} listed at byte {} but found at {at}",
                        e.offset
                    ),
                ));
            }
            let counts: Vec<usize> = tables.iter().map(Table::columns).collect();
            let src = group_header(data, at, footer_at)?;
            let meta = crate::rowgroup::parse_header(src, at, &counts)?;
            if meta.rows != e.rows
                || meta.input_len != e.input_len
                || meta.table != e.table
                || meta.end > footer_at
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
        define(&mut at, footer_at, &mut tables)?;
        if at != footer_at {
            return Err(Error::corrupt(
                "archive",
                at,
                "bytes between the last row group and the footer",
            ));
        }
        if let (Format::Arrow(_), true) = (&header.format, tables.len() > 1) {
            return Err(Error::corrupt(
                "archive",
                header.len as u64,
                "a table definition in an Arrow table archive",
            ));
        }
        let (read, maps) = read_tables(&header.format, &tables);
        let verbatim = verbatim_counts(data, &groups)?;
        // A table has the column when it has verbatim records: clean data reads as it was
        // written (`SELECT *` of a CSV archive is that CSV); listings merge schemas by name.
        let raw: Vec<Option<String>> = read
            .iter()
            .enumerate()
            .map(|(t, table)| {
                let any = groups
                    .iter()
                    .zip(&verbatim)
                    .any(|(g, &v)| v > 0 && maps[g.table].table == t);
                any.then(|| raw_name(table))
            })
            .collect();
        let schemas = match &header.format {
            Format::Arrow(schema) => vec![schema.clone()],
            _ => (0..read.len())
                .map(|t| schema_of(t, &read[t], &groups, &maps, raw[t].as_deref()))
                .collect(),
        };
        let read_groups = groups
            .iter()
            .zip(&verbatim)
            .map(|(g, &v)| read_meta(g, &maps[g.table], v))
            .collect();
        Ok(Self {
            data: Fetched::new(data.len()),
            level: header.level,
            tables: read,
            header_len: header.len,
            groups: read_groups,
            stored_tables: tables,
            stored: groups,
            maps,
            verbatim,
            raw,
            schemas,
            arrow: matches!(header.format, Format::Arrow(_)),
            metadata,
            memory: glyd_core::DEFAULT_MEMORY_LIMIT,
        })
    }

    /// Sets the memory limit: row groups decoded at once (in parallel, or one whose columns
    /// decode in parallel) may together need at most `bytes` (see `rowgroup::decode_need`);
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
            let need = crate::rowgroup::check_need(self.bytes(None), g, self.memory)?;
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

    /// The dialect of table 0 (`None` for Arrow values).
    pub fn dialect(&self) -> Option<&Dialect> {
        self.tables[0].dialect()
    }

    /// The dialect of stored table `t`, which a row group of text rebuilds in.
    fn text_dialect(&self, t: usize) -> Result<&Dialect> {
        self.stored_tables[t]
            .dialect()
            .ok_or_else(|| Error::Request("an Arrow table has no text to rebuild".into()))
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
        self.dialect()
            .and_then(|d| d.header.as_ref())
            .map_or(0, |h| h.len() as u64)
            + self.groups.iter().map(|g| g.input_len).sum::<u64>()
    }

    /// Whether the reader holds all of the archive's bytes (opened whole, or by ranges that
    /// happened to be all of it): otherwise it reads row groups from chunks fetched for
    /// them ([`ArchiveReader::read_batches_fetched`]).
    pub fn holds_all(&self) -> bool {
        self.data.held() == self.data.len()
    }

    /// Bytes of the archive the reader holds.
    pub fn held(&self) -> u64 {
        self.data.held()
    }

    /// Size of the archive in bytes.
    pub fn len(&self) -> usize {
        self.data.len() as usize
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
        t.names().iter().position(|n| n == name).ok_or_else(|| {
            Error::Request(format!(
                "no column named {name:?} in table {}; it has {}",
                t.name,
                t.names().join(", ")
            ))
        })
    }

    /// Row group `group` as stored, and its bytes, once its decoding is known to fit the
    /// memory limit.
    fn group<'a>(
        &'a self,
        group: usize,
        fetched: Option<&'a Fetched>,
    ) -> Result<(&'a RowGroupMeta, GroupBytes<'a>)> {
        let g = self.stored_group(group)?;
        let src = self.bytes(fetched);
        crate::rowgroup::check_need(src, g, self.memory)?;
        Ok((g, src))
    }

    /// Row group `group` as stored.
    fn stored_group(&self, group: usize) -> Result<&RowGroupMeta> {
        self.stored.get(group).ok_or_else(|| {
            Error::Request(format!(
                "row group {group} out of range (the archive has {})",
                self.stored.len()
            ))
        })
    }

    /// The stored column of row group `g` (stored) that column `column` of its table reads
    /// from: `Ok(None)` where the row group lacks it or it is the verbatim-records column.
    fn stored_column(&self, g: &RowGroupMeta, column: usize) -> Result<Option<usize>> {
        let map = &self.maps[g.table];
        let raw = self.raw[map.table].is_some() as usize;
        match map.columns.get(column) {
            Some(c) => Ok(*c),
            None if column < map.columns.len() + raw => Ok(None),
            None => Err(Error::Request(format!(
                "column {column} does not exist (the table has {})",
                map.columns.len() + raw
            ))),
        }
    }

    /// How column `column` of row group `group` is coded (decodes at most two small streams).
    pub fn coding(&self, group: usize, column: usize) -> Result<crate::column::Coding> {
        let (g, src) = self.group(group, None)?;
        match self.stored_column(g, column)? {
            Some(c) => crate::rowgroup::column_coding(src, g, c),
            None => Ok(crate::column::Coding::Plain),
        }
    }

    /// The distinct values of column `column` of row group `group` when that chunk is
    /// dictionary-coded text, sorted, as a read presents them (escapes undone); `None` when
    /// it is coded another way.
    pub fn dictionary(&self, group: usize, column: usize) -> Result<Option<Vec<Vec<u8>>>> {
        let (g, src) = self.group(group, None)?;
        let Some(c) = self.stored_column(g, column)? else {
            return Ok(None);
        };
        let e = self.stored_tables[g.table].escapes();
        let Some(mut entries) = crate::rowgroup::chunk_dictionary(src, g, c)? else {
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

    /// The verbatim records of row group `group` (input no shredder could represent
    /// exactly), each its text without its line end; they read as rows of the table's `_raw`
    /// column.
    pub fn verbatim(&self, group: usize) -> Result<Vec<Vec<u8>>> {
        self.verbatim_in(group, None)
    }

    fn verbatim_in(&self, group: usize, fetched: Option<&Fetched>) -> Result<Vec<Vec<u8>>> {
        if self.verbatim.get(group).copied().unwrap_or(0) == 0 {
            return Ok(Vec::new());
        }
        let (g, src) = self.group(group, fetched)?;
        let ex = crate::rowgroup::verbatim(src, g)?;
        Ok((0..ex.len())
            .map(|i| {
                let t = ex.get(i);
                let t = t.strip_suffix(b"\n").unwrap_or(t);
                t.strip_suffix(b"\r").unwrap_or(t).to_vec()
            })
            .collect())
    }

    /// How many of row group `group`'s rows are verbatim records.
    pub fn verbatim_rows(&self, group: usize) -> u64 {
        self.verbatim.get(group).copied().unwrap_or(0)
    }

    /// One batch per row group in `groups` (all of one table), holding the columns in
    /// `projection` (all when `None`), decoding only those columns' chunks; a row group's
    /// verbatim records are rows after its others.
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
            None => (0..self.schemas[table].fields().len()).collect(),
        };
        let schema = Arc::new(
            self.schemas[table]
                .project(&cols)
                .map_err(|e| Error::Request(e.to_string()))?,
        );
        let mut batches = Vec::with_capacity(metas.len());
        let stored = &self.stored[groups.clone()];
        for run in self.runs(stored, usize::MAX)? {
            let first = groups.start + run.start;
            let run: Vec<usize> = (first..first + run.len()).collect();
            let read: Vec<Result<RecordBatch>> = run
                .par_iter()
                .map(|&g| {
                    let parts: Vec<RecordBatch> = self
                        .group_batches(Some(&cols), g, usize::MAX, false, false, None)?
                        .collect::<Result<_>>()?;
                    arrow_select::concat::concat_batches(&schema, &parts).map_err(|e| {
                        Error::corrupt("row group", self.stored[g].offset, e.to_string())
                    })
                })
                .collect();
            for b in read {
                batches.push(b?);
            }
        }
        Ok(batches)
    }

    /// Columns `cols` (stored column numbers) of stored row group `g` (bytes `src`), decoded
    /// to be read as Arrow arrays of types `targets`: integer and decimal chunks keep their
    /// planes (see `Planes`) except where the type is another (the table's row groups
    /// disagree on the column's kind), when it is spelled from its values.
    fn decode_for_arrow(
        &self,
        src: GroupBytes,
        g: &RowGroupMeta,
        cols: &[usize],
        targets: &[&DataType],
        parallel: bool,
    ) -> Result<Vec<Column>> {
        let mut columns =
            crate::rowgroup::decode_columns(src, g, Some(cols), parallel, !self.arrow)?;
        for (c, target) in columns.iter_mut().zip(targets) {
            if let Column::Typed { kind, .. } = c {
                if kind.data_type() != **target {
                    c.decode_planes()?;
                }
            }
        }
        Ok(columns)
    }

    /// Row group `group`'s columns in `projection` (all when `None`) as batches of at most
    /// `batch_rows` rows, its verbatim records last; with `string_views`, Utf8 columns come as
    /// Utf8View (as DataFusion's own Parquet scans read strings: cheaper to make from a
    /// dictionary, and to group by). The chunks decode once, here, in parallel on the current
    /// rayon pool; each batch's Arrow arrays are made when the iterator yields it, so a query
    /// reads them while they are still in cache (rather than slices of arrays for the whole
    /// row group, long since evicted).
    pub fn read_batches(
        &self,
        projection: Option<&[usize]>,
        group: usize,
        batch_rows: usize,
        string_views: bool,
    ) -> Result<GroupBatches> {
        self.group_batches(projection, group, batch_rows, string_views, true, None)
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
        self.group_batches(projection, group, batch_rows, string_views, false, None)
    }

    /// The ranges of the archive that reading columns `projection` (all when `None`) of row
    /// group `group` decodes: their chunks, and the verbatim records' where the row group has
    /// any. A column linked to another needs that one's too, which a read from these alone
    /// finds out and names ([`Error::Missing`]).
    pub fn chunk_ranges(
        &self,
        projection: Option<&[usize]>,
        group: usize,
    ) -> Result<Vec<Range<u64>>> {
        let g = self.stored_group(group)?;
        let table = self.maps[g.table].table;
        let all: Vec<usize> = (0..self.schemas[table].fields().len()).collect();
        let mut ranges = Vec::new();
        for &c in projection.unwrap_or(&all) {
            if let Some(s) = self.stored_column(g, c)? {
                let streams = &g.columns[s].streams;
                ranges.extend(streams.iter().map(|s| s.offset..s.offset + s.stored));
            }
        }
        if self.raw[table].is_some() && self.verbatim.get(group).copied().unwrap_or(0) > 0 {
            ranges.extend(
                g.row_streams
                    .iter()
                    .filter(|s| {
                        s.role == RowRole::ExceptionIndex as u8
                            || s.role == RowRole::ExceptionBytes as u8
                    })
                    .map(|s| s.offset..s.offset + s.stored),
            );
        }
        ranges.sort_by_key(|r| r.start);
        ranges.dedup();
        Ok(ranges)
    }

    /// [`ArchiveReader::read_batches_here`] of an archive opened by ranges, decoding the
    /// chunks in `fetched` (see [`ArchiveReader::chunk_ranges`]).
    pub fn read_batches_fetched(
        &self,
        fetched: &Fetched,
        projection: Option<&[usize]>,
        group: usize,
        batch_rows: usize,
        string_views: bool,
    ) -> Result<GroupBatches> {
        self.group_batches(
            projection,
            group,
            batch_rows,
            string_views,
            false,
            Some(fetched),
        )
    }

    fn group_batches(
        &self,
        projection: Option<&[usize]>,
        group: usize,
        batch_rows: usize,
        string_views: bool,
        parallel: bool,
        fetched: Option<&Fetched>,
    ) -> Result<GroupBatches> {
        let (g, src) = self.group(group, fetched)?;
        let table = self.maps[g.table].table;
        let cols: Vec<usize> = match projection {
            Some(p) => p.to_vec(),
            None => (0..self.schemas[table].fields().len()).collect(),
        };
        let read = self.schemas[table]
            .project(&cols)
            .map_err(|e| Error::Request(e.to_string()))?;
        let schema = Arc::new(if string_views {
            with_string_views(&read)
        } else {
            read.clone()
        });
        // Each output column: a stored column decoded, or nulls (the row group lacks it, or it
        // is the verbatim-records column, null in every row but those).
        let raw = self.tables[table].columns();
        let mut wanted = Vec::new();
        let mut outputs = Vec::with_capacity(cols.len());
        for &c in &cols {
            match self.stored_column(g, c)? {
                Some(s) => {
                    outputs.push(Output::Decoded(wanted.len()));
                    wanted.push(s);
                }
                None if c == raw && self.raw[table].is_some() => outputs.push(Output::Raw),
                None => outputs.push(Output::Nulls),
            }
        }
        let targets: Vec<&DataType> = outputs
            .iter()
            .zip(read.fields())
            .filter(|(o, _)| matches!(o, Output::Decoded(_)))
            .map(|(_, f)| f.data_type())
            .collect();
        let rows = g.rows as usize;
        let mut columns = self.decode_for_arrow(src, g, &wanted, &targets, parallel)?;
        // Arrow tables' columns convert whole (their chunks are Arrow IPC), then slice.
        let whole = if self.arrow {
            let arrays = columns
                .iter()
                .zip(read.fields().iter().zip(schema.fields()))
                .map(|(c, (s, f))| {
                    let a = crate::column::to_target(c, rows, s.data_type())?;
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
        let escapes = self.stored_tables[g.table].escapes();
        let verbatim = match self.raw[table].is_some() {
            true => self.verbatim_in(group, fetched)?,
            false => Vec::new(),
        };
        Ok(GroupBatches {
            cursors: columns.iter().map(|_| Default::default()).collect(),
            escaped: escaped_columns(&columns, escapes),
            escapes,
            columns,
            outputs,
            whole,
            schema,
            rows,
            keep: None,
            next_row: 0,
            batch_rows: batch_rows.max(1),
            offset: g.offset,
            verbatim,
        })
    }

    /// Writes the text a text archive's row groups rebuild to (see
    /// [`ArchiveReader::rebuild_to`], which also takes Arrow tables) and returns its length.
    pub(crate) fn rebuild_text_to(&self, mut out: impl Write) -> Result<u64> {
        let mut total = 0u64;
        if let Some(h) = self.dialect().and_then(|d| d.header.as_ref()) {
            out.write_all(h)?;
            total += h.len() as u64;
        }
        let threads = rayon::current_num_threads().max(1);
        if threads == 1 {
            // Each row group's bytes go out a piece at a time, while they are in cache.
            let mut buf = Vec::new();
            let mut write = |piece: &[u8]| out.write_all(piece).map_err(Error::from);
            for g in &self.stored {
                let src = self.bytes(None);
                crate::rowgroup::check_need(src, g, self.memory)?;
                let d = self.text_dialect(g.table)?;
                crate::rowgroup::rebuild_passing(src, g, d, &mut buf, &mut write)?;
                total += g.input_len;
            }
            return Ok(total);
        }
        // One output buffer per thread, reused: a fresh one would be faulted in page by page.
        let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); threads];
        for run in self.runs(&self.stored, threads)? {
            let batch = &self.stored[run];
            batch
                .par_iter()
                .zip(bufs.par_iter_mut())
                .map(|(g, buf)| {
                    buf.clear();
                    crate::rowgroup::rebuild(self.bytes(None), g, self.text_dialect(g.table)?, buf)
                })
                .collect::<Result<()>>()?;
            for p in &bufs[..batch.len()] {
                out.write_all(p)?;
                total += p.len() as u64;
            }
        }
        Ok(total)
    }

    /// Where row groups' chunks are read from: `fetched`, else the archive's own bytes.
    fn bytes<'a>(&'a self, fetched: Option<&'a Fetched>) -> GroupBytes<'a> {
        if let Some(f) = fetched {
            return GroupBytes::Fetched(f);
        }
        match self.data.get(0..self.data.len()) {
            Some(bytes) => GroupBytes::Slice { base: 0, bytes },
            None => GroupBytes::Fetched(&self.data),
        }
    }

    /// Length of the archive header.
    pub fn header_len(&self) -> usize {
        self.header_len
    }
}

/// The bytes of the row group header at `at` (up to `end`, the footer), or the range that
/// holds them when `data` does not: a header's length follows its tag byte.
fn group_header(data: &Fetched, at: u64, end: u64) -> Result<&[u8]> {
    let held = data.from(at);
    let held = &held[..held.len().min((end - at) as usize)];
    let mut c = Cursor::new(held, at, "row group header");
    let need = match (c.u8(), c.varint()) {
        (Ok(_), Ok(len)) => c.offset().saturating_add(len).saturating_add(4),
        // Not even the length: a guess that holds most headers.
        _ if (held.len() as u64) < end - at => at + 4096,
        _ => {
            return Err(Error::Truncated {
                what: "row group header",
                offset: at,
            })
        }
    };
    if need <= at + held.len() as u64 || need > end {
        // Held whole, or claims to run past the footer (which parsing reports).
        return Ok(held);
    }
    Err(Error::Missing {
        ranges: std::iter::once(at..need.min(end)).collect(),
    })
}

/// Verbatim records per row group (from their exception indexes); where `data` lacks some
/// of those, the error names them all.
fn verbatim_counts(data: &Fetched, groups: &[RowGroupMeta]) -> Result<Vec<u64>> {
    let src = match data.get(0..data.len()) {
        Some(bytes) => GroupBytes::Slice { base: 0, bytes },
        None => GroupBytes::Fetched(data),
    };
    let mut counts = Vec::with_capacity(groups.len());
    let mut missing = Vec::new();
    for g in groups {
        match crate::rowgroup::verbatim_count(src, g) {
            Ok(n) => counts.push(n),
            Err(Error::Missing { ranges }) => missing.extend(ranges),
            Err(e) => return Err(e),
        }
    }
    match missing.is_empty() {
        true => Ok(counts),
        false => Err(Error::Missing { ranges: missing }),
    }
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

/// Where a batch's column comes from.
enum Output {
    /// The decoded column of this number.
    Decoded(usize),
    /// Nulls: the row group lacks the column.
    Nulls,
    /// The verbatim-records column: null in the rows, each record's text in the rows after.
    Raw,
}

/// The batches of one row group ([`ArchiveReader::read_batches`]): its rows, then a batch of
/// its verbatim records.
pub struct GroupBatches {
    columns: Vec<Column>,
    /// Each output column's source.
    outputs: Vec<Output>,
    /// The columns whose values hold the table's `escapes` (undone in each batch).
    escaped: Vec<bool>,
    escapes: Escapes,
    /// Where each column's next batch begins (see `Column::to_arrow_rows`).
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
    /// The verbatim records not yet yielded.
    verbatim: Vec<Vec<u8>>,
}

impl GroupBatches {
    /// Keeps only the rows whose value in column `column` (of the projection) passes `test`,
    /// judged on the chunk's codes (see `Column::rows_passing`): a dictionary's once per
    /// distinct value (escapes undone), a templated chunk's once per template where that
    /// settles it; null rows go. Batches then hold only the rows kept, and a batch's worth of
    /// rows none of which is kept is never made. Returns whether it applied: `false` (every
    /// row kept) where the chunk is coded neither way. Verbatim records are kept (their values
    /// are null: the query's own filter judges them).
    pub fn keep_only(&mut self, column: usize, test: &TextTest) -> bool {
        let e = self.escapes;
        let Some(Output::Decoded(c)) = self.outputs.get(column) else {
            return false;
        };
        let escaped = self.escaped.get(*c).copied().unwrap_or(true);
        let passing = match self.columns.get(*c) {
            Some(col) => col.rows_passing(|v| escapes::as_read(e, v), escaped, test),
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
        self.keep.as_ref().map_or(self.rows, |k| k.count_set_bits()) + self.verbatim.len()
    }

    /// The batch of the verbatim records: null in every column but the records' own.
    fn verbatim_batch(&mut self) -> Result<RecordBatch> {
        let texts = std::mem::take(&mut self.verbatim);
        let n = texts.len();
        let arrays = self
            .outputs
            .iter()
            .zip(self.schema.fields())
            .map(|(o, f)| match o {
                Output::Raw => {
                    let values = texts.iter().map(|t| Some(String::from_utf8_lossy(t)));
                    match f.data_type() {
                        DataType::Utf8View => {
                            Arc::new(StringViewArray::from_iter(values)) as ArrayRef
                        }
                        _ => Arc::new(StringArray::from_iter(values)) as ArrayRef,
                    }
                }
                _ => arrow_array::new_null_array(f.data_type(), n),
            })
            .collect();
        let opts = arrow_array::RecordBatchOptions::new().with_row_count(Some(n));
        RecordBatch::try_new_with_options(self.schema.clone(), arrays, &opts)
            .map_err(|e| Error::corrupt("row group", self.offset, e.to_string()))
    }
}

impl Iterator for GroupBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        let (range, kept) = loop {
            if self.next_row >= self.rows {
                return (!self.verbatim.is_empty()).then(|| self.verbatim_batch());
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
            None => {
                // Each decoded column's arrays for the range, in order, then placed.
                let mut decoded = Vec::with_capacity(self.columns.len());
                let types = self
                    .outputs
                    .iter()
                    .zip(self.schema.fields())
                    .filter_map(|(o, f)| matches!(o, Output::Decoded(_)).then_some(f.data_type()));
                for (((c, cursor), t), &escaped) in self
                    .columns
                    .iter()
                    .zip(&mut self.cursors)
                    .zip(types)
                    .zip(&self.escaped)
                {
                    decoded.push(
                        c.to_arrow_rows(self.rows, range.clone(), cursor, t).map(
                            |a| match escaped {
                                true => escapes::unescape_array(a, self.escapes),
                                false => a,
                            },
                        ),
                    );
                }
                let mut decoded = decoded.into_iter();
                self.outputs
                    .iter()
                    .zip(self.schema.fields())
                    .map(|(o, f)| match o {
                        Output::Decoded(_) => decoded.next().expect("one array a decoded column"),
                        _ => Ok(arrow_array::new_null_array(f.data_type(), range.len())),
                    })
                    .collect::<Result<Vec<_>>>()
            }
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
            self.verbatim.clear();
        }
        Some(batch)
    }
}
