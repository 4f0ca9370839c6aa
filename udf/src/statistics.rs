//! An archive's row-group statistics in DataFusion's terms, for archives read through
//! [`crate::GlydFormat`]: [`GroupStatistics`] answers `PruningStatistics` (each row group's
//! min, max, null and row counts, and what its dictionary holds), so that DataFusion's own
//! `PruningPredicate` skips the row groups a query's filters rule out; [`file_statistics`]
//! sums them into a file's `Statistics`.
//!
//! A chunk's statistics are in its stored terms (scaled decimals, days, time units, text as
//! read); they are turned into Arrow values of the table's column type by the same code that
//! turns the chunk's values into Arrow. A chunk whose kind does not give the column's type
//! (a column that is text in some row groups and numbers in others) has no range here.

use std::cmp::Ordering;
use std::collections::HashSet;

use datafusion::arrow::array::{ArrayRef, BooleanArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::pruning::PruningStatistics;
use datafusion::common::stats::Precision;
use datafusion::common::{Column, ColumnStatistics, ScalarValue, Statistics};
use glyd_columnar::model::Kind;
use glyd_columnar::ArchiveReader;

/// The row groups of a one-table archive, as containers to prune.
pub struct GroupStatistics<'a> {
    archive: &'a ArchiveReader,
    /// The table schema the predicate was planned on.
    schema: &'a Schema,
    /// The archive's own schema.
    own: &'a Schema,
}

impl<'a> GroupStatistics<'a> {
    pub fn new(archive: &'a ArchiveReader, schema: &'a Schema, own: &'a Schema) -> Self {
        GroupStatistics {
            archive,
            schema,
            own,
        }
    }

    /// The column's index in the archive and its type in the table, when both have it with
    /// the same type.
    fn column(&self, column: &Column) -> Option<(usize, &DataType)> {
        let target = self.schema.field_with_name(&column.name).ok()?.data_type();
        let c = self.own.index_of(&column.name).ok()?;
        (self.own.field(c).data_type() == target).then_some((c, target))
    }

    /// One scalar per row group (a null one where `bound` does not know), as an array.
    fn per_group(
        &self,
        column: &Column,
        bound: impl Fn(Option<(ScalarValue, ScalarValue)>) -> Option<ScalarValue>,
    ) -> Option<ArrayRef> {
        let (c, target) = self.column(column)?;
        let null = ScalarValue::try_from(target).ok()?;
        let values = (0..self.num_containers()).map(|g| {
            bound(chunk_range(self.archive, g, c, target)).unwrap_or_else(|| null.clone())
        });
        ScalarValue::iter_to_array(values).ok()
    }
}

/// The smallest and largest value of column `c` in row group `g`, as scalars of `target`.
fn chunk_range(
    archive: &ArchiveReader,
    g: usize,
    c: usize,
    target: &DataType,
) -> Option<(ScalarValue, ScalarValue)> {
    let meta = archive.row_groups().get(g)?.columns.get(c)?;
    match meta.kind {
        Kind::Arrow => None,
        Kind::Text => {
            let (min, max) = meta.stats.text_range.as_ref()?;
            let text = |v: &[u8]| -> Option<ScalarValue> {
                let s = String::from_utf8(v.to_vec()).ok()?;
                match target {
                    DataType::Utf8 => Some(ScalarValue::Utf8(Some(s))),
                    DataType::Utf8View => Some(ScalarValue::Utf8View(Some(s))),
                    DataType::LargeUtf8 => Some(ScalarValue::LargeUtf8(Some(s))),
                    _ => None,
                }
            };
            Some((text(min)?, text(max)?))
        }
        kind => {
            let (min, max) = meta.stats.int_range?;
            // The chunk's own conversion to Arrow: it refuses a kind that is not `target`'s.
            let a = glyd_columnar::typed_array(kind, vec![min, max], target).ok()?;
            Some((
                ScalarValue::try_from_array(&a, 0).ok()?,
                ScalarValue::try_from_array(&a, 1).ok()?,
            ))
        }
    }
}

