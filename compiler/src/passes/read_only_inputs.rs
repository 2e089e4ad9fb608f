//! `tcc-read-only-inputs`: marks every argument of the module's public
//! functions `bufferization.writable = false` before `one-shot-bufferize`.
//!
//! The arguments are the model's inputs, buffers the caller owns and may
//! use again (a key/value cache passed to the next step, a tensor bound
//! on the device, a host tensor a CPU device reads in place).
//! Bufferization across function boundaries takes arguments as writable
//! unless told otherwise, and then updates an input in place where an op
//! writes a modified copy of it: a `ScatterElements` whose data is a graph
//! input wrote the step's keys into the caller's cache. Marked read-only,
//! such an op gets a fresh buffer (a copy of the input, then the update).

use melior::Context;
use melior::ir::attribute::BoolAttribute;
use melior::ir::operation::OperationLike;
use melior::ir::{BlockLike, RegionLike};

use super::pass::{NoOptions, PassResult, Root, TccPass};
use crate::ir::util::{body_ops_named, set_argument_attribute};

pub struct ReadOnlyInputs;

/// The argument attribute one-shot-bufferize reads.
const WRITABLE: &str = "bufferization.writable";

impl TccPass for ReadOnlyInputs {
    const ARGUMENT: &'static str = "tcc-read-only-inputs";
    const SUMMARY: &'static str = "Mark the public functions' arguments (the model's inputs) read-only for bufferization, so that no op updates a caller's input in place";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["bufferization"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, module: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        for function in body_ops_named(module, "func.func") {
            let private = function
                .attribute("sym_visibility")
                .ok()
                .and_then(crate::ir::util::string_value)
                .is_some_and(|v| v == "private");
            if private {
                continue;
            }
            let arguments = function
                .region(0)
                .ok()
                .and_then(|r| r.first_block())
                .map_or(0, |body| body.argument_count());
            for index in 0..arguments {
                set_argument_attribute(
                    context,
                    function,
                    index,
                    WRITABLE,
                    BoolAttribute::new(context, false).into(),
                );
            }
        }
        Ok(())
    }
}
