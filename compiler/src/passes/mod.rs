//! tcc's own passes, one per file, each registered in MLIR's pass registry
//! under its `tcc-*` argument by [`register_all`].

mod apply_tuning;
mod attach_split_k_scratch;
mod attach_target;
mod attach_tensor_map_slots;
pub(crate) mod check_supported;
mod collapse_contractions;
mod concat_in_place;
mod configure_kernels;
mod convert_attention_to_kernel;
mod convert_layer_norm_to_rows;
mod convert_softmax_to_linalg;
mod decompose_composites;
mod dedupe_kernels;
mod elide_output_copies;
mod fold_attention_casts;
mod fold_attention_transposes;
mod fold_batch_norm;
mod fold_constants;
mod fold_conv_inputs;
mod fold_pad_slices;
mod fold_tied_broadcasts;
mod form_dispatches;
mod fuse_elementwise;
mod generalize_reductions;
mod hoist_parallel_dims;
mod inline_dispatches;
mod kernel_arguments;
mod lower_bool_casts;
mod lower_host_to_llvm;
mod lower_kernel_loops;
mod map_loops_to_work_items;
mod merge_grouped_convs;
mod merge_sibling_matmuls;
mod narrow_storage;
mod order_globals;
mod outline_kernels;
mod pack_weight_panels;
mod pass;
mod plan_memory;
mod propagate_layout;
mod quantize_calibration;
mod quantize_int8;
mod raise_attention;
mod raise_composites;
mod read_only_inputs;
mod record_interface;
mod reduction_identities;
mod reshape_epilogues;
mod simplify_math;
mod unique_results;
mod unshare_empty_tensors;

pub use apply_tuning::{ApplyTuning, apply as apply_tuning};
pub use attach_split_k_scratch::AttachSplitKScratch;
pub use attach_target::{AttachTarget, AttachTargetOptions};
pub use attach_tensor_map_slots::{AttachTensorMapSlots, SLOTS_ATTRIBUTE};
pub use check_supported::{CheckSupported, SUPPORTED_TOSA_OPS};
pub use collapse_contractions::CollapseContractions;
pub use concat_in_place::ConcatInPlace;
pub use configure_kernels::{ConfigureKernels, Int8Gemm, ROW_COMBINERS, WindowChoice};
pub use convert_attention_to_kernel::ConvertAttentionToKernel;
pub use convert_layer_norm_to_rows::ConvertLayerNormToRows;
pub use convert_softmax_to_linalg::ConvertSoftmaxToLinalg;
pub use decompose_composites::DecomposeComposites;
pub use dedupe_kernels::DedupeKernels;
pub use elide_output_copies::ElideOutputCopies;
pub use fold_attention_casts::FoldAttentionCasts;
pub use fold_attention_transposes::FoldAttentionTransposes;
pub use fold_batch_norm::FoldBatchNorm;
pub use fold_constants::FoldConstants;
pub use fold_conv_inputs::FoldConvInputs;
pub use fold_pad_slices::FoldPadSlices;
pub use form_dispatches::{FormDispatches, init_operands, kind_of};
pub use fuse_elementwise::{FuseElementwise, FuseElementwiseOptions};
pub use generalize_reductions::GeneralizeReductions;
pub use hoist_parallel_dims::HoistParallelDims;
pub use inline_dispatches::InlineDispatches;
pub use lower_host_to_llvm::LowerHostToLlvm;
pub use lower_kernel_loops::LowerKernelLoops;
pub use map_loops_to_work_items::MapLoopsToWorkItems;
pub use merge_grouped_convs::MergeGroupedConvs;
pub use merge_sibling_matmuls::MergeSiblingMatmuls;
pub use narrow_storage::{
    HalfType, NarrowStorage, STORAGE_ATTR, argument_storage, half_storage, op_storage,
    uses_half_storage,
};
pub use order_globals::OrderGlobals;
pub use outline_kernels::{KERNEL_MODULE, OutlineKernels};
pub use pack_weight_panels::PackWeightPanels;
pub use pass::{
    NoOptions, PassError, PassOptions, TccPass, parse_bool, parse_options, split_options,
};
pub use plan_memory::PlanMemory;
pub use propagate_layout::PropagateLayout;
pub use quantize_calibration::{Calibration, Ranges};
pub use reshape_epilogues::ReshapeEpilogues;
/// The calibration profile's format (`tcc profile` writes it,
/// `tcc-quantize-int8` reads it).
pub mod profile {
    pub use super::quantize_calibration::{FORMAT, Profile, TensorRange, VERSION};
}
pub use fold_tied_broadcasts::FoldTiedBroadcasts;
pub use lower_bool_casts::LowerBoolCasts;
pub use quantize_int8::{
    F32_FALLBACKS_ATTR, QUANTIZATION_ATTR, QUANTIZED_OPS_ATTR, QuantizeInt8, QuantizeOptions,
};
pub use raise_attention::RaiseAttention;
pub use raise_composites::RaiseComposites;
pub use read_only_inputs::ReadOnlyInputs;
pub use record_interface::RecordInterface;
pub use reduction_identities::ReductionIdentities;
pub use simplify_math::SimplifyMath;
pub use unique_results::UniqueResults;
pub use unshare_empty_tensors::UnshareEmptyTensors;

