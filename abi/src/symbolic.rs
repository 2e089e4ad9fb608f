//! Symbolic dimensions at the ABI (issue 33): how a function compiled
//! with `tcc compile --dim NAME=MIN..MAX` states them, and the one place
//! a call's input shapes are bound to them.
//!
//! The artifact's table gives a symbolic extent as [`SYMBOLIC`] (`-1`) in
//! its tensor's `shape`; the checksummed description
//! ([`crate::description`]) names it (`TensorEntry::dims`, one name per
//! axis, `""` for a static one) and states each dimension's range
//! (`FunctionEntry::dims`). Before a call the runtime binds every symbolic
//! dimension to the value the inputs give it ([`bind`]: each in its range,
//! the inputs naming one agreeing, every static extent as declared), sizes
//! the outputs from the bound values ([`shape_at`]) and hands the entry
//! every input's then every output's extents, concatenated
//! (`tcc_runtime_api.shapes`, ABI 4), from which the host code reads the
//! extents it computes launches, views and kernel arguments with.

use serde::{Deserialize, Serialize};

/// The OpenCL C macro that, defined at build time (`-DNAME=VALUE`), makes
/// scalar argument `argument` (its position in the kernel's parameter
/// list, after the buffers) of kernel `kernel` a constant: a kernel on a
/// symbolic dimension reads each extent it takes as a scalar through a
/// macro that is this one where defined and the argument otherwise, so
/// that one source builds both as the generic kernel and as a kernel
/// specialized for a call's shapes (the runtime's run-time
/// specialization). `TCC_ARG_matmul_0_5`.
pub fn specialization_macro(kernel: &str, argument: usize) -> String {
    format!("TCC_ARG_{kernel}_{argument}")
}

/// A symbolic extent in a table's `shape` (`int64_t`).
pub const SYMBOLIC: i64 = -1;

/// One symbolic dimension of a function and its inclusive range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DimEntry {
    pub name: String,
    pub min: u64,
    pub max: u64,
}

/// One input or output as [`bind`] reads it: its name (may be empty),
/// its declared shape ([`SYMBOLIC`] for a symbolic extent) and, for a
/// tensor with symbolic extents, the name of each axis's dimension (`""`
/// for a static axis; empty for a static tensor).
#[derive(Clone, Copy, Debug)]
pub struct Declared<'a> {
    pub name: &'a str,
    pub shape: &'a [i64],
    pub dims: &'a [String],
}

