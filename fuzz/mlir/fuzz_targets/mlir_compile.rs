//! Feeds arbitrary text to `tcc compile` in process: parse, every phase up
//! to the gpu phase, the OpenCL C writer and the host LLVM writer. Each
//! input must compile or give an error, never crash, hang or allocate
//! without bound. Seeds: test/models/*.mlir (scripts/fuzz.sh copies them).

#![no_main]

use std::ffi::{c_char, c_int};

use libfuzzer_sys::fuzz_target;
use tcc_compiler::driver::compile::compile_to_kernels;
use tcc_compiler::driver::session::Session;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let directory = tempfile::tempdir().expect("temp dir");
    let path = directory.path().join("fuzz.mlir");
    std::fs::write(&path, text).expect("write the input");
    let session = Session::new();
    if let Ok(compiled) = compile_to_kernels(&session, &path, Default::default()) {
        let _ = compiled.host("fuzz");
    }
});

// MLIR's static libraries include mlir-opt's `main` (libMLIRMlirOptMain.a),
// which the linker may pick instead of libFuzzer's: the target then ran as
// mlir-opt and rejected libFuzzer's flags. A `main` in this crate comes
// first and hands over to libFuzzer's driver.
unsafe extern "C" {
    fn LLVMFuzzerRunDriver(
        argc: *mut c_int,
        argv: *mut *mut *mut c_char,
        callback: extern "C" fn(*const u8, usize) -> c_int,
    ) -> c_int;
    fn LLVMFuzzerTestOneInput(data: *const u8, size: usize) -> c_int;
}

extern "C" fn test_one_input(data: *const u8, size: usize) -> c_int {
    unsafe { LLVMFuzzerTestOneInput(data, size) }
}

#[unsafe(no_mangle)]
pub extern "C" fn main(mut argc: c_int, mut argv: *mut *mut c_char) -> c_int {
    unsafe { LLVMFuzzerRunDriver(&mut argc, &mut argv, test_one_input) }
}
