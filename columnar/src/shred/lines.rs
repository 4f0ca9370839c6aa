//! Shredding line by line for the shaped layouts (JSON lines, log fields, INSERT tuples): each
//! line is split by its format's parser into values and a shape, or kept verbatim when it does
//! not parse.

use memchr::memchr;

use crate::model::{RawColumn, Shape, ShapeIndex, ABSENT, CRLF, LF, NONE};

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
/// fit. `parse` may add slots (columns the dialect did not have: JSON keys seen for the first
/// time); earlier rows lack them. Lines that do not fit, are not UTF-8, or would pass
/// [`crate::model::MAX_SHAPES`] go to the exceptions; a value a line lacks is absent.
pub fn shred_lines(
    src: &[u8],
    columns: usize,
    mut parse: impl FnMut(&[u8], &mut Vec<Found>) -> Option<Shape>,
) -> crate::model::Shredded {
    let mut out = crate::model::Shredded {
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
                while out.columns.len() < values.len() {
                    // A column new in this row: absent from every row before it.
                    let mut c = RawColumn::default();
                    for _ in 0..out.terminators.len() {
                        c.push(b"", ABSENT);
                    }
                    out.columns.push(c);
                }
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
