//! How a batch splits over a function's signature ([`SplitPlan`]: which
//! inputs are cut along axis 0, into how many parts) and the parts
//! themselves, as views of the caller's tensors (no copy) for
//! [`GroupSession::run_split`](super::GroupSession::run_split) and the
//! driver-neutral [`crate::hal::Group::run_split`], and the concatenation
//! of the parts' outputs that both use.

use crate::FunctionInfo;
use crate::async_call::InputView;
use crate::error::{Error, Result};
use crate::tensor::{HostTensor, type_string};

/// Part `j` of `parts` of a split call's inputs, as views of them: the
/// split ones cut along axis 0, the others whole.
pub(crate) fn split_views<'a>(
    inputs: &'a [HostTensor],
    split: &[bool],
    parts: usize,
    j: usize,
) -> Vec<InputView<'a>> {
    inputs
        .iter()
        .zip(split)
        .map(|(t, &split)| {
            if !split {
                return InputView {
                    dtype: t.dtype,
                    shape: t.shape.clone(),
                    bytes: &t.bytes,
                };
            }
            let chunk = t.bytes.len() / parts;
            let mut shape = t.shape.clone();
            shape[0] /= parts;
            InputView {
                dtype: t.dtype,
                shape,
                bytes: &t.bytes[j * chunk..(j + 1) * chunk],
            }
        })
        .collect()
}

/// How a batch splits over a function's signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitPlan {
    /// Parts along axis 0 (1: no input is split).
    pub parts: usize,
    /// Per input: split along axis 0 (`false`: passed whole to every part).
    pub split: Vec<bool>,
}

impl SplitPlan {
    /// Checks the caller's input types against `f`'s per-part signature.
    pub fn new<'a>(
        f: &FunctionInfo,
        types: impl IntoIterator<Item = (crate::DType, &'a [usize])>,
    ) -> Result<Self> {
        let types: Vec<(crate::DType, &[usize])> = types.into_iter().collect();
        if f.is_dynamic() {
            // Parts of one fixed batch; a symbolic batch splits as the
            // caller chooses (issue 33): not yet.
            return Err(Error::InvalidInput(format!(
                "@{} has symbolic dimensions, which a call split across devices does not take yet: run it on one device, or compile one shape with --input-shape",
                f.name
            )));
        }
        if types.len() != f.inputs.len() {
            return Err(Error::InvalidInput(format!(
                "@{} takes {} inputs, got {}",
                f.name,
                f.inputs.len(),
                types.len()
            )));
        }
        let mut parts: Option<usize> = None;
        let mut split = Vec::with_capacity(types.len());
        for (i, ((dtype, shape), d)) in types.iter().zip(&f.inputs).enumerate() {
            let want = type_string(&d.shape, d.dtype);
            let got = type_string(shape, *dtype);
            if *dtype != d.dtype {
                return Err(Error::InvalidInput(format!(
                    "input {i} of @{} is {got}; the function takes {want}",
                    f.name
                )));
            }
            if *shape == d.shape.as_slice() {
                split.push(false);
                continue;
            }
            let k = match (shape.split_first(), d.shape.split_first()) {
                (Some((&n, rest)), Some((&m, want_rest)))
                    if rest == want_rest && m > 0 && n % m == 0 && n > 0 =>
                {
                    n / m
                }
                _ => {
                    return Err(Error::InvalidInput(format!(
                        "input {i} of @{} is {got}; the function takes {want} per device: give it whole, or with axis 0 a multiple of {} to split it across devices",
                        f.name,
                        d.shape.first().copied().unwrap_or(0)
                    )));
                }
            };
            match parts {
                Some(p) if p != k => {
                    return Err(Error::InvalidInput(format!(
                        "input {i} of @{} ({got}) splits into {k} parts, an earlier input into {p}",
                        f.name
                    )));
                }
                _ => parts = Some(k),
            }
            split.push(true);
        }
        let parts = parts.unwrap_or(1);
        if parts > 1
            && let Some(o) = f.outputs.iter().position(|d| d.shape.is_empty())
        {
            return Err(Error::InvalidInput(format!(
                "output {o} of @{} is a scalar: a split call cannot concatenate it",
                f.name
            )));
        }
        Ok(SplitPlan { parts, split })
    }
}

/// The outputs of a split call: each output of the parts (`parts[j]` is
/// part `j`'s outputs, each of `f`'s per-part type) concatenated along
/// axis 0.
pub(crate) fn concat_parts(f: &FunctionInfo, parts: &[Vec<HostTensor>]) -> Result<Vec<HostTensor>> {
    (0..f.outputs.len())
        .map(|o| {
            let d = &f.outputs[o];
            let mut shape = d.shape.clone();
            shape[0] *= parts.len();
            let mut bytes = crate::HostBytes::zeroed(d.byte_size() * parts.len());
            let chunk = d.byte_size();
            for (j, p) in parts.iter().enumerate() {
                bytes[j * chunk..(j + 1) * chunk].copy_from_slice(&p[o].bytes);
            }
            HostTensor::from_bytes(d.dtype, shape, bytes)
        })
        .collect()
}
