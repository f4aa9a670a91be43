//! A single Iceberg value (a field's `initial-default` or `write-default`, spec: "Default
//! values") in the JSON encoding a scan gives the same type ([`super::value`]): a front-end that
//! shows a default beside the values it reads (a column default of an imported table) shows it
//! the same way.

use serde_json::Value as Json;

use crate::error::{Error, Result};
use crate::spec::arrow_schema::field_to_arrow;
use crate::spec::literal_array::literal_array;
use crate::spec::{Literal, NestedField, Type};

/// `value` of type `ty` as a JSON value. A primitive is encoded exactly as a scan encodes it
/// ([`super::value::value_to_json`]: decimals, dates, times, timestamps, UUIDs and binary as
/// strings). A struct is an object of its fields in field order (a field the value lacks is
/// `null`), a list an array, a map an array of `{"key":…,"value":…}` objects in the value's
/// own entry order. Errors: [`Error::Output`] when the value does not fit the type.
pub fn literal_to_json(value: &Literal, ty: &Type) -> Result<Json> {
    let misfit = || Error::Output(format!("value {value:?} does not fit {ty}"));
    Ok(match (value, ty) {
        (Literal::Struct(fields), Type::Struct(st)) => {
            let mut o = serde_json::Map::new();
            for f in &st.fields {
                let v = fields
                    .iter()
                    .find(|(id, _)| *id == f.id)
                    .and_then(|(_, v)| v.as_ref());
                let v = match v {
                    Some(v) => literal_to_json(v, &f.field_type)?,
                    None => Json::Null,
                };
                o.insert(f.name.clone(), v);
            }
            Json::Object(o)
        }
        (Literal::List(items), Type::List(lt)) => Json::Array(
            items
                .iter()
                .map(|i| match i {
                    Some(v) => literal_to_json(v, &lt.element),
                    None => Ok(Json::Null),
                })
                .collect::<Result<_>>()?,
        ),
        (Literal::Map(entries), Type::Map(mt)) => Json::Array(
            entries
                .iter()
                .map(|(k, v)| {
                    let mut o = serde_json::Map::new();
                    o.insert("key".into(), literal_to_json(k, &mt.key)?);
                    let v = match v {
                        Some(v) => literal_to_json(v, &mt.value)?,
                        None => Json::Null,
                    };
                    o.insert("value".into(), v);
                    Ok(Json::Object(o))
                })
                .collect::<Result<_>>()?,
        ),
        (_, Type::Primitive(_)) => {
            // Through a one-value Arrow array, so the text is the scan's encoding.
            let array = literal_array(value, ty).map_err(|_| misfit())?;
            let field = field_to_arrow(&NestedField::optional(0, "v", ty.clone()));
            let text = super::value::value_to_json(array.as_ref(), &field, 0)?;
            serde_json::from_str(&text).map_err(|e| Error::Output(e.to_string()))?
        }
        _ => return Err(misfit()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{ListType, MapType, PrimitiveType as P, StructType};

    fn json(value: &Literal, ty: &Type) -> String {
        literal_to_json(value, ty).expect("fits").to_string()
    }

    #[test]
    fn primitives_as_a_scan_encodes_them() {
        let p = Type::Primitive;
        assert_eq!(json(&Literal::Int(-7), &p(P::Int)), "-7");
        assert_eq!(json(&Literal::Double(0.5), &p(P::Double)), "0.5");
        let dec = p(P::Decimal {
            precision: 9,
            scale: 2,
        });
        assert_eq!(json(&Literal::Decimal(1230), &dec), r#""12.30""#);
        assert_eq!(json(&Literal::Date(19000), &p(P::Date)), r#""2022-01-08""#);
        let ts = Literal::Timestamp(1_700_000_000_123_456);
        assert_eq!(
            json(&ts, &p(P::Timestamp)),
            r#""2023-11-14T22:13:20.123456""#
        );
        assert_eq!(
            json(&ts, &p(P::Timestamptz)),
            r#""2023-11-14T22:13:20.123456+00:00""#
        );
        let uuid = Literal::Uuid([
            0xf7, 0x9c, 0x3e, 0x09, 0x67, 0x7c, 0x4b, 0xbd, 0xa4, 0x79, 0x3f, 0x34, 0x9c, 0xb7,
            0x85, 0xe7,
        ]);
        assert_eq!(
            json(&uuid, &p(P::Uuid)),
            r#""f79c3e09-677c-4bbd-a479-3f349cb785e7""#
        );
        assert_eq!(
            json(&Literal::Binary(vec![0x00, 0xff]), &p(P::Binary)),
            r#""00ff""#
        );
        assert_eq!(
            json(&Literal::String("a\"b".into()), &p(P::String)),
            r#""a\"b""#
        );
    }

    #[test]
    fn nested_values_keep_field_and_entry_order() {
        let st = Type::Struct(StructType {
            fields: vec![
                NestedField::optional(2, "z", Type::Primitive(P::Long)),
                NestedField::optional(3, "a", Type::Primitive(P::Date)),
            ],
        });
        let v = Literal::Struct(vec![(2, Some(Literal::Long(5)))]);
        assert_eq!(json(&v, &st), r#"{"z":5,"a":null}"#);
        let list = Type::List(ListType {
            element_id: 4,
            element_required: false,
            element: Box::new(Type::Primitive(P::Int)),
        });
        let v = Literal::List(vec![Some(Literal::Int(1)), None]);
        assert_eq!(json(&v, &list), "[1,null]");
        let map = Type::Map(MapType {
            key_id: 5,
            key: Box::new(Type::Primitive(P::String)),
            value_id: 6,
            value_required: false,
            value: Box::new(Type::Primitive(P::Int)),
        });
        let v = Literal::Map(vec![
            (Literal::String("b".into()), Some(Literal::Int(1))),
            (Literal::String("a".into()), None),
        ]);
        assert_eq!(
            json(&v, &map),
            r#"[{"key":"b","value":1},{"key":"a","value":null}]"#
        );
    }

    #[test]
    fn a_value_of_another_type_is_an_error() {
        let err = literal_to_json(&Literal::String("x".into()), &Type::Primitive(P::Date));
        assert!(matches!(err, Err(Error::Output(_))), "{err:?}");
        let st = Type::Struct(StructType { fields: vec![] });
        assert!(literal_to_json(&Literal::List(vec![]), &st).is_err());
    }
}
