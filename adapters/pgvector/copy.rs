//! Binary `COPY` encoding of ids and vectors (vector and halfvec), and the half-precision conversion.

use super::sql::{VecType, pg_id};
use super::*;

/// f32 to IEEE half precision (round to nearest, ties to even). `None` when the value is not
/// finite or overflows half precision (±65504), which pgvector rejects too.
pub(super) fn f32_to_f16(value: f32) -> Option<u16> {
    let x = value.to_bits();
    let sign = (x & 0x8000_0000) >> 16;
    let exp = x & 0x7F80_0000;
    let man = x & 0x007F_FFFF;
    if exp == 0x7F80_0000 {
        return None;
    }
    let half_exp = ((exp >> 23) as i32) - 127 + 15;
    if half_exp >= 0x1F {
        return None;
    }
    let half = if half_exp <= 0 {
        // Subnormal half (or zero): shift the mantissa with its implicit bit.
        if 14 - half_exp > 24 {
            sign
        } else {
            let man = man | 0x0080_0000;
            let shift = (14 - half_exp) as u32;
            let mut half_man = man >> shift;
            let round_bit = 1u32 << (shift - 1);
            if man & round_bit != 0 && man & (3 * round_bit - 1) != 0 {
                half_man += 1;
            }
            sign | half_man
        }
    } else {
        let bits = sign | ((half_exp as u32) << 10) | (man >> 13);
        let round_bit = 0x0000_1000;
        // Rounding up may carry into the exponent, which is the correct result.
        if man & round_bit != 0 && man & (3 * round_bit - 1) != 0 {
            bits + 1
        } else {
            bits
        }
    };
    let half = half as u16;
    (half & 0x7C00 != 0x7C00).then_some(half)
}

/// Replaces vector literals (`'[0.1,0.2,...]'`) in a plan line by `'[...]'`: the probe
/// vector is noise in a result file, and large with hundreds of dimensions.
pub(super) fn abbreviate_vectors(line: &str) -> String {
    let mut out = String::with_capacity(line.len().min(256));
    let mut rest = line;
    while let Some(start) = rest.find("'[") {
        out.push_str(&rest[..start]);
        match rest[start..].find("]'") {
            Some(len) => {
                out.push_str("'[...]'");
                rest = &rest[start + len + 2..];
            }
            None => {
                rest = &rest[start..];
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The header of PostgreSQL's binary `COPY` format: signature, flags, extension length.
pub(super) fn put_copy_header(buf: &mut Vec<u8>) {
    buf.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
    buf.extend_from_slice(&0i32.to_be_bytes()); // flags
    buf.extend_from_slice(&0i32.to_be_bytes()); // header extension length
}

/// The trailer of binary `COPY` data (a field count of −1).
pub(super) fn put_copy_trailer(buf: &mut Vec<u8>) {
    buf.extend_from_slice(&(-1i16).to_be_bytes());
}

/// Bytes of a `vector` / `halfvec` field of `dim` elements, without its length word.
pub(super) fn vector_field_len(dim: usize, ty: VecType) -> usize {
    4 + dim * ty.elem_bytes()
}

/// One `vector` / `halfvec` field of point `id` in pgvector's binary form: the field length,
/// `int16` dim, `int16` unused, then big-endian `float4` or half-precision elements.
pub(super) fn put_vector_field(
    buf: &mut Vec<u8>,
    id: PointId,
    v: &[f32],
    ty: VecType,
) -> EngineResult<()> {
    let too_large = || EngineError::op(ENGINE, "bulk insert", format!("a {}-d vector is too large", v.len()));
    let dim16 = u16::try_from(v.len()).map_err(|_| too_large())?;
    let field_len = i32::try_from(vector_field_len(v.len(), ty)).map_err(|_| too_large())?;
    buf.extend_from_slice(&field_len.to_be_bytes());
    buf.extend_from_slice(&dim16.to_be_bytes());
    buf.extend_from_slice(&0u16.to_be_bytes());
    match ty {
        VecType::Vector => {
            for x in v {
                buf.extend_from_slice(&x.to_be_bytes());
            }
        }
        VecType::HalfVec => {
            for x in v {
                let h = f32_to_f16(*x).ok_or_else(|| {
                    EngineError::op(
                        ENGINE,
                        "bulk insert",
                        format!("point {id}: value {x} is out of range for halfvec"),
                    )
                })?;
                buf.extend_from_slice(&h.to_be_bytes());
            }
        }
    }
    Ok(())
}

/// The field count of a row: id, vector and each attribute.
pub(super) fn copy_fields(attributes: Option<&crate::filter::Attributes>) -> EngineResult<i16> {
    let fields = 2 + attributes.map_or(0, |a| a.fields().len());
    i16::try_from(fields).map_err(|_| EngineError::op(ENGINE, "bulk insert", "too many attributes"))
}

/// One row in PostgreSQL's binary `COPY` format: the field count, the `bigint` id, the vector
/// ([`put_vector_field`]) and the attributes.
pub(super) fn put_copy_row(
    buf: &mut Vec<u8>,
    fields: i16,
    id: PointId,
    v: &[f32],
    ty: VecType,
    attributes: Option<&crate::filter::Attributes>,
) -> EngineResult<()> {
    buf.extend_from_slice(&fields.to_be_bytes());
    buf.extend_from_slice(&8i32.to_be_bytes());
    buf.extend_from_slice(&pg_id(id)?.to_be_bytes());
    put_vector_field(buf, id, v, ty)?;
    if let Some(a) = attributes {
        super::filter::encode_copy_attributes(buf, a, id)?;
    }
    Ok(())
}

/// Rows in PostgreSQL's binary `COPY` format: a header, the rows ([`put_copy_row`]), the
/// trailer.
#[cfg(test)]
pub(super) fn encode_copy(
    ids: &[PointId],
    vectors: &[f32],
    dim: usize,
    ty: VecType,
    attributes: Option<&crate::filter::Attributes>,
) -> EngineResult<Vec<u8>> {
    let fields = copy_fields(attributes)?;
    let mut buf = Vec::new();
    put_copy_header(&mut buf);
    for (id, v) in ids.iter().zip(vectors.chunks_exact(dim)) {
        put_copy_row(&mut buf, fields, *id, v, ty, attributes)?;
    }
    put_copy_trailer(&mut buf);
    Ok(buf)
}
