//! Deletes: deletion vectors, position deletes, equality deletes, and which apply where.

pub mod dv;
