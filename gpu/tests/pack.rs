//! Packing and unpacking models end to end: single files and sharded folders of every float
//! dtype (NaN, infinities and subnormals included) come back byte for byte; fine-tunes code
//! against their base; damaged archives give errors, never panics or wrong bytes.

use std::path::Path;

use glyd_gpu::safetensors::{self, NewTensor};
use glyd_gpu::{pack, DType, Layout, Method, Model, PackOptions, TensorArchive};

/// Gaussian-like weights (sum of uniforms) as f32, with specials sprinkled in.
fn weights(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e3779b97f4a7c15) | 1;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 40) as f32 / (1u64 << 24) as f32
    };
    (0..n)
        .map(|i| match i % 997 {
            13 => f32::NAN,
            14 => f32::INFINITY,
            15 => f32::NEG_INFINITY,
            16 => f32::from_bits(1), // subnormal
            17 => -0.0,
            _ => (next() + next() + next() + next() - 2.0) * scale,
        })
        .collect()
}

fn as_dtype(v: &[f32], d: DType) -> Vec<u8> {
    match d {
        DType::BF16 => v
            .iter()
            .flat_map(|x| half::bf16::from_f32(*x).to_bits().to_le_bytes())
            .collect(),
        DType::F16 => v
            .iter()
            .flat_map(|x| half::f16::from_f32(*x).to_bits().to_le_bytes())
            .collect(),
        DType::F32 => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        _ => unreachable!(),
    }
}

/// A small model: a few matrices and vectors of `d`, plus an integer tensor.
fn model_file(d: DType, seed: u64) -> Vec<u8> {
    let a = as_dtype(&weights(96 * 64, seed, 0.05), d);
    let b = as_dtype(&weights(64, seed + 1, 1.0), d);
    let c = as_dtype(&weights(300 * 32, seed + 2, 0.02), d);
    // A freshly initialised bias: all zeros, which codes far below the verbatim bits.
    let zeros = as_dtype(&[0.0; 384], d);
    let ids: Vec<u8> = (0..500i64).flat_map(|i| (i * 3).to_le_bytes()).collect();
    safetensors::write(
        &[
            NewTensor {
                name: "layer.0.weight",
                dtype: d,
                shape: vec![96, 64],
                data: &a,
            },
            NewTensor {
                name: "layer.0.bias",
                dtype: d,
                shape: vec![64],
                data: &b,
            },
            NewTensor {
                name: "embed",
                dtype: d,
                shape: vec![300, 32],
                data: &c,
            },
            NewTensor {
                name: "pooler.bias",
                dtype: d,
                shape: vec![384],
                data: &zeros,
            },
            NewTensor {
                name: "position_ids",
                dtype: DType::I64,
                shape: vec![500],
                data: &ids,
            },
        ],
        &[("format", "pt")],
    )
    .unwrap()
}

fn pack_unpack(input: &Path, layout: Layout) -> (TensorArchive, std::path::PathBuf) {
    let dir = input.parent().unwrap();
    let archive = dir.join(format!(
        "{}-{layout:?}.glyd",
        input.file_name().unwrap().to_string_lossy()
    ));
    let opts = PackOptions {
        layout,
        ..Default::default()
    };
    pack(input, &archive, &opts, &mut |_| {}).unwrap();
    let out = dir.join(format!(
        "{}-{layout:?}.out",
        input.file_name().unwrap().to_string_lossy()
    ));
    let a = TensorArchive::open(&archive).unwrap();
    a.unpack(&out, false, None, &mut |_| {}).unwrap();
    (a, out)
}

#[test]
fn single_files_of_every_float_dtype_unpack_identically() {
    let dir = tempfile::tempdir().unwrap();
    for d in [DType::BF16, DType::F16, DType::F32] {
        let path = dir.path().join(format!("{}.safetensors", d.name()));
        let bytes = model_file(d, 7);
        std::fs::write(&path, &bytes).unwrap();
        for layout in [Layout::Dense, Layout::Gpu] {
            let (a, out) = pack_unpack(&path, layout);
            assert_eq!(std::fs::read(&out).unwrap(), bytes, "{d:?} {layout:?}");
            // Random access by name, too.
            let h = safetensors::read_header(&mut &bytes[..], bytes.len() as u64).unwrap();
            let t = h.tensor("embed").unwrap();
            let off = h.data_offset() as usize;
            assert_eq!(
                a.read_tensor("embed", None).unwrap(),
                &bytes[off + t.start as usize..off + t.end as usize]
            );
            let coded = a.tensor("layer.0.weight").unwrap();
            let want = if layout == Layout::Dense {
                Method::Dense
            } else {
                Method::Tiered
            };
            assert_eq!(coded.method, want);
            assert!(
                coded.len < coded.raw_len,
                "{d:?} {layout:?}: float tensor did not shrink"
            );
        }
    }
}

