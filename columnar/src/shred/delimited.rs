//! Delimited text: CSV (RFC 4180 quoting), TSV, and pipe- or semicolon-separated files. The
//! dialect (delimiter, field count, header line) is sniffed from a sample; each record's fields
//! go to their columns with a flag saying whether they were quoted, its line ending to the
//! terminator stream, and any record that does not fit the dialect exactly to the exceptions.

use memchr::{memchr, memchr2};

use crate::model::{
    reserve_like, Dialect, RawColumn, Shredded, Style, BARE, CRLF, DELIMITERS, LF, LINES, NONE,
    NULL, QUOTED, RESERVE_AFTER,
};

/// One field of a record being parsed: its span in the input (inside the quotes for a quoted
/// field, doubled quotes still in it).
#[derive(Copy, Clone)]
struct Field {
    start: usize,
    end: usize,
    quoted: bool,
}

/// What parsing a record from some position gave.
enum Record {
    /// A well-formed record (fields in the caller's vector) and its terminator; the next
    /// record starts at `next`.
    Row { next: usize, term: u8 },
    /// Quoting that RFC 4180 does not allow.
    Bad,
}

/// Parses the record at `start`; `quoting` says whether a field may be double-quoted.
/// `ends` finds unquoted fields' ends (kept from record to record of the same `src`).
fn parse_record(
    src: &[u8],
    start: usize,
    delim: u8,
    quoting: bool,
    fields: &mut Vec<Field>,
    ends: &mut FieldEnds,
) -> Record {
    fields.clear();
    let n = src.len();
    if delim == LINES {
        let (end, next, term) = match memchr(b'\n', &src[start..]) {
            None => (n, n, NONE),
            Some(i) if i > 0 && src[start + i - 1] == b'\r' => (start + i - 1, start + i + 1, CRLF),
            Some(i) => (start + i, start + i + 1, LF),
        };
        fields.push(Field {
            start,
            end,
            quoted: false,
        });
        return Record::Row { next, term };
    }
    let mut p = start;
    loop {
        if quoting && p < n && src[p] == b'"' {
            let mut q = p + 1;
            loop {
                match memchr(b'"', &src[q..]) {
                    None => return Record::Bad,
                    Some(i) if q + i + 1 < n && src[q + i + 1] == b'"' => q += i + 2,
                    Some(i) => {
                        q += i;
                        break;
                    }
                }
            }
            fields.push(Field {
                start: p + 1,
                end: q,
                quoted: true,
            });
            p = q + 1;
            match src.get(p) {
                None => {
                    return Record::Row {
                        next: n,
                        term: NONE,
                    }
                }
                Some(&c) if c == delim => p += 1,
                Some(b'\n') => {
                    return Record::Row {
                        next: p + 1,
                        term: LF,
                    }
                }
                Some(b'\r') if src.get(p + 1) == Some(&b'\n') => {
                    return Record::Row {
                        next: p + 2,
                        term: CRLF,
                    }
                }
                Some(_) => return Record::Bad,
            }
        } else {
            match ends.find(src, p, delim).map(|e| e - p) {
                None => {
                    fields.push(Field {
                        start: p,
                        end: n,
                        quoted: false,
                    });
                    return Record::Row {
                        next: n,
                        term: NONE,
                    };
                }
                Some(i) if src[p + i] == delim => {
                    fields.push(Field {
                        start: p,
                        end: p + i,
                        quoted: false,
                    });
                    p += i + 1;
                }
                Some(i) => {
                    let e = p + i;
                    let cr = i > 0 && src[e - 1] == b'\r';
                    fields.push(Field {
                        start: p,
                        end: e - usize::from(cr),
                        quoted: false,
                    });
                    let term = if cr { CRLF } else { LF };
                    return Record::Row { next: e + 1, term };
                }
            }
        }
    }
}

