//! Request bodies as rows: newline-delimited JSON or a JSON array of objects for one stream,
//! or an Elasticsearch `_bulk` body (action line, then document) whose `_index` names each
//! document's stream. A body is taken whole or refused whole, naming the line and the reason.

use std::fmt;

use simd_json::prelude::*;

use crate::event::{check_stream, fields_of, push_row, Rows};

/// Why a body was refused: the line (1-based; for a JSON array, the element) and the reason.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused {
    pub line: usize,
    pub reason: String,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

/// The lines of `body` with their numbers (1-based), blank ones skipped.
fn lines(body: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    body.split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix(b"\r").unwrap_or(l)))
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace))
}

/// One event's row, or why not.
fn row(
    out: &mut Rows,
    line: usize,
    text: &[u8],
    max_record: usize,
    now: i64,
) -> Result<(), Refused> {
    let refuse = |reason: String| Refused { line, reason };
    if text.len() > max_record {
        return Err(refuse(format!(
            "an event of {} bytes is over the record size limit of {max_record} \
             (--max-record-size)",
            text.len()
        )));
    }
    let fields = fields_of(text).map_err(refuse)?;
    push_row(&mut out.lines, &fields, None, now);
    out.events += 1;
    Ok(())
}

/// The rows of a body for `stream`: newline-delimited JSON objects, or one JSON array of
/// them (its elements numbered as lines).
pub fn json_rows(stream: &str, body: &[u8], max_record: usize, now: i64) -> Result<Rows, Refused> {
    let mut out = Rows {
        stream: stream.to_string(),
        ..Rows::default()
    };
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        let items: Vec<&serde_json::value::RawValue> =
            serde_json::from_slice(body).map_err(|e| Refused {
                line: e.line(),
                reason: format!("invalid JSON array: {e}"),
            })?;
        for (i, item) in items.iter().enumerate() {
            row(&mut out, i + 1, item.get().as_bytes(), max_record, now)?;
        }
        return Ok(out);
    }
    for (n, line) in lines(body) {
        row(&mut out, n, line, max_record, now)?;
    }
    Ok(out)
}

/// What one `_bulk` item did, for the response.
#[derive(Debug, PartialEq, Eq)]
pub struct BulkItem {
    /// `index` or `create`, as asked.
    pub action: &'static str,
    pub index: String,
}

/// The rows of an Elasticsearch `_bulk` body, one [`Rows`] per stream in order of first
/// appearance, and its items in order: each `index` or `create` action line names the
/// stream (`_index`, else `default_index`, the path's) of the document on the line after it.
pub fn bulk_rows(
    default_index: Option<&str>,
    body: &[u8],
    max_record: usize,
    now: i64,
) -> Result<(Vec<Rows>, Vec<BulkItem>), Refused> {
    let mut streams: Vec<Rows> = Vec::new();
    let mut items = Vec::new();
    let mut it = lines(body);
    while let Some((n, action)) = it.next() {
        let refuse = |reason: String| Refused { line: n, reason };
        let mut buf = action.to_vec();
        let value = simd_json::to_borrowed_value(&mut buf)
            .map_err(|e| refuse(format!("invalid action line: {e}")))?;
        let object = value
            .as_object()
            .filter(|o| o.len() == 1)
            .ok_or_else(|| refuse("an action line is an object of one action".into()))?;
        let (name, meta) = object.iter().next().expect("one key");
        let action = match name.as_ref() {
            "index" => "index",
            "create" => "create",
            other => {
                return Err(refuse(format!(
                    "action {other:?} is not taken: glyd keeps events, it only indexes and \
                     creates"
                )))
            }
        };
        let index = match meta.get("_index") {
            Some(v) => v
                .as_str()
                .ok_or_else(|| refuse("_index is not a string".into()))?,
            None => default_index.ok_or_else(|| {
                refuse("no _index in the action and none in the path (POST /<index>/_bulk)".into())
            })?,
        };
        check_stream(index).map_err(refuse)?;
        let (dn, doc) = it.next().ok_or_else(|| Refused {
            line: n + 1,
            reason: "an action line without its document".into(),
        })?;
        let found = streams.iter().position(|s| s.stream == index);
        let at = match found {
            Some(at) => at,
            None => {
                streams.push(Rows {
                    stream: index.to_string(),
                    ..Rows::default()
                });
                streams.len() - 1
            }
        };
        row(&mut streams[at], dn, doc, max_record, now)?;
        items.push(BulkItem {
            action,
            index: index.to_string(),
        });
    }
    Ok((streams, items))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ndjson_and_arrays_become_rows() {
        let r = json_rows("app", b"{\"a\":1}\n\n{\"a\":2}\r\n", 100, 0).unwrap();
        assert_eq!(r.events, 2);
        assert_eq!(
            r.lines,
            b"{\"time\":\"1970-01-01T00:00:00.000000\",\"a\":1}\n\
              {\"time\":\"1970-01-01T00:00:00.000000\",\"a\":2}\n"
        );
        let a = json_rows("app", b" [{\"a\":1},\n{\"a\":2}]", 100, 0).unwrap();
        assert_eq!(a.lines, r.lines);
    }

    #[test]
    fn bad_bodies_name_the_line() {
        let e = json_rows("app", b"{\"a\":1}\n{\"a\":\n", 100, 0).unwrap_err();
        assert_eq!(e.line, 2);
        let e = json_rows("app", b"{\"a\":1}\n[1]\n", 100, 0).unwrap_err();
        assert_eq!((e.line, e.reason.as_str()), (2, "not a JSON object"));
        let e = json_rows("app", b"[{\"a\":1}, 2]", 100, 0).unwrap_err();
        assert_eq!(e.line, 2);
        let e = json_rows("app", b"{\"a\":\"long\"}", 5, 0).unwrap_err();
        assert!(e.reason.contains("over the record size limit"), "{e}");
    }

    #[test]
    fn bulk_bodies_route_by_index() {
        let body = b"{\"index\":{\"_index\":\"web\"}}\n{\"m\":1}\n\
                     {\"create\":{}}\n{\"m\":2}\n{\"index\":{\"_index\":\"web\"}}\n{\"m\":3}\n";
        let (rows, items) = bulk_rows(Some("app"), body, 100, 0).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].stream.as_str(), rows[0].events), ("web", 2));
        assert_eq!((rows[1].stream.as_str(), rows[1].events), ("app", 1));
        assert_eq!(items.len(), 3);
        assert_eq!(items[1].action, "create");
        let e = bulk_rows(None, b"{\"create\":{}}\n{}\n", 100, 0).unwrap_err();
        assert_eq!(e.line, 1);
        let e = bulk_rows(Some("a"), b"{\"delete\":{}}\n", 100, 0).unwrap_err();
        assert!(e.reason.contains("delete"));
        let e = bulk_rows(Some("a"), b"{\"index\":{}}\n", 100, 0).unwrap_err();
        assert_eq!(e.line, 2);
        let e = bulk_rows(None, b"{\"index\":{\"_index\":\"../x\"}}\n{}\n", 100, 0).unwrap_err();
        assert!(e.reason.contains("stream name"));
    }
}
