//! An Iceberg literal (a default value: `initial-default`, `write-default`) as a one-row Arrow
//! array of its field's type, nested types included (spec: "Default values").

use std::sync::Arc;

use arrow::array::*;
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, FieldRef, Fields};

use crate::spec::arrow_schema::{cast_exact, field_to_arrow, type_to_arrow};
use crate::spec::{Literal, PrimitiveType, Type};

/// A one-row array holding `lit` as type `ty`.
pub fn literal_array(lit: &Literal, ty: &Type) -> Result<ArrayRef, String> {
    let dt = type_to_arrow(ty);
    let bad = || format!("value {lit:?} does not fit {ty}");
    let arr: ArrayRef = match (lit, ty) {
        (Literal::Boolean(b), _) => Arc::new(BooleanArray::from(vec![*b])),
        (Literal::Int(v), _) => Arc::new(Int32Array::from(vec![*v])),
        (Literal::Long(v), _) => Arc::new(Int64Array::from(vec![*v])),
        (Literal::Float(v), _) => Arc::new(Float32Array::from(vec![*v])),
        (Literal::Double(v), _) => Arc::new(Float64Array::from(vec![*v])),
        (Literal::Decimal(v), Type::Primitive(PrimitiveType::Decimal { precision, scale })) => {
            Arc::new(
                Decimal128Array::from(vec![*v])
                    .with_precision_and_scale(*precision as u8, *scale as i8)
                    .map_err(|e| e.to_string())?,
            )
        }
        (Literal::Date(v), _) => Arc::new(Date32Array::from(vec![*v])),
        (Literal::Time(v), _) => Arc::new(Time64MicrosecondArray::from(vec![*v])),
        (
            Literal::Timestamp(v),
            Type::Primitive(PrimitiveType::TimestampNs | PrimitiveType::TimestamptzNs),
        ) => {
            cast_exact(&TimestampNanosecondArray::from(vec![*v]), &dt).map_err(|e| e.to_string())?
        }
        (Literal::Timestamp(v), _) => cast_exact(&TimestampMicrosecondArray::from(vec![*v]), &dt)
            .map_err(|e| e.to_string())?,
        (Literal::String(s), _) => Arc::new(StringArray::from(vec![s.as_str()])),
        (Literal::Uuid(u), _) => Arc::new(
            FixedSizeBinaryArray::try_from_iter(std::iter::once(u.as_slice()))
                .map_err(|e| e.to_string())?,
        ),
        (Literal::Binary(b), Type::Primitive(PrimitiveType::Fixed(_))) => Arc::new(
            FixedSizeBinaryArray::try_from_iter(std::iter::once(b.as_slice()))
                .map_err(|e| e.to_string())?,
        ),
        (Literal::Binary(b), _) => Arc::new(BinaryArray::from(vec![b.as_slice()])),
        // A struct without fields (`_partition` of an unpartitioned table) has no child to
        // carry its length.
        (Literal::Struct(_), Type::Struct(st)) if st.fields.is_empty() => {
            Arc::new(StructArray::new_empty_fields(1, None))
        }
        (Literal::Struct(values), Type::Struct(st)) => {
            let mut fields = Vec::new();
            let mut children = Vec::new();
            for f in &st.fields {
                let v = values
                    .iter()
                    .find(|(id, _)| *id == f.id)
                    .and_then(|(_, v)| v.as_ref());
                children.push(match v {
                    Some(v) => literal_array(v, &f.field_type)?,
                    None => new_null_array(&type_to_arrow(&f.field_type), 1),
                });
                fields.push(Arc::new(field_to_arrow(f)) as FieldRef);
            }
            Arc::new(
                StructArray::try_new(Fields::from(fields), children, None)
                    .map_err(|e| e.to_string())?,
            )
        }
        (Literal::List(items), Type::List(l)) => {
            let parts = items
                .iter()
                .map(|i| match i {
                    Some(v) => literal_array(v, &l.element),
                    None => Ok(new_null_array(&type_to_arrow(&l.element), 1)),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let values = concat_or_empty(&parts, &type_to_arrow(&l.element))?;
            let DataType::List(f) = dt.clone() else {
                return Err(bad());
            };
            Arc::new(
                ListArray::try_new(f, OffsetBuffer::from_lengths([values.len()]), values, None)
                    .map_err(|e| e.to_string())?,
            )
        }
        (Literal::Map(entries), Type::Map(m)) => {
            let DataType::Map(entries_field, sorted) = dt.clone() else {
                return Err(bad());
            };
            let DataType::Struct(entry_fields) = entries_field.data_type().clone() else {
                return Err(bad());
            };
            let keys = entries
                .iter()
                .map(|(k, _)| literal_array(k, &m.key))
                .collect::<Result<Vec<_>, _>>()?;
            let values = entries
                .iter()
                .map(|(_, v)| match v {
                    Some(v) => literal_array(v, &m.value),
                    None => Ok(new_null_array(&type_to_arrow(&m.value), 1)),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let keys = concat_or_empty(&keys, &type_to_arrow(&m.key))?;
            let values = concat_or_empty(&values, &type_to_arrow(&m.value))?;
            let kv = StructArray::try_new(entry_fields, vec![keys, values], None)
                .map_err(|e| e.to_string())?;
            Arc::new(
                MapArray::try_new(
                    entries_field,
                    OffsetBuffer::from_lengths([entries.len()]),
                    kv,
                    None,
                    sorted,
                )
                .map_err(|e| e.to_string())?,
            )
        }
        _ => return Err(bad()),
    };
    if arr.data_type() != &dt {
        return cast_exact(&arr, &dt).map_err(|e| e.to_string());
    }
    Ok(arr)
}

/// One array of all `parts` (one-row arrays of type `dt`), or an empty one.
fn concat_or_empty(parts: &[ArrayRef], dt: &DataType) -> Result<ArrayRef, String> {
    if parts.is_empty() {
        return Ok(new_null_array(dt, 0));
    }
    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
    arrow::compute::concat(&refs).map_err(|e| e.to_string())
}
