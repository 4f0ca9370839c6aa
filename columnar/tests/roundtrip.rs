//! Record archives round-trip byte for byte: every corpus file (sniffed, or forced through a
//! dialect it does not fit), random delimited text with hostile quoting and line endings, and
//! row groups small enough that every input spans many of them. Both readers are checked: the
//! indexed one and the streaming one.

use std::io::Write;
use std::path::PathBuf;

use glyd_columnar::model::{Style, LINES, LOG_FIELDS};
use glyd_columnar::predicate::TextTest;
use glyd_columnar::{rebuild, sniff, ArchiveReader, Dialect, Format, RecordWriter, WriteOptions};
use glyd_core::Level;
use proptest::prelude::*;

/// The files of corpus folder `dir`: empty where the corpus is missing and not required (the
/// testkit has said why on stderr).
fn corpus(dir: &str) -> Vec<PathBuf> {
    glyd_testkit::corpus(dir).unwrap_or_default()
}

fn write(src: &[u8], f: impl Into<Format>, opts: &WriteOptions, piece: usize) -> Vec<u8> {
    let mut w = RecordWriter::new(Vec::new(), f, opts).unwrap();
    for part in src.chunks(piece.max(1)) {
        w.write_all(part).unwrap();
    }
    w.finish().unwrap()
}

/// Archive `src` in format `f` (fed `piece` bytes at a time), then rebuild it both ways and
/// compare bytes, and read every table as Arrow.
fn check(src: &[u8], f: impl Into<Format>, opts: &WriteOptions, piece: usize) -> Vec<u8> {
    let archive = write(src, f, opts, piece);
    let reader = ArchiveReader::from_bytes(archive.clone()).unwrap();
    let mut back = Vec::new();
    assert_eq!(reader.rebuild_to(&mut back).unwrap(), src.len() as u64);
    assert!(back == src, "indexed rebuild differs");
    // On one thread, each row group's bytes are passed on as they come.
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    back.clear();
    one_thread.install(|| reader.rebuild_to(&mut back)).unwrap();
    assert!(back == src, "indexed rebuild on one thread differs");
    let mut streamed = Vec::new();
    rebuild(&archive[..], &mut streamed).unwrap();
    assert!(streamed == src, "streaming rebuild differs");
    // Every column of every table reads as Arrow, with every row.
    let mut rows = 0;
    for (g, meta) in reader.row_groups().iter().enumerate() {
        let batches = reader.read(None, g..g + 1).unwrap();
        assert_eq!(batches[0].num_rows() as u64, meta.rows);
        assert_eq!(
            batches[0].schema(),
            reader.table_schema(meta.table).unwrap()
        );
        rows += meta.rows;
    }
    assert_eq!(rows, reader.rows());
    archive
}

#[test]
fn corpus_logs_and_csvs_round_trip_and_beat_plain_compression() {
    for path in corpus("loghub") {
        let src = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let d = sniff(&src, true).unwrap_or_else(|| panic!("{name} not sniffed"));
        // Every loghub log opens its lines with fields (a date, a time, a level).
        let want = if name.ends_with(".csv") {
            b','
        } else {
            LOG_FIELDS
        };
        assert_eq!(
            d.delimiter, want,
            "{name} sniffed as {:?}",
            d.delimiter as char
        );
        let archive = check(&src, d, &WriteOptions::default(), src.len());
        assert_no_exceptions(&archive, &name);
        let plain = glyd_core::compress(&src, &glyd_core::Options::default()).unwrap();
        assert!(
            archive.len() < plain.len(),
            "{name}: record archive {} bytes, plain {}",
            archive.len(),
            plain.len()
        );
    }
}

#[test]
fn any_input_survives_a_dialect_that_does_not_fit() {
    let mut files = corpus("loghub");
    files.extend(corpus("sakila"));
    for path in files.iter().step_by(3) {
        let src = std::fs::read(path).unwrap();
        let d = Dialect {
            delimiter: b' ',
            style: Style::Csv,
            columns: 4,
            header: None,
            log_fields: Vec::new(),
            names: (1..=4).map(|i| format!("c{i}")).collect(),
        };
        let opts = WriteOptions {
            level: Level::Lz,
            threads: 2,
            row_group_size: 16 << 10,
        };
        check(&src, d, &opts, 5000);
    }
}

#[test]
fn streamed_in_small_pieces_many_row_groups() {
    let Some(path) = glyd_testkit::corpus_file("loghub/HDFS_2k.log_structured.csv") else {
        return;
    };
    let src = std::fs::read(path).unwrap();
    let d = sniff(&src, true).unwrap();
    let opts = WriteOptions {
        level: Level::Fast,
        threads: 3,
        row_group_size: 1 << 10,
    };
    let archive = check(&src, d, &opts, 777);
    let reader = ArchiveReader::from_bytes(archive).unwrap();
    assert!(reader.row_groups().len() > 100);
    // A projection of one column over a range of row groups.
    let col = reader.column_index("Level").unwrap();
    let batches = reader.read(Some(&[col]), 3..9).unwrap();
    assert_eq!(batches.len(), 6);
    assert_eq!(batches[0].schema().field(0).name(), "Level");
}

