//! WHERE conditions → the core's pruning predicates. Only conditions that mean the same in
//! Postgres and in the core's pruning rules are taken: `column op constant` with a built-in
//! comparison operator (`=`, `<`, `<=`, `>`, `>=`, either side), `column IN (constants)`
//! (`= ANY(array)`), `column IS [NOT] NULL`, a boolean column alone or under NOT,
//! `column LIKE 'prefix%'` (as the byte range of strings with that prefix), and ANDs and ORs of
//! these. A constant may be a parameter of a prepared statement: its value is taken when the
//! scan begins, so generic plans prune too. String ranges are taken only under the C/POSIX
//! collation (Iceberg bounds are in byte order) and string equality only under deterministic
//! collations. Nanosecond timestamp
//! columns are never pushed (Postgres sees them truncated to microseconds). Postgres rechecks
//! every condition on every row: predicates only decide which files are read.

use std::collections::HashMap;
use std::ffi::CStr;

use icefloe_core::scan::prune::{CmpOp, Predicate};
use icefloe_core::spec::{Literal, PrimitiveType};
use pgrx::pg_sys::{self, Datum, Oid};
use pgrx::{is_a, FromDatum};

use crate::options::PG_EPOCH_OFFSET_MICROS;
use crate::pgutil::list_nodes;

/// A column the scan reads, as pushdown needs it.
#[derive(Debug, Clone)]
pub struct PushColumn {
    /// Iceberg field id.
    pub field_id: i32,
    /// Iceberg column name (for EXPLAIN).
    pub name: String,
    /// Its type in the schema read.
    pub ty: PrimitiveType,
}

/// A predicate and how EXPLAIN shows it.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// What the core prunes with.
    pub predicate: Predicate,
    /// The condition as EXPLAIN shows it.
    pub display: String,
}

/// What conditions are read against: the scanned relation, its pushable columns and the
/// statement's parameter values.
struct Ctx<'a> {
    scanrelid: u32,
    columns: &'a HashMap<i16, PushColumn>,
    params: pg_sys::ParamListInfo,
}

/// The predicates that can be derived from `quals` (an implicitly ANDed list of expressions of
/// the plan), for Vars of range-table entry `scanrelid` whose attribute numbers are in
/// `columns`; parameters (`$1`) take their values from `params` (may be null).
///
/// # Safety
/// `quals` must be a valid expression list of a plan tree; `params` null or the executor's.
pub unsafe fn extract(
    quals: *mut pg_sys::List,
    scanrelid: u32,
    columns: &HashMap<i16, PushColumn>,
    params: pg_sys::ParamListInfo,
) -> Vec<Pushed> {
    let ctx = Ctx {
        scanrelid,
        columns,
        params,
    };
    let mut out = Vec::new();
    for node in list_nodes(quals) {
        walk(node, &ctx, &mut out);
    }
    out
}

/// Like [`extract`], when the predicates say exactly what `quals` say (a row satisfies every
/// qual if and only if it satisfies every predicate, NULLs included); `None` otherwise. Only
/// then may a count be taken from metadata without Postgres rechecking rows.
///
/// # Safety
/// As [`extract`].
pub unsafe fn extract_exact(
    quals: *mut pg_sys::List,
    scanrelid: u32,
    columns: &HashMap<i16, PushColumn>,
    params: pg_sys::ParamListInfo,
) -> Option<Vec<Pushed>> {
    let ctx = Ctx {
        scanrelid,
        columns,
        params,
    };
    let mut out = Vec::new();
    let mut exact = true;
    for node in list_nodes(quals) {
        exact &= walk(node, &ctx, &mut out);
    }
    exact.then_some(out)
}

