//! `tcc-lower-bool-casts`: rewrites each `tosa.cast` from `i1` into a
//! `tosa.select` of one and zero of the result type. TOSA (and ONNX's
//! Cast) turns true into 1, and the kernels do (`arith.extui`/`uitofp`),
//! but upstream's `tosa.cast` folder converts a constant `i1` as a signed
//! 1-bit integer, so a cast whose operand canonicalization can fold (an
//! `argmax` over an axis of one, compared with a constant) became -1.0.
//! The select folds correctly and lowers to the same elementwise kernel.
//! Runs first in the graph phase, before any canonicalization.

use melior::Context;
use melior::ir::operation::OperationLike;
use melior::ir::r#type::{RankedTensorType, ShapedTypeLike, TypeLike};
use melior::ir::{Attribute, Type, Value, ValueLike};

use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::ir::tosa_builder::TosaBuilder;
use crate::ir::util::{ops_named, replace_and_erase};

pub struct LowerBoolCasts;

impl TccPass for LowerBoolCasts {
    const ARGUMENT: &'static str = "tcc-lower-bool-casts";
    const SUMMARY: &'static str = "Rewrite tosa.cast from i1 as a tosa.select of one and zero (upstream's cast folder turns a constant true into -1)";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tosa"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        for cast in ops_named(root, "tosa.cast") {
            let (Ok(input), Ok(output)) = (cast.operand(0), cast.result(0)) else {
                continue;
            };
            let output: Value = output.into();
            let (Ok(input_type), Ok(output_type)) = (
                RankedTensorType::try_from(input.r#type()),
                RankedTensorType::try_from(output.r#type()),
            ) else {
                continue;
            };
            let element = output_type.element();
            if !input_type.element().is_integer()
                || unsafe { mlir_sys::mlirIntegerTypeGetWidth(input_type.element().to_raw()) } != 1
                || element.is_integer()
                    && unsafe { mlir_sys::mlirIntegerTypeGetWidth(element.to_raw()) } == 1
            {
                continue;
            }
            let b = TosaBuilder::before(context, cast)?;
            let one = splat(&b, 1, input_type.rank(), element)?;
            let zero = splat(&b, 0, input_type.rank(), element)?;
            let select = b.insert("tosa.select", &[input, one, zero], output.r#type(), &[])?;
            replace_and_erase(cast, output, select);
        }
        Ok(())
    }
}

/// A `tosa.const` of `value` with shape 1x...x1 of `rank` and `element`.
fn splat<'c>(
    b: &TosaBuilder<'c>,
    value: i64,
    rank: usize,
    element: Type<'c>,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let shape: String = (0..rank).map(|_| "1x").collect();
    let ty_text = format!("tensor<{shape}{element}>");
    let number = if element.is_integer() {
        value.to_string()
    } else {
        format!("{value}.0")
    };
    let ty = Type::parse(b.context(), &ty_text)
        .ok_or_else(|| b.error(format!("cannot build the type {ty_text}")))?;
    let attribute = Attribute::parse(b.context(), &format!("dense<{number}> : {ty_text}"))
        .ok_or_else(|| b.error(format!("cannot build a constant of {ty_text}")))?;
    b.constant(attribute, ty)
}
