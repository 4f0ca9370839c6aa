//! Text as templates and variables, the way log lines are written: each value is split into
//! tokens, a token holding a digit is a variable (ids, counts, addresses, times) and its place
//! in the value becomes a hole; what is left is the template. Templates go to a sorted
//! dictionary, variables to one stream grouped by template and hole, so that values of the same
//! hole sit together where the compressor finds them alike.

use crate::model::FastMap;

/// The byte that marks a hole in a template.
pub const HOLE: u8 = 0x01;
/// The byte that ends each variable in the variables stream.
pub const END: u8 = 0x00;

/// Bytes that continue a token: letters, digits, bytes of non-ASCII characters, and the
/// punctuation found inside numbers, paths, addresses and times.
pub(crate) fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || b >= 0x80
        || matches!(b, b'_' | b'-' | b'.' | b':' | b'/' | b'@' | b'+')
}

/// Calls `piece` on each run of `v` in order: a token holding a digit (a variable, `true`), or
/// literal text (`false`).
fn pieces<'a>(v: &'a [u8], mut piece: impl FnMut(&'a [u8], bool)) {
    let mut i = 0;
    while i < v.len() {
        if is_token(v[i]) {
            let j = v[i..]
                .iter()
                .position(|&b| !is_token(b))
                .map_or(v.len(), |k| i + k);
            let token = &v[i..j];
            piece(token, token.iter().any(u8::is_ascii_digit));
            i = j;
        } else {
            let j = v[i..]
                .iter()
                .position(|&b| is_token(b))
                .map_or(v.len(), |k| i + k);
            piece(&v[i..j], false);
            i = j;
        }
    }
}

/// Appends `v`'s template to `template` and its variables to `vars`.
pub fn split<'a>(v: &'a [u8], template: &mut Vec<u8>, vars: &mut Vec<&'a [u8]>) {
    pieces(v, |p, var| {
        if var {
            template.push(HOLE);
            vars.push(p);
        } else {
            template.extend_from_slice(p);
        }
    });
}

/// Each value's template numbered in order of first appearance: the groups an integer column
/// stored grouped by a text column (integer mode 8) is listed in.
pub fn template_keys<'a>(values: impl Iterator<Item = &'a [u8]>) -> Vec<i64> {
    let mut first: FastMap<Vec<u8>, i64> = FastMap::default();
    let (mut template, mut vars) = (Vec::new(), Vec::new());
    values
        .map(|v| {
            template.clear();
            vars.clear();
            split(v, &mut template, &mut vars);
            let n = first.len() as i64;
            match first.get(&template) {
                Some(&k) => k,
                None => {
                    first.insert(template.clone(), n);
                    n
                }
            }
        })
        .collect()
}

/// How people write a hole: loghub's and Drain's `<*>`.
pub const HOLE_TEXT: &str = "<*>";

/// `v`'s template as people read it, each hole written `<*>`, and its variables in
/// order.
pub fn readable(v: &[u8]) -> (Vec<u8>, Vec<&[u8]>) {
    let (mut text, mut vars) = (Vec::with_capacity(v.len()), Vec::new());
    pieces(v, |p, var| {
        if var {
            text.extend_from_slice(HOLE_TEXT.as_bytes());
            vars.push(p);
        } else {
            text.extend_from_slice(p);
        }
    });
    (text, vars)
}

/// Whether templates may pay for values like `sample`: some value has a variable, and the
/// sample's values share templates (at most half as many templates as values).
pub fn pays<'a>(sample: impl Iterator<Item = &'a [u8]>) -> bool {
    let mut templates: crate::model::FastSet<Vec<u8>> = Default::default();
    let (mut n, mut holes) = (0, 0);
    let (mut t, mut vars) = (Vec::new(), Vec::new());
    for v in sample {
        t.clear();
        vars.clear();
        split(v, &mut t, &mut vars);
        holes += vars.len();
        if !templates.contains(&t) {
            templates.insert(t.clone());
        }
        n += 1;
    }
    holes > 0 && templates.len() * 2 <= n.max(2)
}

