//! Generates the tcc dialect's C++ from `td/TccOps.td` (ops and, from
//! `td/TccAttrs.td`, the kernel-strategy attributes) with mlir-tblgen and
//! compiles it together with the C interface in `cpp/` (see
//! docs/dialect.md for why the dialect is ODS rather than IRDL).

use std::{env, path::PathBuf, process::Command};

fn llvm_prefix() -> PathBuf {
    PathBuf::from(env::var("MLIR_SYS_220_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into()))
}

fn tblgen(generator: &str, input: &str, output: &PathBuf, include: &PathBuf) {
    let tool = llvm_prefix().join("bin/mlir-tblgen");
    let status = Command::new(&tool)
        .arg(generator)
        .arg("-I")
        .arg(include)
        .arg("-I")
        .arg("td")
        .arg(input)
        .arg("-o")
        .arg(output)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {e} (run `make deps`)", tool.display()));
    assert!(
        status.success(),
        "mlir-tblgen {generator} failed on {input}"
    );
}

fn main() {
    let prefix = llvm_prefix();
    let include = prefix.join("include");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());

    for (generator, file) in [
        ("-gen-dialect-decls", "TccOpsDialect.h.inc"),
        ("-gen-dialect-defs", "TccOpsDialect.cpp.inc"),
        ("-gen-attrdef-decls", "TccAttrs.h.inc"),
        ("-gen-attrdef-defs", "TccAttrs.cpp.inc"),
        ("-gen-attrdef-doc", "TccAttrs.md"),
        ("-gen-enum-decls", "TccEnums.h.inc"),
        ("-gen-enum-defs", "TccEnums.cpp.inc"),
        ("-gen-op-decls", "TccOps.h.inc"),
        ("-gen-op-defs", "TccOps.cpp.inc"),
        ("-gen-op-doc", "TccOps.md"),
    ] {
        tblgen(generator, "td/TccOps.td", &out.join(file), &include);
    }

    cc::Build::new()
        .cpp(true)
        .compiler(prefix.join("bin/clang++"))
        .std("c++17")
        .include(&include)
        .include(&out)
        .include("cpp")
        .define("_GNU_SOURCE", None)
        .define("__STDC_CONSTANT_MACROS", None)
        .define("__STDC_FORMAT_MACROS", None)
        .define("__STDC_LIMIT_MACROS", None)
        .flag("-fno-exceptions")
        .flag("-funwind-tables")
        .flag("-Wno-unused-parameter")
        .opt_level(1)
        .debug(false)
        .file("cpp/TccDialect.cpp")
        .file("cpp/TccCAPI.cpp")
        .file("cpp/TccIRCAPI.cpp")
        .file("cpp/TccLinalg.cpp")
        .file("cpp/TccMath.cpp")
        .file("cpp/TccFusion.cpp")
        .file("cpp/TccStructure.cpp")
        .file("cpp/TccConv.cpp")
        .file("cpp/TccDispatch.cpp")
        .compile("tcc_dialects_cpp");

    println!("cargo:rerun-if-changed=td");
    println!("cargo:rerun-if-changed=cpp");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MLIR_SYS_220_PREFIX");
}
