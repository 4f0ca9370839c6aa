//! Where a row group's rebuilt bytes go: appended to a buffer that, when a consumer takes
//! them as they come, is passed on and emptied after every tile of rows.
//!
//! Rebuilt whole, a row group's 16 MiB were written to memory, then read back for the
//! checksum, then read again to be copied out (or compared with the input, when the writer
//! verifies its work). Passed on a tile at a time, the bytes are checksummed and copied while
//! they are still in cache, and the buffer stays small.

use crate::error::{Error, Result};

/// Bytes gathered before they are passed on: a few tiles' worth, well inside L2.
const PASS_ON: usize = 128 << 10;

/// What takes a row group's bytes as they come.
pub type Take<'a> = &'a mut dyn FnMut(&[u8]) -> Result<()>;

/// A row group's rebuilt bytes: appended to `buf` (after what it held before), and passed to
/// `take` and cleared from it every [`PASS_ON`] bytes when there is a `take`.
pub struct Rebuilt<'a> {
    pub buf: &'a mut Vec<u8>,
    /// Where this row group's bytes begin in `buf`.
    start: usize,
    take: Option<Take<'a>>,
    /// Bytes passed to `take` so far.
    passed: usize,
}

impl<'a> Rebuilt<'a> {
    /// The row group's bytes, all kept in `buf`.
    pub fn kept(buf: &'a mut Vec<u8>) -> Self {
        Rebuilt {
            start: buf.len(),
            buf,
            take: None,
            passed: 0,
        }
    }

    /// The row group's bytes, passed to `take` as they come (`buf` is scratch).
    pub fn passed_on(buf: &'a mut Vec<u8>, take: Take<'a>) -> Self {
        buf.clear();
        Rebuilt {
            start: 0,
            buf,
            take: Some(take),
            passed: 0,
        }
    }

    /// Bytes rebuilt so far.
    pub fn len(&self) -> usize {
        self.passed + self.buf.len() - self.start
    }

    /// Called after each tile of rows: passes the bytes on once there are enough of them.
    pub fn tile_done(&mut self) -> Result<()> {
        if self.buf.len() - self.start >= PASS_ON {
            self.pass_on()?;
        }
        Ok(())
    }

    /// Passes on what `buf` holds of the row group (if there is a taker); the row group's
    /// last bytes go this way when it is done.
    pub fn pass_on(&mut self) -> Result<()> {
        if let Some(take) = self.take.as_mut() {
            take(&self.buf[self.start..])?;
            self.passed += self.buf.len() - self.start;
            self.buf.truncate(self.start);
        }
        Ok(())
    }

    /// An error unless the bytes rebuilt so far are at most `limit`.
    pub fn check_limit(&self, limit: usize) -> Result<()> {
        if self.len() > limit {
            return Err(Error::corrupt(
                "row group",
                0,
                format!("rows rebuild to more than the {limit} input bytes"),
            ));
        }
        Ok(())
    }
}
