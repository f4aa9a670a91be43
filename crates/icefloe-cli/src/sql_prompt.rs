//! The interactive prompt of `icefloe sql` (no QUERY, standard input a terminal): lines are
//! gathered until a statement ends with `;`, then run and printed; an error is printed on one
//! line and the prompt goes on. History is kept in `$ICEFLOE_SQL_HISTORY` (default
//! `~/.icefloe_sql_history`). Ctrl-C clears the line being typed; Ctrl-D or `\q` ends.

use std::path::PathBuf;

use anyhow::Result;
use icefloe_datafusion::IcefloeSession;
use rustyline::error::ReadlineError;

use crate::sql::{run_text, SqlFormat};

/// Lines kept in the history file.
const HISTORY_LINES: usize = 1000;

/// Where the history is kept, if anywhere.
fn history_file() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ICEFLOE_SQL_HISTORY") {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".icefloe_sql_history"))
}

/// Runs the prompt until Ctrl-D or `\q`.
pub async fn prompt(session: &IcefloeSession, format: SqlFormat) -> Result<()> {
    let config = rustyline::Config::builder()
        .max_history_size(HISTORY_LINES)?
        .auto_add_history(false)
        .build();
    let mut editor = rustyline::DefaultEditor::with_config(config)?;
    let history = history_file();
    if let Some(h) = &history {
        // A missing history file is a first run.
        let _ = editor.load_history(h);
    }
    eprintln!("icefloe sql: end statements with ;  (\\q or Ctrl-D to quit)");
    let mut pending = String::new();
    loop {
        let text = if pending.is_empty() { "sql> " } else { "  -> " };
        let line = match tokio::task::block_in_place(|| editor.readline(text)) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                pending.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        };
        let trimmed = line.trim();
        if pending.is_empty() && matches!(trimmed, "\\q" | "quit" | "exit") {
            break;
        }
        if trimmed.is_empty() && pending.is_empty() {
            continue;
        }
        if !pending.is_empty() {
            pending.push('\n');
        }
        pending.push_str(&line);
        if !trimmed.ends_with(';') {
            continue;
        }
        let query = std::mem::take(&mut pending);
        let _ = editor.add_history_entry(query.as_str());
        if let Err(e) = run_text(session, &query, format, None).await {
            eprintln!("icefloe: {}", crate::report::message(&e));
        }
        crate::report::print_warnings();
    }
    if let Some(h) = &history {
        if let Err(e) = editor.save_history(h) {
            eprintln!(
                "icefloe: warning: cannot save the history to {}: {e}",
                h.display()
            );
        }
    }
    Ok(())
}
