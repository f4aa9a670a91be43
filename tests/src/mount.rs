//! A running `icefloe mount` for the FUSE end-to-end tests.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use icefloe_fuse::mounts::is_mounted;

/// A running `icefloe mount`, unmounted with `fusermount3 -u` when dropped (also when the
/// test fails).
pub struct Mount {
    dir: tempfile::TempDir,
    pub child: Child,
    log: PathBuf,
    _log_dir: tempfile::TempDir,
}

impl Mount {
    /// Mounts `source` on a fresh directory and waits until the mount is there.
    pub fn new(source: &Path, extra: &[&str]) -> Mount {
        Mount::spawn(Some(source), extra, &[])
    }

    /// Mounts `source` (none: `extra` names a catalog) with the environment variables `env`
    /// added.
    pub fn spawn(source: Option<&Path>, extra: &[&str], env: &[(&str, &str)]) -> Mount {
        check_fuse_available();
        let dir = tempfile::tempdir().expect("mount point");
        let log_dir = tempfile::tempdir().expect("log dir");
        let log = log_dir.path().join("mount.log");
        let child = Command::new(crate::run::bin())
            .arg("mount")
            .args(source)
            .arg(dir.path())
            .args(["--refresh", "1"])
            .args(extra)
            .env("ICEFLOE_LOG", "icefloe_fuse=info")
            // The on-disk index of each mount its own, unless a test passes --cache-dir.
            .env("XDG_CACHE_HOME", log_dir.path().join("cache"))
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&log).expect("log file"))
            .spawn()
            .expect("start icefloe mount");
        let mut m = Mount {
            dir,
            child,
            log,
            _log_dir: log_dir,
        };
        let start = Instant::now();
        while !is_mounted(m.path()) {
            if let Ok(Some(status)) = m.child.try_wait() {
                panic!("icefloe mount exited with {status}:\n{}", m.log_text());
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "not mounted after 60 s:\n{}",
                m.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        m
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if is_mounted(self.path()) {
            let ok = Command::new("fusermount3")
                .arg("-u")
                .arg(self.path())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                let _ = Command::new("fusermount3")
                    .arg("-uz")
                    .arg(self.path())
                    .status();
            }
        }
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Fails loudly when FUSE cannot be used here.
pub fn check_fuse_available() {
    assert!(
        Path::new("/dev/fuse").exists(),
        "/dev/fuse is missing: FUSE tests cannot run on this machine (load the fuse module, or run the container with --device /dev/fuse)"
    );
    let fusermount = Command::new("fusermount3").arg("-V").output();
    assert!(
        fusermount.is_ok_and(|o| o.status.success()),
        "fusermount3 not found: install the fuse3 package"
    );
}
