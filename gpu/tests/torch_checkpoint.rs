//! `torch.save` checkpoints packed and unpacked: `tests/data/checkpoint.pt` (a small bf16 model
//! with AdamW state, integer and bool tensors, written by PyTorch 2.x) comes back byte for
//! byte; its storages are found with their dtypes from the pickle; a checkpoint packs against
//! its base; damaged checkpoints are errors naming the file, never panics.

use std::path::{Path, PathBuf};

use glyd_gpu::archive::{EntryKind, FileKind};
use glyd_gpu::{pack, DType, Method, Model, PackOptions, TensorArchive};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/checkpoint.pt")
}

fn round_trip(input: &Path, opts: &PackOptions, dir: &Path) -> (TensorArchive, Vec<u8>) {
    let packed = dir.join("ckpt.glyd");
    pack(input, &packed, opts, &mut |_| {}).unwrap();
    let archive = TensorArchive::open(&packed).unwrap();
    let out = dir.join("back.pt");
    let base = opts.base.as_deref().map(|b| Model::open(b).unwrap());
    archive
        .unpack(&out, true, base.as_ref(), &mut |_| {})
        .unwrap();
    (archive, std::fs::read(out).unwrap())
}

#[test]
fn a_checkpoint_unpacks_byte_for_byte_with_typed_storages() {
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read(fixture()).unwrap();
    let (archive, back) = round_trip(&fixture(), &PackOptions::default(), dir.path());
    assert_eq!(back, original);
    assert_eq!(archive.files.len(), 1);
    assert_eq!(archive.files[0].kind, FileKind::TorchZip);
    let dtypes: Vec<DType> = archive
        .tensors()
        .filter_map(|e| match &e.kind {
            EntryKind::Tensor { dtype, .. } => Some(*dtype),
            _ => None,
        })
        .collect();
    for want in [DType::BF16, DType::F32, DType::I64, DType::Bool] {
        assert!(dtypes.contains(&want), "{want:?} not among {dtypes:?}");
    }
    // One storage decodes on its own, as a tensor of its dtype and element count.
    let e = archive.tensors().next().unwrap();
    let name = e.tensor_name().unwrap().to_string();
    assert_eq!(name, "data/0");
    assert_eq!(
        archive.read_tensor(&name, None).unwrap().len() as u64,
        e.raw_len
    );
}

#[test]
fn a_checkpoint_packs_against_its_base() {
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read(fixture()).unwrap();
    let alone = dir.path().join("alone");
    std::fs::create_dir(&alone).unwrap();
    let (plain, _) = round_trip(&fixture(), &PackOptions::default(), &alone);
    let opts = PackOptions {
        base: Some(fixture()),
        ..Default::default()
    };
    let (against, back) = round_trip(&fixture(), &opts, dir.path());
    assert_eq!(back, original);
    assert!(against
        .tensors()
        .any(|e| e.method == Method::XorBase && e.raw_len >= 64));
    let size = |a: &TensorArchive| std::fs::metadata(a.path()).unwrap().len();
    assert!(
        size(&against) < size(&plain),
        "{} >= {}",
        size(&against),
        size(&plain)
    );
    // Without the base, the XOR-coded storages cannot be read, and the error says so.
    let err = against
        .unpack(&dir.path().join("x.pt"), true, None, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("base"), "{err}");
}

#[test]
fn damaged_checkpoints_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read(fixture()).unwrap();
    let bad = dir.path().join("bad.pt");
    let out = dir.path().join("bad.glyd");
    let mut refused = 0;
    let cuts = (0..original.len()).step_by(97).chain([original.len() - 1]);
    for cut in cuts {
        std::fs::write(&bad, &original[..cut]).unwrap();
        if let Err(e) = pack(&bad, &out, &PackOptions::default(), &mut |_| {}) {
            assert!(e.to_string().contains("bad.pt"), "{e}");
            refused += 1;
        }
    }
    assert!(refused > 0);
    // Flipped bytes anywhere: packed (as gap bytes where a storage no longer checks out) and
    // unpacked back to exactly the damaged file, or refused; never a panic.
    for i in (0..original.len()).step_by(13) {
        let mut damaged = original.clone();
        damaged[i] ^= 0x5A;
        std::fs::write(&bad, &damaged).unwrap();
        if pack(&bad, &out, &PackOptions::default(), &mut |_| {}).is_ok() {
            let back = dir.path().join("back.pt");
            TensorArchive::open(&out)
                .unwrap()
                .unpack(&back, true, None, &mut |_| {})
                .unwrap();
            assert_eq!(std::fs::read(&back).unwrap(), damaged, "byte {i}");
        }
    }
}

#[test]
fn a_checkpoint_held_in_memory_packs_like_the_file() {
    let original = std::fs::read(fixture()).unwrap();
    let from_file = Model::open(&fixture()).unwrap();
    let from_bytes = Model::from_bytes("checkpoint.pt", original).unwrap();
    let mut a = Vec::new();
    let mut b = Vec::new();
    glyd_gpu::pack_model(
        &from_file,
        None,
        Default::default(),
        false,
        &mut a,
        &mut |_| {},
    )
    .unwrap();
    glyd_gpu::pack_model(
        &from_bytes,
        None,
        Default::default(),
        false,
        &mut b,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(a, b);
}