/// A column's values as templates: `None` when a value holds a [`HOLE`] or [`END`] byte or
/// there are too many templates to pay (more than `max_templates`).
pub struct Templated {
    /// The distinct templates, sorted.
    pub templates: Vec<Vec<u8>>,
    /// Each row's template.
    pub ids: Vec<u32>,
    /// For each template in order, for each hole, the hole's coding (see [`encode_slot`]) and,
    /// for a text hole, each of its rows' variable followed by [`END`].
    pub vars: Vec<u8>,
    /// The numbers of shaped holes: zigzag varint differences, slot by slot, part by part.
    pub ints: Vec<u8>,
}

pub fn encode<'a>(
    values: impl Iterator<Item = &'a [u8]>,
    max_templates: usize,
) -> Option<Templated> {
    let mut index: crate::model::FastMap<Vec<u8>, u32> = Default::default();
    let mut first_ids = Vec::new();
    // Every row's variables back to back; row r's start at var_start[r].
    let (mut all_vars, mut var_start): (Vec<&[u8]>, Vec<usize>) = (Vec::new(), Vec::new());
    let mut template = Vec::new();
    for v in values {
        if v.iter().any(|&b| b == HOLE || b == END) {
            return None;
        }
        template.clear();
        var_start.push(all_vars.len());
        split(v, &mut template, &mut all_vars);
        let id = match index.get(&template) {
            Some(&id) => id,
            None => {
                let next = index.len() as u32;
                index.insert(template.clone(), next);
                next
            }
        };
        if index.len() > max_templates {
            return None;
        }
        first_ids.push(id);
    }
    // Sort the templates; renumber the rows.
    let mut templates: Vec<(Vec<u8>, u32)> = index.into_iter().collect();
    templates.sort_unstable();
    let mut rank = vec![0u32; templates.len()];
    for (r, (_, first)) in templates.iter().enumerate() {
        rank[*first as usize] = r as u32;
    }
    let ids: Vec<u32> = first_ids.iter().map(|&i| rank[i as usize]).collect();
    let templates: Vec<Vec<u8>> = templates.into_iter().map(|(t, _)| t).collect();
    // Rows of each template, in row order.
    let mut rows_of: Vec<Vec<usize>> = vec![Vec::new(); templates.len()];
    for (row, &id) in ids.iter().enumerate() {
        rows_of[id as usize].push(row);
    }
    let (mut vars, mut ints) = (Vec::new(), Vec::new());
    let mut slot = Vec::new();
    for (t, rows) in rows_of.iter().enumerate() {
        let holes = templates[t].iter().filter(|&&b| b == HOLE).count();
        (0..holes).for_each(|hole| {
            slot.clear();
            slot.extend(rows.iter().map(|&row| all_vars[var_start[row] + hole]));
            encode_slot(&slot, &mut vars, &mut ints);
        });
    }
    Some(Templated {
        templates,
        ids,
        vars,
        ints,
    })
}

/// A hole's coding, first byte in the variables stream: [`TEXT_SLOT`], then each variable and
/// [`END`]; or [`SHAPED_SLOT`] when every variable has the same *shape* (the variable with each
/// run of digits replaced by a [`HOLE`]) and each run position holds canonical integers or
/// digits of one width: the shape (varint length, bytes), one byte per run (0 canonical, w
/// for w digits), and the runs' values as zigzag varint differences in the integer stream.
pub const TEXT_SLOT: u8 = 0;
pub const SHAPED_SLOT: u8 = 1;

/// The most digits of a run coded as a number.
const MAX_RUN: usize = 18;

/// Splits `v` into its shape (digit runs replaced by holes) and its runs.
fn shape<'a>(v: &'a [u8], shape: &mut Vec<u8>, runs: &mut Vec<&'a [u8]>) {
    let mut i = 0;
    while i < v.len() {
        if v[i].is_ascii_digit() {
            let j = v[i..]
                .iter()
                .position(|b| !b.is_ascii_digit())
                .map_or(v.len(), |k| i + k);
            shape.push(HOLE);
            runs.push(&v[i..j]);
            i = j;
        } else {
            shape.push(v[i]);
            i += 1;
        }
    }
}

fn digits_value(run: &[u8]) -> i64 {
    run.iter().fold(0i64, |v, &d| v * 10 + i64::from(d - b'0'))
}

