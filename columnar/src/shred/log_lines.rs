//! Log lines as leading fields and a message. Most log formats open each line with a few
//! whitespace-separated fields of steady form (a date, a time, a process id, a level, a
//! component) before free text. Each of those fields is a column of its own, typed and coded in
//! row order (times as deltas from the line before), and the rest of the line is a `message`
//! column (coded as templates). The whitespace between fields varies (padded ids, a day
//! written ` 9`), so it goes to the row's shape (see `Shapes`), as do lines with fewer
//! fields. How many fields lead is chosen on a sample by trying each count that most lines
//! reach and keeping the one that compresses smallest.

use super::lines::{shred_lines, Found};
use crate::model::{Dialect, Shape, Shredded, BARE};

/// Most leading fields tried.
const MAX_FIELDS: usize = 8;

/// Lines of the sample looked at to find how many fields most lines have.
const SNIFF_LINES: usize = 2000;

/// Bytes of the sample each field count is tried on.
const TRIAL_BYTES: usize = 256 << 10;

fn is_gap(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Splits `line` into at most `k` leading fields and a message: fills `values` (one per
/// column; those the line lacks stay `None`) and returns the line's shape.
fn split_line(line: &[u8], k: usize, values: &mut [Found]) -> Shape {
    let mut shape = Shape::default();
    let mut i = 0;
    for (col, value) in values.iter_mut().enumerate() {
        let gap = i;
        while i < line.len() && is_gap(line[i]) {
            i += 1;
        }
        if i == line.len() {
            i = gap;
            break;
        }
        let end = if col == k {
            line.len()
        } else {
            line[i..]
                .iter()
                .position(|&b| is_gap(b))
                .map_or(line.len(), |n| i + n)
        };
        shape.fields.push((col as u32, line[gap..i].to_vec()));
        *value = Some((i..end, BARE));
        i = end;
    }
    shape.tail = line[i..].to_vec();
    shape
}

/// Shreds log lines by `d` (a dialect of [`Dialect::log_fields`]): lines that are not UTF-8, or of a
/// shape past the row group's limit, go to the exceptions.
pub fn shred(src: &[u8], d: &Dialect) -> Shredded {
    let k = d.columns - 1;
    shred_lines(src, d.columns, |line, values| {
        Some(split_line(line, k, values))
    })
}

/// How many leading whitespace-separated tokens are present on at least 90% of `lines`
/// (at most [`MAX_FIELDS`]).
fn common_positions(lines: &[&[u8]]) -> usize {
    let mut count = [0usize; MAX_FIELDS];
    for l in lines {
        let tokens = l
            .split(|&b| is_gap(b))
            .filter(|t| !t.is_empty())
            .take(MAX_FIELDS)
            .count();
        count[..tokens].iter_mut().for_each(|c| *c += 1);
    }
    count
        .iter()
        .take_while(|&&c| c * 10 >= lines.len() * 9)
        .count()
}

/// The layout for log lines like `sample` (whole lines): the lines dialect, or leading fields
/// and a message, whichever `size` (the bytes a row group of these lines takes laid out by a
/// dialect) says codes the start of the sample smallest.
pub fn choose(sample: &[u8], size: &mut dyn FnMut(&[u8], &Dialect) -> usize) -> Dialect {
    let trial = match sample.len() {
        n if n <= TRIAL_BYTES => sample,
        _ => {
            let cut = sample[..TRIAL_BYTES].iter().rposition(|&c| c == b'\n');
            &sample[..cut.map_or(sample.len(), |c| c + 1)]
        }
    };
    let lines: Vec<&[u8]> = trial.split(|&c| c == b'\n').take(SNIFF_LINES).collect();
    let common = common_positions(&lines);
    let mut best = (size(trial, &Dialect::lines()), Dialect::lines());
    for k in 1..=common {
        let d = Dialect::log_fields(k);
        let s = size(trial, &d);
        if s < best.0 {
            best = (s, d);
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Shapes;
    use crate::model::ABSENT;
    use crate::rows::rebuild_shaped as rebuild;
    use glyd_core::Level;

    fn round_trip(src: &[u8], k: usize) -> Shredded {
        let d = Dialect::log_fields(k);
        let s = shred(src, &d);
        let cols: Vec<crate::column::Column> = s
            .columns
            .iter()
            .map(|c| {
                let e = crate::column::encode(c, false).remove(0);
                crate::column::decode(e.kind, s.rows(), src.len(), e.streams, false).unwrap()
            })
            .collect();
        let (list, ids) = s.shapes.encode();
        let shapes = Shapes::decode(&list, &ids, s.rows(), d.columns, src.len()).unwrap();
        let mut out = Vec::new();
        rebuild(
            &cols,
            &s.terminators,
            &s.exceptions,
            &shapes,
            crate::model::Style::Fields,
            src.len(),
            &mut crate::rebuilt::Rebuilt::kept(&mut out),
        )
        .unwrap();
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(src));
        s
    }

    #[test]
    fn lines_split_into_fields_and_message() {
        let src = concat!(
            "03-17 16:13:38.811  1702  2395 D WindowManager: freezing  display\n",
            "03-17 16:13:38.819  1702 18671 I Power: ok\r\n",
            "short line\n",
            "\n",
            "  lead  and trail  \n",
            "03-17 16:13:39.001 99 1 E X: last"
        )
        .as_bytes();
        let s = round_trip(src, 5);
        assert_eq!(s.rows(), 6);
        assert!(s.exceptions.is_empty());
        assert_eq!(s.columns[2].value(1), b"1702");
        assert_eq!(s.columns[5].value(0), b"WindowManager: freezing  display");
        assert_eq!(s.columns[2].flags[2], ABSENT);
        assert_eq!(s.columns[1].value(4), b"and");
        let mut bad = src.to_vec();
        bad.extend_from_slice(b"\n\xff\xfe not utf-8\n");
        let s = round_trip(&bad, 3);
        assert_eq!(s.exceptions.len(), 1);
    }

    #[test]
    fn regular_leading_tokens_become_fields() {
        let mut log = Vec::new();
        for i in 0..2000u32 {
            log.extend_from_slice(
                format!(
                    "2024-01-02 03:{:02}:{:02},{:03} {} [main] {} value={}\n",
                    i / 60 % 60,
                    i % 60,
                    i * 7 % 1000,
                    ["INFO", "WARN", "DEBUG"][i as usize % 3],
                    ["started job", "stopped job", "queue length"][i as usize % 3],
                    i * 31 % 97
                )
                .as_bytes(),
            );
        }
        let lines: Vec<&[u8]> = log.split(|&c| c == b'\n').collect();
        assert_eq!(common_positions(&lines[..400]), 7);
        let d = crate::detect::choose_log_layout(&log, Level::Max);
        assert_eq!(d.delimiter, crate::model::LOG_FIELDS);
        round_trip(&log, d.columns - 1);
        // Free text has no leading fields.
        let prose = b"the quick brown fox\njumps over\nthe lazy dog today\n".repeat(3);
        assert_eq!(
            crate::detect::choose_log_layout(&prose, Level::Max),
            Dialect::lines()
        );
    }
}
