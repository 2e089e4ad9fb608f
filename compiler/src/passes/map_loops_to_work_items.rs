//! `tcc-map-loops-to-work-items`: maps each kernel's parallel loop nest onto
//! the work-items of its launch.
//!
//! After `convert-linalg-to-parallel-loops`, a kernel body is a sequence of
//! `scf.parallel` nests over the same parallel points (a fill, a reduction,
//! its epilogue). Each nest becomes a grid-stride loop over the linearized
//! iteration space, `for (i = global_id; i < points; i += global_size)`,
//! delinearized into the nest's induction variables. All output dimensions
//! are mapped; reduction loops (`scf.for` inside the nest) stay sequential
//! per work-item, so reductions run parallel over their output elements.
//! Because every nest of a kernel is delinearized the same way, the work-item
//! that writes an element in one nest is the one that reads it in the next,
//! which is what makes fused fills and epilogues safe without barriers.

use melior::Context;
use melior::ir::attribute::IntegerAttribute;
use melior::ir::operation::{
    OperationBuilder, OperationLike, OperationMutLike, OperationRef, OperationRefMut,
};
use melior::ir::{
    Attribute, Block, BlockLike, BlockRef, Identifier, Location, Region, RegionLike, Type, Value,
    ValueLike,
};

use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::ir::util::{body_ops, body_ops_named, defining_op, integer_value, op_name, ops_named};

pub struct MapLoopsToWorkItems;

struct Inserter<'c> {
    context: &'c Context,
    block: BlockRef<'c, 'c>,
    before: OperationRef<'c, 'c>,
    location: Location<'c>,
}

impl<'c> Inserter<'c> {
    fn insert(&self, op: melior::ir::operation::Operation<'c>) -> Value<'c, 'c> {
        self.block
            .insert_operation_before(self.before, op)
            .result(0)
            .expect("op has a result")
            .into()
    }

    fn index(&self, value: i64) -> Value<'c, 'c> {
        self.insert(melior::dialect::arith::constant(
            self.context,
            IntegerAttribute::new(Type::index(self.context), value).into(),
            self.location,
        ))
    }

    fn gpu_id(&self, name: &str) -> Value<'c, 'c> {
        let dimension = Attribute::parse(self.context, "#gpu<dim x>").expect("valid gpu dimension");
        self.insert(
            OperationBuilder::new(name, self.location)
                .add_attributes(&[(Identifier::new(self.context, "dimension"), dimension)])
                .add_results(&[Type::index(self.context)])
                .build()
                .expect("valid gpu id op"),
        )
    }

    fn binary(&self, name: &str, a: Value<'c, 'c>, b: Value<'c, 'c>) -> Value<'c, 'c> {
        self.insert(
            OperationBuilder::new(name, self.location)
                .add_operands(&[a, b])
                .add_results(&[Type::index(self.context)])
                .build()
                .expect("valid arith op"),
        )
    }
}

/// A constant index operand's value.
fn constant_index(value: Value) -> Option<i64> {
    let op = defining_op(unsafe { Value::from_raw(value.to_raw()) })?;
    (op_name(&op) == "arith.constant")
        .then(|| op.attribute("value").ok().and_then(integer_value))
        .flatten()
}

/// Static (lower, upper, step) of each dimension of an scf.parallel.
fn loop_bounds<'c>(op: OperationRef<'c, 'c>) -> Result<Vec<(i64, i64, i64)>, PassError<'c>> {
    let dims = op.operand_count() / 3;
    (0..dims)
        .map(|d| {
            let get = |i: usize| op.operand(i).ok().and_then(constant_index);
            match (get(d), get(dims + d), get(2 * dims + d)) {
                (Some(lower), Some(upper), Some(step)) if step > 0 => Ok((lower, upper, step)),
                _ => Err(PassError::at(
                    op.location(),
                    "parallel loop with non-constant bounds: tcc needs static shapes",
                )),
            }
        })
        .collect()
}