/// Every tcc pass: (argument, summary), in pipeline order. Kept in step
/// with docs/passes.md by a test.
pub const ALL: &[(&str, &str)] = &[
    (AttachTarget::ARGUMENT, AttachTarget::SUMMARY),
    (CheckSupported::ARGUMENT, CheckSupported::SUMMARY),
    (RecordInterface::ARGUMENT, RecordInterface::SUMMARY),
    (RaiseComposites::ARGUMENT, RaiseComposites::SUMMARY),
    (RaiseAttention::ARGUMENT, RaiseAttention::SUMMARY),
    (PropagateLayout::ARGUMENT, PropagateLayout::SUMMARY),
    (FoldConstants::ARGUMENT, FoldConstants::SUMMARY),
    (QuantizeInt8::ARGUMENT, QuantizeInt8::SUMMARY),
    (FoldBatchNorm::ARGUMENT, FoldBatchNorm::SUMMARY),
    (
        ConvertSoftmaxToLinalg::ARGUMENT,
        ConvertSoftmaxToLinalg::SUMMARY,
    ),
    (
        ConvertLayerNormToRows::ARGUMENT,
        ConvertLayerNormToRows::SUMMARY,
    ),
    (
        ConvertAttentionToKernel::ARGUMENT,
        ConvertAttentionToKernel::SUMMARY,
    ),
    (DecomposeComposites::ARGUMENT, DecomposeComposites::SUMMARY),
    (FoldTiedBroadcasts::ARGUMENT, FoldTiedBroadcasts::SUMMARY),
    (ReductionIdentities::ARGUMENT, ReductionIdentities::SUMMARY),
    (
        GeneralizeReductions::ARGUMENT,
        GeneralizeReductions::SUMMARY,
    ),
    (
        CollapseContractions::ARGUMENT,
        CollapseContractions::SUMMARY,
    ),
    (ConcatInPlace::ARGUMENT, ConcatInPlace::SUMMARY),
    (FoldConvInputs::ARGUMENT, FoldConvInputs::SUMMARY),
    (FoldPadSlices::ARGUMENT, FoldPadSlices::SUMMARY),
    (ReshapeEpilogues::ARGUMENT, ReshapeEpilogues::SUMMARY),
    (FormDispatches::ARGUMENT, FormDispatches::SUMMARY),
    (InlineDispatches::ARGUMENT, InlineDispatches::SUMMARY),
    (HoistParallelDims::ARGUMENT, HoistParallelDims::SUMMARY),
    (ApplyTuning::ARGUMENT, ApplyTuning::SUMMARY),
    (ConfigureKernels::ARGUMENT, ConfigureKernels::SUMMARY),
    (PackWeightPanels::ARGUMENT, PackWeightPanels::SUMMARY),
    (LowerBoolCasts::ARGUMENT, LowerBoolCasts::SUMMARY),
    (ReadOnlyInputs::ARGUMENT, ReadOnlyInputs::SUMMARY),
    (UniqueResults::ARGUMENT, UniqueResults::SUMMARY),
    (UnshareEmptyTensors::ARGUMENT, UnshareEmptyTensors::SUMMARY),
    (ElideOutputCopies::ARGUMENT, ElideOutputCopies::SUMMARY),
    (FoldAttentionCasts::ARGUMENT, FoldAttentionCasts::SUMMARY),
    (
        FoldAttentionTransposes::ARGUMENT,
        FoldAttentionTransposes::SUMMARY,
    ),
    (OrderGlobals::ARGUMENT, OrderGlobals::SUMMARY),
    (OutlineKernels::ARGUMENT, OutlineKernels::SUMMARY),
    (AttachSplitKScratch::ARGUMENT, AttachSplitKScratch::SUMMARY),
    (
        AttachTensorMapSlots::ARGUMENT,
        AttachTensorMapSlots::SUMMARY,
    ),
    (LowerKernelLoops::ARGUMENT, LowerKernelLoops::SUMMARY),
    (MapLoopsToWorkItems::ARGUMENT, MapLoopsToWorkItems::SUMMARY),
    (MergeGroupedConvs::ARGUMENT, MergeGroupedConvs::SUMMARY),
    (MergeSiblingMatmuls::ARGUMENT, MergeSiblingMatmuls::SUMMARY),
    (NarrowStorage::ARGUMENT, NarrowStorage::SUMMARY),
    (PlanMemory::ARGUMENT, PlanMemory::SUMMARY),
    (DedupeKernels::ARGUMENT, DedupeKernels::SUMMARY),
    (LowerHostToLlvm::ARGUMENT, LowerHostToLlvm::SUMMARY),
];

