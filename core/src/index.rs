//! Random access and listing for seekable inputs. [`BlockIndex`] reads a single-frame file's
//! footer and index (without touching the blocks) so a reader can decode any one block;
//! [`summarize`] walks every frame's headers (seeking past payloads) for `glyd -l`.

use std::io::{Read, Seek, SeekFrom};

use crate::block::decode_block;
use crate::error::{Error, Result};
use crate::frame::{
    check_index_size, check_trailer, BlockHeader, BlockKind, Footer, FrameHeader, BLOCK_HEADER_LEN,
    FOOTER_LEN, FRAME_HEADER_LEN,
};

/// One block's place in the compressed and the decoded stream.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BlockEntry {
    pub header: BlockHeader,
    /// Byte offset of the block header in the compressed stream.
    pub offset: u64,
    /// Byte offset of the block's first decoded byte.
    pub decoded_offset: u64,
}

/// The block index of a single-frame stream, read from its end.
#[derive(Clone, Debug)]
pub struct BlockIndex {
    pub header: FrameHeader,
    pub footer: Footer,
    pub blocks: Vec<BlockEntry>,
}

fn read_at<R: Read + Seek>(r: &mut R, at: u64, buf: &mut [u8], what: &'static str) -> Result<()> {
    r.seek(SeekFrom::Start(at))?;
    r.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => Error::Truncated { what, offset: at },
        _ => Error::Io(e),
    })
}

impl BlockIndex {
    /// Reads the index of the frame that `r` holds (one frame, from byte 0 to the end).
    pub fn read<R: Read + Seek>(r: &mut R) -> Result<Self> {
        let len = r.seek(SeekFrom::End(0))?;
        let min = (FRAME_HEADER_LEN + BLOCK_HEADER_LEN + FOOTER_LEN) as u64;
        if len < min {
            return Err(Error::Truncated {
                what: "frame",
                offset: 0,
            });
        }
        let mut fh = [0u8; FRAME_HEADER_LEN];
        read_at(r, 0, &mut fh, "frame header")?;
        let header = FrameHeader::parse(&fh, 0)?;
        let footer_at = len - FOOTER_LEN as u64;
        let mut fb = [0u8; FOOTER_LEN];
        read_at(r, footer_at, &mut fb, "footer")?;
        let footer = Footer::parse(&fb, footer_at)?;
        let index_len = u64::from(footer.block_count) * BLOCK_HEADER_LEN as u64;
        if index_len + min > len {
            return Err(Error::corrupt(
                "footer",
                None,
                footer_at + 8,
                format!(
                    "{} blocks cannot fit in a {len}-byte stream",
                    footer.block_count
                ),
            ));
        }
        let index_at = footer_at - index_len;
        let end_at = index_at - BLOCK_HEADER_LEN as u64;
        let mut eb = [0u8; BLOCK_HEADER_LEN];
        read_at(r, end_at, &mut eb, "end marker")?;
        let end = BlockHeader::parse(
            &eb,
            header.block_max(),
            u64::from(footer.block_count),
            end_at,
        )?;
        if end.kind != BlockKind::End || u64::from(end.stored_size) != index_len {
            return Err(Error::corrupt(
                "end marker",
                None,
                end_at,
                "the footer's block count does not lead to an end marker (several frames, or a damaged footer)",
            ));
        }
        let mut index = vec![0u8; index_len as usize];
        read_at(r, index_at, &mut index, "block index")?;
        let mut blocks = Vec::with_capacity(footer.block_count as usize);
        let (mut offset, mut decoded) = (FRAME_HEADER_LEN as u64, 0u64);
        for (k, e) in index.chunks_exact(BLOCK_HEADER_LEN).enumerate() {
            let at = index_at + (k * BLOCK_HEADER_LEN) as u64;
            let h = BlockHeader::parse(e.try_into().unwrap(), header.block_max(), k as u64, at)?;
            if h.kind == BlockKind::End {
                return Err(Error::corrupt(
                    "block index",
                    Some(k as u64),
                    at,
                    "end marker inside the index",
                ));
            }
            blocks.push(BlockEntry {
                header: h,
                offset,
                decoded_offset: decoded,
            });
            offset += (BLOCK_HEADER_LEN as u64) + u64::from(h.stored_size);
            decoded += u64::from(h.decoded_size);
        }
        if offset != end_at {
            return Err(Error::corrupt(
                "block index",
                None,
                index_at,
                format!("indexed blocks end at byte {offset}, the end marker is at {end_at} (several frames, or blocks overlap)"),
            ));
        }
        check_trailer(&end, &index, &footer, &index, decoded, index_at)?;
        Ok(Self {
            header,
            footer,
            blocks,
        })
    }

