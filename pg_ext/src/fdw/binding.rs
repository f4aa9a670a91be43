//! A foreign table's columns bound to a read of one snapshot: which attributes a query uses,
//! where each column's values come from (the core's [`ColumnSource`]: lineage, a column of
//! the schema read, a metadata column, or a field absent from it, read as a constant), the
//! checks of declared types and NOT NULL, and which columns conditions can be pushed on.

use std::collections::HashMap;
use std::ffi::CStr;

use icefloe_core::encode::literal::literal_to_json;
use icefloe_core::scan::column_source::ColumnSource;
use icefloe_core::scan::projection::Projection;
use icefloe_core::spec::{Literal, PrimitiveType, Snapshot, Type};
use icefloe_core::{Scan, Table};
use pgrx::pg_sys;
use pgrx::PgTupleDesc;

use super::table::{catalog_options, open_table, open_unpinned, resolve_table};
use crate::convert::{plan_kind, ColumnPlan, Kind};
use crate::error::FdwError;
use crate::options::{self, Resolved};
use crate::pgutil;
use crate::quals::PushColumn;

/// The attribute numbers that expressions `exprs` and conditions `quals` use of range-table
/// entry `relid`; `None` when a whole-row reference needs every column.
pub(super) unsafe fn used_attrs(
    exprs: *mut pg_sys::List,
    quals: *mut pg_sys::List,
    relid: u32,
) -> Option<Vec<i32>> {
    let mut attrs: *mut pg_sys::Bitmapset = std::ptr::null_mut();
    pg_sys::pull_varattnos(exprs as *mut pg_sys::Node, relid, &mut attrs);
    pg_sys::pull_varattnos(quals as *mut pg_sys::Node, relid, &mut attrs);
    let mut used = Vec::new();
    let mut i = -1;
    loop {
        i = pg_sys::bms_next_member(attrs, i);
        if i < 0 {
            break;
        }
        let attno = i + pg_sys::FirstLowInvalidHeapAttributeNumber;
        if attno == 0 {
            return None;
        } else if attno > 0 {
            used.push(attno);
        }
    }
    Some(used)
}

/// Which foreign table columns the plan uses (1-based attnums); `None` = all.
pub(super) unsafe fn used_attnums(plan: *mut pg_sys::ForeignScan) -> Option<Vec<i32>> {
    let private = (*plan).fdw_private;
    if private.is_null() || (*private).length < 1 {
        return None;
    }
    let used = pg_sys::list_nth(private, 0) as *mut pg_sys::List;
    let mut out = Vec::new();
    if !used.is_null() {
        for i in 0..(*used).length {
            let a = pg_sys::list_nth_int(used, i);
            if a == 0 {
                return None;
            }
            out.push(a);
        }
    }
    Some(out)
}

/// A foreign table prepared for reading one snapshot: checked column plans and what
/// conditions can be pushed.
pub(super) struct Prepared {
    pub(super) resolved: Resolved,
    pub(super) table: Table,
    pub(super) snapshot: Option<Snapshot>,
    pub(super) scan: Scan,
    /// What built `scan`, to build it again with row-group filters once the conditions'
    /// parameters are known.
    pub(super) builder: icefloe_core::ScanBuilder,
    pub(super) plans: Vec<ColumnPlan>,
    /// Columns absent from the snapshot's schema that read as a constant (0-based index).
    pub(super) constants: Vec<(usize, pg_sys::Datum)>,
    pub(super) push_columns: HashMap<i16, PushColumn>,
}

