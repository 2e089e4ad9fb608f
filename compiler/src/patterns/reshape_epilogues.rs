//! Elementwise consumers of a matmul moved into the matmul's shape, used
//! by `tcc-reshape-epilogues`.
//!
//! An ONNX `MatMul` of a `[batch, tokens, features]` activation by a
//! weight matrix reaches the linalg phase as a `batch_matmul` over
//! `[1, batch x tokens, features]` between two reshapes; the bias-free
//! epilogue that follows (a GELU, a residual add) computes on
//! `[batch, tokens, features]`, so it reads the product through a
//! `collapse_shape`/`expand_shape` pair. `tcc-form-dispatches` makes an
//! elementwise op the GEMM's epilogue only when it reads the product
//! directly with the same type, so at every batch above 1 each of these
//! ran as a kernel of its own, reading and writing the whole activation
//! once more (BERT-base at batch 32: the GELU and the two residual adds of
//! each layer, 0.6 ms of 7.9 on an H200). With a batch of 1 the reshapes
//! fold away and the epilogue fuses, which is the form this gives every
//! batch: the consumer's iteration space becomes the product's, its other
//! operands are reshaped to it (views after bufferization), and its result
//! is reshaped back for its users.

use melior::Context;
use melior::ir::attribute::AttributeLike;
use melior::ir::attribute::{Attribute, DenseI64ArrayAttribute};
use melior::ir::operation::{OperationBuilder, OperationLike, OperationMutLike, OperationRef};
use melior::ir::r#type::RankedTensorType;
use melior::ir::{BlockLike, Identifier, Type, TypeLike, Value, ValueLike};

use crate::ir::error::PassError;
use crate::ir::operand::init_operands;
use crate::ir::types::static_shape;
use crate::ir::util::{defining_op, erase_op, op_name, use_count, users};

/// A dimension or constant result of an indexing map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MapResult {
    Dim(usize),
    Constant(i64),
}

/// An affine map attribute's dimension count and results, when every
/// result is a dimension or a constant.
fn map_of(attribute: Attribute) -> Option<(usize, Vec<MapResult>)> {
    let raw = attribute.to_raw();
    if !unsafe { mlir_sys::mlirAttributeIsAAffineMap(raw) } {
        return None;
    }
    let map = unsafe { mlir_sys::mlirAffineMapAttrGetValue(raw) };
    let dims = usize::try_from(unsafe { mlir_sys::mlirAffineMapGetNumDims(map) }).ok()?;
    let count = unsafe { mlir_sys::mlirAffineMapGetNumResults(map) };
    let mut results = Vec::new();
    for index in 0..count {
        let expr = unsafe { mlir_sys::mlirAffineMapGetResult(map, index) };
        if unsafe { mlir_sys::mlirAffineExprIsADim(expr) } {
            let position = unsafe { mlir_sys::mlirAffineDimExprGetPosition(expr) };
            results.push(MapResult::Dim(usize::try_from(position).ok()?));
        } else if unsafe { mlir_sys::mlirAffineExprIsAConstant(expr) } {
            results.push(MapResult::Constant(unsafe {
                mlir_sys::mlirAffineConstantExprGetValue(expr)
            }));
        } else {
            return None;
        }
    }
    Some((dims, results))
}

fn map_text(dims: usize, results: &[MapResult]) -> String {
    let names: Vec<String> = (0..dims).map(|d| format!("d{d}")).collect();
    let results: Vec<String> = results
        .iter()
        .map(|r| match r {
            MapResult::Dim(d) => format!("d{d}"),
            MapResult::Constant(c) => c.to_string(),
        })
        .collect();
    format!(
        "affine_map<({}) -> ({})>",
        names.join(", "),
        results.join(", ")
    )
}

/// `value` (a static tensor) reshaped to `shape` through one flat
/// dimension, as views: `expand_shape(collapse_shape(value))`, built
/// before `anchor`.
fn reshaped<'c>(
    context: &'c Context,
    anchor: OperationRef<'c, 'c>,
    value: Value<'c, 'c>,
    shape: &[i64],
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let location = anchor.location();
    let block = anchor
        .block()
        .ok_or_else(|| PassError::at(location, "op outside a block"))?;
    let from = static_shape(value.r#type())
        .ok_or_else(|| PassError::at(location, "a reshaped epilogue operand is not static"))?;
    let element: Type = unsafe {
        Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(
            value.r#type().to_raw(),
        ))
    };
    let count: i64 = from.iter().product();
    let all = |rank: usize| -> Attribute<'c> {
        let dims: Vec<String> = (0..rank).map(|d| d.to_string()).collect();
        Attribute::parse(context, &format!("[[{}]]", dims.join(", "))).expect("reassociation")
    };
    let mut current = value;
    if from.len() != 1 {
        let flat = RankedTensorType::new(&[count as u64], element, None).into();
        let op = OperationBuilder::new("tensor.collapse_shape", location)
            .add_operands(&[current])
            .add_results(&[flat])
            .add_attributes(&[(Identifier::new(context, "reassociation"), all(from.len()))])
            .build()
            .map_err(|e| {
                PassError::at(location, format!("cannot build tensor.collapse_shape: {e}"))
            })?;
        let op = block.insert_operation_before(anchor, op);
        current = op
            .result(0)
            .map_err(|e| PassError::at(location, e.to_string()))?
            .into();
    }
    if shape.len() != 1 {
        let dims: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
        let ty = RankedTensorType::new(&dims, element, None).into();
        let op = OperationBuilder::new("tensor.expand_shape", location)
            .add_operands(&[current])
            .add_results(&[ty])
            .add_attributes(&[
                (Identifier::new(context, "reassociation"), all(shape.len())),
                (
                    Identifier::new(context, "static_output_shape"),
                    DenseI64ArrayAttribute::new(context, shape).into(),
                ),
            ])
            .build()
            .map_err(|e| {
                PassError::at(location, format!("cannot build tensor.expand_shape: {e}"))
            })?;
        let op = block.insert_operation_before(anchor, op);
        current = op
            .result(0)
            .map_err(|e| PassError::at(location, e.to_string()))?
            .into();
    }
    Ok(current)
}

