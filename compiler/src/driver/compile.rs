//! `tcc compile`: runs the phases over a model and writes the IR at a
//! `--compile-to` stop, an intermediate (`--emit`), or the artifact. With
//! `--compile-from=PHASE` the input is IR already at PHASE and only the
//! later phases run (`--compile-from=gpu`: the back ends alone). The
//! pipeline itself is `pipeline.rs`.

use std::path::{Path, PathBuf};
use tcc_dialects::dims::DimRange;

use anyhow::{Context as _, Result, bail};
use clap::{Args, ValueEnum};

use super::pipeline::check_tuning_target;
pub use super::pipeline::{
    Compiled, compile_file, compile_to_kernels, compile_to_kernels_in, compile_to_kernels_with,
    metadata_json, run_phases,
};
use super::session::Session;
use super::stats::StatsFormat;
use super::write_atomically;
use crate::back::{host_llvm, opencl_c, ptx};
use crate::config::Target;
use crate::config::targets::{self, LaunchApi, Precision};
use crate::config::tuning::TuningRecord;
use crate::front::onnx::DType;
use crate::phases::{GemmChoice, Phase, Storage};

/// What `--emit` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// The artifact: a shared library with host code, kernels and weights (default).
    Artifact,
    /// The MLIR after the gpu phase (kernels and host function).
    Mlir,
    /// The host program as LLVM IR.
    LlvmIr,
    /// The host program as a native object file (kernels and weights inside), to link into a program; see --name.
    Obj,
    /// The object as a static library (libNAME.a) to link into a program; see --name.
    Staticlib,
    /// The kernels as OpenCL C: one .cl file per kernel into the -o directory, or the whole program to stdout.
    OpenclC,
    /// The kernels as SPIR-V (one .spv per kernel into the -o directory; portable loop-nest kernels).
    Spirv,
    /// The kernels as PTX for NVIDIA (`--gpu-arch`), the form the artifact ships beside the OpenCL C.
    Ptx,
}

/// The form the artifact's kernels take and the API that launches them:
/// OpenCL C (and PTX), or SPIR-V for Vulkan or for OpenCL's IL.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KernelRoute {
    /// OpenCL C (and PTX) kernels for OpenCL or CUDA.
    #[default]
    OpenCl,
    /// Shader-capability SPIR-V for Vulkan (`--target=vulkan`).
    Vulkan,
    /// Kernel-capability SPIR-V for OpenCL drivers with IL support
    /// (`--target=opencl-spirv`).
    OpenClSpirv,
}

impl KernelRoute {
    /// The SPIR-V environment of the artifact's kernels, for the SPIR-V
    /// targets.
    fn spirv(self) -> Option<crate::back::spirv::Environment> {
        match self {
            KernelRoute::OpenCl => None,
            KernelRoute::Vulkan => Some(crate::back::spirv::Environment::Vulkan),
            KernelRoute::OpenClSpirv => Some(crate::back::spirv::Environment::OpenCl),
        }
    }

    fn target_name(self) -> &'static str {
        match self {
            KernelRoute::OpenCl => "generic",
            KernelRoute::Vulkan => "vulkan",
            KernelRoute::OpenClSpirv => "opencl-spirv",
        }
    }
}

/// `--precision`: the arithmetic of GEMMs and convolutions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum PrecisionArg {
    /// IEEE fp32 (the default).
    #[default]
    Fp32,
    /// TF32 tensor cores with fp32 accumulation (PyTorch's allow_tf32): PTX for NVIDIA only.
    Tf32,
    /// Weights and activations stored as IEEE half, elementwise math and reductions in fp32 registers; on NVIDIA PTX, GEMMs on FP16 tensor cores with fp32 accumulation.
    Fp16,
    /// As fp16 with bfloat16 (fp32's range, 8 significant bits); BF16 tensor cores need sm_80 or newer.
    Bf16,
}

impl PrecisionArg {
    /// The flag's value as written.
    fn name(self) -> &'static str {
        match self {
            PrecisionArg::Fp32 => "fp32",
            PrecisionArg::Tf32 => "tf32",
            PrecisionArg::Fp16 => "fp16",
            PrecisionArg::Bf16 => "bf16",
        }
    }

    /// The 16-bit storage the precision implies, if any.
    fn half_storage(self) -> Option<StorageArg> {
        match self {
            PrecisionArg::Fp16 => Some(StorageArg::Fp16),
            PrecisionArg::Bf16 => Some(StorageArg::Bf16),
            PrecisionArg::Fp32 | PrecisionArg::Tf32 => None,
        }
    }
}

/// `--backend`: which runtime backend launches the artifact's NVIDIA
/// kernels, and so how much local memory a kernel may take.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// NVIDIA's OpenCL (the default): at most 48 KiB of local memory per kernel.
    #[default]
    Opencl,
    /// The runtime's CUDA-driver backend (`tcc-run --backend=cuda`, chosen by itself for such artifacts): with --precision=tf32, large matmuls take a 256x128 tile staged in 193 KiB of dynamic local memory. The OpenCL C fallback stays within 48 KiB.
    Cuda,
}

/// `--storage`: how weights and intermediate activations are held in
/// device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StorageArg {
    /// f32, as the model says (the default).
    Fp32,
    /// IEEE half (kernels still compute in f32; inputs and outputs keep their types).
    Fp16,
    /// bfloat16 (kernels still compute in f32; inputs and outputs keep their types).
    Bf16,
}

impl StorageArg {
    fn name(self) -> &'static str {
        match self {
            StorageArg::Fp32 => "fp32",
            StorageArg::Fp16 => "fp16",
            StorageArg::Bf16 => "bf16",
        }
    }
}

/// `--ptx`: whether the artifact carries PTX beside the OpenCL C.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PtxSwitch {
    /// Compile the kernels to PTX too (needs clang 22 and libclc).
    On,
    /// OpenCL C only: NVIDIA's driver compiles it on the first run.
    Off,
}

