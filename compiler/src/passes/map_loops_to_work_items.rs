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
//!
//! With `serial-rows` (the pocl-cpu target's choice), a kernel whose nests
//! all end in the same innermost dimensions (the fewest holding at least 8
//! elements) maps only the rows (the dimensions before them) onto
//! work-items, and each work-item walks its rows' inner dimensions as
//! sequential loops: contiguous, without the divisions of delinearizing
//! every element, which LLVM vectorizes. PoCL
//! runs a work-group as a loop over its work-items and does not vectorize
//! the grid-stride loop across them: a BatchNorm + ReLU over 56x56x112
//! took 0.74 ms flat and 0.10-0.11 ms as rows (2 cores,
//! `scripts/pocl-cpu-loop-shapes.py`, in git history at aaeb302).
//!
//! A reduction over outer dimensions (a global pool over the pixels of a
//! channels-last image: its output the channels, its sequential loops the
//! pixels) walks its row inside its innermost reduction loop instead, when
//! its body is nothing but those loops and every access's last dimension
//! (of more than one element) is indexed by the row's innermost dimension:
//! each pixel's channels are read in order, where a work-item per channel
//! (or a row loop around the pixel loops) read them one cache line per
//! pixel apart. Such a kernel maps its rows however few there are (one, for
//! a pool of one image), since the alternative walks memory across every
//! line: EfficientNet-B0's squeeze-and-excitation pool over 112x112x32 took
//! 0.53-0.60 ms mapped by element and 0.054-0.057 ms as one work-item
//! walking pixels then channels (pyopencl on PoCL 3.1, 2 AVX2 cores).

use melior::Context;
use melior::ir::attribute::IntegerAttribute;
use melior::ir::operation::{
    OperationBuilder, OperationLike, OperationMutLike, OperationRef, OperationRefMut,
};
use melior::ir::{
    Attribute, Block, BlockLike, BlockRef, Identifier, Location, Region, RegionLike, Type, Value,
    ValueLike,
};

use super::pass::{
    PassError, PassOptionInfo, PassOptionKind, PassOptions, PassResult, Root, TccPass,
};
use crate::config::Target;
use crate::ir::util::{body_ops, body_ops_named, defining_op, op_name, ops_named};

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

