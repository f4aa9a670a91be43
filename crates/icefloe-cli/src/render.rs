//! Printing a listing: a table sized to the terminal for people, CSV or one JSON document
//! for scripts.

use std::io::Write;

use anyhow::Result;
use comfy_table::{ColumnConstraint, ContentArrangement, LineStyle, TableStyle, Width};
use icefloe_core::listing::Listing;
use serde_json::Value;

use crate::args::ListFormat;

/// Columns apart by spaces, a rule under the header.
const STYLE: TableStyle =
    TableStyle::new().header_separator(LineStyle::none().fill('─').junction('─'));

/// How a listing shows in a terminal: its columns (index in the listing) in the order they
/// are kept when the width runs short, each under a short label.
pub type TextColumns<'a> = &'a [(usize, &'a str)];

/// Prints `listing` as `format` asks; `json` is the same content as one JSON document.
pub fn print(
    format: ListFormat,
    listing: &Listing,
    text: TextColumns,
    json: impl FnOnce() -> Value,
) -> Result<()> {
    let out = match format {
        ListFormat::Text => to_terminal(listing, text, terminal_width()),
        ListFormat::Csv => listing.to_csv(),
        ListFormat::Json => {
            let mut s = serde_json::to_string_pretty(&json())?;
            s.push('\n');
            s
        }
    };
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(())
}

/// The width to fit: the terminal's, else `$COLUMNS`; none when neither is known (a pipe
/// gets every cell whole).
pub fn terminal_width() -> Option<u16> {
    console::Term::stdout()
        .size_checked()
        .map(|(_, cols)| cols)
        .or_else(|| std::env::var("COLUMNS").ok()?.parse().ok())
}

/// Rows a long terminal listing is laid out by at a time ([`TextChunks`]).
pub const TEXT_CHUNK: usize = 10_000;

/// A terminal listing printed as its rows come, in bounded memory: up to [`TEXT_CHUNK`] rows it
/// is one table as [`to_terminal`] lays it out; a longer one is laid out chunk by chunk of
/// that many rows (columns sized per chunk), the header printed once above the first.
pub struct TextChunks<'a> {
    header: Vec<String>,
    columns: TextColumns<'a>,
    rows: Vec<Vec<String>>,
    printed: bool,
}

impl<'a> TextChunks<'a> {
    /// A listing with `header`, shown as `columns`.
    pub fn new(header: Vec<String>, columns: TextColumns<'a>) -> Self {
        TextChunks {
            header,
            columns,
            rows: Vec::new(),
            printed: false,
        }
    }

    /// Adds a row, printing a full chunk.
    pub fn push(&mut self, row: Vec<String>) -> Result<()> {
        self.rows.push(row);
        if self.rows.len() >= TEXT_CHUNK {
            self.flush_chunk()?;
        }
        Ok(())
    }

    /// Prints what is left (the whole table when it never reached a chunk).
    pub fn finish(mut self) -> Result<()> {
        if !self.printed || !self.rows.is_empty() {
            self.flush_chunk()?;
        }
        Ok(())
    }

    fn flush_chunk(&mut self) -> Result<()> {
        let listing = Listing {
            header: self.header.clone(),
            rows: std::mem::take(&mut self.rows),
        };
        let text = to_terminal(&listing, self.columns, terminal_width());
        let mut out = std::io::stdout().lock();
        if self.printed {
            // The header and the rule under it were printed above the first chunk.
            for line in text.lines().skip(2) {
                writeln!(out, "{line}")?;
            }
        } else {
            out.write_all(text.as_bytes())?;
        }
        out.flush()?;
        self.printed = true;
        Ok(())
    }
}

/// Shortest a cut text column gets.
const MIN_TEXT_WIDTH: usize = 12;
/// Longest value of a column whose values are all of one length that is never cut.
const FIXED_MAX: usize = 30;
/// Padding around each cell (comfy-table's default: one space each side).
const PADDING: usize = 2;

/// The listing as a table of at most `width` characters a line, one line a row. Numbers are
/// never cut; text cells that do not fit end in `…`; columns that cannot fit at all are left
/// out, and a last line names them.
pub fn to_terminal(listing: &Listing, columns: TextColumns, width: Option<u16>) -> String {
    let cells = |i: usize| listing.rows.iter().map(move |r| r[i].as_str());
    // Numbers, and short values all of one length (timestamps), are never cut.
    let numeric = |i: usize| {
        let mut lens = cells(i)
            .filter(|c| !c.is_empty())
            .map(|c| c.chars().count());
        let first = lens.next();
        cells(i).all(|c| c.is_empty() || c.parse::<f64>().is_ok())
            || first.is_some_and(|n| n <= FIXED_MAX && lens.all(|m| m == n))
    };
    let wide = |i: usize, label: &str| {
        cells(i)
            .map(|c| c.chars().count())
            .chain([label.chars().count()])
            .max()
            .unwrap_or(0)
    };
    // As many columns as fit at their narrowest, in the given order.
    let mut kept = Vec::new();
    let mut used = 0;
    for &(i, label) in columns {
        let w = wide(i, label);
        let least = if numeric(i) { w } else { w.min(MIN_TEXT_WIDTH) } + PADDING;
        if let Some(limit) = width {
            if !kept.is_empty() && used + least > usize::from(limit) {
                continue;
            }
        }
        used += least;
        kept.push((i, label, numeric(i), w));
    }
    let mut t = comfy_table::Table::new();
    t.load_style(STYLE);
    t.set_truncation_indicator("…");
    match width {
        Some(w) => {
            t.set_content_arrangement(ContentArrangement::Dynamic);
            t.set_width(w);
        }
        None => {
            t.set_content_arrangement(ContentArrangement::Disabled);
        }
    }
    let mut header = comfy_table::Row::from(kept.iter().map(|k| k.1).collect::<Vec<_>>());
    header.max_height(1);
    t.set_header(header);
    for row in &listing.rows {
        let mut r =
            comfy_table::Row::from(kept.iter().map(|k| row[k.0].as_str()).collect::<Vec<_>>());
        r.max_height(1);
        t.add_row(r);
    }
    for (col, &(_, _, numeric, w)) in t.column_iter_mut().zip(&kept) {
        col.set_constraint(if numeric {
            ColumnConstraint::ContentWidth
        } else {
            ColumnConstraint::LowerBoundary(Width::Fixed(w.min(MIN_TEXT_WIDTH) as u16))
        });
    }
    // The rule under the header runs as wide as the widest row (comfy-table draws it one
    // junction longer).
    let lines: Vec<String> = t.lines().map(|l| l.trim_end().to_string()).collect();
    let is_rule = |l: &str| l.chars().all(|c| c == '─');
    let widest = lines
        .iter()
        .filter(|l| !is_rule(l))
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for l in &lines {
        if is_rule(l) {
            out.push_str(&"─".repeat(widest));
        } else {
            out.push_str(l);
        }
        out.push('\n');
    }
    if listing.rows.is_empty() {
        out.push_str("(none)\n");
    }
    let left_out: Vec<&str> = columns
        .iter()
        .filter(|c| !kept.iter().any(|k| k.0 == c.0))
        .map(|c| c.1)
        .collect();
    if !left_out.is_empty() {
        let note = format!(
            "(not shown for want of width: {}; --format csv has every column)",
            left_out.join(", ")
        );
        out.push_str(&wrap(&note, width.map_or(usize::MAX, usize::from)));
    }
    out
}

/// `text` in lines of at most `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_the_width_with_an_ellipsis() {
        let l = Listing {
            header: vec!["id".into(), "path".into()],
            rows: vec![vec!["1".into(), "data/".repeat(30)]],
        };
        let cols = [(0, "id"), (1, "path")];
        let text = to_terminal(&l, &cols, Some(40));
        assert!(text.lines().all(|l| l.chars().count() <= 40), "{text}");
        assert!(text.contains('…'), "{text}");
        assert_eq!(text.lines().count(), 3, "{text}");
        let whole = to_terminal(&l, &cols, None);
        assert!(whole.contains(&"data/".repeat(30)), "{whole}");
        // Too narrow for the path at all: it is left out, and said so.
        let l = Listing {
            header: vec!["id".into(), "n".into()],
            rows: vec![vec!["1234567890123".into(), "42".into()]],
        };
        let text = to_terminal(&l, &[(0, "id"), (1, "n")], Some(16));
        assert!(
            text.contains("1234567890123") && !text.contains("42"),
            "{text}"
        );
        let note: Vec<&str> = text.lines().skip(3).collect();
        assert_eq!(
            note.join(" "),
            "(not shown for want of width: n; --format csv has every column)"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 16), "{text}");
    }
}
