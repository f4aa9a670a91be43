//! Running the `icefloe` binary from the CLI's end-to-end tests.

// Each test file uses some of these.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

use icefloe_testkit::fixtures_dir;

/// Runs `icefloe args…`.
pub fn icefloe(args: &[&str]) -> Output {
    icefloe_with(args, &[])
}

/// Runs `icefloe args…` with extra environment variables.
pub fn icefloe_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_icefloe"))
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
