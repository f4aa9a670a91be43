//! Iceberg types (spec: "Schemas and Data Types"), including the V3 additions: `variant`,
//! `timestamp_ns`, `timestamptz_ns`, `geometry`, `geography` and `unknown`.

use std::fmt;

use super::literal::Literal;

/// A primitive Iceberg type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PrimitiveType {
    Boolean,
    Int,
    Long,
    Float,
    Double,
    /// `decimal(P,S)`: precision up to 38 digits, scale digits after the point.
    Decimal {
        precision: u32,
        scale: u32,
    },
    Date,
    /// Time of day, microseconds.
    Time,
    /// Timestamp without zone, microseconds.
    Timestamp,
    /// Timestamp with zone (stored in UTC), microseconds.
    Timestamptz,
    /// Timestamp without zone, nanoseconds (v3).
    TimestampNs,
    /// Timestamp with zone, nanoseconds (v3).
    TimestamptzNs,
    String,
    Uuid,
    /// `fixed[L]`: exactly L bytes.
    Fixed(u64),
    Binary,
    /// Semi-structured value (v3), read as JSON text.
    Variant,
    /// `geometry(C)`: WKB; the CRS string as written (empty means the default `OGC:CRS84`).
    Geometry(String),
    /// `geography(C, A)`: WKB; CRS and edge algorithm as written.
    Geography(String),
    /// A column whose type is not known yet (v3): always null.
    Unknown,
}

/// A nested field of a struct (spec: "Nested Types").
#[derive(Debug, Clone, PartialEq)]
pub struct NestedField {
    pub id: i32,
    pub name: String,
    pub required: bool,
    pub field_type: Type,
    pub doc: Option<String>,
    /// Value of the field for rows written before it existed (v3 `initial-default`).
    pub initial_default: Option<Literal>,
    /// Value writers use when none is given (v3 `write-default`).
    pub write_default: Option<Literal>,
}

/// `struct<...>`: an ordered list of fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StructType {
    pub fields: Vec<NestedField>,
}

/// `list<E>`.
#[derive(Debug, Clone, PartialEq)]
pub struct ListType {
    pub element_id: i32,
    pub element_required: bool,
    pub element: Box<Type>,
}

/// `map<K, V>`.
#[derive(Debug, Clone, PartialEq)]
pub struct MapType {
    pub key_id: i32,
    pub key: Box<Type>,
    pub value_id: i32,
    pub value_required: bool,
    pub value: Box<Type>,
}

/// Any Iceberg type.
#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    Primitive(PrimitiveType),
    Struct(StructType),
    List(ListType),
    Map(MapType),
}

impl Type {
    /// The primitive type, if this is one.
    pub fn as_primitive(&self) -> Option<&PrimitiveType> {
        match self {
            Type::Primitive(p) => Some(p),
            _ => None,
        }
    }

    /// Whether this is a struct, list or map.
    pub fn is_nested(&self) -> bool {
        !matches!(self, Type::Primitive(_))
    }
}

impl StructType {
    /// The field with this id among the direct children.
    pub fn field_by_id(&self, id: i32) -> Option<&NestedField> {
        self.fields.iter().find(|f| f.id == id)
    }
}

impl NestedField {
    /// An optional field without doc or defaults (the shape metadata columns and readers'
    /// own fields take).
    pub fn optional(id: i32, name: impl Into<String>, field_type: Type) -> NestedField {
        NestedField {
            id,
            name: name.into(),
            required: false,
            field_type,
            doc: None,
            initial_default: None,
            write_default: None,
        }
    }
}

