//! Shapes: the layout of rows whose values sit among literal text that varies from row to row
//! (JSON lines: braces, keys and spacing; log lines: the whitespace between leading fields;
//! INSERT tuples). A row's shape lists its columns in order with the text before each value,
//! and the text after the last; shapes repeat, so a row group stores the distinct shapes once
//! and a shape id per row.

use crate::error::Result;
use crate::wire::{put_prefixed, put_varint, Cursor};

/// Most shapes in one row group; lines of further shapes become exceptions.
pub const MAX_SHAPES: usize = 1 << 16;

/// One layout of a row: its columns in order, each with the literal text before its value,
/// and the text after the last value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Shape {
    pub fields: Vec<(u32, Vec<u8>)>,
    pub tail: Vec<u8>,
}

/// The shapes of a row group and each row's shape.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shapes {
    pub list: Vec<Shape>,
    pub ids: Vec<u32>,
}

impl Shapes {
    /// Two streams: the shape list, and one varint id per row.
    pub fn encode(&self) -> (Vec<u8>, Vec<u8>) {
        let mut list = Vec::new();
        put_varint(&mut list, self.list.len() as u64);
        for s in &self.list {
            put_varint(&mut list, s.fields.len() as u64);
            for (col, sep) in &s.fields {
                put_varint(&mut list, u64::from(*col));
                put_prefixed(&mut list, sep);
            }
            put_prefixed(&mut list, &s.tail);
        }
        let mut ids = Vec::with_capacity(self.ids.len());
        for &id in &self.ids {
            put_varint(&mut ids, u64::from(id));
        }
        (list, ids)
    }

    /// Reads the two streams back for `rows` rows of `columns` columns, checking every id and
    /// column index; no shape's text may exceed `max_text` bytes.
    pub fn decode(
        list: &[u8],
        ids: &[u8],
        rows: usize,
        columns: usize,
        max_text: usize,
    ) -> Result<Self> {
        let mut c = Cursor::new(list, 0, "shape list");
        let count = c.bounded(list.len() as u64, "shape count")?;
        let mut out = Shapes {
            list: Vec::with_capacity(count),
            ids: Vec::with_capacity(rows),
        };
        for _ in 0..count {
            let n = c.bounded(c.remaining() as u64, "shape field count")?;
            let mut shape = Shape::default();
            let mut text = 0;
            for _ in 0..n {
                let col = c.bounded(columns.saturating_sub(1) as u64, "shape column")?;
                let sep = c.prefixed()?;
                text += sep.len();
                shape.fields.push((col as u32, sep.to_vec()));
            }
            shape.tail = c.prefixed()?.to_vec();
            if text + shape.tail.len() > max_text {
                return Err(c.corrupt("a shape longer than its row group's input"));
            }
            out.list.push(shape);
        }
        c.finish()?;
        let mut c = Cursor::new(ids, 0, "shape ids");
        for _ in 0..rows {
            let id = c.bounded(count.saturating_sub(1) as u64, "shape id")?;
            if count == 0 {
                return Err(c.corrupt("a shape id with no shapes"));
            }
            out.ids.push(id as u32);
        }
        c.finish()?;
        Ok(out)
    }
}

/// Numbers shapes as a row group's rows are shredded.
#[derive(Default)]
pub struct ShapeIndex {
    ids: super::column::FastMap<Shape, u32>,
}

impl ShapeIndex {
    /// The id of `shape` in `shapes`, added if new; `None` once there are [`MAX_SHAPES`].
    pub fn intern(&mut self, shape: Shape, shapes: &mut Shapes) -> Option<u32> {
        if let Some(&id) = self.ids.get(&shape) {
            return Some(id);
        }
        let n = shapes.list.len();
        if n >= MAX_SHAPES {
            return None;
        }
        shapes.list.push(shape.clone());
        self.ids.insert(shape, n as u32);
        Some(n as u32)
    }
}
