//! Writing frames: [`Encoder`] is a `std::io::Write` that cuts its input into blocks,
//! compresses a batch of `threads` blocks at a time in parallel, and writes them in order, so
//! memory stays at about block size × threads whatever the input's length.

use std::io::{self, Write};

use crate::block::{encode_block, encode_block_into, EncodedBlock};
use crate::error::Result;
use crate::frame::{end_marker, BlockHeader, Footer, FrameHeader};
use crate::parallel;
use crate::Options;

/// Streaming compressor. Call [`Encoder::finish`] at the end: it writes the index and footer;
/// a stream dropped without it is reported as truncated by every decoder.
pub struct Encoder<W: Write> {
    inner: W,
    opts: Options,
    header: FrameHeader,
    block_size: usize,
    threads: usize,
    started: bool,
    buf: Vec<u8>,
    /// Payload memory reused by single-threaded encoding.
    payload: Vec<u8>,
    index: Vec<u8>,
    content: u64,
}

impl<W: Write> Encoder<W> {
    /// A compressor writing one frame to `inner`.
    pub fn new(inner: W, opts: &Options) -> Result<Self> {
        if opts.long && !matches!(opts.level.method(), crate::Method::Elz(_)) {
            return Err(crate::Error::InvalidOption(format!(
                "long-distance matching needs an entropy level (--max or --ultra), not --{}",
                opts.level
            )));
        }
        let block_size = opts.block_size();
        let header = FrameHeader::new(opts.level.number(), block_size)?;
        Ok(Self {
            inner,
            opts: opts.clone(),
            header,
            block_size,
            threads: parallel::resolve_threads(opts.threads),
            started: false,
            buf: Vec::new(),
            payload: Vec::new(),
            index: Vec::new(),
            content: 0,
        })
    }

    fn batch_size(&self) -> usize {
        self.block_size * self.threads
    }

    /// Bytes of input taken so far.
    pub fn bytes_in(&self) -> u64 {
        self.content + self.buf.len() as u64
    }

    fn start(&mut self) -> io::Result<()> {
        if !self.started {
            self.inner.write_all(&self.header.to_bytes())?;
            self.started = true;
        }
        Ok(())
    }

    /// Compresses `data` as whole blocks (the last may be short) and writes them.
    fn encode(&mut self, data: &[u8]) -> io::Result<()> {
        self.start()?;
        if data.is_empty() {
            return Ok(());
        }
        let (level, long) = (self.opts.level, self.opts.long);
        if self.threads <= 1 || data.len() <= self.block_size {
            // One thread: encode and write block by block through one reused payload buffer.
            let mut payload = std::mem::take(&mut self.payload);
            for chunk in data.chunks(self.block_size) {
                let header = encode_block_into(chunk, level, long, &mut payload);
                self.write_block(&header, &payload)?;
            }
            self.payload = payload;
        } else {
            let chunks: Vec<&[u8]> = data.chunks(self.block_size).collect();
            let blocks: Vec<EncodedBlock> =
                parallel::map(self.threads, &chunks, |c| encode_block(c, level, long));
            for b in blocks {
                self.write_block(&b.header, &b.payload)?;
            }
        }
        Ok(())
    }

    fn write_block(&mut self, header: &BlockHeader, payload: &[u8]) -> io::Result<()> {
        let h = header.to_bytes();
        self.inner.write_all(&h)?;
        self.inner.write_all(payload)?;
        self.index.extend_from_slice(&h);
        self.content += u64::from(header.decoded_size);
        Ok(())
    }

    /// Compresses all of `data` and finishes the frame: the one-shot path, which encodes
    /// straight from the caller's slice instead of copying a partial batch into the buffer.
    pub(crate) fn finish_with(mut self, data: &[u8]) -> Result<W> {
        self.drain()?;
        self.encode(data)?;
        self.finish()
    }

    /// Compresses the buffered input.
    fn drain(&mut self) -> io::Result<()> {
        let buf = std::mem::take(&mut self.buf);
        let r = self.encode(&buf);
        self.buf = buf;
        self.buf.clear();
        r
    }

    /// Writes what is buffered, the end marker, the index and the footer; returns the writer.
    pub fn finish(mut self) -> Result<W> {
        self.drain()?;
        let end = end_marker(&self.index);
        let footer = Footer {
            content_size: self.content,
            block_count: (self.index.len() / crate::frame::BLOCK_HEADER_LEN) as u32,
        };
        self.inner.write_all(&end.to_bytes())?;
        self.inner.write_all(&self.index)?;
        self.inner.write_all(&footer.to_bytes())?;
        self.inner.flush()?;
        Ok(self.inner)
    }

    pub fn get_ref(&self) -> &W {
        &self.inner
    }
}

impl<W: Write> Write for Encoder<W> {
    fn write(&mut self, mut data: &[u8]) -> io::Result<usize> {
        let n = data.len();
        let batch = self.batch_size();
        if !self.buf.is_empty() {
            let take = (batch - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.buf.len() == batch {
                self.drain()?;
            }
        }
        // Whole batches straight from the caller's slice, without copying.
        if self.buf.is_empty() && data.len() >= batch {
            let whole = data.len() / batch * batch;
            for piece in data[..whole].chunks(batch) {
                self.encode(piece)?;
            }
            data = &data[whole..];
        }
        if !data.is_empty() {
            if self.buf.capacity() < batch {
                self.buf.reserve_exact(batch - self.buf.len());
            }
            self.buf.extend_from_slice(data);
        }
        Ok(n)
    }

    /// Ends the current block early (so everything written so far can be decoded) and flushes
    /// the inner writer.
    fn flush(&mut self) -> io::Result<()> {
        self.drain()?;
        self.inner.flush()
    }
}
