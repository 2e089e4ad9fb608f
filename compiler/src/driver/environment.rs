//! Every environment variable the compiler reads, in one place: the
//! driver resolves them into options before it calls the back ends, which
//! never look at the environment themselves (so that a back end's output
//! depends only on its module and options).
//!
//! - `CC`: the C compiler that links a native artifact (default `cc`).
//! - `TCC_CLANG`, `TCC_LIBCLC`: the clang binary and libclc bitcode the PTX
//!   back end runs (default: the LLVM 22 install's).
//! - `MLIR_SYS_220_PREFIX`: where LLVM/MLIR 22's tools are, for `tcc run
//!   --target=reference` (default `/usr/lib/llvm-22`).
//! - `TCC_PROGRESS=0`: no progress bars even on a terminal.
//!
//! The deprecated variables that once changed compilation are mapped onto
//! their options with a warning by `compile::apply_deprecated_env`.

use std::path::PathBuf;

use crate::back::ptx::ToolchainPaths;

/// Names the PTX back end's error messages give for its tools.
pub const CLANG_ENV: &str = "TCC_CLANG";
pub const LIBCLC_ENV: &str = "TCC_LIBCLC";

/// A non-empty path from the environment variable `name`.
fn path_var(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

/// The C compiler that links native artifacts: `$CC`, else `cc`.
pub fn c_compiler() -> String {
    std::env::var("CC")
        .ok()
        .filter(|value| !value.is_empty())
        .unwrap_or_else(|| "cc".into())
}

/// The PTX toolchain's explicit paths (`$TCC_CLANG`, `$TCC_LIBCLC`); the
/// back end searches the LLVM 22 install for what is not given.
pub fn ptx_toolchain() -> ToolchainPaths {
    ToolchainPaths {
        clang: path_var(CLANG_ENV),
        libclc: path_var(LIBCLC_ENV),
    }
}

/// Where LLVM/MLIR 22 is installed.
pub fn llvm_prefix() -> String {
    std::env::var("MLIR_SYS_220_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into())
}

/// Whether `TCC_PROGRESS=0` turns progress off.
pub fn progress_disabled() -> bool {
    std::env::var("TCC_PROGRESS").as_deref() == Ok("0")
}