/// (lower, upper, step) of each dimension of an scf.parallel, all
/// constants but for symbolic dimensions (issue 33): a dimension from 0 by
/// 1 to a value (the kernel's `memref.dim` of a dynamic buffer, or a
/// product of such) is returned as `(0, 1, 1)`, its position and that
/// value listed beside (outermost first).
#[allow(clippy::type_complexity)]
fn nest_bounds<'c>(
    op: OperationRef<'c, 'c>,
) -> Result<(Vec<(i64, i64, i64)>, Vec<Symbolic<'c>>), PassError<'c>> {
    let dims = op.operand_count() / 3;
    let mut symbolic = Vec::new();
    let bounds = (0..dims)
        .map(|d| {
            let get = |i: usize| op.operand(i).ok().and_then(crate::ir::util::constant_int);
            match (get(d), get(dims + d), get(2 * dims + d)) {
                (Some(lower), Some(upper), Some(step)) if step > 0 => Ok((lower, upper, step)),
                (Some(0), None, Some(1)) if !crate::ir::dynamic::module_dims(op).0.is_empty() => {
                    if let Ok(extent) = op.operand(dims + d) {
                        symbolic.push(Symbolic { dim: d, extent });
                    }
                    Ok((0, 1, 1))
                }
                _ => {
                    let dims = crate::ir::dynamic::module_dims(op);
                    Err(PassError::at(
                        op.location(),
                        if dims.0.is_empty() {
                            "parallel loop with non-constant bounds: tcc needs static shapes"
                                .to_string()
                        } else {
                            format!(
                                "parallel loop{} with a dynamic lower bound or step (dynamic dimension {}): not supported by tcc-map-loops-to-work-items; compile one shape with --input-shape",
                                crate::ir::dynamic::node_name(&op)
                                    .map_or(String::new(), |n| format!(" (node '{n}')")),
                                crate::ir::dynamic::describe_dims(&dims),
                            )
                        },
                    ))
                }
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((bounds, symbolic))
}

/// A nest's dimension on a symbolic extent: its position and its extent
/// (a value in the kernel).
#[derive(Clone, Copy)]
struct Symbolic<'c> {
    dim: usize,
    extent: Value<'c, 'c>,
}

/// The symbolic extent of dimension `d` among `symbolic`, if it is one.
fn symbolic_at<'c>(symbolic: &[Symbolic<'c>], d: usize) -> Option<Value<'c, 'c>> {
    symbolic.iter().find(|s| s.dim == d).map(|s| s.extent)
}

/// The fewest rows (and innermost elements) for which a kernel's rows are
/// mapped instead of its elements (`serial-rows`): fewer rows would leave
/// cores idle, a shorter row gives the vectorizer nothing.
const MIN_SERIAL_ROWS: i64 = 16;
const MIN_SERIAL_ROW_LENGTH: i64 = 8;

/// `tcc-map-loops-to-work-items` options.
#[derive(Default, Debug, Clone, Copy)]
pub struct MapLoopsOptions {
    /// `None`: the module's target decides (`TargetConfig::serial_rows`).
    pub serial_rows: Option<bool>,
}

impl PassOptions for MapLoopsOptions {
    const OPTIONS: &'static [PassOptionInfo] = &[PassOptionInfo {
        name: "serial-rows",
        kind: PassOptionKind::String,
        default: "auto",
        description: "Map rows rather than elements onto work-items, each walking its rows' innermost dimension in order: auto (the module's tcc.target decides: pocl-cpu), true or false",
    }];

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match (key, value) {
            ("serial-rows", "auto") => self.serial_rows = None,
            ("serial-rows", "true") => self.serial_rows = Some(true),
            ("serial-rows", "false") => self.serial_rows = Some(false),
            ("serial-rows", other) => {
                return Err(format!(
                    "serial-rows must be auto, true or false (got '{other}')"
                ));
            }
            (other, _) => return Err(format!("unknown option '{other}' (serial-rows)")),
        }
        Ok(())
    }
}

/// The trailing dimensions (their trip counts) that every nest of a kernel
/// walks in order when its rows are mapped instead of its elements: the
/// fewest innermost dimensions holding at least [`MIN_SERIAL_ROW_LENGTH`]
/// elements (a copy into a concat slice in 28x4 blocks takes both), with
/// at least [`MIN_SERIAL_ROWS`] rows left to map. `None` where the nests
/// differ in them or no such split exists.
/// A symbolic dimension counts as `extent` rows (the declared maximum the
/// strategies were chosen for) and never joins a row.
fn serial_row_dims<'c>(
    nests: &[OperationRef<'c, 'c>],
    extent: Option<i64>,
    min_rows: i64,
) -> Result<Option<Vec<i64>>, PassError<'c>> {
    let mut shared: Option<Vec<i64>> = None;
    for nest in nests {
        let (mut trips, symbolic) = trip_counts(*nest)?;
        let mut length = 1;
        let mut split = trips.len();
        while split > 0 && length < MIN_SERIAL_ROW_LENGTH {
            split -= 1;
            length *= trips[split];
        }
        for s in &symbolic {
            if split <= s.dim {
                return Ok(None);
            }
            trips[s.dim] = extent.unwrap_or(1);
        }
        let rows: i64 = trips[..split].iter().product();
        if length < MIN_SERIAL_ROW_LENGTH || rows < min_rows {
            return Ok(None);
        }
        let dims = trips[split..].to_vec();
        if shared.as_ref().is_some_and(|d| *d != dims) {
            return Ok(None);
        }
        shared = Some(dims);
    }
    Ok(shared)
}

/// Whether `op` lies inside `ancestor` (at any depth).
fn is_inside(op: OperationRef, ancestor: OperationRef) -> bool {
    let mut parent = op.parent_operation();
    while let Some(current) = parent {
        if current.to_raw().ptr == ancestor.to_raw().ptr {
            return true;
        }
        parent = current.parent_operation();
    }
    false
}

