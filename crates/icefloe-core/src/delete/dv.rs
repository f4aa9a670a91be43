//! Deletion vectors (format version 3): decoding the Puffin `deletion-vector-v1` blob.
//!
//! Spec: `format/puffin-spec.md`, "`deletion-vector-v1` blob type", and `format/spec.md`,
//! "Deletion Vectors". A deletion vector is the set of deleted row positions (0-based, `u64`) of
//! one data file. A blob is laid out as:
//!
//! ```text
//! offset 0      4-byte big-endian length L of (magic + vector)
//! offset 4      magic D1 D3 39 64
//! offset 8      vector: portable 64-bit Roaring, L - 4 bytes
//! offset 4 + L  CRC-32 (big-endian) of magic + vector
//! ```
//!
//! The vector is the portable 64-bit Roaring format: an 8-byte little-endian bucket count, then
//! per bucket a 4-byte little-endian key (the high 32 bits of its positions) followed by a
//! standard 32-bit Roaring bitmap of the low 32 bits. Buckets are ordered by key.
//!
//! Decoding runs once per data file with deletes on the scan path, so it works straight off the
//! borrowed bytes: one CRC pass, then each 32-bit bitmap is deserialized in place by `roaring`.
//! Every rule the spec states is checked; a blob that breaks one is an error, never a guess.

use roaring::{RoaringBitmap, RoaringTreemap};

use crate::error::{Error, Result};

/// The four magic bytes that open the CRC-covered part of a `deletion-vector-v1` blob.
pub const DV_MAGIC: [u8; 4] = [0xD1, 0xD3, 0x39, 0x64];

/// Bytes of the big-endian length field in front of the magic.
const LENGTH_BYTES: usize = 4;
/// Bytes of the big-endian CRC-32 after the vector.
const CRC_BYTES: usize = 4;
/// Length field + magic + CRC: the size of a blob whose vector is empty (not even a count).
const ENVELOPE_BYTES: usize = LENGTH_BYTES + DV_MAGIC.len() + CRC_BYTES;
/// Bytes of the little-endian bucket count that opens a portable 64-bit vector.
const COUNT_BYTES: usize = 8;
/// Smallest bucket that can exist: a 4-byte key plus an empty 32-bit bitmap, which is at least
/// a 4-byte cookie and a 4-byte container count. Bounds how many buckets a count may claim.
const MIN_BUCKET_BYTES: usize = 4 + 8;
/// Keys must stay below 2^31: positions are non-negative `long`s, so bit 63 must be 0.
const KEY_LIMIT: u32 = 1 << 31;

/// Decodes a whole `deletion-vector-v1` blob into the set of deleted row positions.
///
/// `blob` is exactly the bytes a delete manifest entry points at in its Puffin file,
/// `content_offset .. content_offset + content_size_in_bytes`; `path` names that Puffin file and
/// is only used in errors. Positions in the result are 0-based row ordinals in the referenced
/// data file, all below 2^63.
///
/// Checks, in order: the blob is at least 12 bytes, the magic is `D1 D3 39 64`, the big-endian
/// length field equals the blob size minus 8, the big-endian CRC-32 matches magic + vector, and
/// then everything [`decode_portable_roaring64`] checks.
///
/// # Errors
/// [`Error::DeletionVector`] naming `path` and the rule that failed (truncation, bad magic,
/// length mismatch, CRC-32 mismatch, or a fault inside the vector).
pub fn decode_deletion_vector(blob: &[u8], path: &str) -> Result<RoaringTreemap> {
    if blob.len() < ENVELOPE_BYTES {
        return Err(Error::dv(
            path,
            format!(
                "truncated: blob is {} bytes, shorter than the {ENVELOPE_BYTES}-byte envelope \
                 (length, magic, CRC-32)",
                blob.len()
            ),
        ));
    }

    // Magic first: if the manifest's offset points at something else, "bad magic" says so more
    // plainly than a length or CRC complaint would.
    let magic = &blob[LENGTH_BYTES..LENGTH_BYTES + DV_MAGIC.len()];
    if magic != DV_MAGIC {
        return Err(Error::dv(
            path,
            format!("bad magic {} (expected d1d33964)", hex::encode(magic)),
        ));
    }

    let length = u64::from(read_u32_be(&blob[..LENGTH_BYTES]));
    let size = blob.len() as u64;
    let needed = length + (LENGTH_BYTES + CRC_BYTES) as u64;
    if needed != size {
        let why = if needed > size {
            format!("blob truncated ({} bytes short)", needed - size)
        } else {
            format!("{} bytes more than it accounts for", size - needed)
        };
        return Err(Error::dv(
            path,
            format!("length field {length} does not match blob size {size}: {why}"),
        ));
    }

    let crc_at = blob.len() - CRC_BYTES;
    let covered = &blob[LENGTH_BYTES..crc_at];
    let stored = read_u32_be(&blob[crc_at..]);
    let computed = crc32fast::hash(covered);
    if stored != computed {
        return Err(Error::dv(
            path,
            format!("CRC-32 mismatch: stored {stored:08x}, computed {computed:08x}"),
        ));
    }

    decode_portable_roaring64(&covered[DV_MAGIC.len()..], path)
}

