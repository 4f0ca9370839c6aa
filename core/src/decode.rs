//! Reading frames. [`decompress_into`] decodes a whole stream held in memory, every block on
//! its own core, straight into the caller's buffer. [`Decoder`] is a `std::io::Read` over any
//! reader (a pipe included): it reads a batch of blocks from the block headers alone, decodes the
//! batch in parallel, and serves the bytes in order. Both accept concatenated frames and both
//! check every frame's index and footer against the blocks they read.

use std::io::{self, Read};

use crate::block::decode_block;
use crate::error::{Error, Result};
use crate::frame::{
    check_index_size, check_trailer, BlockHeader, BlockKind, Footer, FrameHeader, BLOCK_HEADER_LEN,
    FOOTER_LEN, FRAME_HEADER_LEN,
};
use crate::parallel;

/// One block located in an in-memory stream.
struct BlockRef<'a> {
    header: BlockHeader,
    payload: &'a [u8],
    block: u64,
    offset: u64,
}

fn take<'a>(src: &'a [u8], pos: usize, n: usize, what: &'static str) -> Result<&'a [u8]> {
    src.get(pos..pos.saturating_add(n)).ok_or(Error::Truncated {
        what,
        offset: pos as u64,
    })
}

/// Walks every frame of `src`, validating headers, indexes and footers; returns the blocks
/// and the total decoded size.
fn scan(src: &[u8]) -> Result<(Vec<BlockRef<'_>>, u64)> {
    let mut blocks = Vec::new();
    let mut total = 0u64;
    let mut pos = 0usize;
    loop {
        if pos == src.len() && pos > 0 {
            return Ok((blocks, total));
        }
        let fh = take(src, pos, FRAME_HEADER_LEN, "frame header")?;
        let header = FrameHeader::parse(fh.try_into().unwrap(), pos as u64)?;
        pos += FRAME_HEADER_LEN;
        let first = blocks.len();
        let mut content = 0u64;
        loop {
            let offset = pos as u64;
            let block = (blocks.len() - first) as u64;
            let hb = take(src, pos, BLOCK_HEADER_LEN, "block header")?;
            let h = BlockHeader::parse(hb.try_into().unwrap(), header.block_max(), block, offset)?;
            pos += BLOCK_HEADER_LEN;
            if h.kind == BlockKind::End {
                let index = take(src, pos, h.stored_size as usize, "block index")?;
                let index_offset = pos as u64;
                pos += index.len();
                let fb = take(src, pos, FOOTER_LEN, "footer")?;
                let footer = Footer::parse(fb.try_into().unwrap(), pos as u64)?;
                pos += FOOTER_LEN;
                let seen: Vec<u8> = blocks[first..]
                    .iter()
                    .flat_map(|b: &BlockRef| b.header.to_bytes())
                    .collect();
                check_trailer(&h, index, &footer, &seen, content, index_offset)?;
                break;
            }
            let payload = take(src, pos, h.stored_size as usize, "block payload")?;
            pos += payload.len();
            content += u64::from(h.decoded_size);
            blocks.push(BlockRef {
                header: h,
                payload,
                block,
                offset,
            });
        }
        total += content;
    }
}

/// Decoded size of the stream in `src` (all frames), after validating its structure.
pub fn decompressed_size(src: &[u8]) -> Result<u64> {
    scan(src).map(|(_, n)| n)
}

/// Decodes the stream in `src` into the start of `dst` on `threads` threads (0 = all cores);
/// returns the decoded length. `dst` must hold at least [`decompressed_size`] bytes.
pub fn decompress_into(src: &[u8], dst: &mut [u8], threads: usize) -> Result<usize> {
    let (blocks, total) = scan(src)?;
    if total > dst.len() as u64 {
        return Err(Error::OutputTooSmall {
            needed: total,
            available: dst.len(),
        });
    }
    let mut rest = &mut dst[..total as usize];
    let mut jobs = Vec::with_capacity(blocks.len());
    for b in &blocks {
        let (out, tail) = rest.split_at_mut(b.header.decoded_size as usize);
        rest = tail;
        jobs.push((b, out));
    }
    let results = parallel::map_mut(parallel::resolve_threads(threads), &mut jobs, |(b, out)| {
        decode_block(&b.header, b.payload, out, b.block, b.offset)
    });
    results.into_iter().collect::<Result<Vec<()>>>()?;
    Ok(total as usize)
}

