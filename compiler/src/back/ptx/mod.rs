//! PTX back end for NVIDIA: the OpenCL C program of the opencl_c back end,
//! compiled ahead of time to PTX that NVIDIA's OpenCL driver loads with
//! `clCreateProgramWithBinary`.
//!
//! Why this route (clang's OpenCL C front end, then LLVM's NVPTX back end in
//! process) rather than MLIR's gpu → NVVM conversion: every kernel tcc
//! ships, the hand-tuned templates of `tcc-kernels` included, exists as
//! OpenCL C already; translating that one text keeps a single kernel
//! language and lets PTX and the OpenCL C fallback never disagree. clang
//! (`clang-22`) parses it for the `nvptx64-nvidiacl` triple and links
//! libclc's NVIDIA built-ins (`get_global_id`, math); the writer then fixes
//! what clang leaves for a driver that JITs PTX (kernel bodies inlined into
//! their entries, `.reqntid` from `reqd_work_group_size`) and runs the
//! NVPTX code generator through inkwell.
//!
//! The driver then only runs ptxas on the first call instead of its own
//! OpenCL C compiler, and inline PTX (tensor cores) becomes possible.

mod toolchain;
mod writer;

pub use toolchain::{Toolchain, ToolchainPaths};
pub use writer::{declares_dynamic_local, write_ptx};

/// What to generate PTX for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxOptions {
    /// The GPU architecture, `sm_XY` (`--gpu-arch`); the PTX runs on this
    /// architecture and newer ones (the driver JIT-compiles it).
    pub arch: String,
}

impl Default for PtxOptions {
    fn default() -> Self {
        PtxOptions {
            arch: DEFAULT_ARCH.into(),
        }
    }
}

/// The H100's architecture.
pub const DEFAULT_ARCH: &str = "sm_90";

impl PtxOptions {
    /// Checks `--gpu-arch`: `sm_` followed by a supported compute capability.
    pub fn with_arch(arch: &str) -> Result<Self, String> {
        let number = arch
            .strip_prefix("sm_")
            .and_then(|n| n.trim_end_matches('a').parse::<u32>().ok())
            .ok_or_else(|| format!("--gpu-arch={arch}: expected sm_XY, e.g. sm_90"))?;
        if !(50..=120).contains(&number) {
            return Err(format!(
                "--gpu-arch={arch}: compute capability {number} is outside the range LLVM's NVPTX back end supports here (sm_50 to sm_120)"
            ));
        }
        Ok(PtxOptions { arch: arch.into() })
    }

    /// Checks that the architecture has the tensor cores `precision` (the
    /// module's `#tcc.target` and its GEMMs' `#tcc.gemm`) multiplies on:
    /// TF32, FP16 and BF16 bodies need `mma.sync` with `cp.async`, sm_80
    /// or newer.
    pub fn check_precision(
        &self,
        precision: crate::back::opencl_c::Precision,
    ) -> Result<(), String> {
        if precision.tensor_cores() && self.compute_capability() < 80 {
            return Err(format!(
                "--precision={precision} needs {} tensor cores with cp.async (sm_80 or newer), not --gpu-arch={}",
                precision.name().to_uppercase(),
                self.arch
            ));
        }
        Ok(())
    }

    /// The compute capability as a number (`sm_90` → 90).
    pub fn compute_capability(&self) -> u32 {
        self.arch
            .trim_start_matches("sm_")
            .trim_end_matches('a')
            .parse()
            .unwrap_or(0)
    }

    /// The PTX ISA version to emit: the lowest that knows the architecture
    /// (older drivers accept lower versions).
    pub fn ptx_version(&self) -> u32 {
        match self.compute_capability() {
            0..=75 => 63,
            76..=86 => 71,
            87..=89 => 78,
            // sm_90a's wgmma body builds tensor maps (`tensormap.replace`,
            // PTX ISA 8.3).
            90 if self.arch.ends_with('a') => 83,
            90 => 80,
            _ => 87,
        }
    }
}
