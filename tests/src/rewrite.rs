//! Rewriting a table's Avro metadata files: every path a table records, as another writer
//! would have written them, or any edit of their records.

use std::path::Path;

use apache_avro::types::Value as Avro;
use serde_json::Value;

/// Rewrites every path a table records (a scripted edit, as another writer would have written
/// them): in every metadata JSON file (`location`, `manifest-list`, `metadata-file`, …), in
/// manifest lists (`manifest_path`) and manifests (`file_path`, `referenced_data_file`).
/// `edit` gets each path as recorded and returns the new one. Files are not moved.
pub fn rewrite_paths(dir: &Path, edit: &dyn Fn(&str) -> String) {
    let meta = dir.join("metadata");
    for e in std::fs::read_dir(&meta).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        if name.ends_with(".metadata.json") {
            let mut v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
            edit_json(&mut v, edit);
            std::fs::write(&p, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
        } else if name.ends_with(".avro") {
            rewrite_avro(&p, edit);
        }
    }
}

fn edit_json(v: &mut Value, edit: &dyn Fn(&str) -> String) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                match x {
                    Value::String(s)
                        if matches!(k.as_str(), "location" | "manifest-list" | "metadata-file") =>
                    {
                        *s = edit(s)
                    }
                    Value::Array(a) if k == "manifests" => {
                        for m in a {
                            if let Value::String(s) = m {
                                *s = edit(s);
                            }
                        }
                    }
                    _ => edit_json(x, edit),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| edit_json(x, edit)),
        _ => {}
    }
}

/// Rewrites Avro file `p` (a manifest list or manifest) record by record, keeping its schema
/// and its metadata (Iceberg's `schema`, `partition-spec`, `format-version`, ...): `edit` gets
/// each record and returns it, edited or not, or `None` to leave it out.
pub fn rewrite_avro_records(p: &Path, mut edit: impl FnMut(Avro) -> Option<Avro>) {
    expand_avro_records(p, |v| edit(v).into_iter().collect());
}

/// [`rewrite_avro_records`] where `edit` turns each record into any number of records (none,
/// the record, or copies of it: a manifest made to hold many entries), written in order.
pub fn expand_avro_records(p: &Path, mut edit: impl FnMut(Avro) -> Vec<Avro>) {
    let bytes = std::fs::read(p).unwrap();
    let reader = apache_avro::Reader::new(&bytes[..]).unwrap();
    let schema = reader.writer_schema().clone();
    let meta = reader.user_metadata().clone();
    let values: Vec<Avro> = reader.map(|v| v.unwrap()).collect();
    let mut w = apache_avro::Writer::new(&schema, Vec::new());
    for (k, v) in meta {
        w.add_user_metadata(k, v).unwrap();
    }
    for v in values {
        for v in edit(v) {
            w.append(v).unwrap();
        }
    }
    std::fs::write(p, w.into_inner().unwrap()).unwrap();
}

fn rewrite_avro(p: &Path, edit: &dyn Fn(&str) -> String) {
    rewrite_avro_records(p, |mut v| {
        edit_avro(&mut v, edit, false);
        Some(v)
    });
}

fn edit_avro(v: &mut Avro, edit: &dyn Fn(&str) -> String, is_path: bool) {
    match v {
        Avro::String(s) if is_path => *s = edit(s),
        Avro::Union(_, inner) => edit_avro(inner, edit, is_path),
        Avro::Record(fields) => {
            for (k, x) in fields {
                let p = matches!(
                    k.as_str(),
                    "file_path" | "manifest_path" | "referenced_data_file"
                );
                edit_avro(x, edit, p);
            }
        }
        _ => {}
    }
}
