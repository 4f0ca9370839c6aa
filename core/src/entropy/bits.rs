//! Forward bit streams, least significant bit first: the one bit layout that every glyd entropy
//! coder writes and reads (`docs/FORMAT.md` §5.1).
//!
//! The reader keeps a 64-bit buffer refilled with one unaligned 8-byte load, so a decode loop
//! can take up to 56 bits between refills. Reading past the end yields zero bits instead of
//! failing; callers check [`BitReader::finish`] once at the end, which is how a corrupt length
//! or table is caught without a check per symbol.

/// Appends bits to a byte vector, least significant first.
///
/// FAST PATH: every [`BitWriter::put`] stores the whole 64-bit accumulator at the write
/// position and advances by the complete bytes in it, so there is no branch on whether a
/// flush is due. The vector is kept at least 8 bytes longer than what is written (its tail is
/// scratch until [`BitWriter::finish`] cuts it).
#[derive(Default)]
pub struct BitWriter {
    out: Vec<u8>,
    /// Complete bytes written.
    len: usize,
    /// Bits not yet complete (fewer than 8 between calls).
    acc: u64,
    nbits: u32,
}

impl BitWriter {
    pub fn new() -> Self {
        Self::default()
    }

    /// A writer into `out`'s memory: what it holds is scratch the writer overwrites (kept
    /// as such, not cleared: zeroing it for every block cost ~1% of --max compress).
    pub fn with_vec(out: Vec<u8>) -> Self {
        Self {
            out,
            len: 0,
            acc: 0,
            nbits: 0,
        }
    }

    /// Makes room for about `bytes` more bytes, so that the puts that write them do not grow
    /// the vector one step at a time.
    pub fn reserve(&mut self, bytes: usize) {
        let want = self.len + bytes + 8;
        if self.out.len() < want {
            self.out.resize(want, 0);
        }
    }

    /// Appends the low `n` bits of `v` (`n` ≤ 56; bits of `v` above `n` must be zero).
    #[inline(always)]
    pub fn put(&mut self, v: u64, n: u32) {
        if self.len + 8 > self.out.len() {
            self.grow();
        }
        self.put_reserved(v, n);
    }

    /// [`put`](Self::put) into room that [`reserve`](Self::reserve) made (it panics where there
    /// is none): without `put`'s growth check, a call that takes the writer's address, a loop
    /// of these keeps the writer in registers.
    #[inline(always)]
    pub fn put_reserved(&mut self, v: u64, n: u32) {
        debug_assert!(n <= 56 && (n == 56 || v >> n == 0));
        // `nbits` < 8 and `n` ≤ 56: the sum fits the accumulator.
        self.acc |= v << self.nbits;
        self.nbits += n;
        self.out[self.len..self.len + 8].copy_from_slice(&self.acc.to_le_bytes());
        let bytes = self.nbits >> 3;
        self.len += bytes as usize;
        // `bytes` ≤ 7, so the shift is below 64.
        self.acc >>= bytes * 8;
        self.nbits &= 7;
    }

    #[cold]
    fn grow(&mut self) {
        let want = (self.out.len() * 2).max(self.len + 64);
        self.out.resize(want, 0);
    }

    /// Bits written so far.
    pub fn bit_len(&self) -> usize {
        self.len * 8 + self.nbits as usize
    }

    /// The stream's bytes, its [`bit_len`](Self::bit_len) bits (the last byte padded with zero
    /// bits) and scratch after them, for a caller that cuts it by bit ranges: kept at its
    /// length, the memory is not zeroed again when a writer next takes it ([`Self::with_vec`]).
    pub fn into_scratch(self) -> Vec<u8> {
        // Every put stored the accumulator after `len`, zero above its `nbits`.
        self.out
    }

    /// Pads the last byte with zero bits and returns the bytes.
    pub fn finish(mut self) -> Vec<u8> {
        // The last put stored the accumulator after `len`, zero above its `nbits`.
        let end = self.len + self.nbits.div_ceil(8) as usize;
        if self.out.len() < end {
            self.grow();
            self.out[self.len..self.len + 8].copy_from_slice(&self.acc.to_le_bytes());
        }
        self.out.truncate(end);
        self.out
    }
}

