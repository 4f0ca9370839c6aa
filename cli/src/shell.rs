//! `glyd sql` with no query: on a terminal, an interactive shell over the archives (line
//! editing and a history file through rustyline; statements end with `;`; `\d` lists tables,
//! `\d NAME` a table's columns); in a pipe, the statements read from standard input, each
//! result printed in turn.

use std::io::{self, IsTerminal, Read, Write};
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use datafusion::prelude::SessionContext;
use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;

use crate::args::SqlFormat;
use crate::output::{is_stdout_closed, print};
use crate::sql::{Session, Settings};

const HELP: &str = "\
Statements end with ';' and may span lines. Tables are named after their files.
  \\d          list tables
  \\d NAME     columns of table NAME
  \\?          this help
  \\q          quit (or Ctrl-D)
Log functions: log_template(text), log_var(text, n), log_time(text [, year]),
glyd_templates('file.glyd' [, 'column']).";

/// Runs the shell, or the statements of standard input when it is not a terminal.
pub fn run(session: &Session, settings: Settings) -> Result<()> {
    if settings.format == Some(SqlFormat::Parquet) {
        bail!("--format parquet writes one result: give the query as an argument");
    }
    if io::stdin().is_terminal() {
        return interactive(session, settings);
    }
    let mut text = String::new();
    io::stdin()
        .read_to_string(&mut text)
        .context("reading statements from standard input")?;
    for statement in statements(&text) {
        // In a pipe the first failure stops the run, as a script would.
        session
            .query(&statement, settings)
            .with_context(|| format!("in statement: {}", one_line(&statement)))?;
    }
    Ok(())
}

fn interactive(session: &Session, settings: Settings) -> Result<()> {
    let mut editor = DefaultEditor::new().context("starting the line editor")?;
    let history = history_path();
    if let Some(h) = &history {
        // A first run has no history yet.
        let _ = editor.load_history(h);
    }
    note!(
        "glyd sql: {} table(s). \\? for help, \\q to quit.",
        table_names(&session.ctx).len()
    );
    let mut buffer = String::new();
    loop {
        let prompt = if buffer.is_empty() {
            "glyd> "
        } else {
            "  ... "
        };
        let line = match editor.readline(prompt) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                buffer.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e).context("reading a line"),
        };
        let trimmed = line.trim();
        if buffer.is_empty() && trimmed.starts_with('\\') {
            let _ = editor.add_history_entry(trimmed);
            match command(session, trimmed) {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => note!("error: {e:#}"),
            }
            continue;
        }
        if trimmed.is_empty() && buffer.is_empty() {
            continue;
        }
        buffer.push_str(&line);
        buffer.push('\n');
        if !complete(&buffer) {
            continue;
        }
        let _ = editor.add_history_entry(buffer.trim_end());
        for statement in statements(&buffer) {
            match session.query(&statement, settings) {
                Ok(()) => {}
                Err(e) if is_stdout_closed(&e) => return Err(e),
                Err(e) => note!("error: {e:#}"),
            }
        }
        buffer.clear();
    }
    if let Some(h) = &history {
        if let Err(e) = editor.save_history(h) {
            note!("glyd sql: could not save history to {}: {e}", h.display());
        }
    }
    Ok(())
}

