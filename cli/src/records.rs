//! Record mode in the CLI: `glyd -r` (sniff, then a record archive or, for input that is not
//! records, a plain frame), rebuilding archives for `-d`/`-t`, and the `inspect` and `cat`
//! commands that read an archive as a table.

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::path::Path;

use anyhow::{Context, Result};
use glyd_columnar::model::{Style, Table, LINES};
use glyd_columnar::Coding;
use glyd_columnar::{detect, sniff_with, ArchiveReader, Format, RecordWriter, WriteOptions};
use glyd_connectors::store;
use glyd_core::{Encoder, Options};

use crate::args::{Args, CatFormat, RecordFormat};
use crate::output::{print, Output};
use crate::progress::human_bytes;

/// Bytes read before choosing how to compress: enough for hundreds of records.
const SAMPLE: usize = glyd_columnar::auto::SAMPLE;

/// Reads up to `n` bytes; the flag says whether the input ended within them.
fn read_sample(r: &mut dyn Read, n: usize) -> io::Result<(Vec<u8>, bool)> {
    let mut buf = Vec::with_capacity(n);
    r.take(n as u64).read_to_end(&mut buf)?;
    let whole = buf.len() < n;
    Ok((buf, whole))
}

/// How `glyd -r` stored an input.
pub enum Stored {
    /// As a record archive; `shape` says of what ("14 columns", "SQL dump").
    Records {
        shape: String,
    },
    Plain,
}

fn shape(f: &Format) -> String {
    match f {
        Format::JsonLines(d) => format!("JSON lines, {} keys", d.columns),
        Format::LogLines(d) if d.style == Style::Fields => {
            format!("log lines, {} leading fields", d.columns - 1)
        }
        Format::LogLines(_) => "log lines".into(),
        Format::Delimited(d) => format!("{} columns", d.columns),
        Format::SqlDump => "SQL dump".into(),
        Format::Arrow(schema) => format!("Parquet, {} columns", schema.fields().len()),
    }
}

/// `glyd -r` of a Parquet file: all of it is read (Parquet is read from its footer back),
/// then archived as an Arrow table.
fn compress_parquet<W: Write>(
    reader: &mut dyn Read,
    sample: Vec<u8>,
    out: W,
    opts: &WriteOptions,
) -> Result<(u64, W, Stored)> {
    let mut all = sample;
    reader.read_to_end(&mut all)?;
    let n = all.len() as u64;
    let out = glyd_columnar::parquet::archive(bytes::Bytes::from(all), out, opts)?;
    let shape = "Parquet data".to_string();
    Ok((n, out, Stored::Records { shape }))
}