/// Decodes the bare portable 64-bit Roaring format (the vector inside a `deletion-vector-v1`
/// blob, without length, magic or CRC).
///
/// Layout: 8-byte little-endian bucket count, then per bucket a 4-byte little-endian key and a
/// 32-bit Roaring bitmap in the standard portable format. Position = `key << 32 | value`.
/// `path` is only used in errors.
///
/// Checks: the count is one the remaining bytes can hold (at least 12 bytes per bucket), so a
/// corrupt count cannot drive a large allocation; keys are strictly ascending (spec: ordered by
/// unsigned key, so a repeated key is an error too); every key is below 2^31 (positions below
/// 2^63); each bitmap is well formed (`roaring` validates cookies, sorted containers, sorted
/// array values and bitmap cardinalities); no bytes follow the last bucket. Empty buckets are
/// valid (writers may emit them for gaps) and are simply dropped.
///
/// # Errors
/// [`Error::DeletionVector`] naming `path`, the rule that failed and, where it helps, the bucket
/// index, key and byte offset within `bytes`.
pub fn decode_portable_roaring64(bytes: &[u8], path: &str) -> Result<RoaringTreemap> {
    let Some((count_bytes, mut rest)) = bytes.split_first_chunk::<COUNT_BYTES>() else {
        return Err(Error::dv(
            path,
            format!(
                "truncated: vector is {} bytes, too short for its 8-byte bucket count",
                bytes.len()
            ),
        ));
    };
    let count = u64::from_le_bytes(*count_bytes);
    let max_buckets = rest.len() / MIN_BUCKET_BYTES;
    if count > max_buckets as u64 {
        return Err(Error::dv(
            path,
            format!(
                "bucket count {count} cannot fit: the {} bytes after it hold at most \
                 {max_buckets} buckets (truncated or corrupt)",
                rest.len()
            ),
        ));
    }

    // Bounded by the check above: at most one entry per 12 input bytes.
    let mut buckets: Vec<(u32, RoaringBitmap)> = Vec::with_capacity(count as usize);
    let mut previous: Option<u32> = None;
    for index in 0..count {
        let offset = bytes.len() - rest.len();
        let Some((key_bytes, after)) = rest.split_first_chunk::<4>() else {
            return Err(Error::dv(
                path,
                format!("truncated: bucket {index} key at byte {offset} is cut off"),
            ));
        };
        rest = after;
        let key = u32::from_le_bytes(*key_bytes);
        if let Some(previous) = previous {
            if key <= previous {
                return Err(Error::dv(
                    path,
                    format!("bucket keys not ascending ({key} after {previous})"),
                ));
            }
        }
        if key >= KEY_LIMIT {
            return Err(Error::dv(
                path,
                format!("position key {key} at or above 2^31 puts positions at or above 2^63"),
            ));
        }
        previous = Some(key);

        // `&mut rest` makes the reader advance our slice past exactly this bitmap.
        let bitmap = RoaringBitmap::deserialize_from(&mut rest).map_err(|e| {
            let reason = if e.kind() == std::io::ErrorKind::UnexpectedEof {
                format!(
                    "truncated: 32-bit bitmap of bucket {index} (key {key}) at byte {} \
                     runs past the end of the vector",
                    offset + 4
                )
            } else {
                format!(
                    "invalid 32-bit Roaring bitmap in bucket {index} (key {key}) at byte {}: {e}",
                    offset + 4
                )
            };
            Error::dv(path, reason)
        })?;
        if !bitmap.is_empty() {
            buckets.push((key, bitmap));
        }
    }

    if !rest.is_empty() {
        return Err(Error::dv(
            path,
            format!(
                "{} trailing bytes after the last bucket (vector is {} bytes)",
                rest.len(),
                bytes.len()
            ),
        ));
    }

    // Keys arrive sorted, so building the map is linear.
    Ok(RoaringTreemap::from_bitmaps(buckets))
}