/// Decodes the stream in `src` on every core.
pub fn decompress(src: &[u8]) -> Result<Vec<u8>> {
    decompress_with(src, 0)
}

/// Decodes the stream in `src` on `threads` threads (0 = all cores).
pub fn decompress_with(src: &[u8], threads: usize) -> Result<Vec<u8>> {
    let total = decompressed_size(src)?;
    let total = usize::try_from(total).map_err(|_| Error::OutputTooSmall {
        needed: total,
        available: usize::MAX,
    })?;
    let mut out = vec![0u8; total];
    decompress_into(src, &mut out, threads)?;
    Ok(out)
}

/// A reader that counts the stream offset and turns an early end into [`Error::Truncated`].
struct Counted<R> {
    inner: R,
    pos: u64,
}

impl<R: Read> Counted<R> {
    fn exact(&mut self, buf: &mut [u8], what: &'static str) -> Result<()> {
        let start = self.pos;
        let n = self.fill(buf)?;
        if n < buf.len() {
            return Err(Error::Truncated {
                what,
                offset: start,
            });
        }
        Ok(())
    }

    /// Reads until `buf` is full or the input ends; returns the bytes read.
    fn fill(&mut self, buf: &mut [u8]) -> Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            match self.inner.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.pos += n as u64;
        Ok(n)
    }
}

/// Where a [`Decoder`] stands in its input.
enum State {
    /// Between frames (or before the first).
    FrameStart,
    /// Inside a frame.
    Blocks {
        header: FrameHeader,
        seen: Vec<u8>,
        content: u64,
    },
    /// The input ended cleanly.
    Done,
    /// An error was returned; the stream cannot continue.
    Failed,
}

/// A block read from the input and waiting to be decoded.
struct Pending {
    header: BlockHeader,
    block: u64,
    offset: u64,
    payload: Vec<u8>,
}

/// A block header read but not yet taken into a batch (the batch was full).
struct Held {
    header: BlockHeader,
    bytes: [u8; BLOCK_HEADER_LEN],
    block: u64,
    offset: u64,
}

/// Streaming decompressor over any reader. It holds the blocks of one batch, compressed and
/// decoded: up to `threads` blocks, fewer where their sizes would pass the memory limit
/// ([`crate::DEFAULT_MEMORY_LIMIT`] unless set), and a block that alone needs more than the
/// limit is an error before anything is allocated for it.
pub struct Decoder<R: Read> {
    src: Counted<R>,
    threads: usize,
    memory: u64,
    held: Option<Held>,
    state: State,
    frames: u64,
    pending: Vec<Pending>,
    spare: Vec<Vec<u8>>,
    out: Vec<u8>,
    out_pos: usize,
}

impl<R: Read> Decoder<R> {
    /// A decoder on all cores.
    pub fn new(inner: R) -> Self {
        Self::with_threads(inner, 0)
    }

    /// A decoder on `threads` threads (0 = all cores).
    pub fn with_threads(inner: R, threads: usize) -> Self {
        Self {
            src: Counted { inner, pos: 0 },
            threads: parallel::resolve_threads(threads),
            memory: crate::DEFAULT_MEMORY_LIMIT,
            held: None,
            state: State::FrameStart,
            frames: 0,
            pending: Vec::new(),
            spare: Vec::new(),
            out: Vec::new(),
            out_pos: 0,
        }
    }

    /// Sets the memory limit (bytes of compressed and decoded blocks held at once).
    pub fn with_memory_limit(mut self, bytes: u64) -> Self {
        self.memory = bytes.max(1);
        self
    }

    /// Bytes of compressed input consumed so far.
    pub fn bytes_in(&self) -> u64 {
        self.src.pos
    }