impl PrimitiveType {
    /// Parses a primitive type string such as `decimal(9,2)` or `fixed[16]`; `None` if the spec
    /// defines no such type.
    pub fn parse(s: &str) -> Option<PrimitiveType> {
        let s = s.trim();
        Some(match s {
            "boolean" => PrimitiveType::Boolean,
            "int" => PrimitiveType::Int,
            "long" => PrimitiveType::Long,
            "float" => PrimitiveType::Float,
            "double" => PrimitiveType::Double,
            "date" => PrimitiveType::Date,
            "time" => PrimitiveType::Time,
            "timestamp" => PrimitiveType::Timestamp,
            "timestamptz" => PrimitiveType::Timestamptz,
            "timestamp_ns" => PrimitiveType::TimestampNs,
            "timestamptz_ns" => PrimitiveType::TimestamptzNs,
            "string" => PrimitiveType::String,
            "uuid" => PrimitiveType::Uuid,
            "binary" => PrimitiveType::Binary,
            "variant" => PrimitiveType::Variant,
            "unknown" => PrimitiveType::Unknown,
            "geometry" => PrimitiveType::Geometry(String::new()),
            "geography" => PrimitiveType::Geography(String::new()),
            _ => {
                if let Some(args) = inner(s, "decimal(", ')') {
                    let (p, sc) = args.split_once(',')?;
                    let precision: u32 = p.trim().parse().ok()?;
                    let scale: u32 = sc.trim().parse().ok()?;
                    if precision == 0 || precision > 38 || scale > precision {
                        return None;
                    }
                    PrimitiveType::Decimal { precision, scale }
                } else if let Some(len) = inner(s, "fixed[", ']') {
                    PrimitiveType::Fixed(len.trim().parse().ok()?)
                } else if let Some(args) = inner(s, "geometry(", ')') {
                    PrimitiveType::Geometry(args.trim().to_string())
                } else if let Some(args) = inner(s, "geography(", ')') {
                    PrimitiveType::Geography(args.trim().to_string())
                } else {
                    return None;
                }
            }
        })
    }
}

fn inner<'a>(s: &'a str, prefix: &str, close: char) -> Option<&'a str> {
    s.strip_prefix(prefix)?.strip_suffix(close)
}

impl fmt::Display for PrimitiveType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrimitiveType::Boolean => f.write_str("boolean"),
            PrimitiveType::Int => f.write_str("int"),
            PrimitiveType::Long => f.write_str("long"),
            PrimitiveType::Float => f.write_str("float"),
            PrimitiveType::Double => f.write_str("double"),
            PrimitiveType::Decimal { precision, scale } => {
                write!(f, "decimal({precision},{scale})")
            }
            PrimitiveType::Date => f.write_str("date"),
            PrimitiveType::Time => f.write_str("time"),
            PrimitiveType::Timestamp => f.write_str("timestamp"),
            PrimitiveType::Timestamptz => f.write_str("timestamptz"),
            PrimitiveType::TimestampNs => f.write_str("timestamp_ns"),
            PrimitiveType::TimestamptzNs => f.write_str("timestamptz_ns"),
            PrimitiveType::String => f.write_str("string"),
            PrimitiveType::Uuid => f.write_str("uuid"),
            PrimitiveType::Fixed(n) => write!(f, "fixed[{n}]"),
            PrimitiveType::Binary => f.write_str("binary"),
            PrimitiveType::Variant => f.write_str("variant"),
            PrimitiveType::Geometry(c) if c.is_empty() => f.write_str("geometry"),
            PrimitiveType::Geometry(c) => write!(f, "geometry({c})"),
            PrimitiveType::Geography(c) if c.is_empty() => f.write_str("geography"),
            PrimitiveType::Geography(c) => write!(f, "geography({c})"),
            PrimitiveType::Unknown => f.write_str("unknown"),
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Primitive(p) => p.fmt(f),
            Type::Struct(s) => {
                f.write_str("struct<")?;
                for (i, field) in s.fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}: {}", field.name, field.field_type)?;
                }
                f.write_str(">")
            }
            Type::List(l) => write!(f, "list<{}>", l.element),
            Type::Map(m) => write!(f, "map<{}, {}>", m.key, m.value),
        }
    }
}
