//! tcc-opt: the mlir-opt-compatible pass driver with every upstream dialect
//! and pass plus tcc's dialect, passes and phase pipelines.

fn main() {
    tcc_compiler::passes::register_all();
    std::process::exit(tcc_dialects::opt_main_with_version(
        std::env::args(),
        tcc_runtime::cli::version(),
    ));
}
