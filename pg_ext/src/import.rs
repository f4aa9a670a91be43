//! `IMPORT FOREIGN SCHEMA namespace FROM SERVER s INTO local [OPTIONS (...)]`: one foreign
//! table per Iceberg table of the namespace in the server's warehouse or REST catalog (listed
//! by the core's catalog of either), with `_row_id` and `_last_updated_sequence_number`
//! first, then the columns of the schema read (the current one, or the one of the snapshot the
//! import options select), `NOT NULL` for required fields and `DEFAULT` from `write-default`.
//! Import options `snapshot_id`, `as_of` and `ref` are given to every imported table.

use std::ffi::{CStr, CString};
use std::sync::Arc;

use icefloe_core::catalog::{Catalog, Warehouse};
use icefloe_core::scan::arrow_schema::{field_to_arrow, LAST_UPDATED_SEQ, ROW_ID};
use icefloe_core::spec::{Literal, NestedField, PrimitiveType, Type};
use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::convert::natural_type;
use crate::error::{FdwError, OrReport};
use crate::options;
use crate::pgutil::{self, quote_ident, quote_literal};
use crate::runtime;

/// Longest identifier Postgres keeps (NAMEDATALEN - 1).
const MAX_IDENT: usize = 63;

/// `ImportForeignSchema` callback: the CREATE FOREIGN TABLE statements for the Iceberg tables of
/// the statement's namespace (Postgres applies LIMIT TO / EXCEPT again to what is returned).
#[pg_guard]
pub unsafe extern "C-unwind" fn import_foreign_schema(
    stmt: *mut pg_sys::ImportForeignSchemaStmt,
    server_oid: pg_sys::Oid,
) -> *mut pg_sys::List {
    let commands = import(stmt, server_oid).or_report();
    let mut list: *mut pg_sys::List = std::ptr::null_mut();
    for c in commands {
        if let Ok(c) = CString::new(c) {
            list = pg_sys::lappend(list, pg_sys::pstrdup(c.as_ptr()) as *mut std::ffi::c_void);
        }
    }
    list
}

