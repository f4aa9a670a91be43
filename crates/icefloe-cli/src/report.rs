//! How an error is printed: one line, every cause once; and the warnings of the tables a
//! command read.

use std::sync::Mutex;

use icefloe_core::Table;

/// The tables this command opened, whose warnings are printed when it ends.
static OPENED: Mutex<Vec<Table>> = Mutex::new(Vec::new());

/// Remembers `table` to print its warnings when the command ends ([`print_warnings`]).
pub fn opened(table: &Table) {
    OPENED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(table.clone());
}

/// Prints on stderr, one line each, the rules of the spec that the tables read broke without
/// changing the answer (each rule once per table, naming the first file that broke it).
pub fn print_warnings() {
    let tables = std::mem::take(&mut *OPENED.lock().unwrap_or_else(|e| e.into_inner()));
    for t in tables {
        for found in t.warnings().take() {
            eprintln!("icefloe: warning: {found} (--strict refuses it)");
        }
    }
}

/// The error and its causes joined by `: `, leaving out a cause whose text is already part of
/// the line (the core's errors print their source, and storage errors nest the same message).
pub fn message(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        let text = text.trim();
        if text.is_empty() || line.contains(text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(text);
    }
    // One line, whatever the causes held.
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    drop_restatements(&line)
}

/// Leaves out the `: `-separated parts after the first that only restate what came before:
/// a part naming a file already named (storage errors repeat the path at every level, as a
/// URL and as a local path), or a single word (`External`, `Generic`) that labels the next.
fn drop_restatements(line: &str) -> String {
    let file_names = |part: &str| -> Vec<String> {
        part.split_whitespace()
            .filter(|w| w.contains('/'))
            .filter_map(|w| {
                let w = w.trim_matches(|c: char| "\"'()[],;".contains(c));
                w.rsplit('/').find(|s| !s.is_empty()).map(str::to_string)
            })
            .collect()
    };
    let mut named: Vec<String> = Vec::new();
    let mut kept: Vec<&str> = Vec::new();
    let parts: Vec<&str> = line.split(": ").collect();
    for (i, &part) in parts.iter().enumerate() {
        let names = file_names(part);
        let label = !part.contains(' ') && i + 1 < parts.len();
        let restates = !kept.is_empty() && (label || names.iter().any(|n| named.contains(n)));
        if !restates {
            kept.push(part);
        }
        named.extend(names);
    }
    kept.join(": ")
}

/// A reader that closed the pipe early (`icefloe cat … | head`) is not an error.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.to_string().contains("Broken pipe")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read x.avro: {0}")]
    struct Outer(#[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("Generic error: permission denied")]
    struct Inner(#[source] std::io::Error);

    #[test]
    fn each_cause_once() {
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "permission denied");
        let e = anyhow::Error::new(Outer(Inner(io))).context("cannot open table t");
        assert_eq!(
            message(&e),
            "cannot open table t: cannot read x.avro: Generic error: permission denied"
        );
        let e = anyhow::anyhow!("line one\n  line two");
        assert_eq!(message(&e), "line one line two");
        let e = anyhow::anyhow!(
            "missing file file:///t/data/a.parquet: Object at location file:///t/data/a.parquet \
             not found: External: Object at location /t/data/a.parquet not found: No such file \
             or directory (os error 2)"
        );
        assert_eq!(
            message(&e),
            "missing file file:///t/data/a.parquet: No such file or directory (os error 2)"
        );
        // Different files are all named.
        let e = anyhow::anyhow!(
            "cannot open table /t: invalid table metadata /t/metadata/v1.metadata.json: bad"
        );
        assert_eq!(
            message(&e),
            "cannot open table /t: invalid table metadata /t/metadata/v1.metadata.json: bad"
        );
    }
}