/// Compresses `reader` into `out` in record mode; returns input bytes, the inner writer and
/// how it was stored. Log times spelled without a year are in `year`.
pub fn compress<W: Write>(
    reader: &mut dyn Read,
    out: W,
    args: &Args,
    year: i16,
    pump: impl Fn(&mut dyn Read, &mut dyn Write) -> io::Result<u64>,
) -> Result<(u64, W, Stored)> {
    let (sample, whole) = read_sample(reader, SAMPLE)?;
    let opts = WriteOptions {
        level: args.level(),
        threads: args.threads,
        row_group_size: args.row_group.unwrap_or(glyd_columnar::DEFAULT_ROW_GROUP),
    };
    let parquet = glyd_columnar::parquet::sniff(&sample);
    match args.format {
        None | Some(RecordFormat::Parquet) if parquet => {
            return compress_parquet(reader, sample, out, &opts);
        }
        Some(RecordFormat::Parquet) => {
            anyhow::bail!(
                "--format parquet, but the input does not start with PAR1: not a Parquet file"
            );
        }
        _ => {}
    }
    let format = match args.format {
        Some(RecordFormat::Parquet) => unreachable!("Parquet was handled above"),
        None => detect(&sample, whole),
        Some(RecordFormat::Csv) => sniff_with(&sample, whole, b',').map(Format::Delimited),
        Some(RecordFormat::Tsv) => sniff_with(&sample, whole, b'\t').map(Format::Delimited),
        Some(RecordFormat::Log) => Some(Format::LogLines(glyd_columnar::choose_log_layout(
            &sample[..sample
                .iter()
                .rposition(|&c| c == b'\n')
                .map_or(sample.len(), |c| c + 1)],
            args.level(),
            year,
        ))),
        Some(RecordFormat::Sql) => Some(Format::SqlDump),
        Some(RecordFormat::Jsonl) => {
            glyd_columnar::sniff_json_lines(&sample, whole).map(Format::JsonLines)
        }
    };
    let format = format.map(|f| match f {
        Format::LogLines(d) => Format::LogLines(d.with_log_year(year)),
        f => f,
    });
    let level = args.level();
    let plain = Options {
        level,
        threads: args.threads,
        block_size: args.block_size,
        long: args.long,
    };
    match format {
        // Input that fits in the sample is small: try both and keep the smaller, so record
        // mode never costs more than plain compression.
        Some(d) if whole => {
            let shape = shape(&d);
            let mut w = RecordWriter::new(Vec::new(), d, &opts)?;
            w.write_all(&sample)?;
            let records = w.finish()?;
            let flat = glyd_core::compress(&sample, &plain)?;
            let mut out = out;
            if records.len() <= flat.len() {
                out.write_all(&records)?;
                Ok((sample.len() as u64, out, Stored::Records { shape }))
            } else {
                out.write_all(&flat)?;
                Ok((sample.len() as u64, out, Stored::Plain))
            }
        }
        Some(d) => {
            let shape = shape(&d);
            let mut w = RecordWriter::new(out, d, &opts)?;
            w.write_all(&sample)?;
            let n = pump(reader, &mut w)? + sample.len() as u64;
            Ok((n, w.finish()?, Stored::Records { shape }))
        }
        None => {
            let mut enc = Encoder::new(out, &plain)?;
            enc.write_all(&sample)?;
            let n = pump(reader, &mut enc)? + sample.len() as u64;
            Ok((n, enc.finish()?, Stored::Plain))
        }
    }
}

/// What `glyd -r` writes for `data` held in memory (see `glyd_columnar::auto`).
pub fn compress_in_memory(data: &[u8], level: glyd_core::Level, threads: usize) -> Result<Vec<u8>> {
    Ok(glyd_columnar::auto::compress_records(data, level, threads)?)
}

/// Whether a stream starting with `head` is a record archive.
pub fn is_archive(head: &[u8]) -> bool {
    glyd_columnar::is_archive(head)
}

/// How a log layout reads its time, and why fields have no name.
fn describe_log_fields(o: &mut String, d: &glyd_columnar::Dialect) {
    match d.log_time() {
        Some((i, p)) => {
            let year = if p.has_year() {
                String::new()
            } else {
                format!(
                    "; no year is spelled: {} assumed (--log-year sets it; default the file's modification year)",
                    p.year
                )
            };
            let _ = writeln!(
                o,
                "  time: field {} spelled '{}'{year}; read as written (no time zone applied)",
                i + 1,
                p.describe()
            );
        }
        None => {
            let _ = writeln!(
                o,
                "  time: none (no timestamp starts a token at one place on most lines)"
            );
        }
    }
    let unnamed: Vec<&str> = d.names[..d.columns - 1]
        .iter()
        .filter(|n| n.starts_with('f') && n[1..].parse::<usize>().is_ok())
        .map(String::as_str)
        .collect();
    if !unnamed.is_empty() {
        let _ = writeln!(
            o,
            "  {}: not named (on most lines not a time, a level word, host, process[pid]:, [thread], component: or an id after the time)",
            unnamed.join(", ")
        );
    }
    if !d.names.iter().any(|n| n == "level") {
        let _ = writeln!(
            o,
            "  level: none (no leading field is a severity word such as INFO or ERROR on 90% of lines)"
        );
    }
}

/// Reads the record archive at `path`, or standard input for `-`.
fn open_archive(path: &Path, memory: u64) -> Result<ArchiveReader> {
    let bytes = if path.as_os_str() == "-" {
        let mut b = Vec::new();
        io::stdin().lock().read_to_end(&mut b)?;
        b
    } else if let Some(url) = path.to_str().filter(|p| store::is_url(p)) {
        let mut reader = store::ObjectReader::open(&store::locate(url)?)?;
        let mut b = Vec::with_capacity(reader.len as usize);
        reader
            .read_to_end(&mut b)
            .with_context(|| url.to_string())?;
        b
    } else {
        std::fs::read(path).with_context(|| path.display().to_string())?
    };
    Ok(ArchiveReader::from_bytes(bytes)
        .with_context(|| path.display().to_string())?
        .with_memory_limit(memory))
}

