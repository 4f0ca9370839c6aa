//! Entry points for the fuzz targets (`fuzz/`, with the `fuzzing` feature) into parts of the
//! engine that are not public: each takes arbitrary bytes and must return, never panic.

use crate::column::{decode, resolve_links, Column};
use crate::model::{Kind, Role};
use crate::spelling::TimeFormat;

/// The column decoder: a kind, a row count and up to ten streams cut from `input`, decoded
/// (integers and decimals kept as planes or not), resolved against a base column when linked
/// to one or following one, turned into Arrow, spelled row by row and turned into Arrow again.
pub fn decode_column(input: &[u8]) {
    if input.len() < 4 {
        return;
    }
    let kind = match (input[0] & 7) % 6 {
        0 => Kind::Int,
        1 => Kind::Decimal(input[1] % 20),
        2 => Kind::Date,
        3 => match TimeFormat::from_byte(input[1] & 0x1f) {
            Some(f) => Kind::Timestamp(f),
            None => return,
        },
        4 => {
            let spelling = [
                &b"Jun  9 05:06:07"[..],
                b"[Sun Dec 04 04:47:44 2005]",
                b"1700000000.25",
            ];
            let s = spelling[usize::from(input[1]) % spelling.len()];
            Kind::LogTime(crate::timepattern::TimePattern::learn(s, 2004)[0])
        }
        _ => Kind::Text,
    };
    let rows = usize::from(input[2]);
    // Streams: the mask in input[3] and the top bits of input[0] says which roles are
    // present; the rest is cut evenly.
    let mask = u16::from(input[3]) | u16::from(input[0] >> 5) << 8;
    let roles: Vec<Role> = (0..11u8)
        .filter(|r| mask & (1 << r) != 0)
        .filter_map(Role::from_u8)
        .collect();
    let body = &input[4..];
    let piece = body.len() / roles.len().max(1);
    let streams = roles
        .iter()
        .enumerate()
        .map(|(i, &r)| (r, body[i * piece..(i + 1) * piece].to_vec()))
        .collect();
    // Integers and decimals may stay as planes, as chunks read as Arrow do.
    let keep_planes = input[1] & 0x80 != 0;
    if let Ok(col) = decode(kind, rows, 1 << 16, streams, keep_planes) {
        let linked = matches!(
            col,
            Column::Typed { link: Some(_), .. }
                | Column::Text {
                    follows: Some(_),
                    ..
                }
        );
        let col = if linked {
            // Linked: resolve against a base column (index 0) of values from the input, of
            // this column's kind where typed (a text column may follow integers).
            let base = Column::Typed {
                kind: if kind == Kind::Text { Kind::Int } else { kind },
                flags: None,
                values: (0..rows)
                    .map(|i| {
                        i64::from(body.get(i % body.len().max(1)).copied().unwrap_or(0)) * 86_400
                    })
                    .collect(),
                link: None,
                planes: None,
            };
            let mut slots = vec![Some(base), Some(col)];
            if resolve_links(&mut slots, rows, 1 << 16).is_err() {
                return;
            }
            slots.pop().flatten().expect("resolved in place")
        } else {
            col
        };
        // As Arrow as decoded (planes kept or not), then spelled from its values.
        let _ = col.to_arrow(rows, &kind.data_type());
        let mut col = col;
        if col.decode_planes().is_err() {
            return;
        }
        let mut w = col.writer();
        let mut out = Vec::new();
        for _ in 0..rows {
            w.spelled(&mut out);
        }
        let _ = col.to_arrow(rows, &kind.data_type());
        let _ = col.to_arrow(rows, &arrow_schema::DataType::Utf8);
    }
}