unsafe fn cstr(p: *const std::os::raw::c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

unsafe fn import(
    stmt: *mut pg_sys::ImportForeignSchemaStmt,
    server_oid: pg_sys::Oid,
) -> Result<Vec<String>, FdwError> {
    let server = pg_sys::GetForeignServer(server_oid);
    let server_opts = options::read_def_list((*server).options);
    let server_name = cstr((*server).servername);
    let user = pg_sys::GetUserId();
    let mapping = pgutil::user_mapping_options(user, server_oid);
    let import_opts = options::read_def_list((*stmt).options);
    for (k, _) in &import_opts {
        if !options::IMPORT_OPTIONS.contains(&k.as_str()) {
            return Err(FdwError::UnknownOption {
                name: k.clone(),
                object: "IMPORT FOREIGN SCHEMA",
                valid: options::IMPORT_OPTIONS.join(", "),
            });
        }
    }
    let selector = options::selector(&import_opts)?;
    let namespace = cstr((*stmt).remote_schema);
    let local_schema = cstr((*stmt).local_schema);
    let catalog_server = options::is_catalog_server(&server_opts);
    let warehouse = options::get(&server_opts, "warehouse");
    if !catalog_server {
        let w = warehouse.ok_or_else(|| {
            FdwError::Options(format!(
                "server {server_name} has no option \"warehouse\" (or \"catalog_uri\") to import from"
            ))
        })?;
        options::check_local_access(w, "warehouse", user)?;
    }
    let ns = options::parse_namespace(&namespace)?;
    let ns_option = ns.to_string();
    let mut probe = options::resolve(
        &vec![
            ("namespace".into(), ns_option.clone()),
            ("table".into(), "x".into()),
        ],
        &server_opts,
        &mapping,
        &server_name,
    )?;
    probe.local_files = options::may_read_server_files(user);
    let caches = crate::fdw::caches_for(&probe);
    // The core's catalog of the server: its REST catalog, or its warehouse.
    let catalog: Arc<dyn Catalog> = match &probe.catalog {
        Some(config) => crate::rest::connected(&probe, config, &caches)?,
        None => Arc::new(Warehouse::new(
            warehouse.unwrap_or_default(),
            options::storage_config(&probe),
            caches,
        )?),
    };
    let source = match warehouse {
        Some(w) if !catalog_server => format!("warehouse {w}"),
        _ => format!("catalog {}", catalog.name()),
    };

    // The tables of the namespace, as the core's warehouse catalog lists them.
    let listed_ns = ns.clone();
    let cat = catalog.clone();
    let tables =
        runtime::block_on_interruptible(async move { cat.list_tables(&listed_ns).await })??;
    if tables.is_empty() {
        return Err(FdwError::Options(format!(
            "namespace {namespace:?} holds no table in {source}"
        )));
    }
    let listed: Vec<String> = list_of_rangevars((*stmt).table_list);
    let wanted = |name: &str| match (*stmt).list_type {
        pg_sys::ImportForeignSchemaType::FDW_IMPORT_SCHEMA_LIMIT_TO => {
            listed.iter().any(|n| n == name)
        }
        pg_sys::ImportForeignSchemaType::FDW_IMPORT_SCHEMA_EXCEPT => {
            !listed.iter().any(|n| n == name)
        }
        _ => true,
    };
    let mut out = Vec::new();
    for ident in tables.iter().filter(|t| wanted(&t.name)) {
        let name = &ident.name;
        let cat = catalog.clone();
        let id = ident.clone();
        let table = runtime::block_on_interruptible(async move { cat.load_table(&id).await })?
            .map_err(crate::error::from_core)?;
        let snapshot = table.select(&selector)?;
        let schema = table.read_schema(&selector, snapshot);
        let mut cols = vec![
            format!("{} bigint", quote_ident(ROW_ID)),
            format!("{} bigint", quote_ident(LAST_UPDATED_SEQ)),
        ];
        for f in schema.columns() {
            cols.push(column_sql(f));
        }
        // Namespace and table apart: either may hold dots.
        let mut topts = vec![
            format!("namespace {}", quote_literal(&ns_option)),
            format!("\"table\" {}", quote_literal(name)),
        ];
        for (k, v) in &import_opts {
            // as_of is stored as the instant it names (milliseconds since the epoch).
            let v = match (k.as_str(), &selector) {
                ("as_of", icefloe_core::SnapshotSelector::AsOf(ms)) => ms.to_string(),
                _ => v.clone(),
            };
            topts.push(format!("{} {}", quote_ident(k), quote_literal(&v)));
        }
        out.push(format!(
            "CREATE FOREIGN TABLE {}.{} (\n  {}\n) SERVER {} OPTIONS ({})",
            quote_ident(&local_schema),
            quote_ident(name),
            cols.join(",\n  "),
            quote_ident(&server_name),
            topts.join(", ")
        ));
    }
    Ok(out)
}

unsafe fn list_of_rangevars(list: *mut pg_sys::List) -> Vec<String> {
    let mut out = Vec::new();
    if list.is_null() {
        return out;
    }
    for i in 0..(*list).length {
        let rv = pg_sys::list_nth(list, i) as *mut pg_sys::RangeVar;
        if !rv.is_null() {
            out.push(cstr((*rv).relname));
        }
    }
    out
}

/// One column definition: name, type, NOT NULL, DEFAULT, and the Iceberg name as an option
/// when Postgres would truncate it.
fn column_sql(f: &NestedField) -> String {
    let arrow = field_to_arrow(f);
    let typid = natural_type(&arrow);
    let typmod = match &f.field_type {
        Type::Primitive(PrimitiveType::Decimal { precision, scale }) => {
            ((*precision as i32) << 16 | *scale as i32) + 4
        }
        _ => -1,
    };
    let mut sql = format!(
        "{} {}",
        quote_ident(&f.name),
        pgutil::format_type(typid, typmod)
    );
    if f.name.len() > MAX_IDENT {
        sql.push_str(&format!(
            " OPTIONS (column_name {})",
            quote_literal(&f.name)
        ));
    }
    if f.required {
        sql.push_str(" NOT NULL");
    }
    if let Some(d) = f
        .write_default
        .as_ref()
        .and_then(|d| default_sql(d, &f.field_type))
    {
        sql.push_str(" DEFAULT ");
        sql.push_str(&d);
    }
    sql
}

/// A write-default as a SQL expression of the column's Postgres type.
fn default_sql(l: &Literal, ty: &Type) -> Option<String> {
    let Type::Primitive(p) = ty else {
        return Some(format!(
            "{}::jsonb",
            quote_literal(&literal_json(l, ty)?.to_string())
        ));
    };
    use PrimitiveType as P;
    let cast = |text: String, pg: &str| format!("{}::{pg}", quote_literal(&text));
    Some(match (l, p) {
        (Literal::Boolean(b), _) => b.to_string(),
        (Literal::Int(v), _) => v.to_string(),
        (Literal::Long(v), _) => v.to_string(),
        (Literal::Float(v), _) => cast(format!("{v:?}"), "real"),
        (Literal::Double(v), _) => cast(format!("{v:?}"), "double precision"),
        (Literal::Decimal(v), P::Decimal { precision, scale }) => {
            let mut s = Vec::new();
            icefloe_core::encode::format::push_decimal(&mut s, *v, *scale as i8);
            let s = String::from_utf8(s).ok()?;
            cast(s, &format!("numeric({precision},{scale})"))
        }
        (Literal::Date(_) | Literal::Time(_) | Literal::Timestamp(_), _) => {
            let text = literal_json(l, ty)?;
            let text = text.as_str()?.replace('T', " ");
            let pg = match p {
                P::Date => "date",
                P::Time => "time",
                P::Timestamp | P::TimestampNs => "timestamp",
                _ => "timestamptz",
            };
            cast(text, pg)
        }
        (Literal::String(s), _) => cast(s.clone(), "text"),
        (Literal::Uuid(_), _) => cast(literal_json(l, ty)?.as_str()?.to_string(), "uuid"),
        (Literal::Binary(b), _) => cast(format!("\\x{}", hex::encode(b)), "bytea"),
        _ => return None,
    })
}

/// A default value as the text the input function of its column's type reads; `None` for
/// values without one.
pub(crate) fn literal_text(l: &Literal, ty: &Type) -> Option<String> {
    if let (Literal::Binary(b), _) = (l, ty) {
        return Some(format!("\\x{}", hex::encode(b)));
    }
    let j = literal_json(l, ty)?;
    Some(match (&j, ty) {
        (serde_json::Value::String(s), Type::Primitive(p)) => match p {
            PrimitiveType::Date
            | PrimitiveType::Time
            | PrimitiveType::Timestamp
            | PrimitiveType::Timestamptz
            | PrimitiveType::TimestampNs
            | PrimitiveType::TimestamptzNs => s.replace('T', " "),
            PrimitiveType::Binary | PrimitiveType::Fixed(_) => return None,
            _ => s.clone(),
        },
        _ => j.to_string(),
    })
}

/// A default value in the JSON encoding the scan uses for the same type.
fn literal_json(l: &Literal, ty: &Type) -> Option<serde_json::Value> {
    use serde_json::Value as J;
    Some(match (l, ty) {
        (Literal::Struct(fields), Type::Struct(st)) => {
            let mut o = serde_json::Map::new();
            for f in &st.fields {
                let v = fields
                    .iter()
                    .find(|(id, _)| *id == f.id)
                    .and_then(|(_, v)| v.as_ref());
                o.insert(
                    f.name.clone(),
                    match v {
                        Some(v) => literal_json(v, &f.field_type)?,
                        None => J::Null,
                    },
                );
            }
            J::Object(o)
        }
        (Literal::List(items), Type::List(lt)) => J::Array(
            items
                .iter()
                .map(|i| match i {
                    Some(v) => literal_json(v, &lt.element),
                    None => Some(J::Null),
                })
                .collect::<Option<_>>()?,
        ),
        (Literal::Map(entries), Type::Map(mt)) => J::Array(
            entries
                .iter()
                .map(|(k, v)| {
                    let mut o = serde_json::Map::new();
                    o.insert("key".into(), literal_json(k, &mt.key)?);
                    o.insert(
                        "value".into(),
                        match v {
                            Some(v) => literal_json(v, &mt.value)?,
                            None => J::Null,
                        },
                    );
                    Some(J::Object(o))
                })
                .collect::<Option<_>>()?,
        ),
        (_, Type::Primitive(p)) => {
            // Encode through a one-value Arrow array so the text matches the scan's encoding.
            let arrow = icefloe_core::scan::arrow_schema::primitive_to_arrow(p);
            let array = literal_array(l, &arrow)?;
            let field = field_to_arrow(&NestedField {
                id: 0,
                name: "v".into(),
                required: false,
                field_type: ty.clone(),
                doc: None,
                initial_default: None,
                write_default: None,
            });
            let s = icefloe_core::encode::value::value_to_json(array.as_ref(), &field, 0).ok()?;
            serde_json::from_str(&s).ok()?
        }
        _ => return None,
    })
}

/// A one-element Arrow array holding a primitive literal.
fn literal_array(l: &Literal, dt: &arrow::datatypes::DataType) -> Option<arrow::array::ArrayRef> {
    use arrow::array::*;
    use arrow::datatypes::DataType as D;
    use std::sync::Arc;
    Some(match (l, dt) {
        (Literal::Date(d), D::Date32) => Arc::new(Date32Array::from(vec![*d])),
        (Literal::Time(t), D::Time64(_)) => Arc::new(Time64MicrosecondArray::from(vec![*t])),
        (Literal::Timestamp(t), D::Timestamp(arrow::datatypes::TimeUnit::Nanosecond, tz)) => {
            Arc::new(TimestampNanosecondArray::from(vec![*t]).with_timezone_opt(tz.clone()))
        }
        (Literal::Timestamp(t), D::Timestamp(_, tz)) => {
            Arc::new(TimestampMicrosecondArray::from(vec![*t]).with_timezone_opt(tz.clone()))
        }
        (Literal::Uuid(u), D::FixedSizeBinary(16)) => {
            Arc::new(FixedSizeBinaryArray::try_from_iter(std::iter::once(u.to_vec())).ok()?)
        }
        (Literal::Boolean(b), _) => Arc::new(BooleanArray::from(vec![*b])),
        (Literal::Int(v), _) => Arc::new(Int32Array::from(vec![*v])),
        (Literal::Long(v), _) => Arc::new(Int64Array::from(vec![*v])),
        (Literal::Float(v), _) => Arc::new(Float32Array::from(vec![*v])),
        (Literal::Double(v), _) => Arc::new(Float64Array::from(vec![*v])),
        (Literal::String(s), _) => Arc::new(StringArray::from(vec![s.as_str()])),
        (Literal::Binary(b), _) => Arc::new(BinaryArray::from(vec![b.as_slice()])),
        (Literal::Decimal(v), D::Decimal128(p, s)) => Arc::new(
            Decimal128Array::from(vec![*v])
                .with_precision_and_scale(*p, *s)
                .ok()?,
        ),
        _ => return None,
    })
}