/// `glyd inspect FILE`.
pub fn inspect(path: &Path, memory: u64) -> Result<()> {
    let r = open_archive(path, memory)?;
    let mut o = String::new();
    let (stored, input) = (r.len() as u64, r.input_len());
    let _ = writeln!(
        o,
        "{}: record archive, level {}",
        path.display(),
        glyd_core::level_label(r.level())
    );
    let _ = writeln!(
        o,
        "  {} => {} ({:.2}x), {} rows in {} row groups",
        human_bytes(input),
        human_bytes(stored),
        input as f64 / stored.max(1) as f64,
        r.rows(),
        r.row_groups().len()
    );
    for (k, v) in r.metadata() {
        let _ = writeln!(o, "  {k}: {v}");
    }
    let many = r.tables().len() > 1;
    for (t, table) in r.tables().iter().enumerate() {
        let groups: Vec<(usize, &glyd_columnar::RowGroupMeta)> = r
            .groups_of(t)
            .into_iter()
            .map(|g| (g, &r.row_groups()[g]))
            .collect();
        o.push('\n');
        if many {
            let rows: u64 = groups.iter().map(|(_, g)| g.rows).sum();
            let bytes: u64 = groups.iter().map(|(_, g)| g.input_len).sum();
            let _ = writeln!(
                o,
                "  table {}: {} rows, {} in {} row groups",
                table.name,
                rows,
                human_bytes(bytes),
                groups.len()
            );
        }
        describe_table(&mut o, &r, t, table, &groups)?;
    }
    print(o)
}

/// Prints a table's layout and, per column, its type, codec and sizes.
fn describe_table(
    o: &mut String,
    r: &ArchiveReader,
    t: usize,
    table: &Table,
    groups: &[(usize, &glyd_columnar::RowGroupMeta)],
) -> Result<()> {
    let Some(d) = table.dialect() else {
        let _ = writeln!(
            o,
            "  Arrow table (from Parquet): {} columns; rebuilds as Parquet of the same data",
            table.columns()
        );
        return describe_columns(o, r, t, table, groups);
    };
    match d.style {
        _ if d.delimiter == LINES => {
            let _ = writeln!(o, "  lines of text, as templates and variables");
        }
        Style::Fields => {
            let _ = writeln!(
                o,
                "  log lines: {} leading fields and a message",
                d.columns - 1
            );
            describe_log_fields(o, d);
        }
        Style::Json => {
            let _ = writeln!(o, "  JSON lines: {} keys, each a column", d.columns);
        }
        Style::Sql => {
            let _ = writeln!(
                o,
                "  INSERT statements: {} values a row, each a column",
                d.columns
            );
        }
        Style::Csv | Style::Copy => {
            let delim = match d.delimiter {
                b'\t' => "tab".to_string(),
                c => format!("'{}'", c as char),
            };
            let style = if d.style == Style::Csv {
                "delimited text"
            } else {
                "PostgreSQL COPY text"
            };
            let _ = writeln!(
                o,
                "  {style}: delimiter {delim}, {} columns, {}",
                d.columns,
                if d.header.is_some() {
                    "header row"
                } else {
                    "no header row"
                }
            );
        }
    }
    describe_columns(o, r, t, table, groups)
}

