//! Fuzz opening and reading record archives by ranges (as from an object store) on arbitrary
//! bytes: the opener asks for ranges until it can index or refuses, then every row group is
//! read from the chunks the reader names. Nothing may panic, hang or loop for ever, and where
//! the whole-archive reader also reads a row group, both give the same batches.
#![no_main]

use glyd_columnar::{ArchiveReader, Error, Fetched, OpenStep, RangedOpen};
use libfuzzer_sys::fuzz_target;

/// As the `archive` target: the memory limit keeps hostile sizes from allocating.
const MEMORY: u64 = 64 << 20;

fn fetch(input: &[u8], ranges: &[std::ops::Range<u64>], into: &mut Fetched) {
    for r in ranges {
        let (start, end) = (r.start as usize, (r.end as usize).min(input.len()));
        if start < end {
            into.insert(r.start, input[start..end].to_vec());
        }
    }
}

fuzz_target!(|input: &[u8]| {
    let n = input.len() as u64;
    // Small guesses, so that even small inputs open over several rounds.
    let mut open = RangedOpen::new(n).whole_below(0).end_guess(64);
    let ranged = loop {
        match open.step() {
            Ok(OpenStep::Open(r)) => break r.with_memory_limit(MEMORY),
            Ok(OpenStep::Fetch(ranges)) => {
                assert!(!ranges.is_empty(), "asked for nothing");
                let mut got = Fetched::new(n);
                fetch(input, &ranges, &mut got);
                for r in ranges {
                    let bytes = got.get(r.clone()).unwrap_or_default().to_vec();
                    open.add(r.start, bytes);
                }
            }
            Err(_) => return,
        }
    };
    let whole = ArchiveReader::from_bytes(input.to_vec()).map(|r| r.with_memory_limit(MEMORY));
    for g in 0..ranged.row_groups().len() {
        let mut fetched = Fetched::new(n);
        let Ok(ranges) = ranged.chunk_ranges(None, g) else {
            continue;
        };
        fetch(input, &ranges, &mut fetched);
        let mut got = None;
        for _ in 0..4 {
            match ranged.read_batches_fetched(&fetched, None, g, 1000, false) {
                Err(Error::Missing { ranges }) => fetch(input, &ranges, &mut fetched),
                read => {
                    got = Some(read.and_then(|b| b.collect::<Result<Vec<_>, _>>()));
                    break;
                }
            }
        }
        let expect = whole.as_ref().ok().map(|w| {
            w.read_batches_here(None, g, 1000, false)
                .and_then(|b| b.collect::<Result<Vec<_>, _>>())
        });
        if let (Some(Ok(a)), Some(Ok(b))) = (got, expect) {
            assert_eq!(a, b, "row group {g}: the readers disagree");
        }
    }
});