/// `value`, or the operand of the identity `affine.apply` that yields it
/// (how `tcc-lower-kernel-loops` writes a loop's index into an access).
fn through_identity<'c>(value: Value<'c, 'c>) -> Value<'c, 'c> {
    if let Some(op) = defining_op(value)
        && op_name(&op) == "affine.apply"
        && op.operand_count() == 1
        && op
            .attribute("map")
            .is_ok_and(|map| map.to_string() == "affine_map<(d0) -> (d0)>")
        && let Ok(operand) = op.operand(0)
    {
        return operand;
    }
    value
}

/// The innermost loop of a nest whose body is nothing but a perfect nest
/// of sequential loops (`scf.for` without results, bounds from outside
/// the nest: a reduction accumulating in memory), in which the row of its
/// `serial_dims` innermost dimensions can be walked instead of around the
/// loops: every load and store in the innermost loop indexes the last
/// dimension of its buffer that has more than one element with the row's
/// innermost dimension (of more than one iteration), or loads a single
/// element. Each iteration of the reduction then reads a contiguous row.
/// (Walking the row's independent points inside the loops keeps each
/// point's iterations in order, so any such nest may; the accesses decide
/// whether it pays.) `None` for any other nest.
fn row_inside_reduction<'c>(
    nest: OperationRef<'c, 'c>,
    serial_dims: usize,
) -> Result<Option<OperationRef<'c, 'c>>, PassError<'c>> {
    if serial_dims == 0 {
        return Ok(None);
    }
    let (trips, symbolic) = trip_counts(nest)?;
    if !symbolic.is_empty() {
        return Ok(None);
    }
    let Some(inner_dim) = (trips.len() - serial_dims..trips.len())
        .rev()
        .find(|d| trips[*d] > 1)
    else {
        return Ok(None);
    };
    let nest_body = nest
        .region(0)
        .map_err(|e| PassError::at(nest.location(), e.to_string()))?
        .first_block()
        .ok_or_else(|| PassError::at(nest.location(), "empty loop"))?;
    let row_index: Value = nest_body
        .argument(inner_dim)
        .map_err(|e| PassError::at(nest.location(), e.to_string()))?
        .into();
    let only = |op: OperationRef<'c, 'c>, terminator: &str| {
        let ops: Vec<_> = body_ops(op)
            .into_iter()
            .filter(|inner| op_name(inner) != terminator)
            .collect();
        (ops.len() == 1 && op_name(&ops[0]) == "scf.for").then(|| ops[0])
    };
    let Some(mut innermost) = only(nest, "scf.reduce") else {
        return Ok(None);
    };
    loop {
        let bounded_outside = innermost
            .operands()
            .all(|bound| defining_op(bound).is_some_and(|def| !is_inside(def, nest)));
        if innermost.result_count() != 0 || !bounded_outside {
            return Ok(None);
        }
        match only(innermost, "scf.yield") {
            Some(inner) => innermost = inner,
            None => break,
        }
    }
    for op in body_ops(innermost) {
        let name = op_name(&op);
        if op.region_count() != 0 {
            return Ok(None);
        }
        let memref_operand = match name.as_str() {
            "memref.load" => 0,
            "memref.store" => 1,
            // Any other access (affine, vector, a copy) is not checked.
            other
                if other.ends_with("load")
                    || other.ends_with("store")
                    || other.ends_with("copy") =>
            {
                return Ok(None);
            }
            _ => continue,
        };
        let Some(shape) = op
            .operand(memref_operand)
            .ok()
            .and_then(|memref| crate::ir::types::static_shape(memref.r#type()))
        else {
            return Ok(None);
        };
        // A load of one element is invariant in the row; a store of one
        // (a scalar carried through memory) would be shared by the row.
        let Some(last) = shape.iter().rposition(|size| *size > 1) else {
            if name == "memref.store" {
                return Ok(None);
            }
            continue;
        };
        let indexed_by_row = op
            .operand(memref_operand + 1 + last)
            .is_ok_and(|index| through_identity(index).to_raw().ptr == row_index.to_raw().ptr);
        if !indexed_by_row {
            return Ok(None);
        }
    }
    Ok(Some(innermost))
}

/// An `scf.for` from `start` to `end` by `step` before `before`, with an
/// empty body ending in `scf.yield`: the loop, its induction variable and
/// its yield.
fn build_for<'c>(
    at: &Inserter<'c>,
    (start, end, step): (Value<'c, 'c>, Value<'c, 'c>, Value<'c, 'c>),
) -> Result<(BlockRef<'c, 'c>, Value<'c, 'c>, OperationRef<'c, 'c>), PassError<'c>> {
    let location = at.location;
    let body = Block::new(&[(Type::index(at.context), location)]);
    let region = Region::new();
    let body_ref = region.append_block(body);
    let yield_op = body_ref.append_operation(
        OperationBuilder::new("scf.yield", location)
            .build()
            .expect("valid yield"),
    );
    let for_op = OperationBuilder::new("scf.for", location)
        .add_operands(&[start, end, step])
        .add_regions([region])
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build scf.for: {e}")))?;
    at.block.insert_operation_before(at.before, for_op);
    let body_ref = unsafe { BlockRef::from_raw(body_ref.to_raw()) };
    let induction: Value = body_ref
        .argument(0)
        .map_err(|e| PassError::at(location, e.to_string()))?
        .into();
    let yield_op = unsafe { OperationRef::from_raw(yield_op.to_raw()) };
    Ok((body_ref, induction, yield_op))
}

