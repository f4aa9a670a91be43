//! The `bucket[N]` partition transform (spec: "Partition Transforms" and "Appendix B: 32-bit
//! Hash Requirements"): `(murmur3_x86_32(v) & Integer.MAX_VALUE) % N`, seed 0, over the
//! value's hash serialization.

use super::{Literal, PrimitiveType};

/// 32-bit Murmur3, x86 variant, seed 0, as the spec requires.
pub fn murmur3_x86_32(data: &[u8]) -> i32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let mut h: u32 = 0;
    let mut blocks = data.chunks_exact(4);
    for b in &mut blocks {
        let mut k = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h ^= k;
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        let mut k: u32 = 0;
        for (i, byte) in tail.iter().enumerate() {
            k |= (*byte as u32) << (8 * i);
        }
        h ^= k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    }
    h ^= data.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h as i32
}

/// The minimum two's-complement big-endian bytes of a decimal's unscaled value.
fn min_big_endian(v: i128) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    let mut start = 0;
    // Drop leading bytes that only repeat the sign of the next one.
    while start < 15 {
        let (b, next) = (bytes[start], bytes[start + 1]);
        if (b == 0x00 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    bytes[start..].to_vec()
}

/// The spec's 32-bit hash of value `v` of column type `ty`; `None` for the types that cannot
/// be bucketed (boolean, float, double) or that this reader does not hash (the nanosecond
/// timestamps), and for a value that is not of `ty`.
pub fn hash(v: &Literal, ty: &PrimitiveType) -> Option<i32> {
    use PrimitiveType as P;
    let long = |x: i64| Some(murmur3_x86_32(&x.to_le_bytes()));
    match (ty, v) {
        // int and long hash alike, so promoting int to long keeps the buckets.
        (P::Int, Literal::Int(x)) => long(*x as i64),
        (P::Long, Literal::Long(x)) => long(*x),
        (P::Date, Literal::Date(x)) => long(*x as i64),
        (P::Time, Literal::Time(x)) => long(*x),
        (P::Timestamp | P::Timestamptz, Literal::Timestamp(x)) => long(*x),
        (P::Decimal { .. }, Literal::Decimal(x)) => Some(murmur3_x86_32(&min_big_endian(*x))),
        (P::String, Literal::String(s)) => Some(murmur3_x86_32(s.as_bytes())),
        (P::Uuid, Literal::Uuid(b)) => Some(murmur3_x86_32(b)),
        (P::Fixed(_) | P::Binary, Literal::Binary(b)) => Some(murmur3_x86_32(b)),
        _ => None,
    }
}

/// `bucket[n]` of value `v` of column type `ty` (see [`hash`] for `None`).
pub fn bucket(v: &Literal, ty: &PrimitiveType, n: u32) -> Option<i32> {
    if n == 0 {
        return None;
    }
    Some(((hash(v, ty)? & i32::MAX) as u32 % n) as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_appendix_b_test_values() {
        use PrimitiveType as P;
        let h = |v: Literal, t: P| hash(&v, &t).unwrap();
        assert_eq!(h(Literal::Int(34), P::Int), 2017239379);
        assert_eq!(h(Literal::Long(34), P::Long), 2017239379);
        let dec = P::Decimal {
            precision: 9,
            scale: 2,
        };
        assert_eq!(h(Literal::Decimal(1420), dec), -500754589);
        // 2017-11-16 is day 17486.
        assert_eq!(h(Literal::Date(17486), P::Date), -653330422);
        assert_eq!(h(Literal::Time(81_068_000_000), P::Time), -662762989);
        let ts = Literal::Timestamp(1_510_871_468_000_000);
        assert_eq!(h(ts.clone(), P::Timestamp), -2047944441);
        assert_eq!(h(ts, P::Timestamptz), -2047944441);
        assert_eq!(h(Literal::String("iceberg".into()), P::String), 1210000089);
        let uuid = [
            0xF7, 0x9C, 0x3E, 0x09, 0x67, 0x7C, 0x4B, 0xBD, 0xA4, 0x79, 0x3F, 0x34, 0x9C, 0xB7,
            0x85, 0xE7,
        ];
        assert_eq!(h(Literal::Uuid(uuid), P::Uuid), 1488055340);
        assert_eq!(h(Literal::Binary(vec![0, 1, 2, 3]), P::Binary), -188683207);
        assert_eq!(
            h(Literal::Binary(vec![0, 1, 2, 3]), P::Fixed(4)),
            -188683207
        );
        assert_eq!(hash(&Literal::Double(1.0), &P::Double), None);
    }

    #[test]
    fn buckets_mask_the_sign_then_take_the_modulus() {
        // 34 hashes to 2017239379: bucket 79 of 100 (the spec's bucket(100, 34L) example).
        assert_eq!(
            bucket(&Literal::Long(34), &PrimitiveType::Long, 100),
            Some(79)
        );
        // A negative hash: -500754589 & MAX = 1646729059.
        let dec = PrimitiveType::Decimal {
            precision: 9,
            scale: 2,
        };
        assert_eq!(
            bucket(&Literal::Decimal(1420), &dec, 16),
            Some(1646729059 % 16)
        );
        assert_eq!(bucket(&Literal::Long(34), &PrimitiveType::Long, 0), None);
    }

    #[test]
    fn minimal_decimal_bytes() {
        assert_eq!(min_big_endian(0), vec![0]);
        assert_eq!(min_big_endian(127), vec![0x7f]);
        assert_eq!(min_big_endian(128), vec![0x00, 0x80]);
        assert_eq!(min_big_endian(-1), vec![0xff]);
        assert_eq!(min_big_endian(-128), vec![0x80]);
        assert_eq!(min_big_endian(-129), vec![0xff, 0x7f]);
        assert_eq!(min_big_endian(1420), vec![0x05, 0x8c]);
    }
}