/// Prints, per column of table `t`, its type, codec and sizes, then its verbatim records.
fn describe_columns(
    o: &mut String,
    r: &ArchiveReader,
    t: usize,
    table: &Table,
    groups: &[(usize, &glyd_columnar::RowGroupMeta)],
) -> Result<()> {
    let exceptions: u64 = groups
        .iter()
        .flat_map(|(_, g)| &g.row_streams)
        .filter(|s| s.role == glyd_columnar::RowRole::ExceptionBytes as u8)
        .map(|s| s.stored)
        .sum();
    let _ = writeln!(
        o,
        "  {:<24} {:<12} {:<22} {:>10} {:>10} {:>7}",
        "column", "type", "codec", "raw", "stored", "ratio"
    );
    let schema = r.table_schema(t)?;
    let name = |b: usize| {
        schema
            .fields()
            .get(b)
            .map_or_else(|| format!("column {b}"), |f| f.name().clone())
    };
    // The schema's last field past the table's columns is `_raw`, described below.
    for (i, field) in schema.fields().iter().take(table.columns()).enumerate() {
        let (mut raw, mut st, mut distinct, mut nulls) = (0u64, 0u64, 0u64, 0u64);
        let mut codings: Vec<Coding> = Vec::new();
        for &(g, meta) in groups {
            let c = &meta.columns[i];
            raw += c.raw_bytes;
            st += c.stored();
            nulls += c.stats.nulls;
            distinct = distinct.max(c.stats.distinct.unwrap_or(0));
            let coding = r.coding(g, i)?;
            if !codings.contains(&coding) {
                codings.push(coding);
            }
        }
        let codec = match codings.as_slice() {
            [Coding::Dictionary] => format!("dictionary (≤{distinct})"),
            [c] => c.describe(name),
            [] => "-".to_string(),
            _ => format!("mixed ({} codings)", codings.len()),
        };
        let mut ty = field.data_type().to_string();
        if ty.chars().count() > 24 {
            // Nested types spell their whole tree: the head says enough in a table.
            ty = ty.chars().take(23).collect::<String>() + "…";
        }
        if nulls > 0 {
            ty.push('?');
        }
        let _ = writeln!(
            o,
            "  {:<24} {:<12} {:<22} {:>10} {:>10} {:>6.1}x",
            field.name(),
            ty,
            codec,
            human_bytes(raw),
            human_bytes(st),
            raw as f64 / st.max(1) as f64
        );
    }
    if let Some(raw) = schema.fields().get(table.columns()) {
        let _ = writeln!(
            o,
            "  {:<24} {:<12} {:<22} {:>10} {:>10}",
            raw.name(),
            "Utf8?",
            "verbatim records",
            "",
            human_bytes(exceptions)
        );
    }
    describe_verbatim(
        o,
        r,
        groups,
        schema.fields().get(table.columns()).map(|f| f.name()),
    );
    Ok(())
}

/// Prints how many of a table's rows are verbatim records, in total and per row group that has
/// any (the first 20 of those).
fn describe_verbatim(
    o: &mut String,
    r: &ArchiveReader,
    groups: &[(usize, &glyd_columnar::RowGroupMeta)],
    raw: Option<&String>,
) {
    let counts: Vec<(usize, u64, u64)> = groups
        .iter()
        .map(|&(g, meta)| (g, r.verbatim_rows(g), meta.rows))
        .collect();
    let total: u64 = counts.iter().map(|c| c.1).sum();
    let rows: u64 = counts.iter().map(|c| c.2).sum();
    let Some(raw) = raw.filter(|_| total > 0) else {
        return;
    };
    let _ = writeln!(
        o,
        "  verbatim rows: {total} of {rows} (input no column layout holds exactly; their text \
         is in {raw}, every other column NULL)"
    );
    let with: Vec<_> = counts.iter().filter(|c| c.1 > 0).collect();
    for (g, v, n) in with.iter().take(20) {
        let _ = writeln!(o, "    row group {g}: {v} of {n} rows verbatim");
    }
    if with.len() > 20 {
        let _ = writeln!(o, "    … and {} more row groups", with.len() - 20);
    }
}

