//! The table of known targets (as IREE's `KnownTargets`): each names a
//! device family (whose tuning tables apply), an architecture, a launch
//! API and the limits kernels are planned against. `tcc-attach-target`
//! writes one of them, with the command line's changes (precision, launch
//! API, vector width), on the module as `#tcc.target<...>` in the input
//! phase; every later pass reads the module's attribute ([`of_module`]).
//!
//! Only `host` looks at the compiling machine (its CPU's SIMD width, for
//! PoCL on this machine); every other name describes the same device
//! wherever tcc runs. The family names `generic`, `nvidia` and `pocl-cpu`
//! stay accepted as aliases of `opencl-generic`, `nvidia-sm90` and
//! `pocl-cpu-avx2`.

use melior::ir::operation::{OperationLike, OperationRef};
pub use tcc_dialects::target::{LaunchApi, Precision, TargetDesc};

use super::Target;
use crate::ir::attr_names::TARGET;

/// One row of the table.
struct Known {
    name: &'static str,
    family: Target,
    arch: &'static str,
    vector_width: i64,
    max_local_bytes: i64,
    max_workgroup_size: i64,
    summary: &'static str,
}

/// The known targets, `host` aside (it resolves to a `pocl-cpu-*` row).
const KNOWN: &[Known] = &[
    Known {
        name: "opencl-generic",
        family: Target::Generic,
        arch: "",
        vector_width: 4,
        max_local_bytes: 32 * 1024,
        max_workgroup_size: 256,
        summary: "any OpenCL 1.2 device (the default): the limits every OpenCL 1.2 GPU grants",
    },
    Known {
        name: "nvidia-sm90",
        family: Target::Nvidia,
        arch: "sm_90",
        vector_width: 4,
        max_local_bytes: 48 * 1024,
        max_workgroup_size: 1024,
        summary: "NVIDIA Hopper (H100, H200): PTX for sm_90, OpenCL's 48 KiB of local memory",
    },
    Known {
        name: "nvidia-sm80",
        family: Target::Nvidia,
        arch: "sm_80",
        vector_width: 4,
        max_local_bytes: 48 * 1024,
        max_workgroup_size: 1024,
        summary: "NVIDIA Ampere (A100): PTX for sm_80",
    },
    Known {
        name: "pocl-cpu-avx2",
        family: Target::PoclCpu,
        arch: "x86-64-v3",
        vector_width: 8,
        max_local_bytes: 64 * 1024,
        max_workgroup_size: 4096,
        summary: "x86-64 CPUs with AVX2 through PoCL: register blocks for 16 registers of 8 floats",
    },
    Known {
        name: "pocl-cpu-avx512",
        family: Target::PoclCpu,
        arch: "x86-64-v4",
        vector_width: 16,
        max_local_bytes: 64 * 1024,
        max_workgroup_size: 4096,
        summary: "x86-64 CPUs with AVX-512 through PoCL: register blocks for 32 registers of 16 floats",
    },
];

/// Family names accepted as targets, and the known target each means.
const ALIASES: &[(&str, &str)] = &[
    ("generic", "opencl-generic"),
    ("nvidia", "nvidia-sm90"),
    ("pocl-cpu", "pocl-cpu-avx2"),
];

/// Every name [`known`] accepts, with one line each (`tcc compile --help`,
/// error messages).
pub fn names() -> Vec<(&'static str, &'static str)> {
    let mut names: Vec<_> = KNOWN.iter().map(|k| (k.name, k.summary)).collect();
    names.push((
        "host",
        "PoCL on this machine's CPU: pocl-cpu-avx512 or pocl-cpu-avx2, as the compiling CPU has AVX-512",
    ));
    for (alias, known) in ALIASES {
        names.push((alias, known));
    }
    names
}

/// The known target `name` (an alias or `host` included) with fp32
/// precision and the OpenCL launch API.
pub fn known(name: &str) -> Result<TargetDesc, String> {
    let name = match name {
        "host" => host_cpu(),
        other => ALIASES
            .iter()
            .find(|(alias, _)| *alias == other)
            .map_or(other, |(_, known)| known),
    };
    let row = KNOWN.iter().find(|k| k.name == name).ok_or_else(|| {
        let names: Vec<_> = names().into_iter().map(|(n, _)| n).collect();
        format!("unknown target '{name}' (targets: {})", names.join(", "))
    })?;
    Ok(TargetDesc {
        name: row.name.into(),
        family: row.family.name().into(),
        arch: row.arch.into(),
        api: LaunchApi::OpenCl,
        precision: Precision::Fp32,
        vector_width: row.vector_width,
        max_local_bytes: row.max_local_bytes,
        max_workgroup_size: row.max_workgroup_size,
    })
}

/// The known CPU target of the machine tcc runs on: AVX-512 or AVX2
/// (`--target=host`, as IREE's `--iree-llvmcpu-target-cpu=host`).
fn host_cpu() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        return "pocl-cpu-avx512";
    }
    "pocl-cpu-avx2"
}

/// The family whose tuning tables apply to `desc`.
pub fn family(desc: &TargetDesc) -> Result<Target, String> {
    desc.family.parse()
}

/// The module's `#tcc.target`, if it has one.
pub fn of_module(module: OperationRef) -> Option<TargetDesc> {
    TargetDesc::from_attribute(module.attribute(TARGET).ok()?)
}

/// The module's target, or (without one) the family `fallback`'s known
/// target.
pub fn of_module_or(module: OperationRef, fallback: Target) -> TargetDesc {
    of_module(module).unwrap_or_else(|| known(fallback.name()).expect("every family is known"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_target_is_a_valid_attribute_of_its_family() {
        let context = tcc_dialects::new_context();
        context.load_all_available_dialects();
        for (name, _) in names() {
            let desc = known(name).unwrap();
            let attribute = desc.to_attribute(&context).expect(name);
            assert_eq!(TargetDesc::from_attribute(attribute).as_ref(), Some(&desc));
            assert!(family(&desc).is_ok(), "{name}");
        }
        assert_eq!(known("nvidia").unwrap().name, "nvidia-sm90");
        assert_eq!(known("pocl-cpu").unwrap().vector_width, 8);
        assert_eq!(known("pocl-cpu-avx512").unwrap().vector_width, 16);
        assert_eq!(known("host").unwrap().family, "pocl-cpu");
        let error = known("nvidia-sm75").unwrap_err();
        assert!(error.contains("unknown target 'nvidia-sm75'"), "{error}");
        assert!(error.contains("pocl-cpu-avx512"), "{error}");
    }
}