#[test]
fn sharded_folders_unpack_identically() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    std::fs::create_dir_all(model.join("1_Pooling")).unwrap();
    let s1 = model_file(DType::BF16, 1);
    let s2 = model_file(DType::BF16, 2);
    std::fs::write(model.join("model-00001-of-00002.safetensors"), &s1).unwrap();
    std::fs::write(model.join("model-00002-of-00002.safetensors"), &s2).unwrap();
    let index = br#"{"metadata":{"total_size":1},"weight_map":{"embed":"model-00001-of-00002.safetensors"}}"#;
    std::fs::write(model.join("model.safetensors.index.json"), index).unwrap();
    std::fs::write(
        model.join("1_Pooling/config.json"),
        b"{\"pooling\": \"mean\"}\n",
    )
    .unwrap();
    let (a, out) = pack_unpack(&model, Layout::Dense);
    assert!(a.folder);
    assert_eq!(a.files.len(), 4);
    for name in [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
        "model.safetensors.index.json",
        "1_Pooling/config.json",
    ] {
        assert_eq!(
            std::fs::read(out.join(name)).unwrap(),
            std::fs::read(model.join(name)).unwrap(),
            "{name}"
        );
    }
}

#[test]
fn a_fine_tune_packs_against_its_base() {
    let dir = tempfile::tempdir().unwrap();
    let base = model_file(DType::BF16, 3);
    // The fine-tune: the same tensors with a few low mantissa bits changed.
    let h = safetensors::read_header(&mut &base[..], base.len() as u64).unwrap();
    let mut tuned = base.clone();
    let off = h.data_offset() as usize;
    let t = h.tensor("embed").unwrap();
    for i in (off + t.start as usize..off + t.end as usize).step_by(2 * 41) {
        tuned[i] ^= 1;
    }
    let (bp, tp) = (
        dir.path().join("base.safetensors"),
        dir.path().join("tuned.safetensors"),
    );
    std::fs::write(&bp, &base).unwrap();
    std::fs::write(&tp, &tuned).unwrap();
    let archive = dir.path().join("tuned.glyd");
    let opts = PackOptions {
        layout: Layout::Dense,
        base: Some(bp.clone()),
        ..Default::default()
    };
    pack(&tp, &archive, &opts, &mut |_| {}).unwrap();
    let a = TensorArchive::open(&archive).unwrap();
    let e = a.tensor("embed").unwrap();
    assert_eq!(e.method, Method::XorBase);
    assert!(e.len * 20 < e.raw_len, "{} of {}", e.len, e.raw_len);
    let out = dir.path().join("out.safetensors");
    let err = a
        .unpack(&out, false, None, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("--base") && err.contains("tensor '"), "{err}");
    let base_model = Model::open(&bp).unwrap();
    a.unpack(&out, false, Some(&base_model), &mut |_| {})
        .unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), tuned);
}

#[test]
fn damaged_archives_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.safetensors");
    let bytes = model_file(DType::BF16, 9);
    std::fs::write(&path, &bytes).unwrap();
    for layout in [Layout::Dense, Layout::Gpu] {
        let (_, _) = pack_unpack(&path, layout);
        let archive = dir.path().join(format!("m.safetensors-{layout:?}.glyd"));
        let good = std::fs::read(&archive).unwrap();
        let bad = dir.path().join("bad.glyd");
        let out = dir.path().join("bad.out");
        let try_unpack = |b: &[u8]| -> bool {
            std::fs::write(&bad, b).unwrap();
            let _ = std::fs::remove_file(&out);
            match TensorArchive::open(&bad) {
                Err(_) => false,
                Ok(a) => a.unpack(&out, false, None, &mut |_| {}).is_ok(),
            }
        };
        // Every truncation fails.
        for cut in (0..good.len()).step_by(97) {
            assert!(!try_unpack(&good[..cut]), "{layout:?} cut at {cut}");
        }
        // Every flipped byte either fails or (in padding bits no value reads) changes nothing.
        for i in (0..good.len()).step_by(7) {
            let mut b = good.clone();
            b[i] ^= 0x40;
            if try_unpack(&b) {
                assert_eq!(
                    std::fs::read(&out).unwrap(),
                    bytes,
                    "{layout:?} flip at {i} gave wrong bytes"
                );
            }
        }
    }
}

#[test]
fn malformed_safetensors_name_the_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.safetensors");
    let json = br#"{"w":{"dtype":"BF16","shape":[4,4],"data_offsets":[0,30]}}"#;
    let mut f = (json.len() as u64).to_le_bytes().to_vec();
    f.extend_from_slice(json);
    f.extend_from_slice(&[0u8; 32]);
    std::fs::write(&path, &f).unwrap();
    let err = pack(
        &path,
        &dir.path().join("x.glyd"),
        &PackOptions::default(),
        &mut |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("'w'") && err.contains("bad.safetensors"),
        "{err}"
    );
    assert!(!dir.path().join("x.glyd").exists());
}
