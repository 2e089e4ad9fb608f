//! `tcc-run --check-numerics` ([`Session::check_numerics`]): find the
//! first kernel that produced a NaN or an infinity. With the check on,
//! each launch of a call reads back the float buffers its kernel writes
//! (the compiler records them per kernel in the artifact's metadata,
//! `kernels[].writes`: argument index and stored type, f16/bf16 included),
//! once before the launch and once after it has finished, and the call
//! stops with an error naming the kernel at the first element that became
//! non-finite. Comparing with the bytes before the launch keeps stale
//! arena contents (or a NaN the kernel merely left in place) from being
//! blamed on it. It serializes the queue and copies every written buffer
//! twice per launch: a debugging mode, off by default.

use half::{bf16, f16};

use super::Session;
use crate::artifact::Artifact;
use crate::error::{Error, Result};

/// How a written buffer stores its floats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Float {
    F16,
    BF16,
    F32,
    F64,
}

impl Float {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "f16" => Float::F16,
            "bf16" => Float::BF16,
            "f32" => Float::F32,
            "f64" => Float::F64,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Float::F16 => "f16",
            Float::BF16 => "bf16",
            Float::F32 => "f32",
            Float::F64 => "f64",
        }
    }

    fn bytes(self) -> usize {
        match self {
            Float::F16 | Float::BF16 => 2,
            Float::F32 => 4,
            Float::F64 => 8,
        }
    }

    fn value(self, b: &[u8]) -> f64 {
        match self {
            Float::F16 => f16::from_le_bytes([b[0], b[1]]).to_f64(),
            Float::BF16 => bf16::from_le_bytes([b[0], b[1]]).to_f64(),
            Float::F32 => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            Float::F64 => f64::from_le_bytes(b[..8].try_into().expect("8 bytes")),
        }
    }
}

/// Per kernel (by the artifact's kernel index), the float arguments it
/// writes.
#[derive(Clone, Debug, Default)]
pub(crate) struct NumericsCheck {
    pub(crate) writes: Vec<Vec<(usize, Float)>>,
}

impl NumericsCheck {
    /// Reads the artifact's record of what each kernel writes.
    pub(crate) fn of(art: &Artifact) -> Result<Self> {
        let missing = || {
            Error::Unsupported(format!(
                "{} does not record which buffers its kernels write (kernels[].writes in its metadata): recompile it with this tcc to check its numerics",
                art.path.display()
            ))
        };
        let metadata: serde_json::Value = art
            .metadata
            .as_deref()
            .and_then(|text| serde_json::from_str(text).ok())
            .ok_or_else(missing)?;
        let kernels = metadata["kernels"].as_array().ok_or_else(missing)?;
        let mut writes = Vec::with_capacity(art.kernel_names.len());
        for name in &art.kernel_names {
            let kernel = kernels
                .iter()
                .find(|k| k["name"].as_str() == Some(name.as_str()))
                .ok_or_else(missing)?;
            let list = kernel["writes"].as_array().ok_or_else(missing)?;
            writes.push(
                list.iter()
                    .filter_map(|entry| {
                        let index = usize::try_from(entry[0].as_u64()?).ok()?;
                        Some((index, Float::parse(entry[1].as_str()?)?))
                    })
                    .collect(),
            );
        }
        Ok(NumericsCheck { writes })
    }
}

/// The first element of `after` that is NaN or infinite and differs from
/// `before` (the buffer's bytes before the launch): its index and value.
pub(crate) fn first_new_non_finite(
    before: &[u8],
    after: &[u8],
    float: Float,
) -> Option<(usize, f64)> {
    let size = float.bytes();
    after
        .chunks_exact(size)
        .zip(before.chunks_exact(size))
        .enumerate()
        .find_map(|(index, (now, was))| {
            let value = float.value(now);
            (!value.is_finite() && now != was).then_some((index, value))
        })
}

/// The error naming the kernel that produced a non-finite value.
pub(crate) fn non_finite_error(
    kernel: &str,
    launch: usize,
    (argument, float): (usize, Float),
    (element, value): (usize, f64),
) -> Error {
    let what = if value.is_nan() {
        "NaN".to_string()
    } else {
        format!("{}inf", if value < 0.0 { "-" } else { "" })
    };
    Error::InvalidInput(format!(
        "check-numerics: kernel `{kernel}` (launch {launch} of the call) produced {what} at element {element} of its argument {argument} ({} storage); every earlier launch produced finite values only",
        float.name()
    ))
}

impl Session {
    /// Turns on the NaN/infinity check of every later call (`tcc-run
    /// --check-numerics`, see the module comment); an artifact compiled
    /// before the compiler recorded what its kernels write is refused.
    pub fn check_numerics(&mut self) -> Result<()> {
        self.numerics = Some(NumericsCheck::of(self.model.artifact())?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_new_non_finite_value_of_each_storage() {
        let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let before = f32s(&[f32::NAN, 1.0, 2.0, 3.0]);
        // A NaN left in place is not the kernel's; the new infinity is.
        let after = f32s(&[f32::NAN, 1.0, f32::INFINITY, f32::NAN]);
        assert_eq!(
            first_new_non_finite(&before, &after, Float::F32),
            Some((2, f64::INFINITY))
        );
        let halves = |v: &[f32]| {
            v.iter()
                .flat_map(|x| f16::from_f32(*x).to_le_bytes())
                .collect::<Vec<u8>>()
        };
        // 70000 overflows half.
        let (was, now) = (halves(&[0.0, 0.0]), halves(&[1.0, 70000.0]));
        assert_eq!(
            first_new_non_finite(&was, &now, Float::F16),
            Some((1, f64::INFINITY))
        );
        let brains = |v: &[f32]| {
            v.iter()
                .flat_map(|x| bf16::from_f32(*x).to_le_bytes())
                .collect::<Vec<u8>>()
        };
        let (was, now) = (brains(&[0.0, 0.0]), brains(&[-f32::INFINITY, f32::NAN]));
        let (index, value) = first_new_non_finite(&was, &now, Float::BF16).unwrap();
        assert_eq!((index, value), (0, f64::NEG_INFINITY));
        assert_eq!(
            first_new_non_finite(&was, &brains(&[1.0, 2.0]), Float::BF16),
            None
        );
        let error = non_finite_error("conv_3", 4, (2, Float::F16), (1, f64::NAN));
        assert!(
            error
                .to_string()
                .contains("kernel `conv_3` (launch 4 of the call) produced NaN at element 1 of its argument 2 (f16 storage)"),
            "{error}"
        );
    }
}