/// `glyd cat [--table T] [--columns a,b] [--format csv|jsonl] FILE`.
pub fn cat(
    path: &Path,
    table: Option<&str>,
    columns: &[String],
    format: CatFormat,
    memory: u64,
) -> Result<()> {
    let r = open_archive(path, memory)?;
    let t = match table {
        Some(name) => r
            .table_index(name)
            .with_context(|| path.display().to_string())?,
        None if r.tables().len() == 1 => 0,
        None => anyhow::bail!(
            "{}: the archive holds {} tables ({}); choose one with --table NAME",
            path.display(),
            r.tables().len(),
            r.tables()
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    // The table as SQL reads it: verbatim records are rows too, their text in `_raw`.
    let schema = r
        .table_schema(t)
        .with_context(|| path.display().to_string())?;
    let all: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let projection: Vec<usize> = if columns.is_empty() {
        (0..all.len()).collect()
    } else {
        columns
            .iter()
            .map(|c| {
                all.iter().position(|n| n == c).with_context(|| {
                    format!(
                        "{}: no column named {c:?} in table {}; it has {}",
                        path.display(),
                        r.tables()[t].name,
                        all.join(", ")
                    )
                })
            })
            .collect::<Result<_>>()?
    };
    if format == CatFormat::Parquet {
        return cat_parquet(&r, t, &projection, path);
    }
    let names: Vec<String> = projection.iter().map(|&i| all[i].to_string()).collect();
    let mut out = Output::stdout();
    let mut line = Vec::new();
    if format == CatFormat::Csv {
        for (k, n) in names.iter().enumerate() {
            if k > 0 {
                line.push(b',');
            }
            csv_field(&mut line, n.as_bytes());
        }
        line.push(b'\n');
    }
    let keys: Vec<Vec<u8>> = names.iter().map(|n| json_string(n.as_bytes())).collect();
    let mut cell = Vec::new();
    for g in r.groups_of(t) {
        let batches = r
            .read(Some(&projection), g..g + 1)
            .with_context(|| path.display().to_string())?;
        for b in &batches {
            let cells = b
                .columns()
                .iter()
                .map(|c| glyd_columnar::Cells::new(c.as_ref()))
                .collect::<glyd_columnar::Result<Vec<_>>>()
                .with_context(|| path.display().to_string())?;
            for row in 0..b.num_rows() {
                if format == CatFormat::Jsonl {
                    line.push(b'{');
                }
                for (k, col) in cells.iter().enumerate() {
                    cell.clear();
                    let v = col.spell(row, &mut cell);
                    match format {
                        CatFormat::Csv => {
                            if k > 0 {
                                line.push(b',');
                            }
                            if v.is_some() {
                                csv_field(&mut line, &cell);
                            }
                        }
                        CatFormat::Parquet => unreachable!("written by cat_parquet"),
                        CatFormat::Jsonl => {
                            if k > 0 {
                                line.push(b',');
                            }
                            line.extend_from_slice(&keys[k]);
                            line.push(b':');
                            match v {
                                None => line.extend_from_slice(b"null"),
                                Some(true) => line.extend_from_slice(&cell),
                                Some(false) => line.extend_from_slice(&json_string(&cell)),
                            }
                        }
                    }
                }
                line.extend_from_slice(if format == CatFormat::Jsonl {
                    b"}\n"
                } else {
                    b"\n"
                });
                if line.len() > 1 << 16 {
                    out.write_all(&line)?;
                    line.clear();
                }
            }
        }
    }
    out.write_all(&line)?;
    out.commit()
}

/// `glyd cat --format parquet`: the projected columns of table `t` as one Parquet file on
/// standard output, a row group of the archive at a time.
#[cfg(feature = "sql")]
fn cat_parquet(r: &ArchiveReader, t: usize, projection: &[usize], path: &Path) -> Result<()> {
    use std::io::IsTerminal;
    if io::stdout().is_terminal() {
        anyhow::bail!("--format parquet writes binary: redirect standard output to a file");
    }
    let named = || path.display().to_string();
    let schema = r.table_schema(t).with_context(named)?.project(projection)?;
    let mut out = Output::stdout();
    let mut w = crate::output::parquet_writer(&mut out, std::sync::Arc::new(schema))?;
    for g in r.groups_of(t) {
        for b in r.read(Some(projection), g..g + 1).with_context(named)? {
            w.write(&b)?;
        }
    }
    w.close()?;
    out.commit()
}

#[cfg(not(feature = "sql"))]
fn cat_parquet(_: &ArchiveReader, _: usize, _: &[usize], _: &Path) -> Result<()> {
    anyhow::bail!("this glyd was built without the sql feature, which writes Parquet")
}

/// A CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
fn csv_field(out: &mut Vec<u8>, v: &[u8]) {
    if v.iter().any(|&c| matches!(c, b',' | b'"' | b'\n' | b'\r')) {
        glyd_columnar::put_csv_quoted(out, v);
    } else {
        out.extend_from_slice(v);
    }
}

/// A JSON string literal of `v` (invalid UTF-8 replaced).
fn json_string(v: &[u8]) -> Vec<u8> {
    let s = String::from_utf8_lossy(v);
    let mut out = Vec::with_capacity(s.len() + 2);
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            c if (c as u32) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes())
            }
            c => {
                let mut b = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
    out.push(b'"');
    out
}