#[derive(Args, Clone, Debug)]
pub struct CompileArgs {
    /// The model: MLIR (TOSA/linalg level) text, or an ONNX model (.onnx), imported first.
    pub input: PathBuf,
    /// Where to write the result (stdout for text when omitted).
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Stop after this phase and print the IR (input, graph, linalg, dispatch, tile, buffer, gpu, codegen).
    #[arg(long = "compile-to", value_parser = parse_phase)]
    pub compile_to: Option<Phase>,
    /// Start after this phase, on MLIR already at it (input, graph, linalg, dispatch, tile, buffer, gpu): e.g. --compile-from=gpu takes a module of host functions and a gpu.module of gpu.funcs, as --compile-to=gpu prints it, and runs only the back ends.
    #[arg(long = "compile-from", value_parser = parse_phase, value_name = "PHASE")]
    pub compile_from: Option<Phase>,
    /// Which intermediate to write instead of the artifact.
    #[arg(long, value_enum, default_value = "artifact")]
    pub emit: Emit,
    /// The device to compile for, a known target: opencl-generic (any
    /// OpenCL 1.2 device; the default), nvidia-sm90, nvidia-sm80,
    /// pocl-cpu-avx2, pocl-cpu-avx512, the family names generic, nvidia,
    /// pocl-cpu (= opencl-generic, nvidia-sm90, pocl-cpu-avx2), host (this
    /// machine's CPU through PoCL: the only one that looks at it) or auto
    /// (the default OpenCL device's kind: nvidia, host or generic; generic
    /// with a note when there is no OpenCL device). The input phase writes
    /// it on the module as #tcc.target. Without --target an artifact
    /// is built for generic, and (on a terminal) a note names the better
    /// target for this machine's default device when there is one.
    /// vulkan: Shader-capability SPIR-V of the portable loop-nest kernels,
    /// launched through Vulkan (`tcc-run --backend=vulkan`).
    #[arg(long = "target", value_name = "TARGET")]
    pub target_flag: Option<String>,
    /// The target `--target` resolves to (set by [`CompileArgs::resolve_target`]).
    #[arg(skip)]
    pub target: Target,
    /// Where the kernels are launched (set by
    /// [`CompileArgs::resolve_target`]): OpenCL (or CUDA) unless
    /// `--target=vulkan`.
    #[arg(skip)]
    pub launch: KernelRoute,
    /// The known target `--target` names (`config/targets.rs`; `host`
    /// for `--target=auto` on a CPU), `None` without `--target`.
    #[arg(skip)]
    pub target_name: Option<String>,
    /// Print statistics (kernels with kind and work-group size, arena size and liveness lower bound) to stderr: --stats or --stats=text for people, --stats=json for scripts.
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "text", value_name = "FORMAT")]
    pub stats: Option<StatsFormat>,
    /// A shape for an ONNX graph input: fills its dynamic dimensions and may change its batch (first dimension), e.g. data=32x3x224x224 (repeat).
    #[arg(long = "input-shape", value_name = "NAME=DIMS")]
    pub input_shapes: Vec<String>,
    /// The structure of an ONNX sequence graph input: its elements' shapes, NAME=2x3,2x3,4 (`scalar` for a 0-d element; NAME= an empty sequence); repeat per input. The elements become arguments NAME[0], NAME[1], ...
    #[arg(long = "sequence", value_name = "NAME=SHAPES")]
    pub sequences: Vec<String>,
    /// An ONNX optional graph input that holds no value (it gets no argument); repeat per input.
    #[arg(long = "empty-optional", value_name = "NAME")]
    pub empty_optionals: Vec<String>,
    /// Keep a dynamic dimension symbolic, with its range: batch=1..64 (repeat). ONNX dim_params of that name stay `?`, tied by name; --input-shape still specializes an input.
    #[arg(long = "dim", value_name = "NAME=MIN..MAX", value_parser = super::import::parse_dim)]
    pub dims: Vec<DimRange>,
    /// Fix an ONNX dim_param to a value on every input that names it, e.g. sequence=128 (repeat), as onnxruntime's free dimension overrides do; other dynamic dimensions stay as they are (symbolic with --dim).
    #[arg(long = "fix-dim", value_name = "NAME=VALUE", value_parser = super::specialize::parse_fixed_dim)]
    pub fixed_dims: Vec<(String, i64)>,
    /// Give an ONNX graph input its value at compile time: NAME=0,2 (elements of its declared type), NAME=@file.npy or NAME=@file.pb (repeat). It becomes a constant and is no longer an argument of the compiled function: for inputs holding what tcc needs to know when it compiles (a shape, axes, pads, sizes, Range bounds, a trip count), which the import names when it stops at one.
    #[arg(long = "input-value", value_name = "NAME=VALUES", value_parser = super::import::parse_input_value_arg)]
    pub input_values: Vec<(String, crate::front::onnx::InputValue)>,
    /// Compile static variants of a dynamic model for these values of a --dim dimension, e.g. batch=1,8,32 (repeat per dimension: every combination is one variant; a value * keeps the dimension symbolic in its combinations, e.g. batch=1,8,* with sequence=1 also compiles sequence 1 for every other batch). A call whose shapes bind a variant's values runs it (its own kernels and strategies, as compiled for that shape; variants fixing more dimensions are tried first); other calls run the generic function. ONNX models only; weights are stored once.
    #[arg(long = "specialize", value_name = "NAME=V1,V2,...", value_parser = super::specialize::parse_specialize)]
    pub specialize: Vec<(String, super::specialize::SpecializeValues)>,
    /// Ship the kernels as PTX for NVIDIA beside the OpenCL C (default: on for --target=nvidia, off otherwise); the runtime loads the PTX on NVIDIA drivers and falls back to the OpenCL C elsewhere.
    #[arg(long, value_enum)]
    pub ptx: Option<PtxSwitch>,
    /// The NVIDIA architecture the PTX is for (sm_XY; it also runs on newer GPUs). Default: the target's (nvidia-sm80: sm_80), else sm_90.
    #[arg(long = "gpu-arch", value_name = "SM")]
    pub gpu_arch: Option<String>,
    /// Precision: fp32 (exact); tf32 (NVIDIA PTX tensor cores, GEMM inputs rounded to 10 mantissa bits, fp32 accumulation); fp16 or bf16 (weights and activations stored in 16 bits, converted at the model's inputs and outputs, elementwise math, softmax and norm statistics in fp32 registers; on --target=nvidia with PTX, sm_80 or newer, GEMMs and convolutions on fp16/bf16 tensor cores with fp32 accumulation, elsewhere in fp32 arithmetic). See docs/user-guide.md for the error bounds.
    /// Default: fp32, or, for an ONNX graph that is itself float16 or bfloat16 (exported with `model.half()`), that type (its weights and intermediates stay 16-bit, as with --precision=fp16|bf16); --precision=fp32 widens such a graph's weights to f32.
    #[arg(long = "precision", value_name = "PRECISION", value_enum)]
    pub precision_flag: Option<PrecisionArg>,
    /// The precision `--precision` (or the graph's own half type) resolves
    /// to: set by [`run`] from [`CompileArgs::resolve_precision`].
    #[arg(skip)]
    pub precision: PrecisionArg,
    /// The runtime backend that launches the NVIDIA kernels: opencl (default; 48 KiB of local memory per kernel) or cuda (the runtime's CUDA-driver backend, which gives --precision=tf32 matmuls a 256x128 tile in 193 KiB of dynamic local memory; the PTX then runs only there, and tcc-run picks that backend by itself). Needs --target=nvidia and PTX.
    #[arg(long, value_enum, default_value = "opencl")]
    pub backend: BackendArg,
    /// How weights and intermediate activations are stored on the device: fp32 (default; fp16/bf16 with --precision=fp16/bf16), fp16 (IEEE half) or bf16: half the weights' bytes and memory traffic; kernels compute in f32, each stored value is rounded to nearest even, and the model's inputs and outputs keep their types.
    #[arg(long, value_enum)]
    pub storage: Option<StorageArg>,
    /// A tuning record written by `tcc tune` for the device the model will run on: its measured GEMM and convolution configurations replace the target's table for the shapes it names (its target must match --target). Also --tuning-db.
    #[arg(long, alias = "tuning-db", value_name = "FILE")]
    pub tuning: Option<PathBuf>,
    /// Prefix the symbols of --emit=obj|staticlib|llvm-ir with NAME_ (NAME_tcc_artifact_v1, ...) so that several models link into one program (a C identifier).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The LLVM triple of the host code (default: this machine's), e.g. aarch64-unknown-linux-gnu; the kernels are portable either way. A shared library for another machine is linked with ld.lld.
    #[arg(long = "host-triple", value_name = "TRIPLE")]
    pub host_triple: Option<String>,
    /// Print each pass's time to stderr (as mlir-opt and iree-compile do).
    #[arg(long = "mlir-timing")]
    pub mlir_timing: bool,
    /// Print the IR after every pass to stderr.
    #[arg(long = "mlir-print-ir-after-all")]
    pub mlir_print_ir_after_all: bool,
    /// Write the IR after each phase into DIR (01-input.mlir, 02-graph.mlir, ...), the kernels (opencl-c.cl) and the host LLVM IR (host.ll).
    #[arg(long = "dump-phases-to", value_name = "DIR")]
    pub dump_phases_to: Option<PathBuf>,
    /// The most operations one fused elementwise kernel body may hold, instead of the target's cap (0: no cap). Longer chains are cut into several kernels, whose first driver builds add up linearly where one long kernel's do not.
    #[arg(long, value_name = "N")]
    pub max_fused_ops: Option<i64>,
    /// The most bytes one tensor (a constant or an intermediate) may hold;
    /// a larger one is an error before anything allocates it. Default: a
    /// sixteenth of this machine's memory.
    #[arg(long, value_name = "BYTES")]
    pub max_constant_bytes: Option<u64>,
    /// Build the kernels for a device now, at build time: run the artifact
    /// once on zeros on DEVICE (a `tcc-run --device` selector; without a
    /// value the default OpenCL device) through `tcc-run --prepare`, and
    /// write the driver's binary next to the artifact, in
    /// `<artifact>.prepared/`. The first run on that device and driver then
    /// loads the kernels instead of compiling them (PoCL on a CPU: seconds
    /// instead of tens of seconds); another device or driver finds no entry
    /// for its key and builds from source as before. Repeat for more
    /// devices.
    #[arg(long, value_name = "DEVICE", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub prepare: Option<String>,
    #[command(flatten)]
    pub quantize: super::quantize::QuantizeArgs,
}

