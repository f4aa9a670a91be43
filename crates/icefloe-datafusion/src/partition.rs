//! Grouping a scan's file scan tasks into DataFusion partitions, so that the scan runs on
//! every core. A group is plain data (data files with their delete files, sequence numbers and
//! first row ids): the unit of work a distributed executor is handed, never a credential.

use icefloe_core::FileScanTask;

/// `tasks` in at most `n` groups of about equal work (bytes of the data file, and of its
/// delete files, which are read with it), largest task first into the lightest group. At least
/// one group, possibly empty (a table without files still has one partition).
pub fn group_tasks(tasks: Vec<FileScanTask>, n: usize) -> Vec<Vec<FileScanTask>> {
    let n = n.clamp(1, tasks.len().max(1));
    let mut weighted: Vec<(u64, FileScanTask)> =
        tasks.into_iter().map(|t| (weight(&t), t)).collect();
    // Heaviest first; ties keep planning order (a stable sort).
    weighted.sort_by_key(|(w, _)| std::cmp::Reverse(*w));
    let mut groups: Vec<(u64, Vec<FileScanTask>)> = (0..n).map(|_| (0, Vec::new())).collect();
    for (w, t) in weighted {
        let lightest = groups
            .iter_mut()
            .min_by_key(|(load, _)| *load)
            .expect("n >= 1");
        lightest.0 += w;
        lightest.1.push(t);
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

/// The bytes a task reads at most: its data file and the delete files that apply (a file
/// of unknown size counts 1, so that every task weighs something).
fn weight(t: &FileScanTask) -> u64 {
    let size = |s: i64| u64::try_from(s).unwrap_or(0).max(1);
    let deletes: u64 = t
        .deletion_vector
        .iter()
        .chain(&t.position_deletes)
        .chain(&t.equality_deletes)
        .map(|d| size(d.file.file_size_in_bytes))
        .sum();
    size(t.data_file.file_size_in_bytes) + deletes
}
