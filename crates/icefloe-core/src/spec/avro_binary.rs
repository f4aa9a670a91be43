//! Avro object container files decoded without a value tree (Avro spec, "Object Container
//! Files", "Binary Encoding"): the writer schema compiled to a small tree of nodes, blocks
//! decompressed one at a time, and a cursor that reads the fields a caller asks for and
//! skips the others. Manifests are decoded with it straight into their entries, which is most
//! of planning's work on large tables. Nothing here is Iceberg's: the manifest rules are in
//! `manifest`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Read;

use apache_avro::types::Value;
use serde_json::Value as Json;

use super::avro::MAX_AVRO_LENGTH;

/// The largest decompressed block read: a bound on what one block can make the reader hold.
const MAX_BLOCK_BYTES: u64 = 256 << 20;

/// How deep values may nest (records in records...): a bound that also stops a schema whose
/// record contains itself from recursing forever.
const MAX_DEPTH: usize = 64;

/// A node of a compiled writer schema.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    Fixed(usize),
    Enum(Vec<String>),
    Array(usize),
    Map(usize),
    Union(Vec<usize>),
    Record(Vec<(String, usize)>),
}

/// A node with its logical type, if any (for the values [`Cursor::value`] builds).
#[derive(Debug, Clone, PartialEq)]
pub struct Typed {
    pub node: Node,
    pub logical: Option<String>,
}

/// A writer schema compiled to nodes, referenced by index.
#[derive(Debug, Clone)]
pub struct Schema {
    nodes: Vec<Typed>,
    root: usize,
}

impl Schema {
    /// Compiles the JSON of an Avro schema. Errors: what is not a valid schema.
    pub fn parse(json: &Json) -> Result<Schema, String> {
        let mut c = Compiler {
            nodes: Vec::new(),
            names: HashMap::new(),
        };
        let root = c.compile(json, "", 0)?;
        Ok(Schema {
            nodes: c.nodes,
            root,
        })
    }

    /// The top-level node.
    pub fn root(&self) -> usize {
        self.root
    }

    /// Node `i`.
    pub fn node(&self, i: usize) -> &Node {
        &self.nodes[i].node
    }
}

struct Compiler {
    nodes: Vec<Typed>,
    names: HashMap<String, usize>,
}

impl Compiler {
    fn push(&mut self, node: Node, logical: Option<String>) -> usize {
        self.nodes.push(Typed { node, logical });
        self.nodes.len() - 1
    }

    fn compile(&mut self, j: &Json, ns: &str, depth: usize) -> Result<usize, String> {
        if depth > MAX_DEPTH {
            return Err("schema nested too deep".into());
        }
        match j {
            Json::String(name) => self.named_or_primitive(name, ns, None),
            Json::Array(branches) => {
                let b = branches
                    .iter()
                    .map(|b| self.compile(b, ns, depth + 1))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(self.push(Node::Union(b), None))
            }
            Json::Object(o) => {
                let ty = o.get("type").ok_or("schema object without type")?;
                let logical = o
                    .get("logicalType")
                    .and_then(Json::as_str)
                    .map(str::to_string);
                let Some(ty) = ty.as_str() else {
                    // {"type": {...}} or {"type": [...]}: the inner schema.
                    return self.compile(ty, ns, depth + 1);
                };
                let full = |o: &serde_json::Map<String, Json>| -> Result<(String, String), String> {
                    let name = o
                        .get("name")
                        .and_then(Json::as_str)
                        .ok_or("named type without name")?;
                    let space = o.get("namespace").and_then(Json::as_str).unwrap_or(ns);
                    Ok(match name.rsplit_once('.') {
                        Some((s, _)) => (name.to_string(), s.to_string()),
                        None if space.is_empty() => (name.to_string(), String::new()),
                        None => (format!("{space}.{name}"), space.to_string()),
                    })
                };
                match ty {
                    "record" | "error" => {
                        let (name, space) = full(o)?;
                        // Registered before its fields, which may refer to it.
                        let at = self.push(Node::Record(Vec::new()), logical);
                        self.names.insert(name, at);
                        let mut fields = Vec::new();
                        for f in o
                            .get("fields")
                            .and_then(Json::as_array)
                            .ok_or("record without fields")?
                        {
                            let fname = f
                                .get("name")
                                .and_then(Json::as_str)
                                .ok_or("record field without name")?;
                            let ft = f.get("type").ok_or("record field without type")?;
                            fields.push((fname.to_string(), self.compile(ft, &space, depth + 1)?));
                        }
                        self.nodes[at].node = Node::Record(fields);
                        Ok(at)
                    }
                    "enum" => {
                        let (name, _) = full(o)?;
                        let symbols = o
                            .get("symbols")
                            .and_then(Json::as_array)
                            .ok_or("enum without symbols")?
                            .iter()
                            .map(|s| {
                                s.as_str()
                                    .map(str::to_string)
                                    .ok_or("enum symbol not a string")
                            })
                            .collect::<Result<Vec<_>, _>>()?;
                        let at = self.push(Node::Enum(symbols), logical);
                        self.names.insert(name, at);
                        Ok(at)
                    }
                    "fixed" => {
                        let (name, _) = full(o)?;
                        let size = o
                            .get("size")
                            .and_then(Json::as_u64)
                            .ok_or("fixed without size")?;
                        let at = self.push(Node::Fixed(size as usize), logical);
                        self.names.insert(name, at);
                        Ok(at)
                    }
                    "array" => {
                        let items = o.get("items").ok_or("array without items")?;
                        let i = self.compile(items, ns, depth + 1)?;
                        Ok(self.push(Node::Array(i), logical))
                    }
                    "map" => {
                        let values = o.get("values").ok_or("map without values")?;
                        let v = self.compile(values, ns, depth + 1)?;
                        Ok(self.push(Node::Map(v), logical))
                    }
                    other => self.named_or_primitive(other, ns, logical),
                }
            }
            other => Err(format!("not a schema: {other}")),
        }
    }