/// Appends to `out` predicates that every row satisfying `node` satisfies; returns whether
/// they are also sufficient (exactly `node`).
unsafe fn walk(node: *mut pg_sys::Node, ctx: &Ctx, out: &mut Vec<Pushed>) -> bool {
    let (scanrelid, columns) = (ctx.scanrelid, ctx.columns);
    if node.is_null() {
        return false;
    }
    if is_a(node, pg_sys::NodeTag::T_BoolExpr) {
        let b = node as *mut pg_sys::BoolExpr;
        return match (*b).boolop {
            pg_sys::BoolExprType::AND_EXPR => {
                let mut exact = true;
                for n in list_nodes((*b).args) {
                    exact &= walk(n, ctx, out);
                }
                exact
            }
            pg_sys::BoolExprType::OR_EXPR => {
                // Each disjunct implies its pushed predicates, so the OR implies their OR; a
                // disjunct with none could be any row, and so could the OR.
                let mut any_of = Vec::new();
                let mut shown = Vec::new();
                let mut exact = true;
                for n in list_nodes((*b).args) {
                    let mut sub = Vec::new();
                    exact &= walk(n, ctx, &mut sub);
                    if sub.is_empty() {
                        return false;
                    }
                    shown.push(
                        sub.iter()
                            .map(|p| p.display.as_str())
                            .collect::<Vec<_>>()
                            .join(" AND "),
                    );
                    let mut preds: Vec<Predicate> = sub.into_iter().map(|p| p.predicate).collect();
                    any_of.push(if preds.len() == 1 {
                        preds.remove(0)
                    } else {
                        Predicate::And(preds)
                    });
                }
                out.push(Pushed {
                    display: format!("({})", shown.join(" OR ")),
                    predicate: Predicate::Or(any_of),
                });
                exact
            }
            pg_sys::BoolExprType::NOT_EXPR => {
                let args = list_nodes((*b).args);
                match args.as_slice() {
                    [arg] => match column_of(*arg, scanrelid, columns) {
                        Some(c) => push_bool(c, false, out),
                        None => false,
                    },
                    _ => false,
                }
            }
            _ => false,
        };
    }
    if let Some(c) = column_of(node, scanrelid, columns) {
        return push_bool(c, true, out);
    }
    if is_a(node, pg_sys::NodeTag::T_OpExpr) {
        let op = node as *mut pg_sys::OpExpr;
        let args = list_nodes((*op).args);
        let [l, r] = args.as_slice() else {
            return false;
        };
        if is_like((*op).opno) {
            return match column_of(*l, scanrelid, columns) {
                Some(col) => push_like(col, *r, ctx, out),
                None => false,
            };
        }
        let Some(cmp) = comparison((*op).opno) else {
            return false;
        };
        let (col, konst, cmp) = match (
            column_of(*l, scanrelid, columns),
            column_of(*r, scanrelid, columns),
        ) {
            (Some(c), None) => (c, *r, cmp),
            (None, Some(c)) => (c, *l, cmp.commute()),
            _ => return false,
        };
        if !collation_allows(&col.ty, (*op).inputcollid, cmp == CmpOp::Eq) {
            return false;
        }
        let Some((value, text)) = const_literal(konst, &col.ty, ctx) else {
            return false;
        };
        out.push(Pushed {
            display: format!("{} {} {}", col.name, cmp.symbol(), text),
            predicate: Predicate::Cmp {
                field_id: col.field_id,
                op: cmp,
                value,
            },
        });
        return true;
    }
    if is_a(node, pg_sys::NodeTag::T_ScalarArrayOpExpr) {
        let op = node as *mut pg_sys::ScalarArrayOpExpr;
        if !(*op).useOr || comparison((*op).opno) != Some(CmpOp::Eq) {
            return false;
        }
        let args = list_nodes((*op).args);
        let [l, r] = args.as_slice() else {
            return false;
        };
        let Some(col) = column_of(*l, scanrelid, columns) else {
            return false;
        };
        if !collation_allows(&col.ty, (*op).inputcollid, true) {
            return false;
        }
        let Some(items) = const_array(*r, &col.ty, ctx) else {
            return false;
        };
        let display = format!(
            "{} IN ({})",
            col.name,
            items
                .iter()
                .map(|(_, t)| t.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let values = items.into_iter().map(|(l, _)| l).collect();
        out.push(Pushed {
            display,
            predicate: Predicate::In {
                field_id: col.field_id,
                values,
            },
        });
        return true;
    }
    if is_a(node, pg_sys::NodeTag::T_NullTest) {
        let t = node as *mut pg_sys::NullTest;
        if (*t).argisrow {
            return false;
        }
        let Some(col) = column_of((*t).arg as *mut pg_sys::Node, scanrelid, columns) else {
            return false;
        };
        let is_null = (*t).nulltesttype == pg_sys::NullTestType::IS_NULL;
        out.push(Pushed {
            display: format!("{} IS {}NULL", col.name, if is_null { "" } else { "NOT " }),
            predicate: if is_null {
                Predicate::IsNull {
                    field_id: col.field_id,
                }
            } else {
                Predicate::IsNotNull {
                    field_id: col.field_id,
                }
            },
        });
        return true;
    }
    false
}

/// Whether an operator is the built-in `~~` (LIKE).
unsafe fn is_like(opno: Oid) -> bool {
    if opno.to_u32() >= pg_sys::FirstNormalObjectId {
        return false;
    }
    let name = pg_sys::get_opname(opno);
    !name.is_null() && CStr::from_ptr(name).to_bytes() == b"~~"
}

/// `column LIKE 'prefix%...'` on a string column: strings with that prefix lie, in byte
/// (code point) order, in `[prefix, successor(prefix))`, whatever the collation.
/// Returns whether the range is exactly the pattern (`'prefix%'`, nothing after the `%`).
unsafe fn push_like(
    col: &PushColumn,
    pattern: *mut pg_sys::Node,
    ctx: &Ctx,
    out: &mut Vec<Pushed>,
) -> bool {
    if col.ty != PrimitiveType::String {
        return false;
    }
    let Some((Literal::String(p), _)) = const_literal(pattern, &col.ty, ctx) else {
        return false;
    };
    let prefix = like_prefix(&p);
    if prefix.is_empty() {
        return false;
    }
    // 'prefix%' with no other wildcard or escape: exactly the strings starting with prefix.
    let exact = p.strip_suffix('%') == Some(prefix.as_str()) && !prefix.contains(['%', '_', '\\']);
    let quoted = |s: &str| format!("'{}'", s.replace('\'', "''"));
    out.push(Pushed {
        display: format!("{} >= {}", col.name, quoted(&prefix)),
        predicate: Predicate::Cmp {
            field_id: col.field_id,
            op: CmpOp::GtEq,
            value: Literal::String(prefix.clone()),
        },
    });
    match successor(&prefix) {
        Some(next) => {
            out.push(Pushed {
                display: format!("{} < {}", col.name, quoted(&next)),
                predicate: Predicate::Cmp {
                    field_id: col.field_id,
                    op: CmpOp::Lt,
                    value: Literal::String(next),
                },
            });
            exact
        }
        None => false,
    }
}

/// The literal text a LIKE pattern starts with (up to its first `%` or `_`; `\` escapes).
pub fn like_prefix(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '%' | '_' => break,
            '\\' => match chars.next() {
                Some(e) => out.push(e),
                None => break,
            },
            c => out.push(c),
        }
    }
    out
}

