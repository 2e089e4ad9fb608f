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
use crate::ir::memref::DYNAMIC;
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

/// The reshapes (each used once, but for `tensor.dim`s reading their
/// size) from a product to the one op using the last of them, that value,
/// and the `tensor.dim`s of the last (a symbolic size read for the
/// epilogue's destination).
#[allow(clippy::type_complexity)]
fn reshape_chain<'c>(
    product: Value<'c, 'c>,
) -> Option<(
    Vec<OperationRef<'c, 'c>>,
    Value<'c, 'c>,
    OperationRef<'c, 'c>,
    Vec<OperationRef<'c, 'c>>,
)> {
    let mut chain = Vec::new();
    let mut current = product;
    loop {
        let all = users(current);
        let (dims, others): (Vec<_>, Vec<_>) =
            all.into_iter().partition(|u| op_name(u) == "tensor.dim");
        if others.len() != 1 || (!dims.is_empty() && chain.is_empty()) {
            return None;
        }
        let user = others[0];
        match op_name(&user).as_str() {
            "tensor.collapse_shape" | "tensor.expand_shape" if dims.is_empty() => {
                chain.push(user);
                current = user.result(0).ok()?.into();
            }
            "tensor.collapse_shape" | "tensor.expand_shape" => return None,
            _ => return (!chain.is_empty()).then_some((chain, current, user, dims)),
        }
    }
}

/// The symbolic size a `tensor.dim` of the reshaped product reads, taken
/// from the `tensor.empty` the product is computed into (through its
/// fill): dimension `d` of the reshaped product is the product's `d +
/// units`. Reading the product itself would give it a second user, which
/// keeps form-dispatches from fusing the epilogue.
fn size_from_destination<'c>(
    dim: OperationRef<'c, 'c>,
    contraction: OperationRef<'c, 'c>,
    units: usize,
) -> Option<Value<'c, 'c>> {
    let index = dim
        .operand(1)
        .ok()
        .and_then(defining_op)
        .filter(|c| op_name(c) == "arith.constant")
        .and_then(|c| c.attribute("value").ok())
        .and_then(crate::ir::util::integer_value)?;
    let position = usize::try_from(index).ok()? + units;
    let mut init = contraction
        .operand(contraction.operand_count().checked_sub(1)?)
        .ok()?;
    let mut producer = defining_op(init)?;
    if op_name(&producer) == "linalg.fill" {
        init = producer.operand(1).ok()?;
        producer = defining_op(init)?;
    }
    if op_name(&producer) != "tensor.empty" {
        return None;
    }
    let dims = ranked_dims(init.r#type())?;
    if dims.get(position) != Some(&DYNAMIC) {
        return None;
    }
    let operand = dims[..position].iter().filter(|&&d| d == DYNAMIC).count();
    producer.operand(operand).ok()
}

/// Rewrites the elementwise op reading `contraction`'s product (a matmul's
/// or a grouped convolution's) through reshapes into the product's shape.
/// Returns whether it did.
pub fn reshape_epilogue<'c>(
    context: &'c Context,
    contraction: OperationRef<'c, 'c>,
) -> Result<bool, PassError<'c>> {
    if !(matches!(
        op_name(&contraction).as_str(),
        "linalg.batch_matmul" | "linalg.matmul"
    ) || crate::ir::grouped_conv::of(contraction).is_some())
        || contraction.result_count() != 1
    {
        return Ok(false);
    }
    let Ok(product) = contraction.result(0) else {
        return Ok(false);
    };
    let product: Value = product.into();
    let Some(product_shape) = ranked_dims(product.r#type()) else {
        return Ok(false);
    };
    let Some((chain, reshaped_product, generic, dims)) = reshape_chain(product) else {
        return Ok(false);
    };
    if op_name(&generic) != "linalg.generic" || generic.result_count() != 1 {
        return Ok(false);
    }
    let Some(shape) = ranked_dims(reshaped_product.r#type()) else {
        return Ok(false);
    };
    // Static shapes reshape through one flat dimension; with a symbolic
    // dimension only the product's leading unit dimensions may differ.
    let form = if !product_shape.contains(&DYNAMIC) && !shape.contains(&DYNAMIC) {
        Form::Flat
    } else {
        let units = product_shape.len().saturating_sub(shape.len());
        if units == 0
            || product_shape[..units].iter().any(|&d| d != 1)
            || product_shape[units..] != shape[..]
        {
            return Ok(false);
        }
        Form::UnitPrefix(units)
    };
    // Symbolic sizes read off the reshaped product: only with a unit
    // prefix, where each is one of the product's own, and at constant
    // positions.
    match form {
        Form::Flat if !dims.is_empty() => return Ok(false),
        _ => {}
    }
    let mut sizes = Vec::new();
    if let Form::UnitPrefix(units) = form {
        for dim in &dims {
            let Some(size) = size_from_destination(*dim, contraction, units) else {
                return Ok(false);
            };
            sizes.push((*dim, size));
        }
    }
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
    for (dim, size) in sizes {
        if let Ok(read) = dim.result(0) {
            unsafe { mlir_sys::mlirValueReplaceAllUsesOfWith(read.to_raw(), size.to_raw()) };
        }
        erase_op(dim);
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
                {
                    // The same symbolic sizes, in the same order: the
                    // product's shape only adds leading units.
                    let sizes: Vec<Value> = (0..empty.operand_count())
                        .filter_map(|i| empty.operand(i).ok())
                        .collect();
                    let ty = product.r#type();
                    let op = OperationBuilder::new("tensor.empty", generic.location())
                        .add_operands(&sizes)
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
                    form.reshape(context, generic, operand, &product_shape, true)?
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
    let back = form.reshape(context, next, result, &shape, false)?;
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

/// How the epilogue's operands reach the product's shape and its result
/// comes back.
#[derive(Clone, Copy)]
enum Form {
    /// Static shapes: through one flat dimension.
    Flat,
    /// The product is the epilogue's shape after this many leading unit
    /// dimensions (a symbolic batch: `[1, ?, F]` against `[?, F]`).
    UnitPrefix(usize),
}

impl Form {
    /// `value` reshaped to `shape`: into the product's shape (`expand`),
    /// or the epilogue's result back into its own.
    fn reshape<'c>(
        self,
        context: &'c Context,
        anchor: OperationRef<'c, 'c>,
        value: Value<'c, 'c>,
        shape: &[i64],
        expand: bool,
    ) -> Result<Value<'c, 'c>, PassError<'c>> {
        match self {
            Form::Flat => reshaped(context, anchor, value, shape),
            Form::UnitPrefix(units) => unit_reshape(context, anchor, value, shape, units, expand),
        }
    }
}

