//! Row group pruning: whether a filter can hold on any row of a row group, judged from its
//! column chunks' statistics (exact min and max, null count) and, for dictionary-coded text,
//! from the chunk's dictionary (a value between min and max may still be absent). Understood:
//! comparisons of a column with a literal (`=`, `<`, `<=`, `>`, `>=`, either side), `BETWEEN`,
//! `IN (...)` of literals, `LIKE 'prefix%'`, `IS NULL`, and `AND` / `OR` of those. Anything
//! else, or a literal that does not convert exactly into the column's stored units, keeps the
//! row group: pruning only ever skips row groups that cannot match.

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::expr::InList;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Like, Operator};
use glyd_columnar::model::{Kind, Stats};
use glyd_columnar::predicate::TextTest;
use glyd_columnar::RowGroupMeta;

/// A literal in a column's stored terms: an integer (scaled decimal, days, time units) or
/// text bytes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Value {
    Int(i64),
    Text(Vec<u8>),
}

/// Looks into one row group's dictionary-coded chunks: `probe(column, test)` says whether
/// some distinct value of that column's chunk passes `test`, or `None` when the chunk is not
/// dictionary-coded (or its dictionary cannot be read: pruning then keeps the row group).
pub type DictionaryProbe<'a> = dyn FnMut(usize, &dyn Fn(&[u8]) -> bool) -> Option<bool> + 'a;

/// Whether pruning can use `filter` at all (the rest of the query's filters are left to
/// DataFusion alone).
pub fn understands(filter: &Expr, schema: &Schema) -> bool {
    match filter {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And | Operator::Or => understands(left, schema) && understands(right, schema),
            _ => comparison(left, *op, right, schema).is_some(),
        },
        Expr::Between(b) => !b.negated && column_index(&b.expr, schema).is_some(),
        Expr::InList(l) => in_list(l, schema).is_some(),
        Expr::Like(l) => like_prefix(l, schema).is_some(),
        Expr::IsNull(e) => column_index(e, schema).is_some(),
        _ => false,
    }
}

/// Whether some row of the row group `meta` may satisfy `filter`; `true` when unsure.
/// `dictionary` looks into the row group's dictionary-coded chunks.
pub fn may_match(
    filter: &Expr,
    schema: &Schema,
    meta: &RowGroupMeta,
    dictionary: &mut DictionaryProbe,
) -> bool {
    let stats = |c: usize| meta.columns.get(c).map(|m| (&m.stats, m.kind));
    match filter {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And => {
                may_match(left, schema, meta, dictionary)
                    && may_match(right, schema, meta, dictionary)
            }
            Operator::Or => {
                may_match(left, schema, meta, dictionary)
                    || may_match(right, schema, meta, dictionary)
            }
            _ => match comparison(left, *op, right, schema) {
                Some((c, op, lit)) => match stats(c) {
                    Some((s, kind)) => match stored(lit, kind) {
                        Some(v) => {
                            range_allows(s, kind, meta.rows, op, &v)
                                && (op != Operator::Eq || dictionary_may_hold(dictionary, c, &v))
                        }
                        None => true,
                    },
                    None => true,
                },
                None => true,
            },
        },
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) => {
            let ge = Expr::BinaryExpr(BinaryExpr::new(expr.clone(), Operator::GtEq, low.clone()));
            let le = Expr::BinaryExpr(BinaryExpr::new(expr.clone(), Operator::LtEq, high.clone()));
            may_match(&ge, schema, meta, dictionary) && may_match(&le, schema, meta, dictionary)
        }
        Expr::InList(l) => match in_list(l, schema) {
            Some((_, values)) => values.iter().any(|&v| {
                let eq = Expr::BinaryExpr(BinaryExpr::new(
                    l.expr.clone(),
                    Operator::Eq,
                    Box::new(Expr::Literal(v.clone(), None)),
                ));
                may_match(&eq, schema, meta, dictionary)
            }),
            None => true,
        },
        Expr::Like(l) => match like_prefix(l, schema) {
            Some((c, prefix)) => {
                let in_range = match stats(c).and_then(|(s, _)| s.text_range.as_ref()) {
                    // Some value in [min, max] starts with the prefix only if the prefix is at
                    // most max and min is below the prefix's end.
                    Some((min, max)) => {
                        prefix.as_slice() <= max.as_slice()
                            && prefix_end(&prefix).is_none_or(|end| min.as_slice() < end.as_slice())
                    }
                    None => true,
                };
                in_range && dictionary(c, &|v| v.starts_with(&prefix)).unwrap_or(true)
            }
            None => true,
        },
        Expr::IsNull(e) => match column_index(e, schema).and_then(stats) {
            Some((s, _)) => s.nulls > 0,
            None => true,
        },
        _ => true,
    }
}

