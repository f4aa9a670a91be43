//! The Iceberg type of a column must agree with the type its data file stores (spec: "Parquet"
//! type mapping, "Schema Evolution"): a column is read as written or through a promotion the
//! spec allows (`int`→`long`, `float`→`double`, decimal precision widening, and in format
//! version 3 `date`→`timestamp`/`timestamp_ns`). Anything else would read as NULLs or as
//! reinterpreted values, so it is refused. Checked on the Arrow schema the Parquet reader
//! derives from the file's physical and logical types, before any row is read.

use arrow::datatypes::{DataType, Field, Fields, TimeUnit};

use crate::spec::field_lookup::{find_field, mapped_children};
use crate::spec::name_mapping::{lookup, MappedField};
use crate::spec::{PrimitiveType, Type};

/// What the check needs to know about the table and file.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// The table's format version (promotions from `date` need 3).
    pub format_version: i64,
    /// Whether the file stores some column as Parquet INT96, which reads as nanosecond
    /// timestamps and is a legal encoding of `timestamp`/`timestamptz` (migrated tables).
    pub has_int96: bool,
}

/// Checks that file column `field` can be read as Iceberg type `ty`, nested fields included.
/// The error names the column, its field id, both types and the rule.
pub fn check_column(
    field: &Field,
    id: i32,
    ty: &Type,
    mapping: Option<&[MappedField]>,
    rules: Rules,
) -> Result<(), String> {
    check(
        field,
        ty,
        mapping,
        rules,
        &format!("{} (field id {id})", field.name()),
    )
}

/// Checks every column a task reads from data file `path`: `parquet` is its Parquet schema
/// (`None` for Avro and ORC files), `roots` pairs each needed field id with its index among
/// the file's top-level `file_fields`; `type_of` gives the Iceberg type of an id. Also refuses a file that carries the position delete columns (`file_path`, `pos`
/// by their reserved ids): the manifest says data, the file says delete file.
pub fn check_data_file(
    parquet: Option<&parquet::schema::types::SchemaDescriptor>,
    file_fields: &Fields,
    roots: &[(i32, usize)],
    type_of: impl Fn(i32) -> Option<Type>,
    mapping: Option<&[MappedField]>,
    format_version: i64,
    path: &str,
) -> crate::Result<()> {
    use crate::spec::arrow_schema::{field_id, DELETE_FILE_PATH_FIELD_ID, DELETE_POS_FIELD_ID};
    let ids: Vec<Option<i32>> = file_fields.iter().map(|f| field_id(f)).collect();
    if ids.contains(&Some(DELETE_FILE_PATH_FIELD_ID)) && ids.contains(&Some(DELETE_POS_FIELD_ID)) {
        return Err(crate::Error::data_file(
            path,
            "is a position delete file (it has the file_path and pos columns) but its manifest entry says data file",
        ));
    }
    let rules = Rules {
        format_version,
        has_int96: parquet.is_some_and(|p| {
            p.columns()
                .iter()
                .any(|c| c.physical_type() == parquet::basic::Type::INT96)
        }),
    };
    for (id, i) in roots {
        let Some(ty) = type_of(*id) else { continue };
        let children = mapping.and_then(|m| {
            m.iter()
                .find(|mf| mf.field_id == Some(*id))
                .map(|mf| mf.fields.as_slice())
        });
        check_column(&file_fields[*i], *id, &ty, children, rules)
            .map_err(|r| crate::Error::data_file(path, r))?;
    }
    Ok(())
}

fn check(
    field: &Field,
    ty: &Type,
    mapping: Option<&[MappedField]>,
    rules: Rules,
    name: &str,
) -> Result<(), String> {
    let dt = field.data_type();
    let mismatch = |expected: &str| {
        Err(format!(
            "column {name} is {dt} in the file but the schema says {ty}: {expected}"
        ))
    };
    match ty {
        Type::Primitive(p) => {
            if primitive_ok(dt, p, rules) {
                Ok(())
            } else {
                mismatch(
                    "the Iceberg type must match the Parquet type, or be a promotion the spec allows \
                     (int->long, float->double, decimal precision widening, date->timestamp in format version 3)",
                )
            }
        }
        Type::Struct(st) => {
            let DataType::Struct(children) = dt else {
                return mismatch("a struct must be a Parquet group");
            };
            check_children(children, &st.fields, mapping, rules, name)
        }
        Type::List(l) => {
            let element = match dt {
                DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => f,
                _ => return mismatch("a list must be a Parquet LIST group"),
            };
            let sub = mapping
                .and_then(|m| lookup(m, "element"))
                .map(|m| m.fields.as_slice())
                .or(mapping);
            check(element, &l.element, sub, rules, &format!("{name}.element"))
        }
        Type::Map(m) => {
            let DataType::Map(entries, _) = dt else {
                return mismatch("a map must be a Parquet MAP group");
            };
            let DataType::Struct(kv) = entries.data_type() else {
                return mismatch("a map's entries must be key/value groups");
            };
            if kv.len() != 2 {
                return mismatch("a map's entries must be key/value groups");
            }
            let sub = |n: &str| {
                mapping
                    .and_then(|mm| lookup(mm, n))
                    .map(|x| x.fields.as_slice())
            };
            check(&kv[0], &m.key, sub("key"), rules, &format!("{name}.key"))?;
            check(
                &kv[1],
                &m.value,
                sub("value"),
                rules,
                &format!("{name}.value"),
            )
        }
    }
}

