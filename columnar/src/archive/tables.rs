//! The tables an archive reads as. A JSON lines archive whose keys grew defines its table more
//! than once, under one name, each definition with the columns so far, and a SQL dump defines
//! a table once per shape of its INSERTs: the definitions of one name read as one table whose
//! columns are all the names in the order they first appear, each row group's missing columns
//! null. Every other archive reads as it defines its tables. A table with verbatim
//! records (input no shredder could represent exactly) reads with a `_raw` column last: null
//! in shredded rows; each verbatim record is a row of its own, null but for its text there.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::model::{Format, Kind, Layout, Stats, Table};
use crate::rowgroup::{ColumnMeta, RowGroupMeta};

/// Name of the column that holds verbatim records' text (another if a column has it).
pub const RAW: &str = "_raw";

/// How a stored table's columns read.
#[derive(Clone, Debug)]
pub(crate) struct TableMap {
    /// The table it reads as.
    pub table: usize,
    /// For each column of that table, this table's column of that name, if it has one.
    pub columns: Vec<Option<usize>>,
}

/// The tables an archive of `format` whose stored tables are `stored` reads as, and how each
/// stored table maps onto them.
pub(crate) fn read_tables(format: &Format, stored: &[Table]) -> (Vec<Table>, Vec<TableMap>) {
    let merge = matches!(format, Format::JsonLines(_) | Format::SqlDump);
    let mut tables: Vec<Table> = Vec::new();
    let mut owner = Vec::with_capacity(stored.len());
    for t in stored {
        let found = merge
            .then(|| tables.iter().position(|r| r.name == t.name))
            .flatten();
        match found {
            Some(r) => {
                if let (Layout::Text(d), Some(more)) = (&mut tables[r].layout, t.dialect()) {
                    for n in &more.names {
                        if !d.names.contains(n) {
                            d.names.push(n.clone());
                            d.columns += 1;
                        }
                    }
                }
                owner.push(r);
            }
            None => {
                tables.push(t.clone());
                owner.push(tables.len() - 1);
            }
        }
    }
    let maps = stored
        .iter()
        .zip(owner)
        .map(|(t, r)| TableMap {
            table: r,
            columns: tables[r]
                .names()
                .iter()
                .map(|n| t.names().iter().position(|m| m == n))
                .collect(),
        })
        .collect();
    (tables, maps)
}

/// Row group `g` (as stored) in the terms of the table it reads as: that table's number, its
/// columns (missing ones with no streams, every row null), and its `verbatim` records counted
/// as rows that are null in every column.
pub(crate) fn read_meta(g: &RowGroupMeta, map: &TableMap, verbatim: u64) -> RowGroupMeta {
    let rows = g.rows + verbatim;
    let columns = map
        .columns
        .iter()
        .map(|c| match c {
            Some(c) => {
                let mut m = g.columns[*c].clone();
                m.stats.nulls += verbatim;
                m
            }
            None => ColumnMeta {
                kind: Kind::Text,
                raw_bytes: 0,
                stats: Stats {
                    nulls: rows,
                    ..Stats::default()
                },
                streams: Vec::new(),
            },
        })
        .collect();
    RowGroupMeta {
        table: map.table,
        rows,
        columns,
        ..g.clone()
    }
}

/// The schema table `table` (of `read`) reads with: each column's kind's Arrow type where every
/// stored row group with rows that has the column agrees on it, else Utf8; then `raw_name`'s
/// column (text tables).
pub(crate) fn schema_of(
    table: usize,
    read: &Table,
    stored: &[RowGroupMeta],
    maps: &[TableMap],
    raw_name: Option<&str>,
) -> SchemaRef {
    let mut fields: Vec<Field> = (0..read.columns())
        .map(|i| {
            let mut kinds = stored.iter().filter(|g| g.rows > 0).filter_map(|g| {
                let m = &maps[g.table];
                (m.table == table)
                    .then(|| m.columns[i].map(|c| g.columns[c].kind))
                    .flatten()
            });
            let first = kinds.next().unwrap_or(Kind::Text);
            let kind = if kinds.all(|k| k == first) {
                first
            } else {
                Kind::Text
            };
            Field::new(read.names()[i].clone(), kind.data_type(), true)
        })
        .collect();
    if let Some(name) = raw_name {
        fields.push(Field::new(name, DataType::Utf8, true));
    }
    Arc::new(Schema::new(fields))
}

/// The name of table `t`'s verbatim-records column: [`RAW`], or with underscores added until
/// no column has it.
pub(crate) fn raw_name(t: &Table) -> String {
    let mut name = RAW.to_string();
    while t.names().contains(&name) {
        name.push('_');
    }
    name
}
