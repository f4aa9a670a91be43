//! Iceberg schema → Arrow schema, the shape every scan produces. Every field carries its
//! Iceberg field id as `PARQUET:field_id` (so Parquet output keeps ids); types Arrow cannot name
//! (uuid, variant, geometry, geography) also carry `iceberg.type`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Fields, Schema as ArrowSchema, TimeUnit};

use super::{NestedField, PrimitiveType, Type};

/// Field-metadata key holding the Iceberg field id.
pub const FIELD_ID_KEY: &str = "PARQUET:field_id";
/// Field-metadata key holding the Iceberg type name where Arrow's type does not say it.
pub const ICEBERG_TYPE_KEY: &str = "iceberg.type";
/// Reserved field id of `_row_id` (spec: "Reserved Field IDs").
pub const ROW_ID_FIELD_ID: i32 = 2147483540;
/// Reserved field id of `_last_updated_sequence_number`.
pub const LAST_UPDATED_SEQ_FIELD_ID: i32 = 2147483539;
/// Reserved field id of the position delete file column `file_path`.
pub const DELETE_FILE_PATH_FIELD_ID: i32 = 2147483546;
/// Reserved field id of the position delete file column `pos`.
pub const DELETE_POS_FIELD_ID: i32 = 2147483545;
/// Name of the `_row_id` column.
pub const ROW_ID: &str = "_row_id";
/// Name of the `_last_updated_sequence_number` column.
pub const LAST_UPDATED_SEQ: &str = "_last_updated_sequence_number";

/// The Arrow type a primitive reads as. Timestamps with zone are UTC, spelled `+00:00`.
pub fn primitive_to_arrow(p: &PrimitiveType) -> DataType {
    let utc = || Some(Arc::from("+00:00"));
    match p {
        PrimitiveType::Boolean => DataType::Boolean,
        PrimitiveType::Int => DataType::Int32,
        PrimitiveType::Long => DataType::Int64,
        PrimitiveType::Float => DataType::Float32,
        PrimitiveType::Double => DataType::Float64,
        PrimitiveType::Decimal { precision, scale } => {
            DataType::Decimal128(*precision as u8, *scale as i8)
        }
        PrimitiveType::Date => DataType::Date32,
        PrimitiveType::Time => DataType::Time64(TimeUnit::Microsecond),
        PrimitiveType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
        PrimitiveType::Timestamptz => DataType::Timestamp(TimeUnit::Microsecond, utc()),
        PrimitiveType::TimestampNs => DataType::Timestamp(TimeUnit::Nanosecond, None),
        PrimitiveType::TimestamptzNs => DataType::Timestamp(TimeUnit::Nanosecond, utc()),
        PrimitiveType::String | PrimitiveType::Variant => DataType::Utf8,
        PrimitiveType::Uuid => DataType::FixedSizeBinary(16),
        PrimitiveType::Fixed(n) => DataType::FixedSizeBinary(*n as i32),
        PrimitiveType::Binary | PrimitiveType::Geometry(_) | PrimitiveType::Geography(_) => {
            DataType::Binary
        }
        PrimitiveType::Unknown => DataType::Null,
    }
}

/// The Arrow type of any Iceberg type.
pub fn type_to_arrow(t: &Type) -> DataType {
    match t {
        Type::Primitive(p) => primitive_to_arrow(p),
        Type::Struct(s) => DataType::Struct(Fields::from(
            s.fields.iter().map(field_to_arrow).collect::<Vec<_>>(),
        )),
        Type::List(l) => DataType::List(Arc::new(with_id(
            Field::new("element", type_to_arrow(&l.element), !l.element_required),
            l.element_id,
            &l.element,
        ))),
        Type::Map(m) => {
            let entries = Field::new(
                "key_value",
                DataType::Struct(Fields::from(vec![
                    with_id(
                        Field::new("key", type_to_arrow(&m.key), false),
                        m.key_id,
                        &m.key,
                    ),
                    with_id(
                        Field::new("value", type_to_arrow(&m.value), !m.value_required),
                        m.value_id,
                        &m.value,
                    ),
                ])),
                false,
            );
            DataType::Map(Arc::new(entries), false)
        }
    }
}

/// The Arrow field of a struct field. Every field is nullable in Arrow: a required field may
/// still read as null where its parent struct is null.
pub fn field_to_arrow(f: &NestedField) -> Field {
    with_id(
        Field::new(&f.name, type_to_arrow(&f.field_type), true),
        f.id,
        &f.field_type,
    )
}

fn with_id(field: Field, id: i32, t: &Type) -> Field {
    let mut md = HashMap::from([(FIELD_ID_KEY.to_string(), id.to_string())]);
    if let Type::Primitive(
        p @ (PrimitiveType::Uuid
        | PrimitiveType::Variant
        | PrimitiveType::Geometry(_)
        | PrimitiveType::Geography(_)
        | PrimitiveType::Unknown),
    ) = t
    {
        md.insert(ICEBERG_TYPE_KEY.to_string(), p.to_string());
    }
    field.with_metadata(md)
}

/// The two lineage columns, `_row_id` then `_last_updated_sequence_number`, both `long`.
pub fn lineage_fields() -> [Field; 2] {
    let f = |name: &str, id: i32| {
        Field::new(name, DataType::Int64, true)
            .with_metadata(HashMap::from([(FIELD_ID_KEY.to_string(), id.to_string())]))
    };
    [
        f(ROW_ID, ROW_ID_FIELD_ID),
        f(LAST_UPDATED_SEQ, LAST_UPDATED_SEQ_FIELD_ID),
    ]
}

/// The Arrow schema of a scan: lineage columns first when asked for, then the projected fields.
pub fn scan_schema(fields: &[NestedField], lineage: bool) -> Arc<ArrowSchema> {
    let mut out: Vec<Field> = Vec::new();
    if lineage {
        out.extend(lineage_fields());
    }
    out.extend(fields.iter().map(field_to_arrow));
    Arc::new(ArrowSchema::new(out))
}

/// The Iceberg field id an Arrow field carries, if any.
pub fn field_id(f: &Field) -> Option<i32> {
    f.metadata().get(FIELD_ID_KEY).and_then(|v| v.parse().ok())
}

/// Casts `arr` to `to`, failing where a value does not fit (an overflow, a date past the range
/// of `timestamp_ns`, bytes that are not UTF-8): Arrow's default cast would give NULL there.
pub fn cast_exact(
    arr: &dyn arrow::array::Array,
    to: &arrow::datatypes::DataType,
) -> Result<arrow::array::ArrayRef, arrow::error::ArrowError> {
    let opts = arrow::compute::CastOptions {
        safe: false,
        ..Default::default()
    };
    arrow::compute::cast_with_options(arr, to, &opts)
}
