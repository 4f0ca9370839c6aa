//! Record archives round-trip byte for byte: every corpus file (sniffed, or forced through a
//! dialect it does not fit), random delimited text with hostile quoting and line endings, and
//! row groups small enough that every input spans many of them. Both readers are checked: the
//! indexed one and the streaming one.

use std::io::Write;
use std::path::PathBuf;

use glyd_columnar::delimited::LINES;
use glyd_columnar::{rebuild, sniff, ArchiveReader, Dialect, RecordWriter, WriteOptions};
use glyd_core::Level;
use proptest::prelude::*;

fn corpus(dir: &str) -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/corpus")
        .join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap() != "LICENSE")
        .collect();
    files.sort();
    files
}

fn write(src: &[u8], d: Dialect, opts: &WriteOptions, piece: usize) -> Vec<u8> {
    let mut w = RecordWriter::new(Vec::new(), d, opts).unwrap();
    for part in src.chunks(piece.max(1)) {
        w.write_all(part).unwrap();
    }
    w.finish().unwrap()
}

/// Archive `src` in dialect `d`, then rebuild it both ways and compare bytes.
fn check(src: &[u8], d: Dialect, opts: &WriteOptions, piece: usize) -> Vec<u8> {
    let archive = write(src, d, opts, piece);
    let reader = ArchiveReader::from_bytes(archive.clone()).unwrap();
    let mut back = Vec::new();
    assert_eq!(reader.rebuild_to(&mut back).unwrap(), src.len() as u64);
    assert!(back == src, "indexed rebuild differs");
    let mut streamed = Vec::new();
    rebuild(&archive[..], &mut streamed).unwrap();
    assert!(streamed == src, "streaming rebuild differs");
    // Every column reads as Arrow, with every row.
    let batches = reader.read(None, 0..reader.row_groups().len()).unwrap();
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows as u64, reader.rows());
    archive
}

#[test]
fn corpus_logs_and_csvs_round_trip_and_beat_plain_compression() {
    for path in corpus("loghub") {
        let src = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let d = sniff(&src, true).unwrap_or_else(|| panic!("{name} not sniffed"));
        let want = if name.ends_with(".csv") { b',' } else { LINES };
        assert_eq!(
            d.delimiter, want,
            "{name} sniffed as {:?}",
            d.delimiter as char
        );
        let archive = check(&src, d, &WriteOptions::default(), src.len());
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
            columns: 4,
            header: None,
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
    let path = corpus("loghub")
        .into_iter()
        .find(|p| p.ends_with("HDFS_2k.log_structured.csv"))
        .unwrap();
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

fn dialect(delimiter: u8, columns: usize, header: Option<&[u8]>) -> Dialect {
    Dialect {
        delimiter,
        columns,
        header: header.map(<[u8]>::to_vec),
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
            ],
            0..600,
        ),
        columns in 1usize..5,
        delimiter in prop_oneof![Just(b','), Just(b'\t'), Just(LINES)],
        piece in 1usize..200,
    ) {
        let d = if delimiter == LINES { Dialect::lines() } else { dialect(delimiter, columns, None) };
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

#[test]
fn a_row_group_of_only_exceptions_reads_as_empty_batches_of_the_schema() {
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
    assert_eq!(r.row_groups()[0].rows, 0);
    assert_eq!(
        r.schema().field(0).data_type(),
        &arrow_schema::DataType::Int64
    );
}
