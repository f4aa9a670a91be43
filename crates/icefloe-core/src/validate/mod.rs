//! Checks of everything read from a table, by the refusal policy (`docs/refusals.md`): a rule
//! broken where Iceberg Java refuses the table too, or where reading it would give a wrong or
//! ambiguous answer, is an error naming the file and the rule; a rule broken without changing
//! the answer is a [`crate::Warning`] (an error when the table is opened strict), and the table
//! is read by the spec's reading rule. The parsers in `spec` decode; the checks here decide.

pub mod ancestry;
pub mod column_type;
pub mod field_ids;
pub mod live_files;
pub mod manifest;
pub mod metadata;
pub mod schema;

use crate::warning::Rule;

/// Field ids above this are reserved for metadata columns (spec: "Reserved Field IDs").
pub const MAX_USER_FIELD_ID: i32 = i32::MAX - 200;

/// Column names a table may not use at the top level: the metadata columns a reader adds
/// (`_row_id`, `_pos`, ...) would be ambiguous with them.
pub const RESERVED_COLUMN_NAMES: &[&str] = &[
    "_file",
    "_pos",
    "_deleted",
    "_spec_id",
    "_partition",
    "_row_id",
    "_last_updated_sequence_number",
];

/// Where a check reports a rule broken without changing the answer.
pub type Warn<'a> = dyn FnMut(Rule, String) + 'a;