    fn named_or_primitive(
        &mut self,
        name: &str,
        ns: &str,
        logical: Option<String>,
    ) -> Result<usize, String> {
        let node = match name {
            "null" => Node::Null,
            "boolean" => Node::Boolean,
            "int" => Node::Int,
            "long" => Node::Long,
            "float" => Node::Float,
            "double" => Node::Double,
            "bytes" => Node::Bytes,
            "string" => Node::String,
            _ => {
                let qualified = format!("{ns}.{name}");
                return [qualified.as_str(), name]
                    .iter()
                    .find_map(|n| self.names.get(*n).copied())
                    .ok_or_else(|| format!("unknown type {name:?}"));
            }
        };
        Ok(self.push(node, logical))
    }
}

/// An object container file: its writer schema and its blocks.
pub struct Container<'a> {
    pub schema: Schema,
    /// The writer schema as written (for attributes the compiled one drops, as `field-id`).
    pub schema_json: Json,
    codec: Codec,
    sync: [u8; 16],
    rest: &'a [u8],
}

#[derive(Clone, Copy)]
enum Codec {
    Null,
    Deflate,
    Snappy,
    Zstandard,
}

impl<'a> Container<'a> {
    /// Reads the header of `bytes`. Errors: not an object container file, an unreadable
    /// schema, an unsupported codec.
    pub fn open(bytes: &'a [u8]) -> Result<Container<'a>, String> {
        let mut c = Cursor::new(
            bytes
                .strip_prefix(b"Obj\x01")
                .ok_or("not an Avro file: no Avro object container magic")?,
        );
        let mut meta: HashMap<&str, &[u8]> = HashMap::new();
        loop {
            let count = c.block_count()?;
            if count == 0 {
                break;
            }
            for _ in 0..count {
                let k = c.str()?;
                let v = c.bytes()?;
                meta.insert(k, v);
            }
        }
        let sync: [u8; 16] = c
            .take(16)?
            .try_into()
            .map_err(|_| "header ends before its sync marker")?;
        let schema: Json = meta
            .get("avro.schema")
            .and_then(|s| serde_json::from_slice(s).ok())
            .ok_or("no readable avro.schema in the header")?;
        let codec = match meta.get("avro.codec").copied().unwrap_or(b"null") {
            b"null" => Codec::Null,
            b"deflate" => Codec::Deflate,
            b"snappy" => Codec::Snappy,
            b"zstandard" => Codec::Zstandard,
            other => {
                return Err(format!(
                    "unsupported Avro codec {:?}",
                    String::from_utf8_lossy(other)
                ))
            }
        };
        Ok(Container {
            schema: Schema::parse(&schema).map_err(|e| format!("invalid Avro schema: {e}"))?,
            schema_json: schema,
            codec,
            sync,
            rest: c.buf,
        })
    }

    /// The next block: its object count and decompressed bytes; `None` at the end.
    pub fn next_block(&mut self) -> Result<Option<Block<'a>>, String> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        let mut c = Cursor::new(self.rest);
        let count = c.long()?;
        let size = c.long()?;
        if count < 0 || size < 0 {
            return Err(format!("block of {count} objects in {size} bytes"));
        }
        let data = c.take(size as usize)?;
        if c.take(16)? != self.sync {
            return Err("block does not end with the file's sync marker".into());
        }
        self.rest = c.buf;
        let bounded = |r: &mut dyn Read| -> Result<Vec<u8>, String> {
            let mut out = Vec::new();
            r.take(MAX_BLOCK_BYTES + 1)
                .read_to_end(&mut out)
                .map_err(|e| format!("cannot decompress a block: {e}"))?;
            if out.len() as u64 > MAX_BLOCK_BYTES {
                return Err(format!(
                    "a block decompresses to over {MAX_BLOCK_BYTES} bytes"
                ));
            }
            Ok(out)
        };
        let data = match self.codec {
            Codec::Null => Cow::Borrowed(data),
            Codec::Deflate => Cow::Owned(bounded(&mut flate2::read::DeflateDecoder::new(data))?),
            Codec::Zstandard => Cow::Owned(bounded(
                &mut zstd::Decoder::new(data).map_err(|e| format!("zstandard: {e}"))?,
            )?),
            Codec::Snappy => {
                // The compressed bytes, then the CRC-32 of the uncompressed ones, big-endian.
                let (body, crc) = data
                    .split_last_chunk::<4>()
                    .ok_or("snappy block shorter than its checksum")?;
                let len = snap::raw::decompress_len(body).map_err(|e| format!("snappy: {e}"))?;
                if len as u64 > MAX_BLOCK_BYTES {
                    return Err(format!(
                        "a block decompresses to over {MAX_BLOCK_BYTES} bytes"
                    ));
                }
                let out = snap::raw::Decoder::new()
                    .decompress_vec(body)
                    .map_err(|e| format!("snappy: {e}"))?;
                if crc32fast::hash(&out) != u32::from_be_bytes(*crc) {
                    return Err("snappy block fails its CRC-32 check".into());
                }
                Cow::Owned(out)
            }
        };
        Ok(Some((count as u64, data)))
    }
}