/// Arrow reads give each row's value: dictionary text of one-byte and longer (multi-byte
/// UTF-8) entries, integers and decimals with and without nulls.
#[test]
fn columns_read_as_arrow_hold_each_rows_value() {
    let flags = ["A", "N", "R"];
    let words = ["naïve", "x", "façade", "zz"];
    let mut src = b"flag,word,n,price,maybe,note\n".to_vec();
    let mut expect = Vec::new();
    for i in 0..3000usize {
        let maybe = (i % 7 != 0).then_some(i as i64 * 3 - 4000);
        let row = (
            flags[i % 3],
            words[i * 7 % 4],
            i as i64 - 1500,
            100 + (i * 37 % 9000) as i128,
            maybe,
        );
        let m = maybe.map_or(String::new(), |v| v.to_string());
        let price = format!("{}.{:02}", row.3 / 100, row.3 % 100);
        src.extend_from_slice(
            format!(
                "{},{},{},{price},{m},note {i} ü{}\n",
                row.0,
                row.1,
                row.2,
                i * i
            )
            .as_bytes(),
        );
        expect.push(row);
    }
    let d = sniff(&src, true).unwrap();
    let archive = check(&src, d, &WriteOptions::default(), 1 << 20);
    let reader = ArchiveReader::from_bytes(archive).unwrap();
    let whole = reader.read(None, 0..reader.row_groups().len()).unwrap();
    // The same rows a batch of 700 at a time (ranges across the chunks, nulls included).
    let mut sliced = Vec::new();
    for g in 0..reader.row_groups().len() {
        for b in reader.read_batches(None, g, 700, false).unwrap() {
            let b = b.unwrap();
            assert!(b.num_rows() <= 700);
            sliced.push(b);
        }
    }
    // And with text as string views, as SQL scans read it.
    let mut views = Vec::new();
    for g in 0..reader.row_groups().len() {
        for b in reader.read_batches(None, g, 700, true).unwrap() {
            let b = b.unwrap();
            assert_eq!(
                b.schema().field(0).data_type(),
                &arrow_schema::DataType::Utf8View
            );
            views.push(b);
        }
    }
    for batches in [whole, sliced, views] {
        check_rows(&batches, &expect);
    }
}

/// A column of integers in one row group and words in the next reads as text (the values'
/// spellings) in both, whole or a batch at a time, as Utf8 or as string views.
#[test]
fn a_column_whose_kind_differs_between_row_groups_reads_as_its_spellings() {
    let mut src = b"id,v\n".to_vec();
    let mut expect = Vec::new();
    for i in 0..4000usize {
        let v = if i < 2000 {
            format!("{}", i * 3)
        } else {
            format!("w{i}")
        };
        src.extend_from_slice(format!("{i},{v}\n").as_bytes());
        expect.push(v);
    }
    let opts = WriteOptions {
        row_group_size: src.len() / 2,
        ..WriteOptions::default()
    };
    let archive = check(&src, sniff(&src, true).unwrap(), &opts, 1 << 20);
    let reader = ArchiveReader::from_bytes(archive).unwrap();
    assert!(reader.row_groups().len() >= 2);
    for views in [false, true] {
        let mut row = 0;
        for g in 0..reader.row_groups().len() {
            for b in reader.read_batches(None, g, 300, views).unwrap() {
                let b = b.unwrap();
                let want = match views {
                    true => arrow_schema::DataType::Utf8View,
                    false => arrow_schema::DataType::Utf8,
                };
                assert_eq!(b.schema().field(1).data_type(), &want);
                for k in 0..b.num_rows() {
                    assert_eq!(text(b.column(1), k), expect[row], "row {row}");
                    row += 1;
                }
            }
        }
        assert_eq!(row, expect.len());
    }
}

/// Row `k` of a Utf8 or Utf8View column.
fn text(a: &dyn arrow_array::Array, k: usize) -> &str {
    use arrow_array::cast::AsArray;
    match a.data_type() {
        arrow_schema::DataType::Utf8View => a.as_string_view().value(k),
        _ => a.as_string::<i32>().value(k),
    }
}

type Row = (&'static str, &'static str, i64, i128, Option<i64>);

fn check_rows(batches: &[arrow_array::RecordBatch], expect: &[Row]) {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Decimal128Type, Int64Type};
    use arrow_array::Array;
    let mut row = 0;
    for b in batches {
        let (flag, word) = (b.column(0), b.column(1));
        let n = b.column(2).as_primitive::<Int64Type>();
        let price = b.column(3).as_primitive::<Decimal128Type>();
        let maybe = b.column(4).as_primitive::<Int64Type>();
        let note = b.column(5);
        for k in 0..b.num_rows() {
            let e = expect[row];
            let (f, w) = (text(flag, k), text(word, k));
            assert_eq!((f, w, n.value(k)), (e.0, e.1, e.2), "row {row}");
            assert_eq!(price.value(k), e.3, "row {row}");
            assert_eq!(maybe.is_valid(k).then(|| maybe.value(k)), e.4, "row {row}");
            assert_eq!(text(note, k), format!("note {row} ü{}", row * row));
            row += 1;
        }
    }
    assert_eq!(row, expect.len());
}

/// One write of a whole input is taken a batch of row groups at a time (many row groups, none
/// larger than asked); a line longer than a batch waits for its end and still round-trips.
#[test]
fn one_large_write_and_a_line_longer_than_a_batch() {
    let mut src = Vec::new();
    for i in 0..2000 {
        src.extend_from_slice(format!("{i},INFO,worker {} done\n", i % 7).as_bytes());
    }
    let d = sniff(&src, true).unwrap();
    let opts = WriteOptions {
        level: Level::Fast,
        threads: 2,
        row_group_size: 1 << 10,
    };
    let archive = check(&src, d.clone(), &opts, src.len());
    let reader = ArchiveReader::from_bytes(archive).unwrap();
    assert!(reader.row_groups().len() > 20);
    assert!(reader.row_groups().iter().all(|g| g.input_len <= 1 << 10));
    // A 10 KiB line in the middle, 5x the batch (row group size x threads).
    let mut long = src[..src.len() / 2].to_vec();
    long.extend_from_slice(b"7,WARN,");
    long.extend(std::iter::repeat_n(b'x', 10 << 10));
    long.push(b'\n');
    long.extend_from_slice(&src[src.len() / 2..]);
    check(&long, d, &opts, long.len());
}

