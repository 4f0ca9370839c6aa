//! Reading archives with random access: tables and schemas, statistics, dictionaries, Arrow
//! batches of some columns and row groups (decoded within the memory limit), and the text the
//! row groups rebuild to.

use std::io::Write;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{BooleanArray, RecordBatch};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{Field, Schema, SchemaRef};
use rayon::prelude::*;

use super::format::{parse_footer, parse_header, parse_table};
use crate::column::{Column, RowCursor};
use crate::error::{Error, Result};
use crate::escapes::{self, Escapes};
use crate::model::{Dialect, Format, Kind, Table};
use crate::predicate::TextTest;
use crate::rowgroup::{RowGroupMeta, TAG_TABLE};

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
        let mut tables = vec![crate::archive::first_table(&header.format)];
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
            let meta = crate::rowgroup::parse_header(&data[at as usize..footer_at], at, &counts)?;
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
            let src = &self.data[g.offset as usize..g.end as usize];
            let need = crate::rowgroup::check_need(src, g, self.memory)?;
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
        crate::rowgroup::check_need(src, g, self.memory)?;
        Ok((g, src))
    }

    /// How column `column` of row group `group` is coded (decodes at most two small streams).
    pub fn coding(&self, group: usize, column: usize) -> Result<crate::column::Coding> {
        let (g, src) = self.group(group)?;
        crate::rowgroup::column_coding(src, g, column)
    }

    /// The distinct values of column `column` of row group `group` when that chunk is
    /// dictionary-coded text, sorted, as a read presents them (escapes undone); `None` when
    /// it is coded another way.
    pub fn dictionary(&self, group: usize, column: usize) -> Result<Option<Vec<Vec<u8>>>> {
        let (g, src) = self.group(group)?;
        let e = self.tables[g.table].escapes();
        let Some(mut entries) = crate::rowgroup::chunk_dictionary(src, g, column)? else {
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
                            crate::column::to_target(c, rows, target)
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
    /// `Planes`) except where the schema reads the column as text (its row groups
    /// disagree on its kind), which is spelled from its values.
    fn decode_for_arrow(
        &self,
        src: &[u8],
        g: &RowGroupMeta,
        cols: &[usize],
        parallel: bool,
    ) -> Result<Vec<Column>> {
        let mut columns =
            crate::rowgroup::decode_columns(src, g, Some(cols), parallel, !self.arrow)?;
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

    /// Writes the text a text archive's row groups rebuild to (see
    /// [`ArchiveReader::rebuild_to`], which also takes Arrow tables) and returns its length.
    pub(crate) fn rebuild_text_to(&self, mut out: impl Write) -> Result<u64> {
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
                crate::rowgroup::check_need(src, g, self.memory)?;
                let d = &self.tables[g.table].dialect;
                crate::rowgroup::rebuild_passing(src, g, d, &mut buf, &mut write)?;
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
                    crate::rowgroup::rebuild(src, g, &self.tables[g.table].dialect, buf)
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
    /// judged on the chunk's codes (see `Column::rows_passing`): a dictionary's once per
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
