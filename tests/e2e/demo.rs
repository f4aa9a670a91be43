//! `scripts/demo` as a new user runs it (with the binary under test): its output shows the
//! deletion-vector listing, one row's lineage before and after the update, each form of time
//! travel, and the FUSE mount read by an ordinary tool.

use std::path::Path;
use std::process::Command;

#[test]
fn the_demo_shows_what_icefloe_does() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let o = Command::new("bash")
        .arg(root.join("scripts/demo"))
        .env("ICEFLOE_BIN", env!("CARGO_BIN_EXE_icefloe"))
        .output()
        .expect("run scripts/demo");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "demo failed: {err}\n{out}");
    let after = |marker: &str| -> &str {
        let i = out
            .find(marker)
            .unwrap_or_else(|| panic!("no {marker:?} in:\n{out}"));
        &out[i..]
    };
    // 2. The files with their deletion vectors and deleted-row counts: the table's current
    // snapshot has data files with a DV each (a Puffin blob at offset+length).
    let files = after("$ icefloe files");
    let dv_lines: Vec<&str> = files
        .lines()
        .take_while(|l| !l.starts_with("=="))
        .filter(|l| l.contains("dv data/") && l.contains(".puffin @"))
        .collect();
    assert!(!dv_lines.is_empty(), "no DV listed:\n{files}");
    for l in &dv_lines {
        // The deleted count column equals the DV's cardinality.
        let rows = l
            .rsplit_once(" rows)")
            .unwrap()
            .0
            .rsplit_once('(')
            .unwrap()
            .1;
        let cells: Vec<&str> = l.split_whitespace().collect();
        assert!(cells.contains(&rows), "{l}");
    }
    // 3. Lineage: the same _row_id, its _last_updated_sequence_number from 1 to 5.
    let lineage = after("== 3. Row lineage");
    let before = lineage.find("{\"_row_id\":100,\"_last_updated_sequence_number\":1,\"id\":100,\"name\":\"name_100\",\"amount\":150.0}");
    let updated = lineage.find("{\"_row_id\":100,\"_last_updated_sequence_number\":5,\"id\":100,\"name\":\"NAME_100\",\"amount\":300.0}");
    assert!(
        matches!((before, updated), (Some(b), Some(u)) if b < u),
        "lineage before/after missing:\n{lineage}"
    );
    // 4. Time travel, each form.
    let travel = after("== 4. Time travel");
    assert!(
        travel.contains("--snapshot 1761960242105632244 --columns id"),
        "{travel}"
    );
    assert!(
        travel.contains("\n1000\n"),
        "the first snapshot has 1000 rows:\n{travel}"
    );
    // The third snapshot, current at the time asked, has 1505 rows.
    assert!(
        travel.contains("--as-of 2026-11-29T14:22:58.998Z"),
        "{travel}"
    );
    assert!(travel.contains("\n1505\n"), "{travel}");
    assert!(travel.contains("--ref audit"), "{travel}");
    assert!(travel.contains("9000,branch-only,z"), "{travel}");
    // 5. The mount, read by a tool that knows nothing of Iceberg.
    let mount = after("== 5.");
    if Path::new("/dev/fuse").exists() {
        assert!(
            mount.contains("data.parquet") && mount.contains("data.csv"),
            "{mount}"
        );
        assert!(
            mount.contains("wc -l") || mount.contains("DuckDB") || mount.contains("pyarrow"),
            "{mount}"
        );
    } else {
        assert!(mount.contains("skipped"), "{mount}");
    }
}
