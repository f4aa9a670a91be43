//! A metadata file's bytes as JSON: gzip-compressed or not, within the metadata cap.

use super::limits::{Capped, ReadLimits};

/// Parses metadata JSON straight from the file's bytes, through a gzip stream when they start
/// with the gzip magic.
/// Parses a metadata file's JSON, gzip-compressed or not; a decompressed text past the
/// metadata cap is [`crate::Error::TooLarge`] (a small gzip file can inflate without bound).
pub(crate) fn parse_json(
    bytes: &[u8],
    path: &str,
    limits: &ReadLimits,
) -> crate::Result<serde_json::Value> {
    use std::io::Read;
    let parsed = if bytes.starts_with(&[0x1f, 0x8b]) {
        let cap = limits.metadata_bytes;
        let mut text = flate2::read::GzDecoder::new(bytes).take(cap.saturating_add(1));
        let parsed = serde_json::from_reader(std::io::BufReader::new(&mut text));
        if text.limit() == 0 {
            return Err(Capped::Metadata.too_large(path, limits));
        }
        parsed
    } else {
        serde_json::from_slice(bytes)
    };
    parsed.map_err(|e| crate::Error::metadata(path, format!("not valid JSON: {e}")))
}
