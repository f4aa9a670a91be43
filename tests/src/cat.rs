//! `icefloe cat` of one fixture snapshot at another base location (an object store, a proxy in
//! front of one), as JSON rows with lineage, for the storage tests.

use std::process::Command;

use serde_json::Value;

use crate::{fixtures_dir, FixtureSnapshot};

/// `--storage-option k=v` arguments.
pub fn option_args(opts: &[(String, String)]) -> Vec<String> {
    opts.iter()
        .flat_map(|(k, v)| ["--storage-option".to_string(), format!("{k}={v}")])
        .collect()
}

/// Reads snapshot `s` from `<base>/<table dir relative to tests/fixtures>` with the `icefloe`
/// binary at `icefloe`; the rows, or the command's standard error.
pub fn cat_at(
    icefloe: &str,
    base: &str,
    s: &FixtureSnapshot,
    opts: &[(String, String)],
) -> Result<Vec<Value>, String> {
    let rel = s
        .table_dir
        .strip_prefix(fixtures_dir())
        .expect("fixture dir");
    let location = format!("{base}/{}", rel.to_str().expect("UTF-8"));
    let out = Command::new(icefloe)
        .args(["cat", &location, "--format", "jsonl", "--lineage"])
        .args(["--snapshot", &s.snapshot_id.to_string()])
        .args(option_args(opts))
        .env_remove("AWS_ENDPOINT")
        .output()
        .expect("run icefloe");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect())
}
