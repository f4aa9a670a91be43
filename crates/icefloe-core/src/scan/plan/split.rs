//! Splits of file scan tasks into parts of row positions, so that several readers (a
//! database's parallel workers) can share one large data file. A split's rows are the live
//! rows of its positions: deletes, lineage (`_row_id` = first row id + position) and `_pos`
//! stay those of the whole file, and the splits of a task together read each of its rows once.

use std::ops::Range;

use super::task::FileScanTask;

/// A part of a task: the positions `rows` of its data file (`None`: all of them).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSplit {
    /// The task.
    pub task: FileScanTask,
    /// The row positions read; `None` for the whole file.
    pub rows: Option<Range<u64>>,
}

/// Splits every task whose data file has more than `max_rows` records into parts of at most
/// `max_rows` positions (equal sizes, in position order); smaller tasks stay whole. The
/// result depends only on the tasks and `max_rows`, so every process that plans the same
/// tasks gets the same splits.
pub fn split_tasks(tasks: &[FileScanTask], max_rows: u64) -> Vec<TaskSplit> {
    let max_rows = max_rows.max(1);
    let mut out = Vec::new();
    for t in tasks {
        let n = t.data_file.record_count.max(0) as u64;
        if n <= max_rows {
            out.push(TaskSplit {
                task: t.clone(),
                rows: None,
            });
            continue;
        }
        let parts = n.div_ceil(max_rows);
        let size = n.div_ceil(parts);
        let mut start = 0;
        while start < n {
            let end = (start + size).min(n);
            out.push(TaskSplit {
                task: t.clone(),
                rows: Some(start..end),
            });
            start = end;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::DataFile;
    use std::sync::Arc;

    fn task(rows: i64) -> FileScanTask {
        FileScanTask {
            data_file: Arc::new(DataFile::for_test(
                &format!("f{rows}.parquet"),
                0,
                vec![],
                rows,
            )),
            sequence_number: 1,
            first_row_id: None,
            deletion_vector: None,
            position_deletes: vec![],
            equality_deletes: vec![],
        }
    }

    #[test]
    fn large_files_split_into_covering_parts() {
        let s = split_tasks(&[task(10), task(25), task(0)], 10);
        let ranges: Vec<_> = s.iter().map(|x| x.rows.clone()).collect();
        assert_eq!(
            ranges,
            vec![None, Some(0..9), Some(9..18), Some(18..25), None]
        );
        assert_eq!(split_tasks(&[task(25)], 0).len(), 25);
    }
}
