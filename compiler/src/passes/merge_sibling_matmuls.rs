//! `tcc-merge-sibling-matmuls`: merges the `tosa.matmul`s that multiply
//! one activation by different constant weights (a transformer's Q, K and
//! V projections, a gated MLP's gate and up projections) into one product
//! of the weights concatenated along N, followed by a `tosa.slice` per
//! original product. Where every sibling is followed by its own add of a
//! constant bias along N, the biases are concatenated and added once too.
//!
//! Why: one product of N = 2304 fills the GPU where three of N = 768 each
//! leave it idle in their tails, reads the activation once instead of
//! three times, and is one launch instead of three (BERT-base: three
//! kernels a layer fewer). The slices are what an exporter's fused
//! projection and `Split` give already (GPT-2's `c_attn`), so everything
//! after them (the attention's strided views, the epilogues) takes them
//! as it takes those.
//!
//! The pass builds the concatenations as `tosa.concat` of the (cloned)
//! weight constants; `tcc-fold-constants`, which runs after it, folds them
//! into one constant. It merges only products of float element types with
//! static shapes, weights of one batch (`1 x K x N`) and zero
//! zero-points, and only where the merged weights stay within
//! `FOLD_ELEMENT_LIMIT` (so that the concatenation is folded, never run).
//! Runs in the graph phase after quantization, which keeps its own
//! products.

use std::collections::BTreeMap;

use melior::Context;
use melior::ir::attribute::IntegerAttribute;
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::r#type::IntegerType;
use melior::ir::{TypeLike, Value, ValueLike};

use super::pass::{NoOptions, PassResult, Root, TccPass};
use crate::ir::constant::{ConstTensor, FOLD_ELEMENT_LIMIT};
use crate::ir::error::PassError;
use crate::ir::tosa_builder::TosaBuilder;
use crate::ir::types::StaticTensor;
use crate::ir::util::{defining_op, erase_op, op_name, ops_named, users};

pub struct MergeSiblingMatmuls;

impl TccPass for MergeSiblingMatmuls {
    const ARGUMENT: &'static str = "tcc-merge-sibling-matmuls";
    const SUMMARY: &'static str = "Merge tosa.matmuls of one activation by constant weights (Q, K, V projections) into one product of the concatenated weights and slices";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tosa"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        // Siblings grouped by their activation and block (opaque
        // pointers), each group in program order (the walk's).
        let mut groups: BTreeMap<(usize, usize), Vec<Sibling<'c>>> = BTreeMap::new();
        let mut order = Vec::new();
        for matmul in ops_named(root, "tosa.matmul") {
            let Some(sibling) = Sibling::of(matmul) else {
                continue;
            };
            let Some(block) = matmul.block() else {
                continue;
            };
            let key = (
                sibling.activation.to_raw().ptr as usize,
                block.to_raw().ptr as usize,
            );
            let group = groups.entry(key).or_default();
            if group.is_empty() {
                order.push(key);
            }
            group.push(sibling);
        }
        for key in order {
            let group = &groups[&key];
            for merge in mergeable(group) {
                merge_group(context, &merge)?;
            }
        }
        Ok(())
    }
}

/// A `tosa.matmul` that may be merged with its siblings, and its bias add
/// if it has one.
#[derive(Clone, Copy)]
struct Sibling<'c> {
    matmul: OperationRef<'c, 'c>,
    activation: Value<'c, 'c>,
    /// The weights' constant op (`1 x K x N`).
    weights: OperationRef<'c, 'c>,
    /// The `tosa.add` of a constant `1 x 1 x N` bias that is the product's
    /// only user, and the bias's constant op.
    bias: Option<(OperationRef<'c, 'c>, OperationRef<'c, 'c>)>,
    /// K, N and the rows (`batch x M` of the activation).
    k: i64,
    n: i64,
}