/// Checks `--name`: a C identifier, since it prefixes C symbols.
pub fn check_symbol_name(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        bail!(
            "--name={name}: the name prefixes C symbols ({name}_tcc_artifact_v1): use letters, digits and _, not starting with a digit"
        );
    }
    Ok(())
}

impl CompileArgs {
    /// Resolves `--target` (`auto` and `host` included) into
    /// [`CompileArgs::target`], printing the one-line notes: what `auto`
    /// found, or, for an artifact built without `--target`, the target
    /// that suits this machine's default OpenCL device better. Without
    /// `--target` nothing but that note looks at this machine: the
    /// artifact stays the same wherever it is built.
    pub fn resolve_target(&mut self) -> Result<()> {
        let default_device = || -> Option<tcc_runtime::DeviceInfo> {
            let devices = tcc_runtime::list_devices().ok()?;
            let selector = tcc_runtime::DeviceSelector::from_flag_or_env(None);
            selector.select(&devices).ok()
        };
        self.target = match self.target_flag.as_deref() {
            None => {
                // For a person at a terminal: scripts and builds (and
                // the test suite) see no probe and no note.
                use std::io::IsTerminal as _;
                let builds_artifact = std::io::stderr().is_terminal()
                    && self.compile_to.is_none()
                    && matches!(self.emit, Emit::Artifact | Emit::Obj | Emit::Staticlib);
                if builds_artifact
                    && let Some(device) = default_device()
                    && let better = tcc_runtime::cli::target_for_device(&device)
                    && better != "generic"
                {
                    eprintln!(
                        "tcc compile: note: building for --target=generic (any OpenCL device); this machine's default device, {} ({}), runs --target={better} builds faster (--target=auto picks it)",
                        device.name, device.kind
                    );
                }
                Target::Generic
            }
            // Vulkan kernels are the portable loop nests, tuned as for any
            // device; what differs is their SPIR-V and the launch API.
            Some("vulkan") => {
                self.launch = KernelRoute::Vulkan;
                Target::Generic
            }
            // Kernel-capability SPIR-V for OpenCL drivers that report IL
            // support (`clCreateProgramWithIL`).
            Some("opencl-spirv") => {
                self.launch = KernelRoute::OpenClSpirv;
                Target::Generic
            }
            Some("auto") => match default_device() {
                Some(device) => {
                    let family = tcc_runtime::cli::target_for_device(&device);
                    // A CPU device is this machine's CPU: `host`.
                    let name = if family == Target::PoclCpu.name() {
                        "host"
                    } else {
                        family
                    };
                    eprintln!(
                        "tcc compile: --target=auto: {name} for {} ({})",
                        device.name, device.kind
                    );
                    self.target_name = Some(name.to_string());
                    family.parse().map_err(|e: String| anyhow::anyhow!(e))?
                }
                None => {
                    eprintln!(
                        "tcc compile: note: --target=auto found no OpenCL device; building for generic"
                    );
                    Target::Generic
                }
            },
            Some(text) => {
                let desc = targets::known(text).map_err(|_| {
                    let names: Vec<_> = targets::names().into_iter().map(|(n, _)| n).collect();
                    anyhow::anyhow!(
                        "--target={text}: unknown target '{text}' (targets: {}, vulkan, opencl-spirv, auto)",
                        names.join(", ")
                    )
                })?;
                self.target_name = Some(text.to_string());
                targets::family(&desc).map_err(anyhow::Error::msg)?
            }
        };
        Ok(())
    }