/// Appends bits `start..end` of `stream` (a [`BitWriter`]'s output) to `out` as a stream of
/// their own, as a [`BitWriter`] given just those bits would write it: one stream written
/// once, then cut in pieces, instead of a put per field per piece.
pub fn append_bit_range(stream: &[u8], start: usize, end: usize, out: &mut Vec<u8>) {
    debug_assert!(start <= end && end.div_ceil(8) <= stream.len());
    let len = (end - start).div_ceil(8);
    let (first, shift) = (start / 8, (start % 8) as u32);
    let src = &stream[first..end.div_ceil(8)];
    if shift == 0 {
        out.extend_from_slice(&src[..len]);
    } else {
        // Each byte out takes the high bits of one byte in and the low bits of the next:
        // eight at a time from a 9-byte window while one is there, then one by one.
        let at = out.len();
        out.resize(at + len, 0);
        let dst = &mut out[at..];
        let words = src.len().saturating_sub(8) / 8;
        for (d, s) in dst
            .chunks_exact_mut(8)
            .zip(src.windows(9).step_by(8))
            .take(words)
        {
            let lo = u64::from_le_bytes(s[..8].try_into().expect("8 bytes"));
            let w = lo >> shift | u64::from(s[8]) << (64 - shift);
            d.copy_from_slice(&w.to_le_bytes());
        }
        let next = |i: usize| src.get(i + 1).map_or(0, |&b| b << (8 - shift));
        for (i, d) in dst.iter_mut().enumerate().skip(words * 8) {
            *d = src[i] >> shift | next(i);
        }
    }
    // Bits at and after `end` belong to the next range: zero, as a writer pads.
    let tail = ((end - start) % 8) as u32;
    if tail != 0 {
        if let Some(last) = out.last_mut() {
            *last &= (1u8 << tail) - 1;
        }
    }
}

/// The last bytes of `data` from `pos`, zero-padded to eight. By value, not `&self`: a call
/// that takes the reader's address would keep its fields in memory through every decode loop.
#[cold]
fn load_tail(data: &[u8], pos: usize) -> u64 {
    let mut b = [0u8; 8];
    if pos < data.len() {
        let rest = &data[pos..];
        b[..rest.len()].copy_from_slice(rest);
    }
    u64::from_le_bytes(b)
}

/// Reads a stream written by [`BitWriter`].
#[derive(Clone, Copy)]
pub struct BitReader<'a> {
    data: &'a [u8],
    /// Next byte to load.
    pos: usize,
    acc: u64,
    /// Valid bits in `acc`.
    nbits: u32,
}

