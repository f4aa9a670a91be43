//! Value encodings shared by every front-end: JSON Lines, CSV and Parquet.
pub mod variant;