    /// The precision to compile `input` at: `--precision` when given;
    /// else, for an ONNX graph that is itself float16 or bfloat16
    /// ([`crate::front::onnx::half_graph_type`]), that type, where its
    /// 16-bit storage applies (OpenCL C or PTX kernels, no `--storage`,
    /// `--quantize` or `--compile-from`, and, on NVIDIA, a PTX
    /// architecture with the type's tensor cores), with a note saying so;
    /// else fp32.
    pub fn resolve_precision(&self, input: &Path, graph_half: Option<DType>) -> PrecisionArg {
        if let Some(precision) = self.precision_flag {
            return precision;
        }
        let applies = self.storage.is_none()
            && self.quantize.quantize.is_none()
            && self.compile_from.is_none()
            && self.launch != KernelRoute::Vulkan
            && self.emit != Emit::Spirv;
        let precision = match graph_half.filter(|_| applies) {
            Some(DType::F16) => PrecisionArg::Fp16,
            Some(DType::BF16) => PrecisionArg::Bf16,
            _ => return PrecisionArg::Fp32,
        };
        let with = CompileArgs {
            precision,
            ..self.clone()
        };
        if with.ptx_options().is_err() {
            return PrecisionArg::Fp32;
        }
        let graph_type = match precision {
            PrecisionArg::Bf16 => "bfloat16",
            _ => "float16",
        };
        eprintln!(
            "tcc compile: note: {} is a {graph_type} graph: its weights and intermediates are stored in {graph_type} (--precision={}; --precision=fp32 widens them to f32)",
            input.display(),
            precision.name()
        );
        precision
    }

    /// The PTX to generate, if any: `--ptx`, else on for `--target=nvidia`.
    fn ptx_options(&self) -> Result<Option<ptx::PtxOptions>> {
        let wanted = match self.ptx {
            Some(PtxSwitch::On) => true,
            Some(PtxSwitch::Off) => false,
            None => self.target == Target::Nvidia || self.emit == Emit::Ptx,
        };
        if self.emit == Emit::Ptx && !wanted {
            bail!("--emit=ptx contradicts --ptx=off");
        }
        let precision = self.precision.name();
        if self.precision == PrecisionArg::Tf32 {
            if self.target != Target::Nvidia {
                bail!(
                    "--precision={precision} runs GEMMs on NVIDIA tensor cores: it needs --target=nvidia (got --target={})",
                    self.target.name()
                );
            }
            if !wanted {
                bail!(
                    "--precision={precision} reaches tensor cores only through PTX: drop --ptx=off"
                );
            }
        }
        if self.backend == BackendArg::Cuda {
            if self.target != Target::Nvidia {
                bail!(
                    "--backend=cuda launches NVIDIA kernels through the CUDA driver: it needs --target=nvidia (got --target={})",
                    self.target.name()
                );
            }
            if !wanted {
                bail!("--backend=cuda runs the artifact's PTX: drop --ptx=off");
            }
        }
        if !wanted {
            return Ok(None);
        }
        let options =
            ptx::PtxOptions::with_arch(&self.gpu_arch_or_target()).map_err(anyhow::Error::msg)?;
        // Early, before anything compiles; `Compiled::add_ptx` checks the
        // module's target again.
        if self.target == Target::Nvidia {
            let precision: Precision = precision.parse().map_err(anyhow::Error::msg)?;
            options
                .check_precision(precision)
                .map_err(anyhow::Error::msg)?;
        }
        Ok(Some(options))
    }

    /// The PTX's architecture: `--gpu-arch`, else the nvidia target's own
    /// (`nvidia-sm80`: sm_80), else [`ptx::DEFAULT_ARCH`].
    fn gpu_arch_or_target(&self) -> String {
        let target_arch = self
            .target_name
            .as_deref()
            .and_then(|name| targets::known(name).ok())
            .filter(|desc| desc.family == Target::Nvidia.name())
            .map(|desc| desc.arch);
        self.gpu_arch
            .clone()
            .or(target_arch)
            .unwrap_or_else(|| ptx::DEFAULT_ARCH.to_string())
    }