impl PruningStatistics for GroupStatistics<'_> {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.per_group(column, |r| r.map(|r| r.0))
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.per_group(column, |r| r.map(|r| r.1))
    }

    fn num_containers(&self) -> usize {
        self.archive.row_groups().len()
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        let (c, _) = self.column(column)?;
        let groups = self.archive.row_groups();
        Some(std::sync::Arc::new(UInt64Array::from_iter_values(
            groups
                .iter()
                .map(|g| g.columns.get(c).map_or(0, |m| m.stats.nulls)),
        )))
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        let groups = self.archive.row_groups();
        Some(std::sync::Arc::new(UInt64Array::from_iter_values(
            groups.iter().map(|g| g.rows),
        )))
    }

    /// From dictionaries: `false` where a row group's dictionary holds none of `values`,
    /// `true` where it holds only `values` (and no row is null), unknown otherwise.
    fn contained(&self, column: &Column, values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        let (c, _) = self.column(column)?;
        let wanted = values
            .iter()
            .map(|v| match v {
                ScalarValue::Utf8(Some(s))
                | ScalarValue::Utf8View(Some(s))
                | ScalarValue::LargeUtf8(Some(s)) => Some(s.as_bytes()),
                _ => None,
            })
            .collect::<Option<HashSet<&[u8]>>>()?;
        let groups = self.archive.row_groups();
        let known: Vec<Option<bool>> = (0..groups.len())
            .map(|g| {
                let entries = self.archive.dictionary(g, c).ok()??;
                let held = entries
                    .iter()
                    .filter(|e| wanted.contains(e.as_slice()))
                    .count();
                let nulls = groups[g].columns.get(c)?.stats.nulls;
                match held {
                    0 => Some(false),
                    n if n == entries.len() && nulls == 0 => Some(true),
                    _ => None,
                }
            })
            .collect();
        known
            .iter()
            .any(Option::is_some)
            .then(|| BooleanArray::from(known))
    }
}

/// A one-table archive's statistics as a file's: rows exactly, and per column of `schema`
/// the null count (exact) and the smallest and largest value over its row groups (inexact:
/// a text range may count a null row's empty spelling).
pub fn file_statistics(archive: &ArchiveReader, schema: &Schema, own: &Schema) -> Statistics {
    let groups = GroupStatistics::new(archive, schema, own);
    let mut s = Statistics::new_unknown(schema);
    s.num_rows = Precision::Exact(archive.rows() as usize);
    s.total_byte_size = Precision::Inexact(archive.input_len() as usize);
    for (field, stats) in schema.fields().iter().zip(s.column_statistics.iter_mut()) {
        let Some((c, target)) = groups.column(&Column::from_name(field.name())) else {
            continue;
        };
        *stats = column_statistics(archive, c, target);
    }
    s
}

fn column_statistics(archive: &ArchiveReader, c: usize, target: &DataType) -> ColumnStatistics {
    let mut s = ColumnStatistics::new_unknown();
    let metas = archive.row_groups();
    if let Some(nulls) = metas
        .iter()
        .map(|g| g.columns.get(c).map(|m| m.stats.nulls))
        .sum::<Option<u64>>()
    {
        s.null_count = Precision::Exact(nulls as usize);
    }
    let ranges = (0..metas.len())
        .map(|g| chunk_range(archive, g, c, target))
        .collect::<Option<Vec<_>>>();
    if let Some(ranges) = ranges {
        let min = extreme(ranges.iter().map(|r| &r.0), Ordering::Less);
        let max = extreme(ranges.iter().map(|r| &r.1), Ordering::Greater);
        if let (Some(min), Some(max)) = (min, max) {
            s.min_value = Precision::Inexact(min);
            s.max_value = Precision::Inexact(max);
        }
    }
    s
}

/// The least (`Less`) or greatest (`Greater`) of `values`; `None` if there are none or two
/// do not compare.
fn extreme<'v>(
    mut values: impl Iterator<Item = &'v ScalarValue>,
    keep: Ordering,
) -> Option<ScalarValue> {
    let mut best = values.next()?;
    for v in values {
        if v.partial_cmp(best)? == keep {
            best = v;
        }
    }
    Some(best.clone())
}