fn read_u32_be(bytes: &[u8]) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[..4]);
    u32::from_be_bytes(word)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/roaring");
    const PATH: &str = "s3://bucket/t/data/dv-test.puffin";

    fn fixture(name: &str) -> Vec<u8> {
        let file = format!("{FIXTURES}/{name}");
        std::fs::read(&file).unwrap_or_else(|e| panic!("cannot read {file}: {e}"))
    }

    fn expected() -> serde_json::Map<String, serde_json::Value> {
        let text = std::fs::read_to_string(format!("{FIXTURES}/expected.json")).unwrap();
        match serde_json::from_str(&text).unwrap() {
            serde_json::Value::Object(map) => map,
            other => panic!("expected.json is not an object: {other}"),
        }
    }

    /// Wraps a portable vector in the deletion-vector-v1 envelope with a correct length and CRC.
    fn envelope(vector: &[u8]) -> Vec<u8> {
        let mut covered = DV_MAGIC.to_vec();
        covered.extend_from_slice(vector);
        let mut blob = (covered.len() as u32).to_be_bytes().to_vec();
        blob.extend_from_slice(&covered);
        blob.extend_from_slice(&crc32fast::hash(&covered).to_be_bytes());
        blob
    }

    /// Serializes buckets in the given order (not necessarily sorted) in the portable format.
    fn portable(buckets: &[(u32, RoaringBitmap)]) -> Vec<u8> {
        let mut out = (buckets.len() as u64).to_le_bytes().to_vec();
        for (key, bitmap) in buckets {
            out.extend_from_slice(&key.to_le_bytes());
            bitmap.serialize_into(&mut out).unwrap();
        }
        out
    }

    fn bitmap(values: &[u32]) -> RoaringBitmap {
        values.iter().copied().collect()
    }

    fn dv_err(blob: &[u8]) -> String {
        let err = decode_deletion_vector(blob, PATH).expect_err("corrupt blob was accepted");
        assert!(
            matches!(err, Error::DeletionVector { .. }),
            "wrong variant: {err:?}"
        );
        let text = err.to_string();
        assert!(text.contains(PATH), "error does not name the file: {text}");
        text
    }

    fn portable_err(bytes: &[u8]) -> String {
        let err = decode_portable_roaring64(bytes, PATH).expect_err("corrupt vector was accepted");
        assert!(
            matches!(err, Error::DeletionVector { .. }),
            "wrong variant: {err:?}"
        );
        let text = err.to_string();
        assert!(text.contains(PATH), "error does not name the file: {text}");
        text
    }

    fn assert_contains(text: &str, needle: &str) {
        assert!(text.contains(needle), "expected {needle:?} in: {text}");
    }

    #[test]
    fn every_fixture_decodes_to_expected_positions() {
        let expected = expected();
        let names: BTreeSet<&str> = expected.keys().map(String::as_str).collect();
        // Guards against an empty or renamed expected.json making the loop vacuous.
        assert_eq!(
            names,
            BTreeSet::from([
                "64map32bitvals.bin",
                "64mapempty.bin",
                "64mapspreadvals.bin",
                "all-container-types-position-index.bin",
                "empty-position-index.bin",
                "small-alternating-values-position-index.bin",
                "small-and-large-values-position-index.bin",
            ])
        );

        for (name, want) in &expected {
            let bytes = fixture(name);
            assert_eq!(
                bytes.len() as u64,
                want["bytes"].as_u64().unwrap(),
                "{name} size"
            );

            let decoded = if name.ends_with("-position-index.bin") {
                decode_deletion_vector(&bytes, name)
            } else {
                assert!(name.starts_with("64map"), "unexpected fixture {name}");
                decode_portable_roaring64(&bytes, name)
            }
            .unwrap_or_else(|e| panic!("{name}: {e}"));

            let mut positions = RoaringTreemap::new();
            for range in want["position_ranges_inclusive"].as_array().unwrap() {
                let start = range[0].as_u64().unwrap();
                let end = range[1].as_u64().unwrap();
                assert!(start <= end, "{name}: bad range in expected.json");
                positions.insert_range(start..=end);
            }
            let cardinality = want["cardinality"].as_u64().unwrap();
            assert_eq!(
                positions.len(),
                cardinality,
                "{name}: expected.json inconsistent"
            );
            assert_eq!(decoded.len(), cardinality, "{name} cardinality");
            assert_eq!(decoded, positions, "{name} positions");
        }
    }

    #[test]
    fn fixture_spot_checks() {
        let dv =
            decode_deletion_vector(&fixture("small-and-large-values-position-index.bin"), PATH)
                .unwrap();
        assert_eq!(
            dv.iter().collect::<Vec<_>>(),
            [100, 101, 2_147_483_747, 2_147_483_748]
        );

        let dv = decode_deletion_vector(&fixture("all-container-types-position-index.bin"), PATH)
            .unwrap();
        assert_eq!(dv.min(), Some(5));
        assert_eq!(dv.max(), Some(4_295_163_902));
        assert!(dv.contains(65_537) && dv.contains(66_535) && !dv.contains(66_536));
        assert!(dv.contains((1 << 32) + 10) && !dv.contains((1 << 32) + 11));

        let spread = decode_portable_roaring64(&fixture("64mapspreadvals.bin"), PATH).unwrap();
        assert_eq!(spread.bitmaps().count(), 10);
        assert!(spread.contains(9 * (1 << 32) + 9) && !spread.contains(9 * (1 << 32) + 10));
    }

    #[test]
    fn round_trips_roaring_serialization() {
        let mut positions = RoaringTreemap::new();
        positions.insert_range(0..70_000); // run / bitmap containers
        positions.extend((0..5_000u64).map(|i| (1 << 32) + i * 7)); // array + bitmap
        positions.insert(((KEY_LIMIT as u64 - 1) << 32) | 0xFFFF_FFFF); // largest legal position
        let mut vector = Vec::new();
        positions.serialize_into(&mut vector).unwrap();

        let decoded = decode_deletion_vector(&envelope(&vector), PATH).unwrap();
        assert_eq!(decoded, positions);
        assert_eq!(decoded.len(), 70_000 + 5_000 + 1);
        assert_eq!(decoded.max(), Some(i64::MAX as u64));
    }

    #[test]
    fn empty_buckets_are_accepted_and_dropped() {
        let vector = portable(&[
            (0, RoaringBitmap::new()),
            (1, bitmap(&[4])),
            (2, RoaringBitmap::new()),
        ]);
        let decoded = decode_deletion_vector(&envelope(&vector), PATH).unwrap();
        assert_eq!(decoded.iter().collect::<Vec<_>>(), [(1 << 32) + 4]);
        assert_eq!(decoded.bitmaps().count(), 1);
    }

    #[test]
    fn rejects_crc_mismatch() {
        let good = fixture("small-alternating-values-position-index.bin");
        let mut bad = good.clone();
        *bad.last_mut().unwrap() ^= 0x01;
        let text = dv_err(&bad);
        assert_contains(&text, "CRC-32 mismatch");
        assert_contains(&text, "stored b3fb20bf, computed b3fb20be");

        // A flipped bit inside the vector is caught by the CRC, before the vector is parsed.
        let mut bad = good;
        bad[30] ^= 0x10;
        assert_contains(&dv_err(&bad), "CRC-32 mismatch");
    }

    #[test]
    fn rejects_bad_magic() {
        let mut bad = fixture("all-container-types-position-index.bin");
        bad[7] = 0x65;
        assert_contains(&dv_err(&bad), "bad magic d1d33965");
    }

    #[test]
    fn rejects_truncated_blob() {
        let good = fixture("all-container-types-position-index.bin");
        for cut in [0, 1, 4, 8, 11, 12, 20, 47, good.len() - 4, good.len() - 1] {
            let text = dv_err(&good[..cut]);
            assert_contains(&text, "truncated");
        }
        let text = dv_err(&good[..50]);
        assert_contains(&text, "length field 86 does not match blob size 50");
    }

    #[test]
    fn rejects_truncated_vector_with_valid_envelope() {
        // The envelope is rebuilt around each cut so the length and CRC pass and the vector's
        // own bounds checks have to catch the truncation.
        let blob = fixture("all-container-types-position-index.bin");
        let vector = &blob[8..blob.len() - 4];
        for cut in 0..vector.len() {
            let text = dv_err(&envelope(&vector[..cut]));
            assert_contains(&text, "truncated");
        }

        let spread = fixture("64mapspreadvals.bin");
        for cut in 0..spread.len() {
            assert_contains(&portable_err(&spread[..cut]), "truncated");
        }
    }

    #[test]
    fn rejects_wrong_length_field() {
        let mut bad = fixture("all-container-types-position-index.bin");
        assert_eq!(read_u32_be(&bad), 86);
        bad[..4].copy_from_slice(&90u32.to_be_bytes());
        assert_contains(&dv_err(&bad), "length field 90 does not match blob size 94");
        bad[..4].copy_from_slice(&80u32.to_be_bytes());
        assert_contains(&dv_err(&bad), "length field 80 does not match blob size 94");
    }

    #[test]
    fn rejects_unsorted_and_repeated_keys() {
        let descending = portable(&[(7, bitmap(&[1, 2])), (5, bitmap(&[3]))]);
        assert_contains(
            &dv_err(&envelope(&descending)),
            "bucket keys not ascending (5 after 7)",
        );
        let repeated = portable(&[(5, bitmap(&[1])), (5, bitmap(&[2]))]);
        assert_contains(
            &dv_err(&envelope(&repeated)),
            "bucket keys not ascending (5 after 5)",
        );
        // The same buckets in ascending order are fine.
        let ascending = portable(&[(5, bitmap(&[3])), (7, bitmap(&[1, 2]))]);
        let decoded = decode_deletion_vector(&envelope(&ascending), PATH).unwrap();
        assert_eq!(
            decoded.iter().collect::<Vec<_>>(),
            [(5 << 32) + 3, (7 << 32) + 1, (7 << 32) + 2]
        );
    }

    #[test]
    fn rejects_key_at_or_above_2_pow_31() {
        let vector = portable(&[(0, bitmap(&[1])), (KEY_LIMIT, bitmap(&[0]))]);
        let text = dv_err(&envelope(&vector));
        assert_contains(&text, "position key 2147483648 at or above 2^31");
        assert_contains(&text, "2^63");
        let vector = portable(&[(u32::MAX, bitmap(&[0]))]);
        assert_contains(&portable_err(&vector), "position key 4294967295");

        // One below the limit is the highest legal key.
        let vector = portable(&[(KEY_LIMIT - 1, bitmap(&[0]))]);
        let decoded = decode_portable_roaring64(&vector, PATH).unwrap();
        assert_eq!(
            decoded.iter().collect::<Vec<_>>(),
            [(KEY_LIMIT as u64 - 1) << 32]
        );
    }

    #[test]
    fn rejects_trailing_bytes() {
        // Garbage inside the vector, with a length and CRC that cover it.
        let blob = fixture("small-alternating-values-position-index.bin");
        let mut vector = blob[8..blob.len() - 4].to_vec();
        vector.extend_from_slice(&[0xAB, 0xCD, 0xEF]);
        assert_contains(
            &dv_err(&envelope(&vector)),
            "3 trailing bytes after the last bucket",
        );

        // Garbage after the CRC: the length field no longer matches.
        let mut bad = blob.clone();
        bad.push(0);
        assert_contains(&dv_err(&bad), "length field 42 does not match blob size 51");

        let mut bare = fixture("64map32bitvals.bin");
        bare.push(0);
        assert_contains(&portable_err(&bare), "1 trailing bytes");
    }

    #[test]
    fn rejects_implausible_bucket_count() {
        // A count of 2^64 - 1 must fail fast rather than reserve memory for it.
        let mut bad = u64::MAX.to_le_bytes().to_vec();
        bad.extend_from_slice(&[0; 24]);
        assert_contains(
            &portable_err(&bad),
            "bucket count 18446744073709551615 cannot fit",
        );
        assert_contains(&dv_err(&envelope(&bad)), "bucket count");

        // 2 buckets need at least 24 bytes after the count; 23 is one short.
        let mut bad = 2u64.to_le_bytes().to_vec();
        bad.extend_from_slice(&[0; 23]);
        assert_contains(&portable_err(&bad), "at most 1 buckets");
    }

    #[test]
    fn rejects_malformed_inner_bitmap() {
        // Unknown cookie in the 32-bit bitmap.
        let mut vector = portable(&[(0, bitmap(&[1, 2, 3]))]);
        vector[12] = 0x00;
        let text = dv_err(&envelope(&vector));
        assert_contains(
            &text,
            "invalid 32-bit Roaring bitmap in bucket 0 (key 0) at byte 12",
        );

        // Array values out of order.
        let mut vector = portable(&[(3, bitmap(&[1, 2]))]);
        let n = vector.len();
        vector[n - 4..].copy_from_slice(&[2, 0, 1, 0]);
        assert_contains(&dv_err(&envelope(&vector)), "invalid 32-bit Roaring bitmap");
    }
}
