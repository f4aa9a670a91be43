//! Deletes: deletion vectors, position deletes, equality deletes, and which apply where.
//! Each module decodes and checks delete files from storage; caching them is the scan's
//! (`scan::deletes`), so this module needs neither the table nor the caches.

pub mod dv;
pub mod equality;
pub mod file_ref;
pub mod index;
pub mod position;
pub mod puffin;
pub mod resolved;
