//! `icefloe mount` end to end: the fixture tables mounted through FUSE by the real binary, read
//! with ordinary tools and compared with the rows the writing engine reads back. One test
//! binary, a module per kind of operation; the mount helper is shared.
//!
//! These tests need `/dev/fuse` and `fusermount3` (Debian package `fuse3`); without them they
//! fail, never pass silently.

use icefloe_testkit::mount;

mod common;

mod errors;
mod index;
mod read;
mod refresh;
mod snapshots;
mod tree;
