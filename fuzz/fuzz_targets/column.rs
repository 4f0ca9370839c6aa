//! Fuzz the column decoder: a kind, a row count and up to five streams cut from the input,
//! decoded, spelled row by row and turned into Arrow. Errors are fine; panics are not.
#![no_main]

use glyd_columnar::column::{decode, Kind, Role};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    if input.len() < 4 {
        return;
    }
    let kind = match input[0] % 4 {
        0 => Kind::Int,
        1 => Kind::Decimal(input[1] % 20),
        2 => Kind::Date,
        _ => Kind::Text,
    };
    let rows = usize::from(input[2]);
    // Streams: the mask in input[3] says which roles are present; the rest is cut evenly.
    let roles: Vec<Role> = (0..5u8)
        .filter(|r| input[3] & (1 << r) != 0)
        .filter_map(Role::from_u8)
        .collect();
    let body = &input[4..];
    let piece = body.len() / roles.len().max(1);
    let streams = roles
        .iter()
        .enumerate()
        .map(|(i, &r)| (r, body[i * piece..(i + 1) * piece].to_vec()))
        .collect();
    if let Ok(col) = decode(kind, rows, 1 << 16, streams) {
        let mut w = col.writer();
        let mut out = Vec::new();
        for _ in 0..rows {
            w.spelled(&mut out);
        }
        let _ = col.to_arrow(rows, &kind.data_type());
        let _ = col.to_arrow(rows, &arrow_schema::DataType::Utf8);
    }
});