fn dialect(delimiter: u8, columns: usize, header: Option<&[u8]>) -> Dialect {
    Dialect {
        delimiter,
        style: Style::Csv,
        columns,
        header: header.map(<[u8]>::to_vec),
        log_fields: Vec::new(),
        names: (1..=columns).map(|i| format!("c{i}")).collect(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Bytes from an alphabet of delimiters, quotes, line endings, digits, signs, points and
    /// dashes: every kind of field and every way to break one.
    #[test]
    fn random_delimited_text_round_trips(
        src in proptest::collection::vec(
            prop_oneof![
                Just(b','), Just(b'"'), Just(b'\n'), Just(b'\r'), Just(b'1'), Just(b'0'),
                Just(b'-'), Just(b'.'), Just(b'a'), Just(b'\t'), Just(0xC3), Just(0xA9),
                Just(b' '), Just(0x01), Just(0),
            ],
            0..600,
        ),
        columns in 1usize..5,
        delimiter in prop_oneof![Just(b','), Just(b'\t'), Just(LINES), Just(LOG_FIELDS)],
        piece in 1usize..200,
    ) {
        let d = match delimiter {
            LINES => Dialect::lines(),
            LOG_FIELDS => Dialect::log_fields(columns),
            _ => dialect(delimiter, columns, None),
        };
        let opts = WriteOptions { level: Level::Fast, threads: 1, row_group_size: 1 << 10 };
        check(&src, d, &opts, piece);
    }

    /// Well-formed CSV with typed columns, nulls, quoting and mixed line endings, behind a
    /// header: mostly rows, few exceptions.
    #[test]
    fn generated_csv_round_trips(
        rows in proptest::collection::vec(
            (any::<i32>(), -100000i64..100000, "[a-z ,\"]{0,8}", any::<bool>(), 0u8..3, any::<bool>()),
            0..200,
        ),
        last_newline in any::<bool>(),
    ) {
        let mut src = b"id,amount,note\n".to_vec();
        for (i, (id, cents, note, quote, end, null)) in rows.iter().enumerate() {
            if *null {
                src.extend_from_slice(format!("{id},,").as_bytes());
            } else {
                let sign = if *cents < 0 { "-" } else { "" };
                let c = cents.unsigned_abs();
                src.extend_from_slice(format!("{id},{sign}{}.{:02},", c / 100, c % 100).as_bytes());
            }
            if *quote || note.contains(['"', ',']) {
                src.extend_from_slice(format!("\"{}\"", note.replace('"', "\"\"")).as_bytes());
            } else {
                src.extend_from_slice(note.as_bytes());
            }
            if i + 1 < rows.len() || last_newline {
                src.extend_from_slice(if *end == 1 { b"\r\n" } else { b"\n" });
            }
        }
        let d = sniff(&src, true).unwrap_or_else(|| dialect(b',', 3, Some(b"id,amount,note\n")));
        let opts = WriteOptions { level: Level::Max, threads: 2, row_group_size: 2 << 10 };
        check(&src, d, &opts, 4096);
    }
}

/// A SQL dump's COPY blocks rewritten as INSERT statements of `rows_per_insert` tuples, in
/// PostgreSQL (`''`) or MySQL (`\'`, backquoted names) quoting; `\N` becomes `NULL`, numbers
/// stay bare, every other value is a string of the COPY text as it was. Each statement is a
/// line, or with `multiline` a line per tuple after `VALUES`, as `pg_dump --rows-per-insert`
/// writes them.
fn copy_dump_as_inserts(
    src: &[u8],
    rows_per_insert: usize,
    mysql: bool,
    multiline: bool,
) -> Vec<u8> {
    let text = std::str::from_utf8(src).unwrap();
    let mut out = String::new();
    let mut table: Option<String> = None;
    let mut pending: Vec<String> = Vec::new();
    let flush = |out: &mut String, table: &str, pending: &mut Vec<String>| {
        if !pending.is_empty() {
            let (before, sep) = match (multiline, mysql) {
                (true, _) => ("\n\t", ",\n\t"),
                (false, true) => (" ", ","),
                (false, false) => (" ", ", "),
            };
            out.push_str(&format!(
                "INSERT INTO {table} VALUES{before}{};\n",
                pending.join(sep)
            ));
            pending.clear();
        }
    };
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches('\n');
        match &table {
            Some(t) if bare == "\\." => {
                flush(&mut out, t, &mut pending);
                table = None;
            }
            Some(t) => {
                let values: Vec<String> = bare
                    .split('\t')
                    .map(|v| {
                        if v == "\\N" {
                            "NULL".to_string()
                        } else if !v.is_empty() && v.parse::<f64>().is_ok() && !v.starts_with('0') {
                            v.to_string()
                        } else if mysql {
                            format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"))
                        } else {
                            format!("'{}'", v.replace('\'', "''"))
                        }
                    })
                    .collect();
                pending.push(format!("({})", values.join(if mysql { "," } else { ", " })));
                if pending.len() == rows_per_insert {
                    flush(&mut out, t, &mut pending);
                }
            }
            None => match line.strip_prefix("COPY ").and_then(|l| l.split_once(' ')) {
                Some((name, _)) => {
                    let name = if mysql {
                        format!("`{}`", name.trim_start_matches("public."))
                    } else {
                        name.to_string()
                    };
                    table = Some(name);
                }
                None => out.push_str(line),
            },
        }
    }
    out.into_bytes()
}

#[test]
fn sql_dump_insert_lines_become_typed_tables() {
    let Some(path) = glyd_testkit::corpus_file("sakila/postgres-sakila-insert-data-using-copy.sql")
    else {
        return;
    };
    let copy = std::fs::read(path).unwrap();
    let opts = WriteOptions::default();
    let copy_archive = check(&copy, Format::SqlDump, &opts, 1 << 20);
    for (rows_per_insert, mysql, multiline, payment) in [
        (1, false, false, "public.payment"),
        (50, true, false, "`payment`"),
        (100, false, true, "public.payment"),
    ] {
        let src = copy_dump_as_inserts(&copy, rows_per_insert, mysql, multiline);
        assert!(glyd_columnar::detect(&src[..1 << 20], false) == Some(Format::SqlDump));
        let archive = check(&src, Format::SqlDump, &opts, 100_003);
        assert_no_exceptions(&archive, payment);
        let r = ArchiveReader::from_bytes(archive.clone()).unwrap();
        let t = r.table_index(payment).unwrap();
        assert_eq!(r.tables()[t].dialect().unwrap().style, Style::Sql);
        let schema = r.table_schema(t).unwrap();
        assert_eq!(
            schema.field(4).data_type(),
            &arrow_schema::DataType::Decimal128(18, 2),
            "{schema:?}"
        );
        let rows: u64 = r.groups_of(t).iter().map(|&g| r.row_groups()[g].rows).sum();
        assert_eq!(rows, 16049);
        // The statements' text costs next to nothing beside the COPY dump's archive.
        assert!(
            archive.len() < copy_archive.len() * 11 / 10,
            "{rows_per_insert} rows per INSERT: {} bytes, COPY {}",
            archive.len(),
            copy_archive.len()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// INSERT lines of one or more tuples, in either quoting, with odd spacing, NULLs,
    /// lines of the wrong width, unparsable values and CRLF ends, between statements; and
    /// INSERT statements over several lines, some never ended.
    #[test]
    fn generated_insert_dumps_round_trip(
        lines in proptest::collection::vec(
            (
                0usize..3,
                proptest::collection::vec(
                    (any::<i16>(), "[a-z\\\\\"' ]{0,6}", 0u8..4),
                    1..5,
                ),
                0u8..8,
            ),
            0..40,
        ),
        piece in 1usize..300,
    ) {
        let mut src = b"SET client_encoding = 'UTF8';\n".to_vec();
        for (table, tuples, odd) in &lines {
            let mysql = odd % 2 == 1;
            let tuples: Vec<String> = tuples
                .iter()
                .map(|(id, note, null)| {
                    let note = match (null, mysql) {
                        (0, _) => "NULL".to_string(),
                        (_, true) => format!("'{}'", note.replace('\\', "\\\\").replace('\'', "\\'")),
                        (_, false) => format!("'{}'", note.replace('\'', "''")),
                    };
                    match null {
                        3 => format!("( {id} ,{note})"),
                        _ => format!("({id}, {note})"),
                    }
                })
                .collect();
            let line = format!("INSERT INTO t{table} VALUES {};", tuples.join(","));
            // Statements over several lines: a tuple a line, LF or CRLF, or never ended.
            let multi = |end: &str, last: &str| {
                format!("INSERT INTO t{table} VALUES{end}  {}{last}{end}", tuples.join(&format!(",{end}  ")))
            };
            match odd {
                0 => src.extend_from_slice(format!("{line}\r\n").as_bytes()),
                2 => src.extend_from_slice(format!("{}\n", line.replace(", ", ", now(), ")).as_bytes()),
                4 => src.extend_from_slice(format!("-- {line}\n").as_bytes()),
                5 => src.extend_from_slice(multi("\n", ";").as_bytes()),
                6 => src.extend_from_slice(multi("\r\n", " ;").as_bytes()),
                7 => src.extend_from_slice(multi("\n", "").as_bytes()),
                _ => src.extend_from_slice(format!("{line}\n").as_bytes()),
            }
        }
        let opts = WriteOptions { level: Level::Fast, threads: 2, row_group_size: 1 << 10 };
        check(&src, Format::SqlDump, &opts, piece);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Log lines of a date, a time, a padded process id, a level and a message, with odd
    /// spacing, short lines, blank lines and CRLF ends, under the layout glyd chooses.
    #[test]
    fn generated_log_lines_round_trip(
        rows in proptest::collection::vec(
            (0u32..86_400_000, 1u32..99_999, 0usize..4, "[a-z=0-9 ]{0,20}", 0u8..10),
            1..120,
        ),
        piece in 1usize..700,
    ) {
        let mut src = Vec::new();
        for (ms, pid, level, msg, odd) in &rows {
            let (s, ms) = (ms / 1000, ms % 1000);
            let line = format!(
                "2024-03-17 {:02}:{:02}:{:02}.{ms:03} {pid:>5} {} {msg}",
                s / 3600, s / 60 % 60, s % 60, ["I", "W", "E", "D"][*level]
            );
            match odd {
                0 => src.extend_from_slice(&line.as_bytes()[..line.len() / 3]),
                1 => src.extend_from_slice(format!("  {line}\t").as_bytes()),
                2 => {}
                _ => src.extend_from_slice(line.as_bytes()),
            }
            src.extend_from_slice(if *odd == 3 { b"\r\n" } else { b"\n" });
        }
        let d = glyd_columnar::detect(&src, true).unwrap_or(Format::from(Dialect::lines()));
        let opts = WriteOptions { level: Level::Fast, threads: 2, row_group_size: 1 << 10 };
        check(&src, d, &opts, piece);
    }
}

#[test]
fn a_row_group_of_only_exceptions_reads_as_rows_of_raw_text() {
    // The first row group holds lines of the wrong width only; the next ones typed rows.
    let mut src = b"odd line without delimiters\n".repeat(60);
    for i in 0..300 {
        src.extend_from_slice(format!("{i},{}.5\n", i * 2).as_bytes());
    }
    let opts = WriteOptions {
        level: Level::Fast,
        threads: 1,
        row_group_size: 1 << 10,
    };
    let archive = check(&src, dialect(b',', 2, None), &opts, 1 << 20);
    let r = ArchiveReader::from_bytes(archive).unwrap();
    // Every line is a row: the odd ones null but for their text in `_raw`.
    let g = &r.row_groups()[0];
    assert!(g.rows > 0);
    assert_eq!(r.verbatim_rows(0), g.rows);
    let schema = r.schema();
    assert_eq!(schema.field(0).data_type(), &arrow_schema::DataType::Int64);
    assert_eq!(
        schema.field(schema.fields().len() - 1).name(),
        glyd_columnar::RAW
    );
    let batches = r.read(None, 0..r.row_groups().len()).unwrap();
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, 360);
    let raw: usize = batches
        .iter()
        .map(|b| b.num_rows() - b.column(2).null_count())
        .sum();
    let ids: usize = batches
        .iter()
        .map(|b| b.num_rows() - b.column(0).null_count())
        .sum();
    assert_eq!((raw, ids), (60, 300));
    let first = batches[0]
        .column(2)
        .as_any()
        .downcast_ref::<arrow_array::StringArray>();
    assert_eq!(first.unwrap().value(0), "odd line without delimiters");
}

#[test]
fn sql_dump_copy_blocks_become_typed_tables() {
    let Some(path) = glyd_testkit::corpus_file("sakila/postgres-sakila-insert-data-using-copy.sql")
    else {
        return;
    };
    let src = std::fs::read(path).unwrap();
    // Fed in odd pieces so COPY lines and `\.` are cut across writes.
    let opts = WriteOptions {
        level: Level::Max,
        threads: 2,
        row_group_size: 256 << 10,
    };
    let archive = check(&src, Format::SqlDump, &opts, 100_003);
    assert_no_exceptions(&archive, "sakila");
    let r = ArchiveReader::from_bytes(archive.clone()).unwrap();
    let names: Vec<&str> = r.tables().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names.len(), 16, "{names:?}");
    assert_eq!(names[0], "statements");
    let payment = r.table_index("public.payment").unwrap();
    let schema = r.table_schema(payment).unwrap();
    let field = |n: &str| schema.field_with_name(n).unwrap().data_type().clone();
    assert_eq!(field("payment_id"), arrow_schema::DataType::Int64);
    assert_eq!(field("amount"), arrow_schema::DataType::Decimal128(18, 2));
    let groups = r.groups_of(payment);
    assert!(groups.len() >= 2, "payment spans row groups");
    let rows: u64 = groups.iter().map(|&g| r.row_groups()[g].rows).sum();
    assert_eq!(rows, 16049);
    // `\N` is a null, not text: the staff table's picture column is all nulls.
    let staff = r.table_index("public.staff").unwrap();
    let g = r.groups_of(staff)[0];
    let pic = r.column_index_in(staff, "picture").unwrap();
    let batch = &r.read(Some(&[pic]), g..g + 1).unwrap()[0];
    assert_eq!(batch.column(0).null_count(), 2);
    // Reading across tables is refused with a clear error.
    let err = r.read(None, 0..r.row_groups().len()).unwrap_err();
    assert!(
        err.to_string().contains("read one table at a time"),
        "{err}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Dumps of random statements and COPY blocks whose rows have nulls, escapes, empty
    /// strings, wrong widths and CRLF ends, fed in random pieces.
    #[test]
    fn generated_sql_dumps_round_trip(
        blocks in proptest::collection::vec(
            (
                0usize..3,
                proptest::collection::vec(
                    (any::<i16>(), "[a-z\\\\\"' ]{0,6}", 0u8..4, 0u8..6),
                    0..40,
                ),
            ),
            0..6,
        ),
        piece in 1usize..300,
        end_cut in any::<bool>(),
    ) {
        let mut src = b"SET client_encoding = 'UTF8';\n".to_vec();
        for (table, rows) in &blocks {
            src.extend_from_slice(format!("-- table {table}\nCOPY public.t{table} (id, note) FROM stdin;\n").as_bytes());
            for (id, note, null, odd) in rows {
                let note = if *null == 0 { "\\N".to_string() } else { note.clone() };
                match odd {
                    0 => src.extend_from_slice(format!("{id}\t{note}\textra\n").as_bytes()),
                    1 => src.extend_from_slice(format!("{id}\t{note}\r\n").as_bytes()),
                    _ => src.extend_from_slice(format!("{id}\t{note}\n").as_bytes()),
                }
            }
            src.extend_from_slice(b"\\.\n\n");
        }
        if end_cut {
            src.truncate(src.len().saturating_sub(3));
        }
        let opts = WriteOptions { level: Level::Fast, threads: 2, row_group_size: 1 << 10 };
        check(&src, Format::SqlDump, &opts, piece);
    }
}

/// A loghub structured CSV as JSON lines (numbers bare, everything else a string), the way
/// `benches/corpus/to_jsonl.py` writes them.
fn csv_as_jsonl(src: &[u8]) -> Vec<u8> {
    let d = sniff(src, true).unwrap();
    let names = d.names.clone();
    let mut w = RecordWriter::new(Vec::new(), d, &WriteOptions::default()).unwrap();
    w.write_all(src).unwrap();
    let r = ArchiveReader::from_bytes(w.finish().unwrap()).unwrap();
    // An integer as the CSV spells it (what to_jsonl.py writes bare; it also takes decimals,
    // which the loghub CSVs do not have).
    let int = |v: &str| {
        let digits = v.strip_prefix('-').unwrap_or(v);
        !digits.is_empty()
            && digits.bytes().all(|c| c.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'))
    };
    let mut out = Vec::new();
    let mut cell = Vec::new();
    for b in r.read(None, 0..r.row_groups().len()).unwrap() {
        let cells: Vec<glyd_columnar::Cells> = b
            .columns()
            .iter()
            .map(|c| glyd_columnar::Cells::new(c.as_ref()).unwrap())
            .collect();
        for row in 0..b.num_rows() {
            out.push(b'{');
            for (i, c) in cells.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(format!("{:?}:", names[i]).as_bytes());
                cell.clear();
                c.spell(row, &mut cell);
                let v = String::from_utf8_lossy(&cell).into_owned();
                if int(&v) {
                    out.extend_from_slice(v.as_bytes());
                } else {
                    out.extend_from_slice(format!("{v:?}").as_bytes());
                }
            }
            out.extend_from_slice(b"}\n");
        }
    }
    out
}

#[test]
fn json_lines_sniff_and_round_trip() {
    for path in corpus("loghub")
        .iter()
        .filter(|p| p.to_string_lossy().ends_with(".csv"))
    {
        let src = csv_as_jsonl(&std::fs::read(path).unwrap());
        let f = glyd_columnar::detect(&src, true).unwrap();
        let Format::JsonLines(d) = &f else {
            panic!("{} not JSON lines", path.display())
        };
        assert_eq!(d.style, Style::Json);
        let archive = check(&src, f, &WriteOptions::default(), 10_007);
        assert_no_exceptions(&archive, &path.display().to_string());
        let plain = glyd_core::compress(&src, &glyd_core::Options::default()).unwrap();
        assert!(
            archive.len() < plain.len(),
            "{}: {} vs plain {}",
            path.display(),
            archive.len(),
            plain.len()
        );
    }
}

/// Asserts that every row of `archive` was shredded: no row group kept any input verbatim
/// (a row group whose columns failed to rebuild is stored whole as an exception).
fn assert_no_exceptions(archive: &[u8], name: &str) {
    let r = ArchiveReader::from_bytes(archive.to_vec()).unwrap();
    for g in r.row_groups() {
        assert!(
            g.row_streams
                .iter()
                .all(|s| s.role != glyd_columnar::RowRole::ExceptionBytes as u8),
            "{name}: row group at {} holds exceptions",
            g.offset
        );
    }
}

#[test]
fn json_lines_of_quoted_dates_link_and_round_trip() {
    // TPC-H lineitem as JSON lines writes dates as strings: typed, quoted, and the receipt
    // date coded against the ship date.
    let mut src = Vec::new();
    for i in 0..3000u32 {
        src.extend_from_slice(
            format!(
                "{{\"key\":{},\"ship\":\"1996-{:02}-{:02}\",\"receipt\":\"1996-{:02}-{:02}\",\"note\":\"n{}\"}}\n",
                i * 7 % 3001,
                i % 12 + 1,
                i % 20 + 1,
                i % 12 + 1,
                i % 20 + 1 + i % 7,
                i % 13
            )
            .as_bytes(),
        );
    }
    let f = glyd_columnar::detect(&src, true).unwrap();
    let archive = check(&src, f, &WriteOptions::default(), 4096);
    assert_no_exceptions(&archive, "quoted dates");
    let r = ArchiveReader::from_bytes(archive).unwrap();
    let field = r.schema().field(2).clone();
    assert_eq!(field.data_type(), &arrow_schema::DataType::Date32);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Objects with keys in any order, missing or repeated, odd spacing, escapes, nulls,
    /// nested values, numbers of every spelling, broken lines and CRLF ends.
    #[test]
    fn generated_json_lines_round_trip(
        rows in proptest::collection::vec(
            (
                proptest::collection::vec(
                    (0usize..5, prop_oneof![
                        Just("null".to_string()),
                        Just("true".to_string()),
                        "-?[0-9]{1,4}(\\.[0-9]{1,3})?(e[0-9])?",
                        "\"[a-z\\\\\" ]{0,5}\"",
                        Just("{\"x\": [1, \"}\"]}".to_string()),
                        Just("\"2024-01-02 03:04:05\"".to_string()),
                    ], prop_oneof![Just(""), Just(" "), Just("\t")]),
                    0..6,
                ),
                0u8..8,
            ),
            1..60,
        ),
        piece in 1usize..500,
    ) {
        let keys = ["id", "ts", "msg", "a\\\"b", "n"];
        let mut src = Vec::new();
        for (fields, odd) in &rows {
            let body: Vec<String> = fields
                .iter()
                .map(|(k, v, sp)| format!("{sp}\"{}\"{sp}:{sp}{v}", keys[*k]))
                .collect();
            let line = format!("{{{}}}", body.join(","));
            match odd {
                0 => src.extend_from_slice(&line.as_bytes()[..line.len() / 2]),
                1 => src.extend_from_slice(format!("{line}\r").as_bytes()),
                _ => src.extend_from_slice(line.as_bytes()),
            }
            src.extend_from_slice(if *odd == 2 { b"\r\n" } else { b"\n" });
        }
        let d = glyd_columnar::sniff_json_lines(&src, true).unwrap_or(Dialect {
            delimiter: glyd_columnar::model::JSON_LINES,
            style: Style::Json,
            columns: 2,
            header: None,
            log_fields: Vec::new(),
            names: vec!["id".into(), "msg".into()],
        });
        let opts = WriteOptions { level: Level::Fast, threads: 2, row_group_size: 1 << 10 };
        check(&src, d, &opts, piece);
    }
}

#[test]
fn detection_picks_the_right_format_on_every_corpus_file() {
    let mut files = corpus("loghub");
    files.extend(corpus("sakila"));
    for path in files {
        let src = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let sample = &src[..src.len().min(1 << 20)];
        let got = glyd_columnar::detect(sample, sample.len() == src.len()).unwrap();
        let ok = match &got {
            Format::SqlDump => name.ends_with(".sql"),
            Format::Delimited(d) => d.delimiter == b',' && name.ends_with(".csv"),
            Format::LogLines(d) => {
                [LINES, LOG_FIELDS].contains(&d.delimiter) && name.ends_with(".log")
            }
            Format::JsonLines(_) | Format::Arrow(_) => false,
        };
        assert!(ok, "{name} detected as {got:?}");
    }
}

/// Text read as Arrow is each value, its format's escapes undone (JSON `\"` and `\u`, COPY
/// `\t`, SQL `''`), while the archive still rebuilds the escapes as spelled.
#[test]
fn text_values_read_as_arrow_without_their_escapes() {
    // Column `c` of table `table` (`records` in a one-table archive), row by row.
    fn values(archive: &[u8], table: &str, c: usize) -> Vec<String> {
        let reader = ArchiveReader::from_bytes(archive.to_vec()).unwrap();
        let table = reader.table_index(table).unwrap();
        let mut out = Vec::new();
        for g in reader.groups_of(table) {
            for views in [false, true] {
                let batches: Vec<_> = reader
                    .read_batches(Some(&[c]), g, 3, views)
                    .unwrap()
                    .map(|b| b.unwrap())
                    .collect();
                let got: Vec<String> = batches
                    .iter()
                    .flat_map(|b| (0..b.num_rows()).map(|k| text(b.column(0), k).to_string()))
                    .collect();
                if views {
                    assert_eq!(got, out[out.len() - got.len()..], "views agree");
                } else {
                    out.extend(got);
                }
            }
            let whole = reader.read(Some(&[c]), g..g + 1).unwrap();
            let n = whole[0].num_rows();
            let got: Vec<String> = (0..n).map(|k| text(whole[0].column(0), k).into()).collect();
            assert_eq!(got, out[out.len() - n..], "read agrees with read_batches");
        }
        out
    }
    let opts = WriteOptions::default();

    let mut jsonl = String::new();
    for i in 0..40 {
        jsonl.push_str(&format!(
            "{{\"id\": {i}, \"msg\": \"say \\\"hi\\\" to caf\\u00e9 {i}\", \"path\": \"a\\\\b\"}}\n"
        ));
    }
    let f = glyd_columnar::detect(jsonl.as_bytes(), true).unwrap();
    let archive = check(jsonl.as_bytes(), f, &opts, 1 << 20);
    assert_eq!(values(&archive, "records", 1)[7], "say \"hi\" to café 7");
    assert!(values(&archive, "records", 2).iter().all(|p| p == "a\\b"));

    let copy = "COPY public.t (id, note) FROM stdin;\n\
                1\tone\\ttab\n2\tback\\\\slash\n3\t\\N\n4\tplain\n\\.\n";
    let archive = check(copy.as_bytes(), Format::SqlDump, &opts, 1 << 20);
    let note = values(&archive, "public.t", 1);
    assert_eq!(note[..2], ["one\ttab", "back\\slash"]);
    assert_eq!(note[3], "plain");

    let inserts = (0..30)
        .map(|i| format!("INSERT INTO public.a VALUES ({i}, 'O''Neil {i}');\n"))
        .collect::<String>();
    let archive = check(inserts.as_bytes(), Format::SqlDump, &opts, 1 << 20);
    assert_eq!(values(&archive, "public.a", 1)[4], "O'Neil 4");

    // A MySQL dump (backquoted names): backslash escapes are undone too.
    let mysql = (0..30)
        .map(|i| format!("INSERT INTO `film` VALUES ({i},'It\\'s {i}','a\\\\b');\n"))
        .collect::<String>();
    let archive = check(mysql.as_bytes(), Format::SqlDump, &opts, 1 << 20);
    assert_eq!(values(&archive, "`film`", 1)[3], "It's 3");
    assert_eq!(values(&archive, "`film`", 2)[3], "a\\b");
}

#[test]
fn rows_kept_on_dictionary_codes_read_as_the_rows_that_pass() {
    // `kind` is a dictionary; `amount` has nulls, so skipping a batch must still move past
    // exactly its present values.
    let mut csv = String::from("id,kind,amount\n");
    let mut want = Vec::new();
    for i in 0..5000 {
        let kind = match i {
            _ if i % 97 == 3 => "beta",
            _ if i % 2 == 0 => "alpha",
            _ => "gamma",
        };
        let amount = if i % 5 == 0 {
            String::new()
        } else {
            format!("{}.{:02}", i / 3, i % 100)
        };
        if kind == "beta" {
            want.push(format!("{i}|{amount}"));
        }
        csv.push_str(&format!("{i},{kind},{amount}\n"));
    }
    let d = sniff(csv.as_bytes(), true).unwrap();
    let archive = check(csv.as_bytes(), d, &WriteOptions::default(), 1 << 20);
    let r = ArchiveReader::from_bytes(archive).unwrap();
    assert!(matches!(
        r.coding(0, 1).unwrap(),
        glyd_columnar::Coding::Dictionary
    ));
    let mut batches = r.read_batches(Some(&[0, 2, 1]), 0, 7, true).unwrap();
    assert!(batches.keep_only(2, &TextTest::Equals(b"beta".to_vec())));
    assert_eq!(batches.rows_kept(), want.len());
    let mut got = Vec::new();
    for b in batches {
        let b = b.unwrap();
        for k in 0..b.num_rows() {
            let amount = arrow_cast::display::array_value_to_string(b.column(1), k).unwrap();
            got.push(format!(
                "{}|{amount}",
                arrow_cast::display::array_value_to_string(b.column(0), k).unwrap()
            ));
            assert_eq!(text(b.column(2), k), "beta");
        }
    }
    assert_eq!(got, want);
    // Decoded on this thread, one chunk after another: the same batches.
    let all = |b: glyd_columnar::GroupBatches| b.map(|b| b.unwrap()).collect::<Vec<_>>();
    assert_eq!(
        all(r.read_batches_here(None, 0, 700, true).unwrap()),
        all(r.read_batches(None, 0, 700, true).unwrap())
    );
    // Typed columns have no dictionary to judge.
    let mut batches = r.read_batches(Some(&[0]), 0, 7, true).unwrap();
    assert!(!batches.keep_only(0, &TextTest::AnyOf(Vec::new())));
    assert_eq!(batches.rows_kept(), 5000);
}

#[test]
fn rows_kept_on_template_codes_read_as_the_rows_that_pass() {
    let Some(path) = glyd_testkit::corpus_file("loghub/OpenSSH_2k.log") else {
        return;
    };
    let src = std::fs::read(&path).unwrap();
    let archive = write(
        &src,
        sniff(&src, true).unwrap(),
        &WriteOptions::default(),
        src.len(),
    );
    let r = ArchiveReader::from_bytes(archive).unwrap();
    let m = r.column_index("message").unwrap();
    let messages = |mut batches: glyd_columnar::GroupBatches| -> Vec<String> {
        let mut out = Vec::new();
        for b in &mut batches {
            let b = b.unwrap();
            out.extend((0..b.num_rows()).map(|k| text(b.column(0), k).to_string()));
        }
        out
    };
    let starts = |p: &str| TextTest::StartsWith(p.as_bytes().to_vec());
    let equals = |w: &str| TextTest::Equals(w.as_bytes().to_vec());
    for g in 0..r.row_groups().len() {
        assert!(matches!(
            r.coding(g, m).unwrap(),
            glyd_columnar::Coding::Templates
        ));
        let all = messages(r.read_batches(Some(&[m]), g, 100, true).unwrap());
        let tests = [
            // Settled by templates alone, and past the first hole (decided row by row).
            starts("Failed password"),
            starts("Failed password for invalid user a"),
            starts("pam_unix(sshd:auth): authentication failure;"),
            equals(&all[17]),
            equals("Received disconnect from 52.80.34.196: 11: Bye Bye [preauth]"),
            TextTest::AnyOf(vec![equals(&all[3]), starts("Connection closed by 1")]),
            starts("no such message"),
        ];
        for test in &tests {
            let want: Vec<&String> = all.iter().filter(|v| test.passes(v.as_bytes())).collect();
            // OpenSSH_2k: 518, 48 and 494 lines; 2 and 135 for the first line (one row group).
            assert!(
                !want.is_empty()
                    || matches!(test, TextTest::StartsWith(p) if p.starts_with(b"no ")),
                "{test:?} matches no line"
            );
            let mut batches = r.read_batches(Some(&[m]), g, 100, true).unwrap();
            assert!(batches.keep_only(0, test), "{test:?}");
            assert_eq!(batches.rows_kept(), want.len(), "{test:?}");
            let got = messages(batches);
            assert_eq!(got.iter().collect::<Vec<_>>(), want, "{test:?}");
        }
    }
}

#[test]
fn short_text_reads_as_views_without_a_buffer() {
    use arrow_array::cast::AsArray;
    // `flag` is a dictionary of one-letter values; `word` plain text of short values; `note`
    // holds a value longer than a view can inline in its second half only.
    let mut csv = String::from("id,flag,word,note\n");
    for i in 0..5000 {
        let flag = ["A", "N", "R"][i % 3];
        let note = if i >= 2500 && i % 97 == 0 {
            format!("a note longer than twelve bytes {i}")
        } else {
            format!("n{i}")
        };
        csv.push_str(&format!("{i},{flag},w{},{note}\n", i * 7919 % 100_003));
    }
    let d = sniff(csv.as_bytes(), true).unwrap();
    let r = ArchiveReader::from_bytes(check(csv.as_bytes(), d, &WriteOptions::default(), 1 << 20))
        .unwrap();
    assert!(matches!(
        r.coding(0, 1).unwrap(),
        glyd_columnar::Coding::Dictionary
    ));
    let mut k = 0;
    for b in r.read_batches(Some(&[1, 2, 3]), 0, 1000, true).unwrap() {
        let b = b.unwrap();
        let [flag, word, note] = [0, 1, 2].map(|c| b.column(c).as_string_view().clone());
        assert!(flag.data_buffers().is_empty());
        assert!(word.data_buffers().is_empty());
        // Only the batches that hold a long note keep the buffer its view points into.
        let long = (k..k + b.num_rows()).any(|i| i >= 2500 && i % 97 == 0);
        assert_eq!(note.data_buffers().is_empty(), !long, "rows from {k}");
        for j in 0..b.num_rows() {
            let i = k + j;
            assert_eq!(flag.value(j), ["A", "N", "R"][i % 3]);
            assert_eq!(word.value(j), format!("w{}", i * 7919 % 100_003));
            assert!(note.value(j).ends_with(&i.to_string()));
        }
        k += b.num_rows();
    }
    assert_eq!(k, 5000);
}

#[test]
fn footer_metadata_comes_back_and_leaves_the_rest_alone() {
    let src = b"{\"a\":1}\n{\"a\":2}\n";
    let d = glyd_columnar::sniff_json_lines(src, true).unwrap();
    let write = |meta: &[(&str, &str)]| {
        let mut w = RecordWriter::new(Vec::new(), d.clone(), &WriteOptions::default()).unwrap();
        for (k, v) in meta {
            w.set_metadata(k, v).unwrap();
        }
        w.write_all(src).unwrap();
        w.finish().unwrap()
    };
    let plain = write(&[]);
    let kept = write(&[
        ("glyd.sink.stream", "app"),
        ("é", ""),
        ("glyd.sink.stream", "web"),
    ]);
    let r = ArchiveReader::from_bytes(kept.clone()).unwrap();
    let meta: Vec<(&str, &str)> = r
        .metadata()
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(meta, [("é", ""), ("glyd.sink.stream", "web")]);
    assert!(ArchiveReader::from_bytes(plain.clone())
        .unwrap()
        .metadata()
        .is_empty());
    assert_eq!(
        r.schema(),
        ArchiveReader::from_bytes(plain).unwrap().schema()
    );
    // Rebuilt from a pipe, the footer read last.
    let mut out = Vec::new();
    rebuild(&kept[..], &mut out).unwrap();
    assert_eq!(out, src);
    // Too much is refused.
    let mut w = RecordWriter::new(Vec::new(), d.clone(), &WriteOptions::default()).unwrap();
    assert!(w.set_metadata("big", &"x".repeat(2 << 20)).is_err());
}

/// A message whose template goes with the tokens before a mid-line time stores its template
/// ids grouped by theirs (stream role 10), and rebuilds exactly, whole and from a pipe.
#[test]
fn template_ids_grouped_by_an_earlier_column_round_trip() {
    let events = [
        (
            "node-{} unix.hw state_change.unavailable",
            "Component State Change: Component {} is in the unavailable state (HWID={})",
        ),
        (
            "node-{} unix.hw boot_halt",
            "boot (command {}) Error: could not read halt status {}",
        ),
        ("node-{} action start", "running {} as user {} on port {}"),
        (
            "gige{} net link",
            "Link error on broadcast tree Interconnect-{}:{}",
        ),
    ];
    let mut src = String::new();
    let mut seed = 7u64;
    for i in 0..3000u64 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let e = (seed >> 33) as usize % events.len();
        // Each event has two spellings of its message, so the ids are not a function of the
        // head's template, only likelier given it.
        let variant = (seed >> 40).is_multiple_of(3);
        let (head, msg) = events[e];
        let mut msg = msg.replace("{}", &format!("{}", (seed >> 20) % 97));
        if variant {
            msg = format!("warning: {msg}");
        }
        src += &format!(
            "{} {} {} 1 {}\n",
            100000 + i,
            head.replace("{}", &format!("{}", (seed >> 12) % 300)),
            1077804742 + (seed >> 24) % 100_000,
            msg
        );
    }
    let src = src.into_bytes();
    let d = glyd_columnar::choose_log_layout(&src, Level::Max, 2024);
    let opts = WriteOptions::default();
    let archive = check(&src, d, &opts, 1 << 20);
    let r = ArchiveReader::from_bytes(archive).unwrap();
    let grouped = r.row_groups().iter().any(|g| {
        g.columns
            .iter()
            .any(|c| c.streams.iter().any(|s| s.role == 10))
    });
    assert!(grouped, "no column stored its ids grouped");
}