fn check_children(
    file: &Fields,
    fields: &[crate::spec::NestedField],
    mapping: Option<&[MappedField]>,
    rules: Rules,
    name: &str,
) -> Result<(), String> {
    for f in fields {
        if let Some(i) = find_field(file, f.id, mapping) {
            check(
                &file[i],
                &f.field_type,
                mapped_children(mapping, &file[i]),
                rules,
                &format!("{name}.{} (field id {})", f.name, f.id),
            )?;
        }
    }
    Ok(())
}

fn is_decimal(dt: &DataType) -> Option<(u8, i8)> {
    match dt {
        DataType::Decimal32(p, s)
        | DataType::Decimal64(p, s)
        | DataType::Decimal128(p, s)
        | DataType::Decimal256(p, s) => Some((*p, *s)),
        _ => None,
    }
}

/// Whether a file column of Arrow type `dt` reads as `p` by the spec's rules.
fn primitive_ok(dt: &DataType, p: &PrimitiveType, rules: Rules) -> bool {
    use DataType as D;
    let v3 = rules.format_version >= 3;
    let ts = |unit: TimeUnit, zoned: bool| match dt {
        D::Timestamp(u, tz) => {
            *u == unit && tz.is_some() == zoned
                || (rules.has_int96 && *u == TimeUnit::Nanosecond && unit == TimeUnit::Microsecond)
        }
        D::Date32 => v3,
        _ => false,
    };
    match p {
        PrimitiveType::Boolean => matches!(dt, D::Boolean),
        PrimitiveType::Int => matches!(dt, D::Int8 | D::Int16 | D::Int32),
        PrimitiveType::Long => matches!(dt, D::Int8 | D::Int16 | D::Int32 | D::Int64),
        PrimitiveType::Float => matches!(dt, D::Float32),
        PrimitiveType::Double => matches!(dt, D::Float32 | D::Float64),
        PrimitiveType::Decimal { precision, scale } => is_decimal(dt)
            .is_some_and(|(fp, fs)| fs as i64 == *scale as i64 && fp as u32 <= *precision),
        PrimitiveType::Date => matches!(dt, D::Date32),
        PrimitiveType::Time => matches!(dt, D::Time64(TimeUnit::Microsecond)),
        PrimitiveType::Timestamp => ts(TimeUnit::Microsecond, false),
        PrimitiveType::Timestamptz => ts(TimeUnit::Microsecond, true),
        PrimitiveType::TimestampNs => ts(TimeUnit::Nanosecond, false),
        PrimitiveType::TimestamptzNs => ts(TimeUnit::Nanosecond, true),
        // Strings written without the STRING annotation (plain BYTE_ARRAY) are read as UTF-8,
        // which is validated on read.
        PrimitiveType::String => matches!(
            dt,
            D::Utf8 | D::LargeUtf8 | D::Utf8View | D::Binary | D::LargeBinary | D::BinaryView
        ),
        PrimitiveType::Uuid => matches!(dt, D::FixedSizeBinary(16)),
        PrimitiveType::Fixed(n) => matches!(dt, D::FixedSizeBinary(l) if *l as u64 == *n),
        PrimitiveType::Binary | PrimitiveType::Geometry(_) | PrimitiveType::Geography(_) => {
            matches!(dt, D::Binary | D::LargeBinary | D::BinaryView)
        }
        PrimitiveType::Variant => matches!(dt, D::Struct(_)),
        // Always null, whatever the file holds.
        PrimitiveType::Unknown => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(dt: DataType, p: PrimitiveType, fv: i64) -> bool {
        let rules = Rules {
            format_version: fv,
            has_int96: false,
        };
        check_column(
            &Field::new("c", dt, true),
            1,
            &Type::Primitive(p),
            None,
            rules,
        )
        .is_ok()
    }

    #[test]
    fn promotions_the_spec_allows_pass_and_others_fail() {
        use PrimitiveType as P;
        assert!(ok(DataType::Int32, P::Long, 2));
        assert!(ok(DataType::Float32, P::Double, 2));
        let dec = |p, s| P::Decimal {
            precision: p,
            scale: s,
        };
        assert!(ok(DataType::Decimal128(10, 2), dec(16, 2), 2));
        assert!(!ok(DataType::Decimal128(16, 2), dec(10, 2), 2));
        assert!(!ok(DataType::Decimal128(10, 2), dec(16, 3), 2));
        assert!(ok(DataType::Date32, P::Timestamp, 3));
        assert!(!ok(DataType::Date32, P::Timestamp, 2));
        assert!(!ok(DataType::Utf8, P::Date, 3));
        assert!(!ok(DataType::Utf8, P::Boolean, 3));
        assert!(!ok(DataType::Int64, P::Boolean, 3));
        assert!(!ok(DataType::Int64, P::Int, 3));
        assert!(!ok(DataType::Int64, P::Timestamp, 3));
        let us_utc = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        assert!(ok(us_utc.clone(), P::Timestamptz, 3));
        assert!(!ok(us_utc, P::TimestamptzNs, 3));
        assert!(!ok(DataType::Float64, P::Float, 3));
    }
}
