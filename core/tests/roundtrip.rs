//! Round trips, byte for byte, at every level: the shared corpus, generated edge cases, and
//! proptest inputs, through the in-memory API (1 and many threads) and the streaming API.

use std::io::{Read, Write};

use glyd_core::{compress, decompress_with, Decoder, Encoder, Level, Method, Options};
use proptest::prelude::*;

/// Compresses with every API and checks every decoder returns `data` exactly.
fn check_all_ways(data: &[u8], opts: &Options) {
    let one = compress(data, &opts.clone().with_threads(1)).unwrap();
    let many = compress(data, &opts.clone().with_threads(4)).unwrap();
    assert_eq!(one, many, "thread count must not change the stream");
    assert_eq!(decompress_with(&one, 1).unwrap(), data);
    assert_eq!(decompress_with(&one, 3).unwrap(), data);

    // Streaming, written in uneven pieces, read back in uneven pieces.
    let mut enc = Encoder::new(Vec::new(), &opts.clone().with_threads(2)).unwrap();
    for piece in data.chunks(7919) {
        enc.write_all(piece).unwrap();
    }
    let streamed = enc.finish().unwrap();
    assert_eq!(streamed, one, "streaming must write the same frame");
    let mut dec = Decoder::with_threads(&streamed[..], 2);
    let mut back = Vec::new();
    let mut buf = vec![0u8; 4093];
    loop {
        let n = dec.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        back.extend_from_slice(&buf[..n]);
    }
    assert_eq!(back, data);
}

#[test]
fn corpus_round_trips_at_every_level() {
    let Some(files) = glyd_testkit::corpus_all() else {
        return;
    };
    for f in &files {
        let data = std::fs::read(f).unwrap();
        for level in Level::ALL {
            // Small blocks so every file spans several, exercising multi-block paths. The
            // optimal parser is slow by design: one way of writing is enough there.
            let opts = Options::new(level).with_block_size(64 << 10);
            if level == Level::Ultra {
                let packed = compress(&data, &opts).unwrap();
                assert_eq!(decompress_with(&packed, 3).unwrap(), data);
            } else {
                check_all_ways(&data, &opts);
            }
            let packed = compress(&data, &Options::new(level)).unwrap();
            assert_eq!(
                decompress_with(&packed, 0).unwrap(),
                data,
                "{}",
                f.display()
            );
        }
        for level in [Level::Max, Level::Ultra] {
            let packed = compress(&data, &Options::new(level).with_long(true)).unwrap();
            assert_eq!(
                decompress_with(&packed, 0).unwrap(),
                data,
                "--long {}",
                f.display()
            );
        }
    }
}

/// Inputs that hit the edges of the format: empty, tiny, runs, long matches, incompressible.
fn edge_inputs() -> Vec<Vec<u8>> {
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut random = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng as u8
            })
            .collect()
    };
    let mut v = vec![
        vec![],
        vec![0],
        b"ab".to_vec(),
        vec![7; 15],
        vec![7; 16],
        vec![0; 1 << 20],
        vec![0; (1 << 20) + 1],
        b"abc".repeat(100_000),
        random(100_000),
    ];
    // Matches longer than the nibble and varint limits, at every small offset.
    for off in 1..40 {
        let mut d = random(off);
        while d.len() < 70_000 {
            let b = d[d.len() - off];
            d.push(b);
        }
        d.extend(random(50));
        v.push(d);
    }
    // Long literal runs followed by a distant repeat (offset near the 64 KiB limit).
    let mut far = random(65_535);
    far.extend_from_within(0..1000);
    v.push(far);
    let mut too_far = random(65_536);
    too_far.extend_from_within(0..1000);
    v.push(too_far);
    v
}

#[test]
fn edge_inputs_round_trip() {
    for data in edge_inputs() {
        for level in Level::ALL {
            check_all_ways(&data, &Options::new(level));
            check_all_ways(&data, &Options::new(level).with_block_size(1024));
        }
        for level in [Level::Max, Level::Ultra] {
            check_all_ways(&data, &Options::new(level).with_long(true));
        }
    }
}

#[test]
fn fast_and_reference_lz_decoders_agree() {
    for data in edge_inputs().into_iter().filter(|d| d.len() >= 16) {
        for level in Level::ALL {
            let Method::Lz(params) = level.method() else {
                continue;
            };
            let payload = glyd_core::lz::compress_block(&data[..data.len().min(1 << 20)], &params);
            let n = data.len().min(1 << 20);
            let mut fast = vec![0u8; n];
            let mut reference = vec![0u8; n];
            glyd_core::lz::decode(&payload, &mut fast).unwrap();
            glyd_core::lz::decode_reference(&payload, &mut reference).unwrap();
            assert_eq!(fast, reference);
            assert_eq!(fast, &data[..n]);
        }
    }
}