/// Iterations of each dimension of an scf.parallel; a symbolic dimension
/// counts 1, listed beside ([`nest_bounds`]).
fn trip_counts<'c>(
    op: OperationRef<'c, 'c>,
) -> Result<(Vec<i64>, Vec<Symbolic<'c>>), PassError<'c>> {
    let (bounds, symbolic) = nest_bounds(op)?;
    Ok((
        bounds
            .iter()
            .map(|(l, u, s)| ((u - l) + s - 1) / s)
            .collect(),
        symbolic,
    ))
}

/// Maps one nest: its elements (or, with `serial_dims` > 0, its rows: all
/// but that many innermost dimensions, which each work-item walks in
/// order) onto the work-items as a grid-stride loop.
fn map_nest<'c>(
    context: &'c Context,
    nest: OperationRef<'c, 'c>,
    serial_dims: usize,
    reduction: Option<OperationRef<'c, 'c>>,
) -> Result<(), PassError<'c>> {
    let location = nest.location();
    if nest.result_count() != 0 {
        return Err(PassError::at(
            location,
            "scf.parallel with reductions is not supported in kernels",
        ));
    }
    let (bounds, _) = nest_bounds(nest)?;
    let (trips, symbolic) = trip_counts(nest)?;
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

    // for (linear = global_id; linear < points; linear += global_size),
    // over rows with `serial_rows`.
    let mapped_dims = trips.len() - serial_dims;
    let mapped_points: i64 = trips[..mapped_dims].iter().product();
    let local_size = at.gpu_id("gpu.block_dim");
    let groups = at.gpu_id("gpu.grid_dim");
    let global_size = at.binary("arith.muli", local_size, groups);
    let start = at.gpu_id("gpu.global_id");
    // Symbolic dimensions: their extents times the rest.
    let mut end: Option<Value<'c, 'c>> = None;
    for s in &symbolic {
        end = Some(match end {
            None => s.extent,
            Some(product) => at.binary("arith.muli", product, s.extent),
        });
    }
    let end = match end {
        Some(product) if mapped_points == 1 => product,
        Some(product) => at.binary("arith.muli", product, at.index(mapped_points)),
        None => at.index(mapped_points),
    };
    let (body_ref, linear, yield_op) = build_for(&at, (start, end, global_size))?;

    // Delinearize (row-major, last dimension fastest) into the nest's
    // induction variables: iv_d = lower_d + step_d * ((linear / stride_d) % trip_d).
    let inner = Inserter {
        context,
        block: body_ref,
        before: yield_op,
        location,
    };
    let nest_body = nest
        .region(0)
        .map_err(|e| PassError::at(location, e.to_string()))?
        .first_block()
        .ok_or_else(|| PassError::at(location, "empty loop"))?;
    let scaled = |at: &Inserter<'c>, value: Value<'c, 'c>, d: usize| {
        let (lower, _, step) = bounds[d];
        let mut value = value;
        if step != 1 {
            value = at.binary("arith.muli", value, at.index(step));
        }
        if lower != 0 {
            value = at.binary("arith.addi", value, at.index(lower));
        }
        value
    };
    // The product of the trips inside dimension d: a constant, times the
    // symbolic extents among them (a value) where there are any.
    let mut stride = 1i64;
    let mut dynamic_stride: Option<Value<'c, 'c>> = None;
    let mut ivs = vec![None; trips.len()];
    // The outermost dimension needs no remainder (the grid-stride loop
    // ends there); with symbolic dimensions, the unit dimensions before
    // the first that is not one are at their only index, and that one is
    // the outermost.
    let outermost = if symbolic.is_empty() {
        0
    } else {
        (0..mapped_dims)
            .find(|&d| trips[d] != 1 || symbolic_at(&symbolic, d).is_some())
            .unwrap_or(0)
    };
    for d in (0..mapped_dims).rev() {
        let extent = symbolic_at(&symbolic, d);
        if d < outermost {
            ivs[d] = Some(scaled(&inner, inner.index(0), d));
            continue;
        }
        let mut value = linear;
        let divisor = match (dynamic_stride, stride) {
            (None, 1) => None,
            (None, n) => Some(inner.index(n)),
            (Some(product), 1) => Some(product),
            (Some(product), n) => Some(inner.binary("arith.muli", product, inner.index(n))),
        };
        if let Some(divisor) = divisor {
            value = inner.binary("arith.divui", value, divisor);
        }
        if d != outermost {
            let trip = extent.unwrap_or_else(|| inner.index(trips[d]));
            value = inner.binary("arith.remui", value, trip);
        }
        ivs[d] = Some(scaled(&inner, value, d));
        match extent {
            Some(extent) => {
                dynamic_stride = Some(match dynamic_stride {
                    None => extent,
                    Some(product) => inner.binary("arith.muli", product, extent),
                });
            }
            None => stride *= trips[d],
        }
    }
    // The row's dimensions in order: for (j = 0; j < trip_d; ++j), nested
    // (inside the innermost reduction loop, around its body, where
    // `reduction` is that loop: see [`row_inside_reduction`]).
    let mut body_end = yield_op;
    let mut at_row = inner;
    let mut reduction_body = Vec::new();
    if let Some(reduction) = reduction {
        let ops = body_ops(reduction);
        let (Some(first), Some(terminator)) = (ops.first(), ops.last()) else {
            return Err(PassError::at(location, "empty reduction loop"));
        };
        let block = first
            .block()
            .ok_or_else(|| PassError::at(location, "loop body outside a block"))?;
        at_row = Inserter {
            context,
            block: unsafe { BlockRef::from_raw(block.to_raw()) },
            before: *first,
            location,
        };
        reduction_body = ops[..ops.len() - 1].to_vec();
        body_end = *terminator;
    }
    let mut row_end = None;
    for (d, &trip) in trips.iter().enumerate().skip(mapped_dims) {
        let zero = at_row.index(0);
        let (row_body, j, row_yield) =
            build_for(&at_row, (zero, at_row.index(trip), at_row.index(1)))?;
        at_row = Inserter {
            context,
            block: row_body,
            before: row_yield,
            location,
        };
        ivs[d] = Some(scaled(&at_row, j, d));
        row_end = Some(row_yield);
    }
    if reduction.is_some() {
        // The reduction's body moves into the row; the nest's body (the
        // reduction loops) into the grid-stride loop.
        if let Some(row_end) = row_end {
            for op in &reduction_body {
                let mut op = unsafe { OperationRefMut::from_raw(op.to_raw()) };
                op.move_before(row_end);
            }
        }
        body_end = yield_op;
    } else if let Some(row_end) = row_end {
        body_end = row_end;
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
        op.move_before(body_end);
    }
    let mut nest = unsafe { OperationRefMut::from_raw(nest.to_raw()) };
    nest.remove_from_parent();
    unsafe { mlir_sys::mlirOperationDestroy(nest.to_raw()) };
    Ok(())
}