    /// How weights and intermediates are stored: `--storage`, else what
    /// `--precision` implies.
    fn storage(&self) -> Result<StorageArg> {
        let implied = self.precision.half_storage();
        match (self.storage, implied) {
            (Some(storage), Some(half)) if storage != half && storage != StorageArg::Fp32 => {
                bail!(
                    "--storage={} contradicts --precision={}, which stores {}: drop --storage",
                    storage.name(),
                    self.precision.name(),
                    half.name()
                )
            }
            (Some(storage), _) => Ok(storage),
            (None, implied) => Ok(implied.unwrap_or(StorageArg::Fp32)),
        }
    }

    /// The GEMMs' arithmetic in the OpenCL C and PTX writers: the
    /// precision's tensor cores where the PTX reaches them (`--target=nvidia`
    /// with PTX), else fp32 (`--precision=fp16|bf16` elsewhere is 16-bit
    /// storage with fp32 arithmetic, which the compiler says in one line).
    fn gemm_precision(&self, ptx: bool) -> Precision {
        let tensor_cores = ptx && self.target == Target::Nvidia;
        match self.precision {
            PrecisionArg::Fp32 => Precision::Fp32,
            PrecisionArg::Tf32 => Precision::Tf32,
            PrecisionArg::Fp16 if tensor_cores => Precision::Fp16,
            PrecisionArg::Bf16 if tensor_cores => Precision::Bf16,
            PrecisionArg::Fp16 | PrecisionArg::Bf16 => {
                eprintln!(
                    "note: --precision={} on --target={}{}: weights and activations are stored in {}, GEMMs and convolutions compute in fp32 (tensor cores are reached by --target=nvidia's PTX)",
                    self.precision.name(),
                    self.target.name(),
                    if ptx { "" } else { " without PTX" },
                    self.precision.name()
                );
                Precision::Fp32
            }
        }
    }
}

/// Maps the environment variables that once changed compilation from
/// inside the compiler onto their options, with a deprecation note each:
/// `TCC_CPU_VECTOR_FLOATS=8|16` (the target's vector width: name
/// `--target=pocl-cpu-avx2|pocl-cpu-avx512` instead), `TCC_WINDOWS`
/// (`tcc-configure-kernels{windows=...}`) and `TCC_INT8_GEMM`
/// (`tcc-configure-kernels{int8-gemm=...}`). Nothing else in the compiler
/// reads the environment to decide how to compile.
pub(super) fn apply_deprecated_env(choice: &mut GemmChoice) -> Result<()> {
    let read = |name: &str, instead: &str| {
        let value = std::env::var(name).ok()?;
        eprintln!("tcc: warning: {name} is deprecated: {instead}");
        Some(value)
    };
    if let Some(value) = read(
        "TCC_CPU_VECTOR_FLOATS",
        "name the CPU with --target=pocl-cpu-avx2 or --target=pocl-cpu-avx512",
    ) {
        // As before: 8 or 16, anything else ignored.
        if let Ok(width @ (8 | 16)) = value.parse::<i64>() {
            choice.vector_width = Some(width);
        }
    }
    if let Some(value) = read(
        "TCC_WINDOWS",
        "it sets tcc-configure-kernels{windows=...} (tcc-opt)",
    ) {
        let windows = value
            .parse()
            .map_err(|e| anyhow::anyhow!("TCC_WINDOWS: {e}"))?;
        choice.windows = Some(windows);
    }
    if let Some(value) = read(
        "TCC_INT8_GEMM",
        "it sets tcc-configure-kernels{int8-gemm=...} (tcc-opt)",
    ) {
        // As before: off, or a k step that is a multiple of 32; anything
        // else keeps the template's own.
        choice.int8_gemm = value.parse().ok();
    }
    Ok(())
}

fn parse_phase(text: &str) -> Result<Phase, String> {
    text.parse()
}

fn write_text(output: Option<&Path>, text: &str) -> Result<()> {
    match output {
        Some(path) => write_atomically(path, text.as_bytes()),
        None => super::write_stdout(text),
    }
}

/// Reads `-` (standard input) into a temporary file, named `.onnx` for an
/// ONNX protobuf and `.mlir` for text, since the importers go by path.
fn stdin_model(directory: &Path) -> Result<PathBuf> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .context("cannot read the model from standard input")?;
    if bytes.is_empty() {
        bail!("standard input is empty: expected an MLIR or ONNX model");
    }
    let text = std::str::from_utf8(&bytes).is_ok_and(|t| !t.contains('\0'));
    let path = directory.join(if text { "stdin.mlir" } else { "stdin.onnx" });
    std::fs::write(&path, &bytes).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// Writes binary output to `path`, or to standard output for `-`.
fn write_binary(path: &Path, bytes: &[u8]) -> Result<()> {
    if path == Path::new("-") {
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        return stdout
            .write_all(bytes)
            .and_then(|()| stdout.flush())
            .context("cannot write to standard output");
    }
    write_atomically(path, bytes)
}

/// Copies the file `from` (a binary output built in a temporary
/// directory) to `path` as [`write_binary`] writes bytes, a buffer at a
/// time: a model's weights are not read into memory to be written.
fn copy_binary(path: &Path, from: &Path) -> Result<()> {
    let mut source =
        std::fs::File::open(from).with_context(|| format!("cannot read {}", from.display()))?;
    if path == Path::new("-") {
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        return std::io::copy(&mut source, &mut stdout)
            .and_then(|_| stdout.flush())
            .context("cannot write to standard output");
    }
    tcc_runtime::output_file::write_output(path, false, |out| {
        std::io::copy(&mut source, out).map(|_| ())
    })
    .with_context(|| format!("cannot write {}", path.display()))
}

