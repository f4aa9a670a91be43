//! Hive-style partition directories of a snapshot: `<field>=<value>/…`, one level per field of
//! a data file's own partition spec, in spec order. A directory holds the data files whose
//! whole partition tuple is its path; files of different specs whose tuples print alike share
//! a directory. Grouping reads only the plan (manifests), never a data file.
//!
//! Values are the transform's human string (Iceberg's `Transform.toHumanString`: dates
//! `YYYY-MM-DD`, `month` as `YYYY-MM`, `hour` as `YYYY-MM-DD-HH`, timestamps ISO-8601 with
//! `+00:00` for zoned ones, binary as lowercase hex), escaped as Hive escapes path names; a
//! null value is `__HIVE_DEFAULT_PARTITION__`.

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Duration, NaiveDate};
use percent_encoding::{AsciiSet, CONTROLS};

use super::planner::partition_types;
use super::task::FileScanTask;
use crate::encode::percent::escape_ascii;
use crate::spec::{Literal, PrimitiveType, Transform};
use crate::table::Table;

/// The directory name Hive gives a null partition value.
pub const NULL_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

/// One partition directory: its path segments (`field=value`, escaped) and the indexes of
/// the tasks whose data files it holds, in plan order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionDir {
    pub segments: Vec<String>,
    pub tasks: Vec<usize>,
}

/// The partition directories of planned `tasks`, sorted by path. Files of unpartitioned specs
/// get the directory with no segments.
pub fn partition_dirs(table: &Table, tasks: &[FileScanTask]) -> Vec<PartitionDir> {
    let m = table.metadata();
    let mut types_by_spec = BTreeMap::new();
    let mut dirs: BTreeMap<Vec<String>, Vec<usize>> = BTreeMap::new();
    for (i, t) in tasks.iter().enumerate() {
        let f = &t.data_file;
        let Some(spec) = m.partition_spec(f.spec_id) else {
            dirs.entry(Vec::new()).or_default().push(i);
            continue;
        };
        let types = types_by_spec
            .entry(f.spec_id)
            .or_insert_with(|| partition_types(table, spec));
        let segments = spec
            .fields
            .iter()
            .zip(types.iter())
            .enumerate()
            .map(|(k, (field, ty))| {
                let value = f.partition.get(k).cloned().flatten();
                segment(&field.name, &field.transform, ty, value.as_ref())
            })
            .collect();
        dirs.entry(segments).or_default().push(i);
    }
    dirs.into_iter()
        .map(|(segments, tasks)| PartitionDir { segments, tasks })
        .collect()
}

/// What a directory at `prefix` lists: the distinct next segments of deeper directories, and
/// the directory whose path is exactly `prefix` (its data views), if any. `None` when no
/// directory lies at or below `prefix`.
pub fn list_level<'a>(
    dirs: &'a [PartitionDir],
    prefix: &[String],
) -> Option<(Vec<&'a str>, Option<usize>)> {
    let mut next: Vec<&str> = Vec::new();
    let mut here = None;
    let mut any = false;
    for (i, d) in dirs.iter().enumerate() {
        if !d.segments.starts_with(prefix) {
            continue;
        }
        any = true;
        match d.segments.get(prefix.len()) {
            None => here = Some(i),
            Some(s) => {
                if next.last() != Some(&s.as_str()) {
                    next.push(s);
                }
            }
        }
    }
    // `dirs` is sorted, so equal next segments are adjacent; keep them sorted and unique.
    next.sort_unstable();
    next.dedup();
    any.then_some((next, here))
}

/// `field=value`, both escaped.
pub fn segment(
    name: &str,
    transform: &Transform,
    ty: &PrimitiveType,
    v: Option<&Literal>,
) -> String {
    let value = match v {
        None => NULL_PARTITION.to_string(),
        Some(v) => escape(&human_string(transform, ty, v)),
    };
    format!("{}={value}", escape(name))
}