/// `filter` as a test of one text column's values that a chunk can answer on its codes (see
/// [`TextTest`]): `column = 'text'`, `column IN ('a', ...)`, `column LIKE 'prefix%'`, and
/// `OR`s of those on one column. A row whose value fails it, or is null, cannot satisfy
/// `filter`.
pub fn row_test(filter: &Expr, schema: &Schema) -> Option<(usize, TextTest)> {
    let text = |c: usize| {
        matches!(
            schema.field(c).data_type(),
            DataType::Utf8 | DataType::Utf8View
        )
    };
    let bytes = |v: &ScalarValue| match stored(v, Kind::Text)? {
        Value::Text(t) => Some(t),
        Value::Int(_) => None,
    };
    match filter {
        // `IN` lists reach here as `OR`s of `=` (DataFusion rewrites short ones).
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Or,
            right,
        }) => {
            let ((a, left), (b, right)) = (row_test(left, schema)?, row_test(right, schema)?);
            (a == b).then(|| (a, TextTest::AnyOf(vec![left, right])))
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (c, op, lit) = comparison(left, *op, right, schema)?;
            let want = bytes(lit)?;
            (op == Operator::Eq && text(c)).then_some((c, TextTest::Equals(want)))
        }
        Expr::InList(l) => {
            let (c, values) = in_list(l, schema)?;
            let wanted = values
                .into_iter()
                .map(|v| bytes(v).map(TextTest::Equals))
                .collect::<Option<Vec<_>>>()?;
            text(c).then_some((c, TextTest::AnyOf(wanted)))
        }
        Expr::Like(l) => {
            let (c, prefix) = like_prefix(l, schema)?;
            Some((c, TextTest::StartsWith(prefix)))
        }
        _ => None,
    }
}

/// Whether column `c`'s dictionary (if it has one) holds the text `v`.
fn dictionary_may_hold(dictionary: &mut DictionaryProbe, c: usize, v: &Value) -> bool {
    match v {
        Value::Text(t) => dictionary(c, &|d| d == t.as_slice()).unwrap_or(true),
        Value::Int(_) => true,
    }
}

/// `column IN (literal, ...)` (not negated) as the column's index and the literals.
fn in_list<'a>(l: &'a InList, schema: &Schema) -> Option<(usize, Vec<&'a ScalarValue>)> {
    if l.negated {
        return None;
    }
    let c = column_index(&l.expr, schema)?;
    let values = l.list.iter().map(literal).collect::<Option<Vec<_>>>()?;
    Some((c, values))
}

/// The smallest byte string above every string that starts with `prefix`, if any.
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Whether a chunk with statistics `s` may hold a value `v` with `value op lit`.
fn range_allows(s: &Stats, kind: Kind, rows: u64, op: Operator, lit: &Value) -> bool {
    let (min, max) = match (lit, &s.int_range, &s.text_range) {
        (Value::Int(_), Some((a, b)), _) if kind != Kind::Text => (Value::Int(*a), Value::Int(*b)),
        (Value::Text(_), _, Some((a, b))) if kind == Kind::Text => {
            (Value::Text(a.clone()), Value::Text(b.clone()))
        }
        // No range: every value is null (nothing compares true), or the range is unknown.
        _ => return !(s.nulls == rows && rows > 0),
    };
    match op {
        Operator::Eq => &min <= lit && lit <= &max,
        Operator::Lt => &min < lit,
        Operator::LtEq => &min <= lit,
        Operator::Gt => &max > lit,
        Operator::GtEq => &max >= lit,
        _ => true,
    }
}

/// `column op literal` (either way round) as the column's index, the operator with the column
/// on the left, and the literal.
fn comparison<'a>(
    left: &'a Expr,
    op: Operator,
    right: &'a Expr,
    schema: &Schema,
) -> Option<(usize, Operator, &'a ScalarValue)> {
    let (col, lit, op) = match (column_index(left, schema), column_index(right, schema)) {
        (Some(c), None) => (c, right, op),
        (None, Some(c)) => (c, left, op.swap()?),
        _ => return None,
    };
    if !matches!(
        op,
        Operator::Eq | Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq
    ) {
        return None;
    }
    Some((col, op, literal(lit)?))
}

