//! Property tests: random tensors of every dtype, in both layouts, come back bit for bit:
//! arbitrary bit patterns (every NaN payload, infinities, subnormals, negative zero) and
//! narrow Gaussian-like ones alike.

use glyd_gpu::tensor::{decode, encode};
use glyd_gpu::{DType, Layout};
use proptest::prelude::*;

fn check(d: DType, bytes: &[u8]) -> Result<(), TestCaseError> {
    for layout in [Layout::Dense, Layout::Gpu] {
        let (m, p) = encode(d, bytes, layout, None);
        let mut out = vec![0u8; bytes.len()];
        decode(m, d, &p, &mut out, None).map_err(TestCaseError::fail)?;
        prop_assert_eq!(&out, &bytes.to_vec(), "{:?} {:?} {:?}", d, layout, m);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn arbitrary_bits_round_trip(code in 0u8..15, raw in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let d = DType::from_code(code).unwrap();
        let n = raw.len() / d.size() * d.size();
        check(d, &raw[..n])?;
    }

    #[test]
    fn weight_like_floats_round_trip(
        code in prop::sample::select(vec![7u8, 8, 11]),
        vals in proptest::collection::vec(-3.0f32..3.0, 0..5000),
        scale in prop::sample::select(vec![1e-3f32, 0.05, 1.0, 1e4]),
        specials in proptest::collection::vec((0usize..5000, 0u8..6), 0..20),
    ) {
        let d = DType::from_code(code).unwrap();
        let mut v: Vec<f32> = vals.iter().map(|x| x * x * x * scale).collect();
        for (i, s) in specials {
            if let Some(x) = v.get_mut(i) {
                *x = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, f32::from_bits(3), f32::MIN_POSITIVE / 2.0][s as usize];
            }
        }
        let bytes: Vec<u8> = match d {
            DType::BF16 => v.iter().flat_map(|x| half::bf16::from_f32(*x).to_bits().to_le_bytes()).collect(),
            DType::F16 => v.iter().flat_map(|x| half::f16::from_f32(*x).to_bits().to_le_bytes()).collect(),
            _ => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        };
        check(d, &bytes)?;
    }
}