/// Whether a kernel's nests are reductions whose row of `serial_dims`
/// walks inside their loops ([`row_inside_reduction`]), at least one, and
/// nests without loops.
fn rows_inside_reductions<'c>(
    nests: &[OperationRef<'c, 'c>],
    serial_dims: usize,
) -> Result<bool, PassError<'c>> {
    let mut reductions = 0;
    for nest in nests {
        if row_inside_reduction(*nest, serial_dims)?.is_some() {
            reductions += 1;
            continue;
        }
        if body_ops(*nest).iter().any(|op| op.region_count() != 0) {
            return Ok(false);
        }
    }
    Ok(reductions > 0)
}

impl TccPass for MapLoopsToWorkItems {
    const ARGUMENT: &'static str = "tcc-map-loops-to-work-items";
    const SUMMARY: &'static str =
        "Map each kernel's parallel loop nests onto work-items as grid-stride loops";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["gpu", "arith", "scf"];
    type Options = MapLoopsOptions;

    fn run<'c>(
        &self,
        context: &'c Context,
        module: Root<'c>,
        options: &MapLoopsOptions,
    ) -> PassResult<'c> {
        let serial_rows = options
            .serial_rows
            .unwrap_or_else(|| Target::of_module(module).unwrap_or_default().serial_rows());
        let extent = crate::ir::dynamic::strategy_extent(&crate::ir::dynamic::module_dims(module));
        // Collect first: mapping destroys ops that a lazy walk would visit.
        let kernels: Vec<_> = ops_named(module, "gpu.func");
        for kernel in kernels {
            let nests: Vec<_> = body_ops_named(kernel, "scf.parallel");
            // Nests that exchange data through memory must share a mapping.
            // Symbolic extents: the nests of one kernel (a fill, its root,
            // its epilogue) cover one output's points by the dispatch
            // phase's construction (a matmul's nest reads its extents
            // from its operands, its fill from the output; a pool's from
            // its input and its output), so they must be symbolic at the
            // same positions of nests of the same static points.
            let points = |nest: OperationRef<'c, 'c>| -> Result<_, PassError<'c>> {
                let (trips, symbolic) = trip_counts(nest)?;
                let keys: Vec<usize> = symbolic.iter().map(|s| s.dim).collect();
                Ok((trips.iter().product::<i64>(), keys))
            };
            if let Some(first) = nests.first() {
                let reference = points(*first)?;
                for nest in &nests[1..] {
                    let these = points(*nest)?;
                    if these != reference {
                        let show = |(n, keys): (i64, Vec<usize>)| match keys.len() {
                            0 => n.to_string(),
                            1 => format!("{n} x a dynamic extent"),
                            k => format!("{n} x {k} dynamic extents"),
                        };
                        return Err(PassError::at(
                            nest.location(),
                            format!(
                                "fused loop nests cover {} and {} points: cannot share one mapping",
                                show(reference),
                                show(these)
                            ),
                        ));
                    }
                }
            }
            // Rows only where every nest has the same innermost length, so
            // that the work-item writing an element in one nest still reads
            // it in the next.
            // However few the rows, where every nest is a reduction whose
            // row walks inside its loops or a nest without loops (a fill,
            // an epilogue): see [`row_inside_reduction`].
            let serial_dims = match serial_rows {
                true => {
                    let dims = serial_row_dims(&nests, extent, MIN_SERIAL_ROWS)?;
                    match dims {
                        Some(dims) => dims.len(),
                        None => match serial_row_dims(&nests, extent, 1)? {
                            Some(dims) if rows_inside_reductions(&nests, dims.len())? => dims.len(),
                            _ => 0,
                        },
                    }
                }
                false => 0,
            };
            for nest in nests {
                let reduction = row_inside_reduction(nest, serial_dims)?;
                map_nest(context, nest, serial_dims, reduction)?;
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