/// The reshapes (each used once) from a product to the one op using the
/// last of them, and that value.
fn reshape_chain<'c>(
    product: Value<'c, 'c>,
) -> Option<(
    Vec<OperationRef<'c, 'c>>,
    Value<'c, 'c>,
    OperationRef<'c, 'c>,
)> {
    let mut chain = Vec::new();
    let mut current = product;
    loop {
        if use_count(current) != 1 {
            return None;
        }
        let user = users(current).into_iter().next()?;
        match op_name(&user).as_str() {
            "tensor.collapse_shape" | "tensor.expand_shape" => {
                chain.push(user);
                current = user.result(0).ok()?.into();
            }
            _ => return (!chain.is_empty()).then_some((chain, current, user)),
        }
    }
}

/// Rewrites the elementwise op reading `contraction`'s product through
/// reshapes into the product's shape. Returns whether it did.
pub fn reshape_epilogue<'c>(
    context: &'c Context,
    contraction: OperationRef<'c, 'c>,
) -> Result<bool, PassError<'c>> {
    if !matches!(
        op_name(&contraction).as_str(),
        "linalg.batch_matmul" | "linalg.matmul"
    ) || contraction.result_count() != 1
    {
        return Ok(false);
    }
    let Ok(product) = contraction.result(0) else {
        return Ok(false);
    };
    let product: Value = product.into();
    let Some(product_shape) = static_shape(product.r#type()) else {
        return Ok(false);
    };
    let Some((chain, reshaped_product, generic)) = reshape_chain(product) else {
        return Ok(false);
    };
    if op_name(&generic) != "linalg.generic" || generic.result_count() != 1 {
        return Ok(false);
    }
    let Some(shape) = static_shape(reshaped_product.r#type()) else {
        return Ok(false);
    };
    let Ok(result) = generic.result(0) else {
        return Ok(false);
    };
    let result: Value = result.into();
    // Same element type and shape as the reshaped product: the epilogue
    // then writes the product's type, as form-dispatches requires.
    if result.r#type() != reshaped_product.r#type() {
        return Ok(false);
    }
    // All parallel, no index computations in the body.
    let Ok(iterators) = generic.attribute("iterator_types") else {
        return Ok(false);
    };
    let iterator_count = unsafe { mlir_sys::mlirArrayAttrGetNumElements(iterators.to_raw()) };
    if usize::try_from(iterator_count).ok() != Some(shape.len())
        || !iterators
            .to_string()
            .split(',')
            .all(|i| i.contains("parallel"))
    {
        return Ok(false);
    }
    let mut has_index = false;
    generic.walk(melior::ir::operation::WalkOrder::PreOrder, |op| {
        if op_name(&op) == "linalg.index" {
            has_index = true;
        }
        melior::ir::operation::WalkResult::Advance
    });
    if has_index {
        return Ok(false);
    }
    let Ok(maps) = generic.attribute("indexing_maps") else {
        return Ok(false);
    };
    let map_count = unsafe { mlir_sys::mlirArrayAttrGetNumElements(maps.to_raw()) };
    if usize::try_from(map_count).ok() != Some(generic.operand_count()) {
        return Ok(false);
    }
    let (rank, new_rank) = (shape.len(), product_shape.len());
    // The trailing dimensions both shapes share: a broadcast operand may
    // index only these.
    let suffix = shape
        .iter()
        .rev()
        .zip(product_shape.iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let identity: Vec<MapResult> = (0..rank).map(MapResult::Dim).collect();
    let inits = init_operands(generic);
    let mut plan = Vec::new(); // (operand index, new map, how to rewrite)
    let mut reads_product = 0;
    for index in 0..generic.operand_count() {
        let Ok(operand) = generic.operand(index) else {
            return Ok(false);
        };
        let map = unsafe {
            Attribute::from_raw(mlir_sys::mlirArrayAttrGetElement(
                maps.to_raw(),
                index as isize,
            ))
        };
        let Some((dims, results)) = map_of(map) else {
            return Ok(false);
        };
        if dims != rank {
            return Ok(false);
        }
        let is_init = inits.contains(&operand);
        if results == identity {
            if operand == reshaped_product {
                if is_init {
                    return Ok(false);
                }
                reads_product += 1;
                plan.push((
                    index,
                    (0..new_rank).map(MapResult::Dim).collect(),
                    Rewrite::Product,
                ));
            } else {
                plan.push((
                    index,
                    (0..new_rank).map(MapResult::Dim).collect(),
                    Rewrite::Reshape,
                ));
            }
        } else if is_init {
            return Ok(false);
        } else {
            let mut moved = Vec::new();
            for r in &results {
                match *r {
                    MapResult::Dim(d) if d >= rank - suffix => {
                        moved.push(MapResult::Dim(d - (rank - suffix) + (new_rank - suffix)))
                    }
                    MapResult::Dim(_) => return Ok(false),
                    MapResult::Constant(c) => moved.push(MapResult::Constant(c)),
                }
            }
            plan.push((index, moved, Rewrite::Keep));
        }
    }
    if reads_product != 1 {
        return Ok(false);
    }
    // Operands first (built before the generic), then the maps, iterators
    // and result type, then the reshape back for the users.
    for (index, _, rewrite) in &plan {
        let operand = generic
            .operand(*index)
            .map_err(|e| PassError::at(generic.location(), e.to_string()))?;
        let replacement = match rewrite {
            Rewrite::Keep => continue,
            Rewrite::Product => product,
            Rewrite::Reshape => {
                if let Some(empty) = defining_op(operand)
                    && op_name(&empty) == "tensor.empty"
                    && empty.operand_count() == 0
                {
                    let ty = product.r#type();
                    let op = OperationBuilder::new("tensor.empty", generic.location())
                        .add_results(&[ty])
                        .build()
                        .map_err(|e| {
                            PassError::at(
                                generic.location(),
                                format!("cannot build tensor.empty: {e}"),
                            )
                        })?;
                    let block = generic
                        .block()
                        .ok_or_else(|| PassError::at(generic.location(), "op outside a block"))?;
                    let op = block.insert_operation_before(generic, op);
                    op.result(0)
                        .map_err(|e| PassError::at(generic.location(), e.to_string()))?
                        .into()
                } else {
                    reshaped(context, generic, operand, &product_shape)?
                }
            }
        };
        unsafe {
            mlir_sys::mlirOperationSetOperand(
                generic.to_raw(),
                *index as isize,
                replacement.to_raw(),
            )
        };
    }
    let maps_text: Vec<String> = plan
        .iter()
        .map(|(_, map, _)| map_text(new_rank, map))
        .collect();
    let new_maps = Attribute::parse(context, &format!("[{}]", maps_text.join(", ")))
        .ok_or_else(|| PassError::at(generic.location(), "cannot build the epilogue's maps"))?;
    let new_iterators = Attribute::parse(
        context,
        &format!(
            "[{}]",
            vec!["#linalg.iterator_type<parallel>"; new_rank].join(", ")
        ),
    )
    .ok_or_else(|| PassError::at(generic.location(), "cannot build the epilogue's iterators"))?;
    let mut generic_mut =
        unsafe { melior::ir::operation::OperationRefMut::from_raw(generic.to_raw()) };
    generic_mut.set_attribute("indexing_maps", new_maps);
    generic_mut.set_attribute("iterator_types", new_iterators);
    unsafe { mlir_sys::mlirValueSetType(result.to_raw(), product.r#type().to_raw()) };
    // The users read the result in its old shape.
    let next = generic
        .next_in_block()
        .ok_or_else(|| PassError::at(generic.location(), "epilogue without a successor"))?;
    let next = unsafe { OperationRef::from_raw(next.to_raw()) };
    let back = reshaped(context, next, result, &shape)?;
    let first_back = defining_op(back)
        .and_then(|op| {
            if op.operand(0).ok() == Some(result) {
                Some(op)
            } else {
                op.operand(0).ok().and_then(defining_op)
            }
        })
        .ok_or_else(|| PassError::at(generic.location(), "reshape back without an op"))?;
    for user in users(result) {
        if crate::ir::util::same_op(&user, &first_back) {
            continue;
        }
        for index in 0..user.operand_count() {
            if user.operand(index).ok() == Some(result) {
                unsafe {
                    mlir_sys::mlirOperationSetOperand(user.to_raw(), index as isize, back.to_raw())
                };
            }
        }
    }
    // The reshapes between product and epilogue are dead now.
    for op in chain.into_iter().rev() {
        if op.result(0).is_ok_and(|r| use_count(r.into()) == 0) {
            erase_op(op);
        }
    }
    Ok(true)
}

/// How an epilogue operand reaches the product's shape.
enum Rewrite {
    /// The product itself (the reshapes dropped).
    Product,
    /// Reshaped through one flat dimension (or a fresh empty tensor).
    Reshape,
    /// A broadcast operand indexed by shared trailing dimensions: its map
    /// moves, the value stays.
    Keep,
}