/// A block of a container: its object count and its (decompressed) bytes.
pub type Block<'a> = (u64, Cow<'a, [u8]>);

/// Reads Avro binary values from a block.
pub struct Cursor<'a> {
    pub buf: &'a [u8],
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8]) -> Cursor<'a> {
        Cursor { buf }
    }

    /// `n` raw bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.buf.len() {
            return Err(format!(
                "{n} bytes asked for but {} are left",
                self.buf.len()
            ));
        }
        let (a, b) = self.buf.split_at(n);
        self.buf = b;
        Ok(a)
    }

    /// A zig-zag varint `long`.
    pub fn long(&mut self) -> Result<i64, String> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let (&b, rest) = self.buf.split_first().ok_or("data ends inside a number")?;
            self.buf = rest;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok((v >> 1) as i64 ^ -((v & 1) as i64));
            }
        }
        Err("number longer than 10 bytes".into())
    }

    /// An `int`: a `long` that fits 32 bits.
    pub fn int(&mut self) -> Result<i32, String> {
        let v = self.long()?;
        i32::try_from(v).map_err(|_| format!("int {v} out of range"))
    }

    /// A length, checked against the bytes left and [`MAX_AVRO_LENGTH`].
    fn len(&mut self) -> Result<usize, String> {
        let n = self.long()?;
        if n < 0 || n as u64 > self.buf.len() as u64 || n as usize > MAX_AVRO_LENGTH {
            return Err(format!("length {n} with {} bytes left", self.buf.len()));
        }
        Ok(n as usize)
    }

    /// `bytes`.
    pub fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.len()?;
        self.take(n)
    }

    /// `string`, checked to be UTF-8.
    pub fn str(&mut self) -> Result<&'a str, String> {
        std::str::from_utf8(self.bytes()?).map_err(|e| format!("string is not UTF-8: {e}"))
    }

    /// The item count of the next block of an array or map (0 at its end), with the byte
    /// size of a negative count skipped. The count is checked against the bytes left: every
    /// item of the files read here takes at least a byte (arrays of nulls or of empty records,
    /// which take none, are refused).
    pub fn block_count(&mut self) -> Result<u64, String> {
        let mut n = self.long()?;
        if n < 0 {
            n = n.checked_neg().ok_or("block count overflows")?;
            self.long()?;
        }
        if n as u64 > self.buf.len() as u64 {
            return Err(format!(
                "block of {n} items with {} bytes left",
                self.buf.len()
            ));
        }
        Ok(n as u64)
    }

    /// The branch of a union value.
    pub fn branch(&mut self, branches: &[usize]) -> Result<usize, String> {
        let i = self.long()?;
        usize::try_from(i)
            .ok()
            .and_then(|i| branches.get(i).copied())
            .ok_or_else(|| format!("union branch {i} of {}", branches.len()))
    }

    /// Skips a value of node `n`.
    pub fn skip(&mut self, s: &Schema, n: usize) -> Result<(), String> {
        self.skip_at(s, n, 0)
    }

    fn skip_at(&mut self, s: &Schema, n: usize, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err("values nested too deep".into());
        }
        match s.node(n) {
            Node::Null => {}
            Node::Boolean => {
                self.take(1)?;
            }
            Node::Int | Node::Long | Node::Enum(_) => {
                self.long()?;
            }
            Node::Float => {
                self.take(4)?;
            }
            Node::Double => {
                self.take(8)?;
            }
            Node::Bytes | Node::String => {
                self.bytes()?;
            }
            Node::Fixed(k) => {
                self.take(*k)?;
            }
            Node::Array(i) => loop {
                let count = self.block_count()?;
                if count == 0 {
                    break;
                }
                for _ in 0..count {
                    self.skip_at(s, *i, depth + 1)?;
                }
            },
            Node::Map(v) => loop {
                let count = self.block_count()?;
                if count == 0 {
                    break;
                }
                for _ in 0..count {
                    self.bytes()?;
                    self.skip_at(s, *v, depth + 1)?;
                }
            },
            Node::Union(b) => {
                let b = self.branch(b)?;
                self.skip_at(s, b, depth + 1)?;
            }
            Node::Record(fields) => {
                for (_, f) in fields {
                    self.skip_at(s, *f, depth + 1)?;
                }
            }
        }
        Ok(())
    }

    /// A number, string, bytes or enum symbol of node `n` (through a union), or `Null`; any
    /// other value is skipped and read as `Other`.
    /// (The value borrows from the block and, for an enum symbol, from the schema.)
    pub fn scalar<'s>(&mut self, s: &'s Schema, n: usize) -> Result<Scalar<'s>, String>
    where
        'a: 's,
    {
        Ok(match s.node(n) {
            Node::Null => Scalar::Null,
            Node::Int | Node::Long => Scalar::Int(self.long()?),
            Node::String => Scalar::Str(self.str()?),
            Node::Bytes => Scalar::Bytes(self.bytes()?),
            Node::Enum(symbols) => {
                let i = self.long()?;
                let sym = usize::try_from(i).ok().and_then(|i| symbols.get(i));
                Scalar::Str(sym.ok_or_else(|| format!("enum index {i} of {}", symbols.len()))?)
            }
            Node::Union(b) => {
                let b = self.branch(b)?;
                self.scalar(s, b)?
            }
            _ => {
                self.skip(s, n)?;
                Scalar::Other
            }
        })
    }

    /// A primitive value of node `n` as `apache_avro` would decode it (logical types
    /// included), through a union; `Err` for records, arrays and maps.
    pub fn value(&mut self, s: &Schema, n: usize) -> Result<Value, String> {
        let t = &s.nodes[n];
        let logical = t.logical.as_deref();
        Ok(match (&t.node, logical) {
            (Node::Null, _) => Value::Null,
            (Node::Boolean, _) => match self.take(1)?[0] {
                0 => Value::Boolean(false),
                1 => Value::Boolean(true),
                b => return Err(format!("boolean byte {b}")),
            },
            (Node::Int, Some("date")) => Value::Date(self.int()?),
            (Node::Int, Some("time-millis")) => Value::TimeMillis(self.int()?),
            (Node::Int, _) => Value::Int(self.int()?),
            (Node::Long, Some("time-micros")) => Value::TimeMicros(self.long()?),
            (Node::Long, Some("timestamp-millis")) => Value::TimestampMillis(self.long()?),
            (Node::Long, Some("timestamp-micros")) => Value::TimestampMicros(self.long()?),
            (Node::Long, Some("timestamp-nanos")) => Value::TimestampNanos(self.long()?),
            (Node::Long, Some("local-timestamp-millis")) => {
                Value::LocalTimestampMillis(self.long()?)
            }
            (Node::Long, Some("local-timestamp-micros")) => {
                Value::LocalTimestampMicros(self.long()?)
            }
            (Node::Long, Some("local-timestamp-nanos")) => Value::LocalTimestampNanos(self.long()?),
            (Node::Long, _) => Value::Long(self.long()?),
            (Node::Float, _) => Value::Float(f32::from_le_bytes(
                self.take(4)?.try_into().expect("4 bytes"),
            )),
            (Node::Double, _) => Value::Double(f64::from_le_bytes(
                self.take(8)?.try_into().expect("8 bytes"),
            )),
            (Node::String, Some("uuid")) => {
                let text = self.str()?;
                Value::Uuid(uuid_of(text)?)
            }
            (Node::Fixed(16), Some("uuid")) => {
                let b: [u8; 16] = self.take(16)?.try_into().expect("16 bytes");
                Value::Uuid(apache_avro::Uuid::from_bytes(b))
            }
            (Node::Bytes, Some("decimal")) => Value::Decimal(self.bytes()?.to_vec().into()),
            (Node::Fixed(k), Some("decimal")) => Value::Decimal(self.take(*k)?.to_vec().into()),
            (Node::String, _) => Value::String(self.str()?.to_string()),
            (Node::Bytes, _) => Value::Bytes(self.bytes()?.to_vec()),
            (Node::Fixed(k), _) => Value::Fixed(*k, self.take(*k)?.to_vec()),
            (Node::Enum(symbols), _) => {
                let i = self.int()?;
                let sym = usize::try_from(i).ok().and_then(|i| symbols.get(i));
                let sym = sym.ok_or_else(|| format!("enum index {i} of {}", symbols.len()))?;
                Value::Enum(i as u32, sym.clone())
            }
            (Node::Union(b), _) => {
                let b = self.branch(b)?;
                return self.value(s, b);
            }
            (Node::Array(_) | Node::Map(_) | Node::Record(_), _) => {
                return Err("a record, array or map where a primitive value was expected".into())
            }
        })
    }
}