impl<'c> Sibling<'c> {
    fn of(matmul: OperationRef<'c, 'c>) -> Option<Self> {
        let activation = matmul.operand(0).ok()?;
        let weights_value = matmul.operand(1).ok()?;
        let a = StaticTensor::of(activation.r#type())?;
        let b = StaticTensor::of(weights_value.r#type())?;
        let c = StaticTensor::of(matmul.result(0).ok()?.r#type())?;
        if a.shape.len() != 3 || b.shape.len() != 3 || b.shape[0] != 1 || a.shape[0] != 1 {
            return None;
        }
        if !is_float(a.element) || !is_float(b.element) || !is_float(c.element) {
            return None;
        }
        // Zero points: constants equal to zero.
        for index in [2, 3] {
            let zero_point = ConstTensor::of_value(matmul.operand(index).ok()?)?;
            if zero_point.bytes.iter().any(|&byte| byte != 0) {
                return None;
            }
        }
        let weights = constant_op(weights_value)?;
        let result: Value = matmul.result(0).ok()?.into();
        let result_users = users(result);
        let bias = match result_users.as_slice() {
            [add] if op_name(add) == "tosa.add" => {
                let (x, y) = (add.operand(0).ok()?, add.operand(1).ok()?);
                let other = if x == result { y } else { x };
                let shape = StaticTensor::of(other.r#type())?.shape;
                let out = StaticTensor::of(add.result(0).ok()?.r#type())?;
                match constant_op(other) {
                    Some(bias) if shape == [1, 1, b.shape[2]] && out.shape == c.shape => {
                        Some((*add, bias))
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        Some(Sibling {
            matmul,
            activation,
            weights,
            bias,
            k: b.shape[1],
            n: b.shape[2],
        })
    }
}

/// The `tosa.const` defining `value`, if one does.
fn constant_op<'c>(value: Value<'c, 'c>) -> Option<OperationRef<'c, 'c>> {
    defining_op(value).filter(|op| op_name(op) == "tosa.const")
}

fn is_float(element: melior::ir::Type) -> bool {
    element.is_f16() || element.is_bf16() || element.is_f32() || element.is_f64()
}

/// The sets of siblings of one activation to merge: those of the first
/// one's K, element types and bias form (all with a bias or none), two or
/// more, as long as the concatenated weights stay foldable.
fn mergeable<'c>(group: &[Sibling<'c>]) -> Vec<Vec<Sibling<'c>>> {
    let mut left: Vec<Sibling<'c>> = group.to_vec();
    let mut merges = Vec::new();
    while let Some(first) = left.first().copied() {
        let key = |s: &Sibling<'c>| {
            (
                s.k,
                s.bias.is_some(),
                s.matmul
                    .operand(1)
                    .map(|w| w.r#type())
                    .ok()
                    .map(|t| StaticTensor::of(t).map(|t| t.element)),
                s.matmul
                    .result(0)
                    .map(|r| r.r#type())
                    .ok()
                    .map(|t| StaticTensor::of(t).map(|t| t.element)),
            )
        };
        let (same, rest): (Vec<_>, Vec<_>) = left.into_iter().partition(|s| key(s) == key(&first));
        left = rest;
        let mut merge = Vec::new();
        let mut elements = 0i64;
        for sibling in same {
            let size = sibling.k * sibling.n;
            if elements + size > FOLD_ELEMENT_LIMIT {
                continue;
            }
            elements += size;
            merge.push(sibling);
        }
        if merge.len() >= 2 {
            merges.push(merge);
        }
    }
    merges
}

/// Rewrites one set of siblings: before the first product (in program
/// order), the concatenated weights (and biases), one product (and add),
/// and a slice per sibling in place of its product (or its add).
fn merge_group<'c>(context: &'c Context, siblings: &[Sibling<'c>]) -> Result<(), PassError<'c>> {
    // The group is in program order, all in one block.
    let first = siblings[0].matmul;
    let b = TosaBuilder::before(context, first)?;
    let activation = siblings[0].activation;
    let rows = StaticTensor::of(activation.r#type())
        .ok_or_else(|| b.error("the activation has no static shape"))?
        .shape[1];
    let result = StaticTensor::of(
        first
            .result(0)
            .map_err(|e| b.error(e.to_string()))?
            .r#type(),
    )
    .ok_or_else(|| b.error("the product has no static shape"))?;
    let n_total: i64 = siblings.iter().map(|s| s.n).sum();
    let k = siblings[0].k;
    let weights: Vec<Value> = siblings
        .iter()
        .map(|s| clone_constant(&b, s.weights))
        .collect::<Result<_, _>>()?;
    let weight_element = StaticTensor::of(weights[0].r#type())
        .ok_or_else(|| b.error("the weights have no static shape"))?
        .element;
    let merged_weights = concat(&b, &weights, vec![1, k, n_total], weight_element)?;
    let zero_points = [
        first.operand(2).map_err(|e| b.error(e.to_string()))?,
        first.operand(3).map_err(|e| b.error(e.to_string()))?,
    ];
    let product_type = StaticTensor {
        shape: vec![1, rows, n_total],
        element: result.element,
    };
    let mut merged = b.insert(
        "tosa.matmul",
        &[activation, merged_weights, zero_points[0], zero_points[1]],
        product_type.to_type(),
        &[],
    )?;
    if siblings[0].bias.is_some() {
        let biases: Vec<Value> = siblings
            .iter()
            .map(|s| clone_constant(&b, s.bias.expect("every sibling has a bias").1))
            .collect::<Result<_, _>>()?;
        let bias_element = StaticTensor::of(biases[0].r#type())
            .ok_or_else(|| b.error("the bias has no static shape"))?
            .element;
        let merged_bias = concat(&b, &biases, vec![1, 1, n_total], bias_element)?;
        merged = b.insert(
            "tosa.add",
            &[merged_bias, merged],
            product_type.to_type(),
            &[],
        )?;
    }
    // Every slice first: the builder inserts before the first product,
    // which goes with the others after.
    let mut offset = 0;
    let mut slices = Vec::new();
    for sibling in siblings {
        let start = b.const_shape(&[0, 0, offset])?;
        let size = b.const_shape(&[1, rows, sibling.n])?;
        let slice_type = StaticTensor {
            shape: vec![1, rows, sibling.n],
            element: result.element,
        };
        slices.push(b.insert(
            "tosa.slice",
            &[merged, start, size],
            slice_type.to_type(),
            &[],
        )?);
        offset += sibling.n;
    }
    for (sibling, slice) in siblings.iter().zip(slices) {
        let replaced = sibling.bias.map_or(sibling.matmul, |(add, _)| add);
        let old: Value = replaced
            .result(0)
            .map_err(|e| b.error(e.to_string()))?
            .into();
        unsafe { mlir_sys::mlirValueReplaceAllUsesOfWith(old.to_raw(), slice.to_raw()) };
        if let Some((add, _)) = sibling.bias {
            erase_op(add);
        }
        erase_op(sibling.matmul);
    }
    Ok(())
}

/// A copy of the constant op `constant` at the builder's position (the
/// original may come later in the block).
fn clone_constant<'c>(
    b: &TosaBuilder<'c>,
    constant: OperationRef<'c, 'c>,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let value = constant
        .attribute("values")
        .map_err(|_| b.error(format!("{} has no values", op_name(&constant))))?;
    let ty = constant
        .result(0)
        .map_err(|e| b.error(e.to_string()))?
        .r#type();
    b.insert(&op_name(&constant), &[], ty, &[("values", value)])
}

/// `tosa.concat` of `parts` along their last axis (2), of `shape`.
fn concat<'c>(
    b: &TosaBuilder<'c>,
    parts: &[Value<'c, 'c>],
    shape: Vec<i64>,
    element: melior::ir::Type<'c>,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let i32 = IntegerType::new(b.context(), 32).into();
    let axis = IntegerAttribute::new(i32, 2).into();
    b.insert(
        "tosa.concat",
        parts,
        StaticTensor { shape, element }.to_type(),
        &[("axis", axis)],
    )
}
