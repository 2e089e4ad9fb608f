//! tcc-opt: the mlir-opt-compatible pass driver with every upstream dialect
//! and pass plus tcc's dialect, passes and phase pipelines.
//!
//! MLIR's parsers, verifier and printer recurse once per nesting level.
//! Text input is refused past `TCC_MAX_NESTING_DEPTH` brackets before it is
//! parsed, but bytecode cannot be scanned without parsing it, so the driver
//! runs on a thread with a large stack ([`STACK_BYTES`], reserved, not
//! committed: only the pages a deep input touches use memory): 12,000
//! nested modules in bytecode, which overflowed the 8 MiB main stack, are
//! parsed, verified and printed.

/// The driver thread's stack.
const STACK_BYTES: usize = 1 << 30;

fn main() {
    tcc_compiler::phases::register_all();
    let run = || tcc_dialects::opt_main_with_version(std::env::args(), tcc_runtime::cli::version());
    let driver = std::thread::Builder::new()
        .name("tcc-opt".into())
        .stack_size(STACK_BYTES)
        .spawn(run);
    let code = match driver {
        Ok(thread) => thread.join().unwrap_or(101),
        // No room for the stack (strict overcommit): the main thread's.
        Err(_) => run(),
    };
    std::process::exit(code);
}
