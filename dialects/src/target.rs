//! The target attribute (`#tcc.target<...>`, `td/TccAttrs.td`) as a Rust
//! struct: what the compiler knows of the device a module is compiled for,
//! written once on the module by `tcc-attach-target` and read, through
//! [`TargetDesc::from_attribute`], by every pass and back end that depends
//! on the device. The table of known targets lives in the compiler
//! (`config/targets.rs`); this is only the attribute's typed view.

use std::fmt;
use std::str::FromStr;

use melior::ir::Attribute;
use melior::ir::attribute::AttributeLike;
use mlir_sys::{MlirAttribute, MlirContext, MlirStringRef};

/// The GEMMs' arithmetic: `precision` of `#tcc.gemm` and `#tcc.target`
/// (`tcc compile --precision`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    /// IEEE fp32 everywhere (the default).
    #[default]
    Fp32,
    /// GEMMs and convolutions multiply on tensor cores in TF32 (fp32
    /// inputs rounded to 10 mantissa bits, fp32 accumulation) in the PTX
    /// form; the OpenCL C form stays fp32.
    Tf32,
    /// As `Tf32` with FP16 inputs (half operands as stored, fp32 ones
    /// rounded to nearest half) on the FP16 tensor cores, fp32
    /// accumulation.
    Fp16,
    /// As `Fp16` with BF16 inputs on the BF16 tensor cores (sm_80 and
    /// newer).
    Bf16,
}

impl Precision {
    /// The tensor cores the flash-attention kernel's PTX form multiplies
    /// on at this precision (fp16, bf16; its launch, a warp per 16 query
    /// rows, follows from it): fp32 and TF32 keep its exact fp32 body.
    pub fn attention_tensor_cores(self) -> Option<tcc_kernels::TensorCores> {
        match self {
            Precision::Fp16 => Some(tcc_kernels::TensorCores::Fp16),
            Precision::Bf16 => Some(tcc_kernels::TensorCores::Bf16),
            Precision::Fp32 | Precision::Tf32 => None,
        }
    }

    pub const ALL: [Precision; 4] = [
        Precision::Fp32,
        Precision::Tf32,
        Precision::Fp16,
        Precision::Bf16,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Tf32 => "tf32",
            Precision::Fp16 => "fp16",
            Precision::Bf16 => "bf16",
        }
    }

    /// `TccPrecision` of `cpp/TccCAPI.h`.
    pub(crate) fn code(self) -> i32 {
        self as i32
    }

    pub(crate) fn from_code(code: i32) -> Option<Self> {
        Precision::ALL.get(usize::try_from(code).ok()?).copied()
    }

    /// Whether the GEMMs run on tensor cores (any but fp32).
    pub fn tensor_cores(self) -> bool {
        self != Precision::Fp32
    }
}

impl FromStr for Precision {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Precision::ALL
            .into_iter()
            .find(|p| p.name() == text)
            .ok_or_else(|| format!("unknown precision '{text}' (fp32, tf32, fp16, bf16)"))
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How the kernels are launched (`api` of `#tcc.target`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LaunchApi {
    /// OpenCL (the runtime's default driver).
    #[default]
    OpenCl,
    /// The CUDA driver (`tcc compile --backend=cuda`).
    Cuda,
    /// Vulkan compute.
    Vulkan,
}

impl LaunchApi {
    pub const ALL: [LaunchApi; 3] = [LaunchApi::OpenCl, LaunchApi::Cuda, LaunchApi::Vulkan];

    pub fn name(self) -> &'static str {
        match self {
            LaunchApi::OpenCl => "opencl",
            LaunchApi::Cuda => "cuda",
            LaunchApi::Vulkan => "vulkan",
        }
    }
}

impl FromStr for LaunchApi {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        LaunchApi::ALL
            .into_iter()
            .find(|a| a.name() == text)
            .ok_or_else(|| format!("unknown launch API '{text}' (opencl, cuda, vulkan)"))
    }
}

