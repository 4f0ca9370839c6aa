//! Archives opened by ranges (as from an object store) index and read exactly as archives read
//! whole: the same tables, schemas, row groups and metadata, and every row group's batches
//! for every projection, from the bytes the reader asked for alone; a projection fetches less
//! than the archive; damaged or truncated archives are errors, never panics.

use std::io::Write;
use std::ops::Range;

use glyd_columnar::{
    ArchiveReader, Error, Fetched, Format, OpenStep, RangedOpen, RecordWriter, WriteOptions,
};
use glyd_core::Level;

fn write(src: &[u8], f: impl Into<Format>, row_group_size: usize) -> Vec<u8> {
    let opts = WriteOptions {
        level: Level::Fast,
        threads: 2,
        row_group_size,
    };
    let mut w = RecordWriter::new(Vec::new(), f, &opts).unwrap();
    w.set_metadata("origin", "ranged test").unwrap();
    w.write_all(src).unwrap();
    w.finish().unwrap()
}

/// Archives of CSV with stray lines (verbatim records), of JSON lines, of log lines, and of a
/// SQL dump (tables defined between row groups), each over many row groups; with the corpus,
/// its logs too.
fn archives() -> Vec<(String, Vec<u8>)> {
    let mut csv = b"id,when,price,name,kind\n".to_vec();
    let mut json = Vec::new();
    let mut log = Vec::new();
    // Values that do not compress away, so that archives are larger than one fetch.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut random = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    for i in 0..30_000 {
        csv.extend_from_slice(
            format!(
                "{},2024-{:02}-{:02},{}.{:02},\"name {}\",k{}\n",
                random(),
                i % 12 + 1,
                i % 28 + 1,
                random() % 100_000,
                i % 100,
                random(),
                i % 3
            )
            .as_bytes(),
        );
        if i % 4999 == 0 {
            csv.extend_from_slice(b"a stray line, not a row\n");
        }
        json.extend_from_slice(
            format!(
                "{{\"ts\":{},\"level\":\"{}\",\"msg\":\"request {} took {} ms\"}}\n",
                1_700_000_000 + i,
                ["INFO", "WARN", "ERROR"][i % 3],
                random(),
                random() % 997
            )
            .as_bytes(),
        );
        log.extend_from_slice(
            format!(
                "2024-03-17 16:13:{:02},{:03} INFO [worker-{}] job {} done in {} ms\n",
                i % 60,
                i * 37 % 1000,
                i % 4,
                random(),
                random() % 3000
            )
            .as_bytes(),
        );
    }
    let mut dump = b"CREATE TABLE a (x int, y text);\nCOPY a (x, y) FROM stdin;\n".to_vec();
    for i in 0..20_000 {
        dump.extend_from_slice(format!("{i}\tvalue {}\n", random()).as_bytes());
    }
    dump.extend_from_slice(b"\\.\n\nCOPY b (k, v) FROM stdin;\n");
    for i in 0..20_000 {
        dump.extend_from_slice(format!("key{}\t{}\n", i % 23, random()).as_bytes());
    }
    dump.extend_from_slice(b"\\.\n");
    let mut out = vec![
        (
            "csv".to_string(),
            write(&csv, glyd_columnar::detect(&csv, true).unwrap(), 64 << 10),
        ),
        (
            "json".to_string(),
            write(&json, glyd_columnar::detect(&json, true).unwrap(), 64 << 10),
        ),
        (
            "log".to_string(),
            write(&log, glyd_columnar::detect(&log, true).unwrap(), 64 << 10),
        ),
        ("dump".to_string(), write(&dump, Format::SqlDump, 64 << 10)),
    ];
    for path in glyd_testkit::corpus("loghub").unwrap_or_default() {
        let src = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        out.push((
            name,
            write(&src, glyd_columnar::detect(&src, true).unwrap(), 32 << 10),
        ));
    }
    out
}

/// Requests and bytes a ranged reader fetched.
#[derive(Default)]
struct Fetches {
    requests: usize,
    bytes: u64,
}

impl Fetches {
    fn fetch(&mut self, archive: &[u8], ranges: &[Range<u64>], into: &mut Fetched) {
        for r in ranges {
            self.requests += 1;
            self.bytes += r.end - r.start;
            into.insert(r.start, archive[r.start as usize..r.end as usize].to_vec());
        }
    }
}

/// Opens `archive` by ranges: the reader, and the fetches it took.
fn open_ranged(archive: &[u8]) -> Result<(ArchiveReader, Fetches, usize), Error> {
    // Small archives are fetched whole unless told otherwise: these are read by ranges.
    let mut open = RangedOpen::new(archive.len() as u64)
        .whole_below(0)
        .end_guess(4 << 10);
    let (mut fetches, mut rounds) = (Fetches::default(), 0);
    loop {
        match open.step()? {
            OpenStep::Open(reader) => return Ok((*reader, fetches, rounds)),
            OpenStep::Fetch(ranges) => {
                rounds += 1;
                let mut got = Fetched::new(archive.len() as u64);
                fetches.fetch(archive, &ranges, &mut got);
                for r in ranges {
                    open.add(r.start, got.get(r).unwrap().to_vec());
                }
            }
        }
    }
}

