//! Whether a data file's column chunks can be copied into a view byte for byte: the file's
//! column, found by field id, must have exactly the Parquet shape the view declares for it
//! (physical types, logical annotations, repetition, nesting, field ids). Names do not take
//! part: chunk bytes do not hold them (a renamed column is copied under its current name).
//! Anything else (a promoted type, a column added later and read as its default, a file
//! without field ids, a legacy list encoding) is re-encoded.

use parquet::schema::types::{SchemaDescriptor, Type};

/// For each view leaf column from `first_leaf` on, the file's leaf column holding the same
/// values, or `None` when some view column cannot be copied from this file.
pub fn leaf_map(
    view: &SchemaDescriptor,
    first_root: usize,
    file: &SchemaDescriptor,
) -> Option<Vec<usize>> {
    let view_roots = view.root_schema().get_fields();
    let file_roots = file.root_schema().get_fields();
    let mut out = Vec::new();
    for root in &view_roots[first_root..] {
        let info = root.get_basic_info();
        let id = info.has_id().then(|| info.id())?;
        let (fi, froot) = file_roots
            .iter()
            .enumerate()
            .find(|(_, f)| f.get_basic_info().has_id() && f.get_basic_info().id() == id)?;
        if !same_shape(root, froot) {
            return None;
        }
        let first = leaf_start(file, fi)?;
        out.extend(first..first + leaves(froot));
    }
    Some(out)
}

/// The index of the first leaf column below top-level field `root`.
fn leaf_start(descr: &SchemaDescriptor, root: usize) -> Option<usize> {
    (0..descr.num_columns()).find(|&i| descr.get_column_root_idx(i) == root)
}

fn leaves(t: &Type) -> usize {
    match t {
        Type::PrimitiveType { .. } => 1,
        Type::GroupType { fields, .. } => fields.iter().map(|f| leaves(f)).sum(),
    }
}

/// Same values under the same reading: everything but the names.
fn same_shape(view: &Type, file: &Type) -> bool {
    let (v, f) = (view.get_basic_info(), file.get_basic_info());
    if v.repetition() != f.repetition()
        || v.logical_type_ref() != f.logical_type_ref()
        || v.converted_type() != f.converted_type()
        || (v.has_id() && (!f.has_id() || v.id() != f.id()))
    {
        return false;
    }
    match (view, file) {
        (
            Type::PrimitiveType {
                physical_type: pv,
                type_length: lv,
                scale: sv,
                precision: rv,
                ..
            },
            Type::PrimitiveType {
                physical_type: pf,
                type_length: lf,
                scale: sf,
                precision: rf,
                ..
            },
        ) => pv == pf && lv == lf && sv == sf && rv == rf,
        (Type::GroupType { fields: fv, .. }, Type::GroupType { fields: ff, .. }) => {
            fv.len() == ff.len() && fv.iter().zip(ff).all(|(a, b)| same_shape(a, b))
        }
        _ => false,
    }
}
