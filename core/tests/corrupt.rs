//! The corrupt-input suite: every single-byte flip, every truncation, spliced and reordered
//! blocks, trailing garbage and hostile header fields. Every decoder (in-memory, streaming,
//! listing, random access) must return an error — never a panic, a hang or wrong bytes.

use std::io::{Cursor, Read};

use glyd_core::frame::{BlockHeader, BlockKind, FrameHeader, BLOCK_HEADER_LEN, FRAME_HEADER_LEN};
use glyd_core::{compress, decompress_with, summarize, BlockIndex, Decoder, Error, Level, Options};

/// A frame with LZ, raw and RLE blocks: 1 KiB blocks of text, noise, zeros and text.
fn sample_frame() -> (Vec<u8>, Vec<u8>) {
    sample_frame_at(Level::Lz)
}

/// The same input at `level`.
fn sample_frame_at(level: Level) -> (Vec<u8>, Vec<u8>) {
    let mut data = Vec::new();
    for i in 0..40 {
        data.extend_from_slice(format!("line {i}: GET /index.html 200\n").as_bytes());
    }
    data.truncate(1024);
    let mut x = 12345u32;
    data.extend((0..1024).map(|_| {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        (x >> 16) as u8
    }));
    data.extend(std::iter::repeat_n(0u8, 1024));
    data.extend_from_within(..700);
    let frame = compress(&data, &Options::new(level).with_block_size(1024)).unwrap();
    (data, frame)
}

/// True if every decoder (in memory on 1 and 3 threads, streaming, and block by block
/// through the index) rejects `bytes`.
fn all_decoders_fail(bytes: &[u8]) -> bool {
    let mem = decompress_with(bytes, 1).is_err() && decompress_with(bytes, 3).is_err();
    let mut out = Vec::new();
    let streamed = Decoder::with_threads(bytes, 2)
        .read_to_end(&mut out)
        .is_err();
    let mut cur = Cursor::new(bytes);
    let indexed = match BlockIndex::read(&mut cur) {
        Err(_) => true,
        Ok(ix) => (0..ix.blocks.len()).any(|k| ix.read_block(&mut cur, k).is_err()),
    };
    mem && streamed && indexed
}

/// True if decoders and the listing (which reads structure, not payloads) all reject `bytes`.
fn everything_fails(bytes: &[u8]) -> bool {
    all_decoders_fail(bytes) && summarize(&mut Cursor::new(bytes)).is_err()
}

#[test]
fn sample_frame_has_every_block_kind() {
    let (data, frame) = sample_frame();
    assert_eq!(decompress_with(&frame, 1).unwrap(), data);
    let index = BlockIndex::read(&mut Cursor::new(&frame)).unwrap();
    let kinds: Vec<BlockKind> = index.blocks.iter().map(|b| b.header.kind).collect();
    assert_eq!(
        kinds,
        [BlockKind::Lz, BlockKind::Raw, BlockKind::Rle, BlockKind::Lz]
    );
    for (k, b) in index.blocks.iter().enumerate() {
        let got = index.read_block(&mut Cursor::new(&frame), k).unwrap();
        let start = b.decoded_offset as usize;
        assert_eq!(got, &data[start..start + got.len()]);
    }
    assert_eq!(index.block_containing(2048), Some(2));
    assert_eq!(index.block_containing(data.len() as u64), None);
}

#[test]
fn entropy_level_frame_has_entropy_blocks() {
    let (data, frame) = sample_frame_at(Level::Max);
    assert_eq!(decompress_with(&frame, 1).unwrap(), data);
    let index = BlockIndex::read(&mut Cursor::new(&frame)).unwrap();
    let kinds: Vec<BlockKind> = index.blocks.iter().map(|b| b.header.kind).collect();
    assert_eq!(
        kinds,
        [
            BlockKind::Elz,
            BlockKind::Raw,
            BlockKind::Rle,
            BlockKind::Elz
        ]
    );
}

#[test]
fn every_single_byte_flip_is_detected() {
    for level in [Level::Lz, Level::Max] {
        let (_, frame) = sample_frame_at(level);
        every_flip_detected(&frame);
    }
}

fn every_flip_detected(frame: &[u8]) {
    for pos in 0..frame.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = frame.to_vec();
            bad[pos] ^= flip;
            assert!(
                all_decoders_fail(&bad),
                "flip {flip:#x} at byte {pos} went undetected"
            );
        }
    }
}

#[test]
fn every_truncation_is_detected() {
    for level in [Level::Lz, Level::Max] {
        let (_, frame) = sample_frame_at(level);
        every_truncation_detected(&frame);
    }
}

fn every_truncation_detected(frame: &[u8]) {
    for len in 0..frame.len() {
        assert!(
            everything_fails(&frame[..len]),
            "truncation to {len} bytes went undetected"
        );
    }
}

/// Start offsets of each block (header included) and of the end marker.
fn block_spans(frame: &[u8]) -> Vec<(usize, usize)> {
    let index = BlockIndex::read(&mut Cursor::new(frame)).unwrap();
    index
        .blocks
        .iter()
        .map(|b| {
            let s = b.offset as usize;
            (s, s + BLOCK_HEADER_LEN + b.header.stored_size as usize)
        })
        .collect()
}