fn encode_slot(slot: &[&[u8]], vars: &mut Vec<u8>, ints: &mut Vec<u8>) {
    let text = |vars: &mut Vec<u8>| {
        vars.push(TEXT_SLOT);
        for v in slot {
            vars.extend_from_slice(v);
            vars.push(END);
        }
    };
    let (mut first, mut runs) = (Vec::new(), Vec::new());
    shape(slot[0], &mut first, &mut runs);
    let parts = runs.len();
    // Per run position: are all runs canonical integers, and the width they share (if any).
    let mut canonical = vec![true; parts];
    let mut width: Vec<Option<usize>> = runs.iter().map(|r| Some(r.len())).collect();
    let mut all_runs: Vec<&[u8]> = Vec::with_capacity(slot.len() * parts);
    let mut s = Vec::new();
    for v in slot {
        s.clear();
        let before = all_runs.len();
        shape(v, &mut s, &mut all_runs);
        if s != first || all_runs.len() - before != parts {
            return text(vars);
        }
        for (k, r) in all_runs[before..].iter().enumerate() {
            if r.len() > MAX_RUN {
                return text(vars);
            }
            canonical[k] &= r.len() == 1 || r[0] != b'0';
            if width[k] != Some(r.len()) {
                width[k] = None;
            }
        }
    }
    let mut kinds = Vec::with_capacity(parts);
    for k in 0..parts {
        kinds.push(match (canonical[k], width[k]) {
            (true, _) => 0u8,
            (false, Some(w)) => w as u8,
            (false, None) => return text(vars),
        });
    }
    vars.push(SHAPED_SLOT);
    crate::wire::put_varint(vars, first.len() as u64);
    vars.extend_from_slice(&first);
    vars.extend_from_slice(&kinds);
    for k in 0..parts {
        let mut prev = 0i64;
        for row in 0..slot.len() {
            let v = digits_value(all_runs[row * parts + k]);
            crate::wire::put_varint(ints, crate::wire::zigzag(v.wrapping_sub(prev)));
            prev = v;
        }
    }
}

