//! `tcc-fold-tied-broadcasts`: drops the run-time broadcasts that upstream
//! `tosa-to-linalg` puts around an elementwise op whose operands are both
//! dynamic along one dimension, where tcc knows the extents are equal.
//!
//! With two operands of `tensor<?x16xf32>` (two inputs tied by one
//! `--dim batch`), the conversion cannot know that the `?`s agree, so it
//! guards each operand with `scf.if (tensor.dim %x, i) == 1` that
//! broadcasts `%x` to the larger extent in a `linalg.generic`, yielding
//! `%x` itself otherwise. Those generics sit in `scf.if` regions, outside
//! any kernel. When the module declares symbolic dimensions, every `?`
//! after the input phase is a product of them times a factor the model
//! fixes, and two such extents meeting in one elementwise op are equal at
//! every point of the declared ranges: a valid model combines them at
//! every point, and two different products (`k1 * batch` and `k2 *
//! batch`, or `batch` and `sequence`) differ at some point where neither
//! is 1 (an imported model was shaped at two such points, the importer's
//! probes, chosen so that different products of the symbols differ).
//! Where they are equal, the broadcast of an extent of 1 to 1 is the
//! operand itself, so both branches are `%x`: the `scf.if` is replaced by
//! `%x`.

use melior::Context;
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{BlockLike, RegionLike, Value, ValueLike};

use super::pass::{NoOptions, PassResult, Root, TccPass};
use crate::ir::util::{collect_ops, defining_op, integer_value, op_name, replace_and_erase};

pub struct FoldTiedBroadcasts;

impl TccPass for FoldTiedBroadcasts {
    const ARGUMENT: &'static str = "tcc-fold-tied-broadcasts";
    const SUMMARY: &'static str = "Drop tosa-to-linalg's run-time broadcast guards between extents of the declared symbolic dimensions";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["scf", "tensor", "arith"];
    type Options = NoOptions;

    fn run<'c>(&self, _context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        if crate::ir::dynamic::module_dims(root).0.is_empty() {
            return Ok(());
        }
        for op in collect_ops(root) {
            if op_name(&op) != "scf.if" {
                continue;
            }
            if let Some(operand) = guarded_operand(op) {
                let result = op
                    .result(0)
                    .map_err(|e| super::pass::PassError::at(op.location(), e.to_string()))?;
                replace_and_erase(op, result.into(), operand);
            }
        }
        Ok(())
    }
}

/// `%x` when `op` is `scf.if (tensor.dim %x, i) == 1 -> (type of %x) {
/// ... } else { scf.yield %x }`: the conversion's broadcast guard.
fn guarded_operand<'c>(op: OperationRef<'c, 'c>) -> Option<Value<'c, 'c>> {
    if op.result_count() != 1 || op.region_count() != 2 {
        return None;
    }
    let compare = defining_op(op.operand(0).ok()?)?;
    if op_name(&compare) != "arith.cmpi"
        || compare.attribute("predicate").ok().and_then(integer_value) != Some(0)
    {
        return None;
    }
    let dim = defining_op(compare.operand(0).ok()?)?;
    let one = defining_op(compare.operand(1).ok()?)?;
    if op_name(&dim) != "tensor.dim"
        || op_name(&one) != "arith.constant"
        || one.attribute("value").ok().and_then(integer_value) != Some(1)
    {
        return None;
    }
    let operand = dim.operand(0).ok()?;
    if !crate::ir::dynamic::is_dynamic(operand.r#type())
        || op.result(0).ok()?.r#type() != operand.r#type()
    {
        return None;
    }
    // The else branch yields the operand itself.
    let otherwise = op.region(1).ok()?.first_block()?;
    let terminator = otherwise.first_operation()?;
    (op_name(&terminator) == "scf.yield"
        && terminator.next_in_block().is_none()
        && terminator.operand_count() == 1
        && terminator.operand(0).ok()? == operand)
        .then_some(operand)
}
