//! One manifest read and decoded (spec: "Manifests"), with inheritance from its manifest list
//! entry applied, through the table's manifest cache; and the partition types decoding needs.

use std::collections::HashMap;
use std::sync::Arc;

use crate::cache::get_or_load_checked;
use crate::spec::manifest::read_manifest_of_spec;
use crate::spec::{ManifestEntry, ManifestFile, PartitionSpec, PrimitiveType, Transform, Type};
use crate::table::Table;
use crate::validate::manifest::check_manifest;

/// The result type of a partition field (spec: "Partition Transforms").
pub fn partition_field_type(transform: &Transform, source: Option<&Type>) -> PrimitiveType {
    let src = source.and_then(Type::as_primitive).cloned();
    match transform {
        Transform::Bucket(_) | Transform::Year | Transform::Month | Transform::Hour => {
            PrimitiveType::Int
        }
        Transform::Day => PrimitiveType::Date,
        _ => src.unwrap_or(PrimitiveType::String),
    }
}

/// Partition field types of a spec, resolving source ids through every schema of the table.
pub fn partition_types(table: &Table, spec: &PartitionSpec) -> Vec<PrimitiveType> {
    let m = table.metadata();
    let mut by_id: HashMap<i32, Type> = HashMap::new();
    for s in m.schemas.iter().rev() {
        by_id.extend(s.types_by_id());
    }
    by_id.extend(m.current_schema().types_by_id());
    spec.fields
        .iter()
        .map(|f| partition_field_type(&f.transform, by_id.get(&f.source_id)))
        .collect()
}

/// Reads one manifest (cached), with inheritance from its manifest list entry applied.
pub async fn load_manifest(
    table: &Table,
    mf: &ManifestFile,
) -> crate::Result<Arc<Vec<ManifestEntry>>> {
    load_manifest_cached(table, mf, true).await
}

/// What decoding a manifest depends on, and the key it is cached under.
pub(super) struct ManifestKey {
    /// The cache key: everything the decoded entries depend on.
    pub key: String,
    /// The manifest's location as errors show it.
    pub shown: String,
    /// The result types of its partition spec's fields, in order.
    pub types: Vec<PrimitiveType>,
    /// Its partition spec's field ids, in order.
    pub spec_ids: Vec<i32>,
}

/// The [`ManifestKey`] of `mf`. Errors: a partition spec the table metadata lacks.
pub(super) fn manifest_cache_key(table: &Table, mf: &ManifestFile) -> crate::Result<ManifestKey> {
    let shown = table.io().shown(&mf.manifest_path);
    let spec = table
        .metadata()
        .partition_spec(mf.partition_spec_id)
        .ok_or_else(|| {
            crate::Error::manifest(
                &shown,
                format!(
                    "partition spec {} is not in the table metadata",
                    mf.partition_spec_id
                ),
            )
        })?;
    let types = partition_types(table, spec);
    let spec_ids: Vec<i32> = spec.fields.iter().map(|f| f.field_id).collect();
    // Everything the decoded entries depend on: the inherited values, and the partition
    // types, which change when a source column is promoted (int -> long).
    let key = format!(
        "{shown}#{}#{:?}#{}#{}#{:?}",
        mf.sequence_number, mf.first_row_id, mf.added_snapshot_id, mf.partition_spec_id, types
    );
    Ok(ManifestKey {
        key,
        shown,
        types,
        spec_ids,
    })
}

/// [`load_manifest`], keeping what it decodes in the cache only if `keep`.
pub(super) async fn load_manifest_cached(
    table: &Table,
    mf: &ManifestFile,
    keep: bool,
) -> crate::Result<Arc<Vec<ManifestEntry>>> {
    crate::cancel::check(|| format!("planning: reading manifest {}", mf.manifest_path))?;
    let io = table.io();
    let ManifestKey {
        key,
        shown,
        types,
        spec_ids,
    } = manifest_cache_key(table, mf)?;
    let load = async {
        let bytes = io
            .read_capped(&mf.manifest_path, crate::io::limits::Capped::Manifest)
            .await?;
        let (mut entries, mut warnings) =
            read_manifest_of_spec(&bytes, &shown, mf, &types, Some(&spec_ids))?;
        warnings.extend(check_manifest(&mut entries, mf, table.metadata(), &shown)?);
        Ok((entries, warnings))
    };
    let cache = &table.caches().manifests;
    if keep {
        return get_or_load_checked(cache, key, table.warnings(), load).await;
    }
    match cache.get(&key).await {
        Some(checked) => {
            table.warnings().report_all(&checked.warnings)?;
            Ok(checked.value.clone())
        }
        None => {
            let (entries, warnings) = load.await?;
            table.warnings().report_all(&warnings)?;
            Ok(Arc::new(entries))
        }
    }
}