fn compressible() -> impl Strategy<Value = Vec<u8>> {
    // Words from a small alphabet repeat often, so the LZ paths (not only raw) are exercised.
    prop::collection::vec(
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..8),
            prop::collection::vec(prop::sample::select(b"ab \n".to_vec()), 1..40),
            Just(b"GET /index.html HTTP/1.1 200 ".to_vec()),
        ],
        0..200,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn arbitrary_bytes_round_trip(data in prop::collection::vec(any::<u8>(), 0..5000)) {
        for level in Level::ALL {
            check_all_ways(&data, &Options::new(level).with_block_size(1024));
        }
    }

    #[test]
    fn compressible_bytes_round_trip(data in compressible()) {
        for level in Level::ALL {
            check_all_ways(&data, &Options::new(level).with_block_size(2048));
            if let Method::Lz(params) = level.method() {
                let payload = glyd_core::lz::compress_block(&data, &params);
                let mut out = vec![0u8; data.len()];
                glyd_core::lz::decode_reference(&payload, &mut out).unwrap();
                prop_assert_eq!(&out, &data);
            }
        }
        // Long-distance matches between the parsers' own, in one block and in small ones.
        for level in [Level::Max, Level::Ultra] {
            check_all_ways(&data, &Options::new(level).with_long(true));
            check_all_ways(&data, &Options::new(level).with_long(true).with_block_size(2048));
        }
    }
}

fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// `--long` finds a repeat 9 MiB back that the double-fast parser alone misses (its tables
/// have long forgotten it), and the stream decodes byte for byte every way.
#[test]
fn long_distance_matching_finds_far_repeats() {
    let a = noise(1 << 20, 1);
    let mut data = a.clone();
    data.extend_from_slice(&noise(9 << 20, 2));
    data.extend_from_slice(&a);
    let plain = Options::new(Level::Max)
        .with_block_size(16 << 20)
        .with_threads(1);
    let long = Options::new(Level::Max).with_long(true).with_threads(1);
    assert_eq!(long.block_size(), 128 << 20);
    let (p, l) = (
        compress(&data, &plain).unwrap(),
        compress(&data, &long).unwrap(),
    );
    assert!(
        l.len() + (1000 << 10) < p.len(),
        "--long {} bytes, without {} bytes",
        l.len(),
        p.len()
    );
    check_all_ways(&data, &long);
}

/// The optimal parser takes long-distance matches too; a text-like input with near and far
/// repeats round-trips and is no bigger than without `--long`.
#[test]
fn long_distance_matching_at_ultra() {
    let words: Vec<&[u8]> = vec![b"alpha ", b"beta ", b"gamma ", b"delta\n", b"epsilon "];
    let text: Vec<u8> = (0..40_000u64)
        .flat_map(|i| {
            words[(i * 7 + i / 13) as usize % words.len()]
                .iter()
                .copied()
        })
        .collect();
    let mut data = noise(300 << 10, 5);
    data.extend_from_slice(&text);
    data.extend_from_slice(&noise(600 << 10, 6));
    data.extend_from_within(..300 << 10);
    let plain = Options::new(Level::Ultra).with_threads(1);
    let long = plain.clone().with_long(true);
    let (p, l) = (
        compress(&data, &plain).unwrap(),
        compress(&data, &long).unwrap(),
    );
    assert!(l.len() <= p.len() + 64, "--long {} vs {}", l.len(), p.len());
    check_all_ways(&data, &long);
}

#[test]
fn long_distance_matching_needs_an_entropy_level() {
    for level in [Level::Fast, Level::Lz] {
        let err = compress(b"data", &Options::new(level).with_long(true)).unwrap_err();
        assert!(err.to_string().contains("--max or --ultra"), "{err}");
    }
}

#[test]
fn frames_never_exceed_compress_bound() {
    // Incompressible input at the smallest block size is the worst case: raw blocks, each
    // with its header and index entry.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let noise: Vec<u8> = (0..300_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    for len in [0, 1, 1023, 1024, 1025, 65_536, 300_000] {
        for level in glyd_core::Level::ALL {
            for block in [1024, 1 << 20] {
                let opts = glyd_core::Options::new(level).with_block_size(block);
                let frame = glyd_core::compress(&noise[..len], &opts).unwrap();
                assert!(
                    frame.len() <= glyd_core::compress_bound(len),
                    "{len} bytes at {level:?}, {block}-byte blocks: {} > bound {}",
                    frame.len(),
                    glyd_core::compress_bound(len)
                );
            }
        }
    }
}
