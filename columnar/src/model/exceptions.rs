//! The exception stream: input that a shredder cannot represent exactly (a line with the wrong
//! field count, broken quoting, invalid UTF-8) kept verbatim at its position among the rows, so
//! nothing is ever lost.

use crate::error::{Error, Result};
use crate::wire::{put_varint, Cursor};

/// Verbatim pieces of input, each placed before row `rows[i]` of its row group (`rows[i]` may
/// equal the row count: after the last row).
#[derive(Default, Clone, Debug, PartialEq, Eq)]
pub struct Exceptions {
    pub rows: Vec<u64>,
    pub data: Vec<u8>,
    pub ends: Vec<u32>,
}

impl Exceptions {
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn push(&mut self, row: u64, bytes: &[u8]) {
        self.rows.push(row);
        self.data.extend_from_slice(bytes);
        self.ends.push(self.data.len() as u32);
    }

    pub fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.data[start as usize..self.ends[i] as usize]
    }

    /// Two streams: positions (row deltas) and lengths as varints; then the bytes.
    pub fn encode(&self) -> (Vec<u8>, Vec<u8>) {
        let mut head = Vec::new();
        let mut prev = 0;
        for i in 0..self.len() {
            put_varint(&mut head, self.rows[i] - prev);
            prev = self.rows[i];
            put_varint(&mut head, self.get(i).len() as u64);
        }
        (head, self.data.clone())
    }

    /// Inverse of [`Exceptions::encode`], for a row group of `rows` rows.
    pub fn decode(head: &[u8], data: Vec<u8>, rows: u64) -> Result<Self> {
        let mut c = Cursor::new(head, 0, "exception index");
        let mut ex = Exceptions::default();
        let (mut row, mut end) = (0u64, 0u64);
        while !c.is_empty() {
            row = row.saturating_add(c.varint()?);
            end = end.saturating_add(c.varint()?);
            if row > rows || end > data.len() as u64 {
                return Err(Error::corrupt(
                    "exception index",
                    0,
                    format!("exception at row {row}, ending at byte {end}, outside its row group"),
                ));
            }
            ex.rows.push(row);
            ex.ends.push(end as u32);
        }
        if end != data.len() as u64 {
            return Err(Error::corrupt(
                "exception index",
                0,
                "exception bytes longer than their lengths",
            ));
        }
        ex.data = data;
        Ok(ex)
    }
}