impl fmt::Display for LaunchApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The parameters of `#tcc.target<...>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TargetDesc {
    /// The known target it came from (`nvidia-sm90`, `pocl-cpu-avx2`).
    pub name: String,
    /// Whose tuning tables apply (`generic`, `nvidia`, `pocl-cpu`).
    pub family: String,
    /// The device architecture (`sm_90`, `x86-64-v3`; empty where the
    /// kernels are portable).
    pub arch: String,
    /// How the kernels are launched.
    pub api: LaunchApi,
    /// The GEMMs' arithmetic.
    pub precision: Precision,
    /// Floats in one SIMD register (CPUs) or one vector load (GPUs).
    pub vector_width: i64,
    /// Local (shared) memory one work-group may use, in bytes.
    pub max_local_bytes: i64,
    /// Work-items one work-group may hold.
    pub max_workgroup_size: i64,
}

/// `TccTargetDesc` of `cpp/TccCAPI.h`.
#[repr(C)]
struct RawTarget {
    name: MlirStringRef,
    family: MlirStringRef,
    arch: MlirStringRef,
    api: MlirStringRef,
    precision: i32,
    vector_width: i64,
    max_local_bytes: i64,
    max_workgroup_size: i64,
}

unsafe extern "C" {
    fn tccTargetAttrGet(context: MlirContext, target: *const RawTarget) -> MlirAttribute;
    fn tccTargetAttrRead(attr: MlirAttribute, target: *mut RawTarget) -> bool;
}

fn string_ref(text: &str) -> MlirStringRef {
    MlirStringRef {
        data: text.as_ptr() as *const _,
        length: text.len(),
    }
}

fn owned(text: MlirStringRef) -> String {
    if text.data.is_null() {
        return String::new();
    }
    // SAFETY: the attribute's storage, alive as long as its context.
    let bytes = unsafe { std::slice::from_raw_parts(text.data as *const u8, text.length) };
    String::from_utf8_lossy(bytes).into_owned()
}

impl TargetDesc {
    /// Decodes a `#tcc.target` attribute; `None` for any other attribute.
    pub fn from_attribute(attribute: Attribute) -> Option<Self> {
        let empty = string_ref("");
        let mut raw = RawTarget {
            name: empty,
            family: empty,
            arch: empty,
            api: empty,
            precision: 0,
            vector_width: 0,
            max_local_bytes: 0,
            max_workgroup_size: 0,
        };
        if !unsafe { tccTargetAttrRead(attribute.to_raw(), &mut raw) } {
            return None;
        }
        Some(TargetDesc {
            name: owned(raw.name),
            family: owned(raw.family),
            arch: owned(raw.arch),
            api: owned(raw.api).parse().ok()?,
            precision: Precision::from_code(raw.precision)?,
            vector_width: raw.vector_width,
            max_local_bytes: raw.max_local_bytes,
            max_workgroup_size: raw.max_workgroup_size,
        })
    }

    /// The attribute in `context`; `None` when the parameters fail its
    /// verifier (reported through the context's diagnostics).
    pub fn to_attribute<'c>(&self, context: &'c melior::Context) -> Option<Attribute<'c>> {
        let raw = RawTarget {
            name: string_ref(&self.name),
            family: string_ref(&self.family),
            arch: string_ref(&self.arch),
            api: string_ref(self.api.name()),
            precision: self.precision.code(),
            vector_width: self.vector_width,
            max_local_bytes: self.max_local_bytes,
            max_workgroup_size: self.max_workgroup_size,
        };
        let attribute = unsafe { tccTargetAttrGet(context.to_raw(), &raw) };
        (!attribute.ptr.is_null()).then(|| unsafe { Attribute::from_raw(attribute) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sm90() -> TargetDesc {
        TargetDesc {
            name: "nvidia-sm90".into(),
            family: "nvidia".into(),
            arch: "sm_90".into(),
            api: LaunchApi::Cuda,
            precision: Precision::Tf32,
            vector_width: 4,
            max_local_bytes: 49152,
            max_workgroup_size: 1024,
        }
    }

    #[test]
    fn targets_round_trip_through_their_attribute() {
        let context = crate::new_context();
        context.load_all_available_dialects();
        let attribute = sm90().to_attribute(&context).unwrap();
        assert_eq!(
            attribute.to_string(),
            "#tcc.target<name = \"nvidia-sm90\", family = \"nvidia\", arch = \"sm_90\", api = \"cuda\", precision = \"tf32\", vector_width = 4, max_local_bytes = 49152, max_workgroup_size = 1024>"
        );
        assert_eq!(TargetDesc::from_attribute(attribute), Some(sm90()));
        let parsed = Attribute::parse(&context, &attribute.to_string()).unwrap();
        assert_eq!(parsed, attribute);
        assert!(
            TargetDesc::from_attribute(Attribute::parse(&context, "\"nvidia\"").unwrap()).is_none()
        );
    }

    #[test]
    fn invalid_targets_give_no_attribute() {
        let context = crate::new_context();
        context.load_all_available_dialects();
        let no_groups = TargetDesc {
            max_workgroup_size: 0,
            ..sm90()
        };
        assert!(no_groups.to_attribute(&context).is_none());
        let text = sm90()
            .to_attribute(&context)
            .unwrap()
            .to_string()
            .replace("cuda", "metal");
        assert!(Attribute::parse(&context, &text).is_none());
        let text = text.replace("metal", "cuda").replace("tf32", "fp8");
        assert!(Attribute::parse(&context, &text).is_none());
    }
}