pub fn run(args: &CompileArgs) -> Result<()> {
    let mut session = Session::new();
    session.instrumentation.timing = args.mlir_timing;
    session.instrumentation.print_ir_after_all = args.mlir_print_ir_after_all;
    let stdin_directory;
    let input: PathBuf = if args.input == Path::new("-") {
        stdin_directory = tempfile::tempdir().context("cannot create a temporary directory")?;
        stdin_model(stdin_directory.path())?
    } else {
        args.input.clone()
    };
    // An ONNX graph that is itself float16 or bfloat16: its type is the
    // default precision, and with half storage of that type its ops keep
    // f32 results for tcc-narrow-storage to round.
    let graph_half = match super::import::is_onnx(&input) {
        true => crate::front::onnx::half_graph_type_of_file(&input),
        false => None,
    };
    let resolved = CompileArgs {
        precision: args.resolve_precision(&input, graph_half),
        ..args.clone()
    };
    let args = &resolved;
    let storage = args.storage()?;
    let round_half_at_storage = graph_half.filter(|half| {
        matches!(
            (half, storage),
            (DType::F16, StorageArg::Fp16) | (DType::BF16, StorageArg::Bf16)
        )
    });
    // `-o -` is standard output, as no output at all is for text.
    let output_path = args.output.as_deref();
    let output = output_path.filter(|p| *p != Path::new("-"));
    let dump = args.dump_phases_to.as_deref();
    if let Some(name) = &args.name {
        check_symbol_name(name)?;
        if !matches!(args.emit, Emit::Obj | Emit::Staticlib | Emit::LlvmIr) {
            bail!(
                "--name prefixes the symbols of a model linked into a program: use it with --emit=staticlib, obj or llvm-ir (a shared library keeps tcc_artifact_v1, one model per library)"
            );
        }
    }
    if args.prepare.is_some() {
        let to_file = output_path.is_some_and(|p| p != Path::new("-"));
        if args.emit != Emit::Artifact || args.compile_to.is_some() || !to_file {
            bail!(
                "--prepare builds an artifact's kernels for a device: use it with -o model.so (the artifact, written to a file)"
            );
        }
        if let Some(triple) = &args.host_triple {
            bail!(
                "--prepare runs the artifact on this machine's device: it cannot with --host-triple={triple} (prepare it on the machine it is for)"
            );
        }
    }
    if let Some(triple) = &args.host_triple {
        if !matches!(
            args.emit,
            Emit::Artifact | Emit::Obj | Emit::Staticlib | Emit::LlvmIr
        ) || args.compile_to.is_some_and(|p| p < Phase::Codegen)
        {
            bail!(
                "--host-triple={triple} applies to the host code: --emit=artifact, obj, staticlib or llvm-ir"
            );
        }
    }
    let input_shapes: Vec<(String, Vec<i64>)> = args
        .input_shapes
        .iter()
        .map(|s| super::import::parse_input_shape(s))
        .collect::<Result<_>>()?;
    let structures = super::import::parse_structures(&args.sequences, &args.empty_optionals)?;
    let inputs = super::import::InputSpec {
        shapes: input_shapes.clone(),
        dims: args.dims.clone(),
        structures: structures.clone(),
        fixed: args.fixed_dims.clone(),
        values: args.input_values.clone(),
        round_half_at_storage,
    };
    let buckets = super::specialize::buckets(&args.specialize, &args.dims)?;
    let stop = args.compile_to.unwrap_or(Phase::Codegen);
    let from = args.compile_from;
    if let Some(from) = from {
        if from >= stop {
            bail!(
                "--compile-from={from} starts after the {stop} phase: it must name a phase before --compile-to (or before codegen)"
            );
        }
        if super::import::is_onnx(&input) {
            bail!(
                "--compile-from={from} takes MLIR already at the {from} phase, not an ONNX model"
            );
        }
        if !input_shapes.is_empty() || !structures.is_empty() || !args.input_values.is_empty() {
            bail!(
                "--input-shape, --input-value, --sequence and --empty-optional apply to ONNX models, not to --compile-from={from}"
            );
        }
        if !args.dims.is_empty() {
            bail!("--dim applies to the input phase, not to --compile-from={from}");
        }
        if !args.specialize.is_empty() || !args.fixed_dims.is_empty() {
            bail!(
                "--specialize and --fix-dim apply to the input phase, not to --compile-from={from}"
            );
        }
    }
    if args.max_fused_ops.is_some_and(|n| n < 0) {
        bail!("--max-fused-ops must be a count of operations (0: no cap)");
    }
    // The PTX and the GEMMs' precision come first: the precision is a
    // field of the module's target, written in the input phase.
    let ptx_options = match args.emit {
        Emit::Spirv => None,
        _ => args.ptx_options()?,
    };
    let mut choice = GemmChoice {
        tuning: args.tuning.clone(),
        candidate: None,
        max_fused_ops: args.max_fused_ops,
        storage: match args.storage()? {
            StorageArg::Fp32 => Storage::Fp32,
            StorageArg::Fp16 => Storage::Fp16,
            StorageArg::Bf16 => Storage::Bf16,
        },
        quantize: args.quantize.pass_options()?,
        target_name: args.target_name.clone(),
        precision: match args.emit {
            Emit::Spirv => Precision::Fp32,
            _ => args.gemm_precision(ptx_options.is_some()),
        },
        api: match (args.launch, args.backend) {
            (KernelRoute::Vulkan, _) => LaunchApi::Vulkan,
            (_, BackendArg::Cuda) => LaunchApi::Cuda,
            (_, BackendArg::Opencl) => LaunchApi::OpenCl,
        },
        // The PTX's architecture, where it is not the target's own.
        arch: ptx_options
            .as_ref()
            .filter(|_| args.target == Target::Nvidia)
            .map(|options| options.arch.clone()),
        ..GemmChoice::default()
    };
    apply_deprecated_env(&mut choice)?;
    if choice.quantize.is_some() && from.is_some_and(|from| from >= Phase::Graph) {
        bail!(
            "--quantize runs in the graph phase: --compile-from must name the input phase or none"
        );
    }
    // The model parsed (or imported) and run from `--compile-from` to `last`.
    let phases_to = |last: Phase, templates: bool, choice: &GemmChoice| {
        let mut module = if choice.quantize.is_some() {
            if !structures.is_empty() {
                bail!(
                    "--quantize takes models of tensor inputs: --sequence and --empty-optional do not apply"
                );
            }
            if !args.input_values.is_empty() {
                bail!("--quantize and --input-value do not combine yet");
            }
            super::quantize::parse_named(&session, &input, &input_shapes)?
        } else {
            super::import::parse_model_dims(&session, &input, &inputs)?
        };
        if !buckets.is_empty() {
            if choice.quantize.is_some() {
                bail!(
                    "--specialize and --quantize do not combine yet: compile one shape to quantize"
                );
            }
            let generic = inputs.import_options();
            super::specialize::add_variants(&session, &module, &input, &generic, &buckets)?;
        }
        super::limits::check_tensor_bytes(
            module.as_operation(),
            args.max_constant_bytes
                .unwrap_or_else(super::limits::default_max_tensor_bytes),
        )?;
        run_phases(
            &session,
            &mut module,
            from,
            last,
            args.target,
            templates,
            choice,
            dump,
        )?;
        anyhow::Ok(module)
    };
    if stop < Phase::Codegen {
        if args.emit != Emit::Artifact {
            bail!(
                "--emit={:?} needs the whole pipeline; drop --compile-to={stop}",
                args.emit
            );
        }
        let module = phases_to(stop, true, &choice)?;
        if let Some(format) = args.stats {
            eprint!(
                "{}",
                crate::driver::stats::collect(&module).render_as(format)
            );
        }
        return write_text(output, &format!("{}\n", module.as_operation()));
    }

    if args.emit == Emit::Spirv {
        if choice.quantize.is_some() {
            bail!(
                "--quantize=int8 needs the OpenCL C or PTX kernels: --emit=spirv writes f32 loop-nest kernels only"
            );
        }
        if choice.storage != Storage::Fp32 {
            let flag = match args.storage {
                Some(storage) => format!("--storage={}", storage.name()),
                None => format!("--precision={}", args.precision.name()),
            };
            bail!(
                "{flag} needs the OpenCL C or PTX kernels: --emit=spirv writes f32 loop-nest kernels only"
            );
        }
        let Some(directory) = output else {
            bail!("--emit=spirv writes one .spv per kernel: give -o DIRECTORY")
        };
        let module = phases_to(
            Phase::Gpu,
            false,
            &GemmChoice {
                target_name: choice.target_name.clone(),
                ..GemmChoice::default()
            },
        )?;
        let run = |module: &mut melior::ir::Module, pipeline: &str| {
            session
                .run_pipeline(module, pipeline)
                .map_err(|e| format!("{e:#}"))
        };
        let environment = args
            .launch
            .spirv()
            .unwrap_or(crate::back::spirv::Environment::OpenCl);
        let kernels =
            crate::back::spirv::write_kernels(&session.context, &module, environment, &run)?;
        std::fs::create_dir_all(directory)
            .with_context(|| format!("cannot create {}", directory.display()))?;
        for kernel in kernels {
            write_atomically(
                &directory.join(format!("{}.spv", kernel.name)),
                &kernel.binary,
            )?;
        }
        return Ok(());
    }
    let spirv_environment = args.launch.spirv();
    let vulkan = spirv_environment.is_some();
    if vulkan {
        check_spirv_flags(args, &choice)?;
    }
    check_tuning_target(&choice, args.target)?;
    // Vulkan runs the portable loop-nest kernels (no OpenCL C templates).
    let module = phases_to(Phase::Gpu, !vulkan, &choice)?;
    super::quantize::print_summary(&module);
    // After the phases, code generation: seconds on a large model (the
    // host object holds every weight), under a spinner on a terminal.
    let codegen = super::progress::Progress::spinner("tcc compile");
    codegen.message("codegen: OpenCL C kernels");
    let program = opencl_c::write_program(&module)?;
    let kernel_binary = if let Some(environment) = spirv_environment {
        codegen.message("codegen: SPIR-V kernels");
        let run = |module: &mut melior::ir::Module, pipeline: &str| {
            session
                .run_pipeline(module, pipeline)
                .map_err(|e| format!("{e:#}"))
        };
        let spirv =
            crate::back::spirv::write_program(&session.context, &module, environment, &run)?;
        let numbered: Vec<&str> = program.kernels.iter().map(|k| k.name.as_str()).collect();
        if spirv.kernels != numbered {
            bail!(
                "the SPIR-V entry points ({}) do not match the kernels the host code launches ({})",
                spirv.kernels.join(", "),
                numbered.join(", ")
            );
        }
        Some((tcc_abi::SOURCE_SPIRV, spirv.binary))
    } else {
        None
    };
    let mut compiled = Compiled {
        module,
        program,
        ptx: None,
    };
    if let Some(options) = &ptx_options {
        codegen.message("codegen: PTX kernels (clang)");
        compiled.add_ptx(options)?;
    }
    codegen.message("codegen: host program and constants (LLVM), linking");
    if let Some(format) = args.stats {
        eprint!(
            "{}",
            crate::driver::stats::collect(&compiled.module).render_as(format)
        );
    }
    let tuning = match &args.tuning {
        Some(path) => Some(TuningRecord::load(path).map_err(anyhow::Error::msg)?),
        None => None,
    };
    let module_name = args.name.clone().unwrap_or_else(|| {
        input
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("model")
            .to_string()
    });
    let host_options = host_llvm::HostOptions {
        symbol_prefix: args
            .name
            .as_ref()
            .map(|n| format!("{n}_"))
            .unwrap_or_default(),
        metadata: Some(metadata_json(
            &compiled,
            args.target,
            args.host_triple.as_deref(),
            tuning.as_ref(),
        )),
        triple: args.host_triple.clone(),
        llvm_ir: dump.is_some() || args.emit == Emit::LlvmIr,
        weights_object: None,
        kernel_binary,
    };
    // Binary outputs print no IR.
    let host_options_objects = host_llvm::HostOptions {
        llvm_ir: false,
        ..host_options.clone()
    };
    let host = || compiled.host_with(&module_name, &host_options);
    if let Some(directory) = dump {
        write_atomically(
            &directory.join("opencl-c.cl"),
            compiled.program.source.as_bytes(),
        )?;
        write_atomically(&directory.join("host.ll"), host()?.llvm_ir.as_bytes())?;
    }
    match (args.emit, args.compile_to) {
        (Emit::Mlir, _) => write_text(output, &format!("{}\n", compiled.module.as_operation())),
        (Emit::OpenclC, _) | (Emit::Artifact, Some(Phase::Codegen)) if output.is_none() => {
            write_text(None, &compiled.program.source)
        }
        (Emit::OpenclC, _) => {
            let directory = output.expect("checked above");
            std::fs::create_dir_all(directory)
                .with_context(|| format!("cannot create {}", directory.display()))?;
            for (name, source) in &compiled.program.kernel_sources {
                write_atomically(&directory.join(format!("{name}.cl")), source.as_bytes())?;
            }
            Ok(())
        }
        (Emit::Spirv, _) => unreachable!("handled before the OpenCL C pipeline"),
        (Emit::Ptx, _) => write_text(output, compiled.ptx.as_deref().unwrap_or_default()),
        (Emit::LlvmIr, _) => write_text(output, &host()?.llvm_ir),
        (Emit::Obj, _) => {
            let Some(path) = output_path else {
                bail!("--emit=obj writes a binary file: give -o FILE (or -o - for standard output)")
            };
            // The host object and the weights object, merged by the
            // linker (`ld.lld -r`): the weights never enter LLVM.
            let objects = compiled.host_objects(&module_name, &host_options_objects)?;
            // Release the module and the mapped model before the merge.
            drop(compiled);
            drop(session);
            copy_binary(path, &objects.relocatable()?)
        }
        (Emit::Staticlib, _) => {
            let Some(path) = output_path else {
                bail!(
                    "--emit=staticlib writes a binary file: give -o libNAME.a (or -o - for standard output)"
                )
            };
            let objects = compiled.host_objects(&module_name, &host_options_objects)?;
            drop(compiled);
            drop(session);
            copy_binary(path, &objects.static_library(&module_name)?)
        }
        (Emit::Artifact, _) => {
            let Some(path) = output_path else {
                bail!(
                    "the artifact is a shared library: give -o model.so, or -o - for standard output (or --emit=mlir|llvm-ir|opencl-c to print text)"
                )
            };
            // The weights go into an object of their own, written from
            // the attributes' bytes without passing through LLVM.
            let objects = compiled.host_objects(&module_name, &host_options_objects)?;
            // The module, and with its context the weights' blobs (the
            // mapped model), are no longer needed: release them before
            // the library is linked and copied to the output.
            drop(compiled);
            drop(session);
            if path == Path::new("-") {
                let directory =
                    tempfile::tempdir().context("cannot create a temporary directory")?;
                let library = directory.path().join("model.so");
                objects.link(&library)?;
                let bytes = std::fs::read(&library).context("cannot read the linked library")?;
                write_binary(path, &bytes)
            } else {
                objects.link(path)?;
                // The accuracy report has its own progress.
                drop(codegen);
                if choice.quantize.is_some() && args.host_triple.is_none() {
                    super::quantize::report_accuracy(
                        &args.quantize,
                        &input,
                        &input_shapes,
                        args.target,
                        path,
                    )?;
                }
                if let Some(device) = &args.prepare {
                    for entry in super::prepare::prepare_artifact(path, device)? {
                        eprintln!("tcc compile: --prepare: wrote {}", entry.display());
                    }
                }
                Ok(())
            }
        }
    }
}