/// Where `a` or `b` first occurs in `s`. Fields are mostly a few bytes long, where eight
/// bytes at a time in a register find the delimiter before memchr2 has set up its vector
/// search; longer ones go to it.
#[inline(always)]
fn find2(a: u8, b: u8, s: &[u8]) -> Option<usize> {
    const SHORT: usize = 32;
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = ONES << 7;
    // A bit 7 set in each byte of `x` that is zero, and maybe in bytes above one that is
    // (borrows): the lowest set bit is always the first zero byte.
    let zeros = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let (wa, wb) = (ONES * u64::from(a), ONES * u64::from(b));
    let mut at = 0;
    while at < SHORT {
        let Some(word) = s.get(at..at + 8) else {
            return s[at..]
                .iter()
                .position(|&c| c == a || c == b)
                .map(|i| at + i);
        };
        let w = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        let hits = zeros(w ^ wa) | zeros(w ^ wb);
        if hits != 0 {
            return Some(at + hits.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    memchr2(a, b, &s[SHORT..]).map(|i| i + SHORT)
}

/// FAST PATH: where unquoted fields end, found 64 bytes at a time: one bitmask of the
/// delimiters and line feeds in a 64-byte window (SSE2 compares, sixteen bytes each), after
/// which each field's end is a count of trailing zeros. A record of short fields (TPC-H
/// lineitem: sixteen in 130 bytes) takes two or three windows rather than a search per field.
/// The window belongs to one input: positions are offsets in it.
#[derive(Default)]
pub(crate) struct FieldEnds {
    /// Where the window starts, and its bitmask (bit `i`: byte `start + i` is a delimiter or
    /// a line feed).
    window: Option<(usize, u64)>,
}

impl FieldEnds {
    /// Where the first delimiter or line feed at or after `p` in `src` is.
    #[inline(always)]
    fn find(&mut self, src: &[u8], mut p: usize, delim: u8) -> Option<usize> {
        loop {
            let (start, mask) = match self.window {
                Some((start, mask)) if (start..start + 64).contains(&p) => (start, mask),
                _ => match window_mask(src, p, delim) {
                    Some(mask) => {
                        self.window = Some((p, mask));
                        (p, mask)
                    }
                    // Within 64 bytes of the end.
                    None => {
                        self.window = None;
                        return find2(delim, b'\n', &src[p..]).map(|i| p + i);
                    }
                },
            };
            let after = mask & (u64::MAX << (p - start));
            if after != 0 {
                return Some(start + after.trailing_zeros() as usize);
            }
            p = start + 64;
        }
    }
}

/// The bitmask of the delimiters and line feeds in `src[at..at + 64]`; `None` past the end.
#[inline(always)]
fn window_mask(src: &[u8], at: usize, delim: u8) -> Option<u64> {
    let w: &[u8; 64] = src.get(at..at + 64)?.try_into().ok()?;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
        };
        let mut mask = 0u64;
        // SAFETY: SSE2 is part of every x86_64 target; each load reads 16 of `w`'s 64 bytes.
        unsafe {
            let (d, lf) = (_mm_set1_epi8(delim as i8), _mm_set1_epi8(b'\n' as i8));
            for k in 0..4 {
                let v = _mm_loadu_si128(w.as_ptr().add(16 * k).cast());
                let hits = _mm_or_si128(_mm_cmpeq_epi8(v, d), _mm_cmpeq_epi8(v, lf));
                mask |= u64::from(_mm_movemask_epi8(hits) as u16) << (16 * k);
            }
        }
        Some(mask)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Some(w.iter().enumerate().fold(0u64, |m, (i, &c)| {
            m | u64::from(c == delim || c == b'\n') << i
        }))
    }
}

/// Where the line starting at `start` ends (after its `\n`, or at the end of the input).
fn line_end(src: &[u8], start: usize) -> usize {
    memchr(b'\n', &src[start..]).map_or(src.len(), |i| start + i + 1)
}

/// Shreds delimited text `src` (CSV or COPY text; whole records, the header, if any, already
/// taken off) by `d`.
pub fn shred(src: &[u8], d: &Dialect) -> Shredded {
    let mut out = Shredded {
        columns: vec![RawColumn::default(); d.columns],
        ..Shredded::default()
    };
    let utf8 = std::str::from_utf8(src).is_ok();
    let quoting = d.style == Style::Csv;
    let null = d.style.null();
    let delimited = d.delimiter != LINES;
    let mut fields = Vec::with_capacity(d.columns);
    let mut ends = FieldEnds::default();
    let mut p = 0;
    while p < src.len() {
        let good = match parse_record(src, p, d.delimiter, quoting, &mut fields, &mut ends) {
            Record::Row { next, term }
                if fields.len() == d.columns
                    && (utf8 || std::str::from_utf8(&src[p..next]).is_ok()) =>
            {
                Some((next, term))
            }
            _ => None,
        };
        match good {
            Some((next, term)) => {
                if out.terminators.len() == RESERVE_AFTER {
                    reserve_like(&mut out.columns, p, src.len());
                }
                for (col, f) in out.columns.iter_mut().zip(&fields) {
                    let v = &src[f.start..f.end];
                    if f.quoted {
                        push_unquoted(col, v);
                    } else if v == null && (delimited || !v.is_empty()) {
                        // CSV's empty field, COPY's `\N`: a null, in text columns too (a
                        // quoted `""` is the empty string). An empty line is just that.
                        col.push(b"", NULL);
                    } else {
                        col.push_from(src, f.start, f.end, BARE);
                    }
                }
                out.terminators.push(term);
                p = next;
            }
            None => {
                let next = line_end(src, p);
                out.exceptions
                    .push(out.terminators.len() as u64, &src[p..next]);
                p = next;
            }
        }
    }
    out
}

/// Appends a quoted field's content with its doubled quotes undone.
fn push_unquoted(col: &mut RawColumn, v: &[u8]) {
    let mut rest = v;
    while let Some(i) = memchr(b'"', rest) {
        col.data.extend_from_slice(&rest[..=i]);
        rest = &rest[i + 2..];
    }
    col.data.extend_from_slice(rest);
    col.ends.push(col.data.len() as u32);
    col.flags.push(QUOTED);
}

/// The delimited dialect of `sample` (the start of an input; if it is not the whole input, its
/// last, possibly cut, line is ignored), when a delimiter gives at least two fields on at least
/// 90% of the sample's records.
pub fn sniff(sample: &[u8], whole: bool) -> Option<Dialect> {
    sniff_among(sample, whole, &DELIMITERS, 2, 0.9)
}

/// The whole lines of `sample` when it is line-oriented text (valid UTF-8 without NUL bytes,
/// at least two lines, none over 64 KiB): what a log layout is chosen on.
pub fn text_lines(sample: &[u8], whole: bool) -> Option<&[u8]> {
    let cut = if whole {
        sample
    } else {
        &sample[..sample.iter().rposition(|&c| c == b'\n')? + 1]
    };
    let text = std::str::from_utf8(cut).is_ok() && memchr(0, cut).is_none();
    let mut count = 0;
    let mut longest = 0;
    for line in cut.split(|&c| c == b'\n') {
        count += 1;
        longest = longest.max(line.len());
    }
    (text && count > 2 && longest <= 64 << 10).then_some(cut)
}

/// The dialect of `sample` with `delimiter` imposed: its commonest field count, whatever
/// share of the records have it (records of other widths become exceptions). `None` only for
/// a sample with no complete record.
pub fn sniff_with(sample: &[u8], whole: bool, delimiter: u8) -> Option<Dialect> {
    sniff_among(sample, whole, &[delimiter], 1, 0.0)
}

fn sniff_among(
    sample: &[u8],
    whole: bool,
    delimiters: &[u8],
    min_columns: usize,
    min_share: f64,
) -> Option<Dialect> {
    let sample = if whole {
        sample
    } else {
        &sample[..sample.iter().rposition(|&c| c == b'\n')? + 1]
    };
    let mut fields = Vec::new();
    let mut best: Option<(u8, usize, usize)> = None; // delimiter, columns, conforming records
    for &delim in delimiters {
        let mut counts: std::collections::HashMap<usize, usize> = Default::default();
        let (mut p, mut records) = (0, 0);
        while p < sample.len() && records < 2000 {
            records += 1;
            match parse_record(
                sample,
                p,
                delim,
                true,
                &mut fields,
                &mut FieldEnds::default(),
            ) {
                Record::Row { next, .. } => {
                    *counts.entry(fields.len()).or_default() += 1;
                    p = next;
                }
                Record::Bad => p = line_end(sample, p),
            }
        }
        let Some((&cols, &hits)) = counts.iter().max_by_key(|(&c, &h)| (h, c)) else {
            continue;
        };
        if cols < min_columns
            || (hits as f64) < records as f64 * min_share
            || (min_share > 0.0 && records < 2)
        {
            continue;
        }
        if best.is_none_or(|(_, bc, bh)| (hits, cols) > (bh, bc)) {
            best = Some((delim, cols, hits));
        }
    }
    let (delimiter, columns, _) = best?;
    // A header: a first record of the right width whose fields are distinct, non-empty names,
    // none of which reads as a number, a date or a timestamp.
    let mut header = None;
    let mut names: Vec<String> = (1..=columns).map(|i| format!("c{i}")).collect();
    if let Record::Row { next, .. } = parse_record(
        sample,
        0,
        delimiter,
        true,
        &mut fields,
        &mut FieldEnds::default(),
    ) {
        let values: Vec<&[u8]> = fields.iter().map(|f| &sample[f.start..f.end]).collect();
        let distinct: std::collections::HashSet<&&[u8]> = values.iter().collect();
        let namelike = |v: &[u8]| {
            !v.is_empty()
                && crate::spelling::parse_int(v).is_none()
                && crate::spelling::parse_decimal(v).is_none()
                && crate::spelling::parse_date(v).is_none()
                && crate::spelling::parse_timestamp(v).is_none()
                && std::str::from_utf8(v).is_ok()
                && !v.contains(&b'"')
        };
        if values.len() == columns
            && distinct.len() == columns
            && values.iter().all(|v| namelike(v))
        {
            header = Some(sample[..next].to_vec());
            names = values
                .iter()
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .collect();
        }
    }
    Some(Dialect {
        delimiter,
        style: Style::Csv,
        columns,
        header,
        log_fields: Vec::new(),
        names,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column::Column;
    use crate::rebuilt::Rebuilt;
    use crate::rows::rebuild_delimited as rebuild;

    fn round_trip(src: &[u8], d: &Dialect) -> Shredded {
        let s = shred(src, d);
        let cols: Vec<Column> = s
            .columns
            .iter()
            .map(|c| {
                // Every candidate coding decodes to the same spellings; keep the first.
                let spell = |e: &crate::model::EncodedColumn| {
                    let col = crate::column::decode(
                        e.kind,
                        s.rows(),
                        src.len(),
                        e.streams.clone(),
                        false,
                    )
                    .unwrap();
                    let mut out = Vec::new();
                    let mut w = col.writer_for(d.style);
                    for _ in 0..s.rows() {
                        w.spelled(&mut out);
                        out.push(0);
                    }
                    (col, out)
                };
                let cands = crate::column::encode(c, d.style.empty_is_null());
                let (first, want) = spell(&cands[0]);
                for e in &cands[1..] {
                    assert_eq!(spell(e).1, want);
                }
                first
            })
            .collect();
        // Passed on in pieces as a reader takes them (the pieces in order are the input).
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        let mut take = |piece: &[u8]| {
            out.extend_from_slice(piece);
            Ok(())
        };
        let mut rebuilt = Rebuilt::passed_on(&mut scratch, &mut take);
        rebuild(
            &cols,
            &s.terminators,
            &s.exceptions,
            d,
            src.len(),
            &mut rebuilt,
        )
        .unwrap();
        rebuilt.pass_on().unwrap();
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(src));
        assert_eq!(out, src);
        s
    }

    #[test]
    fn sniffs_csv_with_header_and_keeps_every_byte() {
        let src = b"id,name,price,day\n1,\"Smith, J\",1.50,2024-01-02\r\n2,plain,,2024-01-03\n3,\"say \"\"hi\"\"\",2.25,\n";
        let d = sniff(src, true).unwrap();
        assert_eq!(d.delimiter, b',');
        assert_eq!(d.columns, 4);
        assert_eq!(d.names, ["id", "name", "price", "day"]);
        let body = &src[d.header.as_ref().unwrap().len()..];
        let s = round_trip(body, &d);
        assert_eq!(s.rows(), 3);
        assert!(s.exceptions.is_empty());
        assert_eq!(
            crate::column::encode(&s.columns[0], true)[0].kind,
            crate::model::Kind::Int
        );
        assert_eq!(
            crate::column::encode(&s.columns[2], true)[0].kind,
            crate::model::Kind::Decimal(2)
        );
        assert_eq!(
            crate::column::encode(&s.columns[3], true)[0].kind,
            crate::model::Kind::Date
        );
    }

    #[test]
    fn odd_records_become_exceptions() {
        let d = Dialect {
            delimiter: b',',
            style: Style::Csv,
            columns: 2,
            header: None,
            log_fields: Vec::new(),
            names: vec!["a".into(), "b".into()],
        };
        for src in [
            &b"1,2\n1,2,3\n4,5"[..],
            b"\"unterminated,1\n2,3\n",
            b"\"a\"x,1\n",
            b"1,\xff\xfe\n2,3\n",
            b"\n\n1,2\r\n",
            b"a,\"multi\nline\"\n",
            b"1,2\r",
            b"",
            b",\n,",
        ] {
            round_trip(src, &d);
        }
        let s = round_trip(b"1,2\n1,2,3\n4,5", &d);
        assert_eq!(s.rows(), 2);
        assert_eq!(s.exceptions.rows, [1]);
        assert_eq!(s.terminators, [LF, NONE]);
    }

    #[test]
    fn sniffs_tsv_lines_and_rejects_binary() {
        let tsv = b"a\tb\tc\n1\t2\t3\n4\t5\t6\n";
        assert_eq!(sniff(tsv, true).unwrap().delimiter, b'\t');
        let log = b"10:00:01 start pid=12\nA line, with a comma.\n10:00:02 stop pid=12\r\n\"q\n";
        assert_eq!(sniff(log, true), None);
        assert_eq!(text_lines(log, true), Some(&log[..]));
        let d = crate::detect::sniff(log, true).unwrap();
        assert_eq!((d.delimiter, d.columns), (LINES, 1));
        let s = round_trip(log, &d);
        assert_eq!(s.rows(), 4);
        assert!(s.exceptions.is_empty());
        assert_eq!(text_lines(b"\x00\x01\x02\n\x03\n\x04\n", true), None);
        assert_eq!(text_lines(b"\xff\xfe\n\n\n", true), None);
    }

    proptest::proptest! {
        /// The word-at-a-time search finds what a byte-by-byte one does, at every length
        /// around its eight-byte steps and its hand-off to memchr2 at 32, with bytes that
        /// differ from the wanted ones by a borrow (0x2b, 0x2d around `,`; 0x80, 0x00).
        #[test]
        fn find2_finds_the_first_of_either_byte(
            s in proptest::collection::vec(
                proptest::sample::select(vec![b',', b'\n', b'a', 0x2b, 0x2d, 0x80, 0x00, 0x0b]),
                0..40,
            ),
        ) {
            let naive = s.iter().position(|&c| c == b',' || c == b'\n');
            proptest::prop_assert_eq!(find2(b',', b'\n', &s), naive);
        }

        /// The 64-byte windows find every delimiter and line feed in order, from any
        /// starting points, however far apart, near the end or not.
        #[test]
        fn field_ends_find_each_delimiter_or_line_feed(
            s in proptest::collection::vec(
                proptest::sample::select(vec![b',', b'\n', b'a', b'"', 0x2c + 0x80, 0x0a + 0x80]),
                0..300,
            ),
            steps in proptest::collection::vec(0usize..100, 1..20),
        ) {
            let mut ends = FieldEnds::default();
            let mut p = 0;
            for step in steps {
                p = (p + step).min(s.len());
                let naive = s[p..].iter().position(|&c| c == b',' || c == b'\n').map(|i| p + i);
                proptest::prop_assert_eq!(ends.find(&s, p, b','), naive);
            }
        }
    }
}
