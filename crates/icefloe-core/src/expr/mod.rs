//! Row filters (`icefloe cat|files --where`): a small SQL-like expression language, parsed
//! ([`parse`]), bound to the reading schema ([`bind`]), evaluated exactly over rows ([`eval`]),
//! and turned into the conjunction of [`Predicate`]s that prunes manifests, data files, row
//! groups and pages ([`predicates`]).

pub mod bind;
pub mod eval;
pub mod filter_json;
pub mod parse;
pub mod predicate;

pub use bind::{bind, BoundColumn, BoundExpr, BoundFilter};
pub use parse::{parse, ExprError, Filter};

use predicate::{CmpOp, Predicate};

/// The pruning predicates a bound filter implies: every row the filter keeps satisfies all of
/// them. Parts that cannot be expressed (`!=`, `NOT IN`, lineage columns, an `OR` with such a
/// part) are left out, which only prunes less. Negations are pushed down: the filter's
/// orderings are total (NaN greatest, `-0.0 = 0.0`), so `NOT x < v` is `x >= v` for every
/// non-null `x`, and a null `x` satisfies neither.
pub fn predicates(filter: &BoundFilter) -> Vec<Predicate> {
    let mut out = Vec::new();
    conjuncts(&filter.expr, false, filter, &mut out);
    out
}

fn conjuncts(e: &BoundExpr, negated: bool, f: &BoundFilter, out: &mut Vec<Predicate>) {
    match (e, negated) {
        (BoundExpr::And(a, b), false) | (BoundExpr::Or(a, b), true) => {
            conjuncts(a, negated, f, out);
            conjuncts(b, negated, f, out);
        }
        (BoundExpr::Not(a), n) => conjuncts(a, !n, f, out),
        (e, n) => out.extend(predicate(e, n, f)),
    }
}

/// `e` (or `NOT e`) as one predicate, if it can be expressed.
fn predicate(e: &BoundExpr, negated: bool, f: &BoundFilter) -> Option<Predicate> {
    let field = |c: &usize| {
        let col = &f.columns[*c];
        (!col.lineage).then_some(col.field_id)
    };
    match (e, negated) {
        (BoundExpr::Cmp { column, op, value }, n) => {
            let op = match (op, n) {
                (CmpOp::Eq, false) => CmpOp::Eq,
                (CmpOp::Lt, false) | (CmpOp::GtEq, true) => CmpOp::Lt,
                (CmpOp::LtEq, false) | (CmpOp::Gt, true) => CmpOp::LtEq,
                (CmpOp::Gt, false) | (CmpOp::LtEq, true) => CmpOp::Gt,
                (CmpOp::GtEq, false) | (CmpOp::Lt, true) => CmpOp::GtEq,
                // `!=`, and `NOT =`: no pruning rule.
                (CmpOp::NotEq, _) | (CmpOp::Eq, true) => return None,
            };
            Some(Predicate::Cmp {
                field_id: field(column)?,
                op,
                value: value.clone(),
            })
        }
        (BoundExpr::In { column, values }, false) => Some(Predicate::In {
            field_id: field(column)?,
            values: values.clone(),
        }),
        (BoundExpr::IsNull { column }, n) => {
            let field_id = field(column)?;
            Some(if n {
                Predicate::IsNotNull { field_id }
            } else {
                Predicate::IsNull { field_id }
            })
        }
        (BoundExpr::And(..) | BoundExpr::Or(..), _) => {
            // A conjunction inside a disjunction (or the negation of either): both sides must
            // be expressible.
            let mut parts = Vec::new();
            let (a, b, and) = match (e, negated) {
                (BoundExpr::And(a, b), false) => (a, b, true),
                (BoundExpr::Or(a, b), true) => (a, b, true),
                (BoundExpr::Or(a, b), false) => (a, b, false),
                (BoundExpr::And(a, b), true) => (a, b, false),
                _ => unreachable!(),
            };
            for side in [a, b] {
                match predicate(side, negated, f) {
                    Some(p) => parts.push(p),
                    None if and => {}
                    None => return None,
                }
            }
            match (and, parts.len()) {
                (true, 0) => None,
                (true, _) => Some(Predicate::And(parts)),
                (false, _) => Some(Predicate::Or(parts)),
            }
        }
        (BoundExpr::Not(inner), n) => predicate(inner, !n, f),
        (BoundExpr::In { .. }, true) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Literal, NestedField, PrimitiveType, Schema, StructType, Type};

    fn preds(text: &str) -> Vec<Predicate> {
        let schema = Schema {
            schema_id: 0,
            fields: StructType {
                fields: vec![NestedField::optional(
                    1,
                    "a",
                    Type::Primitive(PrimitiveType::Long),
                )],
            },
            identifier_field_ids: vec![],
        };
        predicates(&bind(&parse(text).unwrap(), &schema).unwrap())
    }

    fn cmp(op: CmpOp, v: i64) -> Predicate {
        Predicate::Cmp {
            field_id: 1,
            op,
            value: Literal::Long(v),
        }
    }

    #[test]
    fn conjuncts_and_pushed_negations() {
        assert_eq!(preds("a = 1 AND a != 2"), vec![cmp(CmpOp::Eq, 1)]);
        assert_eq!(
            preds("NOT (a < 1 OR a IS NULL)"),
            vec![cmp(CmpOp::GtEq, 1), Predicate::IsNotNull { field_id: 1 }]
        );
        assert_eq!(
            preds("a BETWEEN 1 AND 5"),
            vec![cmp(CmpOp::GtEq, 1), cmp(CmpOp::LtEq, 5)]
        );
        assert_eq!(
            preds("a NOT BETWEEN 1 AND 5"),
            vec![Predicate::Or(vec![cmp(CmpOp::Lt, 1), cmp(CmpOp::Gt, 5)])]
        );
        assert_eq!(
            preds("a = 1 OR a = 3"),
            vec![Predicate::Or(vec![cmp(CmpOp::Eq, 1), cmp(CmpOp::Eq, 3)])]
        );
        // One side of an OR cannot prune: the OR cannot.
        assert_eq!(preds("a = 1 OR a != 3"), vec![]);
        assert_eq!(preds("a = 1 OR _row_id = 3"), vec![]);
        assert_eq!(preds("a NOT IN (1, 2)"), vec![]);
        assert_eq!(
            preds("(a = 1 AND a != 2) OR a = 4"),
            vec![Predicate::Or(vec![
                Predicate::And(vec![cmp(CmpOp::Eq, 1)]),
                cmp(CmpOp::Eq, 4)
            ])]
        );
        assert_eq!(preds("NOT NOT a > 2"), vec![cmp(CmpOp::Gt, 2)]);
    }
}