/// Runs a backslash command; `Ok(true)` to quit.
fn command(session: &Session, line: &str) -> Result<bool> {
    let (rt, ctx) = (&session.rt, &session.ctx);
    let mut words = line.split_whitespace();
    match (words.next().unwrap_or_default(), words.next()) {
        ("\\q", _) => return Ok(true),
        ("\\?" | "\\h", _) => print(format!("{HELP}\n"))?,
        ("\\d", None) => {
            let mut out = String::new();
            for name in table_names(ctx) {
                let columns = rt
                    .block_on(ctx.table_provider(name.as_str()))
                    .map(|t| t.schema().fields().len())
                    .unwrap_or(0);
                out.push_str(&format!("{name}  ({columns} columns)\n"));
            }
            if out.is_empty() {
                out.push_str("no tables: start glyd sql with record archives (FILE...)\n");
            }
            print(out.as_bytes())?;
        }
        ("\\d", Some(name)) => {
            let table = rt
                .block_on(ctx.table_provider(name))
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let mut out = String::new();
            for f in table.schema().fields() {
                let null = if f.is_nullable() { "" } else { " not null" };
                out.push_str(&format!("{:<24} {}{null}\n", f.name(), f.data_type()));
            }
            print(out.as_bytes())?;
        }
        (other, _) => bail!("unknown command {other}: \\? lists the commands"),
    }
    io::stdout().flush()?;
    Ok(false)
}

fn table_names(ctx: &SessionContext) -> Vec<String> {
    let mut names: Vec<String> = ctx
        .catalog("datafusion")
        .and_then(|c| c.schema("public"))
        .map(|s| s.table_names())
        .unwrap_or_default();
    names.sort();
    names
}

/// `$XDG_STATE_HOME/glyd/sql_history`, else `~/.local/state/glyd/sql_history`; `None` when
/// neither can be made.
fn history_path() -> Option<PathBuf> {
    let dir = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))?
        .join("glyd");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir.join("sql_history"))
}

/// Where `text` is outside quotes and comments at its end, and whether it ends a statement.
fn complete(text: &str) -> bool {
    let mut last = None;
    scan(text, |i, c| {
        if !c.is_whitespace() {
            last = Some((i, c));
        }
    });
    last.is_some_and(|(_, c)| c == ';')
}

/// Calls `visit` on each character of `text` outside quotes and `--` comments.
fn scan(text: &str, mut visit: impl FnMut(usize, char)) {
    let mut quote: Option<char> = None;
    let mut comment = false;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match (quote, comment, c) {
            (_, true, '\n') => comment = false,
            (_, true, _) => {}
            (Some(q), _, c) if c == q => quote = None,
            (Some(_), _, _) => {}
            (None, _, '\'' | '"') => quote = Some(c),
            (None, _, '-') if chars.peek().is_some_and(|&(_, n)| n == '-') => comment = true,
            (None, _, c) => visit(i, c),
        }
    }
}

/// The statements of `text`, split at `;` outside quotes and comments; blank ones dropped.
fn statements(text: &str) -> Vec<String> {
    let mut cuts = Vec::new();
    scan(text, |i, c| {
        if c == ';' {
            cuts.push(i);
        }
    });
    let mut start = 0;
    let mut out = Vec::new();
    for end in cuts.into_iter().chain(std::iter::once(text.len())) {
        let s = text[start..end].trim();
        if !s.is_empty()
            && !s
                .lines()
                .all(|l| l.trim().is_empty() || l.trim().starts_with("--"))
        {
            out.push(s.to_string());
        }
        start = (end + 1).min(text.len());
    }
    out
}

fn one_line(statement: &str) -> String {
    let s = statement.split_whitespace().collect::<Vec<_>>().join(" ");
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_split_outside_quotes_and_comments() {
        let text = "SELECT ';' AS a; -- a comment; still\nSELECT \"x;y\" FROM t\n;\n\n;SELECT 1";
        assert_eq!(
            statements(text),
            [
                "SELECT ';' AS a",
                "-- a comment; still\nSELECT \"x;y\" FROM t",
                "SELECT 1"
            ]
        );
        assert!(statements("  ;\n-- only a comment\n").is_empty());
    }

    #[test]
    fn a_statement_is_complete_at_a_semicolon_outside_quotes() {
        assert!(complete("SELECT 1;"));
        assert!(complete("SELECT 1;  -- done\n"));
        assert!(!complete("SELECT ';'"));
        assert!(!complete("SELECT 1"));
        assert!(!complete("SELECT 'a;"));
    }
}
