//! `tcc-fold-conv-inputs`: folds the padding and a cheap elementwise
//! producer of each convolution's or pooling's input into its loads, so
//! neither becomes a kernel (a padded input was a fill and a copy kernel
//! at run time, a BatchNorm+ReLU before a convolution its own kernel).
//!
//! Runs in the dispatch phase before `tcc-form-dispatches`. Each
//! `linalg.conv_2d_nhwc_hwcf`, `depthwise_conv_2d_nhwc_hwc[m]` and
//! `pooling_nhwc_{max,sum}` whose input is
//! - a `tensor.pad` of H and W with a constant pad value (also when a
//!   `tensor.collapse_shape` merges the channels of a padded
//!   channel-split tensor after it, as elementwise fusion leaves a channel
//!   shuffle's pad: the loads then read that merge of the unpadded
//!   tensor), and/or
//! - an all-parallel `linalg.generic` of at most
//!   [`MAX_PRODUCER_OPS`](crate::patterns::fold_conv_inputs::MAX_PRODUCER_OPS)
//!   arith ops with broadcast-only indexing, used by nothing else (nor is
//!   the pad between them),
//!
//! becomes a `tcc.conv<op, strides = [..], dilations = [..]>` (the tcc
//! dialect's convolution op, in the form of a `linalg.generic`, verified
//! against its window by the dialect) over the same iteration space, that
//! reads the unpadded source with clamped
//! coordinates, recomputes the producer per load and selects the pad value
//! outside the source (see `patterns/fold_conv_inputs.rs`). A max or sum
//! pooling used only by a 1x1 convolution is that convolution's producer
//! too: its window (at most 3x3) is unrolled into the loads, so the pooled
//! tensor is never written (one kernel less per Inception pool projection
//! and per SqueezeNet squeeze after a pool) as the option
//! `pools=all|strided|none` says (the phase pipeline sets it from the
//! target's configuration). An int8 convolution (`tcc-quantize-int8`'s i8 x
//! i8 -> i32) folds its pad only: its loads select the int8 zero (zero
//! point 0) and accumulate sign-extended products in i32; its input's
//! quantize step stays in its producer's epilogue. Pads with a
//! non-constant value, pads of N or C, and producers with other users are
//! left alone. The pad and producer are erased once unused.
//!
//! Three more options carry the target's choices for 2-D convolutions:
//! `conv-producers=false` keeps their arithmetic producers as kernels (a
//! transpose still folds), `conv-pad-channels=N` keeps the pad of one
//! whose input has N or more channels as a padded copy (pocl-cpu: both,
//! N = 8; in the register-blocked GEMM a folded producer or pad check
//! runs in the k loop), and `conv-unfold-channels=N` turns one of more
//! than one tap whose windows do not overlap (patches) and whose input
//! has fewer than N channels into an explicit
//! image-to-columns copy, whose loads fold the pad and producer as above,
//! and a 1x1 convolution over the columns (nvidia at fp16/bf16: N = 8,
//! `TargetConfig::conv_unfold_channels`).

use melior::Context;
use melior::ir::operation::{OperationBuilder, OperationLike, OperationRef};
use melior::ir::r#type::RankedTensorType;
use melior::ir::{BlockLike, Identifier, Value, ValueLike};

use super::pass::{
    PassError, PassOptionInfo, PassOptionKind, PassOptions, PassResult, Root, TccPass,
};
use crate::ir::util::{collect_ops, erase_op, is_unused};
use crate::patterns::fold_conv_inputs::{
    COLUMN_MULTIPLE, Folding, plain_conv_plan, plan, rewrite, rewrite_as_columns, unfolds,
};

pub struct FoldConvInputs;

#[derive(Debug, Default)]
pub struct FoldConvInputsOptions {
    /// What to fold (the phase pipeline passes the target's choices:
    /// `Target::fold_pools_into_convs`, `fold_producers_into_convs`,
    /// `conv_pad_channels`).
    pub folding: Folding,
}

impl PassOptions for FoldConvInputsOptions {
    const OPTIONS: &'static [PassOptionInfo] = &[
        PassOptionInfo {
            name: "pools",
            kind: PassOptionKind::String,
            default: "all",
            description: "Which max/sum pools feeding a 1x1 convolution to fold into its loads: none, strided or all",
        },
        PassOptionInfo {
            name: "conv-producers",
            kind: PassOptionKind::Bool,
            default: "true",
            description: "Fold cheap elementwise producers into 2-D convolutions' loads (false: they stay kernels of their own; depthwise convolutions and poolings still take them, transposes always fold)",
        },
        PassOptionInfo {
            name: "conv-pad-channels",
            kind: PassOptionKind::String,
            default: "0",
            description: "2-D convolutions whose input has at least this many channels keep their padding as a padded copy (0: every pad folds)",
        },
        PassOptionInfo {
            name: "conv-unfold-channels",
            kind: PassOptionKind::String,
            default: "0",
            description: "2-D convolutions of more than one tap whose windows do not overlap and whose input has fewer channels than this read an explicit image-to-columns copy through a 1x1 convolution (0: none)",
        },
    ];

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "pools" => {
                self.folding.pools = value.parse()?;
                Ok(())
            }
            "conv-producers" => {
                self.folding.conv_producers = super::pass::parse_bool(key, value)?;
                Ok(())
            }
            "conv-pad-channels" => {
                self.folding.conv_pad_channels = channel_count(key, value)?;
                Ok(())
            }
            "conv-unfold-channels" => {
                self.folding.conv_unfold_channels = channel_count(key, value)?;
                Ok(())
            }
            _ => Err(format!("unknown option '{key}'")),
        }
    }
}

