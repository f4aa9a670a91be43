//! Table files must be regular files: opening a FIFO blocks until some writer appears, and a
//! device or socket returns bytes that are no file of the table. Local paths are checked
//! before they are opened; object stores only hold regular objects.

use object_store::path::Path;

/// Errors unless the local file at `p` (a path inside the local store) is a regular file or
/// does not exist (which the read then reports as missing). `shown` names it in the error.
pub fn ensure_regular(p: &Path, shown: &str) -> crate::Result<()> {
    regular_size(p, shown).map(|_| ())
}

/// Like [`ensure_regular`], also giving the local file's size in bytes; `None` for object
/// stores and missing files.
pub fn regular_size(p: &Path, shown: &str) -> crate::Result<Option<u64>> {
    if !shown.starts_with("file:") {
        return Ok(None);
    }
    let local = std::path::PathBuf::from(format!("/{p}"));
    match std::fs::metadata(&local) {
        Ok(m) if m.is_file() => Ok(Some(m.len())),
        Ok(m) => Err(crate::Error::NotAFile {
            path: shown.to_string(),
            kind: kind(&m.file_type()).to_string(),
        }),
        Err(_) => Ok(None),
    }
}

fn kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else if t.is_block_device() || t.is_char_device() {
        "device"
    } else {
        "special file"
    }
}
