//! Running the `icefloe` binary from the CLI's end-to-end tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::fixtures_dir;

/// The `icefloe` binary of this build: `CARGO_BIN_EXE_icefloe` when cargo sets it at run time,
/// else `icefloe` beside the test binary's `deps/` directory (where cargo puts both).
pub fn bin() -> PathBuf {
    if let Some(p) = std::env::var_os("CARGO_BIN_EXE_icefloe") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary is in <target>/<profile>/deps");
    let bin = dir.join(format!("icefloe{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} is missing: build it with `cargo build -p icefloe-cli` (cargo does for the CLI's tests)",
        bin.display()
    );
    bin
}

/// Runs `icefloe args…`.
pub fn icefloe(args: &[&str]) -> Output {
    icefloe_with(args, &[])
}

/// Runs `icefloe args…` with extra environment variables.
pub fn icefloe_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(bin())
        .args(args)
        .env_remove("COLUMNS")
        .envs(env.iter().copied())
        .output()
        .expect("run icefloe")
}

/// Standard output of a run that must succeed.
pub fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "icefloe failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("UTF-8 output")
}

/// Standard output of a run that must succeed, parsed as one JSON document.
pub fn json(args: &[&str]) -> serde_json::Value {
    let out = stdout(&icefloe(args));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: not one JSON document: {e}"))
}

/// The directory of fixture table `name`.
pub fn table(name: &str) -> String {
    path_str(&fixtures_dir().join("warehouse/db").join(name))
}

/// A path as a string argument.
pub fn path_str(p: &Path) -> String {
    p.to_str().expect("UTF-8 path").to_string()
}
