//! Deletes: deletion vectors, position deletes, equality deletes, and which apply where.

pub mod dv;
pub mod equality;
pub mod index;
pub mod position;
pub mod puffin;
pub mod resolved;
