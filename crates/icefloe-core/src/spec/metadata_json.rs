//! Decoding a metadata JSON file without a second copy of it in memory: the long lists
//! (`snapshots`, `snapshot-log`, `metadata-log`) are decoded one element at a time straight
//! into their typed form, so only the file's bytes, the result and one element's JSON tree are
//! held at once, never a JSON tree of the whole file (several times its size).

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value as Json};

use super::snapshot::{MetadataLogEntry, Snapshot, SnapshotLogEntry};

/// The long lists of a metadata file, decoded; `None` where the file does not have the key
/// (or has it as null).
#[derive(Debug, Default)]
pub struct Lists {
    pub snapshots: Option<Vec<Snapshot>>,
    pub snapshot_log: Option<Vec<SnapshotLogEntry>>,
    pub metadata_log: Option<Vec<MetadataLogEntry>>,
}

impl Lists {
    /// The lists of an already decoded metadata object.
    pub fn from_value(v: &Json, path: &str) -> crate::Result<Lists> {
        let list = |key: &str| -> crate::Result<Option<&Vec<Json>>> {
            match v.get(key) {
                None | Some(Json::Null) => Ok(None),
                Some(Json::Array(a)) => Ok(Some(a)),
                Some(_) => Err(not_a_list(key, path)),
            }
        };
        Ok(Lists {
            snapshots: list("snapshots")?
                .map(|a| a.iter().map(|s| Snapshot::from_json(s, path)).collect())
                .transpose()?,
            snapshot_log: list("snapshot-log")?
                .map(|a| a.iter().filter_map(snapshot_log).collect()),
            metadata_log: list("metadata-log")?
                .map(|a| a.iter().filter_map(metadata_log).collect()),
        })
    }
}

fn not_a_list(key: &str, path: &str) -> crate::Error {
    crate::Error::metadata(path, format!("{key} is not a list"))
}

/// A `snapshot-log` entry; entries missing a field are skipped, as before.
pub fn snapshot_log(e: &Json) -> Option<SnapshotLogEntry> {
    Some(SnapshotLogEntry {
        timestamp_ms: e.get("timestamp-ms")?.as_i64()?,
        snapshot_id: e.get("snapshot-id")?.as_i64()?,
    })
}

/// A `metadata-log` entry; entries missing a field are skipped.
pub fn metadata_log(e: &Json) -> Option<MetadataLogEntry> {
    Some(MetadataLogEntry {
        timestamp_ms: e.get("timestamp-ms")?.as_i64()?,
        metadata_file: e.get("metadata-file")?.as_str()?.to_string(),
    })
}

/// Decodes metadata JSON `bytes`: the object without its long lists, and the lists.
pub fn decode(bytes: &[u8], path: &str) -> crate::Result<(Json, Lists)> {
    let failed = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let top = TopLevel {
        path,
        failed: &failed,
    };
    let result = top.deserialize(&mut de).and_then(|r| de.end().map(|()| r));
    // An error of the typed decoding wins over the JSON error it was reported through.
    if let Some(e) = failed.into_inner() {
        return Err(e);
    }
    result.map_err(|e| crate::Error::metadata(path, format!("not valid JSON: {e}")))
}

struct TopLevel<'a> {
    path: &'a str,
    failed: &'a RefCell<Option<crate::Error>>,
}

impl<'de> DeserializeSeed<'de> for TopLevel<'_> {
    type Value = (Json, Lists);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TopLevel<'_> {
    type Value = (Json, Lists);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a table metadata object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut rest = Map::new();
        let mut lists = Lists::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "snapshots" => {
                    let seed = ListOf {
                        key: "snapshots",
                        path: self.path,
                        failed: self.failed,
                        each: |v: &Json, path: &str| Snapshot::from_json(v, path).map(Some),
                    };
                    lists.snapshots = map.next_value_seed(seed)?;
                }
                "snapshot-log" => {
                    let seed = ListOf {
                        key: "snapshot-log",
                        path: self.path,
                        failed: self.failed,
                        each: |v: &Json, _: &str| Ok(snapshot_log(v)),
                    };
                    lists.snapshot_log = map.next_value_seed(seed)?;
                }
                "metadata-log" => {
                    let seed = ListOf {
                        key: "metadata-log",
                        path: self.path,
                        failed: self.failed,
                        each: |v: &Json, _: &str| Ok(metadata_log(v)),
                    };
                    lists.metadata_log = map.next_value_seed(seed)?;
                }
                _ => {
                    let v: Json = map.next_value()?;
                    rest.insert(key, v);
                }
            }
        }
        Ok((Json::Object(rest), lists))
    }
}

/// A list decoded element by element with `each` (which may skip an element).
struct ListOf<'a, F> {
    key: &'static str,
    path: &'a str,
    failed: &'a RefCell<Option<crate::Error>>,
    each: F,
}

impl<'de, T, F> DeserializeSeed<'de> for ListOf<'_, F>
where
    F: Fn(&Json, &str) -> crate::Result<Option<T>>,
{
    type Value = Option<Vec<T>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T, F> Visitor<'de> for ListOf<'_, F>
where
    F: Fn(&Json, &str) -> crate::Result<Option<T>>,
{
    type Value = Option<Vec<T>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} as a list", self.key)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element::<Json>()? {
            match (self.each)(&v, self.path) {
                Ok(Some(x)) => out.push(x),
                Ok(None) => {}
                Err(e) => {
                    let msg = e.to_string();
                    *self.failed.borrow_mut() = Some(e);
                    return Err(A::Error::custom(msg));
                }
            }
        }
        Ok(Some(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
        self.not_a_list()
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        self.not_a_list()
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
        self.not_a_list()
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
        self.not_a_list()
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
        self.not_a_list()
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
        self.not_a_list()
    }
}

impl<F> ListOf<'_, F> {
    fn not_a_list<V, E: serde::de::Error>(&self) -> Result<V, E> {
        let e = not_a_list(self.key, self.path);
        let msg = e.to_string();
        *self.failed.borrow_mut() = Some(e);
        Err(E::custom(msg))
    }
}