    /// Reads and decodes the next batch of blocks into `self.out`. `false` at the clean end.
    fn refill(&mut self) -> Result<bool> {
        loop {
            match &mut self.state {
                State::Done => return Ok(false),
                State::Failed => {
                    return Err(Error::Io(io::Error::other(
                        "an earlier error ended this glyd stream",
                    )))
                }
                State::FrameStart => {
                    let offset = self.src.pos;
                    let mut b = [0u8; FRAME_HEADER_LEN];
                    let n = self.src.fill(&mut b)?;
                    if n == 0 && self.frames > 0 {
                        self.state = State::Done;
                        return Ok(false);
                    }
                    if n < FRAME_HEADER_LEN {
                        let m = n.min(4);
                        if n > 0 && b[..m] != crate::frame::MAGIC[..m] {
                            return Err(Error::BadMagic {
                                offset,
                                found: crate::frame::hex(&b[..m]),
                            });
                        }
                        return Err(Error::Truncated {
                            what: "frame header",
                            offset,
                        });
                    }
                    let header = FrameHeader::parse(&b, offset)?;
                    self.state = State::Blocks {
                        header,
                        seen: Vec::new(),
                        content: 0,
                    };
                }
                State::Blocks {
                    header,
                    seen,
                    content,
                } => {
                    let want = self.threads.max(1);
                    let mut ended = false;
                    let mut held_bytes = 0u64;
                    while self.pending.len() < want {
                        let Held {
                            header: h,
                            bytes: hb,
                            block,
                            offset,
                        } = match self.held.take() {
                            Some(held) => held,
                            None => {
                                let offset = self.src.pos;
                                let block = (seen.len() / BLOCK_HEADER_LEN) as u64;
                                let mut hb = [0u8; BLOCK_HEADER_LEN];
                                self.src.exact(&mut hb, "block header")?;
                                let h = BlockHeader::parse(&hb, header.block_max(), block, offset)?;
                                Held {
                                    header: h,
                                    bytes: hb,
                                    block,
                                    offset,
                                }
                            }
                        };
                        let need = u64::from(h.stored_size) + u64::from(h.decoded_size);
                        if need > self.memory {
                            return Err(Error::MemoryLimit {
                                what: "block",
                                offset,
                                needed: need,
                                limit: self.memory,
                            });
                        }
                        if !self.pending.is_empty() && held_bytes + need > self.memory {
                            self.held = Some(Held {
                                header: h,
                                bytes: hb,
                                block,
                                offset,
                            });
                            break;
                        }
                        held_bytes += need;
                        if h.kind == BlockKind::End {
                            // The index repeats the headers already read: its size is known,
                            // so a hostile size never drives an allocation.
                            check_index_size(&h, seen.len(), offset)?;
                            let index_offset = self.src.pos;
                            let mut index = vec![0u8; seen.len()];
                            self.src.exact(&mut index, "block index")?;
                            let footer_offset = self.src.pos;
                            let mut fb = [0u8; FOOTER_LEN];
                            self.src.exact(&mut fb, "footer")?;
                            let footer = Footer::parse(&fb, footer_offset)?;
                            check_trailer(&h, &index, &footer, seen, *content, index_offset)?;
                            ended = true;
                            break;
                        }
                        let mut payload = self.spare.pop().unwrap_or_default();
                        payload.resize(h.stored_size as usize, 0);
                        self.src.exact(&mut payload, "block payload")?;
                        seen.extend_from_slice(&hb);
                        *content += u64::from(h.decoded_size);
                        self.pending.push(Pending {
                            header: h,
                            block,
                            offset,
                            payload,
                        });
                    }
                    if ended {
                        self.frames += 1;
                        self.state = State::FrameStart;
                    }
                    if !self.pending.is_empty() {
                        self.decode_pending()?;
                        return Ok(true);
                    }
                }
            }
        }
    }

    fn decode_pending(&mut self) -> Result<()> {
        let total: usize = self
            .pending
            .iter()
            .map(|p| p.header.decoded_size as usize)
            .sum();
        self.out.resize(total, 0);
        self.out_pos = 0;
        let mut rest = &mut self.out[..];
        let mut jobs = Vec::with_capacity(self.pending.len());
        for p in &self.pending {
            let (out, tail) = rest.split_at_mut(p.header.decoded_size as usize);
            rest = tail;
            jobs.push((p, out));
        }
        let results = parallel::map_mut(self.threads, &mut jobs, |(p, out)| {
            decode_block(&p.header, &p.payload, out, p.block, p.offset)
        });
        drop(jobs);
        for p in self.pending.drain(..) {
            self.spare.push(p.payload);
        }
        results.into_iter().collect::<Result<Vec<()>>>()?;
        Ok(())
    }
}

impl<R: Read> Read for Decoder<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        while self.out_pos == self.out.len() {
            match self.refill() {
                Ok(true) => {}
                Ok(false) => return Ok(0),
                Err(e) => {
                    self.state = State::Failed;
                    self.out.clear();
                    self.out_pos = 0;
                    return Err(e.into());
                }
            }
        }
        let n = buf.len().min(self.out.len() - self.out_pos);
        buf[..n].copy_from_slice(&self.out[self.out_pos..self.out_pos + n]);
        self.out_pos += n;
        Ok(n)
    }
}
