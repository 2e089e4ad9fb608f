//! `tcc-attach-target`: writes the module's target once, as
//! `tcc.target = #tcc.target<...>`, from the table of known targets
//! (`config/targets.rs`) and the command line's changes to it (GEMM
//! precision, launch API, architecture, vector width). It runs first in the input phase;
//! every later pass that depends on the device (`tcc-configure-kernels`,
//! `tcc-pack-weight-panels`, `tcc-attach-tensor-map-slots`,
//! `tcc-map-loops-to-work-items`) and the back ends read this attribute
//! instead of options or the environment, so that the IR after any phase
//! says what it was compiled for.
//!
//! With no `target=` a module that already states its target (a lit test,
//! IR written by `--compile-to`) keeps it, changed only by the options
//! given; one that does not gets `opencl-generic`.

use melior::Context;
use melior::ir::operation::OperationLike;

use super::pass::{
    PassError, PassOptionInfo, PassOptionKind, PassOptions, PassResult, Root, TccPass,
};
use crate::config::targets::{self, LaunchApi, Precision, TargetDesc};
use crate::ir::attr_names::TARGET;

pub struct AttachTarget;

/// The target to write and the command line's changes to it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttachTargetOptions {
    /// A known target (`nvidia-sm90`, `host`, ...); `None`: the module's,
    /// else `opencl-generic`.
    pub target: Option<String>,
    /// The GEMMs' arithmetic, instead of the known target's fp32.
    pub precision: Option<Precision>,
    /// The launch API, instead of OpenCL.
    pub api: Option<LaunchApi>,
    /// The architecture, instead of the known target's (`--gpu-arch`).
    pub arch: Option<String>,
    /// Floats per SIMD register, instead of the known target's.
    pub vector_width: Option<i64>,
}

impl AttachTargetOptions {
    /// The target these options describe for a module whose current
    /// target (if any) is `current`.
    pub fn resolve(&self, current: Option<TargetDesc>) -> Result<TargetDesc, String> {
        let mut desc = match (&self.target, current) {
            (Some(name), _) => targets::known(name)?,
            (None, Some(current)) => current,
            (None, None) => targets::known("opencl-generic")?,
        };
        if let Some(precision) = self.precision {
            desc.precision = precision;
        }
        if let Some(api) = self.api {
            desc.api = api;
        }
        if let Some(arch) = &self.arch {
            desc.arch = arch.clone();
        }
        if let Some(width) = self.vector_width {
            desc.vector_width = width;
        }
        targets::family(&desc)?;
        Ok(desc)
    }
}

impl PassOptions for AttachTargetOptions {
    const OPTIONS: &'static [PassOptionInfo] = &[
        PassOptionInfo {
            name: "target",
            kind: PassOptionKind::String,
            default: "",
            description: "A known target: opencl-generic, nvidia-sm90, nvidia-sm80, pocl-cpu-avx2, pocl-cpu-avx512, host (this machine's CPU), or a family name generic, nvidia, pocl-cpu (empty: the module's #tcc.target, else opencl-generic)",
        },
        PassOptionInfo {
            name: "precision",
            kind: PassOptionKind::String,
            default: "",
            description: "The GEMMs' arithmetic: fp32, tf32, fp16 or bf16 (empty: the target's)",
        },
        PassOptionInfo {
            name: "api",
            kind: PassOptionKind::String,
            default: "",
            description: "How the kernels are launched: opencl, cuda or vulkan (empty: the target's)",
        },
        PassOptionInfo {
            name: "arch",
            kind: PassOptionKind::String,
            default: "",
            description: "The device architecture, e.g. sm_86 (empty: the target's)",
        },
        PassOptionInfo {
            name: "vector-width",
            kind: PassOptionKind::Int,
            default: "0",
            description: "Floats per SIMD register the CPU register blocks are sized for: 8 (AVX2) or 16 (AVX-512) (0: the target's)",
        },
    ];

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "target" | "precision" | "api" | "arch" if value.is_empty() => {}
            "arch" => self.arch = Some(value.to_string()),
            "vector-width" if value == "0" => {}
            "target" => {
                targets::known(value)?;
                self.target = Some(value.to_string());
            }
            "precision" => self.precision = Some(value.parse()?),
            "api" => self.api = Some(value.parse()?),
            "vector-width" => {
                let width: i64 = value.parse().ok().filter(|w| *w > 0).ok_or_else(|| {
                    format!("vector-width must be a positive integer, not '{value}'")
                })?;
                self.vector_width = Some(width);
            }
            _ => return Err(format!("unknown option '{key}'")),
        }
        Ok(())
    }
}

impl TccPass for AttachTarget {
    const ARGUMENT: &'static str = "tcc-attach-target";
    const SUMMARY: &'static str =
        "Write the module's #tcc.target from the table of known targets and the command line";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    /// `#tcc.target` is a tcc attribute.
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tcc"];
    type Options = AttachTargetOptions;

    fn run<'c>(
        &self,
        context: &'c Context,
        module: Root<'c>,
        options: &AttachTargetOptions,
    ) -> PassResult<'c> {
        let current = module.attribute(TARGET).ok();
        let current_desc = current.and_then(TargetDesc::from_attribute);
        if current.is_some() && current_desc.is_none() {
            return Err(PassError::at(
                module.location(),
                "the module's tcc.target is not a #tcc.target attribute (a target is written as #tcc.target<name = \"nvidia-sm90\", ...>; tcc-attach-target{target=NAME} writes one)",
            ));
        }
        let desc = options
            .resolve(current_desc)
            .map_err(|e| PassError::at(module.location(), e))?;
        let attribute = desc
            .to_attribute(context)
            .ok_or_else(|| PassError::at(module.location(), format!("invalid target {desc:?}")))?;
        crate::ir::util::set_discardable_attribute(module, TARGET, attribute);
        Ok(())
    }
}
