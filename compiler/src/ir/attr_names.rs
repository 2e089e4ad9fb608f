//! The names of tcc's discardable attributes (`tcc.*`) that more than one
//! pass or back end reads, in one place, so that back ends need not import
//! the passes that write them.

/// On a kernel's ops (dispatch phase on): the kernel's name, shared by
/// every op of one fused kernel.
pub const KERNEL: &str = "tcc.kernel";
/// On a kernel's root op and on its `gpu.func`: what the kernel computes
/// (`matmul`, `softmax`, ...; see `config::KernelKind`).
pub const KIND: &str = "tcc.kind";
/// On a kernel's root op (tile phase on) and on its `gpu.func`: how the
/// kernel is compiled, a `#tcc.loops`, `#tcc.gemm`, `#tcc.row_reduce`,
/// `#tcc.softmax` or `#tcc.layer_norm` attribute
/// ([`tcc_dialects::strategy::KernelStrategy`]).
pub const STRATEGY: &str = "tcc.strategy";
/// On the module: the target the kernels are configured for.
pub const TARGET: &str = "tcc.target";
/// On a matmul or convolution `gpu.func`: its floating-point operations
/// per launch, for profiling reports.
pub const FLOPS: &str = "tcc.flops";
