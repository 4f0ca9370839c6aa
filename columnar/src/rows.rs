//! Rows spelled back from decoded columns: delimited rows a tile of rows at a time (each column
//! spells the tile into its own buffer, then rows are joined from buffers still in cache), and
//! shaped rows by their shapes; verbatim records go back where they were.

use glyd_core::copy::{copy_literals, MARGIN};

use crate::column::Column;
use crate::error::Result;
use crate::model::{Dialect, Exceptions, Shapes, Style, CRLF, LF};
use crate::rebuilt::Rebuilt;

/// Rows spelled a tile at a time.
pub(crate) const TILE: usize = 2048;

/// Rows are rebuilt a tile at a time: each column spells the tile's rows into its own small
/// buffer (one tight loop per column), then the rows are put together from buffers that are
/// all still in cache.
pub(crate) struct Tiles<'a> {
    writers: Vec<crate::column::ColumnWriter<'a>>,
    /// Per column: the tile's spellings back to back (then [`MARGIN`] spare bytes, for wide
    /// copies), and where each row's ends (starting with 0).
    pub bufs: Vec<(Vec<u8>, Vec<usize>)>,
}

impl<'a> Tiles<'a> {
    pub fn new(columns: &'a [Column], style: Style) -> Self {
        Tiles {
            writers: columns.iter().map(|c| c.writer_for(style)).collect(),
            bufs: columns
                .iter()
                .map(|_| (Vec::new(), Vec::with_capacity(TILE + 1)))
                .collect(),
        }
    }

    /// Spells the next `n` rows of every column.
    pub fn spell(&mut self, n: usize) {
        for (w, (data, ends)) in self.writers.iter_mut().zip(self.bufs.iter_mut()) {
            data.clear();
            ends.clear();
            ends.push(0);
            w.spell_rows(n, data, ends);
            data.extend_from_slice(&[0; MARGIN]);
        }
    }

    /// Row `k` of the tile in column `col`.
    pub fn value(&self, col: usize, k: usize) -> &[u8] {
        let (data, ends) = &self.bufs[col];
        &data[ends[k]..ends[k + 1]]
    }
}

/// Appends the text of a shredded row group to `out`: every row, with the exceptions where
/// they were. Stops with an error once it has written more than `limit` bytes (the row
/// group's input size: columns that claim more are damaged).
pub fn rebuild_delimited(
    columns: &[Column],
    terminators: &[u8],
    exceptions: &Exceptions,
    d: &Dialect,
    limit: usize,
    out: &mut Rebuilt,
) -> Result<()> {
    let delimiter = d.delimiter;
    let mut tiles = Tiles::new(columns, d.style);
    let mut ex = 0;
    for (t, terms) in terminators.chunks(TILE).enumerate() {
        tiles.spell(terms.len());
        let tiles = &tiles.bufs;
        // Room for the whole tile: every value, a delimiter after each but the last, up to two
        // terminator bytes a row, and the wide copies' margin. Reserved again after an
        // exception, which may have used it.
        let room = tiles.iter().map(|(d, _)| d.len()).sum::<usize>()
            + terms.len() * (tiles.len() + 2)
            + MARGIN;
        let buf = &mut *out.buf;
        buf.reserve(room);
        for (k, &term) in terms.iter().enumerate() {
            let row = t * TILE + k;
            if ex < exceptions.len() && exceptions.rows[ex] == row as u64 {
                while ex < exceptions.len() && exceptions.rows[ex] == row as u64 {
                    buf.extend_from_slice(exceptions.get(ex));
                    ex += 1;
                }
                buf.reserve(room);
            }
            let mut at = buf.len();
            // SAFETY: `data` has MARGIN bytes after every value; `buf` has room for the rest
            // of the tile plus MARGIN (reserved above), so each wide copy and every delimiter
            // and terminator byte stays within both allocations.
            unsafe {
                let base = buf.as_mut_ptr();
                for (i, (data, ends)) in tiles.iter().enumerate() {
                    let (a, b) = (ends[k], ends[k + 1]);
                    if i > 0 {
                        *base.add(at) = delimiter;
                        at += 1;
                    }
                    copy_literals(data.as_ptr().add(a), base.add(at), b - a);
                    at += b - a;
                }
                // Two bytes written, one or two kept ("\n" or "\r\n"), none for NONE.
                let (bytes, kept) = match term {
                    LF => (*b"\n\n", 1),
                    CRLF => (*b"\r\n", 2),
                    _ => (*b"\n\n", 0),
                };
                base.add(at).copy_from_nonoverlapping(bytes.as_ptr(), 2);
                at += kept;
                // Bytes up to `at` were all written above, within the reserved room.
                buf.set_len(at);
            }
        }
        out.check_limit(limit)?;
        out.tile_done()?;
    }
    for i in ex..exceptions.len() {
        out.buf.extend_from_slice(exceptions.get(i));
    }
    Ok(())
}

/// Appends the text of a shredded row group of shaped rows: every row laid out by its shape,
/// with the exceptions where they were; values spelled in `style`. Stops with an error past
/// `limit` bytes.
pub fn rebuild_shaped(
    columns: &[Column],
    terminators: &[u8],
    exceptions: &Exceptions,
    shapes: &Shapes,
    style: Style,
    limit: usize,
    out: &mut Rebuilt,
) -> Result<()> {
    let mut tiles = crate::rows::Tiles::new(columns, style);
    let mut ex = 0;
    let mut row = 0;
    for terms in terminators.chunks(crate::rows::TILE) {
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
