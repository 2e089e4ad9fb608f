//! tcc-kernels: tunable OpenCL C kernel templates.
//!
//! The compiler decides *what* a kernel computes (operands, their layouts,
//! the fused epilogue as C code generated from the IR) and *how it is tuned*
//! (a configuration from its per-target tables); a template here decides
//! *how the work is laid out* on a device: work-group tiles staged through
//! local memory, several outputs per work-item in registers (on CPUs a
//! register-blocked microkernel per work-item instead), cooperative
//! row reductions (softmax, layer norm, sums and maxima of long rows),
//! flash attention (one kernel for softmax(Q·Kᵀ)·V),
//! sliding windows (depthwise convolution, pooling). Templates know
//! nothing of MLIR.

pub mod address;
pub mod attention;
pub mod buffer;
pub mod gemm;
pub mod layer_norm;
pub mod reduce;
mod register_gemm;
mod row;
pub mod softmax;
pub mod window;

pub use address::Address;
pub use attention::{
    AttentionOperand, AttentionShape, AttentionSpec, attention_kernel, attention_launch,
};
pub use buffer::{Access, Buffer, KernelParameter, KernelParameters, Storage, VectorStore};
pub use gemm::{GemmConfig, GemmOperand, GemmShape, GemmSpec, TensorCores, gemm_kernel};
pub use layer_norm::{LayerNormSpec, layer_norm_kernel};
pub use reduce::{RowReduceSpec, row_reduce_kernel};
pub use row::{RowKernel, RowLength, RowOperand};
pub use softmax::{SoftmaxSpec, softmax_kernel};
pub use window::{
    WindowCombine, WindowConfig, WindowGeometry, WindowInit, WindowSpec, window_kernel,
};
