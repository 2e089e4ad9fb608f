//! `tcc-unshare-empty-tensors`: gives every destination-style op (linalg
//! and tcc ops) that writes into a `tensor.empty` an empty tensor of its
//! own. CSE merges equal `tensor.empty`s, so one of them often serves as
//! the destination of many ops along a chain; one-shot bufferization then
//! writes them in place, one after the other, into one buffer, and when the
//! chain ends in a function result that buffer becomes the model's output
//! argument. Intermediates (the layer norms and residual sums of every
//! transformer layer) then live in the output, which keeps the model's f32
//! element type, so `tcc-narrow-storage` cannot store them as half. With an
//! empty tensor each, each becomes an allocation of its own, which the
//! memory plan packs into the arena by liveness. The pipeline runs it only
//! when storage is narrowed (`--precision=fp16|bf16`, `--storage`): in
//! f32 the shared buffer only saves arena bytes.

use melior::Context;
use melior::ir::operation::OperationLike;
use melior::ir::{BlockLike, Value, ValueLike};

use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::ir::util::{collect_ops, op_name, ops_named, users};

pub struct UnshareEmptyTensors;

impl TccPass for UnshareEmptyTensors {
    const ARGUMENT: &'static str = "tcc-unshare-empty-tensors";
    const SUMMARY: &'static str = "Give each linalg/tcc op writing into a shared tensor.empty an empty tensor of its own, so bufferization does not chain intermediates through one buffer (the output's)";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tensor"];
    type Options = NoOptions;

    fn run<'c>(&self, _context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        // Program order, so that the first writer keeps the original.
        let order: std::collections::HashMap<usize, usize> = collect_ops(root)
            .iter()
            .enumerate()
            .map(|(index, op)| (op.to_raw().ptr as usize, index))
            .collect();
        for empty in ops_named(root, "tensor.empty") {
            let Ok(result) = empty.result(0) else {
                continue;
            };
            let value: Value = result.into();
            let mut writers = users(value)
                .into_iter()
                .filter(|user| {
                    let name = op_name(user);
                    name.starts_with("linalg.") || name.starts_with("tcc.")
                })
                .collect::<Vec<_>>();
            writers.sort_by_key(|user| order.get(&(user.to_raw().ptr as usize)).copied());
            writers.dedup_by_key(|user| user.to_raw().ptr);
            // The first writer keeps the original.
            for writer in writers.into_iter().skip(1) {
                // In front of the writer's kernel: the empty tensor (the
                // buffer) lives outside the kernel.
                let anchor = crate::ir::dispatch::enclosing(writer).unwrap_or(writer);
                let block = anchor
                    .block()
                    .ok_or_else(|| PassError::at(writer.location(), "op outside a block"))?;
                // SAFETY: a clone of a live op, owned by the block it is
                // inserted into; its operands (dynamic extents) dominate
                // the original, which dominates `writer`.
                let copy = unsafe {
                    melior::ir::Operation::from_raw(mlir_sys::mlirOperationClone(empty.to_raw()))
                };
                let copy = block.insert_operation_before(anchor, copy);
                let fresh = copy
                    .result(0)
                    .map_err(|e| PassError::at(writer.location(), e.to_string()))?;
                for index in 0..writer.operand_count() {
                    if writer.operand(index).is_ok_and(|operand| operand == value) {
                        // SAFETY: `index` is an operand of `writer`, and the
                        // new value has the same type as the old one.
                        unsafe {
                            mlir_sys::mlirOperationSetOperand(
                                writer.to_raw(),
                                index as isize,
                                Value::from(fresh).to_raw(),
                            );
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
