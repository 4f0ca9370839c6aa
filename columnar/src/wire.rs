//! Byte-level building blocks of the archive's own structures: LEB128 varints, zigzag signed
//! integers, and a bounds-checked cursor whose errors carry the archive offset.

use crate::error::{Error, Result};

pub use glyd_core::varint::put as put_varint;

/// Maps signed to unsigned so that small magnitudes get small codes: 0, -1, 1, -2, ...
#[inline]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline]
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// A cursor over bytes that belong to the archive at `base`; every read is bounds-checked and
/// every error names the structure and its offset in the archive.
pub struct Cursor<'a> {
    src: &'a [u8],
    pos: usize,
    base: u64,
    what: &'static str,
}

impl<'a> Cursor<'a> {
    /// A cursor over `src`, which starts at archive byte `base` and holds a `what`.
    pub fn new(src: &'a [u8], base: u64, what: &'static str) -> Self {
        Self {
            src,
            pos: 0,
            base,
            what,
        }
    }

    /// Archive offset of the next byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.src.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos == self.src.len()
    }

    fn truncated(&self) -> Error {
        Error::Truncated {
            what: self.what,
            offset: self.offset(),
        }
    }

    /// A corruption error at the cursor's position.
    pub fn corrupt(&self, detail: impl Into<String>) -> Error {
        Error::corrupt(self.what, self.offset(), detail)
    }

    pub fn u8(&mut self) -> Result<u8> {
        let b = *self.src.get(self.pos).ok_or_else(|| self.truncated())?;
        self.pos += 1;
        Ok(b)
    }

    #[inline]
    pub fn varint(&mut self) -> Result<u64> {
        let at = self.pos;
        match glyd_core::varint::get(self.src, &mut self.pos) {
            Some(v) => Ok(v),
            None => Err(self.bad_varint(at)),
        }
    }

    /// The error for a varint at `at` that did not read: truncated (a pipe reader then reads
    /// on) if the bytes ran out, malformed otherwise.
    #[cold]
    fn bad_varint(&mut self, at: usize) -> Error {
        if self.src[at..].iter().all(|&b| b & 0x80 != 0) {
            self.pos = self.src.len();
            self.truncated()
        } else {
            self.pos = at;
            self.corrupt("varint longer than 10 bytes or over 64 bits")
        }
    }

    /// A varint that must be at most `max` (a count or length bounded by what holds it).
    pub fn bounded(&mut self, max: u64, field: &str) -> Result<usize> {
        let at = self.offset();
        let v = self.varint()?;
        if v > max {
            return Err(Error::corrupt(
                self.what,
                at,
                format!("{field} {v} exceeds its bound {max}"),
            ));
        }
        Ok(v as usize)
    }

    pub fn signed(&mut self) -> Result<i64> {
        self.varint().map(unzigzag)
    }

    /// The next eight bytes if they are eight one-byte varints (each below 128), consumed.
    #[inline]
    pub fn eight_small_varints(&mut self) -> Option<[u8; 8]> {
        let w: [u8; 8] = self.src.get(self.pos..self.pos + 8)?.try_into().ok()?;
        (u64::from_le_bytes(w) & 0x8080_8080_8080_8080 == 0).then(|| {
            self.pos += 8;
            w
        })
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.truncated());
        }
        let b = &self.src[self.pos..self.pos + n];
        self.pos += n;
        Ok(b)
    }

    /// A varint length, then that many bytes.
    pub fn prefixed(&mut self) -> Result<&'a [u8]> {
        // A length past the end reads as truncation: a streaming reader then reads on.
        let n = self.varint()?;
        if n > self.remaining() as u64 {
            return Err(self.truncated());
        }
        self.bytes(n as usize)
    }

    /// Fails unless every byte was read.
    pub fn finish(&self) -> Result<()> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(self.corrupt(format!("{} unexpected bytes at the end", self.remaining())))
        }
    }
}

/// Appends a varint length and the bytes.
pub fn put_prefixed(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_zigzag_round_trip() {
        let vals = [0i64, 1, -1, 63, -64, 64, i64::MAX, i64::MIN, 1 << 40];
        let mut out = Vec::new();
        for &v in &vals {
            put_varint(&mut out, zigzag(v));
        }
        let mut c = Cursor::new(&out, 0, "test");
        for &v in &vals {
            assert_eq!(c.signed().unwrap(), v);
        }
        c.finish().unwrap();
        assert!(Cursor::new(&[0x80], 0, "t").varint().is_err());
        assert!(Cursor::new(&[0xff; 11], 0, "t").varint().is_err());
    }
}
