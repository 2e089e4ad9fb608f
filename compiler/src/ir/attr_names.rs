//! The names of tcc's discardable attributes (`tcc.*`) that more than one
//! pass or back end reads, in one place, so that back ends need not import
//! the passes that write them.

/// On a kernel's root op and on its `gpu.func`: what the kernel computes
/// (`matmul`, `softmax`, ...; see `config::KernelKind`).
pub const KIND: &str = "tcc.kind";
/// On a kernel's root op (tile phase on) and on its `gpu.func`: how the
/// kernel is compiled, a `#tcc.loops`, `#tcc.gemm`, `#tcc.row_reduce`,
/// `#tcc.softmax` or `#tcc.layer_norm` attribute
/// ([`tcc_dialects::strategy::KernelStrategy`]).
pub const STRATEGY: &str = "tcc.strategy";
/// On the module: its `#tcc.target` (`tcc-attach-target`), what it is
/// compiled for.
pub const TARGET: &str = "tcc.target";
/// On a kernel's root op: a tuning record's `#tcc.gemm` choice for it
/// (`tcc-apply-tuning`), which `tcc-configure-kernels` takes over the
/// target's table.
pub const TUNING: &str = "tcc.tuning";
/// On a matmul or convolution `gpu.func`: its floating-point operations
/// per launch, for profiling reports.
pub const FLOPS: &str = "tcc.flops";
/// The unit attribute on a `gpu.func` whose last argument is its
/// tensor-map slots (`tcc-attach-tensor-map-slots`; the OpenCL C writer
/// reads it).
pub const TENSOR_MAP_SLOTS: &str = "tcc.tensor_map_slots";
/// On a host function (input phase on): the number of results it had
/// before bufferization.
pub const NUM_OUTPUTS: &str = "tcc.num_outputs";
/// On a host function: the names of the inputs then the outputs, an array
/// of strings.
pub const IO_NAMES: &str = "tcc.io_names";
/// In a function's `arg_attrs`/`res_attrs` entries: the input's or
/// output's name, as the model gave it.
pub const NAME: &str = "tcc.name";
/// A unit entry of a function argument's or result's attributes: its
/// signless integer tensor holds unsigned values (an ONNX uint8/16/32/64
/// input or output); the artifact's interface says so.
pub const UNSIGNED: &str = "tcc.unsigned";
/// Which of a function's inputs and outputs (in `tcc.io_names`' order)
/// are unsigned: an array of booleans, written by `tcc-record-interface`
/// when any is.
pub const IO_UNSIGNED: &str = "tcc.io_unsigned";
/// Argument/result attribute (a string, `"f8E4M3FN"`, `"f8E4M3FNUZ"`,
/// `"f8E5M2"`, `"f8E5M2FNUZ"` or `"f4E2M1FN"`): the `i8` tensor holds the
/// bits of that minifloat (an ONNX float8/float4 input or output); the
/// artifact's interface says so.
pub const MINIFLOAT: &str = "tcc.minifloat";
/// Which minifloat each of a function's inputs and outputs (in
/// `tcc.io_names`' order) holds, "" for none: an array of strings,
/// written by `tcc-record-interface` when any does.
pub const IO_MINIFLOAT: &str = "tcc.io_minifloat";
/// Unit attribute on the one arena allocation of a planned function.
pub const ARENA: &str = "tcc.arena";
/// On a planned host function: the arena's size in bytes.
pub const ARENA_BYTES: &str = "tcc.arena_bytes";
/// On a planned host function: the alignment of every offset in the arena.
pub const ARENA_ALIGNMENT: &str = "tcc.arena_alignment";
/// On a planned host function: the most bytes of planned buffers alive at
/// any op.
pub const LIVE_BYTES_BOUND: &str = "tcc.live_bytes_bound";
/// On a planned host function of a module with symbolic dimensions
/// (issue 33): the arena and the liveness bound a plan at the declared
/// minimum would take (the plan itself holds the maximum), for `--stats`.
pub const ARENA_BYTES_AT_MIN: &str = "tcc.arena_bytes_at_min";
pub const LIVE_BYTES_BOUND_AT_MIN: &str = "tcc.live_bytes_bound_at_min";
/// On a constant `memref.global`, a `memref.alloc` or (in `arg_attrs`) a
/// kernel argument: the type the buffer is stored as when narrower than
/// its element type (`f16` or `bf16` under `--precision=fp16|bf16` or `--storage`; see `ir::storage`).
pub const STORAGE: &str = "tcc.storage";