impl<'a> BitReader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        let mut r = Self {
            data,
            pos: 0,
            acc: 0,
            nbits: 0,
        };
        r.refill();
        r
    }

    /// A reader of `data` from bit `bit` on (which may lie past the end: the reader then
    /// yields zeros and [`BitReader::finish`] fails).
    pub fn at(data: &'a [u8], bit: usize) -> Self {
        let mut r = Self {
            data,
            pos: bit / 8,
            acc: 0,
            nbits: 0,
        };
        r.refill();
        r.consume((bit % 8) as u32);
        r
    }

    /// Eight bytes from `pos`, zeros past the end of the data.
    #[inline(always)]
    fn load(&self) -> u64 {
        if self.pos + 8 <= self.data.len() {
            // FAST PATH: one unaligned load, bounds checked by the line above (slice indexing
            // here costs a second check and a length computation on every refill).
            // SAFETY: `pos + 8 <= data.len()`, so the eight bytes are inside `data`.
            unsafe {
                u64::from_le(std::ptr::read_unaligned(
                    self.data.as_ptr().add(self.pos).cast::<u64>(),
                ))
            }
        } else {
            load_tail(self.data, self.pos)
        }
    }

    /// Tops the buffer up to at least 56 valid bits.
    #[inline(always)]
    pub fn refill(&mut self) {
        // Bits above `nbits` are either zero or the stream's own next bits, so OR-ing the same
        // bytes in again is harmless; whole bytes only are counted as taken.
        self.acc |= self.load() << self.nbits;
        self.pos += ((63 - self.nbits) / 8) as usize;
        // Whole bytes taken leave 56..=63 valid bits: `nbits + 8 * ((63 - nbits) / 8)`.
        self.nbits |= 56;
    }

    /// The next `n` bits without consuming them (`n` ≤ valid bits).
    #[inline(always)]
    pub fn peek(&self, n: u32) -> u64 {
        self.acc & ((1u64 << n) - 1)
    }

    /// Drops `n` bits (`n` ≤ valid bits, as the caller's refill schedule guarantees).
    #[inline(always)]
    pub fn consume(&mut self, n: u32) {
        debug_assert!(n <= self.nbits);
        self.acc >>= n;
        self.nbits -= n;
    }

    /// Reads `n` ≤ 56 bits; the caller has refilled since taking 56 − `n` bits or fewer.
    #[inline(always)]
    pub fn get(&mut self, n: u32) -> u64 {
        let v = self.peek(n);
        self.consume(n);
        v
    }

    /// Valid bits in the buffer.
    #[inline(always)]
    pub fn available(&self) -> u32 {
        self.nbits
    }

    /// Bits consumed so far.
    pub fn consumed_bits(&self) -> u64 {
        self.pos as u64 * 8 - u64::from(self.nbits)
    }

    /// Checks that the reader consumed the stream exactly: no bit past the end, no byte left
    /// unread, and zero padding bits (the writer pads only the last byte, with zeros), so every
    /// bit of a stream is checked.
    pub fn finish(&self) -> Result<(), &'static str> {
        self.finish_padded()?;
        if self.consumed_bits().div_ceil(8) != self.data.len() as u64 {
            return Err("bit stream has unread bytes");
        }
        Ok(())
    }

    /// Checks that the reader stayed within the stream and that the rest of the current byte is
    /// zero padding; returns the bytes consumed.
    pub fn finish_padded(&self) -> Result<usize, &'static str> {
        let used = self.consumed_bits();
        if used > self.data.len() as u64 * 8 {
            return Err("bit stream read past its end");
        }
        let pad = ((8 - used % 8) % 8) as u32;
        if self.acc & ((1u64 << pad) - 1) != 0 {
            return Err("bit stream padding is not zero");
        }
        Ok(used.div_ceil(8) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_mixed_widths() {
        let fields: Vec<(u64, u32)> = (0..5000u64)
            .map(|i| {
                let n = (i * 7 % 57) as u32;
                let v = if n == 0 {
                    0
                } else {
                    (i * 0x9E37_79B9) & ((1u64 << n) - 1)
                };
                (v, n)
            })
            .collect();
        let mut w = BitWriter::new();
        for &(v, n) in &fields {
            w.put(v, n);
        }
        let bytes = w.finish();
        let total: u64 = fields.iter().map(|f| u64::from(f.1)).sum();
        assert_eq!(bytes.len() as u64, total.div_ceil(8));
        let mut r = BitReader::new(&bytes);
        for &(v, n) in &fields {
            r.refill();
            assert_eq!(r.get(n), v);
        }
        r.finish().unwrap();
    }

    #[test]
    fn writers_over_old_memory_write_what_new_ones_do() {
        for n in [0u32, 3, 8, 61] {
            let mut fresh = BitWriter::new();
            let mut reused = BitWriter::with_vec(vec![0xFF; 40]);
            for i in 0..n {
                let (v, bits) = (u64::from(i).wrapping_mul(2_654_435_761) % 97, i % 7 + 1);
                fresh.put(v & ((1 << bits) - 1), bits);
                reused.put(v & ((1 << bits) - 1), bits);
            }
            assert_eq!(fresh.finish(), reused.finish(), "{n} fields");
        }
    }

    #[test]
    fn bit_ranges_equal_streams_written_alone() {
        let fields: Vec<(u64, u32)> = (0..300u64)
            .map(|i| {
                let n = (i * 13 % 30) as u32;
                ((i * 0x9E37_79B9) & ((1u64 << n) - 1), n)
            })
            .collect();
        // The bit position before each field, and after the last.
        let mut whole = BitWriter::new();
        let mut at = vec![0];
        for &(v, n) in &fields {
            whole.put(v, n);
            at.push(whole.bit_len());
        }
        // The same written with `put_reserved` over old memory, kept at its length: the
        // scratch after the stream must not leak into the last range.
        let mut over_old = BitWriter::with_vec(vec![0xFF; 4096]);
        over_old.reserve(fields.len() * 8);
        for &(v, n) in &fields {
            over_old.put_reserved(v, n);
        }
        assert_eq!(over_old.bit_len(), *at.last().unwrap());
        let scratch = over_old.into_scratch();
        assert!(scratch.len() > at.last().unwrap().div_ceil(8));
        for stream in [whole.finish(), scratch] {
            for a in (0..fields.len()).step_by(7) {
                for b in (a..=fields.len()).step_by(11) {
                    let mut alone = BitWriter::new();
                    for &(v, n) in &fields[a..b] {
                        alone.put(v, n);
                    }
                    let mut cut = vec![0xAA];
                    append_bit_range(&stream, at[a], at[b], &mut cut);
                    assert_eq!(cut[1..], alone.finish()[..], "fields {a}..{b}");
                }
            }
        }
    }

    #[test]
    fn finish_catches_overrun_and_leftovers() {
        let mut w = BitWriter::new();
        w.put(5, 3);
        let bytes = w.finish();
        let mut r = BitReader::new(&bytes);
        r.get(3);
        r.finish().unwrap();
        r.get(8);
        assert!(r.finish().is_err());
        let two = [1u8, 2];
        let mut r = BitReader::new(&two);
        r.get(3);
        assert!(r.finish().is_err());
    }
}