/// Registers every upstream pass and every tcc pass (the phase pipelines,
/// which name them, are `phases::register_all`'s). Idempotent.
pub fn register_all() {
    tcc_dialects::register_all_passes();
    pass::register(&CheckSupported);
    pass::register(&AttachTarget);
    pass::register(&ApplyTuning);
    pass::register(&RecordInterface);
    pass::register(&PropagateLayout);
    pass::register(&FoldConstants);
    pass::register(&FoldBatchNorm);
    pass::register(&QuantizeInt8);
    pass::register(&RaiseComposites);
    pass::register(&RaiseAttention);
    pass::register(&ConvertSoftmaxToLinalg);
    pass::register(&ConvertLayerNormToRows);
    pass::register(&ConvertAttentionToKernel);
    pass::register(&DecomposeComposites);
    pass::register(&FoldTiedBroadcasts);
    pass::register(&ReductionIdentities);
    pass::register(&GeneralizeReductions);
    pass::register(&SimplifyMath);
    pass::register(&CollapseContractions);
    pass::register(&FuseElementwise);
    pass::register(&FoldConvInputs);
    pass::register(&FoldPadSlices);
    pass::register(&ConcatInPlace);
    pass::register(&FormDispatches);
    pass::register(&InlineDispatches);
    pass::register(&HoistParallelDims);
    pass::register(&ConfigureKernels);
    pass::register(&PackWeightPanels);
    pass::register(&LowerBoolCasts);
    pass::register(&ReadOnlyInputs);
    pass::register(&UniqueResults);
    pass::register(&UnshareEmptyTensors);
    pass::register(&ElideOutputCopies);
    pass::register(&FoldAttentionCasts);
    pass::register(&FoldAttentionTransposes);
    pass::register(&ReshapeEpilogues);
    pass::register(&OrderGlobals);
    pass::register(&OutlineKernels);
    pass::register(&AttachSplitKScratch);
    pass::register(&AttachTensorMapSlots);
    pass::register(&LowerKernelLoops);
    pass::register(&MapLoopsToWorkItems);
    pass::register(&MergeGroupedConvs);
    pass::register(&MergeSiblingMatmuls);
    pass::register(&NarrowStorage);
    pass::register(&PlanMemory);
    pass::register(&DedupeKernels);
    pass::register(&LowerHostToLlvm);
}
