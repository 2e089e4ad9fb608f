//! Feeds arbitrary bytes to the ONNX importer: it must return a model or
//! an error, never panic, hang or allocate without bound.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code, unused_imports, clippy::all)]
#[path = "../../compiler/src/front/onnx/mod.rs"]
mod onnx;

/// The importer's own paths name it where it lives in tcc-compiler
/// (`crate::front::onnx::...`).
mod front {
    pub(crate) use super::onnx;
}

fuzz_target!(|data: &[u8]| {
    let _ = onnx::import_bytes(data, None, &onnx::ImportOptions::default());
});
