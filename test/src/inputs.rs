//! Deterministic pseudo-random inputs from a function's input descriptions
//! (seeded by the model and function names), and the f16 conversions they
//! and the comparison need.

use anyhow::{Result, bail, ensure};
use tcc_runtime::{DType, HostTensor, TensorDesc};

pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, &b| {
        (hash ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// splitmix64: small, fast, and the same everywhere.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 24 bits, so every value is an exact f32.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next() >> 40) as f64 / (1u64 << 24) as f64
    }

    /// Uniform integer in [lo, hi].
    pub(crate) fn int(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (hi - lo + 1) as u64;
        lo + (self.next() % span) as i64
    }
}

pub(crate) fn random_tensor(
    desc: &TensorDesc,
    range: Option<(f64, f64)>,
    seed: u64,
) -> Result<HostTensor> {
    let mut rng = Rng(seed);
    let count: usize = desc.shape.iter().product();
    let mut bytes = Vec::with_capacity(count * desc.dtype.size());
    let int_range = |default: (i64, i64)| -> Result<(i64, i64)> {
        match range {
            None => Ok(default),
            Some((lo, hi)) if lo.fract() == 0.0 && hi.fract() == 0.0 => Ok((lo as i64, hi as i64)),
            Some(_) => bail!("INPUT-RANGE of an integer input must be integers"),
        }
    };
    match desc.dtype {
        DType::F32
        | DType::F16
        | DType::BF16
        | DType::F64
        | DType::F8E4M3FN
        | DType::F8E4M3FNUZ
        | DType::F8E5M2
        | DType::F8E5M2FNUZ
        | DType::F4E2M1 => {
            let (lo, hi) = range.unwrap_or((-1.0, 1.0));
            for _ in 0..count {
                let wide = lo + (hi - lo) * rng.unit();
                let value = wide as f32;
                match desc.dtype {
                    DType::F32 => bytes.extend_from_slice(&value.to_le_bytes()),
                    DType::F16 => bytes.extend_from_slice(&f32_to_f16(value).to_le_bytes()),
                    DType::BF16 => {
                        bytes.extend_from_slice(&half::bf16::from_f32(value).to_le_bytes())
                    }
                    d if d.minifloat().is_some() => {
                        bytes.push(d.minifloat().expect("a minifloat").encode(wide, true))
                    }
                    _ => bytes.extend_from_slice(&wide.to_le_bytes()),
                }
            }
        }
        DType::I16 | DType::U8 | DType::U16 | DType::U32 | DType::U64 => {
            let default = if desc.dtype == DType::I16 {
                (-8, 8)
            } else {
                (0, 16)
            };
            let (lo, hi) = int_range(default)?;
            for _ in 0..count {
                let value = rng.int(lo, hi);
                let all = value.to_le_bytes();
                bytes.extend_from_slice(&all[..desc.dtype.size()]);
            }
        }
        DType::I32 => {
            let (lo, hi) = int_range((-8, 8))?;
            for _ in 0..count {
                bytes.extend_from_slice(&(rng.int(lo, hi) as i32).to_le_bytes());
            }
        }
        DType::I64 => {
            let (lo, hi) = int_range((-8, 8))?;
            for _ in 0..count {
                bytes.extend_from_slice(&rng.int(lo, hi).to_le_bytes());
            }
        }
        DType::I8 => {
            let (lo, hi) = int_range((-8, 8))?;
            for _ in 0..count {
                bytes.push(rng.int(lo, hi) as i8 as u8);
            }
        }
        DType::Bool => {
            let (lo, hi) = int_range((0, 1))?;
            ensure!(lo >= 0 && hi <= 1, "an i1 input's range must lie in [0, 1]");
            for _ in 0..count {
                bytes.push(rng.int(lo, hi) as u8);
            }
        }
    }
    Ok(HostTensor::new(desc.dtype, desc.shape.clone(), bytes)?)
}

pub(crate) fn f32_to_f16(value: f32) -> u16 {
    // Round to nearest even, enough for test inputs in a small range.
    let bits = value.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exponent = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    let mantissa = bits & 0x7f_ffff;
    if exponent <= 0 {
        if exponent < -10 {
            return sign;
        }
        let m = (mantissa | 0x80_0000) >> (1 - exponent);
        let half = (m + 0xfff + ((m >> 13) & 1)) >> 13;
        return sign | half as u16;
    }
    if exponent >= 31 {
        return sign | 0x7c00;
    }
    let rounded = ((exponent as u32) << 10 | mantissa >> 13)
        + (((mantissa & 0x1fff) + ((mantissa >> 13) & 1)) > 0x1000) as u32;
    sign | rounded as u16
}

#[cfg(test)]
pub(crate) fn f16_to_f32(bits: u16) -> f32 {
    let sign = ((bits & 0x8000) as u32) << 16;
    let exponent = ((bits >> 10) & 0x1f) as u32;
    let mantissa = (bits & 0x3ff) as u32;
    let value = match exponent {
        0 => {
            return f32::from_bits(sign)
                + (if sign != 0 { -1.0 } else { 1.0 }) * mantissa as f32 * 2f32.powi(-24);
        }
        31 => sign | 0x7f80_0000 | (mantissa << 13),
        e => sign | ((e + 127 - 15) << 23) | (mantissa << 13),
    };
    f32::from_bits(value)
}
