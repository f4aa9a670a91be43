//! `--read-ahead`: the kernel's read-ahead window for the mount. Views are served through the
//! page cache, and the kernel reads a sequential reader's next bytes ahead of it in requests
//! of at most this size; its default (128 KiB) means eight requests per MiB, each a round
//! trip through the mount. The window is the mount's backing device's `read_ahead_kb` in
//! sysfs, writable by root only.

use std::path::Path;

use crate::error::{FuseError, Result};

/// The backing device (`MAJOR:MINOR`) of the most recent FUSE mount on `mountpoint` (an
/// absolute path without symlinks), from a `/proc/self/mountinfo` text. The mount point field
/// escapes space, tab, newline and backslash in octal.
pub fn fuse_device(mountinfo: &str, mountpoint: &Path) -> Option<String> {
    let want = mountpoint.to_str()?;
    // Mounts are listed in the order made: the last match is on top.
    mountinfo.lines().rev().find_map(|line| {
        let mut fields = line.split(' ');
        let device = fields.nth(2)?;
        let point = unescape(fields.nth(1)?);
        let (_, tail) = line.split_once(" - ")?;
        let fstype = tail.split(' ').next()?;
        (point == want && (fstype == "fuse" || fstype.starts_with("fuse.")))
            .then(|| device.to_string())
    })
}

/// Undoes mountinfo's octal escapes (`\040` is a space).
fn unescape(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Sets the read-ahead window of the FUSE mount on `mountpoint` (absolute, without symlinks:
/// resolve it before mounting, as resolving a mount point asks the mount itself) to `bytes`,
/// rounded up to KiB. Returns the sysfs file written.
///
/// Errors: the mount is not in `/proc/self/mountinfo`, or its `read_ahead_kb` cannot be
/// written (not root).
pub fn set(mountpoint: &Path, bytes: u64) -> Result<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| FuseError::io("cannot read /proc/self/mountinfo", e))?;
    let device = fuse_device(&info, mountpoint).ok_or_else(|| {
        FuseError::io(
            format!(
                "no FUSE mount on {} in /proc/self/mountinfo",
                mountpoint.display()
            ),
            std::io::Error::from(std::io::ErrorKind::NotFound),
        )
    })?;
    let file = format!("/sys/class/bdi/{device}/read_ahead_kb");
    std::fs::write(&file, format!("{}\n", bytes.div_ceil(1024)))
        .map_err(|e| FuseError::io(format!("cannot set the read-ahead window in {file}"), e))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "\
22 1 0:21 / /proc rw,nosuid - proc proc rw
96 29 0:53 / /tmp/a\\040b rw,nosuid,nodev,relatime - fuse.icefloe icefloe:/w/t ro,user_id=0
97 29 0:54 / /tmp/m rw,relatime shared:5 - fuse icefloe:/w/u ro
98 97 0:55 / /tmp/m rw,relatime - fuse.icefloe icefloe:/w/v ro
99 29 8:1 / /tmp/disk rw - ext4 /dev/vda rw
";

    #[test]
    fn the_device_is_the_last_fuse_mount_on_the_point() {
        assert_eq!(
            fuse_device(INFO, Path::new("/tmp/a b")).as_deref(),
            Some("0:53")
        );
        // Stacked: the mount made last is the one seen.
        assert_eq!(
            fuse_device(INFO, Path::new("/tmp/m")).as_deref(),
            Some("0:55")
        );
        // Not FUSE, or not a mount point.
        assert_eq!(fuse_device(INFO, Path::new("/tmp/disk")), None);
        assert_eq!(fuse_device(INFO, Path::new("/tmp/a\\040b")), None);
        assert_eq!(fuse_device(INFO, Path::new("/tmp")), None);
    }

    #[test]
    fn escapes_are_undone_and_stray_backslashes_kept() {
        assert_eq!(unescape("/a\\040b\\011c\\134d"), "/a b\tc\\d");
        assert_eq!(unescape("/a\\04"), "/a\\04");
        assert_eq!(unescape("/a\\x40"), "/a\\x40");
    }
}