fn uuid_of(text: &str) -> Result<apache_avro::Uuid, String> {
    apache_avro::Uuid::parse_str(text).map_err(|e| format!("invalid uuid {text:?}: {e}"))
}

/// A leaf value read by [`Cursor::scalar`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar<'a> {
    Null,
    /// An `int` or a `long`.
    Int(i64),
    /// A `string` or an enum symbol.
    Str(&'a str),
    Bytes(&'a [u8]),
    /// A value of another type (skipped).
    Other,
}

impl<'a> Scalar<'a> {
    pub fn int(self) -> Option<i64> {
        match self {
            Scalar::Int(i) => Some(i),
            _ => None,
        }
    }

    pub fn str(self) -> Option<&'a str> {
        match self {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(text: &str) -> Schema {
        Schema::parse(&serde_json::from_str(text).unwrap()).unwrap()
    }

    #[test]
    fn values_decode_as_apache_avro_writes_them() {
        let s = schema(
            r#"{"type":"record","name":"r","namespace":"n","fields":[
                {"name":"a","type":["null","long"]},
                {"name":"b","type":"string"},
                {"name":"c","type":{"type":"array","items":{"type":"record","name":"kv","fields":[
                    {"name":"key","type":"int"},{"name":"value","type":"bytes"}]}}},
                {"name":"d","type":["null",{"type":"fixed","name":"u","size":16,"logicalType":"uuid"}]},
                {"name":"e","type":{"type":"int","logicalType":"date"}},
                {"name":"f","type":{"type":"enum","name":"fmt","symbols":["X","Y"]}},
                {"name":"g","type":["null","n.kv"]}
            ]}"#,
        );
        let avro = apache_avro::Schema::parse_str(
            r#"{"type":"record","name":"r","namespace":"n","fields":[
                {"name":"a","type":["null","long"]},
                {"name":"b","type":"string"},
                {"name":"c","type":{"type":"array","items":{"type":"record","name":"kv","fields":[
                    {"name":"key","type":"int"},{"name":"value","type":"bytes"}]}}},
                {"name":"d","type":["null",{"type":"fixed","name":"u","size":16}]},
                {"name":"e","type":{"type":"int","logicalType":"date"}},
                {"name":"f","type":{"type":"enum","name":"fmt","symbols":["X","Y"]}},
                {"name":"g","type":["null","n.kv"]}
            ]}"#,
        )
        .unwrap();
        let kv = |k: i32, v: &[u8]| {
            Value::Record(vec![
                ("key".into(), Value::Int(k)),
                ("value".into(), Value::Bytes(v.to_vec())),
            ])
        };
        let rec = Value::Record(vec![
            ("a".into(), Value::Union(1, Box::new(Value::Long(-7)))),
            ("b".into(), Value::String("héllo".into())),
            ("c".into(), Value::Array(vec![kv(1, b"x"), kv(300, b"")])),
            (
                "d".into(),
                Value::Union(1, Box::new(Value::Fixed(16, (0..16).collect()))),
            ),
            ("e".into(), Value::Date(19000)),
            ("f".into(), Value::Enum(1, "Y".into())),
            ("g".into(), Value::Union(1, Box::new(kv(5, b"z")))),
        ]);
        let bytes = apache_avro::to_avro_datum(&avro, rec).unwrap();
        let mut c = Cursor::new(&bytes);
        let Node::Record(fields) = s.node(s.root()).clone() else {
            panic!()
        };
        assert_eq!(c.scalar(&s, fields[0].1), Ok(Scalar::Int(-7)));
        assert_eq!(c.scalar(&s, fields[1].1), Ok(Scalar::Str("héllo")));
        c.skip(&s, fields[2].1).unwrap();
        let want: [u8; 16] = (0..16).collect::<Vec<u8>>().try_into().unwrap();
        assert_eq!(
            c.value(&s, fields[3].1),
            Ok(Value::Uuid(apache_avro::Uuid::from_bytes(want)))
        );
        assert_eq!(c.value(&s, fields[4].1), Ok(Value::Date(19000)));
        assert_eq!(c.scalar(&s, fields[5].1), Ok(Scalar::Str("Y")));
        assert!(
            matches!(s.node(fields[6].1), Node::Union(_)),
            "a named reference in a union"
        );
        c.skip(&s, fields[6].1).unwrap();
        assert!(c.buf.is_empty());
    }

    #[test]
    fn every_codec_apache_avro_writes_is_read() {
        let text = r#"{"type":"record","name":"r","fields":[{"name":"s","type":"string"},{"name":"n","type":"long"}]}"#;
        let avro = apache_avro::Schema::parse_str(text).unwrap();
        let codecs = [
            apache_avro::Codec::Null,
            apache_avro::Codec::Deflate(Default::default()),
            apache_avro::Codec::Snappy,
            apache_avro::Codec::Zstandard(Default::default()),
        ];
        for codec in codecs {
            let mut w = apache_avro::Writer::with_codec(&avro, Vec::new(), codec);
            for i in 0..1000i64 {
                let r = Value::Record(vec![
                    ("s".into(), Value::String(format!("row {i}"))),
                    ("n".into(), Value::Long(i * 7)),
                ]);
                w.append(r).unwrap();
            }
            let bytes = w.into_inner().unwrap();
            let mut file = Container::open(&bytes).unwrap();
            let Node::Record(f) = file.schema.node(file.schema.root()).clone() else {
                panic!()
            };
            let mut i = 0i64;
            while let Some((count, block)) = file.next_block().unwrap() {
                let mut c = Cursor::new(&block);
                for _ in 0..count {
                    let text = format!("row {i}");
                    assert_eq!(c.scalar(&file.schema, f[0].1), Ok(Scalar::Str(&text)));
                    assert_eq!(c.scalar(&file.schema, f[1].1), Ok(Scalar::Int(i * 7)));
                    i += 1;
                }
                assert!(c.buf.is_empty());
            }
            assert_eq!(i, 1000, "{codec:?}");
        }
    }

    #[test]
    fn corrupt_lengths_and_counts_are_errors() {
        let s = schema(r#"{"type":"array","items":"long"}"#);
        // A count of 2^40 items in 2 bytes.
        let mut c = Cursor::new(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0x02]);
        assert!(c.skip(&s, s.root()).is_err());
        let mut c = Cursor::new(&[0x20, b'a']);
        assert!(c.str().is_err(), "a string longer than the data");
        let s = schema(r#"{"type":"record","name":"loop","fields":[{"name":"x","type":"loop"}]}"#);
        assert!(
            Cursor::new(&[]).skip(&s, s.root()).is_err(),
            "a record containing itself"
        );
    }
}