/// Resolves, opens (pinned, or metadata file `metadata_file` when given) and checks a
/// foreign table for a scan as role `user` of the columns `used` (1-based; `None` = all). Errors: the user may not read the location, a
/// column is unknown, a declared type cannot hold the Iceberg values exactly, or a NOT NULL
/// column could read NULL.
pub(super) unsafe fn prepare(
    relid: pg_sys::Oid,
    rd_att: pg_sys::TupleDesc,
    used: Option<&[i32]>,
    user: pg_sys::Oid,
    metadata_file: Option<&str>,
) -> Result<Prepared, FdwError> {
    let relname = relation_name(relid);
    let opts = catalog_options(relid, user);
    let resolved = resolve_table(&opts, user)?;
    let table = match metadata_file {
        Some(m) => open_unpinned(&resolved, m)?,
        None => open_table(&resolved)?,
    };
    let tupdesc = PgTupleDesc::from_pg_unchecked(rd_att);
    let natts = tupdesc.len();

    // The snapshot and the schema the read uses (the core's rule: current and branch reads
    // use the current schema, snapshot/tag/time reads the snapshot's).
    let snapshot = table.select(&resolved.selector)?.cloned();
    let schema = table
        .read_schema(&resolved.selector, snapshot.as_ref())
        .clone();
    let snapshot_text = snapshot
        .as_ref()
        .map(|s| format!("snapshot {}", s.snapshot_id))
        .unwrap_or_else(|| "the table (no snapshot)".into());

    // Resolve every used column to its source (the core's rules: lineage, a column of the
    // schema read, a metadata column, or a field absent from that schema).
    let mut sources: Vec<(usize, ColumnSource)> = Vec::new();
    let mut constants = Vec::new();
    for i in 0..natts {
        let Some(att) = tupdesc.get(i) else { continue };
        if att.is_dropped() {
            continue;
        }
        let attnum = (i + 1) as i32;
        if let Some(u) = used {
            if !u.contains(&attnum) {
                continue;
            }
        }
        let colopts = options::read_def_list(pg_sys::GetForeignColumnOptions(relid, attnum as i16));
        let name = options::get(&colopts, "column_name")
            .map(str::to_string)
            .unwrap_or_else(|| att.name().to_string());
        let Some(source) = ColumnSource::resolve(table.metadata(), &schema, &name) else {
            return Err(FdwError::NoSuchColumn {
                column: name,
                relation: relname,
                available: schema
                    .columns()
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        if att.attnotnull && source.may_read_null() {
            return Err(FdwError::NotNull {
                column: att.name().to_string(),
                relation: relname.clone(),
                reason: match &source {
                    ColumnSource::Lineage(_) => {
                        format!("{name} is NULL for rows written before the table had row lineage")
                    }
                    ColumnSource::Field(_) => {
                        format!("the Iceberg column {name} is optional in {snapshot_text}")
                    }
                    ColumnSource::Metadata(_) => {
                        format!("{name} is NULL for files of unpartitioned specs")
                    }
                    ColumnSource::Absent(_) => format!(
                        "{snapshot_text} has no column {name} and it has no initial-default"
                    ),
                },
            });
        }
        // An absent field reads as a constant: its initial-default, else NULL.
        if let ColumnSource::Absent(f) = &source {
            if let Some(l) = &f.initial_default {
                let datum = absent_value(l, &f.field_type, att).ok_or_else(|| {
                    FdwError::Internal(format!(
                        "cannot read the initial-default of {name} as {}",
                        pgutil::format_type(att.type_oid().value(), att.type_mod())
                    ))
                })?;
                constants.push((i, datum));
            }
        }
        sources.push((i, source));
    }
    let projection = Projection::new(sources.iter().map(|(_, s)| s));
    let mut builder = projection.apply(Scan::builder().snapshot(resolved.selector.clone()));
    if let Some(n) = crate::settings::scan_concurrency() {
        builder = builder.concurrency(n);
    }
    let scan = builder.clone().build(&table)?;
    let arrow_schema = scan.schema();

    // Column plans: how each used column's values become Datums.
    let mut plans = Vec::new();
    let mut push_columns: HashMap<i16, PushColumn> = HashMap::new();
    for (i, source) in &sources {
        let Some(att) = tupdesc.get(*i) else { continue };
        let Some(batch_index) = projection.batch_index(source) else {
            // Absent: a constant, or NULL.
            continue;
        };
        let field = arrow_schema.fields()[batch_index].clone();
        let kind = plan_kind(&field, att.type_oid().value(), att.type_mod()).ok_or_else(|| {
            FdwError::TypeMismatch {
                column: att.name().to_string(),
                relation: relname.clone(),
                declared: pgutil::format_type(att.type_oid().value(), att.type_mod()),
                iceberg: match source {
                    ColumnSource::Field(f) => f.field_type.to_string(),
                    ColumnSource::Metadata(_) => String::new(),
                    _ => "long".into(),
                },
                expected: pgutil::format_type(
                    crate::convert::natural_type(&field),
                    crate::convert::natural_typmod(&field),
                ),
            }
        })?;
        if let ColumnSource::Field(f) = source {
            if let Type::Primitive(p) = &f.field_type {
                let pushable =
                    !matches!(p, PrimitiveType::TimestampNs | PrimitiveType::TimestamptzNs)
                        && !matches!(kind, Kind::Json(_) | Kind::Null);
                if pushable {
                    push_columns.insert(
                        (*i + 1) as i16,
                        PushColumn {
                            field_id: f.id,
                            name: f.name.clone(),
                            ty: p.clone(),
                        },
                    );
                }
            }
        }
        plans.push(ColumnPlan {
            att_index: *i,
            batch_index,
            field,
            kind,
        });
    }
    Ok(Prepared {
        resolved,
        table,
        snapshot,
        scan,
        builder,
        plans,
        constants,
        push_columns,
    })
}

/// The value an absent column reads: the field's `initial-default` as a Datum of the
/// column's type (through its input function), `None` if it has no text form.
fn absent_value(
    l: &Literal,
    ty: &Type,
    att: &pg_sys::FormData_pg_attribute,
) -> Option<pg_sys::Datum> {
    let text = literal_text(l, ty)?;
    pgutil::InputFn::new(att.type_oid().value(), att.type_mod())
        .call(text.as_bytes())
        .ok()
}

/// A default value as the text the input function of its column's type reads; `None` for
/// values without one.
fn literal_text(l: &Literal, ty: &Type) -> Option<String> {
    if let (Literal::Binary(b), _) = (l, ty) {
        return Some(pgutil::bytea_text(b));
    }
    let j = literal_to_json(l, ty).ok()?;
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

/// A relation's name for messages (its OID when it has none).
unsafe fn relation_name(relid: pg_sys::Oid) -> String {
    let name = pg_sys::get_rel_name(relid);
    if name.is_null() {
        format!("{}", relid.to_u32())
    } else {
        CStr::from_ptr(name).to_string_lossy().into_owned()
    }
}