fn map_nest<'c>(context: &'c Context, nest: OperationRef<'c, 'c>) -> Result<(), PassError<'c>> {
    let location = nest.location();
    if nest.result_count() != 0 {
        return Err(PassError::at(
            location,
            "scf.parallel with reductions is not supported in kernels",
        ));
    }
    let bounds = loop_bounds(nest)?;
    let trips: Vec<i64> = bounds
        .iter()
        .map(|(l, u, s)| ((u - l) + s - 1) / s)
        .collect();
    let points: i64 = trips.iter().product();
    let block = nest
        .block()
        .ok_or_else(|| PassError::at(location, "loop outside a block"))?;
    let block = unsafe { BlockRef::from_raw(block.to_raw()) };
    let at = Inserter {
        context,
        block,
        before: nest,
        location,
    };

    // for (linear = global_id; linear < points; linear += global_size)
    let local_size = at.gpu_id("gpu.block_dim");
    let groups = at.gpu_id("gpu.grid_dim");
    let global_size = at.binary("arith.muli", local_size, groups);
    let start = at.gpu_id("gpu.global_id");
    let end = at.index(points);
    let body = Block::new(&[(Type::index(context), location)]);
    let linear: Value = body.argument(0).expect("induction variable").into();
    let region = Region::new();
    let body_ref = region.append_block(body);
    let yield_op = body_ref.append_operation(
        OperationBuilder::new("scf.yield", location)
            .build()
            .expect("valid yield"),
    );
    let for_op = OperationBuilder::new("scf.for", location)
        .add_operands(&[start, end, global_size])
        .add_regions([region])
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build scf.for: {e}")))?;
    let for_op = block.insert_operation_before(nest, for_op);
    let _ = for_op;

    // Delinearize (row-major, last dimension fastest) into the nest's
    // induction variables: iv_d = lower_d + step_d * ((linear / stride_d) % trip_d).
    let inner = Inserter {
        context,
        block: unsafe { BlockRef::from_raw(body_ref.to_raw()) },
        before: yield_op,
        location,
    };
    let nest_body = nest
        .region(0)
        .map_err(|e| PassError::at(location, e.to_string()))?
        .first_block()
        .ok_or_else(|| PassError::at(location, "empty loop"))?;
    let mut stride = 1i64;
    let mut ivs = vec![None; trips.len()];
    for d in (0..trips.len()).rev() {
        let mut value = linear;
        if stride != 1 {
            value = inner.binary("arith.divui", value, inner.index(stride));
        }
        if d != 0 {
            value = inner.binary("arith.remui", value, inner.index(trips[d]));
        }
        let (lower, _, step) = bounds[d];
        if step != 1 {
            value = inner.binary("arith.muli", value, inner.index(step));
        }
        if lower != 0 {
            value = inner.binary("arith.addi", value, inner.index(lower));
        }
        ivs[d] = Some(value);
        stride *= trips[d];
    }
    for (d, iv) in ivs.into_iter().enumerate() {
        let old: Value = nest_body
            .argument(d)
            .map_err(|e| PassError::at(location, e.to_string()))?
            .into();
        unsafe {
            mlir_sys::mlirValueReplaceAllUsesOfWith(
                old.to_raw(),
                iv.expect("every dimension mapped").to_raw(),
            )
        };
    }
    // Move the nest's body (all but its scf.reduce terminator) into the loop.
    let mut next = nest_body.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        if op_name(&op) == "scf.reduce" {
            continue;
        }
        let mut op = unsafe { OperationRefMut::from_raw(op.to_raw()) };
        op.move_before(yield_op);
    }
    let mut nest = unsafe { OperationRefMut::from_raw(nest.to_raw()) };
    nest.remove_from_parent();
    unsafe { mlir_sys::mlirOperationDestroy(nest.to_raw()) };
    Ok(())
}

impl TccPass for MapLoopsToWorkItems {
    const ARGUMENT: &'static str = "tcc-map-loops-to-work-items";
    const SUMMARY: &'static str =
        "Map each kernel's parallel loop nests onto work-items as grid-stride loops";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["gpu", "arith", "scf"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, module: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        // Collect first: mapping destroys ops that a lazy walk would visit.
        let kernels: Vec<_> = ops_named(module, "gpu.func");
        for kernel in kernels {
            let nests: Vec<_> = body_ops_named(kernel, "scf.parallel");
            // Nests that exchange data through memory must share a mapping.
            if let Some(first) = nests.first() {
                let reference: i64 = loop_bounds(*first)?
                    .iter()
                    .map(|(l, u, s)| (u - l + s - 1) / s)
                    .product();
                for nest in &nests[1..] {
                    let points: i64 = loop_bounds(*nest)?
                        .iter()
                        .map(|(l, u, s)| (u - l + s - 1) / s)
                        .product();
                    if points != reference {
                        return Err(PassError::at(
                            nest.location(),
                            format!(
                                "fused loop nests cover {reference} and {points} points: cannot share one mapping"
                            ),
                        ));
                    }
                }
            }
            for nest in nests {
                map_nest(context, nest)?;
            }
            if body_ops(kernel)
                .iter()
                .any(|op| op_name(op) == "scf.parallel")
            {
                return Err(PassError::at(
                    kernel.location(),
                    "kernel keeps an unmapped parallel loop",
                ));
            }
        }
        Ok(())
    }
}