impl Declared<'_> {
    /// `?x32` with the dimension's name: `batchx32`, for messages.
    pub fn shape_text(&self) -> String {
        self.shape
            .iter()
            .enumerate()
            .map(|(axis, &d)| {
                if d == SYMBOLIC {
                    match self.dims.get(axis).filter(|n| !n.is_empty()) {
                        Some(name) => name.clone(),
                        None => "?".into(),
                    }
                } else {
                    d.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("x")
    }

    fn label(&self, what: &str, index: usize) -> String {
        if self.name.is_empty() {
            format!("{what} {index}")
        } else {
            format!("{what} {index} ('{}')", self.name)
        }
    }
}

/// The value of each of `dims` that `shapes` (the call's input shapes, in
/// order) give the function `function`'s `inputs`, or the error that
/// names what disagrees: a rank or static extent other than declared, a
/// value outside its dimension's range, or two inputs giving one
/// dimension different values. The caller checked the number of inputs.
pub fn bind(
    function: &str,
    dims: &[DimEntry],
    inputs: &[Declared],
    shapes: &[&[u64]],
) -> Result<Vec<u64>, String> {
    // (value, the input and axis that gave it)
    let mut bound: Vec<Option<(u64, usize, usize)>> = vec![None; dims.len()];
    for (index, (input, shape)) in inputs.iter().zip(shapes).enumerate() {
        if shape.len() != input.shape.len() {
            return Err(format!(
                "{} of @{function} expects {} dimensions ({}), got {}",
                input.label("input", index),
                input.shape.len(),
                input.shape_text(),
                shape.len()
            ));
        }
        for (axis, (&declared, &value)) in input.shape.iter().zip(shape.iter()).enumerate() {
            if declared != SYMBOLIC {
                if declared < 0 || value != declared as u64 {
                    return Err(format!(
                        "{} of @{function} expects shape {}, got {} (dimension {axis} is {declared}, not {value})",
                        input.label("input", index),
                        input.shape_text(),
                        shape
                            .iter()
                            .map(u64::to_string)
                            .collect::<Vec<_>>()
                            .join("x"),
                    ));
                }
                continue;
            }
            let name = input.dims.get(axis).map(String::as_str).unwrap_or("");
            let Some(position) = dims.iter().position(|d| d.name == name) else {
                return Err(format!(
                    "{} of @{function}: its dimension {axis} is symbolic but names no declared dimension ('{name}'): the artifact is damaged",
                    input.label("input", index)
                ));
            };
            let dim = &dims[position];
            if !(dim.min..=dim.max).contains(&value) {
                return Err(format!(
                    "{} of @{function}: dimension {axis} is '{}' = {value}, outside its declared range {}..{} (compiled with --dim {}={}..{})",
                    input.label("input", index),
                    dim.name,
                    dim.min,
                    dim.max,
                    dim.name,
                    dim.min,
                    dim.max
                ));
            }
            match bound[position] {
                None => bound[position] = Some((value, index, axis)),
                Some((earlier, other, other_axis)) if earlier != value => {
                    return Err(format!(
                        "the inputs of @{function} disagree on dimension '{}' ({}..{}): {} gives {earlier} (dimension {other_axis}), {} gives {value} (dimension {axis})",
                        dim.name,
                        dim.min,
                        dim.max,
                        inputs[other].label("input", other),
                        input.label("input", index),
                    ));
                }
                Some(_) => {}
            }
        }
    }
    dims.iter()
        .zip(bound)
        .map(|(dim, value)| {
            value.map(|(v, _, _)| v).ok_or_else(|| {
                format!(
                    "@{function}: no input gives dimension '{}' a value: the artifact is damaged",
                    dim.name
                )
            })
        })
        .collect()
}

/// `tensor`'s shape with every symbolic extent replaced by its dimension's
/// bound value (`values`, in the order of `dims`).
pub fn shape_at(tensor: &Declared, dims: &[DimEntry], values: &[u64]) -> Result<Vec<u64>, String> {
    tensor
        .shape
        .iter()
        .enumerate()
        .map(|(axis, &d)| {
            if d != SYMBOLIC {
                return u64::try_from(d).map_err(|_| format!("extent {d} in a declared shape"));
            }
            let name = tensor.dims.get(axis).map(String::as_str).unwrap_or("");
            dims.iter()
                .position(|dim| dim.name == name)
                .and_then(|p| values.get(p).copied())
                .ok_or_else(|| {
                    format!(
                        "'{}': its dimension {axis} names no declared dimension ('{name}'): the artifact is damaged",
                        tensor.name
                    )
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch() -> Vec<DimEntry> {
        vec![DimEntry {
            name: "batch".into(),
            min: 1,
            max: 64,
        }]
    }

    #[test]
    fn inputs_bind_the_dimension_and_size_the_outputs() {
        let names = vec!["batch".to_string(), String::new()];
        let x = Declared {
            name: "x",
            shape: &[SYMBOLIC, 32],
            dims: &names,
        };
        let values = bind("mlp", &batch(), &[x], &[&[3, 32]]).unwrap();
        assert_eq!(values, [3]);
        let y = Declared {
            name: "y",
            shape: &[SYMBOLIC, 10],
            dims: &names,
        };
        assert_eq!(shape_at(&y, &batch(), &values).unwrap(), [3, 10]);
        assert_eq!(x.shape_text(), "batchx32");
    }

    #[test]
    fn a_value_out_of_range_or_a_disagreement_names_the_dimension() {
        let names = vec!["batch".to_string(), String::new()];
        let a = Declared {
            name: "a",
            shape: &[SYMBOLIC, 16],
            dims: &names,
        };
        let b = Declared { name: "b", ..a };
        let e = bind("f", &batch(), &[a], &[&[65, 16]]).unwrap_err();
        assert!(
            e.contains("'batch' = 65, outside its declared range 1..64"),
            "{e}"
        );
        let e = bind("f", &batch(), &[a], &[&[0, 16]]).unwrap_err();
        assert!(e.contains("'batch' = 0"), "{e}");
        let e = bind("f", &batch(), &[a, b], &[&[3, 16], &[4, 16]]).unwrap_err();
        assert!(
            e.contains("disagree on dimension 'batch' (1..64): input 0 ('a') gives 3"),
            "{e}"
        );
        assert!(e.contains("input 1 ('b') gives 4"), "{e}");
        let e = bind("f", &batch(), &[a], &[&[3, 15]]).unwrap_err();
        assert!(e.contains("expects shape batchx16, got 3x15"), "{e}");
        let e = bind("f", &batch(), &[a], &[&[3]]).unwrap_err();
        assert!(e.contains("expects 2 dimensions"), "{e}");
    }
}