/// `--target=vulkan|opencl-spirv` ship fp32 loop-nest kernels as SPIR-V:
/// the flags that need OpenCL C, PTX or CUDA are refused with the reason.
fn check_spirv_flags(args: &CompileArgs, choice: &GemmChoice) -> Result<()> {
    let target = args.launch.target_name();
    if choice.quantize.is_some() {
        bail!(
            "--quantize=int8 needs the OpenCL C or PTX kernels: --target={target} writes f32 loop-nest kernels only"
        );
    }
    if choice.storage != Storage::Fp32 || args.precision != PrecisionArg::Fp32 {
        bail!(
            "--precision={} needs the OpenCL C or PTX kernels: --target={target} writes f32 loop-nest kernels only",
            args.precision.name()
        );
    }
    if args.ptx == Some(PtxSwitch::On) || args.backend == BackendArg::Cuda {
        bail!(
            "--target={target} ships SPIR-V kernels: PTX and --backend=cuda need --target=nvidia"
        );
    }
    if matches!(args.emit, Emit::OpenclC | Emit::Ptx) {
        bail!(
            "--target={target} ships SPIR-V kernels: --emit=spirv writes them (one .spv per kernel), --emit=artifact the model"
        );
    }
    if args.tuning.is_some() {
        bail!(
            "--tuning records configure the OpenCL C kernels; --target={target} runs the portable loop-nest kernels"
        );
    }
    Ok(())
}

/// Compiles the model at `input` into the artifact `output` as
/// `tcc compile INPUT --target=TARGET -o OUTPUT` does, for any name the
/// flag takes (`vulkan` included): the library entry point of the tests
/// that run a target's artifacts.
pub fn compile_file_for(input: &Path, target: &str, output: &Path) -> Result<()> {
    #[derive(clap::Parser)]
    struct Command {
        #[command(flatten)]
        args: CompileArgs,
    }
    let mut args = <Command as clap::Parser>::try_parse_from([
        std::ffi::OsStr::new("tcc-compile"),
        input.as_os_str(),
        std::ffi::OsStr::new("--target"),
        std::ffi::OsStr::new(target),
        std::ffi::OsStr::new("-o"),
        output.as_os_str(),
    ])
    .context("tcc compile arguments")?
    .args;
    args.resolve_target()?;
    run(&args)
}