/// A ranked type's dimensions, [`DYNAMIC`] for `?`.
fn ranked_dims(ty: Type) -> Option<Vec<i64>> {
    crate::ir::types::ranked_shape(ty)
        .map(|dims| dims.into_iter().map(|d| d.unwrap_or(DYNAMIC)).collect())
}

/// Adds (`expand`) or drops the `units` leading unit dimensions of
/// `value`, giving `shape`: an `expand_shape` whose symbolic sizes are read
/// with `tensor.dim`, or a `collapse_shape`. Built before `anchor`.
fn unit_reshape<'c>(
    context: &'c Context,
    anchor: OperationRef<'c, 'c>,
    value: Value<'c, 'c>,
    shape: &[i64],
    units: usize,
    expand: bool,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let location = anchor.location();
    let block = anchor
        .block()
        .ok_or_else(|| PassError::at(location, "op outside a block"))?;
    let element: Type = unsafe {
        Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(
            value.r#type().to_raw(),
        ))
    };
    let wide = if expand {
        shape.len()
    } else {
        shape.len() + units
    };
    let mut groups = vec![
        (0..=units)
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", "),
    ];
    groups.extend((units + 1..wide).map(|d| d.to_string()));
    let reassociation = Attribute::parse(
        context,
        &format!(
            "[{}]",
            groups
                .iter()
                .map(|g| format!("[{g}]"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
    .ok_or_else(|| PassError::at(location, "cannot build a reassociation"))?;
    let dims: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let ty: Type = RankedTensorType::new(&dims, element, None).into();
    let op = if expand {
        // The symbolic sizes of the result, read off the value.
        let mut sizes = Vec::new();
        for (position, &extent) in shape.iter().enumerate().skip(units) {
            if extent != DYNAMIC {
                continue;
            }
            let index_ty = Type::parse(context, "index").expect("index type");
            let constant = OperationBuilder::new("arith.constant", location)
                .add_results(&[index_ty])
                .add_attributes(&[(
                    Identifier::new(context, "value"),
                    Attribute::parse(context, &format!("{} : index", position - units))
                        .expect("index attribute"),
                )])
                .build()
                .map_err(|e| {
                    PassError::at(location, format!("cannot build arith.constant: {e}"))
                })?;
            let constant = block.insert_operation_before(anchor, constant);
            let dim = OperationBuilder::new("tensor.dim", location)
                .add_operands(&[
                    value,
                    constant
                        .result(0)
                        .map_err(|e| PassError::at(location, e.to_string()))?
                        .into(),
                ])
                .add_results(&[index_ty])
                .build()
                .map_err(|e| PassError::at(location, format!("cannot build tensor.dim: {e}")))?;
            let dim = block.insert_operation_before(anchor, dim);
            sizes.push(Value::from(
                dim.result(0)
                    .map_err(|e| PassError::at(location, e.to_string()))?,
            ));
        }
        OperationBuilder::new("tensor.expand_shape", location)
            .add_operands(&[value])
            .add_operands(&sizes)
            .add_results(&[ty])
            .add_attributes(&[
                (Identifier::new(context, "reassociation"), reassociation),
                (
                    Identifier::new(context, "static_output_shape"),
                    DenseI64ArrayAttribute::new(context, shape).into(),
                ),
            ])
            .build()
    } else {
        OperationBuilder::new("tensor.collapse_shape", location)
            .add_operands(&[value])
            .add_results(&[ty])
            .add_attributes(&[(Identifier::new(context, "reassociation"), reassociation)])
            .build()
    }
    .map_err(|e| PassError::at(location, format!("cannot build a unit reshape: {e}")))?;
    let op = block.insert_operation_before(anchor, op);
    Ok(op
        .result(0)
        .map_err(|e| PassError::at(location, e.to_string()))?
        .into())
}