/// The characters Hive's `FileUtils.escapePathName` escapes: the controls but NUL,
/// `"#%'*/:=?\{[]^` and DEL.
const HIVE_ESCAPED: &AsciiSet = &CONTROLS
    .remove(0)
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'\'')
    .add(b'*')
    .add(b'/')
    .add(b':')
    .add(b'=')
    .add(b'?')
    .add(b'\\')
    .add(b'{')
    .add(b'[')
    .add(b']')
    .add(b'^');

/// Hive's `FileUtils.escapePathName`: the characters that cannot appear in a path segment
/// (controls but NUL, `"#%'*/:=?\{[]^` and DEL) become `%XX`; the others, non-ASCII ones
/// included, stay.
pub fn escape(s: &str) -> String {
    escape_ascii(s, HIVE_ESCAPED)
}

/// The human string of partition value `v` of a field with `transform` and result type `ty`.
pub fn human_string(transform: &Transform, ty: &PrimitiveType, v: &Literal) -> String {
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch");
    match (transform, v) {
        (Transform::Year, Literal::Int(y)) => format!("{:04}", 1970 + *y as i64),
        (Transform::Month, Literal::Int(m)) => {
            let m = *m as i64;
            format!("{:04}-{:02}", 1970 + m.div_euclid(12), m.rem_euclid(12) + 1)
        }
        (Transform::Hour, Literal::Int(h)) => {
            let h = *h as i64;
            let day = epoch + Duration::days(h.div_euclid(24));
            format!("{}-{:02}", day.format("%Y-%m-%d"), h.rem_euclid(24))
        }
        (_, v) => value_string(ty, v),
    }
}

/// A value in its type's usual text.
fn value_string(ty: &PrimitiveType, v: &Literal) -> String {
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch");
    let ts = |n: i64, per_sec: i64, zone: bool| {
        let secs = n.div_euclid(per_sec);
        let frac = n.rem_euclid(per_sec);
        let digits = if per_sec == 1_000_000 { 6 } else { 9 };
        let text = match DateTime::from_timestamp(secs, 0) {
            Some(d) => format!(
                "{}.{frac:0digits$}",
                d.naive_utc().format("%Y-%m-%dT%H:%M:%S")
            ),
            None => n.to_string(),
        };
        if zone {
            format!("{text}+00:00")
        } else {
            text
        }
    };
    match (ty, v) {
        (_, Literal::Boolean(b)) => b.to_string(),
        (_, Literal::Int(x)) => x.to_string(),
        (_, Literal::Long(x)) => x.to_string(),
        (_, Literal::Float(x)) => x.to_string(),
        (_, Literal::Double(x)) => x.to_string(),
        (PrimitiveType::Decimal { scale, .. }, Literal::Decimal(u)) => decimal(*u, *scale),
        (_, Literal::Date(d)) => {
            let day = epoch + Duration::days(*d as i64);
            if day.year() > 9999 || day.year() < 0 {
                d.to_string()
            } else {
                day.format("%Y-%m-%d").to_string()
            }
        }
        (_, Literal::Time(us)) => {
            let (s, frac) = (us.div_euclid(1_000_000), us.rem_euclid(1_000_000));
            format!("{:02}:{:02}:{:02}.{frac:06}", s / 3600, s / 60 % 60, s % 60)
        }
        (PrimitiveType::Timestamptz, Literal::Timestamp(n)) => ts(*n, 1_000_000, true),
        (PrimitiveType::TimestamptzNs, Literal::Timestamp(n)) => ts(*n, 1_000_000_000, true),
        (PrimitiveType::TimestampNs, Literal::Timestamp(n)) => ts(*n, 1_000_000_000, false),
        (_, Literal::Timestamp(n)) => ts(*n, 1_000_000, false),
        (_, Literal::String(s)) => s.clone(),
        (_, Literal::Uuid(u)) => uuid::Uuid::from_bytes(*u).hyphenated().to_string(),
        (_, Literal::Binary(b)) => hex::encode(b),
        (_, other) => format!("{other:?}"),
    }
}

