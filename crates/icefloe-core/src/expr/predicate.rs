//! Pruning predicates: conditions on top-level columns, by field id, that a front-end or a
//! filter hands to file pruning ([`crate::scan::prune`]).

use std::collections::HashMap;

use crate::spec::{Literal, PrimitiveType};

/// A comparison operator, as a filter writes it and as pruning takes it. Pruning has no rule
/// for `!=`: a predicate with it never prunes (and [`crate::expr::predicates`] makes none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `!=` (also written `<>`)
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
}

impl CmpOp {
    /// The operator with its operands swapped (`5 < x` is `x > 5`).
    pub fn commute(self) -> CmpOp {
        match self {
            CmpOp::Eq => CmpOp::Eq,
            CmpOp::NotEq => CmpOp::NotEq,
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::LtEq => CmpOp::GtEq,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::GtEq => CmpOp::LtEq,
        }
    }

    /// The operator's SQL spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::NotEq => "!=",
            CmpOp::Lt => "<",
            CmpOp::LtEq => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtEq => ">=",
        }
    }
}

/// One condition on a top-level column, by field id. A list of predicates means their AND.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// `column op value`.
    Cmp {
        field_id: i32,
        op: CmpOp,
        value: Literal,
    },
    /// `column IN (values)`.
    In { field_id: i32, values: Vec<Literal> },
    /// `column IS NULL`.
    IsNull { field_id: i32 },
    /// `column IS NOT NULL`.
    IsNotNull { field_id: i32 },
    /// Every predicate holds.
    And(Vec<Predicate>),
    /// Some predicate holds (an empty `Or` holds for no row).
    Or(Vec<Predicate>),
}

impl Predicate {
    /// The field a single-column predicate is about; `None` for `And` and `Or`.
    pub fn field_id(&self) -> Option<i32> {
        match self {
            Predicate::Cmp { field_id, .. }
            | Predicate::In { field_id, .. }
            | Predicate::IsNull { field_id }
            | Predicate::IsNotNull { field_id } => Some(*field_id),
            Predicate::And(_) | Predicate::Or(_) => None,
        }
    }

    /// Whether every column the predicate names is in `known`.
    pub(crate) fn only_fields_in(&self, known: &HashMap<i32, PrimitiveType>) -> bool {
        match self {
            Predicate::And(ps) | Predicate::Or(ps) => ps.iter().all(|p| p.only_fields_in(known)),
            p => p.field_id().is_some_and(|id| known.contains_key(&id)),
        }
    }
}
