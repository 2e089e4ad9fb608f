//! Rewrite patterns, kept apart from the passes that apply them.

pub mod attention;
pub mod concat_in_place;
pub mod convert_layer_norm_to_rows;
pub mod convert_softmax_to_linalg;
pub mod copy;
pub mod decompose_composites;
pub mod elide_output_copies;
pub mod fold_attention_casts;
pub mod fold_attention_transposes;
pub mod fold_batch_norm;
pub mod fold_constants;
pub mod fold_conv_inputs;
pub mod fold_pad_slices;
pub mod form_dispatches;
pub mod pack_weight_panels;
pub mod propagate_layout;
pub mod raise_composites;
pub mod reshape_epilogues;

use melior::ir::operation::{OperationBuilder, OperationLike, OperationRef};
use melior::ir::{BlockLike, TypeLike, Value, ValueLike};

use crate::ir::error::PassError;

/// Whether a composite (`tcc.layer_norm`) normalizes the last axis of an
/// f32 tensor whose rows have a static length. Symbolic dimensions (a
/// batch, a sequence) may count the rows; the layer-norm template walks
/// rows of a static length.
pub fn is_last_axis_f32(op: OperationRef) -> bool {
    last_axis_f32(op).is_some_and(|static_row| static_row)
}

/// Whether a `tcc.softmax` normalizes the last axis of an f32 tensor,
/// whose length may be symbolic (attention's scores over a sequence: the
/// softmax template takes a row length known at run time).
pub fn is_last_axis_f32_any_row(op: OperationRef) -> bool {
    last_axis_f32(op).is_some()
}

/// `Some(whether the row is static)` where `op`'s operand 0 is a ranked
/// f32 tensor and its `axis` is the last.
fn last_axis_f32(op: OperationRef) -> Option<bool> {
    let value = op.operand(0).ok()?;
    let shape = crate::ir::types::ranked_shape(value.r#type())?;
    let element = melior::ir::r#type::RankedTensorType::try_from(value.r#type())
        .ok()
        .map(|t| melior::ir::ShapedTypeLike::element(&t))?;
    let axis = op
        .attribute("axis")
        .ok()
        .and_then(crate::ir::util::integer_value)?;
    let rank = shape.len();
    (element.is_f32() && crate::ir::types::normalize_axis(axis, rank) == Some(rank - 1))
        .then(|| shape.last().is_some_and(Option::is_some))
}

/// Builds `builder` (named `what` in errors) in front of `op` and returns
/// its first result.
pub fn insert_before<'c>(
    op: OperationRef<'c, 'c>,
    builder: OperationBuilder<'c>,
    what: &str,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let location = op.location();
    let block = op
        .block()
        .ok_or_else(|| PassError::at(location, "op outside a block"))?;
    let built = builder
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build {what}: {e}")))?;
    let built = block.insert_operation_before(op, built);
    Ok(built
        .result(0)
        .map_err(|e| PassError::at(location, e.to_string()))?
        .into())
}

/// A `tensor.empty` of `like`'s type in front of `op`: the destination of
/// a destination-style op replacing `op`. Each dynamic dimension of `like`
/// is read from it with `tensor.dim`.
pub fn empty_like<'c>(
    context: &'c melior::Context,
    op: OperationRef<'c, 'c>,
    like: Value<'c, 'c>,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let location = op.location();
    let shape = crate::ir::types::ranked_shape(like.r#type()).unwrap_or_default();
    let index = melior::ir::Type::index(context);
    let mut sizes = Vec::new();
    for (i, extent) in shape.iter().enumerate() {
        if extent.is_some() {
            continue;
        }
        let position = insert_before(
            op,
            OperationBuilder::new("arith.constant", location)
                .add_attributes(&[(
                    melior::ir::Identifier::new(context, "value"),
                    melior::ir::attribute::IntegerAttribute::new(index, i as i64).into(),
                )])
                .add_results(&[index]),
            "arith.constant",
        )?;
        sizes.push(insert_before(
            op,
            OperationBuilder::new("tensor.dim", location)
                .add_operands(&[like, position])
                .add_results(&[index]),
            "tensor.dim",
        )?);
    }
    insert_before(
        op,
        OperationBuilder::new("tensor.empty", location)
            .add_operands(&sizes)
            .add_results(&[like.r#type()]),
        "tensor.empty",
    )
}
