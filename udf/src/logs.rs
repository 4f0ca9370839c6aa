//! SQL functions that make log lines queryable, on the record engine's own reading of a line
//! (`glyd_columnar::template`: a token holding a digit is a variable, the rest is the
//! template; `glyd_columnar::logtime`: the timestamp spellings logs use):
//!
//! - `log_template(text)`: the line's template, each variable written `<*>`.
//! - `log_var(text, n)`: the line's `n`th variable (from 1), or NULL.
//! - `log_time(text [, year])`: the first timestamp in the line, as a timestamp in
//!   microseconds; spellings without a year (syslog's `Jun 14 15:16:01`) take `year`,
//!   1970 when not given.
//! - `glyd_templates('archive.glyd' [, 'column'])`: a table of the templates of a text column
//!   of an archive (default `message` or `Content`), with how many lines have each and the
//!   first such line, commonest first.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Int64Array, StringArray, StringBuilder, TimestampMicrosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl};
use datafusion::common::{exec_err, plan_err, ScalarValue};
use datafusion::datasource::{MemTable, TableProvider};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use glyd_columnar::logtime::find_log_time;
use glyd_columnar::template_of;
use glyd_columnar::ArchiveReader;

use crate::policy::SqlPolicy;
use crate::source::{archive_paths, external};

/// Registers the log functions with `ctx`; `glyd_templates` opens files only where `policy`
/// allows.
pub fn register_log_functions(ctx: &SessionContext, policy: SqlPolicy) {
    ctx.register_udf(ScalarUDF::from(LogTemplate::default()));
    ctx.register_udf(ScalarUDF::from(LogVar::default()));
    ctx.register_udf(ScalarUDF::from(LogTime::default()));
    ctx.register_udtf(
        "glyd_templates",
        Arc::new(GlydTemplates {
            files: policy.files,
        }),
    );
}

/// Argument `i` of a call as a string array of `rows` rows.
fn text_arg(args: &ScalarFunctionArgs, i: usize) -> Result<ArrayRef> {
    let a = args.args[i].to_array(args.number_rows)?;
    Ok(cast(&a, &DataType::Utf8)?)
}

