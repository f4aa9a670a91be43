//! Mount-table helpers: is a directory mounted, unmount it, wait for a stop signal.

use std::path::Path;
use std::process::Command;

use crate::error::{FuseError, Result};

/// Whether `dir` is the mount point of a FUSE file system (from `/proc/self/mountinfo`).
pub fn is_mounted(dir: &Path) -> bool {
    let Ok(dir) = dir.canonicalize() else {
        return false;
    };
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    info.lines().any(|line| {
        let fields: Vec<&str> = line.split(' ').collect();
        let fstype = fields
            .iter()
            .skip_while(|f| **f != "-")
            .nth(1)
            .copied()
            .unwrap_or("");
        fields
            .get(4)
            .is_some_and(|p| Path::new(&unescape(p)) == dir)
            && fstype.starts_with("fuse")
    })
}

/// Undoes the octal escapes (`\040` for a space) of mountinfo paths.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Unmounts `dir` with `fusermount3 -u` (`-z`: lazily, even while files are open).
pub fn unmount(dir: &Path, lazy: bool) -> Result<()> {
    let mut cmd = Command::new("fusermount3");
    cmd.arg(if lazy { "-uz" } else { "-u" }).arg(dir);
    let out = cmd
        .output()
        .map_err(|e| FuseError::io("cannot run fusermount3 (install the fuse3 package)", e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(FuseError::io(
            format!("fusermount3 -u {}", dir.display()),
            std::io::Error::other(String::from_utf8_lossy(&out.stderr).trim().to_string()),
        ))
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub async fn wait_for_stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(e) => {
            tracing::warn!("cannot watch SIGTERM: {e}");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes() {
        assert_eq!(unescape(r"/tmp/a\040b"), "/tmp/a b");
        assert_eq!(unescape(r"/x\\y"), r"/x\\y");
        assert!(!is_mounted(Path::new("/definitely/not/here")));
    }
}