/// The smallest string above every string that starts with `prefix`: its last character
/// that can be incremented, incremented (`None` if there is none).
pub fn successor(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(c) = chars.pop() {
        let mut n = c as u32 + 1;
        if (0xD800..0xE000).contains(&n) {
            n = 0xE000;
        }
        if let Some(next) = char::from_u32(n) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// Pushes a boolean column (or its negation) as `= value`; returns whether it did.
fn push_bool(c: &PushColumn, value: bool, out: &mut Vec<Pushed>) -> bool {
    if c.ty != PrimitiveType::Boolean {
        return false;
    }
    out.push(Pushed {
        display: format!("{} = {value}", c.name),
        predicate: Predicate::Cmp {
            field_id: c.field_id,
            op: CmpOp::Eq,
            value: Literal::Boolean(value),
        },
    });
    true
}

/// The pushable column a node refers to (a Var of the scanned relation, maybe relabelled).
unsafe fn column_of(
    mut node: *mut pg_sys::Node,
    scanrelid: u32,
    columns: &HashMap<i16, PushColumn>,
) -> Option<&PushColumn> {
    while !node.is_null() && is_a(node, pg_sys::NodeTag::T_RelabelType) {
        node = (*(node as *mut pg_sys::RelabelType)).arg as *mut pg_sys::Node;
    }
    if node.is_null() || !is_a(node, pg_sys::NodeTag::T_Var) {
        return None;
    }
    let v = node as *mut pg_sys::Var;
    if (*v).varno as i64 != scanrelid as i64 || (*v).varlevelsup != 0 {
        return None;
    }
    columns.get(&(*v).varattno)
}

/// The comparison a built-in operator performs, if it is one of `= < <= > >=`.
unsafe fn comparison(opno: Oid) -> Option<CmpOp> {
    if opno.to_u32() >= pg_sys::FirstNormalObjectId {
        return None;
    }
    let name = pg_sys::get_opname(opno);
    if name.is_null() {
        return None;
    }
    Some(match CStr::from_ptr(name).to_bytes() {
        b"=" => CmpOp::Eq,
        b"<" => CmpOp::Lt,
        b"<=" => CmpOp::LtEq,
        b">" => CmpOp::Gt,
        b">=" => CmpOp::GtEq,
        _ => return None,
    })
}

/// OIDs of the built-in `C` and `POSIX` collations (fixed in pg_collation.dat; Postgres 18's
/// headers no longer name the second).
const C_COLLATION_OID: u32 = 950;
const POSIX_COLLATION_OID: u32 = 951;

/// Whether a string comparison under `collation` orders like Iceberg bounds (bytes).
unsafe fn collation_allows(ty: &PrimitiveType, collation: Oid, equality: bool) -> bool {
    if *ty != PrimitiveType::String {
        return true;
    }
    let c = collation.to_u32();
    if c == C_COLLATION_OID || c == POSIX_COLLATION_OID {
        return true;
    }
    equality && collation != pg_sys::InvalidOid && pg_sys::get_collation_isdeterministic(collation)
}

/// The value of a non-null Const, or of a prepared statement's parameter: Datum and type.
unsafe fn const_value(node: *mut pg_sys::Node, ctx: &Ctx) -> Option<(Datum, Oid)> {
    let mut node = node;
    while !node.is_null() && is_a(node, pg_sys::NodeTag::T_RelabelType) {
        node = (*(node as *mut pg_sys::RelabelType)).arg as *mut pg_sys::Node;
    }
    if node.is_null() {
        return None;
    }
    if is_a(node, pg_sys::NodeTag::T_Const) {
        let c = node as *mut pg_sys::Const;
        return (!(*c).constisnull).then(|| ((*c).constvalue, (*c).consttype));
    }
    if is_a(node, pg_sys::NodeTag::T_Param) {
        let p = node as *mut pg_sys::Param;
        let params = ctx.params;
        if params.is_null() || (*p).paramkind != pg_sys::ParamKind::PARAM_EXTERN {
            return None;
        }
        let id = (*p).paramid;
        if id < 1 || id > (*params).numParams {
            return None;
        }
        let mut workspace: pg_sys::ParamExternData = std::mem::zeroed();
        let prm = match (*params).paramFetch {
            Some(fetch) => fetch(params, id, false, &mut workspace),
            None => (*params).params.as_mut_ptr().add(id as usize - 1),
        };
        if prm.is_null() || (*prm).isnull || (*prm).ptype != (*p).paramtype {
            return None;
        }
        return Some(((*prm).value, (*prm).ptype));
    }
    None
}

/// The literal of a constant (or parameter) in the column's units; `None` if it is not one
/// of a type that compares with the column exactly.
unsafe fn const_literal(
    node: *mut pg_sys::Node,
    ty: &PrimitiveType,
    ctx: &Ctx,
) -> Option<(Literal, String)> {
    let (d, typid) = const_value(node, ctx)?;
    let l = datum_literal(d, typid, ty)?;
    Some((l, show_datum(d, typid)))
}

unsafe fn datum_literal(d: Datum, typid: Oid, ty: &PrimitiveType) -> Option<Literal> {
    use PrimitiveType as P;
    let t = typid;
    Some(match ty {
        P::Boolean if t == pg_sys::BOOLOID => Literal::Boolean(bool::from_datum(d, false)?),
        P::Int | P::Long if t == pg_sys::INT2OID => Literal::Int(i16::from_datum(d, false)? as i32),
        P::Int | P::Long if t == pg_sys::INT4OID => Literal::Int(i32::from_datum(d, false)?),
        P::Int | P::Long if t == pg_sys::INT8OID => Literal::Long(i64::from_datum(d, false)?),
        P::Float | P::Double if t == pg_sys::FLOAT4OID => {
            Literal::Float(f32::from_datum(d, false)?)
        }
        P::Float | P::Double if t == pg_sys::FLOAT8OID => {
            Literal::Double(f64::from_datum(d, false)?)
        }
        P::Decimal { scale, .. } if t == pg_sys::NUMERICOID => {
            let text = pgrx::AnyNumeric::from_datum(d, false)?.to_string();
            Literal::Decimal(icefloe_core::spec::literal::parse_decimal(&text, *scale)?)
        }
        P::String if t == pg_sys::TEXTOID || t == pg_sys::VARCHAROID => {
            Literal::String(crate::pgutil::text_to_utf8(d)?)
        }
        P::Date if t == pg_sys::DATEOID => {
            let v = i32::from_datum(d, false)?;
            if v == i32::MIN || v == i32::MAX {
                return None; // -infinity, infinity
            }
            Literal::Date(v.checked_add(10_957)?)
        }
        P::Time if t == pg_sys::TIMEOID => Literal::Time(i64::from_datum(d, false)?),
        P::Timestamp if t == pg_sys::TIMESTAMPOID => Literal::Timestamp(timestamp_micros(d)?),
        P::Timestamptz if t == pg_sys::TIMESTAMPTZOID => Literal::Timestamp(timestamp_micros(d)?),
        P::Uuid if t == pg_sys::UUIDOID => {
            Literal::Uuid(*pgrx::Uuid::from_datum(d, false)?.as_bytes())
        }
        P::Binary | P::Fixed(_) if t == pg_sys::BYTEAOID => {
            Literal::Binary(<&[u8]>::from_datum(d, false)?.to_vec())
        }
        _ => return None,
    })
}

unsafe fn timestamp_micros(d: Datum) -> Option<i64> {
    let v = i64::from_datum(d, false)?;
    if v == i64::MIN || v == i64::MAX {
        return None; // -infinity, infinity
    }
    v.checked_add(PG_EPOCH_OFFSET_MICROS)
}

/// The non-null elements of a constant array, as literals; `None` if any element does not
/// convert.
unsafe fn const_array(
    node: *mut pg_sys::Node,
    ty: &PrimitiveType,
    ctx: &Ctx,
) -> Option<Vec<(Literal, String)>> {
    let (d, _) = const_value(node, ctx)?;
    let (values, nulls, elem) = crate::pgutil::array_elements(d);
    let mut out = Vec::with_capacity(values.len());
    for (&d, null) in values.iter().zip(nulls) {
        if null {
            continue; // x = NULL is never true
        }
        out.push((datum_literal(d, elem.typid, ty)?, show_datum(d, elem.typid)));
    }
    Some(out)
}

/// A constant as EXPLAIN shows it: its Postgres text, quoted unless a number or boolean.
unsafe fn show_datum(d: Datum, typid: Oid) -> String {
    let mut out_fn = pg_sys::InvalidOid;
    let mut varlena = false;
    pg_sys::getTypeOutputInfo(typid, &mut out_fn, &mut varlena);
    let text = pg_sys::OidOutputFunctionCall(out_fn, d);
    let s = CStr::from_ptr(text).to_string_lossy().into_owned();
    let numeric = [
        pg_sys::INT2OID,
        pg_sys::INT4OID,
        pg_sys::INT8OID,
        pg_sys::FLOAT4OID,
        pg_sys::FLOAT8OID,
        pg_sys::NUMERICOID,
        pg_sys::BOOLOID,
    ];
    if numeric.contains(&typid) {
        s
    } else {
        format!("'{}'", s.replace('\'', "''"))
    }
}
