//! Finding the external pieces the PTX back end needs at compile time:
//! clang 22 (the OpenCL C front end) and libclc's NVIDIA built-ins; and
//! the architecture a program's PTX is generated for.

use std::path::{Path, PathBuf};

use super::PtxOptions;
use crate::back::CodegenError;

/// What a kernel text tests to hold a body for Hopper's
/// architecture-specific instructions (the TF32 `wgmma` GEMM body):
/// clang defines it for `sm_90a`.
const SM90A_MACRO: &str = "__CUDA_ARCH_FEAT_SM90_ALL";

/// The options the program's PTX is generated with: `sm_90` becomes
/// `sm_90a` when a kernel has an `sm_90a` body (`wgmma`), so that clang
/// compiles that body. Such PTX runs on sm_90 devices only; other drivers
/// reject it and the runtime falls back to the OpenCL C, as for any PTX
/// they refuse. Other architectures and programs keep `options`.
pub fn options_for(options: &PtxOptions, source: &str) -> PtxOptions {
    if options.arch == "sm_90" && source.contains(SM90A_MACRO) {
        PtxOptions {
            arch: "sm_90a".into(),
        }
    } else {
        options.clone()
    }
}

/// Tools named explicitly (the driver reads them from `TCC_CLANG` and
/// `TCC_LIBCLC`: `driver::environment`); what is not given is searched
/// for in the LLVM 22 install.
#[derive(Clone, Debug, Default)]
pub struct ToolchainPaths {
    pub clang: Option<PathBuf>,
    pub libclc: Option<PathBuf>,
}

/// libclc's generic NVPTX bitcode: OpenCL's math built-ins in portable
/// code. (Its `nvidiacl` flavour calls `__nv_logf` and friends from CUDA's
/// libdevice, which NVIDIA's OpenCL driver does not provide: ptxas fails
/// with "Unresolved extern function". The work-item functions this flavour
/// leaves open come from the writer's shim.)
const LIBCLC_FILE: &str = "nvptx64--.bc";

/// The clang binary and libclc bitcode the PTX back end runs.
#[derive(Clone, Debug)]
pub struct Toolchain {
    pub clang: PathBuf,
    pub libclc: PathBuf,
}

const INSTALL_HINT: &str = "install clang-22 and libclc-22 (scripts/deps.sh does), point TCC_CLANG / TCC_LIBCLC at them, or compile with --ptx=off to ship OpenCL C only";

impl Toolchain {
    /// The tools `paths` names, else the LLVM 22 install's.
    pub fn find(paths: &ToolchainPaths) -> Result<Self, CodegenError> {
        let clang = match &paths.clang {
            Some(path) => path.clone(),
            None => first_existing(&[
                "/usr/lib/llvm-22/bin/clang",
                "/usr/local/bin/clang-22",
                "/usr/bin/clang-22",
            ])
            .ok_or_else(|| {
                CodegenError::new(format!(
                    "PTX needs clang 22's OpenCL C front end and none was found: {INSTALL_HINT}"
                ))
            })?,
        };
        let libclc = match &paths.libclc {
            Some(path) => path.clone(),
            None => first_existing(&[
                &format!("/usr/lib/clc/{LIBCLC_FILE}"),
                &format!("/usr/lib/llvm-22/lib/clc/{LIBCLC_FILE}"),
                &format!("/usr/share/clc/{LIBCLC_FILE}"),
            ])
            .ok_or_else(|| {
                CodegenError::new(format!(
                    "PTX needs libclc's {LIBCLC_FILE} and none was found: {INSTALL_HINT}"
                ))
            })?,
        };
        for (what, path) in [("clang", &clang), ("libclc", &libclc)] {
            if !path.is_file() {
                return Err(CodegenError::new(format!(
                    "{what} at {} does not exist: {INSTALL_HINT}",
                    path.display()
                )));
            }
        }
        Ok(Toolchain { clang, libclc })
    }
}

fn first_existing(candidates: &[&str]) -> Option<PathBuf> {
    candidates
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sm_90_programs_with_an_sm_90a_body_become_sm_90a() {
        let sm90 = PtxOptions::default();
        let hopper = "#if defined(TCC_PTX) && defined(__CUDA_ARCH_FEAT_SM90_ALL)\n";
        assert_eq!(options_for(&sm90, hopper).arch, "sm_90a");
        assert_eq!(options_for(&sm90, "__kernel void f() {}").arch, "sm_90");
        let sm80 = PtxOptions::with_arch("sm_80").unwrap();
        assert_eq!(options_for(&sm80, hopper).arch, "sm_80");
    }
}