/// Reads `projection` of row group `g` from ranges fetched as the reader asks.
fn read_ranged(
    r: &ArchiveReader,
    archive: &[u8],
    projection: Option<&[usize]>,
    g: usize,
    fetches: &mut Fetches,
) -> Vec<arrow_array::RecordBatch> {
    let mut fetched = Fetched::new(archive.len() as u64);
    fetches.fetch(
        archive,
        &r.chunk_ranges(projection, g).unwrap(),
        &mut fetched,
    );
    for _ in 0..8 {
        match r.read_batches_fetched(&fetched, projection, g, 1000, false) {
            Ok(batches) => return batches.collect::<Result<Vec<_>, _>>().unwrap(),
            // A column linked to another: its base's chunks, then again.
            Err(Error::Missing { ranges }) => fetches.fetch(archive, &ranges, &mut fetched),
            Err(e) => panic!("row group {g}: {e}"),
        }
    }
    panic!("row group {g} still lacks chunks after 8 fetches");
}

#[test]
fn ranged_archives_read_as_whole_ones_from_less_than_the_whole() {
    for (name, archive) in archives() {
        let whole = ArchiveReader::from_bytes(archive.clone()).unwrap();
        let (ranged, opened, rounds) = open_ranged(&archive).unwrap();
        assert!(rounds <= 5, "{name}: {rounds} rounds to open");
        assert_eq!(ranged.tables(), whole.tables(), "{name}");
        assert_eq!(ranged.row_groups(), whole.row_groups(), "{name}");
        assert_eq!(ranged.metadata(), whole.metadata(), "{name}");
        assert_eq!(ranged.len(), archive.len(), "{name}");
        assert!(whole.row_groups().len() > 2, "{name}: one row group");
        for t in 0..whole.tables().len() {
            assert_eq!(
                ranged.table_schema(t).unwrap(),
                whole.table_schema(t).unwrap()
            );
        }
        let mut one_column = Fetches::default();
        for (g, meta) in whole.row_groups().iter().enumerate() {
            let columns = whole.table_schema(meta.table).unwrap().fields().len();
            let mut projections: Vec<Option<Vec<usize>>> = vec![None];
            projections.extend((0..columns).map(|c| Some(vec![c])));
            projections.push(Some(vec![columns - 1, 0]));
            for p in &projections {
                let expect: Vec<_> = whole
                    .read_batches_here(p.as_deref(), g, 1000, false)
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                let mut fetches = Fetches::default();
                let got = read_ranged(&ranged, &archive, p.as_deref(), g, &mut fetches);
                assert_eq!(got, expect, "{name}: row group {g}, columns {p:?}");
                if p.as_ref().is_some_and(|p| p == &[0]) {
                    one_column.bytes += fetches.bytes;
                }
            }
        }
        // Past the two ends' guesses, opening and reading one column fetch less than the
        // archive (the headers, and that column's chunks).
        assert!(
            archive.len() <= 64 << 10 || opened.bytes + one_column.bytes < archive.len() as u64,
            "{name}: {} + {} of {}",
            opened.bytes,
            one_column.bytes,
            archive.len()
        );
    }
}

#[test]
fn damaged_or_truncated_archives_opened_by_ranges_are_errors() {
    let (_, archive) = archives().swap_remove(0);
    let n = archive.len();
    for cut in (0..n).step_by(n / 97 + 1).chain([n - 1, n - 8, n - 13]) {
        assert!(open_ranged(&archive[..cut]).is_err(), "cut at {cut}");
    }
    for at in (0..n).step_by(n / 211 + 1) {
        let mut bad = archive.clone();
        bad[at] ^= 0x5a;
        // Either refused, or (a byte no check covers, such as inside a chunk not read at
        // open) opened; reading every row group then errs or gives the same as a whole read.
        if let Ok((ranged, _, _)) = open_ranged(&bad) {
            let whole = ArchiveReader::from_bytes(bad.clone());
            for g in 0..ranged.row_groups().len() {
                let mut fetched = Fetched::new(n as u64);
                let ranges = ranged.chunk_ranges(None, g).unwrap();
                Fetches::default().fetch(&bad, &ranges, &mut fetched);
                let got = ranged
                    .read_batches_fetched(&fetched, None, g, 1000, false)
                    .and_then(|b| b.collect::<Result<Vec<_>, _>>());
                let expect = whole.as_ref().map_err(|_| ()).and_then(|w| {
                    w.read_batches_here(None, g, 1000, false)
                        .and_then(|b| b.collect::<Result<Vec<_>, _>>())
                        .map_err(|_| ())
                });
                if let (Ok(got), Ok(expect)) = (got, expect) {
                    assert_eq!(got, expect, "byte {at} flipped, row group {g}");
                }
            }
        }
    }
}