/// Rebuilds the rows' values from templates (`data`/`offsets`), each row's template id and the
/// variables and integer streams; appends the values to `out_data` and their ends to
/// `out_offsets`. `Err` names what does not add up, or says the values would pass `max_len`
/// bytes.
#[allow(clippy::too_many_arguments)]
pub fn decode(
    data: &[u8],
    offsets: &[u32],
    ids: &[u32],
    vars: &[u8],
    ints: &[u8],
    max_len: usize,
    out_data: &mut Vec<u8>,
    out_offsets: &mut Vec<u32>,
) -> Result<(), String> {
    let templates = offsets.len() - 1;
    let template = |t: usize| &data[offsets[t] as usize..offsets[t + 1] as usize];
    let mut count = vec![0usize; templates];
    for &id in ids {
        count[id as usize] += 1;
    }
    // Every variable, spelled, in stream order: template by template, hole by hole, row by row.
    let mut spelled: Vec<u8> = Vec::new();
    let mut ends: Vec<usize> = Vec::new();
    let mut base = vec![0usize; templates];
    let (mut vp, mut ip) = (0usize, 0usize);
    let mut runs: Vec<i64> = Vec::new();
    for t in 0..templates {
        base[t] = ends.len();
        let holes = template(t).iter().filter(|&&b| b == HOLE).count();
        for _ in 0..holes {
            let kind = *vars
                .get(vp)
                .ok_or("variables stream ends before its holes")?;
            vp += 1;
            match kind {
                TEXT_SLOT => {
                    for _ in 0..count[t] {
                        let len = vars[vp..]
                            .iter()
                            .position(|&b| b == END)
                            .ok_or("text variable without its end")?;
                        spelled.extend_from_slice(&vars[vp..vp + len]);
                        ends.push(spelled.len());
                        vp += len + 1;
                        if spelled.len() > max_len {
                            return Err(format!("variables pass the {max_len} input bytes"));
                        }
                    }
                }
                SHAPED_SLOT => {
                    let n = glyd_core::varint::get(vars, &mut vp).ok_or("bad shape length")?;
                    let n = usize::try_from(n)
                        .ok()
                        .filter(|&n| n <= vars.len() - vp)
                        .ok_or("shape past the stream")?;
                    let shape = &vars[vp..vp + n];
                    vp += n;
                    let parts = shape.iter().filter(|&&b| b == HOLE).count();
                    let kinds = vars
                        .get(vp..vp + parts)
                        .ok_or("run kinds past the stream")?;
                    vp += parts;
                    if kinds.iter().any(|&k| k as usize > MAX_RUN) {
                        return Err("run wider than 18 digits".into());
                    }
                    runs.clear();
                    // Runs arrive part by part; spell them row by row.
                    for _ in 0..parts {
                        let mut prev = 0i64;
                        for _ in 0..count[t] {
                            let d = glyd_core::varint::get(ints, &mut ip)
                                .ok_or("integer stream ends early")?;
                            prev = prev.wrapping_add(crate::wire::unzigzag(d));
                            runs.push(prev);
                        }
                    }
                    for row in 0..count[t] {
                        let mut part = 0;
                        for &b in shape {
                            if b != HOLE {
                                spelled.push(b);
                                continue;
                            }
                            let v = runs[part * count[t] + row];
                            let w = kinds[part] as usize;
                            if v < 0 || (w > 0 && v >= 10i64.pow(w as u32)) {
                                return Err(format!("run value {v} does not fit its kind"));
                            }
                            let start = spelled.len();
                            crate::spelling::put_int(&mut spelled, v);
                            let len = spelled.len() - start;
                            if len < w {
                                // Zero-pad to the width: shift the digits right.
                                spelled.splice(start..start, std::iter::repeat_n(b'0', w - len));
                            }
                            part += 1;
                        }
                        ends.push(spelled.len());
                        if spelled.len() > max_len {
                            return Err(format!("variables pass the {max_len} input bytes"));
                        }
                    }
                }
                k => return Err(format!("unknown hole coding {k}")),
            }
        }
    }
    if vp != vars.len() || ip != ints.len() {
        return Err("variable streams longer than their holes".into());
    }
    let var = |i: usize| &spelled[if i == 0 { 0 } else { ends[i - 1] }..ends[i]];
    let mut seen = vec![0usize; templates];
    for &id in ids {
        let t = id as usize;
        let k = seen[t];
        seen[t] += 1;
        let mut hole = 0;
        for &b in template(t) {
            if b == HOLE {
                out_data.extend_from_slice(var(base[t] + hole * count[t] + k));
                hole += 1;
            } else {
                out_data.push(b);
            }
        }
        if out_data.len() > max_len {
            return Err(format!("templated values pass the {max_len} input bytes"));
        }
        out_offsets.push(out_data.len() as u32);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_the_tokens_with_digits() {
        let mut t = Vec::new();
        let mut v = Vec::new();
        split(
            b"Received block blk_-1608999687919862906 of size 91178 from /10.250.10.6:54310 uid=0",
            &mut t,
            &mut v,
        );
        assert_eq!(t, b"Received block \x01 of size \x01 from \x01 uid=\x01");
        assert_eq!(
            v,
            [
                &b"blk_-1608999687919862906"[..],
                b"91178",
                b"/10.250.10.6:54310",
                b"0"
            ]
        );
    }

    #[test]
    fn templated_values_decode_exactly() {
        let values: Vec<&[u8]> = vec![
            b"open file 12 by pid 7",
            b"closed",
            b"open file 13 by pid 7",
            b"",
            b"open file 99 by pid 8",
            b"x=1,y=2",
        ];
        let t = encode(values.iter().copied(), 100).unwrap();
        assert_eq!(t.templates.len(), 4);
        let mut data = Vec::new();
        let mut offsets = vec![0u32];
        for tpl in &t.templates {
            data.extend_from_slice(tpl);
            offsets.push(data.len() as u32);
        }
        let (mut out, mut ends) = (Vec::new(), vec![0u32]);
        decode(
            &data, &offsets, &t.ids, &t.vars, &t.ints, 1000, &mut out, &mut ends,
        )
        .unwrap();
        for (i, v) in values.iter().enumerate() {
            assert_eq!(&out[ends[i] as usize..ends[i + 1] as usize], *v);
        }
        assert!(encode([&b"a\x01b"[..]].into_iter(), 10).is_none());
        let cut = &t.vars[..t.vars.len() - 2];
        assert!(decode(&data, &offsets, &t.ids, cut, &t.ints, 1000, &mut out, &mut ends).is_err());
        assert!(
            decode(&data, &offsets, &t.ids, &t.vars, &t.ints, 10, &mut out, &mut ends).is_err()
        );
    }
}
