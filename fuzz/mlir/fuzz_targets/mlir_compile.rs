//! Feeds arbitrary text to `tcc compile` in process: parse, every phase up
//! to the gpu phase, the OpenCL C writer and the host LLVM writer. Each
//! input must compile or give an error, never crash, hang or allocate
//! without bound. Seeds: test/models/*.mlir (scripts/fuzz.sh copies them).

#![no_main]

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
