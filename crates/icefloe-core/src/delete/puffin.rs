//! Puffin file footers (spec: `format/puffin-spec.md`, "File structure"): the blob list a
//! deletion vector's manifest entry must agree with. A manifest entry that points at bytes the
//! Puffin file does not list as the `deletion-vector-v1` blob of that data file is refused.
//!
//! ```text
//! Magic  Blob₁ … Blobₙ  Footer
//! Footer = Magic FooterPayload FooterPayloadSize(u32 LE) Flags(4 bytes) Magic
//! ```

use serde::Deserialize;

/// The four magic bytes at the start of a Puffin file and around its footer (`PFA1`).
pub const PUFFIN_MAGIC: [u8; 4] = [0x50, 0x46, 0x41, 0x31];
/// Footer payload size, flags and closing magic.
const TAIL_BYTES: usize = 12;
/// A footer larger than this is refused rather than read into memory.
pub const MAX_FOOTER_BYTES: u64 = 16 << 20;

/// One blob listed in a Puffin footer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BlobMetadata {
    #[serde(rename = "type")]
    pub blob_type: String,
    #[serde(default)]
    pub fields: Vec<i32>,
    #[serde(rename = "snapshot-id")]
    pub snapshot_id: i64,
    #[serde(rename = "sequence-number")]
    pub sequence_number: i64,
    pub offset: i64,
    pub length: i64,
    #[serde(rename = "compression-codec", default)]
    pub compression_codec: Option<String>,
    #[serde(default)]
    pub properties: std::collections::BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct FooterPayload {
    blobs: Vec<BlobMetadata>,
}

/// From the last 12 bytes of a Puffin file of `file_size` bytes: the footer payload's size.
/// Errors: bad magic, compressed footer (not supported), a size that does not fit the file.
pub fn footer_payload_size(tail: &[u8], file_size: u64, path: &str) -> crate::Result<u64> {
    let err = |r: String| crate::Error::dv(path, format!("Puffin footer: {r}"));
    let Some(tail) = tail.last_chunk::<TAIL_BYTES>() else {
        return Err(err(format!("file is shorter than {TAIL_BYTES} bytes")));
    };
    if tail[8..] != PUFFIN_MAGIC {
        return Err(err("no PFA1 magic at the end of the file".into()));
    }
    if tail[4] & 1 != 0 {
        return Err(crate::Error::Unsupported(format!(
            "{path}: compressed Puffin footer"
        )));
    }
    let size = u64::from(u32::from_le_bytes(tail[..4].try_into().expect("4 bytes")));
    // Magic, blobs, magic, payload, tail: the payload cannot take more than what is left.
    let room = file_size.saturating_sub((2 * PUFFIN_MAGIC.len() + TAIL_BYTES) as u64);
    if size > room || size > MAX_FOOTER_BYTES {
        return Err(err(format!(
            "payload size {size} does not fit a {file_size}-byte file"
        )));
    }
    Ok(size)
}

/// Parses the footer from `footer`, the last `payload_size + 16` bytes of the file (opening
/// magic, payload, tail). Errors: bad magic, payload that is not the spec's JSON.
pub fn parse_footer(footer: &[u8], path: &str) -> crate::Result<Vec<BlobMetadata>> {
    let err = |r: String| crate::Error::dv(path, format!("Puffin footer: {r}"));
    if footer.len() < PUFFIN_MAGIC.len() + TAIL_BYTES || footer[..4] != PUFFIN_MAGIC {
        return Err(err("no PFA1 magic at the start of the footer".into()));
    }
    let payload = &footer[4..footer.len() - TAIL_BYTES];
    let parsed: FooterPayload = serde_json::from_slice(payload)
        .map_err(|e| err(format!("payload is not valid footer JSON: {e}")))?;
    Ok(parsed.blobs)
}

/// Checks that `blobs` lists a `deletion-vector-v1` blob at exactly `offset`/`length`, for
/// `data_file`, with `cardinality` positions, uncompressed (spec: "deletion-vector-v1").
/// `same_file` says whether a path the footer names is `data_file` (the same text, or another
/// spelling of the same location: a table whose paths were rewritten or relocated).
pub fn check_dv_listed(
    blobs: &[BlobMetadata],
    offset: i64,
    length: i64,
    data_file: &str,
    cardinality: i64,
    path: &str,
    same_file: &dyn Fn(&str) -> bool,
) -> crate::Result<()> {
    let err = |r: String| crate::Error::dv(path, r);
    let Some(b) = blobs
        .iter()
        .find(|b| b.offset == offset && b.length == length)
    else {
        return Err(err(format!(
            "the manifest points at bytes {offset}+{length}, which the Puffin footer lists as no blob"
        )));
    };
    if b.blob_type != "deletion-vector-v1" {
        return Err(err(format!(
            "blob at offset {offset} is a {:?} blob, not a deletion-vector-v1",
            b.blob_type
        )));
    }
    if b.compression_codec.is_some() {
        return Err(err(format!(
            "deletion vector at offset {offset} is compressed ({:?}); the spec forbids it",
            b.compression_codec
        )));
    }
    match b.properties.get("referenced-data-file") {
        Some(f) if f == data_file || same_file(f) => {}
        other => {
            return Err(err(format!(
                "deletion vector at offset {offset} is for data file {other:?} per the Puffin footer, but the manifest says {data_file}"
            )))
        }
    }
    if let Some(c) = b.properties.get("cardinality") {
        if c.parse::<i64>().ok() != Some(cardinality) {
            return Err(err(format!(
                "deletion vector at offset {offset} has cardinality {c} per the Puffin footer, but the manifest records {cardinality}"
            )));
        }
    }
    Ok(())
}
