//! Puffin files (spec: format/puffin-spec.md).
