//! `tcc-unique-results`: gives every function result its own value, so
//! that each output of the artifact is its own buffer. A value returned
//! more than once is copied (an elementwise `linalg.generic` into a
//! `tensor.empty`) for each repeat. Runs before bufferization: upstream's
//! `buffer-results-to-out-params` cannot handle a value returned twice.

use melior::Context;
use melior::ir::operation::{OperationBuilder, OperationLike, OperationMutLike, OperationRefMut};
use melior::ir::{BlockLike, TypeLike, Value, ValueLike};

use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::ir::util::ops_named;

pub struct UniqueResults;

impl TccPass for UniqueResults {
    const ARGUMENT: &'static str = "tcc-unique-results";
    const SUMMARY: &'static str =
        "Copy function results that return the same value twice, so each output has its own buffer";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["linalg", "tensor"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        let returns: Vec<_> = ops_named(root, "func.return");
        for ret in returns {
            let location = ret.location();
            let block = ret
                .block()
                .ok_or_else(|| PassError::at(location, "return outside a block"))?;
            let mut seen: Vec<usize> = Vec::new();
            for index in 0..ret.operand_count() {
                let value = ret
                    .operand(index)
                    .map_err(|e| PassError::at(location, e.to_string()))?;
                let key = value.to_raw().ptr as usize;
                if !seen.contains(&key) {
                    seen.push(key);
                    continue;
                }
                if !value.r#type().is_ranked_tensor() {
                    continue;
                }
                let empty = OperationBuilder::new("tensor.empty", location)
                    .add_results(&[value.r#type()])
                    .build()
                    .map_err(|e| {
                        PassError::at(location, format!("cannot build tensor.empty: {e}"))
                    })?;
                let empty = block.insert_operation_before(ret, empty);
                let init: Value = empty
                    .result(0)
                    .map_err(|e| PassError::at(location, e.to_string()))?
                    .into();
                let copy = crate::patterns::copy::elementwise_copy(
                    context,
                    location,
                    value,
                    init,
                    Some(value.r#type()),
                )?;
                let copy = block.insert_operation_before(ret, copy);
                let copied: Value = copy
                    .result(0)
                    .map_err(|e| PassError::at(location, e.to_string()))?
                    .into();
                let mut ret = unsafe { OperationRefMut::from_raw(ret.to_raw()) };
                ret.set_operand(index, copied);
            }
        }
        Ok(())
    }
}