/// Maps each non-null value of a text argument to an optional string.
fn map_text(
    args: &ScalarFunctionArgs,
    mut f: impl FnMut(usize, &str) -> Option<String>,
) -> Result<ColumnarValue> {
    let text = text_arg(args, 0)?;
    let text = text.as_string::<i32>();
    let mut out = StringBuilder::with_capacity(text.len(), text.value_data().len());
    for (row, v) in text.iter().enumerate() {
        out.append_option(v.and_then(|v| f(row, v)));
    }
    Ok(ColumnarValue::Array(Arc::new(out.finish())))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct LogTemplate {
    signature: Signature,
}

impl Default for LogTemplate {
    fn default() -> Self {
        LogTemplate {
            signature: Signature::string(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for LogTemplate {
    fn name(&self) -> &str {
        "log_template"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        map_text(&args, |_, v| {
            // Splitting bytes at ASCII boundaries keeps UTF-8 whole.
            Some(String::from_utf8_lossy(&template_of(v.as_bytes()).0).into_owned())
        })
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct LogVar {
    signature: Signature,
}

impl Default for LogVar {
    fn default() -> Self {
        LogVar {
            signature: Signature::one_of(
                vec![TypeSignature::Exact(vec![DataType::Utf8, DataType::Int64])],
                Volatility::Immutable,
            ),
        }
    }
}

impl ScalarUDFImpl for LogVar {
    fn name(&self) -> &str {
        "log_var"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.args[1].to_array(args.number_rows)?;
        let n = n.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        map_text(&args, |row, v| {
            let k = usize::try_from(n.is_valid(row).then(|| n.value(row))?).ok()?;
            let (_, vars) = template_of(v.as_bytes());
            let var = vars.get(k.checked_sub(1)?)?;
            Some(String::from_utf8_lossy(var).into_owned())
        })
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct LogTime {
    signature: Signature,
}

impl Default for LogTime {
    fn default() -> Self {
        LogTime {
            signature: Signature::one_of(
                vec![
                    TypeSignature::Exact(vec![DataType::Utf8]),
                    TypeSignature::Exact(vec![DataType::Utf8, DataType::Int64]),
                ],
                Volatility::Immutable,
            ),
        }
    }
}

/// The year `log_time` gives spellings that have none, when the call does not say.
const DEFAULT_YEAR: i64 = 1970;

impl ScalarUDFImpl for LogTime {
    fn name(&self) -> &str {
        "log_time"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Timestamp(TimeUnit::Microsecond, None))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let text = text_arg(&args, 0)?;
        let text = text.as_string::<i32>();
        let years = match args.args.get(1) {
            Some(y) => Some(y.to_array(args.number_rows)?),
            None => None,
        };
        let years = years
            .as_ref()
            .map(|y| y.as_primitive::<datafusion::arrow::datatypes::Int64Type>());
        let times: TimestampMicrosecondArray = text
            .iter()
            .enumerate()
            .map(|(row, v)| {
                let year = match years {
                    Some(y) if y.is_null(row) => return None,
                    Some(y) => y.value(row),
                    None => DEFAULT_YEAR,
                };
                find_log_time(v?.as_bytes(), year)
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(times)))
    }
}

/// `glyd_templates(path [, column])`: opens the path only where the session's policy allows
/// file access.
#[derive(Debug)]
struct GlydTemplates {
    files: bool,
}

/// Columns tried, in order, when `glyd_templates` is not told which: log archives call the
/// free text `message`, loghub's structured CSVs `Content`.
const TEXT_COLUMNS: [&str; 2] = ["message", "Content"];

impl TableFunctionImpl for GlydTemplates {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let text = |e: &Expr| match e {
            Expr::Literal(ScalarValue::Utf8(Some(s)), _) => Some(s.clone()),
            _ => None,
        };
        let (path, column) = match args.exprs() {
            [p] => (text(p), None),
            [p, c] => match text(c) {
                Some(c) => (text(p), Some(c)),
                None => return plan_err!("glyd_templates: the column must be a string literal"),
            },
            _ => return plan_err!("glyd_templates takes an archive path and optionally a column"),
        };
        let Some(path) = path else {
            return plan_err!("glyd_templates: the archive path must be a string literal");
        };
        if !self.files {
            return plan_err!(
                "glyd_templates: this session does not open files named in queries (its SQL policy allows no file access)"
            );
        }
        let batch = templates_of(Path::new(&path), column.as_deref())?;
        Ok(Arc::new(MemTable::try_new(
            batch.schema(),
            vec![vec![batch]],
        )?))
    }
}

/// Counts the templates of `column` over the archives at `path`.
fn templates_of(path: &Path, column: Option<&str>) -> Result<RecordBatch> {
    // Template → (lines, first line).
    let mut counts: HashMap<Vec<u8>, (i64, String)> = HashMap::new();
    let mut found = false;
    for file in archive_paths(path)? {
        let archive = ArchiveReader::open(&file).map_err(|e| external(&file, e))?;
        for (t, table) in archive.tables().iter().enumerate() {
            let names = table.names();
            let col = match column {
                Some(c) => names.iter().position(|n| n == c),
                None => TEXT_COLUMNS
                    .iter()
                    .find_map(|c| names.iter().position(|n| n == c)),
            };
            let Some(col) = col else {
                if archive.tables().len() == 1 {
                    let want =
                        column.map_or("a `message` or `Content`".into(), |c| format!("'{c}'"));
                    return Err(external(
                        &file,
                        format!("no column {want}; name one of: {}", names.join(", ")),
                    ));
                }
                continue;
            };
            found = true;
            // One row group at a time keeps memory to one chunk of the column.
            for g in archive.groups_of(t) {
                let batches = archive
                    .read(Some(&[col]), g..g + 1)
                    .map_err(|e| external(&file, e))?;
                for b in batches {
                    let values = cast(b.column(0), &DataType::Utf8)?;
                    for v in values.as_string::<i32>().iter().flatten() {
                        let (template, _) = template_of(v.as_bytes());
                        counts
                            .entry(template)
                            .or_insert_with(|| (0, v.to_string()))
                            .0 += 1;
                    }
                }
            }
        }
    }
    if !found {
        return exec_err!(
            "glyd_templates: no table in {} has that column",
            path.display()
        );
    }
    let mut rows: Vec<(Vec<u8>, (i64, String))> = counts.into_iter().collect();
    rows.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then_with(|| a.0.cmp(&b.0)));
    let template: StringArray = rows
        .iter()
        .map(|(t, _)| Some(String::from_utf8_lossy(t)))
        .collect();
    let lines: Int64Array = rows.iter().map(|(_, (n, _))| Some(*n)).collect();
    let example: StringArray = rows.iter().map(|(_, (_, e))| Some(e.as_str())).collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("template", DataType::Utf8, false),
        Field::new("lines", DataType::Int64, false),
        Field::new("example", DataType::Utf8, false),
    ]));
    Ok(RecordBatch::try_new(
        schema,
        vec![Arc::new(template), Arc::new(lines), Arc::new(example)],
    )?)
}