/// A decimal's unscaled value at `scale` as plain text (`-0.05`).
fn decimal(unscaled: i128, scale: u32) -> String {
    let digits = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let s = scale as usize;
    let padded = format!("{digits:0>width$}", width = s + 1);
    let (int, frac) = padded.split_at(padded.len() - s);
    format!("{sign}{int}.{frac}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hive_escaping_and_null() {
        assert_eq!(escape("a/b=c:d%e f"), "a%2Fb%3Dc%3Ad%25e f");
        assert_eq!(escape("é\u{1}"), "é%01");
        // What the hand-written escaper wrote before the percent-encoding crate did it.
        for (name, escaped) in [
            ("", ""),
            (" ", " "),
            ("%25", "%2525"),
            ("..", ".."),
            ("日本/語", "日本%2F語"),
            ("a\u{1f}b", "a%1Fb"),
            ("\0", "\0"),
            ("\u{7f}\u{80}", "%7F\u{80}"),
            ("\"#'*?\\{[]^", "%22%23%27%2A%3F%5C%7B%5B%5D%5E"),
            ("}~!$&()+,;@`|<>", "}~!$&()+,;@`|<>"),
            (
                "/w/a,allow_other\\,dev%/t",
                "%2Fw%2Fa,allow_other%5C,dev%25%2Ft",
            ),
        ] {
            assert_eq!(escape(name), escaped, "{name:?}");
        }
        let s = PrimitiveType::String;
        assert_eq!(
            segment("cat", &Transform::Identity, &s, None),
            "cat=__HIVE_DEFAULT_PARTITION__"
        );
        assert_eq!(
            segment(
                "c=t",
                &Transform::Identity,
                &s,
                Some(&Literal::String("x/y".into()))
            ),
            "c%3Dt=x%2Fy"
        );
    }

    #[test]
    fn human_strings_of_transforms() {
        let int = PrimitiveType::Int;
        let h = |t: Transform, ty: &PrimitiveType, v: Literal| human_string(&t, ty, &v);
        assert_eq!(h(Transform::Year, &int, Literal::Int(54)), "2024");
        assert_eq!(h(Transform::Month, &int, Literal::Int(-1)), "1969-12");
        assert_eq!(h(Transform::Hour, &int, Literal::Int(25)), "1970-01-02-01");
        assert_eq!(
            h(Transform::Day, &PrimitiveType::Date, Literal::Date(-1)),
            "1969-12-31"
        );
        assert_eq!(h(Transform::Bucket(4), &int, Literal::Int(3)), "3");
        let dec = PrimitiveType::Decimal {
            precision: 9,
            scale: 2,
        };
        assert_eq!(h(Transform::Identity, &dec, Literal::Decimal(-5)), "-0.05");
        assert_eq!(
            h(
                Transform::Identity,
                &PrimitiveType::Timestamptz,
                Literal::Timestamp(-1)
            ),
            "1969-12-31T23:59:59.999999+00:00"
        );
        assert_eq!(
            h(
                Transform::Identity,
                &PrimitiveType::Time,
                Literal::Time(3_661_000_001)
            ),
            "01:01:01.000001"
        );
        assert_eq!(
            h(
                Transform::Identity,
                &PrimitiveType::Binary,
                Literal::Binary(vec![0, 255])
            ),
            "00ff"
        );
    }

    #[test]
    fn levels_list_next_segments_and_leaves() {
        let d = |s: &[&str], t: usize| PartitionDir {
            segments: s.iter().map(|x| x.to_string()).collect(),
            tasks: vec![t],
        };
        let dirs = vec![
            d(&[], 0),
            d(&["a=1", "b=1"], 1),
            d(&["a=1", "b=2"], 2),
            d(&["a=2"], 3),
        ];
        let (next, here) = list_level(&dirs, &[]).unwrap();
        assert_eq!((next, here), (vec!["a=1", "a=2"], Some(0)));
        let (next, here) = list_level(&dirs, &["a=1".to_string()]).unwrap();
        assert_eq!((next, here), (vec!["b=1", "b=2"], None));
        let (next, here) = list_level(&dirs, &["a=2".to_string()]).unwrap();
        assert_eq!((next, here), (vec![], Some(3)));
        assert!(list_level(&dirs, &["a=3".to_string()]).is_none());
    }
}