/// A channel-count option's value: `None` for 0.
fn channel_count(key: &str, value: &str) -> Result<Option<i64>, String> {
    let channels: i64 = value
        .parse()
        .ok()
        .filter(|c| *c >= 0)
        .ok_or_else(|| format!("{key} takes a channel count (0: none), not '{value}'"))?;
    Ok((channels > 0).then_some(channels))
}

impl TccPass for FoldConvInputs {
    const ARGUMENT: &'static str = "tcc-fold-conv-inputs";
    const SUMMARY: &'static str =
        "Fold constant padding and cheap elementwise producers into convolution and pooling loads";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["linalg", "tensor", "arith", "tcc"];
    type Options = FoldConvInputsOptions;

    fn run<'c>(
        &self,
        context: &'c Context,
        root: Root<'c>,
        options: &FoldConvInputsOptions,
    ) -> PassResult<'c> {
        // One rewrite at a time: a rewrite erases ops another plan may
        // refer to (a pooling whose producer was a convolution's output).
        // Rewritten ops are `tcc.conv`s, which `plan` never takes again.
        // A convolution to unfold into columns is planned even where
        // nothing folds (its columns are then a plain copy).
        let folding = &options.folding;
        while let Some(mut plan) = collect_ops(root).into_iter().find_map(|op| {
            plan(op, folding)
                .or_else(|| unfolds(op, folding).then(|| plain_conv_plan(op)).flatten())
        }) {
            // A pad below a channel merge: the loads read the same merge
            // of the unpadded tensor (a view once bufferized).
            let collapse = plan.collapse_source();
            if let Some((old_collapse, unpadded)) = collapse {
                plan.set_source(collapse_unpadded(context, old_collapse, unpadded)?);
            }
            let replacement = if unfolds(plan.op, folding) {
                rewrite_as_columns(context, &plan, COLUMN_MULTIPLE)?
            } else {
                rewrite(context, &plan)?
            };
            let old: Value = plan
                .op
                .result(0)
                .map_err(|e| PassError::at(plan.op.location(), e.to_string()))?
                .into();
            unsafe { mlir_sys::mlirValueReplaceAllUsesOfWith(old.to_raw(), replacement.to_raw()) };
            erase_op(plan.op);
            if let Some((old_collapse, _)) = collapse
                && is_unused(old_collapse)
            {
                erase_op(old_collapse);
            }
            if let Some(pad) = plan.pad_op()
                && is_unused(pad)
            {
                erase_op(pad);
            }
            if let Some(producer) = plan.producer_op()
                && is_unused(producer)
            {
                // A pooling producer's accumulator fill dies with it.
                let inits: Vec<OperationRef> = producer
                    .operands()
                    .filter_map(crate::ir::util::defining_op)
                    .collect();
                erase_op(producer);
                for init in inits {
                    if matches!(
                        crate::ir::util::op_name(&init).as_str(),
                        "linalg.fill" | "tensor.empty"
                    ) && is_unused(init)
                    {
                        erase_op(init);
                    }
                }
            }
        }
        Ok(())
    }
}

/// `tensor.collapse_shape` of `unpadded` with `collapse`'s reassociation,
/// before `collapse`: the unpadded tensor with its channels merged as the
/// window op's input merges the padded one's.
fn collapse_unpadded<'c>(
    context: &'c Context,
    collapse: OperationRef<'c, 'c>,
    unpadded: Value<'c, 'c>,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let location = collapse.location();
    let fail = |what: &str| {
        PassError::at(
            location,
            format!("cannot merge the unpadded channels: {what}"),
        )
    };
    let source = crate::ir::types::StaticTensor::of(unpadded.r#type())
        .ok_or_else(|| fail("not a static tensor"))?;
    let shape = &source.shape;
    let channels: i64 = shape[3..].iter().product();
    let merged = RankedTensorType::new(
        &[
            shape[0] as u64,
            shape[1] as u64,
            shape[2] as u64,
            channels as u64,
        ],
        source.element,
        None,
    );
    let reassociation = collapse
        .attribute("reassociation")
        .map_err(|_| fail("no reassociation"))?;
    let op = OperationBuilder::new("tensor.collapse_shape", location)
        .add_operands(&[unpadded])
        .add_attributes(&[(Identifier::new(context, "reassociation"), reassociation)])
        .add_results(&[merged.into()])
        .build()
        .map_err(|e| fail(&e.to_string()))?;
    let block = collapse.block().ok_or_else(|| fail("outside a block"))?;
    let op = block.insert_operation_before(collapse, op);
    Ok(op.result(0).map_err(|e| fail(&e.to_string()))?.into())
}
