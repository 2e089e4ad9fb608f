//! OpenCL C back end: translates the kernels of the gpu phase (`gpu.func`
//! bodies of arith, math, memref, scf and gpu ops) to readable OpenCL C 1.2,
//! one `__kernel` per dispatch, named after the dispatch.

mod attention;
mod control_flow;
mod conv_inputs;
mod expressions;
mod gemm;
mod generic;
mod layer_norm;
mod prelude;
mod reduce;
mod softmax;
mod specialize;
mod template;
mod window;
mod writer;

pub use writer::{
    ElementType, IndexWidth, KernelArg, KernelInfo, Precision, Program, ScalarArg, write_program,
};
