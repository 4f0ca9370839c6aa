//! Property tests of the entropy coders on their own: random symbol streams of every shape
//! (one dominant symbol, flat, tiny, long) round-trip through Huffman and tANS coding, table
//! descriptions included, and flipping any bit of a tANS stream is caught or changes the
//! symbols (never a panic).

use glyd_core::entropy::{fse, histogram, huffman};
use proptest::prelude::*;

/// Streams of symbols below `alphabet`, skewed towards small values.
fn symbols(alphabet: u8) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            4 => Just(0u8),
            2 => 0..alphabet.min(4),
            1 => 0..alphabet,
        ],
        2..3000,
    )
}

fn distinct(v: &[u8]) -> usize {
    let mut seen = [false; 256];
    v.iter()
        .filter(|&&b| !std::mem::replace(&mut seen[b as usize], true))
        .count()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn huffman_round_trips(data in prop_oneof![symbols(255), prop::collection::vec(any::<u8>(), 2..4000)]) {
        prop_assume!(distinct(&data) >= 2);
        let lens = huffman::build_lengths(&histogram(&data));
        prop_assert!(lens.max_len <= huffman::MAX_BITS);
        let mut bytes = Vec::new();
        huffman::write_table(&lens, &mut bytes);
        let table_len = bytes.len();
        huffman::encode(&data, &lens, &mut bytes);
        let mut pos = 0;
        let back_lens = huffman::read_table(&bytes, &mut pos).unwrap();
        prop_assert_eq!(pos, table_len);
        let mut out = vec![0u8; data.len()];
        huffman::decode(&bytes[pos..], &back_lens, &mut out).unwrap();
        prop_assert_eq!(out, data);
    }

    #[test]
    fn tans_round_trips(data in symbols(78), max_log in fse::MIN_LOG..=fse::MAX_LOG) {
        prop_assume!(distinct(&data) >= 2);
        let mut freq = vec![0u32; 78];
        for &s in &data {
            freq[s as usize] += 1;
        }
        let counts = fse::normalize(&freq, max_log);
        prop_assert_eq!(counts.counts.iter().sum::<u32>(), 1 << counts.log);
        let mut table = Vec::new();
        fse::write_counts(&counts, &mut table);
        let mut pos = 0;
        let back = fse::read_counts(&table, &mut pos, 78).unwrap();
        prop_assert_eq!(pos, table.len());
        let mut stream = Vec::new();
        fse::Encoder::new(&counts).encode(&data, &mut Vec::new(), &mut stream);
        let mut out = vec![0u8; data.len()];
        fse::Decoder::new(&back).decode(&stream, &mut out).unwrap();
        prop_assert_eq!(&out, &data);
        // Any single flipped bit: an error, or other symbols — never the same stream twice.
        let bit = data.len() * 7 % (stream.len() * 8);
        let mut bad = stream.clone();
        bad[bit / 8] ^= 1 << (bit % 8);
        let mut again = vec![0u8; data.len()];
        if fse::Decoder::new(&back).decode(&bad, &mut again).is_ok() {
            prop_assert_ne!(again, data);
        }
    }
}
