//! Shapes: the layout of rows whose values sit among literal text that varies from row to row
//! (JSON lines: braces, keys and spacing; log lines: the whitespace between leading fields).
//! A row's shape lists its columns in order with the text before each value, and the text
//! after the last; shapes repeat, so a row group stores the distinct shapes once and a shape
//! id per row.

use memchr::memchr;

use crate::bytes::{put_prefixed, put_varint, Cursor};
use crate::column::{Column, RawColumn, Style, ABSENT};
use crate::delimited::{self, CRLF, LF, NONE};
use crate::error::Result;
use crate::exceptions::Exceptions;
use crate::rebuilt::Rebuilt;

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
    ids: crate::column::FastMap<Shape, u32>,
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

/// Splits the line at `start` into its content and terminator; returns them and the next
/// line's start.
pub fn line_at(src: &[u8], start: usize) -> (&[u8], u8, usize) {
    match memchr(b'\n', &src[start..]) {
        None => (&src[start..], NONE, src.len()),
        Some(i) if i > 0 && src[start + i - 1] == b'\r' => {
            (&src[start..start + i - 1], CRLF, start + i + 1)
        }
        Some(i) => (&src[start..start + i], LF, start + i + 1),
    }
}

/// A value found on a line: its span and flag.
pub type Found = Option<(std::ops::Range<usize>, u8)>;

/// Shreds `src` into `columns` columns a line at a time: `parse` reads a line (its values into
/// the slots, all `None` beforehand) and gives its shape, or `None` for a line that does not
/// fit. Lines that do not fit, are not UTF-8, or would pass [`MAX_SHAPES`] go to the
/// exceptions; a value a line lacks is absent.
pub fn shred_lines(
    src: &[u8],
    columns: usize,
    mut parse: impl FnMut(&[u8], &mut [Found]) -> Option<Shape>,
) -> crate::delimited::Shredded {
    let mut out = crate::delimited::Shredded {
        columns: vec![RawColumn::default(); columns],
        ..Default::default()
    };
    let mut index = ShapeIndex::default();
    let mut values: Vec<Found> = vec![None; columns];
    let utf8 = std::str::from_utf8(src).is_ok();
    let mut p = 0;
    while p < src.len() {
        let (start, (line, term, next)) = (p, line_at(src, p));
        p = next;
        values.iter_mut().for_each(|v| *v = None);
        let id = (utf8 || std::str::from_utf8(line).is_ok())
            .then(|| parse(line, &mut values))
            .flatten()
            .and_then(|shape| index.intern(shape, &mut out.shapes));
        match id {
            Some(id) => {
                for (col, v) in out.columns.iter_mut().zip(&values) {
                    match v {
                        Some((r, flag)) => col.push(&line[r.clone()], *flag),
                        None => col.push(b"", ABSENT),
                    }
                }
                out.shapes.ids.push(id);
                out.terminators.push(term);
            }
            None => out
                .exceptions
                .push(out.terminators.len() as u64, &src[start..next]),
        }
    }
    out
}

/// Appends the text of a shredded row group of shaped rows: every row laid out by its shape,
/// with the exceptions where they were; values spelled in `style`. Stops with an error past
/// `limit` bytes.
pub fn rebuild(
    columns: &[Column],
    terminators: &[u8],
    exceptions: &Exceptions,
    shapes: &Shapes,
    style: Style,
    limit: usize,
    out: &mut Rebuilt,
) -> Result<()> {
    let mut tiles = delimited::Tiles::new(columns, style);
    let mut ex = 0;
    let mut row = 0;
    for terms in terminators.chunks(delimited::TILE) {
        tiles.spell(terms.len());
        for (k, &term) in terms.iter().enumerate() {
            let buf = &mut *out.buf;
            while ex < exceptions.len() && exceptions.rows[ex] == row as u64 {
                buf.extend_from_slice(exceptions.get(ex));
                ex += 1;
            }
            let shape = &shapes.list[shapes.ids[row] as usize];
            for (col, sep) in &shape.fields {
                buf.extend_from_slice(sep);
                buf.extend_from_slice(tiles.value(*col as usize, k));
            }
            buf.extend_from_slice(&shape.tail);
            match term {
                LF => buf.push(b'\n'),
                CRLF => buf.extend_from_slice(b"\r\n"),
                _ => {}
            }
            // Per row: a shape's text repeats in every row that has it.
            out.check_limit(limit)?;
            row += 1;
        }
        out.tile_done()?;
    }
    for i in ex..exceptions.len() {
        out.buf.extend_from_slice(exceptions.get(i));
    }
    Ok(())
}