#[test]
fn spliced_blocks_are_detected() {
    let (_, frame) = sample_frame();
    let spans = block_spans(&frame);
    let piece = |i: usize| frame[spans[i].0..spans[i].1].to_vec();
    let head = &frame[..spans[0].0];
    let tail = &frame[spans[spans.len() - 1].1..];
    let variants: Vec<Vec<usize>> = vec![
        vec![1, 0, 2, 3],    // swapped
        vec![0, 1, 2],       // dropped
        vec![0, 1, 1, 2, 3], // duplicated
        vec![0, 2, 1, 3],    // reordered
    ];
    for order in variants {
        let mut bad = head.to_vec();
        for i in &order {
            bad.extend(piece(*i));
        }
        bad.extend_from_slice(tail);
        assert!(
            everything_fails(&bad),
            "block order {order:?} went undetected"
        );
    }
}

#[test]
fn concatenated_frames_decode_and_garbage_after_them_does_not() {
    let (data, frame) = sample_frame();
    let two = [frame.clone(), frame.clone()].concat();
    let expect = [data.clone(), data.clone()].concat();
    assert_eq!(decompress_with(&two, 2).unwrap(), expect);
    let mut out = Vec::new();
    Decoder::new(&two[..]).read_to_end(&mut out).unwrap();
    assert_eq!(out, expect);
    assert_eq!(summarize(&mut Cursor::new(&two)).unwrap().len(), 2);
    for junk in [&b"x"[..], b"\x89GLY", &[0u8; 40][..]] {
        let bad = [frame.clone(), junk.to_vec()].concat();
        assert!(everything_fails(&bad), "trailing {junk:?} went undetected");
    }
}

/// Rewrites the header of block `k` (and its index entry, so only the field under test is
/// wrong) and returns the frame.
fn with_block_header(frame: &[u8], k: usize, edit: impl Fn(&mut BlockHeader)) -> Vec<u8> {
    let index = BlockIndex::read(&mut Cursor::new(frame)).unwrap();
    let e = index.blocks[k];
    let mut h = e.header;
    edit(&mut h);
    let mut bad = frame.to_vec();
    let at = e.offset as usize;
    bad[at..at + BLOCK_HEADER_LEN].copy_from_slice(&h.to_bytes());
    bad
}

#[test]
fn hostile_sizes_are_rejected_without_allocating() {
    let (_, frame) = sample_frame();
    for edit in [
        |h: &mut BlockHeader| h.decoded_size = u32::MAX,
        |h: &mut BlockHeader| h.stored_size = u32::MAX,
        |h: &mut BlockHeader| h.decoded_size = 0,
        |h: &mut BlockHeader| h.stored_size = 1 << 30,
    ] {
        let bad = with_block_header(&frame, 0, edit);
        assert!(everything_fails(&bad));
    }
    // A footer that claims four billion blocks.
    let mut bad = frame.clone();
    let n = bad.len();
    bad[n - 8..n - 4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(BlockIndex::read(&mut Cursor::new(&bad)).is_err());
    assert!(everything_fails(&bad));
}

#[test]
fn errors_name_the_block_and_offset() {
    let (_, frame) = sample_frame();
    let spans = block_spans(&frame);
    // Damage the last byte of block 3's payload (LZ literals): decoding yields wrong bytes.
    let mut bad = frame.clone();
    bad[spans[3].1 - 1] ^= 0x20;
    let err = decompress_with(&bad, 1).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Checksum { block: 3, .. }), "{msg}");
    assert!(msg.contains(&format!("byte {}", spans[3].0)), "{msg}");

    // An LZ offset reaching before the block's start.
    let mut bad = frame.clone();
    let payload = spans[0].0 + BLOCK_HEADER_LEN;
    // Payload: three one-byte varints when they are small, then tokens, then offsets.
    let count = bad[payload] as usize;
    let offsets = payload + 3 + count;
    bad[offsets..offsets + 2].copy_from_slice(&0xFFFFu16.to_le_bytes());
    let msg = decompress_with(&bad, 1).unwrap_err().to_string();
    assert!(
        msg.contains("block 0") && msg.contains("before the start"),
        "{msg}"
    );
}

#[test]
fn wrong_magic_and_version_say_so() {
    let msg = decompress_with(b"hello, world, not glyd", 1)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("not a glyd stream"), "{msg}");
    let (_, frame) = sample_frame();
    let mut newer = frame.clone();
    newer[4] = 9;
    let msg = decompress_with(&newer, 1).unwrap_err().to_string();
    assert!(
        msg.contains("version 9") && msg.contains("upgrade"),
        "{msg}"
    );
    let msg = decompress_with(&[], 1).unwrap_err().to_string();
    assert!(msg.contains("truncated"), "{msg}");
}

#[test]
fn block_header_parse_rejects_impossible_fields() {
    let h = |kind: u8, dec: u32, st: u32| {
        let mut b = [0u8; BLOCK_HEADER_LEN];
        b[0] = kind;
        b[1..5].copy_from_slice(&dec.to_le_bytes());
        b[5..9].copy_from_slice(&st.to_le_bytes());
        BlockHeader::parse(&b, 1024, 0, 0)
    };
    assert!(h(0, 10, 10).is_ok());
    assert!(h(0, 10, 11).is_err(), "raw with stored != decoded");
    assert!(h(1, 10, 2).is_err(), "rle with more than one byte");
    assert!(h(2, 2000, 10).is_err(), "decoded beyond the block size");
    assert!(h(7, 10, 10).is_err(), "unknown kind");
    assert!(h(0xFF, 1, 13).is_err(), "end marker with a decoded size");
    assert!(FrameHeader::new(1, 1 << 40).is_err());
    assert_eq!(FRAME_HEADER_LEN, 9);
}
