//! Damaged archives are refused with an error, never a panic or a wrong answer: every byte
//! flipped (three ways) and every truncation of archives of CSV and of log lines, read by both
//! readers.

use std::io::Write;

use glyd_columnar::{rebuild, ArchiveReader, RecordWriter, WriteOptions};
use glyd_core::Level;

/// Archives of CSV (typed, quoted, a column following another, exceptions) and of log lines
/// (leading fields and shapes, a copied column), each over a few row groups: their inputs and
/// bytes.
fn archives() -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut csv = b"id,when,price,name,flag,kind\n".to_vec();
    for i in 0..120 {
        csv.extend_from_slice(
            format!(
                "{},2024-{:02}-{:02},{}.{:02},\"name {}, {}\",{},k{}\n",
                i * 7,
                i % 12 + 1,
                i % 28 + 1,
                i * 3,
                i % 100,
                i % 5,
                i,
                ["yes", "no"][i % 2],
                i % 2
            )
            .as_bytes(),
        );
    }
    csv.extend_from_slice(b"a stray line\nlast,row,without,a,newline,x");
    let mut log = Vec::new();
    for i in 0..150 {
        log.extend_from_slice(
            format!(
                "03-17 16:13:{:02}.{:03} {:>5} node{} node{} {} job {} done\n",
                i % 60,
                i * 37 % 1000,
                1700 + i % 3,
                i % 4,
                i % 4,
                ["I", "W"][i % 2],
                i * 13
            )
            .as_bytes(),
        );
    }
    log.extend_from_slice(b"short\n\n");
    let opts = WriteOptions {
        level: Level::Max,
        threads: 1,
        row_group_size: 2 << 10,
    };
    let csv_dialect = glyd_columnar::detect(&csv, true).unwrap();
    let log_dialect = glyd_columnar::Dialect::log_fields(5).into();
    [(csv, csv_dialect), (log, log_dialect)]
        .into_iter()
        .map(|(src, d)| {
            let mut w = RecordWriter::new(Vec::new(), d, &opts).unwrap();
            w.write_all(&src).unwrap();
            let a = w.finish().unwrap();
            assert!(
                ArchiveReader::from_bytes(a.clone())
                    .unwrap()
                    .row_groups()
                    .len()
                    > 2
            );
            (src, a)
        })
        .collect()
}

/// Both readers on `bytes`: each must fail or give back exactly `src`.
fn read_both(bytes: &[u8], src: &[u8]) -> (bool, bool) {
    let indexed = ArchiveReader::from_bytes(bytes.to_vec()).and_then(|r| {
        let mut out = Vec::new();
        r.rebuild_to(&mut out)?;
        r.read(None, 0..r.row_groups().len())?;
        Ok(out)
    });
    // On one thread the indexed reader passes each row group's bytes on as they come.
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let passed_on = ArchiveReader::from_bytes(bytes.to_vec()).and_then(|r| {
        let mut out = Vec::new();
        one_thread.install(|| r.rebuild_to(&mut out))?;
        Ok(out)
    });
    let mut out = Vec::new();
    let streamed = rebuild(bytes, &mut out).map(|_| out);
    for out in [&indexed, &passed_on, &streamed].into_iter().flatten() {
        assert!(out == src, "a damaged archive decoded to different bytes");
    }
    (indexed.is_err(), streamed.is_err())
}

/// Every flip either fails or, where the codec's tables have two spellings of the same code
/// (a tANS count no symbol in the stream uses), decodes to the very same bytes; read_both
/// checks the latter, and nearly every flip must be caught.
#[test]
fn every_flip_is_detected_or_harmless() {
    for (src, a) in archives() {
        let (mut flips, mut missed) = (0, 0);
        for i in 0..a.len() {
            for mask in [0x01u8, 0x80, 0xff] {
                let mut bad = a.clone();
                bad[i] ^= mask;
                let (x, y) = read_both(&bad, &src);
                assert_eq!(x, y, "the readers disagree on flip {mask:#x} at byte {i}");
                flips += 1;
                missed += usize::from(!x);
            }
        }
        // The harmless ones are bits of tiny tANS tables that no decoded symbol depends on.
        assert!(
            missed * 100 < flips,
            "{missed} of {flips} flips decoded cleanly"
        );
    }
}

#[test]
fn every_truncation_is_an_error() {
    for (src, a) in archives() {
        for cut in 0..a.len() {
            let (x, y) = read_both(&a[..cut], &src);
            assert!(x && y, "truncation to {cut} bytes went unnoticed");
        }
        let mut longer = a.clone();
        longer.push(0);
        assert!(ArchiveReader::from_bytes(longer).is_err());
    }
}