    /// Index of the block holding decoded byte `pos`.
    pub fn block_containing(&self, pos: u64) -> Option<usize> {
        if pos >= self.footer.content_size {
            return None;
        }
        Some(self.blocks.partition_point(|b| b.decoded_offset <= pos) - 1)
    }

    /// Reads and decodes block `k` alone. Its header in the stream must equal its index entry.
    pub fn read_block<R: Read + Seek>(&self, r: &mut R, k: usize) -> Result<Vec<u8>> {
        let e = self.blocks.get(k).ok_or_else(|| {
            Error::InvalidOption(format!(
                "block {k} does not exist ({} blocks)",
                self.blocks.len()
            ))
        })?;
        let mut hb = [0u8; BLOCK_HEADER_LEN];
        read_at(r, e.offset, &mut hb, "block header")?;
        if hb != e.header.to_bytes() {
            return Err(Error::corrupt(
                "block header",
                Some(k as u64),
                e.offset,
                "header differs from its index entry",
            ));
        }
        let mut payload = vec![0u8; e.header.stored_size as usize];
        read_at(
            r,
            e.offset + BLOCK_HEADER_LEN as u64,
            &mut payload,
            "block payload",
        )?;
        let mut out = vec![0u8; e.header.decoded_size as usize];
        decode_block(&e.header, &payload, &mut out, k as u64, e.offset)?;
        Ok(out)
    }
}

/// What `glyd -l` shows of one frame.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameSummary {
    pub level: u8,
    pub block_size: usize,
    pub blocks: u64,
    /// Blocks stored as raw, RLE, LZ and entropy LZ, in that order (indexed by block type).
    pub kinds: [u64; 4],
    pub compressed_size: u64,
    pub content_size: u64,
}

/// Walks every frame of a seekable stream, validating headers, indexes and footers (but not
/// decoding blocks: use a decoder for that, as `glyd -t` does).
pub fn summarize<R: Read + Seek>(r: &mut R) -> Result<Vec<FrameSummary>> {
    let len = r.seek(SeekFrom::End(0))?;
    let mut frames = Vec::new();
    let mut pos = 0u64;
    while pos < len || frames.is_empty() {
        let start = pos;
        let mut fh = [0u8; FRAME_HEADER_LEN];
        read_at(r, pos, &mut fh, "frame header")?;
        let header = FrameHeader::parse(&fh, pos)?;
        pos += FRAME_HEADER_LEN as u64;
        let mut s = FrameSummary {
            level: header.level,
            block_size: header.block_max(),
            ..Default::default()
        };
        let mut seen = Vec::new();
        loop {
            let mut hb = [0u8; BLOCK_HEADER_LEN];
            read_at(r, pos, &mut hb, "block header")?;
            let h = BlockHeader::parse(&hb, header.block_max(), s.blocks, pos)?;
            pos += BLOCK_HEADER_LEN as u64;
            if h.kind == BlockKind::End {
                check_index_size(&h, seen.len(), pos - BLOCK_HEADER_LEN as u64)?;
                let mut index = vec![0u8; seen.len()];
                read_at(r, pos, &mut index, "block index")?;
                let index_at = pos;
                pos += index.len() as u64;
                let mut fb = [0u8; FOOTER_LEN];
                read_at(r, pos, &mut fb, "footer")?;
                let footer = Footer::parse(&fb, pos)?;
                pos += FOOTER_LEN as u64;
                check_trailer(&h, &index, &footer, &seen, s.content_size, index_at)?;
                break;
            }
            pos += u64::from(h.stored_size);
            if pos > len {
                return Err(Error::Truncated {
                    what: "block payload",
                    offset: pos - u64::from(h.stored_size),
                });
            }
            seen.extend_from_slice(&hb);
            s.blocks += 1;
            s.kinds[h.kind as usize] += 1;
            s.content_size += u64::from(h.decoded_size);
        }
        s.compressed_size = pos - start;
        frames.push(s);
    }
    Ok(frames)
}