fn column_index(e: &Expr, schema: &Schema) -> Option<usize> {
    match e {
        Expr::Column(c) => schema.index_of(&c.name).ok(),
        _ => None,
    }
}

fn literal(e: &Expr) -> Option<&ScalarValue> {
    match e {
        Expr::Literal(v, _) => Some(v),
        _ => None,
    }
}

/// `column LIKE 'prefix%'` (case-sensitive, not negated, no escape, no other wildcard) as the
/// column's index and the prefix.
fn like_prefix(l: &Like, schema: &Schema) -> Option<(usize, Vec<u8>)> {
    if l.negated || l.case_insensitive || l.escape_char.is_some() {
        return None;
    }
    let c = column_index(&l.expr, schema)?;
    let pattern = match literal(&l.pattern)? {
        ScalarValue::Utf8(Some(p))
        | ScalarValue::LargeUtf8(Some(p))
        | ScalarValue::Utf8View(Some(p)) => p,
        _ => return None,
    };
    let prefix = pattern.strip_suffix('%')?;
    let text = matches!(
        schema.field(c).data_type(),
        DataType::Utf8 | DataType::Utf8View
    );
    if prefix.contains(['%', '_', '\\']) || !text {
        return None;
    }
    Some((c, prefix.as_bytes().to_vec()))
}

/// Ten to the power `p`, if it fits.
fn pow10(p: u32) -> Option<i64> {
    10i64.checked_pow(p)
}

/// `v` in the stored terms of a chunk of `kind`: exact, or `None`.
fn stored(v: &ScalarValue, kind: Kind) -> Option<Value> {
    let int = |v: &ScalarValue| -> Option<i64> {
        match v {
            ScalarValue::Int8(Some(x)) => Some(i64::from(*x)),
            ScalarValue::Int16(Some(x)) => Some(i64::from(*x)),
            ScalarValue::Int32(Some(x)) => Some(i64::from(*x)),
            ScalarValue::Int64(Some(x)) => Some(*x),
            ScalarValue::UInt8(Some(x)) => Some(i64::from(*x)),
            ScalarValue::UInt16(Some(x)) => Some(i64::from(*x)),
            ScalarValue::UInt32(Some(x)) => Some(i64::from(*x)),
            ScalarValue::UInt64(Some(x)) => i64::try_from(*x).ok(),
            _ => None,
        }
    };
    match kind {
        Kind::Int => int(v).map(Value::Int),
        Kind::Decimal(places) => {
            let places = u32::from(places);
            match v {
                ScalarValue::Decimal128(Some(x), _, s) => {
                    let s = u32::try_from(*s).ok()?;
                    let x = i64::try_from(*x).ok()?;
                    if s <= places {
                        x.checked_mul(pow10(places - s)?).map(Value::Int)
                    } else {
                        let f = pow10(s - places)?;
                        (x % f == 0).then(|| Value::Int(x / f))
                    }
                }
                _ => int(v)?.checked_mul(pow10(places)?).map(Value::Int),
            }
        }
        Kind::Date => match v {
            ScalarValue::Date32(Some(d)) => Some(Value::Int(i64::from(*d))),
            _ => None,
        },
        Kind::Timestamp(_) | Kind::LogTime(_) => {
            // Stored in units of 10^-places seconds.
            let places = kind.time_places()?;
            let (x, from) = match v {
                ScalarValue::TimestampSecond(Some(x), _) => (*x, 1i64),
                ScalarValue::TimestampMillisecond(Some(x), _) => (*x, 1_000),
                ScalarValue::TimestampMicrosecond(Some(x), _) => (*x, 1_000_000),
                ScalarValue::TimestampNanosecond(Some(x), _) => (*x, 1_000_000_000),
                _ => return None,
            };
            let to = pow10(u32::from(places))?;
            if from <= to {
                x.checked_mul(to / from).map(Value::Int)
            } else {
                (x % (from / to) == 0).then(|| Value::Int(x / (from / to)))
            }
        }
        Kind::Arrow => None,
        Kind::Text => match v {
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)) => Some(Value::Text(s.as_bytes().to_vec())),
            _ => None,
        },
    }
}
